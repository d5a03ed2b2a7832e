//! The log store on an S3-compatible server (moto's, from PyPI: `scripts/s3-env.sh`, whose
//! path `$LEXHIVE_MOTO_SERVER` names): a volunteer's logs land in the bucket under the sha256
//! of their texts, the games download streams from it, and `coordinator logs gc` lists and
//! deletes there.

use anyhow::{Context, Result, bail, ensure};
use e2e::*;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const SELFPLAY: &str = r#"
name = "logs in S3"
kind = "selfplay"
games = 8
seed = 3
[match]
bot1 = "static"
bot2 = "greedy"
"#;

/// A moto S3 server on a free port; killed when dropped.
struct S3(Child, u16);

impl Drop for S3 {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

async fn s3() -> Result<S3> {
    let path = std::env::var("LEXHIVE_MOTO_SERVER").context(
        "LEXHIVE_MOTO_SERVER: run `scripts/s3-env.sh` and set it to the path it prints (scripts/test.sh does)",
    )?;
    let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    let child = Command::new(&path)
        .args(["-H", "127.0.0.1", "-p", &port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .with_context(|| format!("starting {path}"))?;
    let server = S3(child, port);
    let start = Instant::now();
    while reqwest::get(format!("http://127.0.0.1:{port}/")).await.is_err() {
        if start.elapsed() > Duration::from_secs(30) {
            bail!("{path} did not answer on port {port}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(server)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logs_go_to_an_s3_compatible_store() -> Result<()> {
    let server = s3().await?;
    let endpoint = format!("http://127.0.0.1:{}", server.1);
    let http = reqwest::Client::new();
    ensure!(http.put(format!("{endpoint}/lexhive")).send().await?.status().is_success(), "creating the bucket");
    let aws = [
        ("LEXHIVE_LOG_STORE", "s3://lexhive/logs"),
        ("AWS_ENDPOINT", endpoint.as_str()),
        ("AWS_ALLOW_HTTP", "true"),
        ("AWS_ACCESS_KEY_ID", "lexhive-test"),
        ("AWS_SECRET_ACCESS_KEY", "lexhive-test"),
        ("AWS_REGION", "us-east-1"),
    ];
    let db = TestDb::create().await?;
    let coord = Coordinator::start_env(&db.url, &[], &aws)?;
    let token = researcher_token(&db.url)?;
    let dir = Scratch::new("s3");
    let id = submit(&coord.url, &token, &experiment_file(&dir.0, "s.toml", SELFPLAY))?;
    finish_with_volunteers(&coord.url, id, &["s3-volunteer"], &dir.0).await?;

    // Every result's two logs are objects in the bucket, under the prefix, named by digest.
    let listing = http.get(format!("{endpoint}/lexhive?list-type=2&prefix=logs/")).send().await?.text().await?;
    let pool = db.pool().await?;
    let rows: Vec<(String, String)> =
        sqlx::query_as("SELECT gcg_sha256, csv_sha256 FROM batch_results").fetch_all(&pool).await?;
    ensure!(!rows.is_empty());
    for (gcg, csv) in &rows {
        for key in [format!("logs/gcg/{}/{gcg}.gz", &gcg[..2]), format!("logs/csv/{}/{csv}.gz", &csv[..2])] {
            assert!(listing.contains(&format!("<Key>{key}</Key>")), "{key} in {listing}");
        }
    }
    assert!(!log_store(&db.url).exists(), "nothing written to the local default");

    // The download streams from the bucket: every game, in order.
    let gz = reqwest::get(format!("{}/api/v1/experiments/{id}/games.gcg.gz", coord.url)).await?.bytes().await?;
    let mut text = String::new();
    std::io::Read::read_to_string(&mut flate2::read::MultiGzDecoder::new(&gz[..]), &mut text)?;
    let games = shared::protocol::split_gcg_bundle(&text).map_err(anyhow::Error::msg)?;
    assert_eq!(games.iter().map(|g| g.0).collect::<Vec<_>>(), (0..8).collect::<Vec<_>>());

    // Garbage collection lists the bucket and keeps what results name.
    let out = Command::new(bin("coordinator")).args(["logs", "gc"]).env("DATABASE_URL", &db.url).envs(aws).output()?;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8(out.stdout)?.trim(), format!("{} logs kept, 0 removed", 2 * rows.len()));
    drop(coord);
    db.drop_db().await
}
