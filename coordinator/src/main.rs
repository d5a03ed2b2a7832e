//! `coordinator`: the lexhive job server. Researchers submit experiments; volunteers claim
//! batches, heartbeat, and upload results; everyone watches the dashboards. Postgres holds all
//! state, so any number of coordinators can serve one database.

mod artifacts;
mod auth;
mod dashboard;
mod endgames;
mod error;
mod experiments;
mod export;
mod ledger;
mod logstore;
mod outliers;
mod owners;
mod quarantine;
mod queue;
mod replicas;
mod results;
mod shed;
mod verify;
mod workers;

use anyhow::{Context, Result};
use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};
use clap::{Parser, Subcommand};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

#[derive(Parser)]
#[command(name = "coordinator", version, about = "lexhive coordinator: experiments, job queue, results, dashboards")]
struct Cli {
    /// Postgres connection string.
    #[arg(long, env = "DATABASE_URL", global = true, hide_env_values = true)]
    database_url: Option<String>,
    /// Where games' logs are kept: a folder (created if missing), or `s3://BUCKET/PREFIX` for
    /// an S3-compatible store configured by the `AWS_*` variables (`AWS_ENDPOINT`,
    /// `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_REGION`, `AWS_ALLOW_HTTP`). Every
    /// coordinator of one database must name the same store.
    #[arg(long, env = "LEXHIVE_LOG_STORE", global = true, default_value = "lexhive-logs")]
    log_store: String,
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Apply the database migrations (and move logs still kept in Postgres to the log store).
    Migrate,
    /// Serve the API and dashboards (migrates first).
    Serve(ServeArgs),
    /// Manage bearer tokens.
    Token {
        #[command(subcommand)]
        cmd: TokenCmd,
    },
    /// Owners (the people behind volunteers): list, invite, ban.
    Owner {
        #[command(subcommand)]
        cmd: OwnerCmd,
    },
    /// Volunteers: list, revoke, quarantine.
    Worker {
        #[command(subcommand)]
        cmd: WorkerCmd,
    },
    /// Recompute every cell's totals from its stored batch results and report differences.
    Recompute {
        /// Only this experiment.
        #[arg(long)]
        experiment: Option<uuid::Uuid>,
    },
    /// Write an experiment's counted games to a file: the bytes of
    /// `GET /api/v1/experiments/{id}/games.gcg.gz` (GCG, gzip), for `worker cnn assemble`.
    Export {
        /// The experiment.
        #[arg(long)]
        experiment: uuid::Uuid,
        /// Where to write (a temporary file beside it is renamed into place at the end).
        #[arg(long)]
        out: PathBuf,
    },
    /// The log store: remove logs no result names.
    Logs {
        #[command(subcommand)]
        cmd: LogsCmd,
    },
    /// Register a data file (lexicon graph, leave table, ...) that experiments can pin by sha256.
    Artifact {
        /// `lexicon`, `leaves`, `distribution`, `layout`, `winpct`, or `model` (a CNN bot's
        /// value net, `.onnx`: experiments name it by the sha256 this prints).
        #[arg(long)]
        role: String,
        /// Make it the default for its role (not for models: bots name theirs).
        #[arg(long)]
        default: bool,
        /// The tile distribution a lexicon's letters are read with (default: the shipped
        /// English one).
        #[arg(long)]
        distribution: Option<PathBuf>,
        file: PathBuf,
    },
}

#[derive(Subcommand)]
enum TokenCmd {
    /// Create a token and print it (last line of stdout).
    Create {
        /// researcher (submit and manage their own experiments) or admin (manage any).
        #[arg(long, value_parser = ["researcher", "admin"])]
        role: String,
    },
}

#[derive(Subcommand)]
enum LogsCmd {
    /// Delete stored logs that no result names (refused uploads, deleted experiments) and that
    /// are older than the grace period.
    Gc {
        /// Hours an unnamed log is kept (an upload stores its logs before recording its result).
        #[arg(long, default_value_t = 24)]
        older_than_hours: u32,
    },
}

#[derive(Subcommand)]
enum OwnerCmd {
    /// Every owner with its workers' standing (validated batches, mismatches, refused uploads).
    List,
    /// Create an invitation code for `--registration invite` (last line of stdout).
    Invite,
    /// Ban an owner: revoke its and its workers' tokens, quarantine its workers and withdraw
    /// everything they contributed (their batches are redone by others).
    Ban {
        /// The owner's name.
        name: String,
        /// Why, kept with the owner and shown with its workers.
        #[arg(long)]
        reason: String,
    },
}

