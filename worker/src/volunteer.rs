//! `worker volunteer`: the donated-machine loop. Register once (the token is kept in the
//! config dir), then: claim a batch, fetch the artifacts it needs (cached by sha256), play it
//! on every thread while heartbeating, upload the result and logs, repeat. Waits with
//! exponential backoff and jitter when there is no work or no coordinator.
//!
//! Ctrl-C once: finish the current batch, upload it, and quit. Twice: release it and quit.

use crate::autoplay::Match;
use crate::client::{Client, ClientError};
use crate::data::Data;
use anyhow::{Context, Result, bail};
use base64::Engine as _;
use engine::bots::BotSpec;
use engine::gcg::{CSV_HEADER, write_csv, write_gcg};
use engine::leaves::Klv;
use engine::record::GameRecord;
use rand::RngExt;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use shared::PROTOCOL_VERSION;
use shared::kinds::JobKind;
use shared::kinds::endgame::{EndgameJob, EndgameReport, Solved};
use shared::kinds::matches::MatchJob;
use shared::kinds::wintable::{WINTABLE_BOT, WinCounts, WintableJob};
use shared::protocol::*;
use shared::stats::MatchTally;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[derive(clap::Args)]
pub struct Args {
    /// Coordinator URL, e.g. https://lexhive.example.org.
    #[arg(long, env = "LEXHIVE_COORDINATOR")]
    coordinator: String,
    /// Name shown on the dashboards (default: this machine's host name).
    #[arg(long)]
    name: Option<String>,
    /// Threads to play on (default: all cores).
    #[arg(long)]
    threads: Option<usize>,
    /// Exit (status 0) once the coordinator has had no work for a few seconds.
    #[arg(long)]
    exit_when_idle: bool,
    /// Memory for the endgame solver's transposition table, in MiB (taken at the first
    /// endgame batch, then kept); each solving thread's play memo grows to about as much at
    /// most during a solve (96 MiB at least).
    #[arg(long, default_value_t = 256)]
    endgame_table_mb: usize,
    /// Job kinds to run, comma-separated (default: every kind this worker knows: match,
    /// endgame, wintable, selfplay). The coordinator hands out no others.
    #[arg(long, value_delimiter = ',', value_parser = parse_kind)]
    kinds: Vec<JobKind>,
    /// Register under this owner (`worker owner` prints one): your machines then count as one
    /// person's, for replicas and cross-checks. Needed where registration is by invitation;
    /// without it this machine registers as an owner of its own.
    #[arg(long, env = "LEXHIVE_OWNER_TOKEN", hide_env_values = true)]
    owner_token: Option<String>,
    /// Where CNN bots' nets run. Without ONNX Runtime this worker is sent no CNN batches.
    #[command(flatten)]
    net: crate::cnn::NetArgs,
    /// Do not load ONNX Runtime: the coordinator sends this worker no CNN batches.
    #[arg(long)]
    no_cnn: bool,
}

fn parse_kind(s: &str) -> Result<JobKind, String> {
    JobKind::parse(s.trim())
        .ok_or_else(|| format!("`{s}` is not a job kind ({})", JobKind::names(JobKind::ALL).join(", ")))
}

/// The endgame solver, made at the first endgame batch and kept: its table's entries are keyed
/// by whole positions, so they stay true from one batch to the next.
struct EndgameSolver {
    solver: std::sync::OnceLock<engine::endgame::Solver>,
    bytes: usize,
}

impl EndgameSolver {
    fn get(&self) -> &engine::endgame::Solver {
        self.solver.get_or_init(|| engine::endgame::Solver::new(self.bytes))
    }
}

/// Seconds without work after which `--exit-when-idle` exits.
const IDLE_EXIT_SECS: u64 = 4;
/// Seconds `--exit-when-idle` keeps trying to reach the coordinator at start-up.
const UNREACHABLE_EXIT_SECS: u64 = 10;

/// Why a volunteer gave up, with the exit status README.md documents for it.
#[derive(Debug, thiserror::Error)]
pub enum Exit {
    /// `--exit-when-idle`, and the coordinator did not answer at start-up (status 3).
    #[error("{0}")]
    Unreachable(String),
    /// The URL answers, but not as a lexhive coordinator (status 4).
    #[error("{0}")]
    NotACoordinator(String),
    /// The coordinator speaks another protocol version (status 5).
    #[error("{0}")]
    Protocol(String),
    /// The coordinator refused this worker's token: banned, revoked or quarantined (status 6).
    #[error("{0}")]
    Refused(String),
    /// Another volunteer of the same name runs from the same config folder (status 7).
    #[error("{0}")]
    Busy(String),
}

impl Exit {
    pub fn status(&self) -> u8 {
        match self {
            Exit::Unreachable(_) => 3,
            Exit::NotACoordinator(_) => 4,
            Exit::Protocol(_) => 5,
            Exit::Refused(_) => 6,
            Exit::Busy(_) => 7,
        }
    }
}
/// Longest wait between attempts to reach the coordinator.
const MAX_BACKOFF: Duration = Duration::from_secs(60);
/// Longest wait between claims while the coordinator has no work.
const MAX_IDLE_WAIT: Duration = Duration::from_secs(30);

/// Where the worker keeps its token: `$LEXHIVE_CONFIG_DIR`, else `$XDG_CONFIG_HOME/lexhive`,
/// else `~/.config/lexhive`.
pub(crate) fn config_dir() -> Result<PathBuf> {
    dir("LEXHIVE_CONFIG_DIR", "XDG_CONFIG_HOME", ".config")
}

/// Where downloaded artifacts are cached: `$LEXHIVE_CACHE_DIR`, else `$XDG_CACHE_HOME/lexhive`,
/// else `~/.cache/lexhive`.
fn cache_dir() -> Result<PathBuf> {
    dir("LEXHIVE_CACHE_DIR", "XDG_CACHE_HOME", ".cache")
}

fn dir(own: &str, xdg: &str, home_sub: &str) -> Result<PathBuf> {
    if let Some(d) = std::env::var_os(own) {
        return Ok(d.into());
    }
    if let Some(d) = std::env::var_os(xdg).filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(d).join("lexhive"));
    }
    let home = std::env::var_os("HOME").context("no HOME; set LEXHIVE_CONFIG_DIR and LEXHIVE_CACHE_DIR")?;
    Ok(PathBuf::from(home).join(home_sub).join("lexhive"))
}

/// One registration: a worker identity on one coordinator.
#[derive(Clone, Serialize, Deserialize)]
struct Credential {
    coordinator: String,
    name: String,
    worker_id: uuid::Uuid,
    token: String,
}

