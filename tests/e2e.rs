//! End-to-end: real Postgres, real coordinator processes on free ports, real `worker
//! volunteer` processes, real HTTP. Tests run one at a time (they time leases).

use anyhow::{ensure, Context, Result};
use e2e::*;
use engine::board::Layout;
use engine::lexicon::Kwg;
use engine::movegen::Ctx;
use engine::tiles::Distribution;
use serde_json::{json, Value};
use shared::stats::MatchTally;
use std::io::Read;
use std::time::{Duration, Instant};
use uuid::Uuid;

static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

const MATCH: &str = r#"
name = "e2e match"
kind = "match"
games = 240
seed = 11
[match]
bot1 = "static"
bot2 = "greedy"
[grid]
"bot2" = ["greedy", "softmax:t=2,bag=30"]
"#;

/// Every recorded batch of an experiment, with its tally.
async fn batches(url: &str, id: Uuid) -> Result<Vec<Value>> {
    Ok(get_json(&format!("{url}/api/v1/experiments/{id}/batches")).await?.as_array().context("array")?.clone())
}

fn tally(v: &Value) -> MatchTally {
    serde_json::from_value(v.clone()).expect("tally")
}

/// Totals equal the sum of batch results; batches tile each cell's deals exactly once.
async fn check_totals(url: &str, id: Uuid) -> Result<Value> {
    let exp = get_json(&format!("{url}/api/v1/experiments/{id}")).await?;
    let all = batches(url, id).await?;
    for cell in exp["cells"].as_array().context("cells")? {
        let mut sum = MatchTally::default();
        let mut ranges: Vec<(u64, u64)> = Vec::new();
        for b in all.iter().filter(|b| b["cell_id"] == cell["id"]) {
            sum.merge(&tally(&b["result"]));
            ranges.push((b["first_pair"].as_u64().unwrap(), b["pairs"].as_u64().unwrap()));
        }
        ensure!(sum == tally(&cell["tally"]), "cell {}: stored {} != sum of batches {sum:?}", cell["index"], cell["tally"]);
        ensure!(cell["games"] == json!(sum.games), "cell games");
        ensure!(cell["wins"].as_u64().unwrap() + cell["draws"].as_u64().unwrap() + cell["losses"].as_u64().unwrap() == sum.games, "W+D+L");
        ranges.sort();
        let mut next = 0;
        for (first, pairs) in ranges {
            ensure!(first == next, "cell {}: deals {next}.. missing or counted twice (batch starts at {first})", cell["index"]);
            next = first + pairs;
        }
        if cell["status"] == "finished" {
            ensure!(2 * next == cell["target_games"].as_u64().unwrap(), "finished cell covers its target");
        }
    }
    Ok(exp)
}

/// Download every batch's GCG log and replay every game with the engine's rules; the replayed
/// results must give the same wins, draws and losses as the uploaded tally.
async fn check_replays(url: &str, id: Uuid) -> Result<usize> {
    let exp = get_json(&format!("{url}/api/v1/experiments/{id}")).await?;
    let dist = Distribution::english();
    let layout = Layout::standard();
    // The lexicon graph the workers used, fetched by its sha256.
    let sha = lexicon_sha(id).await?;
    let kwg = Kwg::from_bytes(&reqwest::get(format!("{url}/api/v1/artifacts/{sha}")).await?.bytes().await?, "lexicon")?;
    let ctx = Ctx { kwg: &kwg, dist: &dist, layout: &layout };
    let mut replayed = 0;
    for b in batches(url, id).await? {
        let bid = b["batch_id"].as_str().unwrap();
        let gz = reqwest::get(format!("{url}/api/v1/batches/{bid}/logs/gcg")).await?.bytes().await?;
        let mut text = String::new();
        flate2::read::GzDecoder::new(&gz[..]).read_to_string(&mut text)?;
        let games = shared::protocol::split_gcg_bundle(&text).map_err(anyhow::Error::msg)?;
        let (first, pairs) = (b["first_pair"].as_u64().unwrap(), b["pairs"].as_u64().unwrap());
        ensure!(games.len() as u64 == 2 * pairs, "batch {bid}: {} games logged for {pairs} pairs", games.len());
        let (mut w, mut d, mut l) = (0, 0, 0);
        for (gid, gcg) in games {
            ensure!((2 * first..2 * (first + pairs)).contains(&gid), "game {gid} outside batch {bid}");
            let r = engine::gcg::replay(gcg, ctx, &format!("batch {bid} game {gid}"))?;
            // Leg 0: the first bot sat in seat 0.
            let (me, them) = if gid % 2 == 0 { (r.scores[0], r.scores[1]) } else { (r.scores[1], r.scores[0]) };
            match me.cmp(&them) {
                std::cmp::Ordering::Greater => w += 1,
                std::cmp::Ordering::Equal => d += 1,
                std::cmp::Ordering::Less => l += 1,
            }
            replayed += 1;
        }
        let t = tally(&b["result"]);
        ensure!((t.wins, t.draws, t.losses) == (w, d, l), "batch {bid}: replayed W-D-L {w}-{d}-{l} != uploaded {t:?}");
    }
    ensure!(replayed as u64 == exp["cells"].as_array().unwrap().iter().map(|c| c["games"].as_u64().unwrap()).sum::<u64>());
    Ok(replayed)
}

