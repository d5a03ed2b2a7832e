//! The `coordinator` command line: `serve`, and the operators' commands (migrations, tokens,
//! owners, workers, artifacts, exports, the log store, recomputing totals).

use crate::config::Config;
use crate::{artifacts, auth, db, export, logstore, owners, results, server, trust, workers};
use anyhow::{Context, Result};
use clap::{CommandFactory, Parser, Subcommand};
use std::net::SocketAddr;
use std::path::PathBuf;

#[derive(Parser)]
#[command(name = "coordinator", version, about = "lexhive coordinator: experiments, job queue, results, dashboards")]
pub struct Cli {
    /// Postgres connection string.
    #[arg(long, env = "DATABASE_URL", global = true, hide_env_values = true)]
    database_url: Option<String>,
    #[command(subcommand)]
    cmd: Cmd,
}

/// The log store, for the commands that read or write games' logs.
#[derive(clap::Args)]
struct LogStoreArg {
    /// Where games' logs are kept: a folder (created if missing), or `s3://BUCKET/PREFIX` for
    /// an S3-compatible store configured by the `AWS_*` variables (`AWS_ENDPOINT`,
    /// `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_REGION`, `AWS_ALLOW_HTTP`). Every
    /// coordinator of one database must name the same store.
    #[arg(long, env = "LEXHIVE_LOG_STORE", default_value = "lexhive-logs")]
    log_store: String,
}

impl LogStoreArg {
    fn open(&self) -> Result<logstore::LogStore> {
        Ok(logstore::LogStore::open(&self.log_store)?)
    }
}

#[derive(Subcommand)]
enum Cmd {
    /// Apply the database migrations (and move logs still kept in Postgres to the log store).
    Migrate(LogStoreArg),
    /// Serve the API and dashboards (migrates first).
    Serve {
        #[command(flatten)]
        store: LogStoreArg,
        #[command(flatten)]
        args: ServeArgs,
    },
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
        #[command(flatten)]
        store: LogStoreArg,
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
        #[command(flatten)]
        store: LogStoreArg,
    },
}