fn credentials_path() -> Result<PathBuf> {
    Ok(config_dir()?.join("credentials.json"))
}

fn load_credentials(path: &Path) -> Result<Vec<Credential>> {
    match std::fs::read_to_string(path) {
        Ok(text) => serde_json::from_str(&text).with_context(|| {
            format!("{}: not a lexhive credentials file (move it aside to register afresh)", path.display())
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(e).with_context(|| format!("{}: cannot read", path.display())),
    }
}

/// Write the credentials file readable by its owner only, atomically.
fn save_credentials(path: &Path, creds: &[Credential]) -> Result<()> {
    write_private(path, serde_json::to_string_pretty(creds)?.as_bytes())
}

/// Write `bytes` to `path` readable by its owner only, atomically (a temporary file renamed).
pub(crate) fn write_private(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = path.parent().expect("a file in a folder");
    std::fs::create_dir_all(dir).with_context(|| format!("{}: cannot create", dir.display()))?;
    let tmp = path.with_extension(format!("{}.tmp", std::process::id()));
    {
        use std::os::unix::fs::OpenOptionsExt;
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)
            .with_context(|| format!("{}: cannot write", tmp.display()))?;
        f.write_all(bytes)?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, path).with_context(|| format!("{}: cannot write", path.display()))
}

/// How long to wait when the coordinator shed a request and said to retry after `told`: that,
/// give or take a half, so that a refused crowd comes back spread out. The coordinator already
/// lengthens `told` as the refusals grow; a backoff of our own on top would leave it idle.
pub fn shed_wait(told: Duration) -> Duration {
    told.mul_f64(rand::rng().random_range(0.5..1.5))
}

/// Sleep for `d` give or take a quarter, so that many workers don't retry in step.
async fn sleep_jittered(d: Duration) {
    let f = rand::rng().random_range(0.75..1.25);
    tokio::time::sleep(d.mul_f64(f)).await;
}

/// Run `f` until it succeeds or fails for good, backing off exponentially on transient errors.
async fn retry<T, F, Fut>(what: &str, quit: &AtomicU8, mut f: F) -> Result<T, ClientError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, ClientError>>,
{
    let mut wait = Duration::from_millis(500);
    let mut warned = false;
    loop {
        match f().await {
            Err(e) if e.is_transient() && quit.load(Ordering::SeqCst) < 2 => {
                let pause = match e.retry_after() {
                    Some(told) if e.is_shed() => shed_wait(told),
                    _ => wait,
                };
                // Every wait is said, with its length, except the routine sheds after the first.
                if !(warned && e.is_shed()) {
                    eprintln!("{what}: {e}; retrying in ~{:.1} s", pause.as_secs_f64());
                    warned = true;
                }
                if e.is_shed() {
                    tokio::time::sleep(pause).await;
                } else {
                    sleep_jittered(wait).await;
                    wait = (wait * 2).min(MAX_BACKOFF);
                }
            }
            other => return other,
        }
    }
}

pub fn run(a: Args) -> Result<()> {
    if a.endgame_table_mb == 0 || a.endgame_table_mb > 1 << 20 {
        bail!("--endgame-table-mb: 1 to 1048576");
    }
    let threads = a.threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())).max(1);
    let name = a.name.clone().unwrap_or_else(|| {
        std::fs::read_to_string("/etc/hostname")
            .map(|h| h.trim().to_string())
            .ok()
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| "volunteer".into())
    });
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build()?;
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    rt.block_on(volunteer(a, name, threads, pool))
}

