//! Job kinds: what a researcher can ask the volunteers for. Each kind is one module here, with
//! its experiment spec and validation, the job a batch carries and the result that comes back,
//! behind one trait ([`Kind`]); the coordinator (`coordinator/src/kinds/`) and the worker
//! (`worker/src/runners/`) each add their side behind a trait of their own.
//!
//! The kinds are listed once, in the `registry!` call below: it derives [`JobKind`],
//! [`ExperimentKind`], [`Job`] and [`JobResult`], and every match over them. Adding a kind is
//! a module and a line there (and one line in each other crate's registry); the compiler
//! names whatever else must know of it.

pub mod endgame;
pub mod leaves;
pub mod matches;
pub mod selfplay;
#[cfg(feature = "toy-kind")]
pub mod toy;
pub mod tune;
pub mod wintable;

use crate::spec::{CellSpec, File, SpecError};
use crate::stats::{MatchTally, Sprt};
use engine::tiles::Distribution;
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::fmt::Debug;

/// What a job kind is, on both sides of the wire.
pub trait Kind {
    /// Its name: `kind = "..."` in experiment files, the tag of its spec, job and result in
    /// JSON, and `experiments.kind` in Postgres. The lowercase of its [`JobKind`] variant.
    const NAME: &'static str;
    /// What one unit of a batch is, in words (a cell's target and a batch's size count units).
    const UNIT: &'static str;
    /// Whether its cells play two bots against each other, tallied as a [`MatchTally`].
    const PLAYS_BOTS: bool;
    /// Whether its units are games (shown as games, rated in games/s), else positions.
    const PLAYS_GAMES: bool;
    /// How many games or positions one unit is.
    const SHOWN_PER_UNIT: u64;

    /// What an experiment of this kind asks: stored as the experiment's spec.
    type Spec: Clone + Debug + PartialEq + Serialize + DeserializeOwned;
    /// What a batch of it asks a worker to do.
    type Job: Clone + Debug + PartialEq + Serialize + DeserializeOwned;
    /// What a worker reports for a batch.
    type Result: Clone + Debug + PartialEq + Serialize + DeserializeOwned;

    /// Read and validate this kind's fields of an experiment file (the fields every kind has
    /// are read by `ExperimentSpec::parse`), refusing any it does not take.
    fn parse(file: File) -> Result<Self::Spec, SpecError>;
    /// Check the spec against the tile distribution it runs with, once the coordinator has
    /// resolved the experiment's artifacts.
    fn check(spec: &Self::Spec, dist: &Distribution) -> Result<(), SpecError>;
    /// The cells to store, each with its target in units.
    fn cells(spec: &Self::Spec, seed: u64) -> Result<Vec<CellSpec>, SpecError>;
    /// The bots and grid, for kinds whose cells play bots.
    fn matchup(spec: &Self::Spec) -> Option<&matches::MatchSpec>;
    /// The sequential test that may stop cell `cell` early, if it has one.
    fn sprt(spec: &Self::Spec, cell: u32) -> Option<&Sprt>;
    /// Why a cell finished, from its target in units.
    fn finished(target: u64) -> String;
    /// Units a worker that has not run this kind yet is given: a first batch that finishes
    /// quickly and measures the worker.
    fn first_batch_units(threads: u64) -> u64;
    /// The units a job asks for.
    fn job_units(job: &Self::Job) -> u64;
    /// Games played, or positions solved.
    fn result_games(result: &Self::Result) -> u64;
    /// The games' tally, for kinds whose cells play bots.
    fn tally(result: &Self::Result) -> Option<&MatchTally>;
    /// Artifact roles the experiment's batches go without, whatever the coordinator's defaults
    /// (a leave-table run from nothing has no leave table).
    fn goes_without(_: &Self::Spec) -> &'static [&'static str] {
        &[]
    }
}

