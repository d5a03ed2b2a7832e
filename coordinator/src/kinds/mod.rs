//! What the coordinator does differently by job kind: one module per kind behind [`Served`]
//! (the job a batch carries, how an upload is checked and settled, the experiment's page). The
//! kinds are listed once, in the `served!` call below, which derives the functions that
//! dispatch on a kind; a kind of `shared::kinds` missing there is a compile error in them.

mod endgame;
mod leaves;
mod matches;
mod selfplay;
#[cfg(feature = "toy-kind")]
mod toy;
mod tune;
mod wintable;

use crate::error::{Error, Result};
use crate::experiments::{CellView, Detail, Tuning};
use crate::results::Settled;
use crate::state::AppState;
use crate::verify::Texts;
use axum::response::Html;
use shared::experiment::ExperimentSpec;
use shared::kinds::tune::Step;
use shared::kinds::{ExperimentKind, Job, JobKind, JobResult, Kind};
use shared::protocol::ArtifactRef;
use sqlx::types::Json as Db;
use sqlx::{PgConnection, Postgres, Transaction};
use uuid::Uuid;

pub type Tx<'a> = Transaction<'a, Postgres>;

/// A batch with what its job and its uploads are judged by: its row, its cell's and its
/// experiment's.
#[derive(sqlx::FromRow)]
pub struct Batch {
    pub id: Uuid,
    pub state: String,
    pub lease_id: Option<Uuid>,
    pub lease_owner: Option<Uuid>,
    pub first_unit: i64,
    pub units: i64,
    /// An endgame batch's explicit positions (a cross-check's), else its units are its range.
    pub positions: Option<Vec<i64>>,
    /// Groups of owners that may not take it (`trust`).
    pub exclude_groups: Vec<Uuid>,
    pub priority: i32,
    pub cell_id: Uuid,
    pub cell_index: i32,
    /// The cell's two bots (cells that play bots).
    pub bots: Option<Db<[String; 2]>>,
    pub experiment_id: Uuid,
    pub experiment_name: String,
    pub spec: Db<ExperimentSpec>,
    /// What its games play with: the experiment's artifacts and its cell's own (see [`BATCH`]).
    pub artifacts: Db<Vec<ArtifactRef>>,
}

/// The query a [`Batch`] is read with; `$1` is the batch. Its artifacts are the experiment's,
/// with those of the cell's own (`cells.inputs`: a generation's table) in place of the
/// experiment's of the same role.
pub const BATCH: &str = "SELECT b.id, b.state, b.lease_id, b.lease_owner, b.first_unit, b.units, b.positions,
        b.exclude_groups, b.priority, c.id AS cell_id, c.idx AS cell_index, c.bots, e.id AS experiment_id,
        e.name AS experiment_name, e.spec,
        (SELECT coalesce(jsonb_agg(a), '[]'::jsonb) FROM
           (SELECT a FROM jsonb_array_elements(e.artifacts) a
             WHERE NOT EXISTS (SELECT 1 FROM jsonb_array_elements(c.inputs) i WHERE i->>'role' = a->>'role')
            UNION ALL SELECT i FROM jsonb_array_elements(c.inputs) i) m(a)) AS artifacts
 FROM batches b JOIN cells c ON c.id = b.cell_id JOIN experiments e ON e.id = b.experiment_id WHERE b.id = $1";

impl Batch {
    /// Units `first_unit .. first_unit + units`, or the batch's explicit list.
    pub fn unit_indices(&self) -> Vec<u64> {
        match &self.positions {
            Some(list) => list.iter().map(|&i| i as u64).collect(),
            None => (self.first_unit..self.first_unit + self.units).map(|i| i as u64).collect(),
        }
    }

    /// The cell's bots, which a cell that plays bots has.
    pub fn bots(&self) -> Result<[String; 2]> {
        self.bots
            .as_ref()
            .map(|b| b.0.clone())
            .ok_or_else(|| Error::internal(format!("cell {} has no bots", self.cell_id)))
    }
}