async fn volunteer(a: Args, name: String, threads: usize, pool: rayon::ThreadPool) -> Result<()> {
    let anon = Client::new(&a.coordinator, None)?;
    // Held until the process ends: one volunteer per (coordinator, name) and config folder.
    let _running = hold_name(anon.base(), &name)?;
    let endgame = EndgameSolver { solver: std::sync::OnceLock::new(), bytes: a.endgame_table_mb << 20 };
    // 0: running; 1: finish the batch, then quit; 2: release it and quit now.
    let quit = Arc::new(AtomicU8::new(0));
    {
        let quit = quit.clone();
        tokio::spawn(async move {
            while tokio::signal::ctrl_c().await.is_ok() {
                let was = quit.fetch_add(1, Ordering::SeqCst);
                if was == 0 {
                    eprintln!("finishing the current batch, then quitting (Ctrl-C again to release it and quit now)");
                } else {
                    eprintln!("releasing the current batch and quitting");
                }
            }
        });
    }
    greet(&anon, a.exit_when_idle, &quit).await?;
    let kinds = if a.kinds.is_empty() { JobKind::ALL.to_vec() } else { a.kinds.clone() };
    let owner = a.owner_token.as_deref();
    let mut caps = capabilities(&a);
    let (mut client, mut fresh) = credential(&anon, &name, threads, &kinds, &caps, owner, &quit).await?;
    let cache = cache_dir()?.join("artifacts");
    let mut loaded: Option<(Vec<String>, Arc<Loaded>)> = None;
    // Units per second measured on the last batch of each kind, for the coordinator's sizing.
    let mut rates: BTreeMap<String, f64> = BTreeMap::new();
    let mut idle_since = Instant::now();
    let mut backoff = Duration::from_millis(500);
    // Consecutive "no work" answers stretch the wait, so idle volunteers cost the coordinator
    // little; work resets it.
    let mut idle_wait: Option<Duration> = None;
    let mut shed = false;
    // The previous batch's upload, running while the next batch plays.
    let mut uploading: Option<tokio::task::JoinHandle<()>> = None;
    let plural = if threads == 1 { "thread" } else { "threads" };
    eprintln!("volunteering {threads} {plural} to {} as `{name}`", client.base());
    while quit.load(Ordering::SeqCst) == 0 {
        let req = ClaimRequest {
            protocol: PROTOCOL_VERSION,
            threads: threads as u32,
            kinds: JobKind::names(&kinds),
            rates: rates.clone(),
            capabilities: caps.clone(),
        };
        let batch = match client.post::<_, serde_json::Value>("/claim", &req).await.and_then(decode_claim) {
            Ok(Claimed::Batch(b)) => *b,
            Ok(Claimed::Unknown { batch_id, lease_id, why }) => {
                // A job this build cannot run: give it straight back, so that its lease does not
                // expire and count against it, and wait before claiming again.
                eprintln!("the coordinator sent a job this worker cannot run ({why}); released it; upgrade the worker");
                let release = ReleaseRequest { lease_id };
                if let Err(e) =
                    client.post::<_, serde_json::Value>(&format!("/batches/{batch_id}/release"), &release).await
                {
                    eprintln!("release of batch {}: {e}", short(batch_id));
                }
                nap(backoff, &quit).await;
                backoff = (backoff * 2).min(MAX_BACKOFF);
                continue;
            }
            Ok(Claimed::Idle { retry_after_ms }) => {
                // The upload in flight may be what finishes a cell and frees the next work.
                if uploading.is_some() {
                    uploaded(&mut uploading).await;
                    continue;
                }
                backoff = Duration::from_millis(500);
                if a.exit_when_idle && idle_since.elapsed() >= Duration::from_secs(IDLE_EXIT_SECS) {
                    eprintln!("no work; exiting");
                    return Ok(());
                }
                let first = Duration::from_millis(retry_after_ms.clamp(100, 60_000));
                let wait = idle_wait.map_or(first, |w| (w * 2).min(MAX_IDLE_WAIT)).max(first);
                // Said as the wait grows, then once more when it settles: a month-long idle
                // spell is a few lines, not thousands.
                if idle_wait != Some(wait) && !a.exit_when_idle {
                    let settled = if wait >= MAX_IDLE_WAIT { " (and every ~30 s until there is)" } else { "" };
                    eprintln!("no work for this worker; asking again in ~{:.1} s{settled}", wait.as_secs_f64());
                }
                idle_wait = Some(wait);
                nap(wait, &quit).await;
                continue;
            }
            Err(e) if e.is_shed() => {
                // Routine on a busy coordinator: said once per run of refusals.
                let told = e.retry_after().unwrap_or_default();
                if !shed {
                    eprintln!("claim: {e}; retrying in ~{}s", told.as_secs());
                    shed = true;
                }
                nap(shed_wait(told), &quit).await;
                continue;
            }
            Err(e) if e.is_transient() => {
                eprintln!("claim: {e}; retrying in ~{}s", backoff.as_secs_f64().round());
                nap(backoff, &quit).await;
                backoff = (backoff * 2).min(MAX_BACKOFF);
                continue;
            }
            // The coordinator no longer knows this token (its database was reset, say):
            // register afresh, once.
            Err(ClientError::Status { status: 401, .. }) if !fresh => {
                eprintln!("the coordinator does not know this worker's token; registering again");
                forget_credential(client.base(), &name)?;
                (client, fresh) = credential(&anon, &name, threads, &kinds, &caps, owner, &quit).await?;
                continue;
            }
            Err(ClientError::Status { status: status @ (401 | 403), message, .. }) => {
                uploaded(&mut uploading).await;
                return Err(Exit::Refused(format!(
                    "the coordinator at {} refused worker `{name}` (HTTP {status}): {message}",
                    client.base()
                ))
                .into());
            }
            Err(ClientError::Status { status: 426, message, .. }) => {
                uploaded(&mut uploading).await;
                return Err(Exit::Protocol(message).into());
            }
            Err(e) => {
                uploaded(&mut uploading).await;
                bail!("claim refused: {e}")
            }
        };
        backoff = Duration::from_millis(500);
        idle_wait = None;
        fresh = false;
        shed = false;
        let shas: Vec<String> = batch.artifacts.iter().map(|r| r.sha256.clone()).collect();
        let data = match &loaded {
            Some((s, d)) if *s == shas => d.clone(),
            _ => match fetch_keeping_lease(&client, &cache, &batch, &quit).await {
                Ok(d) => {
                    let d = Arc::new(d);
                    loaded = Some((shas, d.clone()));
                    d
                }
                Err(e) => {
                    report_failure(&client, &batch, &format!("{e:#}")).await;
                    nap(backoff, &quit).await;
                    continue;
                }
            },
        };
        let run = Run { pool: &pool, endgame: &endgame, net: caps.onnx.then_some(&a.net) };
        match play_batch(&client, &batch, data, run, &quit).await? {
            Ended::Played(p) => {
                rates.insert(batch.job.kind().as_str().to_string(), p.rate);
                // At most one upload in flight: the previous batch's has had this one's play to
                // finish.
                uploaded(&mut uploading).await;
                uploading = Some(p.upload);
            }
            Ended::Dropped => {}
            Ended::Unrunnable => {
                // Released: from now on this worker claims as one without CNN inference.
                caps.onnx = false;
                caps.cuda = false;
                eprintln!("CNN bots: off for the rest of this run; the coordinator will send no more CNN batches");
            }
        }
        idle_since = Instant::now();
    }
    uploaded(&mut uploading).await;
    Ok(())
}

/// Stop a batch's heartbeat.
async fn stop_heart(cancel: &AtomicBool, heart: tokio::task::JoinHandle<()>) {
    cancel.store(true, Ordering::SeqCst);
    let _ = heart.await;
}

/// Wait for the upload in flight, if any.
async fn uploaded(upload: &mut Option<tokio::task::JoinHandle<()>>) {
    if let Some(u) = upload.take() {
        let _ = u.await;
    }
}

/// Check that `client`'s URL is a lexhive coordinator speaking this worker's protocol, waiting
/// (and saying so) while it cannot be reached; under `--exit-when-idle`, only
/// [`UNREACHABLE_EXIT_SECS`].
async fn greet(client: &Client, exit_when_idle: bool, quit: &AtomicU8) -> Result<()> {
    let url = client.base();
    let not_ours = |why: String| {
        Exit::NotACoordinator(format!(
            "{url} is not a lexhive coordinator ({why}); --coordinator takes the server's root URL, like http://host:8080"
        ))
    };
    let start = Instant::now();
    let mut wait = Duration::from_secs(1);
    loop {
        match client.get_bytes("/version").await {
            Ok(bytes) => {
                let v: Version = serde_json::from_slice(&bytes)
                    .map_err(|_| not_ours("GET /api/v1/version did not answer as one".into()))?;
                if v.service != SERVICE {
                    return Err(not_ours(format!("it says it is `{}`", v.service)).into());
                }
                if v.protocol != PROTOCOL_VERSION {
                    return Err(Exit::Protocol(format!(
                        "the coordinator at {url} speaks protocol {} and this worker {PROTOCOL_VERSION}: {}",
                        v.protocol,
                        if v.protocol > PROTOCOL_VERSION {
                            "upgrade the worker"
                        } else {
                            "the coordinator is older than this worker"
                        }
                    ))
                    .into());
                }
                return Ok(());
            }
            Err(e) if e.is_transient() => {
                if exit_when_idle && start.elapsed() >= Duration::from_secs(UNREACHABLE_EXIT_SECS) {
                    return Err(Exit::Unreachable(format!(
                        "cannot reach the coordinator at {url} ({e}); gave up after {UNREACHABLE_EXIT_SECS} s (--exit-when-idle)"
                    ))
                    .into());
                }
                eprintln!("cannot reach the coordinator at {url} ({e}); trying again in ~{} s", wait.as_secs());
                nap(wait, quit).await;
                if quit.load(Ordering::SeqCst) > 0 {
                    bail!("interrupted before the coordinator at {url} answered");
                }
                wait = (wait * 2).min(MAX_BACKOFF);
            }
            Err(ClientError::Status { status, .. }) => {
                return Err(not_ours(format!("GET /api/v1/version answered HTTP {status}")).into());
            }
            Err(e) => return Err(not_ours(e.to_string()).into()),
        }
    }
}