#[derive(Subcommand)]
enum OwnerCmd {
    /// Every owner with its workers' standing (validated batches, mismatches, refused uploads).
    List,
    /// Create an invitation code for `--registration invite` (last line of stdout).
    Invite,
    /// Trust an owner: its workers' results count without a replica, and they replicate and
    /// settle other owners' results (your own machines, or a person you know).
    Trust {
        /// The owner's name.
        name: String,
    },
    /// Take an owner's trust away (earned or given); its results need trusted replicas again.
    Untrust {
        /// The owner's name.
        name: String,
    },
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
    pub bind: SocketAddr,
    /// Seconds a lease lasts without a heartbeat.
    #[arg(long, env = "LEXHIVE_LEASE_SECS", default_value_t = 120)]
    pub lease_secs: u64,
    /// Seconds of work a batch aims at, from the worker's measured speed.
    #[arg(long, env = "LEXHIVE_BATCH_SECS", default_value_t = 120)]
    pub batch_secs: u64,
    /// Failures (error reports or expired leases) from this many different groups of trusted
    /// owners park a batch; untrusted owners' failures only release it.
    #[arg(long, env = "LEXHIVE_MAX_FAILURES", default_value_t = 3)]
    pub max_failures: u32,
    /// Largest request body accepted for a result upload, in bytes.
    #[arg(long, env = "LEXHIVE_MAX_UPLOAD_BYTES", default_value_t = 64 << 20)]
    pub max_upload_bytes: usize,
    /// How often this coordinator looks for expired leases, in seconds.
    #[arg(long, env = "LEXHIVE_REAP_SECS", default_value_t = 5)]
    pub reap_secs: u64,
    /// Share of each match batch's games re-played on their deals before the batch counts
    /// (every game's totals are always checked against the tally). 0 checks no logs at all:
    /// only for load tests of the queue with made-up uploads.
    #[arg(long, env = "LEXHIVE_VERIFY_FRACTION", default_value_t = 1.0, value_parser = fraction)]
    pub verify_fraction: f64,
    /// Who may register owners and workers: anyone, or owners with an invitation code
    /// (`coordinator owner invite`) and their workers.
    #[arg(long, env = "LEXHIVE_REGISTRATION", value_enum, default_value_t = owners::Registration::Open)]
    pub registration: owners::Registration,
    /// Owners and workers one network (a /24 for IPv4, a /64 for IPv6) may register per hour
    /// (0: no limit, for load tests).
    #[arg(long, env = "LEXHIVE_REGISTRATIONS_PER_HOUR", default_value_t = 30)]
    pub registrations_per_hour: u32,
    /// Leading zero bits of proof of work (sha256) an owner registration needs, and a worker's
    /// that registers without an owner token: 24 costs about a second of one core (16.8 M
    /// hashes on average; 20 bits took 70 ms here). 0: none.
    #[arg(long, env = "LEXHIVE_REGISTRATION_WORK", default_value_t = 24, value_parser = clap::value_parser!(u32).range(0..=32))]
    pub registration_work: u32,
    /// Most batches one worker holds at once. A volunteer plays one batch at a time on all its
    /// threads (batches are sized to its measured speed), so 2 leaves room for one whose upload
    /// is still on its way; a token that claims and only heartbeats holds no more.
    #[arg(long, env = "LEXHIVE_MAX_LEASES", default_value_t = 2)]
    pub max_leases: u32,
    /// Seconds after a claim when a lease ends whatever its heartbeats say (the batch goes to
    /// another owner and the holder's owner is charged a failure).
    #[arg(long, env = "LEXHIVE_DEADLINE_SECS", default_value_t = 1800)]
    pub deadline_secs: u64,
    /// Trust every owner from the start: only for a coordinator of your own machines (results
    /// then stand alone, and disagreements go to a third owner). Without it, only owners the
    /// operator names (`coordinator owner trust NAME`) and owners that earned it are trusted.
    #[arg(long, env = "LEXHIVE_TRUST_EVERY_OWNER")]
    pub trust_every_owner: bool,
    /// Batches an owner's workers must upload that trusted workers' replicas matched before
    /// the owner is trusted ...
    #[arg(long, env = "LEXHIVE_EARN_TRUST_BATCHES", default_value_t = 30)]
    pub earn_trust_batches: u64,
    /// ... in at least this many experiments ...
    #[arg(long, env = "LEXHIVE_EARN_TRUST_EXPERIMENTS", default_value_t = 3)]
    pub earn_trust_experiments: u64,
    /// ... the first and the last at least this many hours apart.
    #[arg(long, env = "LEXHIVE_EARN_TRUST_HOURS", default_value_t = 24.0)]
    pub earn_trust_hours: f64,
    /// Leases an untrusted owner holds at once, across all its workers.
    #[arg(long, env = "LEXHIVE_UNTRUSTED_LEASES", default_value_t = 1)]
    pub untrusted_leases: u32,
    /// Seconds after an untrusted group's first registration during which every new owner
    /// joins it, whatever its network: a burst of registrations is one person to the "different
    /// owner" rules.
    #[arg(long, env = "LEXHIVE_REGISTRATION_BURST_SECS", default_value_t = 10.0)]
    pub registration_burst_secs: f64,
    /// Share of a trusted worker's batches replicated anyway, at random.
    #[arg(long, env = "LEXHIVE_SPOT_CHECK", default_value_t = 0.05, value_parser = fraction)]
    pub spot_check: f64,
    /// Largest database connection pool.
    #[arg(long, env = "LEXHIVE_DB_POOL", default_value_t = 16)]
    pub db_pool: u32,
    /// API requests served at once past which claims, heartbeats and uploads are refused with
    /// 503 and `Retry-After` (researchers' requests are never refused). 0: four per pooled
    /// database connection.
    #[arg(long, env = "LEXHIVE_MAX_IN_FLIGHT", default_value_t = 0)]
    pub max_in_flight: u32,
    /// Registrations (the requests anyone may make without a token) in service at once, apart
    /// from the workers' budget; more are refused with 503 and `Retry-After`.
    #[arg(long, env = "LEXHIVE_MAX_REGISTRATIONS_IN_FLIGHT", default_value_t = 8)]
    pub max_registrations_in_flight: u32,
    /// Folder with the shipped data (enable.txt, enable.klv2, english.dist, standard15.layout).
    #[arg(long, env = "LEXHIVE_LEXICA")]
    pub lexica: Option<PathBuf>,
}

/// The command line's definition: every command and flag (what `--help` prints).
pub fn command() -> clap::Command {
    Cli::command()
}

