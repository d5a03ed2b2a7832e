//! Runs that improve themselves: a leave table made by generations of self-play on a real
//! volunteer, fitted on the coordinator generation by generation, survives a coordinator
//! restart mid-run, and ends with exactly the table `worker leaves generate` makes on one
//! machine from the same seed (one code path: the same games, the same counts, the same fit).

use anyhow::{Context, Result, ensure};
use e2e::*;
use sha2::{Digest, Sha256};
use std::process::Command;
use std::time::{Duration, Instant};

const SEED: u64 = 3;
const GENERATIONS: usize = 3;
const GAMES: u64 = 200;
const RATE_GAMES: u64 = 20;
const TARGET: u64 = GENERATIONS as u64 * (GAMES + 2 * RATE_GAMES) - RATE_GAMES;

/// The table `worker leaves generate` makes after `iterations` iterations, by sha256.
fn local_table(iterations: usize, out: &std::path::Path) -> Result<String> {
    let run = Command::new(bin("worker"))
        .args(["leaves", "generate", "--games", &GAMES.to_string(), "--iterations", &iterations.to_string()])
        .args(["--seed", &SEED.to_string(), "--threads", "2", "--out"])
        .arg(out)
        .output()?;
    ensure!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    Ok(hex::encode(Sha256::digest(std::fs::read(out)?)))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leave_table_run_fits_each_generation_as_the_local_command_does_and_survives_a_restart() -> Result<()> {
    let db = TestDb::create().await?;
    let mut coord = Coordinator::start(&db.url, &["--batch-secs", "1"])?;
    let token = researcher_token(&db.url)?;
    let dir = Scratch::new("generations");
    let text = format!(
        "name = \"leaves from nothing\"\nkind = \"leaves\"\nseed = {SEED}\n[generations]\ncount = {GENERATIONS}\ngames = {GAMES}\nrate_games = {RATE_GAMES}\n"
    );
    let id = submit(&coord.url, &token, &experiment_file(&dir.0, "leaves.toml", &text))?;
    let exp = format!("{}/api/v1/experiments/{id}", coord.url);

    // Planned whole: every generation's cells, only the first running; nothing made yet.
    let planned = get_json(&exp).await?;
    let statuses: Vec<&str> =
        planned["cells"].as_array().context("cells")?.iter().map(|c| c["status"].as_str().unwrap()).collect();
    // Self-play and a rating against greedy for each generation, a rating against generation
    // 0's table for the others.
    assert_eq!(statuses.len(), 3 * GENERATIONS - 1, "{planned}");
    assert!(statuses[0] == "running" && statuses[1..].iter().all(|s| *s == "waiting"), "{planned}");
    assert_eq!(planned["target_games"], TARGET, "{planned}");
    assert_eq!(planned["generations"], serde_json::json!([]));

    // A volunteer plays; the coordinator is killed and restarted once the first table is in.
    let mut v = volunteer(&coord.url, "generations-volunteer", &dir.0.join("v"), &["--exit-when-idle"])?;
    let start = Instant::now();
    loop {
        let now = get_json(&exp).await?;
        if now["generations"].as_array().is_some_and(|g| !g.is_empty()) {
            eprintln!(
                "restarting mid-run (status {}, {} generations)",
                now["status"],
                now["generations"].as_array().unwrap().len()
            );
            break;
        }
        ensure!(start.elapsed() < Duration::from_secs(180), "no generation fitted in 3 minutes: {now}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    coord.restart()?;
    let done = finished(&coord.url, id, &mut v, Duration::from_secs(300)).await?;
    assert_eq!(done["games"], TARGET, "{done}");

    // Each generation: in order, its games, a table downloadable by its sha256, the last the
    // run's result; and each exactly what the local command makes after as many iterations.
    let made = done["generations"].as_array().context("generations")?;
    assert_eq!(made.len(), GENERATIONS, "{done}");
    for (g, m) in made.iter().enumerate() {
        assert_eq!((m["generation"].as_u64(), m["games"].as_u64()), (Some(g as u64), Some(GAMES)), "{m}");
        let sha = m["artifact"].as_str().context("artifact")?;
        let bytes =
            reqwest::get(format!("{}/api/v1/artifacts/{sha}", coord.url)).await?.error_for_status()?.bytes().await?;
        assert_eq!(hex::encode(Sha256::digest(&bytes)), sha);
        engine::leaves::Klv::from_bytes(&bytes, sha)?;
        assert_eq!(local_table(g + 1, &dir.0.join(format!("local-{g}.klv2")))?, sha, "generation {g}");
    }
    assert_eq!(done["output_sha256"], made[GENERATIONS - 1]["artifact"]);

    // Every table rated against greedy on the same deals, and each after the first against
    // generation 0's table (two static bots, each naming its table); the page shows them.
    let cells = done["cells"].as_array().context("cells")?;
    for c in &cells[..GENERATIONS] {
        assert_eq!((c["status"].as_str(), c["games"].as_u64()), (Some("finished"), Some(GAMES)), "{c}");
    }
    for c in &cells[GENERATIONS..2 * GENERATIONS] {
        assert_eq!((c["bots"][0].as_str(), c["bots"][1].as_str()), (Some("static"), Some("greedy")), "{c}");
        assert_eq!((c["status"].as_str(), c["games"].as_u64()), (Some("finished"), Some(RATE_GAMES)), "{c}");
    }
    for (g, c) in cells[2 * GENERATIONS..].iter().enumerate().map(|(i, c)| (i + 1, c)) {
        let bots =
            [&made[g]["artifact"], &made[0]["artifact"]].map(|a| format!("static:leaves={}", a.as_str().unwrap()));
        assert_eq!(c["bots"], serde_json::json!(bots), "{c}");
        assert_eq!((c["status"].as_str(), c["games"].as_u64()), (Some("finished"), Some(RATE_GAMES)), "{c}");
    }
    let page = dump_dom(&format!("{}/experiments/{id}", coord.url), &dir.0.join("chromium"))?;
    for m in made {
        assert!(page.contains(&m["artifact"].as_str().unwrap()[..12]), "{page}");
    }
    assert!(page.contains("id=\"leave-values\"") && !page.contains("not yet fitted"), "{page}");
    // The run's JSON is what the API's description says it is.
    check_documented(&coord.url, "/experiments/{id}", &format!("/experiments/{id}")).await?;
    let show = Command::new(bin("worker"))
        .args(["experiments", "show", &id.to_string(), "--coordinator", &coord.url])
        .output()?;
    let show = String::from_utf8(show.stdout)?;
    for m in made {
        let line =
            format!("{:>10}  {:>9}  {}", m["generation"].as_u64().unwrap(), GAMES, m["artifact"].as_str().unwrap());
        assert!(show.contains(&line), "`{line}` in\n{show}");
    }
    drop(coord);
    db.drop_db().await
}

/// A gated run from the shipped table: each new table plays the one the run holds under the
/// run's SPRT and the run goes on with the better, through a coordinator restart; each is rated
/// against the table it started from; and a table the run made meets the shipped one in a
/// plain match, by sha256.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gated_run_goes_on_with_the_better_table_and_its_tables_meet_others_by_sha256() -> Result<()> {
    let db = TestDb::create().await?;
    let mut coord = Coordinator::start(&db.url, &["--batch-secs", "1"])?;
    let token = researcher_token(&db.url)?;
    let dir = Scratch::new("gates");
    let shipped = hex::encode(Sha256::digest(std::fs::read(repo().join("lexica/enable.klv2"))?));
    // Tables fitted from 40 games are far worse than the shipped one: a wide test refuses
    // them within the gate's games, and the run holds the shipped table.
    let text = "name = \"gated\"\nkind = \"leaves\"\nseed = 5\n[generations]\ncount = 2\ngames = 40\nrate_games = 20\nstart = \"table\"\ngate_games = 80\n[sprt]\np0 = 0.45\np1 = 0.55\nalpha = 0.05\nbeta = 0.05\n";
    let id = submit(&coord.url, &token, &experiment_file(&dir.0, "gated.toml", text))?;
    let parts: Vec<String> = get_json(&format!("{}/api/v1/experiments/{id}", coord.url)).await?["cells"]
        .as_array()
        .context("cells")?
        .iter()
        .map(|c| format!("{}{}", c["params"]["part"].as_str().unwrap(), c["params"]["generation"]))
        .collect();
    assert_eq!(parts, ["play0", "play1", "rate0", "rate1", "first0", "first1", "gate0", "gate1"]);

    // The coordinator restarts while the first gate plays; the run goes on where it was.
    let mut v = volunteer(&coord.url, "gates-volunteer", &dir.0.join("v"), &["--exit-when-idle", "--threads", "2"])?;
    let exp = format!("{}/api/v1/experiments/{id}", coord.url);
    let start = Instant::now();
    while get_json(&exp).await?["generations"][0]["gate"]["against"].is_null() {
        ensure!(start.elapsed() < Duration::from_secs(180), "no gate started in 3 minutes");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    coord.restart()?;
    let done = finished(&coord.url, id, &mut v, Duration::from_secs(300)).await?;
    let made = done["generations"].as_array().context("generations")?;
    assert_eq!(made.len(), 2, "{done}");
    let cells = done["cells"].as_array().context("cells")?;
    let mut held = shipped.clone();
    for (g, m) in made.iter().enumerate() {
        let (new, kept) = (m["artifact"].as_str().unwrap(), m["kept"].as_str().context("kept")?);
        assert_eq!(m["gate"]["against"].as_str(), Some(held.as_str()), "gated against what the run held: {m}");
        let verdict = m["gate"]["verdict"].as_str().context("verdict")?;
        let went_on = verdict.ends_with("the run goes on with the new table");
        assert!(went_on || verdict.ends_with("the run keeps the table it held"), "{verdict}");
        assert_eq!(kept, if went_on { new } else { held.as_str() }, "{m}");
        // The duels' bots name both tables; the gate held the new one against the run's.
        let duel = |part: &str| cells.iter().find(|c| c["params"]["part"] == part && c["params"]["generation"] == g);
        let gate = duel("gate").context("gate cell")?;
        assert_eq!(gate["bots"], serde_json::json!([format!("static:leaves={new}"), format!("static:leaves={held}")]));
        assert!(gate["status"] == "finished" || gate["status"] == "stopped", "{gate}");
        assert!(gate["sprt_llr"].is_number(), "{gate}");
        let first = duel("first").context("first cell")?;
        assert_eq!(first["bots"][1].as_str(), Some(format!("static:leaves={shipped}").as_str()), "{first}");
        assert_eq!(first["games"], 20, "{first}");
        held = kept.to_string();
    }
    assert_eq!(done["output_sha256"].as_str(), Some(held.as_str()));
    let page = dump_dom(&format!("{}/experiments/{id}", coord.url), &dir.0.join("chromium"))?;
    assert!(page.contains("against the first") && page.contains("the run holds"), "{page}");
    for m in made {
        assert!(page.contains(m["gate"]["verdict"].as_str().unwrap()), "{page}");
    }

    // The run's first table against the shipped one in a plain match, named by sha256; a
    // table the coordinator does not have is refused at submission.
    let gen0 = made[0]["artifact"].as_str().unwrap();
    let duel = format!(
        "name = \"head to head\"\nkind = \"match\"\ngames = 20\nseed = 9\n[match]\nbot1 = \"static:leaves={gen0}\"\nbot2 = \"static\"\n"
    );
    let refused =
        submit(&coord.url, &token, &experiment_file(&dir.0, "unknown.toml", &duel.replace(gen0, &"c".repeat(64))));
    let why = refused.unwrap_err().to_string();
    assert!(why.contains("no leaves artifact with that sha256"), "{why}");
    let m = submit(&coord.url, &token, &experiment_file(&dir.0, "duel.toml", &duel))?;
    let mut v = volunteer(&coord.url, "gates-volunteer", &dir.0.join("v"), &["--exit-when-idle", "--threads", "2"])?;
    let duel_done = finished(&coord.url, m, &mut v, Duration::from_secs(120)).await?;
    assert_eq!(duel_done["games"], 20, "{duel_done}");
    // Fitted from 40 games against the table made from millions: the shipped table wins.
    assert!(duel_done["cells"][0]["win_rate"].as_f64().context("win rate")? < 0.5, "{duel_done}");
    drop(coord);
    db.drop_db().await
}