/// Lock this volunteer's name for `coordinator` in the config folder for as long as the
/// returned file is held, so that two processes sharing a config folder never run (and
/// register) as one worker.
fn hold_name(coordinator: &str, name: &str) -> Result<std::fs::File> {
    let dir = config_dir()?;
    let key = hex::encode(&Sha256::digest(format!("{coordinator}\n{name}").as_bytes())[..8]);
    let path = dir.join(format!("running-{key}.lock"));
    let f = lock_file(&path)?;
    match f.try_lock() {
        Ok(()) => Ok(f),
        Err(std::fs::TryLockError::WouldBlock) => Err(Exit::Busy(format!(
            "a volunteer named `{name}` for {coordinator} is already running from {} (give this one another --name, or its own LEXHIVE_CONFIG_DIR)",
            dir.display()
        ))
        .into()),
        Err(std::fs::TryLockError::Error(e)) => Err(e).with_context(|| format!("{}: cannot lock", path.display())),
    }
}

/// Lock the credentials file against other volunteers' reads and writes while held.
fn lock_credentials(path: &Path) -> Result<std::fs::File> {
    let lock = path.with_extension("lock");
    let f = lock_file(&lock)?;
    f.lock().with_context(|| format!("{}: cannot lock", lock.display()))?;
    Ok(f)
}

/// A file to take a lock on (made, with its folder, if missing; never truncated).
fn lock_file(path: &Path) -> Result<std::fs::File> {
    let dir = path.parent().expect("a file in a folder");
    std::fs::create_dir_all(dir).with_context(|| format!("{}: cannot create", dir.display()))?;
    std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .with_context(|| format!("{}: cannot open", path.display()))
}

/// What this machine can run beyond the engine, found once at start-up and said in one line:
/// ONNX Runtime (CNN bots) and where it runs, and the GPU its driver names.
fn capabilities(a: &Args) -> Capabilities {
    let gpu = gpu();
    let mut caps = Capabilities { gpu: gpu.clone(), ..Default::default() };
    if a.no_cnn {
        eprintln!("CNN bots: off (--no-cnn)");
        return caps;
    }
    // `runtime` says which library and device in its own line.
    match a.net.runtime() {
        Ok(rt) => {
            caps.onnx = true;
            caps.cuda = rt.cuda();
            if let (false, Some(g)) = (caps.cuda, &gpu) {
                eprintln!("CNN bots: on the CPU; the GPU ({}) is not used: install onnxruntime-gpu for it", g.name);
            }
        }
        Err(e) => eprintln!("CNN bots: off ({e:#}); the coordinator will send this worker no CNN batches"),
    }
    caps
}

/// The first GPU `nvidia-smi` names, with its memory; `None` without one (or without the
/// driver's tool).
fn gpu() -> Option<Gpu> {
    let out = std::process::Command::new("nvidia-smi")
        .args(["--query-gpu=name,memory.total", "--format=csv,noheader,nounits"])
        .stderr(std::process::Stdio::null())
        .output()
        .ok()
        .filter(|o| o.status.success())?;
    parse_gpu(&String::from_utf8_lossy(&out.stdout))
}

/// `nvidia-smi`'s `name, memory (MiB)` line.
fn parse_gpu(text: &str) -> Option<Gpu> {
    let (name, mb) = text.lines().next()?.rsplit_once(',')?;
    let name = name.trim();
    (!name.is_empty()).then(|| Gpu { name: name.to_string(), memory_mb: mb.trim().parse().unwrap_or(0) })
}

/// A client carrying this machine's token for the coordinator, registering on first use; and
/// whether the token is newly issued.
async fn credential(
    client: &Client,
    name: &str,
    threads: usize,
    kinds: &[JobKind],
    capabilities: &Capabilities,
    owner_token: Option<&str>,
    quit: &AtomicU8,
) -> Result<(Client, bool)> {
    let path = credentials_path()?;
    if let Some(c) = load_credentials(&path)?.into_iter().find(|c| c.coordinator == client.base() && c.name == name) {
        return Ok((client.with_token(c.token), false));
    }
    let req = RegisterRequest {
        protocol: PROTOCOL_VERSION,
        name: name.to_string(),
        threads: threads as u32,
        kinds: JobKind::names(kinds),
        owner_token: owner_token.map(str::to_string),
        capabilities: capabilities.clone(),
    };
    let r: RegisterResponse = match retry("register", quit, || client.post("/workers/register", &req)).await {
        Ok(r) => r,
        Err(ClientError::Status { status: 426, message, .. }) => return Err(Exit::Protocol(message).into()),
        Err(ClientError::Status { status: status @ (401 | 403), message, .. }) => {
            return Err(Exit::Refused(format!(
                "the coordinator at {} refused to register `{name}` (HTTP {status}): {message}",
                client.base()
            ))
            .into());
        }
        Err(e) => return Err(e).context("registering with the coordinator"),
    };
    // Other volunteers of this config folder (under other names) may have written meanwhile.
    let _lock = lock_credentials(&path)?;
    let mut creds = load_credentials(&path)?;
    creds.push(Credential {
        coordinator: client.base().to_string(),
        name: name.to_string(),
        worker_id: r.worker_id,
        token: r.token.clone(),
    });
    save_credentials(&path, &creds)?;
    eprintln!("registered as worker {} (token saved in {})", r.worker_id, path.display());
    Ok((client.with_token(r.token), true))
}

fn forget_credential(coordinator: &str, name: &str) -> Result<()> {
    let path = credentials_path()?;
    let _lock = lock_credentials(&path)?;
    let mut creds = load_credentials(&path)?;
    creds.retain(|c| !(c.coordinator == coordinator && c.name == name));
    save_credentials(&path, &creds)
}

