//! `toy`: a test-only kind (feature `toy-kind`) that proves a kind is one module per crate.
//! Unit `i` of a cell is a draw, `derive(seed, i) % 1000`; a batch reports the sum of its
//! draws, which the coordinator checks by drawing them again.

use super::Kind;
use super::matches::MatchSpec;
use crate::spec::{CellSpec, File, SpecError, err};
use crate::stats::{MatchTally, Sprt};
use engine::tiles::Distribution;
use serde::{Deserialize, Serialize};

/// The `toy` kind.
pub struct Toy;

impl Kind for Toy {
    const NAME: &'static str = "toy";
    const UNIT: &'static str = "draw";
    const PLAYS_BOTS: bool = false;
    const PLAYS_GAMES: bool = false;
    const SHOWN_PER_UNIT: u64 = 1;
    type Spec = ToySpec;
    type Job = ToyJob;
    type Result = ToySum;

    fn parse(f: File) -> Result<ToySpec, SpecError> {
        File::refuse(
            &[
                ("match", f.match_.is_some()),
                ("endgame", f.endgame.is_some()),
                ("sprt", f.sprt.is_some()),
                ("generations", f.generations.is_some()),
                ("tune", f.tune.is_some()),
            ],
            "a toy experiment takes only `games` (its draws)",
        )?;
        match f.games {
            Some(draws @ 1..=1_000_000) => Ok(ToySpec { draws }),
            _ => err("games", "a toy experiment needs `games`, 1 to 1000000 draws"),
        }
    }

    fn check(_: &ToySpec, _: &Distribution) -> Result<(), SpecError> {
        Ok(())
    }

    fn cells(spec: &ToySpec, _seed: u64) -> Result<Vec<CellSpec>, SpecError> {
        Ok(vec![CellSpec::single(spec.draws)])
    }

    fn matchup(_: &ToySpec) -> Option<&MatchSpec> {
        None
    }

    fn sprt(_: &ToySpec, _: u32) -> Option<&Sprt> {
        None
    }

    fn finished(target: u64) -> String {
        format!("all {target} draws summed")
    }

    fn first_batch_units(threads: u64) -> u64 {
        threads.max(1)
    }

    fn job_units(job: &ToyJob) -> u64 {
        job.count
    }

    fn result_games(sum: &ToySum) -> u64 {
        sum.draws
    }

    fn tally(_: &ToySum) -> Option<&MatchTally> {
        None
    }
}

/// How many draws an experiment sums.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToySpec {
    pub draws: u64,
}

/// Draws `first..first + count` of the run seeded `seed`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToyJob {
    pub seed: u64,
    pub first: u64,
    pub count: u64,
}

/// A batch's draws and their sum.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToySum {
    pub draws: u64,
    pub sum: u64,
}

/// Draw `i` of the run seeded `seed`.
pub fn draw(seed: u64, i: u64) -> u64 {
    engine::rng::derive(seed, i) % 1000
}

/// The sum a job's draws make.
pub fn sum(job: &ToyJob) -> u64 {
    (job.first..job.first + job.count).map(|i| draw(job.seed, i)).sum()
}
