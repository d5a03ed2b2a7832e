//! `worker loadtest`: many simulated volunteers against a running coordinator — register,
//! then claim, heartbeat and upload small results in a loop — reporting requests per second
//! and p50/p99 latency per endpoint, and how many requests the coordinator shed (503 with
//! `Retry-After`, which the simulated workers honour as real ones do). A benchmark, not a
//! test: see docs/BENCHMARKS.md.

use crate::client::{Client, ClientError};
use anyhow::{Context, Result, bail};
use base64::Engine as _;
use indicatif::{ProgressBar, ProgressStyle};
use sha2::{Digest, Sha256};
use shared::PROTOCOL_VERSION;
use shared::protocol::*;
use shared::stats::MatchTally;
use std::collections::BTreeMap;
use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[derive(clap::Args)]
pub struct Args {
    /// Coordinator URL.
    #[arg(long)]
    coordinator: String,
    /// A researcher token: the load test submits (and at the end stops) its own experiment.
    #[arg(long, env = "LEXHIVE_TOKEN", hide_env_values = true)]
    token: String,
    /// Simulated workers.
    #[arg(long, default_value_t = 1000)]
    workers: usize,
    /// Target requests per second over all workers (0: as fast as the coordinator answers).
    #[arg(long, default_value_t = 600.0)]
    rate: f64,
    /// Seconds to run after registration.
    #[arg(long, default_value_t = 30)]
    seconds: u64,
}

/// Per endpoint: latencies of the requests served, and of those shed.
type Samples = Arc<Mutex<BTreeMap<&'static str, [Vec<Duration>; 2]>>>;

fn record<T>(s: &Samples, what: &'static str, d: Duration, r: &Result<T, ClientError>) {
    let shed = matches!(r, Err(e) if e.is_shed());
    s.lock().expect("samples").entry(what).or_default()[shed as usize].push(d);
}

/// A result for `pairs` pairs, every game won by the first bot: small, and consistent.
fn fake_upload(lease: uuid::Uuid, pairs: u64, logs: &Logs) -> ResultUpload {
    let t = MatchTally {
        games: 2 * pairs,
        wins: 2 * pairs,
        pair_points: [0, 0, 0, 0, pairs],
        score: [800 * pairs as i64, 600 * pairs as i64],
        turns: [20 * pairs, 20 * pairs],
        first_wins: pairs,
        ..Default::default()
    };
    ResultUpload { lease_id: lease, result: JobResult::Match(t), elapsed_ms: 1000, logs: logs.clone() }
}

fn tiny_logs() -> Result<Logs> {
    let gz = |text: &str| -> Result<(String, String)> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(text.as_bytes())?;
        let sha = hex::encode(Sha256::digest(text.as_bytes()));
        Ok((base64::engine::general_purpose::STANDARD.encode(e.finish()?), sha))
    };
    let (gcg_gz, gcg_sha256) = gz(&format!("{GAME_MARKER}0\n#player1 p1 a\n#player2 p2 b\n"))?;
    let (csv_gz, csv_sha256) = gz(engine::gcg::CSV_HEADER)?;
    Ok(Logs { gcg_gz, gcg_sha256, csv_gz, csv_sha256 })
}

pub fn run(a: Args) -> Result<()> {
    if a.workers == 0 {
        bail!("--workers: at least 1");
    }
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    rt.block_on(load(a))
}

