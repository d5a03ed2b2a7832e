//! A job kind is one module per crate: the test-only `toy` kind (feature `toy-kind`, turned on
//! in the coordinator and worker this crate runs) is registered by one line in each crate's
//! registry, and nothing else knows of it. Here it is planned (one cell of its draws), claimed
//! and carved into batches, verified (a forged sum is refused with a 422 that names it),
//! settled (the cell finishes on the counted draws) and shown (its page in Chromium says the
//! sum, which is the sum of the draws computed here).

use anyhow::Result;
use e2e::*;
use serde_json::json;
use shared::kinds::toy::{ToyJob, sum};
use std::time::Duration;

const DRAWS: u64 = 40;
const SEED: u64 = 5;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_toy_kind_is_planned_claimed_verified_settled_and_shown() -> Result<()> {
    let db = TestDb::create().await?;
    let coord = Coordinator::start(&db.url, &["--batch-secs", "1"])?;
    let token = researcher_token(&db.url)?;
    let dir = Scratch::new("toy");
    let text = format!("name = \"toy\"\nkind = \"toy\"\ngames = {DRAWS}\nseed = {SEED}\n");
    let id = submit(&coord.url, &token, &experiment_file(&dir.0, "toy.toml", &text))?;
    let api = format!("{}/api/v1", coord.url);

    // Planned: one cell of every draw.
    let planned = get_json(&format!("{api}/experiments/{id}")).await?;
    assert_eq!((planned["kind"].as_str(), planned["cells"].as_array().map(Vec::len)), (Some("toy"), Some(1)));
    assert_eq!(planned["target_games"], DRAWS, "{planned}");

    // Claimed by a worker that names the kind, and verified: a forged sum is refused.
    let http = reqwest::Client::new();
    let register = json!({ "protocol": shared::PROTOCOL_VERSION, "name": "forger", "threads": 1, "kinds": ["toy"] });
    let (s, v) = post(&http, &format!("{api}/workers/register"), None, register).await;
    assert_eq!(s, 200, "{v}");
    let forger = v["token"].as_str().unwrap().to_string();
    let claim = json!({ "protocol": shared::PROTOCOL_VERSION, "threads": 1, "kinds": ["toy"] });
    let (s, batch) = post(&http, &format!("{api}/claim"), Some(&forger), claim).await;
    assert_eq!((s, batch["job"]["kind"].as_str()), (200, Some("toy")), "{batch}");
    let job: ToyJob = serde_json::from_value(batch["job"].clone())?;
    assert_eq!((job.seed, job.first), (SEED, 0));
    let (gz, sha) = gz64("");
    let logs = json!({ "gcg_gz": gz, "gcg_sha256": sha, "csv_gz": gz, "csv_sha256": sha });
    let forged = json!({
        "lease_id": batch["lease_id"], "elapsed_ms": 1, "logs": logs,
        "result": { "kind": "toy", "draws": job.count, "sum": sum(&job) + 1 },
    });
    let url = format!("{api}/batches/{}/result", batch["batch_id"].as_str().unwrap());
    let (s, v) = post(&http, &url, Some(&forger), forged).await;
    assert_eq!(s, 422, "{v}");
    assert!(v["error"].as_str().unwrap().contains("result.sum"), "{v}");
    let (s, v) = post(
        &http,
        &format!("{api}/batches/{}/release", batch["batch_id"].as_str().unwrap()),
        Some(&forger),
        json!({ "lease_id": batch["lease_id"] }),
    )
    .await;
    assert_eq!(s, 200, "{v}");

    // Settled by a real volunteer, batch by batch.
    let mut v = volunteer(&coord.url, "toy-volunteer", &dir.0.join("v"), &["--exit-when-idle"])?;
    let done = wait_for_status(&coord.url, id, &["finished", "failed"], Duration::from_secs(120)).await;
    let _ = v.wait();
    let done = done?;
    assert_eq!((done["status"].as_str(), done["games"].as_u64()), (Some("finished"), Some(DRAWS)), "{done}");
    let counted = batches(&coord.url, id).await?;
    assert!(counted.len() >= 2, "carved into several batches: {}", counted.len());
    assert!(counted.iter().all(|b| b["result"]["kind"] == "toy"));

    // Shown: the page says the sum of every draw.
    let all = sum(&ToyJob { seed: SEED, first: 0, count: DRAWS });
    let page = dump_dom(&format!("{}/experiments/{id}", coord.url), &dir.0.join("chromium"))?;
    assert!(page.contains(&format!("sum of the counted draws: {all}")), "{page}");
    drop(coord);
    db.drop_db().await
}