#[derive(Subcommand)]
enum WorkerCmd {
    /// Every worker with its owner and standing.
    List,
    /// Revoke a worker's token.
    Revoke { id: uuid::Uuid },
    /// Quarantine a worker: no more work, and everything it contributed withdrawn and redone.
    Quarantine {
        id: uuid::Uuid,
        /// Why, shown on the workers page and to the worker.
        #[arg(long)]
        reason: String,
    },
}

#[derive(clap::Args, Clone, Debug)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, env = "LEXHIVE_BIND", default_value = "127.0.0.1:8080")]
    bind: SocketAddr,
    /// Seconds a lease lasts without a heartbeat.
    #[arg(long, env = "LEXHIVE_LEASE_SECS", default_value_t = 120)]
    lease_secs: u64,
    /// Seconds of work a batch aims at, from the worker's measured speed.
    #[arg(long, env = "LEXHIVE_BATCH_SECS", default_value_t = 120)]
    batch_secs: u64,
    /// Failures (error reports or expired leases) after which a batch is parked.
    #[arg(long, env = "LEXHIVE_MAX_FAILURES", default_value_t = 3)]
    max_failures: u32,
    /// Largest request body accepted for a result upload, in bytes.
    #[arg(long, env = "LEXHIVE_MAX_UPLOAD_BYTES", default_value_t = 64 << 20)]
    max_upload_bytes: usize,
    /// How often this coordinator looks for expired leases, in seconds.
    #[arg(long, env = "LEXHIVE_REAP_SECS", default_value_t = 5)]
    reap_secs: u64,
    /// Share of each match batch's games re-played on their deals before the batch counts
    /// (every game's totals are always checked against the tally). 0 checks no logs at all:
    /// only for load tests of the queue with made-up uploads.
    #[arg(long, env = "LEXHIVE_VERIFY_FRACTION", default_value_t = 1.0, value_parser = fraction)]
    verify_fraction: f64,
    /// Who may register owners and workers: anyone, or owners with an invitation code
    /// (`coordinator owner invite`) and their workers.
    #[arg(long, env = "LEXHIVE_REGISTRATION", value_enum, default_value_t = owners::Registration::Open)]
    registration: owners::Registration,
    /// Owners and workers one address may register per hour (0: no limit, for load tests).
    #[arg(long, env = "LEXHIVE_REGISTRATIONS_PER_HOUR", default_value_t = 30)]
    registrations_per_hour: u32,
    /// Most batches one worker holds at once. A volunteer plays one batch at a time on all its
    /// threads (batches are sized to its measured speed), so 2 leaves room for one whose upload
    /// is still on its way; a token that claims and only heartbeats holds no more.
    #[arg(long, env = "LEXHIVE_MAX_LEASES", default_value_t = 2)]
    max_leases: u32,
    /// Seconds after a claim when a lease ends whatever its heartbeats say (the batch goes to
    /// another owner and the holder's owner is charged a failure).
    #[arg(long, env = "LEXHIVE_DEADLINE_SECS", default_value_t = 1800)]
    deadline_secs: u64,
    /// Batches of a worker replicated by another owner before its results are taken alone:
    /// every batch of a new worker is validated by a replica until this many matched. 0
    /// trusts every worker from the start: only for a coordinator of your own machines.
    #[arg(long, env = "LEXHIVE_REPLICATE_UNTIL", default_value_t = 10)]
    replicate_until: u64,
    /// Share of a trusted worker's batches replicated anyway, at random.
    #[arg(long, env = "LEXHIVE_SPOT_CHECK", default_value_t = 0.05, value_parser = fraction)]
    spot_check: f64,
    /// Largest database connection pool.
    #[arg(long, env = "LEXHIVE_DB_POOL", default_value_t = 16)]
    db_pool: u32,
    /// API requests served at once past which claims, heartbeats and registrations are refused
    /// with 503 and `Retry-After` (uploads and researchers' requests are never refused).
    /// 0: four per pooled database connection.
    #[arg(long, env = "LEXHIVE_MAX_IN_FLIGHT", default_value_t = 0)]
    max_in_flight: u32,
    /// Folder with the shipped data (enable.txt, enable.klv2, english.dist, standard15.layout).
    #[arg(long, env = "LEXHIVE_LEXICA")]
    lexica: Option<PathBuf>,
}

