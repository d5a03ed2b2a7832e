//! `worker volunteer`: the donated-machine loop. Register once (the token is kept in the
//! config dir: `home`), then: claim a batch, fetch the artifacts it needs (cached by sha256:
//! `artifacts`), run it with its kind's runner (`crate::runners`) on every thread while
//! heartbeating, upload the result and logs, repeat. Waits with exponential backoff and jitter
//! when there is no work or no coordinator (`retry`). What the machine can run beyond the
//! engine is found once (`machine`).
//!
//! Ctrl-C once: finish the current batch, upload it, and quit. Twice: release it and quit.

mod artifacts;
mod home;
mod machine;
mod retry;

pub(crate) use home::{config_dir, write_private};
pub(crate) use retry::shed_wait;

use crate::client::{Client, ClientError};
use crate::runners::{self, EndgameSolver, Kit, Loaded, Ran};
use anyhow::{Result, bail};
use artifacts::fetch_keeping_lease;
use home::{cache_dir, credential, forget_credential, hold_name};
use machine::capabilities;
use rand::RngExt;
use retry::{MAX_BACKOFF, retry};
use shared::PROTOCOL_VERSION;
use shared::kinds::JobKind;
use shared::protocol::*;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
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
    #[arg(long, value_parser = crate::cli::threads)]
    threads: Option<usize>,
    /// Exit (status 0) once the coordinator has had no work for this worker for a few
    /// seconds, and none is held by other workers' leases (which may run out).
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
    net: crate::nets::NetArgs,
    #[command(flatten)]
    word_map: crate::data::WordMapArg,
    /// Do not load ONNX Runtime: the coordinator sends this worker no CNN batches.
    #[arg(long)]
    no_cnn: bool,
}

