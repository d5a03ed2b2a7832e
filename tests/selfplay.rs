//! Training data from the volunteers: a selfplay experiment's games are played by a volunteer
//! (each deal once), kept in the log store rather than Postgres, served as one download that
//! `worker cnn assemble` turns into training records, and are the very games
//! `worker autoplay --unpaired` plays. Logs an older coordinator kept in Postgres move to the
//! store when a coordinator starts; `coordinator logs gc` removes only what no result names.

use anyhow::{Context, Result, ensure};
use e2e::*;
use sha2::Digest;
use std::process::Command;
use std::time::{Duration, SystemTime};

const SELFPLAY: &str = r#"
name = "training data"
kind = "selfplay"
games = 40
seed = 5
[match]
bot1 = "softmax:t=1,bag=60"
bot2 = "static"
"#;

fn inflate(gz: &[u8]) -> Result<String> {
    let mut text = String::new();
    std::io::Read::read_to_string(&mut flate2::read::MultiGzDecoder::new(gz), &mut text)?;
    Ok(text)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn selfplay_games_are_kept_in_the_log_store_and_download_as_training_data() -> Result<()> {
    let db = TestDb::create().await?;
    let mut coord = Coordinator::start(&db.url, &[])?;
    let token = researcher_token(&db.url)?;
    let dir = Scratch::new("selfplay");
    let id = submit(&coord.url, &token, &experiment_file(&dir.0, "s.toml", SELFPLAY))?;
    finish_with_volunteers(&coord.url, id, &["data-volunteer"], &dir.0).await?;
    let u = coord.url.clone();
    let d = get_json(&format!("{u}/api/v1/experiments/{id}")).await?;
    check_documented(&u, "/experiments/{id}", &format!("/experiments/{id}")).await?;
    let cell = &d["cells"][0];
    assert_eq!(
        (d["kind"].as_str(), cell["games"].as_u64(), cell["pairs"].as_u64()),
        (Some("selfplay"), Some(40), Some(0))
    );
    let turns: u64 = cell["tally"]["turns"].as_array().context("turns")?.iter().filter_map(|t| t.as_u64()).sum();

    // The download: games 0..40 in order, game i the game `worker autoplay --unpaired` plays
    // as its game i (deal i, the softmax bot first in even games).
    let url = format!("{u}/api/v1/experiments/{id}/games.gcg.gz");
    let gz = reqwest::get(&url).await?.bytes().await?;
    let text = inflate(&gz)?;
    let games = shared::protocol::split_gcg_bundle(&text).map_err(anyhow::Error::msg)?;
    assert_eq!(games.iter().map(|g| g.0).collect::<Vec<_>>(), (0..40).collect::<Vec<_>>());
    let local = dir.0.join("local");
    let out = Command::new(bin("worker"))
        .args(["autoplay", "--bot1", "softmax:t=1,bag=60", "--bot2", "static", "--games", "40", "--seed", "5"])
        .args(["--unpaired", "--threads", "2", "--log-dir", local.to_str().unwrap()])
        .output()?;
    ensure!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    for (i, game) in &games {
        let want = std::fs::read_to_string(local.join(format!("game-{i:06}.gcg")))?;
        assert_eq!(*game, want, "game {i} is the local run's");
    }
    assert!(games[0].1.contains("#player1 p1 softmax:t=1,bag=60") && games[1].1.contains("#player1 p1 static"));

    // Every turn is a training record.
    let frames = dir.0.join("frames.bin");
    let exported = dir.0.join("games.gcg.gz");
    coordinator_cmd(&db.url, &["export", "--experiment", &id.to_string(), "--out", exported.to_str().unwrap()])?;
    assert!(std::fs::read(&exported)? == gz[..], "the export is the download");
    let out = Command::new(bin("worker"))
        .args(["cnn", "assemble", exported.to_str().unwrap(), "--out", frames.to_str().unwrap()])
        .output()?;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(std::fs::metadata(&frames)?.len(), turns * 4 * (85 * 15 * 15 + 76 + 1));
    let page = reqwest::get(format!("{u}/experiments/{id}")).await?.text().await?;
    let grouped = if turns >= 1000 { format!("{},{:03}", turns / 1000, turns % 1000) } else { turns.to_string() };
    let said = format!("{grouped} positions (a training record each) in 40 counted games");
    assert!(page.contains("<h2>Training data</h2>") && page.contains(&said), "{said}: {page}");

    // The logs are in the store, under the sha256 of their texts, and not in Postgres.
    let store = log_store(&db.url);
    let pool = db.pool().await?;
    let rows: Vec<(uuid::Uuid, String, String, bool, i64, i64)> = sqlx::query_as(
        "SELECT batch_id, gcg_sha256, csv_sha256, gcg_gz IS NULL AND csv_gz IS NULL, gcg_bytes, csv_bytes FROM batch_results",
    )
    .fetch_all(&pool)
    .await?;
    assert!(!rows.is_empty());
    let object = |which: &str, sha: &str| store.join(which).join(&sha[..2]).join(format!("{sha}.gz"));
    let mut stored = 0;
    for (batch, gcg, csv, moved, gcg_bytes, csv_bytes) in &rows {
        assert!(moved, "batch {batch}: no log bytes in Postgres");
        for (which, sha, size) in [("gcg", gcg, gcg_bytes), ("csv", csv, csv_bytes)] {
            let bytes = std::fs::read(object(which, sha))?;
            assert_eq!(bytes.len() as i64, *size);
            assert_eq!(hex::encode(sha2::Sha256::digest(inflate(&bytes)?.as_bytes())), *sha);
            stored += bytes.len() as i64;
        }
        let served = reqwest::Client::new()
            .get(format!("{u}/api/v1/batches/{batch}/logs/gcg"))
            .bearer_auth(&token)
            .send()
            .await?
            .bytes()
            .await?;
        assert!(served[..] == std::fs::read(object("gcg", gcg))?[..]);
    }
    assert_eq!(d["log_bytes"].as_i64(), Some(stored));

    // A result whose logs an older coordinator kept in Postgres is served from its row, and
    // moved to the store when a coordinator starts.
    let (batch, gcg, csv, ..) = &rows[0];
    let (old_gcg, old_csv) = (std::fs::read(object("gcg", gcg))?, std::fs::read(object("csv", csv))?);
    sqlx::query("UPDATE batch_results SET gcg_gz = $2, csv_gz = $3 WHERE batch_id = $1")
        .bind(batch)
        .bind(&old_gcg)
        .bind(&old_csv)
        .execute(&pool)
        .await?;
    std::fs::remove_file(object("gcg", gcg))?;
    std::fs::remove_file(object("csv", csv))?;
    assert!(reqwest::get(&url).await?.bytes().await?[..] == gz[..], "served from the row");
    coord.restart()?;
    let u = coord.url.clone();
    assert_eq!(std::fs::read(object("gcg", gcg))?, old_gcg);
    assert_eq!(std::fs::read(object("csv", csv))?, old_csv);
    let (left,): (i64,) =
        sqlx::query_as("SELECT count(*) FROM batch_results WHERE gcg_gz IS NOT NULL OR csv_gz IS NOT NULL")
            .fetch_one(&pool)
            .await?;
    assert_eq!(left, 0, "moved to the store");
    assert!(reqwest::get(format!("{u}/api/v1/experiments/{id}/games.gcg.gz")).await?.bytes().await?[..] == gz[..]);

    // Garbage collection: an old log no result names goes; a young one (an upload between
    // storing its logs and recording its result) and every named one stay.
    let (old, young) = (object("gcg", &"0".repeat(64)), object("csv", &"1".repeat(64)));
    for f in [&old, &young] {
        std::fs::create_dir_all(f.parent().unwrap())?;
        std::fs::write(f, b"unnamed")?;
    }
    std::fs::File::options()
        .write(true)
        .open(&old)?
        .set_modified(SystemTime::now() - Duration::from_secs(48 * 3600))?;
    let out = coordinator_cmd(&db.url, &["logs", "gc"])?;
    assert_eq!(out.trim(), format!("{} logs kept, 1 removed", 2 * rows.len() + 1));
    assert!(!old.exists() && young.exists());
    for (_, gcg, csv, ..) in &rows {
        assert!(object("gcg", gcg).exists() && object("csv", csv).exists());
    }

    // A store the coordinator cannot open is one line and exit status 2.
    let out = Command::new(bin("coordinator"))
        .args(["migrate", "--log-store", "gs://bucket/logs"])
        .env("DATABASE_URL", &db.url)
        .output()?;
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("--log-store `gs://bucket/logs`: a folder or s3://BUCKET/PREFIX"), "{err}");
    // The store is an option of the commands that touch logs, and of no other.
    let help = |args: &[&str]| -> anyhow::Result<String> {
        Ok(String::from_utf8_lossy(&Command::new(bin("coordinator")).args(args).output()?.stdout).into_owned())
    };
    for (args, has) in [
        (&["serve", "--help"][..], true),
        (&["migrate", "--help"], true),
        (&["export", "--help"], true),
        (&["logs", "gc", "--help"], true),
        (&["token", "--help"], false),
        (&["owner", "list", "--help"], false),
    ] {
        assert_eq!(help(args)?.contains("--log-store"), has, "{args:?}");
    }
    drop(coord);
    db.drop_db().await
}