#[derive(Clone)]
pub struct AppState {
    pub db: sqlx::PgPool,
    pub cfg: Arc<ServeArgs>,
    pub rules: verify::RulesCache,
    pub admission: Arc<shed::Admission>,
    pub logs: logstore::LogStore,
}

fn fraction(s: &str) -> std::result::Result<f64, String> {
    match s.parse::<f64>() {
        Ok(x) if (0.0..=1.0).contains(&x) => Ok(x),
        _ => Err(format!("`{s}` is not a fraction from 0 to 1")),
    }
}

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("../migrations");

async fn connect(url: Option<&str>, pool: u32) -> Result<sqlx::PgPool> {
    let url = url.context(
        "no database: set DATABASE_URL or pass --database-url (e.g. postgres://postgres@127.0.0.1:5432/lexhive)",
    )?;
    sqlx::postgres::PgPoolOptions::new()
        .max_connections(pool)
        .acquire_timeout(Duration::from_secs(10))
        .connect(url)
        .await
        .with_context(|| format!("cannot connect to the database at {}", redact(url)))
}

/// A small pool on a database with every migration applied, for the admin commands.
async fn migrated(url: Option<&str>) -> Result<sqlx::PgPool> {
    let db = connect(url, 2).await?;
    MIGRATOR.run(&db).await.context("applying migrations")?;
    Ok(db)
}

/// A connection string without its password, for messages.
fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(s), Some(at)) if at > s => match url[s + 3..at].split_once(':') {
            Some((user, _)) => format!("{}{user}:***{}", &url[..s + 3], &url[at..]),
            None => url.to_string(),
        },
        _ => url.to_string(),
    }
}

fn lexica_dir(arg: Option<PathBuf>) -> PathBuf {
    arg.unwrap_or_else(|| {
        let here = PathBuf::from("lexica");
        if here.join("enable.txt").exists() {
            here
        } else {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../lexica")
        }
    })
}

pub fn router(state: AppState) -> Router {
    let upload_cap = state.cfg.max_upload_bytes;
    let admission = state.admission.clone();
    // What a volunteer simply repeats later: refused first when the database is saturated.
    let repeatable = Router::new()
        .route("/workers/register", post(queue::register))
        .route("/owners", post(owners::register))
        .route("/claim", post(queue::claim))
        .route("/batches/{id}/heartbeat", post(queue::heartbeat))
        .route_layer(axum::middleware::from_fn_with_state(admission.clone(), shed::shed));
    let api = Router::new()
        .route("/experiments", get(experiments::api_list).post(experiments::submit))
        .route("/experiments/{id}", get(experiments::api_detail).delete(experiments::delete))
        .route("/experiments/{id}/priority", post(experiments::reprioritise))
        .route("/experiments/{id}/stop", post(experiments::stop))
        .route("/experiments/{id}/batches", get(results::list))
        .route("/experiments/{id}/history", get(experiments::api_history))
        .route("/experiments/{id}/cells.csv", get(export::cells))
        .route("/experiments/{id}/batches.csv", get(export::batches))
        .route("/experiments/{id}/contributors.csv", get(export::contributors))
        .route("/experiments/{id}/endgames.csv", get(export::endgames))
        .route("/experiments/{id}/games.gcg.gz", get(export::games))
        .route("/experiments/{id}/endgames", get(endgames::api_solves))
        .route("/workers", get(workers::api_list))
        .route("/openapi.json", get(openapi))
        .route("/version", get(version))
        .route("/batches/{id}/release", post(queue::release))
        .route("/batches/{id}/fail", post(queue::fail))
        .route("/batches/{id}/result", post(results::upload).layer(DefaultBodyLimit::max(upload_cap)))
        .route("/batches/{id}/logs/{which}", get(results::logs))
        .route("/artifacts/{sha256}", get(artifacts::get))
        .merge(repeatable)
        .route_layer(axum::middleware::from_fn_with_state(admission, shed::count));
    Router::new()
        .nest("/api/v1", api)
        .route("/", get(dashboard::experiments))
        .route("/experiments/{id}", get(dashboard::experiment))
        .route("/workers", get(dashboard::workers))
        .route("/healthz", get(healthz))
        .layer(DefaultBodyLimit::max(1 << 20))
        .layer(tower_http::timeout::TimeoutLayer::with_status_code(
            axum::http::StatusCode::REQUEST_TIMEOUT,
            Duration::from_secs(60),
        ))
        .layer(tower_http::trace::TraceLayer::new_for_http())
        .with_state(state)
}