/// The sha256 of the lexicon an experiment's batches name, from the database.
async fn lexicon_sha(id: Uuid) -> Result<String> {
    let db = std::env::var("E2E_DB_URL").context("E2E_DB_URL")?;
    let pool = sqlx::PgPool::connect(&db).await?;
    let (sha,): (String,) = sqlx::query_as("SELECT a->>'sha256' FROM experiments e, jsonb_array_elements(e.artifacts) a WHERE e.id = $1 AND a->>'role' = 'lexicon'").bind(id).fetch_one(&pool).await?;
    Ok(sha)
}

async fn worker_named(url: &str, name: &str) -> Result<Option<Value>> {
    let ws = get_json(&format!("{url}/api/v1/workers")).await?;
    Ok(ws.as_array().unwrap().iter().find(|w| w["name"] == name).cloned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_volunteers_survive_a_killed_worker_and_a_coordinator_restart() -> Result<()> {
    let _serial = SERIAL.lock().await;
    let db = TestDb::create().await?;
    // SAFETY of the test: one test at a time sets this.
    unsafe { std::env::set_var("E2E_DB_URL", &db.url) };
    let mut coord = Coordinator::start(&db.url, &["--lease-secs", "4", "--batch-secs", "2", "--reap-secs", "1"])?;
    let token = researcher_token(&db.url)?;
    let dir = Scratch::new("e2e");
    let id = submit(&coord.url, &token, &experiment_file(&dir.0, "match.toml", MATCH))?;
    let mut workers: Vec<_> = (1..=3).map(|i| volunteer(&coord.url, &format!("w{i}"), &dir.0.join(format!("w{i}")), &["--exit-when-idle"])).collect::<Result<_>>()?;

    // Kill w1 (SIGKILL) while it holds a lease, after it has measured its speed.
    let start = Instant::now();
    let w1 = loop {
        if let Some(w) = worker_named(&coord.url, "w1").await? {
            if w["leased_batches"].as_i64() > Some(0) && w["batches"].as_i64() >= Some(1) {
                break w;
            }
        }
        ensure!(start.elapsed() < Duration::from_secs(120), "w1 never held a lease");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    workers[0].kill()?;
    workers[0].wait()?;
    let w1_id: Uuid = w1["id"].as_str().unwrap().parse()?;
    let pool = db.pool().await?;
    let (killed_batch,): (Uuid,) = sqlx::query_as("SELECT id FROM batches WHERE lease_owner = $1 AND state = 'leased'").bind(w1_id).fetch_one(&pool).await?;

    // Restart the coordinator while the others play.
    tokio::time::sleep(Duration::from_millis(500)).await;
    coord.restart()?;

    let exp = wait_for_status(&coord.url, id, &["finished"], Duration::from_secs(300)).await?;
    let exp2 = check_totals(&coord.url, id).await?;
    assert_eq!(exp["cells"].as_array().unwrap().len(), 2);
    for c in exp2["cells"].as_array().unwrap() {
        assert_eq!(c["games"], 240, "every cell played exactly its games: {c}");
        assert_eq!(c["status"], "finished");
    }

    // The killed worker's batch expired, went back to the queue, and finished elsewhere.
    let (state, leases, failures, error): (String, i32, i32, Option<String>) =
        sqlx::query_as("SELECT state, leases, failures, last_error FROM batches WHERE id = $1").bind(killed_batch).fetch_one(&pool).await?;
    assert_eq!(state, "done");
    assert!(leases >= 2 && failures >= 1, "leases {leases} failures {failures}");
    assert!(error.unwrap_or_default().contains("lease expired"));
    let (by,): (Uuid,) = sqlx::query_as("SELECT worker_id FROM batch_results WHERE batch_id = $1").bind(killed_batch).fetch_one(&pool).await?;
    assert_ne!(by, w1_id);

    // Nothing counted twice: workers' games add up to the experiment's.
    let ws = get_json(&format!("{}/api/v1/workers", coord.url)).await?;
    let contributed: i64 = ws.as_array().unwrap().iter().map(|w| w["games"].as_i64().unwrap()).sum();
    assert_eq!(contributed, 480);

    // The survivors exit 0 once there is no more work.
    for w in &mut workers[1..] {
        let status = tokio::task::block_in_place(|| w.wait())?;
        assert!(status.success(), "volunteer exited with {status}");
    }
    // Every uploaded game replays under the rules and gives the uploaded result.
    assert_eq!(check_replays(&coord.url, id).await?, 480);
    // Recomputing from stored batch results changes nothing.
    let out = coordinator_cmd(&db.url, &["recompute"])?;
    assert!(out.contains("2 cells recomputed, 0 differed"), "{out}");
    drop(coord);
    db.drop_db().await
}