/// What a claim's answer holds, as far as this build can tell.
#[derive(Debug)]
enum Claimed {
    Batch(Box<BatchSpec>),
    Idle {
        retry_after_ms: u64,
    },
    /// A leased batch this build cannot decode (a job kind or field added since it was built).
    Unknown {
        batch_id: uuid::Uuid,
        lease_id: uuid::Uuid,
        why: String,
    },
}

/// Decode a claim's answer. One that leased a batch this build cannot read still names the
/// batch and lease, so that it can be released rather than left to expire; an answer with
/// neither is an error.
fn decode_claim(v: serde_json::Value) -> Result<Claimed, ClientError> {
    if let Ok(r) = serde_json::from_value::<ClaimResponse>(v.clone()) {
        return Ok(match r {
            ClaimResponse::Batch(b) => Claimed::Batch(b),
            ClaimResponse::Idle { retry_after_ms } => Claimed::Idle { retry_after_ms },
        });
    }
    let id = |field: &str| v.get(field).and_then(|x| x.as_str()).and_then(|x| x.parse().ok());
    let why = match v.pointer("/job/kind").and_then(|k| k.as_str()) {
        Some(kind) if JobKind::parse(kind).is_none() => format!("job kind `{kind}`"),
        _ => serde_json::from_value::<ClaimResponse>(v.clone()).err().map_or_else(String::new, |e| e.to_string()),
    };
    match (id("batch_id"), id("lease_id")) {
        (Some(batch_id), Some(lease_id)) => Ok(Claimed::Unknown { batch_id, lease_id, why }),
        _ => Err(ClientError::Unreachable(format!("an answer to /claim this worker cannot read: {why}"))),
    }
}

/// Sleep about `d` (with jitter), waking early when Ctrl-C asks to quit.
async fn nap(d: Duration, quit: &AtomicU8) {
    let end = Instant::now() + d.mul_f64(rand::rng().random_range(0.75..1.25));
    while quit.load(Ordering::SeqCst) == 0 {
        let left = end.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return;
        }
        tokio::time::sleep(left.min(Duration::from_millis(100))).await;
    }
}

/// What a batch plays with.
struct Loaded {
    data: Data,
    leaves: Option<Arc<Klv>>,
    table: Option<Arc<engine::winpct::WinTable>>,
    /// CNN bots' value nets, by sha256.
    models: crate::cnn::Models,
}

/// Fetch the artifacts not in the cache (verifying each sha256), then load them.
async fn fetch_and_load(client: &Client, cache: &Path, refs: &[ArtifactRef], quit: &AtomicU8) -> Result<Loaded> {
    std::fs::create_dir_all(cache).with_context(|| format!("{}: cannot create", cache.display()))?;
    let mut paths = std::collections::HashMap::new();
    let mut models = crate::cnn::Models::new();
    for r in refs {
        if r.sha256.len() != 64 || !r.sha256.bytes().all(|c| c.is_ascii_hexdigit()) {
            bail!("artifact {}: bad sha256 `{}`", r.name, r.sha256);
        }
        // Keep the extension: it tells the loaders the format (.kwg or a word list).
        let ext = Path::new(&r.name)
            .extension()
            .and_then(|e| e.to_str())
            .filter(|e| e.chars().all(|c| c.is_ascii_alphanumeric()))
            .unwrap_or("bin");
        let path = cache.join(format!("{}.{ext}", r.sha256));
        // A cached copy is checked too: a month of uptime meets the odd bad disk block.
        let cached_ok = std::fs::read(&path).is_ok_and(|b| hex::encode(Sha256::digest(&b)) == r.sha256);
        if !cached_ok {
            let url = format!("/artifacts/{}", r.sha256);
            let bytes = retry("download", quit, || client.get_bytes(&url))
                .await
                .with_context(|| format!("downloading {}", r.name))?;
            let got = hex::encode(Sha256::digest(&bytes));
            if got != r.sha256 {
                bail!("artifact {}: downloaded bytes hash to {got}, not {}", r.name, r.sha256);
            }
            crate::data::write_atomic(&path, &bytes)?;
            eprintln!("fetched {} ({} bytes)", r.name, bytes.len());
        }
        if r.role == "model" {
            models.insert(r.sha256.clone(), path);
        } else {
            paths.insert(r.role.clone(), path);
        }
    }
    let need = |role: &str| paths.get(role).with_context(|| format!("the batch names no {role} artifact"));
    let dist = engine::tiles::Distribution::load(need("distribution")?)?;
    let layout = engine::board::Layout::load(need("layout")?)?;
    let kwg = engine::lexicon::load_lexicon(need("lexicon")?, &dist)?;
    engine::movegen::prepare(&kwg);
    let leaves = match paths.get("leaves") {
        Some(p) => Some(Arc::new(Klv::load(p)?)),
        None => None,
    };
    let table = match paths.get("winpct") {
        Some(p) => Some(Arc::new(engine::winpct::WinTable::load(p)?)),
        None => None,
    };
    Ok(Loaded { data: Data { dist, layout, kwg }, leaves, table, models })
}

async fn report_failure(client: &Client, batch: &BatchSpec, error: &str) {
    eprintln!("batch {}: failed: {error}", short(batch.batch_id));
    let req = FailRequest { lease_id: batch.lease_id, error: error.to_string() };
    if let Err(e) = client.post::<_, serde_json::Value>(&format!("/batches/{}/fail", batch.batch_id), &req).await {
        eprintln!("batch {}: could not report the failure: {e}", short(batch.batch_id));
    }
}

fn short(id: uuid::Uuid) -> String {
    id.to_string()[..8].to_string()
}

/// How a batch's play ended.
enum Played {
    Done(Box<JobResult>, Logged),
    Cancelled,
    /// This machine cannot run it (its CNN model does not load on this GPU): released, not
    /// failed, so that a machine that can gets it.
    Unrunnable(String),
}

/// What a claimed batch came to.
enum Ended {
    /// Played; its upload runs in the background.
    Played(Playing),
    /// Failed, cancelled or its lease lost (said and reported already).
    Dropped,
    /// Released because this machine cannot run its CNN bots.
    Unrunnable,
}

/// What the engine runs batches with.
#[derive(Clone, Copy)]
struct Run<'a> {
    pool: &'a rayon::ThreadPool,
    endgame: &'a EndgameSolver,
    /// ONNX Runtime's settings, while this worker runs CNN bots.
    net: Option<&'a crate::cnn::NetArgs>,
}

/// A game's logs before bundling: its id in the run, its GCG and its CSV rows.
type GameLog = (u64, String, String);