/// `GET /api/v1/openapi.json`: the API described (OpenAPI 3.1); the end-to-end tests check
/// real responses against it.
async fn openapi() -> impl axum::response::IntoResponse {
    ([(axum::http::header::CONTENT_TYPE, "application/json")], include_str!("../openapi.json"))
}

/// `GET /api/v1/version`: the service, its protocol and build, for volunteers to check first.
async fn version() -> axum::Json<shared::protocol::Version> {
    axum::Json(shared::protocol::Version {
        service: shared::protocol::SERVICE.into(),
        protocol: shared::PROTOCOL_VERSION,
        version: env!("CARGO_PKG_VERSION").into(),
    })
}

async fn healthz(axum::extract::State(st): axum::extract::State<AppState>) -> Result<&'static str, error::Error> {
    sqlx::query("SELECT 1").execute(&st.db).await?;
    Ok("ok\n")
}

/// Apply the migrations, and move any logs still in Postgres to the store.
async fn migrate(db: &sqlx::PgPool, logs: &logstore::LogStore) -> Result<()> {
    MIGRATOR.run(db).await.context("applying migrations")?;
    let moved = logstore::migrate(db, logs).await.context("moving logs to the log store")?;
    if moved > 0 {
        tracing::info!(results = moved, "moved logs from Postgres to the log store");
    }
    Ok(())
}

async fn serve(url: Option<&str>, logs: logstore::LogStore, args: ServeArgs) -> Result<()> {
    let db = connect(url, args.db_pool).await?;
    migrate(&db, &logs).await?;
    if let Some(dir) = args.lexica.as_ref().filter(|d| !d.is_dir()) {
        anyhow::bail!(
            "--lexica {}: no such folder (it should hold enable.txt, enable.klv2, english.dist, standard15.layout \
             and enable.wpt)",
            dir.display()
        );
    }
    let read = artifacts::ensure_defaults(&db, &lexica_dir(args.lexica.clone())).await?;
    if !read && let Some(dir) = &args.lexica {
        // Info, not a warning: every restart of a coordinator started with --lexica says it.
        tracing::info!(
            lexica = %dir.display(),
            "the database already has default artifacts: --lexica was not read (`coordinator artifact` adds and sets defaults)"
        );
    }
    let listener =
        tokio::net::TcpListener::bind(args.bind).await.with_context(|| format!("cannot listen on {}", args.bind))?;
    let limit = match args.max_in_flight {
        0 => 4 * args.db_pool as usize,
        n => n as usize,
    };
    let admission = shed::Admission::new(limit);
    let state = AppState {
        db: db.clone(),
        cfg: Arc::new(args.clone()),
        rules: verify::RulesCache::default(),
        admission: admission.clone(),
        logs,
    };
    let reaper = tokio::spawn(reaper(db, args, admission));
    tracing::info!(bind = %listener.local_addr()?, "serving");
    // Stdout line for scripts and tests that wait for the port.
    println!("listening on http://{}", listener.local_addr()?);
    axum::serve(listener, router(state).into_make_service_with_connect_info::<SocketAddr>())
        .with_graceful_shutdown(shutdown())
        .await?;
    reaper.abort();
    Ok(())
}

/// Return expired leases to the queue, but never while Postgres may have kept workers from
/// heartbeating: only once it has answered this process continuously for a lease period (after
/// the process starts, and after any failed query). An outage of the coordinator's own database
/// is not the workers' failure, and work finished during it is accepted when it returns.
async fn reaper(db: sqlx::PgPool, args: ServeArgs, admission: Arc<shed::Admission>) {
    let grace = Duration::from_secs(args.lease_secs);
    let mut healthy_since = std::time::Instant::now();
    let mut shed_reported = 0;
    let mut tick = tokio::time::interval(Duration::from_secs(args.reap_secs.max(1)));
    loop {
        tick.tick().await;
        let shed = admission.shed_total();
        if shed > shed_reported {
            tracing::warn!(
                refused = shed - shed_reported,
                since_start = shed,
                "overloaded: refused claims, heartbeats or registrations with 503 Retry-After"
            );
            shed_reported = shed;
        }
        let done = if healthy_since.elapsed() < grace {
            sqlx::query("SELECT 1").execute(&db).await.map(drop).map_err(error::Error::from)
        } else {
            queue::reap(&db, args.max_failures, args.deadline_secs.max(args.lease_secs)).await.map(drop)
        };
        if let Err(e) = done {
            tracing::warn!(error = %e.message, "reaper: the database is not answering; no lease expires until it has answered for a lease period");
            healthy_since = std::time::Instant::now();
        }
    }
}

