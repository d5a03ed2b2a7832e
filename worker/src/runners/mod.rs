//! What a volunteer runs for each job kind: one module per kind behind [`Runner`]. The kinds
//! are listed once, in the `runners!` call below, which derives [`run`]; a kind of
//! `shared::kinds` missing there is a compile error in it.

mod endgame;
mod leaves;
mod matches;
mod selfplay;
#[cfg(feature = "toy-kind")]
mod toy;
mod tune;
mod wintable;

pub use endgame::line_notation;

use crate::data::Data;
use anyhow::Result;
use base64::Engine as _;
use engine::gcg::CSV_HEADER;
use engine::leaves::Klv;
use sha2::{Digest, Sha256};
use shared::kinds::{Job, JobResult, Kind};
use shared::protocol::{GAME_MARKER, Logs};
use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

/// What a batch plays with: its artifacts, loaded.
pub struct Loaded {
    pub data: Data,
    pub leaves: Option<Arc<Klv>>,
    pub table: Option<Arc<engine::winpct::WinTable>>,
    /// CNN bots' value nets, by sha256.
    pub models: crate::nets::Models,
    /// Leave tables bots name for themselves, by sha256.
    pub tables: crate::play::Tables,
}

/// What the engine runs batches with.
#[derive(Clone, Copy)]
pub struct Kit<'a> {
    pub loaded: &'a Loaded,
    pub pool: &'a rayon::ThreadPool,
    pub endgame: &'a EndgameSolver,
    /// ONNX Runtime's settings, while this worker runs CNN bots.
    pub net: Option<&'a crate::nets::NetArgs>,
}

/// The endgame solver, made at the first endgame batch and kept: its table's entries are keyed
/// by whole positions, so they stay true from one batch to the next.
pub struct EndgameSolver {
    solver: std::sync::OnceLock<engine::endgame::Solver>,
    bytes: usize,
}

impl EndgameSolver {
    /// A solver whose table will take `bytes`.
    pub fn new(bytes: usize) -> Self {
        EndgameSolver { solver: std::sync::OnceLock::new(), bytes }
    }

    fn get(&self) -> &engine::endgame::Solver {
        self.solver.get_or_init(|| engine::endgame::Solver::new(self.bytes))
    }
}

/// How a runner's work ended.
pub enum Played<R> {
    Done(R, Logged),
    /// Stopped between units (`cancel`).
    Cancelled,
    /// This machine cannot run it (its CNN model does not load on this GPU): released, not
    /// failed, so that a machine that can gets it.
    Unrunnable(String),
}

/// What the volunteer does for one job kind.
pub trait Runner: Kind {
    /// Run a job on the engine; `cancel` stops it between units.
    fn run(job: &Self::Job, kit: Kit<'_>, cancel: &AtomicBool) -> Result<Played<Self::Result>>;

    /// The volunteer's line for a finished batch (after its id, experiment and cell).
    fn summary(job: &Self::Job, result: &Self::Result, secs: f64) -> String;
}

impl<R> Played<R> {
    /// The same ending, with the result `f` makes of a finished one's.
    pub fn map<S>(self, f: impl FnOnce(R) -> S) -> Played<S> {
        match self {
            Played::Done(r, logged) => Played::Done(f(r), logged),
            Played::Cancelled => Played::Cancelled,
            Played::Unrunnable(why) => Played::Unrunnable(why),
        }
    }
}

/// How a batch's play ended, whatever its kind.
pub enum Ran {
    Done { result: JobResult, logged: Logged, summary: String },
    Cancelled,
    Unrunnable(String),
}

/// Lists the kinds once and derives the dispatch over them.
macro_rules! runners {
    ($( $(#[cfg($cfg:meta)])? $variant:ident($kind:ty), )+) => {
        /// Run a batch's job with its kind's runner.
        pub fn run(job: &Job, kit: Kit<'_>, cancel: &AtomicBool) -> Result<Ran> {
            let start = Instant::now();
            Ok(match job {
                $( $(#[cfg($cfg)])? Job::$variant(j) => match <$kind as Runner>::run(j, kit, cancel)? {
                    Played::Done(r, logged) => {
                        let summary = <$kind as Runner>::summary(j, &r, start.elapsed().as_secs_f64().max(1e-3));
                        Ran::Done { result: JobResult::$variant(r), logged, summary }
                    }
                    Played::Cancelled => Ran::Cancelled,
                    Played::Unrunnable(why) => Ran::Unrunnable(why),
                }, )+
            })
        }
    };
}

runners! {
    Match(shared::kinds::matches::Match),
    Endgame(shared::kinds::endgame::Endgame),
    Wintable(shared::kinds::wintable::Wintable),
    Selfplay(shared::kinds::selfplay::Selfplay),
    Leaves(shared::kinds::leaves::Leaves),
    Tune(shared::kinds::tune::Tune),
    #[cfg(feature = "toy-kind")]
    Toy(shared::kinds::toy::Toy),
}

/// Stops a batch's games early (through `play::Match::play`'s error path).
#[derive(Debug, thiserror::Error)]
#[error("cancelled")]
pub struct Cancelled;

/// A game's logs before bundling: its id in the run, its GCG and its CSV rows.
pub type GameLog = (u64, String, String);

/// What a batch leaves to upload besides its result: its games' logs (bundled and compressed
/// by the upload, off the engine's threads), or none.
pub enum Logged {
    Games(Vec<GameLog>),
    None,
}

impl Logged {
    pub fn bundle(self) -> Result<Logs> {
        match self {
            Logged::Games(games) => bundle(games),
            Logged::None => empty_logs(),
        }
    }
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

fn empty_logs() -> Result<Logs> {
    let empty = hex::encode(Sha256::digest(b""));
    Ok(Logs { gcg_gz: gz64(b"")?, gcg_sha256: empty.clone(), csv_gz: gz64(b"")?, csv_sha256: empty })
}

fn gz64(bytes: &[u8]) -> Result<String> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(bytes)?;
    Ok(base64::engine::general_purpose::STANDARD.encode(e.finish()?))
}