/// An upload being recorded: its batch (locked), who sent it, and what they are trusted with.
pub struct Upload<'a> {
    pub batch: &'a Batch,
    pub worker: Uuid,
    /// Its owner, the owner's group, and how far they are trusted.
    pub standing: crate::trust::Standing,
    pub st: &'a AppState,
}

/// What the coordinator does for one job kind.
pub trait Served: Kind {
    /// Whether a batch's result is judged whole, against other owners' byte-identical
    /// replicas (`replicas`); if not, the kind settles its units itself (an endgame's
    /// positions, each cross-checked on its own).
    const REPLICATED: bool;
    /// Whether its batches log games, which `games.gcg.gz` and `coordinator export` serve.
    const LOGS_GAMES: bool;

    /// The job a leased batch carries.
    fn job(seed: u64, spec: &Self::Spec, batch: &Batch) -> Result<Self::Job>;

    /// The checks of an upload that read its logs and may take long (re-playing games), made
    /// before any transaction. `Ok(Err(why))` refuses the upload with a 422 saying why.
    async fn verify(
        st: &AppState,
        batch: &Batch,
        spec: &Self::Spec,
        result: Self::Result,
        logs: Texts,
    ) -> Result<std::result::Result<(), String>>;

    /// The quick checks of a result against its batch (sizes, counts), made first.
    async fn check(db: &mut PgConnection, batch: &Batch, result: &Self::Result) -> Result<()>;

    /// What of a result a replica must reproduce: all but what differs from machine to
    /// machine (thinking times).
    fn replicable(result: &Self::Result) -> Self::Result;

    /// Settle a recorded result: credit its cell, or ask for what it still needs (replicas,
    /// cross-checks).
    async fn settle(tx: &mut Tx<'_>, up: &Upload<'_>, spec: &Self::Spec, result: &Self::Result) -> Result<Settled>;

    /// What a cell's finishing makes (a win table's fitted table, a generation's leave table,
    /// and the cells that waited for it started): said to the worker whose result finished it.
    async fn cell_finished(tx: &mut Tx<'_>, spec: &Self::Spec, experiment: Uuid, cell: Uuid) -> Result<Option<String>>;

    /// The experiment's page.
    async fn page(st: &AppState, d: &Detail, spec: &Self::Spec) -> Result<Html<String>>;

    /// A tuning run's parameters and steps, from the steps recorded so far.
    fn tuning(_: &Self::Spec, _: Vec<Step>) -> Option<Tuning> {
        None
    }

    /// The experiment's result in a line, from its cells, for the index and `worker
    /// experiments list` (by default the match cells' win rates: [`Headline::of_matches`]).
    fn headline(_: &Self::Spec, cells: &[CellView]) -> Headline {
        Headline::of_matches(cells)
    }
}

/// An experiment's result in a line, and its SPRT's standing where it has one.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Headline {
    /// e.g. `54.2% [52.1, 56.3]`, `best #3 t=1: 56.1% [54.0, 58.2]`.
    pub result: Option<String>,
    /// A one-cell experiment's SPRT log-likelihood ratio, and its lower and upper bounds.
    pub llr: Option<f64>,
    pub llr_bounds: Option<(f64, f64)>,
}

impl Headline {
    /// A cell's win rate with its 95% interval, `54.2% [52.1, 56.3]`.
    pub fn rate_text(c: &CellView) -> String {
        match (c.win_rate, c.ci_low, c.ci_high) {
            (Some(r), Some(lo), Some(hi)) => format!("{:.1}% [{:.1}, {:.1}]", 100.0 * r, 100.0 * lo, 100.0 * hi),
            (r, ..) => r.map_or("-".into(), |r| format!("{:.1}%", 100.0 * r)),
        }
    }