fn parse_kind(s: &str) -> Result<JobKind, String> {
    JobKind::parse(s.trim())
        .ok_or_else(|| format!("`{s}` is not a job kind ({})", JobKind::names(JobKind::ALL).join(", ")))
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
/// Longest wait between claims while the coordinator has no work.
const MAX_IDLE_WAIT: Duration = Duration::from_secs(30);

pub fn run(a: Args) -> Result<()> {
    a.word_map.apply();
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
    let endgame = EndgameSolver::new(a.endgame_table_mb << 20);
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
    let work = greet(&anon, a.exit_when_idle, &quit).await?.registration_work;
    let kinds = if a.kinds.is_empty() { JobKind::ALL.to_vec() } else { a.kinds.clone() };
    let owner = a.owner_token.as_deref();
    let mut caps = capabilities(&a);
    let (mut client, mut fresh) = credential(&anon, &name, threads, &kinds, &caps, (owner, work), &quit).await?;
    let cache = cache_dir()?.join("artifacts");
    let mut loaded: Option<(Vec<String>, Arc<Loaded>)> = None;
    // Units per second measured on the last batch of each kind, for the coordinator's sizing.
    let mut rates: BTreeMap<String, f64> = BTreeMap::new();
    let mut idle_since = Instant::now();
    // Whether the last idle answer said others' leases hold work for this worker.
    let mut waiting_for_leases = false;
    let mut backoff = Duration::from_millis(500);
    // Consecutive "no work" answers stretch the wait, so idle volunteers cost the coordinator
    // little; work resets it.
    let mut idle_wait: Option<Duration> = None;
    // The last count of queued batches said to wait for another owner's worker.
    let mut last_waiting = 0;
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
            Ok(Claimed::Idle { retry_after_ms, unfinished, waiting_for_others }) => {
                // The upload in flight may be what finishes a cell and frees the next work.
                if uploading.is_some() {
                    uploaded(&mut uploading).await;
                    continue;
                }
                backoff = Duration::from_millis(500);
                // Others' leases hold work this worker could do if they run out: not idle yet.
                if unfinished {
                    if a.exit_when_idle && !waiting_for_leases {
                        eprintln!("no work now, but other workers' leases hold some; waiting for them");
                    }
                    idle_since = Instant::now();
                }
                waiting_for_leases = unfinished;
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
                // Said whenever the count changes: why the queue is not empty yet nothing comes.
                if waiting_for_others != last_waiting && waiting_for_others > 0 {
                    eprintln!(
                        "{waiting_for_others} queued batches wait for a worker of another owner: replicas and cross-checks of this owner's work, which its own machines never play"
                    );
                }
                last_waiting = waiting_for_others;
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
                (client, fresh) = credential(&anon, &name, threads, &kinds, &caps, (owner, work), &quit).await?;
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
        // By role too: one table may be a batch's own and, in the next, a bot's.
        let shas: Vec<String> = batch.artifacts.iter().map(|r| format!("{}:{}", r.role, r.sha256)).collect();
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
        let kit = Engine { pool: &pool, endgame: &endgame, net: caps.onnx.then_some(&a.net) };
        match play_batch(&client, &batch, data, kit, &quit).await? {
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
async fn greet(client: &Client, exit_when_idle: bool, quit: &AtomicU8) -> Result<Version> {
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
                return Ok(v);
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

/// What a claim's answer holds, as far as this build can tell.
#[derive(Debug)]
enum Claimed {
    Batch(Box<BatchSpec>),
    Idle {
        retry_after_ms: u64,
        /// Others' leases hold work this worker could do (`ClaimResponse::Idle`).
        unfinished: bool,
        /// Queued batches only a worker of another owner may take.
        waiting_for_others: u64,
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
            ClaimResponse::Idle { retry_after_ms, unfinished, waiting_for_others } => {
                Claimed::Idle { retry_after_ms, unfinished, waiting_for_others }
            }
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

/// What a claimed batch came to.
enum Ended {
    /// Played; its upload runs in the background.
    Played(Playing),
    /// Failed, cancelled or its lease lost (said and reported already).
    Dropped,
    /// Released because this machine cannot run its CNN bots.
    Unrunnable,
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

/// What the engine runs batches on: the threads, the endgame solver, and the value nets'
/// settings while this worker runs CNN bots.
#[derive(Clone, Copy)]
struct Engine<'a> {
    pool: &'a rayon::ThreadPool,
    endgame: &'a EndgameSolver,
    net: Option<&'a crate::nets::NetArgs>,
}

/// Play a batch while heartbeating it, then start its upload in the background (bundling and
/// compressing its logs, uploading, heartbeating until the coordinator has it), so that the
/// engine's threads go on to the next batch at once. `None` when the batch did not complete
/// (failed, cancelled, lease lost).
async fn play_batch(
    client: &Client,
    batch: &BatchSpec,
    loaded: Arc<Loaded>,
    Engine { pool, endgame, net }: Engine<'_>,
    quit: &Arc<AtomicU8>,
) -> Result<Ended> {
    let cancel = Arc::new(AtomicBool::new(false));
    // Why the heartbeat cancelled: lease lost (409/403/404) or the cell no longer needs it.
    let lost = Arc::new(AtomicBool::new(false));
    let heart = heartbeat(client, batch, cancel.clone(), lost.clone(), quit.clone());
    let start = Instant::now();
    let ran = {
        let (job, cancel) = (batch.job.clone(), cancel.clone());
        let kit = Kit { loaded: &loaded, pool, endgame, net };
        // The engine runs on the rayon pool; this runtime thread just waits for it, while the
        // heartbeat task runs on the other one.
        tokio::task::block_in_place(|| {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| runners::run(&job, kit, &cancel)))
        })
    };
    let elapsed = start.elapsed();
    let id = short(batch.batch_id);
    let ran = match ran {
        Ok(Ok(r)) => r,
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
    let (result, logged, summary) = match ran {
        Ran::Done { result, logged, summary } => (result, logged, summary),
        Ran::Cancelled | Ran::Unrunnable(_) => {
            stop_heart(&cancel, heart).await;
            let why = match &ran {
                Ran::Unrunnable(why) => format!(" (this machine cannot run it: {why})"),
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

#[cfg(test)]
mod tests {
    use super::*;

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
        assert!(matches!(idle, Ok(Claimed::Idle { retry_after_ms: 5, unfinished: false, waiting_for_others: 0 })));
        assert!(decode_claim(serde_json::json!({ "status": "party" })).is_err());
    }
}