/// What a batch leaves to upload besides its result: its games' logs (bundled and compressed
/// by the upload, off the engine's threads), or none (endgame batches).
enum Logged {
    Games(Vec<GameLog>),
    None,
}

impl Logged {
    fn bundle(self) -> Result<Logs> {
        match self {
            Logged::Games(games) => bundle(games),
            Logged::None => empty_logs(),
        }
    }
}

/// Fetch and load a batch's artifacts while heartbeating it: downloading and loading a
/// lexicon can outlast a lease.
async fn fetch_keeping_lease(client: &Client, cache: &Path, batch: &BatchSpec, quit: &Arc<AtomicU8>) -> Result<Loaded> {
    let (stop, lost) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicBool::new(false)));
    let heart = heartbeat(client, batch, stop.clone(), lost, quit.clone());
    let r = fetch_and_load(client, cache, &batch.artifacts, quit).await;
    stop.store(true, Ordering::SeqCst);
    let _ = heart.await;
    r
}

/// Heartbeat `batch` until `cancel` is set; sets `cancel` (and `lost`, when the lease is gone)
/// when the coordinator says to stop, and on a second Ctrl-C.
fn heartbeat(
    client: &Client,
    batch: &BatchSpec,
    cancel: Arc<AtomicBool>,
    lost: Arc<AtomicBool>,
    quit: Arc<AtomicU8>,
) -> tokio::task::JoinHandle<()> {
    let client = client.clone();
    let (path, req, every) = (
        format!("/batches/{}/heartbeat", batch.batch_id),
        HeartbeatRequest { lease_id: batch.lease_id },
        Duration::from_secs(batch.heartbeat_secs.max(1)),
    );
    tokio::spawn(async move {
        let mut last_beat = Instant::now();
        loop {
            tokio::time::sleep(Duration::from_millis(200)).await;
            if quit.load(Ordering::SeqCst) >= 2 {
                cancel.store(true, Ordering::SeqCst);
            }
            if cancel.load(Ordering::SeqCst) {
                return;
            }
            if last_beat.elapsed() >= every {
                last_beat = Instant::now();
                match client.post::<_, HeartbeatResponse>(&path, &req).await {
                    Ok(r) if !r.keep_going => cancel.store(true, Ordering::SeqCst),
                    Ok(_) => {}
                    // Shed: beat again once the coordinator's wait is over, not a whole
                    // interval later, so that the lease is renewed in time.
                    Err(e) if e.is_shed() => {
                        let wait = shed_wait(e.retry_after().unwrap_or_default());
                        let next = Instant::now() + wait.min(every);
                        last_beat = next.checked_sub(every).unwrap_or(last_beat);
                    }
                    Err(e) if e.is_transient() => eprintln!("heartbeat: {e}"),
                    Err(e) => {
                        eprintln!("heartbeat: {e}; dropping the batch");
                        lost.store(true, Ordering::SeqCst);
                        cancel.store(true, Ordering::SeqCst);
                    }
                }
            }
        }
    })
}

/// A batch played, its upload under way in the background.
struct Playing {
    upload: tokio::task::JoinHandle<()>,
    /// Units of work per second ([`Job::units`]) measured on the batch's play.
    rate: f64,
}

/// Play a batch while heartbeating it, then start its upload in the background (bundling and
/// compressing its logs, uploading, heartbeating until the coordinator has it), so that the
/// engine's threads go on to the next batch at once. `None` when the batch did not complete
/// (failed, cancelled, lease lost).
async fn play_batch(
    client: &Client,
    batch: &BatchSpec,
    loaded: Arc<Loaded>,
    Run { pool, endgame, net }: Run<'_>,
    quit: &Arc<AtomicU8>,
) -> Result<Ended> {
    let cancel = Arc::new(AtomicBool::new(false));
    // Why the heartbeat cancelled: lease lost (409/403/404) or the cell no longer needs it.
    let lost = Arc::new(AtomicBool::new(false));
    let heart = heartbeat(client, batch, cancel.clone(), lost.clone(), quit.clone());
    let start = Instant::now();
    let played = {
        let (job, cancel) = (batch.job.clone(), cancel.clone());
        // The games run on the rayon pool; this runtime thread just waits for them, while the
        // heartbeat task runs on the other one.
        tokio::task::block_in_place(|| {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match &job {
                Job::Match(m) => pool.install(|| play(&loaded, m, true, net, &cancel)),
                Job::Selfplay(m) => pool.install(|| play(&loaded, m, false, net, &cancel)),
                Job::Endgame(e) => solve(&loaded, e, endgame.get(), pool.current_num_threads(), &cancel),
                Job::Wintable(w) => pool.install(|| count_positions(&loaded, w, &cancel)),
            }))
        })
    };
    let elapsed = start.elapsed();
    let id = short(batch.batch_id);
    let played = match played {
        Ok(Ok(p)) => p,
        Ok(Err(e)) => {
            stop_heart(&cancel, heart).await;
            report_failure(client, batch, &format!("{e:#}")).await;
            return Ok(Ended::Dropped);
        }
        Err(panic) => {
            stop_heart(&cancel, heart).await;
            let msg = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "panic".into());
            report_failure(client, batch, &format!("engine panicked: {msg}")).await;
            return Ok(Ended::Dropped);
        }
    };
    if lost.load(Ordering::SeqCst) {
        stop_heart(&cancel, heart).await;
        eprintln!("batch {id}: lease lost; results dropped");
        return Ok(Ended::Dropped);
    }
    let (result, logged) = match played {
        Played::Done(r, l) => (*r, l),
        Played::Cancelled | Played::Unrunnable(_) => {
            stop_heart(&cancel, heart).await;
            let why = match &played {
                Played::Unrunnable(why) => format!(" (this machine cannot run it: {why})"),
                _ => String::new(),
            };
            let req = ReleaseRequest { lease_id: batch.lease_id };
            match client.post::<_, serde_json::Value>(&format!("/batches/{}/release", batch.batch_id), &req).await {
                Ok(_) => eprintln!("batch {id}: released{why}"),
                Err(e) => eprintln!("batch {id}: release failed ({e}); its lease will expire{why}"),
            }
            return Ok(if why.is_empty() { Ended::Dropped } else { Ended::Unrunnable });
        }
    };
    let secs = elapsed.as_secs_f64().max(1e-3);
    let games = result.games();
    let summary = match (&result, &batch.job) {
        (JobResult::Match(t) | JobResult::Selfplay(t), Job::Match(job) | Job::Selfplay(job)) => format!(
            "{games} games  {:.1} games/s{}",
            games as f64 / secs,
            t.win_rate().map_or(String::new(), |w| format!("  {}: {:.1}%", job.bot1, 100.0 * w))
        ),
        (JobResult::Wintable(w), _) => {
            format!("{games} games  {:.1} games/s  {} (unseen, spread) counts", games as f64 / secs, w.counts.len())
        }
        (JobResult::Endgame(r), _) => format!(
            "{games} endgames  {} exact  {:.2} s each",
            r.solved.iter().filter(|s| s.exact || s.skipped).count(),
            secs / games.max(1) as f64
        ),
        _ => unreachable!("a result matches its job"),
    };
    let line = format!("batch {id}  {} cell {}  {summary}", batch.experiment_name, batch.cell_index);
    let (client, quit) = (client.clone(), quit.clone());
    let (batch_id, lease_id) = (batch.batch_id, batch.lease_id);
    let elapsed_ms = elapsed.as_millis() as u64;
    let upload = tokio::spawn(async move {
        let outcome = match tokio::task::spawn_blocking(move || logged.bundle()).await {
            Ok(Ok(logs)) => {
                let upload = ResultUpload { lease_id, result, elapsed_ms, logs };
                let path = format!("/batches/{batch_id}/result");
                match retry("upload", &quit, || client.post::<_, UploadResponse>(&path, &upload)).await {
                    Ok(r) if r.accepted => "uploaded".to_string(),
                    Ok(r) => r.message,
                    Err(e) => format!("upload refused: {e}"),
                }
            }
            Ok(Err(e)) => format!("not uploaded: bundling its logs failed: {e:#}"),
            Err(e) => format!("not uploaded: bundling its logs panicked: {e}"),
        };
        stop_heart(&cancel, heart).await;
        println!("{line}  {outcome}");
    });
    Ok(Ended::Played(Playing { upload, rate: batch.job.units() as f64 / secs }))
}