async fn shutdown() {
    let ctrl_c = tokio::signal::ctrl_c();
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).expect("SIGTERM handler");
    tokio::select! {
        _ = ctrl_c => {},
        _ = term.recv() => {},
    }
    tracing::info!("shutting down");
}

async fn run(cli: Cli) -> Result<()> {
    let url = cli.database_url.as_deref();
    let logs = || logstore::LogStore::open(&cli.log_store);
    match cli.cmd {
        Cmd::Migrate => {
            let db = connect(url, 2).await?;
            migrate(&db, &logs()?).await?;
            println!("migrations applied");
        }
        Cmd::Serve(args) => serve(url, logs()?, args).await?,
        Cmd::Logs { cmd: LogsCmd::Gc { older_than_hours } } => {
            let (db, logs) = (migrated(url).await?, logs()?);
            let grace = chrono::Duration::hours(older_than_hours.into());
            let (kept, removed) = logstore::gc(&db, &logs, grace).await?;
            println!("{} logs kept, {removed} removed", kept);
        }
        Cmd::Token { cmd: TokenCmd::Create { role } } => {
            let db = migrated(url).await?;
            let role = auth::Role::parse(&role).context("role")?;
            println!("{}", auth::create(&db, role, None).await?);
        }
        Cmd::Owner { cmd } => {
            let db = migrated(url).await?;
            match cmd {
                OwnerCmd::List => {
                    println!(
                        "{:<36}  {:<24} {:>7} {:>9} {:>10} {:>8} {:>11}  banned",
                        "id", "name", "workers", "validated", "mismatches", "refused", "quarantined"
                    );
                    for o in owners::list(&db).await? {
                        println!(
                            "{:<36}  {:<24} {:>7} {:>9} {:>10} {:>8} {:>11}  {}",
                            o.id,
                            o.name,
                            o.workers,
                            o.validated,
                            o.mismatches,
                            o.rejected,
                            o.quarantined,
                            if o.banned { "yes" } else { "" }
                        );
                    }
                }
                OwnerCmd::Invite => println!("{}", owners::invite(&db).await?),
                OwnerCmd::Ban { name, reason } => {
                    let n = owners::ban(&db, &name, &reason).await.map_err(|e| anyhow::anyhow!(e.message))?;
                    println!("owner `{name}` banned; {n} workers quarantined and their results withdrawn");
                }
            }
        }
        Cmd::Worker { cmd } => {
            let db = migrated(url).await?;
            match cmd {
                WorkerCmd::List => {
                    println!(
                        "{:<36}  {:<24} {:<24} {:>9} {:>10} {:>8}  quarantined",
                        "id", "name", "owner", "validated", "mismatches", "refused"
                    );
                    for w in workers::list(&db).await.map_err(|e| anyhow::anyhow!(e.message))? {
                        println!(
                            "{:<36}  {:<24} {:<24} {:>9} {:>10} {:>8}  {}",
                            w.id,
                            w.name,
                            w.owner,
                            w.validated,
                            w.mismatches,
                            w.rejected,
                            w.quarantine_reason.as_deref().unwrap_or("")
                        );
                    }
                }
                WorkerCmd::Revoke { id } => {
                    match owners::revoke_worker(&db, id).await.map_err(|e| anyhow::anyhow!(e.message))? {
                        0 => anyhow::bail!("worker {id} has no token (unknown, or already revoked)"),
                        _ => println!("worker {id}: token revoked"),
                    }
                }
                WorkerCmd::Quarantine { id, reason } => {
                    owners::quarantine_worker(&db, id, &reason).await.map_err(|e| anyhow::anyhow!(e.message))?;
                    println!("worker {id} quarantined; its results were withdrawn and their batches queued again");
                }
            }
        }
        Cmd::Recompute { experiment } => {
            let db = connect(url, 2).await?;
            let (cells, fixed) = results::recompute(&db, experiment).await?;
            for c in &fixed {
                println!("cell {c}: stored totals differed from its batch results; fixed");
            }
            println!("{cells} cells recomputed, {} differed", fixed.len());
        }
        Cmd::Export { experiment, out } => {
            let (db, logs) = (connect(url, 2).await?, logs()?);
            let batches = export::logged_batches(&db, experiment)
                .await
                .map_err(|e| anyhow::anyhow!(e.message))?
                .with_context(|| format!("--experiment: no experiment {experiment}"))?;
            let tmp = out.with_extension("partial");
            let mut f = std::io::BufWriter::new(
                std::fs::File::create(&tmp).with_context(|| format!("{}: cannot create", tmp.display()))?,
            );
            let mut bytes = 0;
            for key in &batches {
                let member = export::batch_log(&db, &logs, *key).await.map_err(|e| anyhow::anyhow!(e.message))?;
                bytes += member.len();
                std::io::Write::write_all(&mut f, &member)
                    .with_context(|| format!("{}: cannot write", tmp.display()))?;
            }
            f.into_inner()?.sync_all()?;
            std::fs::rename(&tmp, &out).with_context(|| format!("{}: cannot write", out.display()))?;
            println!("{}: {} batches, {bytes} bytes (GCG, gzip)", out.display(), batches.len());
        }
        Cmd::Artifact { role, default, distribution, file } => {
            if !artifacts::ROLES.contains(&role.as_str()) && role != artifacts::MODEL {
                anyhow::bail!("--role: must be one of {}, {}", artifacts::ROLES.join(", "), artifacts::MODEL);
            }
            if role == artifacts::MODEL && default {
                anyhow::bail!("--default: there is no default model; CNN bots name theirs (cnn:model=SHA256)");
            }
            let bytes = std::fs::read(&file).with_context(|| format!("{}: cannot read", file.display()))?;
            let dist = match &distribution {
                Some(path) => engine::tiles::Distribution::load(path)?,
                None => engine::tiles::Distribution::english(),
            };
            check_artifact(&role, &file, &bytes, &dist)?;
            let db = migrated(url).await?;
            let name = file.file_name().map_or("artifact".into(), |n| n.to_string_lossy().into_owned());
            println!("{}", artifacts::add(&db, &role, &name, &bytes, default).await?);
        }
    }
    Ok(())
}