    /// A match's: one cell's win rate with its interval (and its SPRT's LLR); of a grid, the
    /// best cell's.
    pub fn of_matches(cells: &[CellView]) -> Self {
        let rated = |c: &&CellView| c.caveat.is_none() && c.win_rate.is_some();
        let text = Self::rate_text;
        match cells {
            [c] => Headline {
                result: Some(c).filter(rated).map(text).or(c.caveat.map(str::to_string)),
                llr: c.sprt_llr,
                llr_bounds: c.sprt_bounds,
            },
            _ => {
                let best = cells
                    .iter()
                    .filter(rated)
                    .max_by(|a, b| a.win_rate.partial_cmp(&b.win_rate).expect("rates are numbers"));
                Headline {
                    result: best.map(|c| format!("best #{} {}: {}", c.index, params_text(c), text(c))),
                    ..Self::default()
                }
            }
        }
    }
}

/// A cell's grid point as `name=value` pairs.
pub fn params_text(c: &CellView) -> String {
    c.params.iter().map(|(k, v)| format!("{k}={}", crate::dashboard::value_text(v))).collect::<Vec<_>>().join(",")
}

/// What a generation of a run made: a table (by sha256), or a tuning step.
pub enum Made<'a> {
    Artifact(&'a str),
    Step(&'a Step),
}

/// Record what generation `g` of a run made, with its games and the cell whose results made
/// it. False when the generation was recorded before (a cell that finished again after a
/// quarantine re-opened it): the first record stays, since later generations built on it.
pub async fn record_generation(
    tx: &mut Tx<'_>,
    experiment: Uuid,
    g: u32,
    cell: Uuid,
    made: Made<'_>,
    games: u64,
) -> Result<bool> {
    let (artifact, step) = match made {
        Made::Artifact(sha) => (Some(sha), None),
        Made::Step(s) => (None, Some(Db(s))),
    };
    let r = sqlx::query(
        "INSERT INTO generations (experiment_id, generation, cell_id, artifact, step, games) VALUES ($1, $2, $3, $4, $5, $6)
         ON CONFLICT (experiment_id, generation) DO NOTHING",
    )
    .bind(experiment)
    .bind(g as i32)
    .bind(cell)
    .bind(artifact)
    .bind(step)
    .bind(games as i64)
    .execute(&mut **tx)
    .await?;
    Ok(r.rows_affected() == 1)
}

/// A result whose kind is not its batch's: refused, naming both.
fn wrong_kind(result: &JobResult, batch: &Batch) -> Error {
    Error::unprocessable(format!(
        "result.kind: a {} result for a {} batch; nothing was recorded",
        result.kind().as_str(),
        batch.spec.kind.job_kind().as_str()
    ))
}

/// Lists the kinds once and derives the dispatch over them.
macro_rules! served {
    ($( $(#[cfg($cfg:meta)])? $variant:ident($kind:ty), )+) => {
        /// What [`Served`] says of a kind, as values.
        #[derive(Clone, Copy, Debug)]
        pub struct Facts {
            pub replicated: bool,
            pub logs_games: bool,
        }

        pub fn facts(kind: JobKind) -> Facts {
            match kind {
                $( $(#[cfg($cfg)])? JobKind::$variant => Facts {
                    replicated: <$kind as Served>::REPLICATED,
                    logs_games: <$kind as Served>::LOGS_GAMES,
                }, )+
            }
        }

        /// The job a leased batch carries.
        pub fn job(batch: &Batch) -> Result<Job> {
            let spec = &batch.spec.0;
            match &spec.kind {
                $( $(#[cfg($cfg)])? ExperimentKind::$variant(k) => <$kind as Served>::job(spec.seed, k, batch).map(Job::$variant), )+
            }
        }

        /// The kind's long checks of an upload ([`Served::verify`]).
        pub async fn verify(st: &AppState, batch: &Batch, result: &JobResult, logs: Texts) -> Result<std::result::Result<(), String>> {
            match result {
                $( $(#[cfg($cfg)])? JobResult::$variant(r) => {
                    let ExperimentKind::$variant(k) = &batch.spec.kind else { return Err(wrong_kind(result, batch)) };
                    <$kind as Served>::verify(st, batch, k, r.clone(), logs).await
                } )+
            }
        }

        /// The kind's checks of a result against its batch ([`Served::check`]).
        pub async fn check(db: &mut PgConnection, batch: &Batch, result: &JobResult) -> Result<()> {
            match result {
                $( $(#[cfg($cfg)])? JobResult::$variant(r) => {
                    if !matches!(batch.spec.kind, ExperimentKind::$variant(_)) {
                        return Err(wrong_kind(result, batch));
                    }
                    <$kind as Served>::check(db, batch, r).await
                } )+
            }
        }

        /// What of a result a replica must reproduce ([`Served::replicable`]).
        pub fn replicable(result: &JobResult) -> JobResult {
            match result {
                $( $(#[cfg($cfg)])? JobResult::$variant(r) => JobResult::$variant(<$kind as Served>::replicable(r)), )+
            }
        }

        /// Settle a recorded result ([`Served::settle`]).
        pub async fn settle(tx: &mut Tx<'_>, up: &Upload<'_>, result: &JobResult) -> Result<Settled> {
            match result {
                $( $(#[cfg($cfg)])? JobResult::$variant(r) => {
                    let ExperimentKind::$variant(k) = &up.batch.spec.kind else { return Err(wrong_kind(result, up.batch)) };
                    <$kind as Served>::settle(tx, up, k, r).await
                } )+
            }
        }

        /// What a finished cell of this kind makes ([`Served::cell_finished`]).
        pub async fn cell_finished(tx: &mut Tx<'_>, kind: &ExperimentKind, experiment: Uuid, cell: Uuid) -> Result<Option<String>> {
            match kind {
                $( $(#[cfg($cfg)])? ExperimentKind::$variant(k) => <$kind as Served>::cell_finished(tx, k, experiment, cell).await, )+
            }
        }

        /// A tuning run's parameters and steps ([`Served::tuning`]).
        pub fn tuning(kind: &ExperimentKind, steps: Vec<Step>) -> Option<Tuning> {
            match kind {
                $( $(#[cfg($cfg)])? ExperimentKind::$variant(k) => <$kind as Served>::tuning(k, steps), )+
            }
        }

        /// The experiment's result in a line ([`Served::headline`]).
        pub fn headline(kind: &ExperimentKind, cells: &[CellView]) -> Headline {
            match kind {
                $( $(#[cfg($cfg)])? ExperimentKind::$variant(k) => <$kind as Served>::headline(k, cells), )+
            }
        }

        /// The experiment's page ([`Served::page`]).
        pub async fn page(st: &AppState, d: &Detail) -> Result<Html<String>> {
            match &d.spec.kind {
                $( $(#[cfg($cfg)])? ExperimentKind::$variant(k) => <$kind as Served>::page(st, d, k).await, )+
            }
        }
    };
}

served! {
    Match(shared::kinds::matches::Match),
    Endgame(shared::kinds::endgame::Endgame),
    Wintable(shared::kinds::wintable::Wintable),
    Selfplay(shared::kinds::selfplay::Selfplay),
    Leaves(shared::kinds::leaves::Leaves),
    Tune(shared::kinds::tune::Tune),
    #[cfg(feature = "toy-kind")]
    Toy(shared::kinds::toy::Toy),
}

/// The names of the kinds for which `pick` holds, for SQL (`e.kind = ANY ($n)`): kind names
/// are bound, never spelt in a query.
pub fn names_where(pick: impl Fn(Facts) -> bool) -> Vec<String> {
    JobKind::names(&JobKind::ALL.iter().copied().filter(|&k| pick(facts(k))).collect::<Vec<_>>())
}
