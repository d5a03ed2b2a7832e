//! A win-probability table made on the volunteers: two real volunteers play a wintable
//! experiment's games in many small batches, the coordinator sums their counts and fits the
//! table, and the artifact is byte-for-byte the table `worker wintable generate` makes locally
//! from the same seed. The page in Chromium plots it.

use anyhow::{Result, ensure};
use e2e::*;
use std::process::Command;
use std::time::Duration;

const TABLE: &str = "name = \"table on volunteers\"\nkind = \"wintable\"\ngames = 60\nseed = 11\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn volunteers_make_the_same_table_as_the_local_command() -> Result<()> {
    let db = TestDb::create().await?;
    let coord = Coordinator::start(&db.url, &["--batch-secs", "1"])?;
    let token = researcher_token(&db.url)?;
    let dir = Scratch::new("wintable");
    let id = submit(&coord.url, &token, &experiment_file(&dir.0, "table.toml", TABLE))?;
    let mut a = volunteer(&coord.url, "table-a", &dir.0.join("a"), &["--exit-when-idle"])?;
    let mut b = volunteer(&coord.url, "table-b", &dir.0.join("b"), &["--exit-when-idle"])?;
    let done = wait_for_status(&coord.url, id, &["finished", "failed"], Duration::from_secs(240)).await;
    let _ = (a.wait(), b.wait());
    let done = done?;
    assert_eq!(done["status"], "finished", "{done}");
    assert_eq!(done["games"], 60);
    let batches = batches(&coord.url, id).await?;
    assert!(batches.len() >= 4, "split into several batches: {}", batches.len());

    let sha = done["output_sha256"].as_str().expect("the fitted table's artifact").to_string();
    let remote = reqwest::get(format!("{}/api/v1/artifacts/{sha}", coord.url)).await?.bytes().await?;
    let local_path = dir.0.join("local.wpt");
    let out = Command::new(bin("worker"))
        .args(["wintable", "generate", "--games", "60", "--seed", "11", "--threads", "2", "--out"])
        .arg(&local_path)
        .current_dir(repo())
        .output()?;
    ensure!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let local = std::fs::read(&local_path)?;
    assert!(remote[..] == local[..], "the volunteers' table differs from the local one");
    engine::winpct::WinTable::parse(&String::from_utf8_lossy(&remote), "artifact")?;

    let page = dump_dom(&format!("{}/experiments/{id}", coord.url), &dir.0.join("chromium"))?;
    screenshot_for_docs(&format!("{}/experiments/{id}", coord.url), &dir.0.join("chromium"), "wintable", 1100)?;
    assert!(page.contains(&format!("href=\"/api/v1/artifacts/{sha}\"")), "{page}");
    assert_eq!(page.matches("<polyline class=\"series\" data-unseen=").count(), 4, "a line per unseen count");
    assert!(page.contains("60 / 60"));
    drop(coord);
    db.drop_db().await
}