/// Stops a batch's games early (through `Match::play`'s error path).
#[derive(Debug, thiserror::Error)]
#[error("cancelled")]
struct Cancelled;

/// Play a match job (`paired`: each deal twice, seats swapped) or a selfplay job (each deal
/// once) on the current rayon pool; `cancel` stops it between games.
fn play(
    loaded: &Loaded,
    job: &MatchJob,
    paired: bool,
    net: Option<&crate::cnn::NetArgs>,
    cancel: &AtomicBool,
) -> Result<Played> {
    let specs = [BotSpec::parse(&job.bot1)?, BotSpec::parse(&job.bot2)?];
    for spec in &specs {
        if let Some(model) = spec.model() {
            let Some(net) = net else {
                return Ok(Played::Unrunnable(
                    "value nets (CNN bots, sim bots with model=) are off on this worker".into(),
                ));
            };
            let rt = match net.runtime() {
                Ok(rt) => rt,
                Err(e) => return Ok(Played::Unrunnable(format!("{e:#}"))),
            };
            let path =
                loaded.models.get(model).with_context(|| format!("the batch lists no model artifact {model}"))?;
            // A model that does not load on the CPU is the model's fault (every worker would
            // fail it: building the bots below fails the batch); on a GPU it may be this
            // machine's (memory, driver), so there it is loaded first (into the queue the
            // bots then share).
            if rt.cuda()
                && let Err(e) = rt.shared(path, crate::cnn::QUEUE_BATCH)
            {
                return Ok(Played::Unrunnable(e.to_string()));
            }
        }
    }
    let m = Match {
        net: net.map(|args| crate::cnn::Nets { args, models: &loaded.models }),
        data: &loaded.data,
        specs,
        leaves: loaded.leaves.clone(),
        table: loaded.table.clone(),
        seed: job.seed,
        first_game: 2 * job.first_pair,
        games: 2 * job.pairs,
        paired,
    };
    let names = [job.bot1.as_str(), job.bot2.as_str()];
    let games: Mutex<Vec<(u64, engine::record::Outcome, String, String)>> =
        Mutex::new(Vec::with_capacity(m.games as usize));
    let r = m.play(&|rec: &GameRecord| {
        if cancel.load(Ordering::Relaxed) {
            return Err(Cancelled.into());
        }
        let seats = [names[rec.seat_bot[0]], names[rec.seat_bot[1]]];
        let gcg = write_gcg(&rec.game, seats, &loaded.data.dist);
        let csv = write_csv(rec, names, &loaded.data.dist);
        games.lock().expect("games").push((rec.id, rec.outcome(), gcg, csv));
        Ok(())
    });
    if let Err(e) = r {
        if e.is::<Cancelled>() {
            return Ok(Played::Cancelled);
        }
        return Err(e);
    }
    let games = games.into_inner().expect("games");
    let outcomes: Vec<_> = games.iter().map(|g| g.1).collect();
    let tally = MatchTally::from_games(&outcomes, paired);
    let logs = games.into_iter().map(|(id, _, gcg, csv)| (id, gcg, csv)).collect();
    let result = if paired { JobResult::Match(tally) } else { JobResult::Selfplay(tally) };
    Ok(Played::Done(Box::new(result), Logged::Games(logs)))
}

/// A batch's logs from its games' (id, GCG, CSV rows), in game order so that their bytes (and
/// sha256) don't depend on thread timing.
fn bundle(mut games: Vec<GameLog>) -> Result<Logs> {
    games.sort_by_key(|g| g.0);
    let mut gcg = String::new();
    let mut csv = format!("{CSV_HEADER}\n");
    for (id, g, c) in &games {
        gcg.push_str(&format!("{GAME_MARKER}{id}\n"));
        gcg.push_str(g);
        csv.push_str(c);
    }
    // The two logs compress side by side: on a batch of 20,000 games that is a second saved.
    let (gcg_gz, csv_gz) = std::thread::scope(|s| {
        let csv_gz = s.spawn(|| gz64(csv.as_bytes()));
        (gz64(gcg.as_bytes()), csv_gz.join().expect("compressing the CSV log"))
    });
    Ok(Logs {
        gcg_sha256: hex::encode(Sha256::digest(gcg.as_bytes())),
        gcg_gz: gcg_gz?,
        csv_sha256: hex::encode(Sha256::digest(csv.as_bytes())),
        csv_gz: csv_gz?,
    })
}