/// Lists the kinds once and derives from the list every enum that names them.
macro_rules! registry {
    ($( $(#[doc = $doc:literal])* $(#[cfg($cfg:meta)])? $variant:ident($kind:ty), )+) => {
        /// A job kind by name, with what the queue and the pages need to know of it.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
        #[serde(rename_all = "lowercase")]
        pub enum JobKind {
            $( $(#[doc = $doc])* $(#[cfg($cfg)])? $variant, )+
        }

        impl JobKind {
            /// Every kind this build runs.
            pub const ALL: &'static [JobKind] = &[$( $(#[cfg($cfg)])? JobKind::$variant, )+];

            /// What [`Kind`] says of this kind.
            pub fn facts(self) -> Facts {
                match self {
                    $( $(#[cfg($cfg)])? JobKind::$variant => Facts::of::<$kind>(), )+
                }
            }
        }

        /// What an experiment asks of the volunteers: its kind with what only that kind has.
        #[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
        #[serde(tag = "kind", rename_all = "lowercase")]
        pub enum ExperimentKind {
            $( $(#[doc = $doc])* $(#[cfg($cfg)])? $variant(<$kind as Kind>::Spec), )+
        }

        impl ExperimentKind {
            pub fn job_kind(&self) -> JobKind {
                match self {
                    $( $(#[cfg($cfg)])? ExperimentKind::$variant(_) => JobKind::$variant, )+
                }
            }

            /// Read this kind's fields of an experiment file.
            pub fn parse(kind: JobKind, file: File) -> Result<ExperimentKind, SpecError> {
                match kind {
                    $( $(#[cfg($cfg)])? JobKind::$variant => <$kind as Kind>::parse(file).map(ExperimentKind::$variant), )+
                }
            }

            /// Check the spec against the tile distribution it runs with.
            pub fn check(&self, dist: &Distribution) -> Result<(), SpecError> {
                match self {
                    $( $(#[cfg($cfg)])? ExperimentKind::$variant(s) => <$kind as Kind>::check(s, dist), )+
                }
            }

            /// The cells to store.
            pub fn cells(&self, seed: u64) -> Result<Vec<CellSpec>, SpecError> {
                match self {
                    $( $(#[cfg($cfg)])? ExperimentKind::$variant(s) => <$kind as Kind>::cells(s, seed), )+
                }
            }

            /// The bots and grid of an experiment whose cells play games between two bots.
            pub fn matchup(&self) -> Option<&matches::MatchSpec> {
                match self {
                    $( $(#[cfg($cfg)])? ExperimentKind::$variant(s) => <$kind as Kind>::matchup(s), )+
                }
            }

            /// Artifact roles the batches go without ([`Kind::goes_without`]).
            pub fn goes_without(&self) -> &'static [&'static str] {
                match self {
                    $( $(#[cfg($cfg)])? ExperimentKind::$variant(s) => <$kind as Kind>::goes_without(s), )+
                }
            }

            /// The sequential test that may stop cell `cell` early.
            pub fn sprt(&self, cell: u32) -> Option<&Sprt> {
                match self {
                    $( $(#[cfg($cfg)])? ExperimentKind::$variant(s) => <$kind as Kind>::sprt(s, cell), )+
                }
            }
        }

        /// What a batch asks a worker to do.
        #[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
        #[serde(tag = "kind", rename_all = "lowercase")]
        pub enum Job {
            $( $(#[doc = $doc])* $(#[cfg($cfg)])? $variant(<$kind as Kind>::Job), )+
        }

        impl Job {
            pub fn kind(&self) -> JobKind {
                match self {
                    $( $(#[cfg($cfg)])? Job::$variant(_) => JobKind::$variant, )+
                }
            }

            /// The units of work the coordinator counts for this job ([`JobKind::unit`]).
            pub fn units(&self) -> u64 {
                match self {
                    $( $(#[cfg($cfg)])? Job::$variant(j) => <$kind as Kind>::job_units(j), )+
                }
            }
        }

        /// What a worker reports for a batch.
        #[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
        #[serde(tag = "kind", rename_all = "lowercase")]
        pub enum JobResult {
            $( $(#[doc = $doc])* $(#[cfg($cfg)])? $variant(<$kind as Kind>::Result), )+
        }

        impl JobResult {
            pub fn kind(&self) -> JobKind {
                match self {
                    $( $(#[cfg($cfg)])? JobResult::$variant(_) => JobKind::$variant, )+
                }
            }

            /// The games' tally, for the kinds whose cells play two bots against each other.
            pub fn tally(&self) -> Option<&MatchTally> {
                match self {
                    $( $(#[cfg($cfg)])? JobResult::$variant(r) => <$kind as Kind>::tally(r), )+
                }
            }

            /// Games played, or positions solved.
            pub fn games(&self) -> u64 {
                match self {
                    $( $(#[cfg($cfg)])? JobResult::$variant(r) => <$kind as Kind>::result_games(r), )+
                }
            }
        }
    };
}

registry! {
    /// Bots play each other on paired deals, optionally over a grid of their parameters.
    Match(matches::Match),
    /// A set of endgames solved exactly, some twice by different workers.
    Endgame(endgame::Endgame),
    /// Static-vs-static games counted into a win-probability table.
    Wintable(wintable::Wintable),
    /// Games generated for their logs (a CNN's training data): each deal played once.
    Selfplay(selfplay::Selfplay),
    /// A leave table made by generations of self-play, each fitted on the coordinator.
    Leaves(leaves::Leaves),
    /// A bot's parameters tuned by SPSA, each iteration's two perturbations against a reference.
    Tune(tune::Tune),
    /// A test-only kind that proves the registry: see `toy`.
    #[cfg(feature = "toy-kind")]
    Toy(toy::Toy),
}

/// What [`Kind`] says of one kind, as values (for code that holds a [`JobKind`]).
#[derive(Clone, Copy, Debug)]
pub struct Facts {
    pub name: &'static str,
    pub unit: &'static str,
    pub plays_bots: bool,
    pub plays_games: bool,
    pub shown_per_unit: u64,
    finished: fn(u64) -> String,
    first_batch_units: fn(u64) -> u64,
}

impl Facts {
    fn of<K: Kind>() -> Facts {
        Facts {
            name: K::NAME,
            unit: K::UNIT,
            plays_bots: K::PLAYS_BOTS,
            plays_games: K::PLAYS_GAMES,
            shown_per_unit: K::SHOWN_PER_UNIT,
            finished: K::finished,
            first_batch_units: K::first_batch_units,
        }
    }
}

impl JobKind {
    pub fn as_str(self) -> &'static str {
        self.facts().name
    }

    pub fn parse(s: &str) -> Option<JobKind> {
        Self::ALL.iter().copied().find(|k| k.as_str() == s)
    }

    /// Every kind's name, for SQL (`kind = ANY ($1)`) and messages.
    pub fn names(kinds: &[JobKind]) -> Vec<String> {
        kinds.iter().map(|k| k.as_str().to_string()).collect()
    }

    /// The kinds for which `pick` holds, by name (bound into SQL, never spelt there).
    pub fn names_where(pick: impl Fn(Facts) -> bool) -> Vec<String> {
        Self::names(&Self::ALL.iter().copied().filter(|k| pick(k.facts())).collect::<Vec<_>>())
    }

    /// What one unit of a batch of this kind is, in words.
    pub fn unit(self) -> &'static str {
        self.facts().unit
    }

    /// Whether its cells play two bots against each other, tallied as a [`MatchTally`].
    pub fn plays_bots(self) -> bool {
        self.facts().plays_bots
    }

    /// Whether its batches play games (whose rate the workers page shows as games/s).
    pub fn plays_games(self) -> bool {
        self.facts().plays_games
    }

    /// What the dashboards count: games, or positions.
    pub fn shown(self) -> &'static str {
        if self.plays_games() { "games" } else { "positions" }
    }

    /// How many of [`JobKind::shown`] one unit is.
    pub fn shown_per_unit(self) -> u64 {
        self.facts().shown_per_unit
    }

    /// Why a cell of this kind finished, from its target in units.
    pub fn finished(self, target: u64) -> String {
        (self.facts().finished)(target)
    }

    /// Units a worker that has not run this kind yet is given for its first batch.
    pub fn first_batch_units(self, threads: u64) -> u64 {
        (self.facts().first_batch_units)(threads)
    }
}

impl ExperimentKind {
    /// The grid's axes (none but a match's or a self-play's).
    pub fn axes(&self) -> &[crate::spec::Axis] {
        self.matchup().map_or(&[], |m| &m.axes)
    }
}

impl JobResult {
    /// Units of work done ([`JobKind::unit`]): what a cell counts towards its target.
    pub fn units(&self) -> u64 {
        self.games() / self.kind().shown_per_unit()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_is_named_as_serde_tags_it() {
        for &k in JobKind::ALL {
            assert_eq!(serde_json::to_value(k).unwrap(), k.as_str(), "{k:?}");
            assert_eq!(JobKind::parse(k.as_str()), Some(k));
            assert!(k.shown_per_unit() >= 1 && k.first_batch_units(4) >= 1, "{k:?}");
        }
        let names = JobKind::names(JobKind::ALL);
        let mut unique = names.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), names.len(), "{names:?}");
        assert_eq!(JobKind::names_where(|f| f.plays_bots), ["match", "selfplay", "tune"]);
    }
}