/// Refuse files a worker could not load.
fn check_artifact(role: &str, file: &std::path::Path, bytes: &[u8], dist: &engine::tiles::Distribution) -> Result<()> {
    let ok = match role {
        "lexicon" => engine::lexicon::load_lexicon(file, dist).map(drop),
        "leaves" => engine::leaves::Klv::from_bytes(bytes, &file.display().to_string()).map(drop),
        "distribution" => engine::tiles::Distribution::load(file).map(drop),
        "winpct" => engine::winpct::WinTable::load(file).map(drop),
        artifacts::MODEL => return check_model(file, bytes),
        _ => engine::board::Layout::load(file).map(drop),
    };
    ok.map_err(Into::into)
}

/// What the coordinator can check of a value net without ONNX Runtime (volunteers load it and
/// check its shapes): an ONNX file (a protobuf `ModelProto`, whose first field is its IR
/// version) that names the inputs and output of the model contract (docs/CNN.md).
fn check_model(file: &std::path::Path, bytes: &[u8]) -> Result<()> {
    let bad = |why: &str| anyhow::anyhow!("{}: {why}", file.display());
    if file.extension().and_then(|e| e.to_str()) != Some("onnx") {
        return Err(bad("a model is an ONNX file named *.onnx"));
    }
    if bytes.first() != Some(&0x08) {
        return Err(bad("not an ONNX model (it does not start with an IR version)"));
    }
    for name in ["planes", "scalars", "value"] {
        if !bytes.windows(name.len()).any(|w| w == name.as_bytes()) {
            return Err(bad(&format!("not a lexhive value net: it names no `{name}` (docs/CNN.md)")));
        }
    }
    Ok(())
}

fn main() {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info,sqlx=warn".into()),
        )
        .with_writer(std::io::stderr)
        // Colour only for a person at a terminal: log files get plain text.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let cli = Cli::parse();
    let rt = tokio::runtime::Runtime::new().expect("tokio runtime");
    if let Err(e) = rt.block_on(run(cli)) {
        eprintln!("error: {e:#}");
        std::process::exit(2);
    }
}
