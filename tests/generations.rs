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
    assert_eq!(statuses, ["running", "waiting", "waiting", "waiting", "waiting", "waiting"], "{planned}");
    assert_eq!(planned["target_games"], GENERATIONS as u64 * (GAMES + RATE_GAMES), "{planned}");
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
    let done = wait_for_status(&coord.url, id, &["finished", "failed"], Duration::from_secs(300)).await;
    let _ = v.wait();
    let done = done?;
    assert_eq!(done["status"], "finished", "{done}");
    assert_eq!(done["games"], GENERATIONS as u64 * (GAMES + RATE_GAMES), "{done}");

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

    // Every table rated against greedy on the same deals; the page shows the generations.
    for c in &done["cells"].as_array().context("cells")?[..GENERATIONS] {
        assert_eq!((c["status"].as_str(), c["games"].as_u64()), (Some("finished"), Some(GAMES)), "{c}");
    }
    for c in &done["cells"].as_array().context("cells")?[GENERATIONS..] {
        assert_eq!((c["bots"][0].as_str(), c["bots"][1].as_str()), (Some("static"), Some("greedy")), "{c}");
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