async fn load(a: Args) -> Result<()> {
    let researcher = Client::new(&a.coordinator, Some(a.token.clone()))?;
    let anon = Client::new(&a.coordinator, None)?;
    let work = anon
        .get::<shared::protocol::Version>("/version")
        .await
        .context("asking the coordinator what it is")?
        .registration_work;
    let toml = "name = \"load test\"\nkind = \"match\"\ngames = 10000000\n[match]\nbot1 = \"static\"\nbot2 = \"greedy\"\n[grid]\n\"bot2\" = [\"greedy\", \"static\"]\n";
    let exp: Submitted =
        researcher.post_text("/experiments", toml.into()).await.context("submitting the load-test experiment")?;
    let samples: Samples = Default::default();
    let errors = Arc::new(Mutex::new(BTreeMap::<String, u64>::new()));

    // Register every simulated worker, 64 at a time.
    let bar = ProgressBar::new(a.workers as u64)
        .with_style(ProgressStyle::with_template("registering {bar:40} {pos}/{len}").expect("template"));
    let mut tokens = Vec::with_capacity(a.workers);
    for chunk in (0..a.workers).collect::<Vec<_>>().chunks(64) {
        let mut set = tokio::task::JoinSet::new();
        for &i in chunk {
            let (c, s) = (anon.clone(), samples.clone());
            set.spawn(async move {
                // Every simulated worker is an owner of its own: the load test's coordinator
                // asks for no proof of work (`scripts/loadtest.sh`), as a real one would.
                let req = RegisterRequest {
                    protocol: PROTOCOL_VERSION,
                    name: format!("load-{i}"),
                    threads: 4,
                    kinds: vec!["match".into()],
                    owner_token: None,
                    capabilities: Capabilities::default(),
                    work: Some(shared::work::solve("worker", &format!("load-{i}"), work)),
                };
                let t = Instant::now();
                // Registration is shed too under load: wait as told and try again.
                loop {
                    let r = c.post::<_, RegisterResponse>("/workers/register", &req).await;
                    record(&s, "register", t.elapsed(), &r);
                    match r {
                        Err(e) if e.is_shed() => tokio::time::sleep(e.retry_after().unwrap_or_default()).await,
                        r => break anyhow::Ok(r?.token),
                    }
                }
            });
        }
        while let Some(t) = set.join_next().await {
            tokens.push(t??);
            bar.inc(1);
        }
    }
    bar.finish_and_clear();

    // Each worker: claim, heartbeat, upload, then wait so that all together make `rate` req/s.
    let per_worker_gap =
        if a.rate > 0.0 { Duration::from_secs_f64(3.0 * a.workers as f64 / a.rate) } else { Duration::ZERO };
    let deadline = Instant::now() + Duration::from_secs(a.seconds);
    let logs = Arc::new(tiny_logs()?);
    let bar = ProgressBar::new(a.seconds)
        .with_style(ProgressStyle::with_template("load {bar:40} {pos}/{len} s").expect("template"));
    let started = Instant::now();
    let mut set = tokio::task::JoinSet::new();
    for (i, token) in tokens.into_iter().enumerate() {
        let (c, s, e, logs) = (anon.with_token(token), samples.clone(), errors.clone(), logs.clone());
        // Spread the workers' first requests over one gap.
        let offset = per_worker_gap.mul_f64(i as f64 / a.workers as f64);
        set.spawn(async move {
            tokio::time::sleep(offset.min(deadline.saturating_duration_since(Instant::now()))).await;
            while Instant::now() < deadline {
                let cycle = Instant::now();
                let fail = |what: &str, err: String| {
                    *e.lock().expect("errors").entry(format!("{what}: {err}")).or_default() += 1;
                };
                let t = Instant::now();
                let claim = c
                    .post::<_, ClaimResponse>(
                        "/claim",
                        &ClaimRequest {
                            protocol: PROTOCOL_VERSION,
                            threads: 4,
                            kinds: vec!["match".into()],
                            // A pair a batch: the smallest upload.
                            rates: [("match".to_string(), 0.01)].into(),
                            capabilities: Capabilities::default(),
                        },
                    )
                    .await;
                record(&s, "claim", t.elapsed(), &claim);
                // Told to wait: as a volunteer does, wait that long and a little more.
                let mut told = None;
                match claim {
                    Ok(ClaimResponse::Batch(b)) => {
                        let t = Instant::now();
                        let hb = c
                            .post::<_, HeartbeatResponse>(
                                &format!("/batches/{}/heartbeat", b.batch_id),
                                &HeartbeatRequest { lease_id: b.lease_id },
                            )
                            .await;
                        record(&s, "heartbeat", t.elapsed(), &hb);
                        match hb {
                            Err(err) if err.is_shed() => {}
                            Err(err) => fail("heartbeat", err.to_string()),
                            Ok(_) => {}
                        }
                        let t = Instant::now();
                        let up = c
                            .post::<_, UploadResponse>(
                                &format!("/batches/{}/result", b.batch_id),
                                &fake_upload(b.lease_id, b.job.units(), &logs),
                            )
                            .await;
                        record(&s, "result", t.elapsed(), &up);
                        if let Err(err) = up {
                            fail("result", err.to_string());
                        }
                    }
                    Ok(ClaimResponse::Idle { .. }) => fail("claim", "idle".into()),
                    Err(err) if err.is_shed() => told = err.retry_after().map(crate::volunteer::shed_wait),
                    Err(err) => fail("claim", err.to_string()),
                }
                let rest = told
                    .unwrap_or_else(|| per_worker_gap.saturating_sub(cycle.elapsed()))
                    .min(deadline.saturating_duration_since(Instant::now()));
                tokio::time::sleep(rest).await;
            }
        });
    }
    let ticker = {
        let bar = bar.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_secs(1)).await;
                bar.inc(1);
            }
        })
    };
    while set.join_next().await.is_some() {}
    ticker.abort();
    bar.finish_and_clear();
    let secs = started.elapsed().as_secs_f64();
    let _ =
        researcher.post::<_, serde_json::Value>(&format!("/experiments/{}/stop", exp.id), &serde_json::json!({})).await;

    let samples = samples.lock().expect("samples");
    let mut out = format!(
        "Simulated workers: {}  target rate: {} req/s  duration: {secs:.1}s\n",
        a.workers,
        if a.rate > 0.0 { a.rate.to_string() } else { "unlimited".into() }
    );
    out.push_str(&format!(
        "{:<10} {:>9} {:>9} {:>9} {:>9} {:>9} {:>11}\n",
        "endpoint", "served", "req/s", "p50 ms", "p99 ms", "shed", "shed p99 ms"
    ));
    let q = |v: &[Duration], p: f64| -> f64 {
        if v.is_empty() {
            return f64::NAN;
        }
        let mut v = v.to_vec();
        v.sort();
        v[((v.len() - 1) as f64 * p).round() as usize].as_secs_f64() * 1000.0
    };
    let (mut served, mut shed) = (0, 0);
    for (what, [ok, refused]) in samples.iter() {
        // Registration happens before the timed part: no rate for it.
        let rps = if *what == "register" { f64::NAN } else { ok.len() as f64 / secs };
        if *what != "register" {
            served += ok.len();
            shed += refused.len();
        }
        out.push_str(&format!(
            "{what:<10} {:>9} {:>9.1} {:>9.2} {:>9.2} {:>9} {:>11.2}\n",
            ok.len(),
            rps,
            q(ok, 0.5),
            q(ok, 0.99),
            refused.len(),
            q(refused, 0.99)
        ));
    }
    out.push_str(&format!(
        "all (after registering): {} requests served, {:.1} req/s; {} shed ({:.1} req/s)\n",
        served,
        served as f64 / secs,
        shed,
        shed as f64 / secs
    ));
    for (e, n) in errors.lock().expect("errors").iter() {
        out.push_str(&format!("errors: {n} x {e}\n"));
    }
    crate::emit(&out)
}