/// Play a wintable job's static-vs-static games (each deal once, as `worker wintable generate`
/// does) and count their positions. Counts are integers: their sum does not depend on the
/// order games finish in. The games are logged as game `i` of deal `i`, for the coordinator
/// to re-play and count again.
fn count_positions(loaded: &Loaded, job: &WintableJob, cancel: &AtomicBool) -> Result<Played> {
    let m = Match {
        net: None,
        data: &loaded.data,
        specs: [BotSpec::Static, BotSpec::Static],
        leaves: loaded.leaves.clone(),
        table: None,
        seed: job.seed,
        first_game: 2 * job.first_pair,
        games: 2 * job.pairs,
        paired: false,
    };
    let samples = Mutex::new(engine::winpct::WinSamples::new(&loaded.data.dist));
    let games = Mutex::new(Vec::with_capacity(m.games as usize));
    let names = [WINTABLE_BOT; 2];
    let r = m.play(&|rec: &GameRecord| {
        if cancel.load(Ordering::Relaxed) {
            return Err(Cancelled.into());
        }
        samples.lock().expect("samples").add_game(&rec.game);
        // Both seats are `static`: the logs name bot 0 first whoever started.
        let rec = GameRecord { seat_bot: [0, 1], ..rec.clone() };
        let gcg = write_gcg(&rec.game, names, &loaded.data.dist);
        let csv = write_csv(&rec, names, &loaded.data.dist);
        games.lock().expect("games").push((rec.id, gcg, csv));
        Ok(())
    });
    if let Err(e) = r {
        if e.is::<Cancelled>() {
            return Ok(Played::Cancelled);
        }
        return Err(e);
    }
    let counts = samples.into_inner().expect("samples").to_counts();
    let logs = Logged::Games(games.into_inner().expect("games"));
    Ok(Played::Done(Box::new(JobResult::Wintable(WinCounts { games: 2 * job.pairs, counts })), logs))
}

fn empty_logs() -> Result<Logs> {
    let empty = hex::encode(Sha256::digest(b""));
    Ok(Logs { gcg_gz: gz64(b"")?, gcg_sha256: empty.clone(), csv_gz: gz64(b"")?, csv_sha256: empty })
}

/// Solve an endgame job's positions in order, each on `threads` threads (sharing the root's moves); `cancel`
/// stops it between positions. Endgame batches carry no logs: each solution is its own record.
fn solve(
    loaded: &Loaded,
    job: &EndgameJob,
    solver: &engine::endgame::Solver,
    threads: usize,
    cancel: &AtomicBool,
) -> Result<Played> {
    use engine::endgame::{Options, sets::bag_emptied};
    let ctx = loaded.data.ctx();
    let dist = &loaded.data.dist;
    let mut mg = engine::movegen::Generator::new();
    let mut solved = Vec::with_capacity(job.positions.len());
    for p in &job.positions {
        if cancel.load(Ordering::Relaxed) {
            return Ok(Played::Cancelled);
        }
        let game =
            match &p.cgp {
                Some(cgp) => Some(
                    engine::cgp::Position::parse(cgp, dist)
                        .with_context(|| format!("position {}", p.index))?
                        .into_game(&loaded.data.kwg, dist, 0),
                ),
                None => bag_emptied(ctx, loaded.leaves.clone(), job.seed, p.index, 0, job.extra, &mut mg),
            };
        let Some(game) = game else {
            solved.push(Solved {
                index: p.index,
                cgp: String::new(),
                skipped: true,
                value: 0,
                exact: true,
                best: String::new(),
                sequence: String::new(),
                nodes: 0,
                ms: 0,
            });
            continue;
        };
        let opts = Options {
            plies: job.plies,
            threads,
            time_limit: Some(Duration::from_millis(job.time_ms)),
            ..Options::default()
        };
        let sol = solver.solve(ctx, &game, &opts, &|_| {}).map_err(|e| anyhow::anyhow!("position {}: {e}", p.index))?;
        let best = sol.pv.first().map_or("-".to_string(), |m| m.notation(dist, |r, c| game.board.at(r, c)));
        solved.push(Solved {
            index: p.index,
            cgp: engine::cgp::write(&game, dist),
            skipped: false,
            value: sol.value,
            exact: sol.exact,
            best,
            sequence: crate::endgame::line_notation(ctx, &game, &sol.pv).join("  "),
            nodes: sol.nodes,
            ms: sol.elapsed.as_millis() as u64,
        });
    }
    Ok(Played::Done(Box::new(JobResult::Endgame(EndgameReport { solved })), Logged::None))
}

fn gz64(bytes: &[u8]) -> Result<String> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(bytes)?;
    Ok(base64::engine::general_purpose::STANDARD.encode(e.finish()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gpus_are_read_from_nvidia_smi() {
        let g = parse_gpu("NVIDIA H100 80GB HBM3, 81559\nNVIDIA H100 80GB HBM3, 81559\n").unwrap();
        assert_eq!((g.name.as_str(), g.memory_mb), ("NVIDIA H100 80GB HBM3", 81559));
        assert_eq!(parse_gpu(""), None);
        assert_eq!(parse_gpu(", 100\n"), None);
        assert_eq!(parse_gpu("Some GPU, [N/A]\n").map(|g| g.memory_mb), Some(0));
    }

    #[test]
    fn a_job_this_build_cannot_run_is_named_for_release() {
        let (batch, lease) = (uuid::Uuid::new_v4(), uuid::Uuid::new_v4());
        let claim = serde_json::json!({
            "status": "batch", "batch_id": batch, "lease_id": lease, "lease_secs": 120, "heartbeat_secs": 30,
            "experiment_id": uuid::Uuid::new_v4(), "experiment_name": "x", "cell_id": uuid::Uuid::new_v4(),
            "cell_index": 0, "artifacts": [], "job": { "kind": "cnn", "model": "abc" }
        });
        match decode_claim(claim.clone()) {
            Ok(Claimed::Unknown { batch_id, lease_id, why }) => {
                assert_eq!((batch_id, lease_id), (batch, lease));
                assert!(why.contains("`cnn`"), "{why}");
            }
            other => panic!("{other:?}"),
        }
        // A known kind decodes; an idle answer is idle; nonsense is an error, not a panic.
        let mut known = claim;
        known["job"] = serde_json::json!({ "kind": "match", "bot1": "static", "bot2": "greedy", "seed": 1, "first_pair": 0, "pairs": 2 });
        assert!(matches!(decode_claim(known), Ok(Claimed::Batch(b)) if b.job.units() == 2));
        let idle = decode_claim(serde_json::json!({ "status": "idle", "retry_after_ms": 5 }));
        assert!(matches!(idle, Ok(Claimed::Idle { retry_after_ms: 5 })));
        assert!(decode_claim(serde_json::json!({ "status": "party" })).is_err());
    }
}