impl ServeArgs {
    /// The configuration the handlers read.
    pub fn config(&self) -> Config {
        Config {
            lease_secs: self.lease_secs,
            batch_secs: self.batch_secs,
            max_failures: self.max_failures,
            max_upload_bytes: self.max_upload_bytes,
            verify_fraction: self.verify_fraction,
            registration: self.registration,
            registrations_per_hour: self.registrations_per_hour,
            registration_work: self.registration_work,
            max_registrations_in_flight: self.max_registrations_in_flight,
            max_leases: self.max_leases,
            deadline_secs: self.deadline_secs,
            trust: crate::trust::Policy {
                every_owner: self.trust_every_owner,
                earn_batches: self.earn_trust_batches,
                earn_experiments: self.earn_trust_experiments,
                earn_hours: self.earn_trust_hours,
                untrusted_leases: self.untrusted_leases,
                burst_secs: self.registration_burst_secs,
            },
            spot_check: self.spot_check,
        }
    }
}

fn fraction(s: &str) -> std::result::Result<f64, String> {
    match s.parse::<f64>() {
        Ok(x) if (0.0..=1.0).contains(&x) => Ok(x),
        _ => Err(format!("`{s}` is not a fraction from 0 to 1")),
    }
}

pub async fn run(cli: Cli) -> Result<()> {
    let url = cli.database_url.as_deref();
    match cli.cmd {
        Cmd::Migrate(store) => {
            let db = db::connect(url, 2).await?;
            db::migrate(&db, &store.open()?).await?;
            println!("migrations applied");
        }
        Cmd::Serve { store, args } => server::serve(url, store.open()?, args).await?,
        Cmd::Logs { cmd: LogsCmd::Gc { older_than_hours, store } } => {
            let (db, logs) = (db::migrated(url).await?, store.open()?);
            let grace = chrono::Duration::hours(older_than_hours.into());
            let (kept, removed) = logstore::gc(&db, &logs, grace).await?;
            println!("{} logs kept, {removed} removed", kept);
        }
        Cmd::Token { cmd: TokenCmd::Create { role } } => {
            let db = db::migrated(url).await?;
            let role = auth::Role::parse(&role).context("role")?;
            println!("{}", auth::create(&db, role, None).await?);
        }
        Cmd::Owner { cmd } => {
            let db = db::migrated(url).await?;
            match cmd {
                OwnerCmd::List => {
                    println!(
                        "{:<36}  {:<24} {:<8} {:>7} {:>9} {:>10} {:>8} {:>11}  banned",
                        "id", "name", "trusted", "workers", "validated", "mismatches", "refused", "quarantined"
                    );
                    for o in owners::list(&db).await? {
                        println!(
                            "{:<36}  {:<24} {:<8} {:>7} {:>9} {:>10} {:>8} {:>11}  {}",
                            o.id,
                            o.name,
                            o.trusted.as_deref().unwrap_or("no"),
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
                OwnerCmd::Trust { name } => {
                    trust::set_by_operator(&db, &name, true).await.map_err(|e| anyhow::anyhow!(e.message))?;
                    println!("owner `{name}` is trusted: its workers' results count alone, and they replicate others'");
                }
                OwnerCmd::Untrust { name } => {
                    trust::set_by_operator(&db, &name, false).await.map_err(|e| anyhow::anyhow!(e.message))?;
                    println!("owner `{name}` is no longer trusted: its results need trusted replicas");
                }
                OwnerCmd::Ban { name, reason } => {
                    let n = owners::ban(&db, &name, &reason).await.map_err(|e| anyhow::anyhow!(e.message))?;
                    println!("owner `{name}` banned; {n} workers quarantined and their results withdrawn");
                }
            }
        }
        Cmd::Worker { cmd } => {
            let db = db::migrated(url).await?;
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
            let db = db::connect(url, 2).await?;
            let (cells, fixed) = results::recompute(&db, experiment).await?;
            for c in &fixed {
                println!("cell {c}: stored totals differed from its batch results; fixed");
            }
            println!("{cells} cells recomputed, {} differed", fixed.len());
        }
        Cmd::Export { experiment, out, store } => {
            let (db, logs) = (db::connect(url, 2).await?, store.open()?);
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
            let db = db::migrated(url).await?;
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
