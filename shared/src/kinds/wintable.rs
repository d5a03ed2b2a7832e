//! `wintable`: static-vs-static games whose every position is counted by tiles unseen and
//! spread; the coordinator fits the win-probability table when the last batch is in.

use super::Kind;
use super::matches::MatchSpec;
use crate::spec::{CellSpec, File, MAX_GAMES_PER_CELL, SpecError, err};
use crate::stats::{MatchTally, Sprt};
use engine::tiles::Distribution;
use serde::{Deserialize, Serialize};

/// The `wintable` kind.
pub struct Wintable;

impl Kind for Wintable {
    const NAME: &'static str = "wintable";
    const UNIT: &'static str = "two games (two deals, each played once)";
    const PLAYS_BOTS: bool = false;
    const PLAYS_GAMES: bool = true;
    const SHOWN_PER_UNIT: u64 = 2;
    type Spec = WintableSpec;
    type Job = WintableJob;
    type Result = WinCounts;

    fn parse(f: File) -> Result<WintableSpec, SpecError> {
        File::refuse(
            &[
                ("match", f.match_.is_some()),
                ("grid", !f.grid.is_empty()),
                ("sprt", f.sprt.is_some()),
                ("generations", f.generations.is_some()),
                ("tune", f.tune.is_some()),
                ("endgame", f.endgame.is_some()),
            ],
            "a wintable experiment takes only `games` (static-vs-static games) and a seed",
        )?;
        let Some(games) = f.games else { return err("games", "a wintable experiment needs `games`") };
        if games == 0 || games % 2 == 1 || games > MAX_GAMES_PER_CELL {
            return err("games", format!("must be even, 2 to {MAX_GAMES_PER_CELL}"));
        }
        Ok(WintableSpec { games })
    }

    fn check(_: &WintableSpec, _: &Distribution) -> Result<(), SpecError> {
        Ok(())
    }

    fn cells(spec: &WintableSpec, _seed: u64) -> Result<Vec<CellSpec>, SpecError> {
        Ok(vec![CellSpec::single(spec.games / 2)])
    }

    fn matchup(_: &WintableSpec) -> Option<&MatchSpec> {
        None
    }

    fn sprt(_: &WintableSpec, _: u32) -> Option<&Sprt> {
        None
    }

    fn finished(target: u64) -> String {
        format!("all {} games played; table fitted", 2 * target)
    }

    fn first_batch_units(threads: u64) -> u64 {
        threads.max(1)
    }

    fn job_units(job: &WintableJob) -> u64 {
        job.pairs
    }

    fn result_games(counts: &WinCounts) -> u64 {
        counts.games
    }

    fn tally(_: &WinCounts) -> Option<&MatchTally> {
        None
    }
}

/// A win-table experiment: how many static-vs-static games (each deal played once).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WintableSpec {
    pub games: u64,
}

/// Static-vs-static games `2 * first_pair .. 2 * (first_pair + pairs)` of the run seeded
/// `seed`, each deal played once (as `worker wintable generate` plays them), for their
/// positions' counts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WintableJob {
    pub seed: u64,
    pub first_pair: u64,
    pub pairs: u64,
}

/// Name both seats of a wintable game go by in its logs.
pub const WINTABLE_BOT: &str = "static";

/// Positions of a wintable batch, as non-zero (unseen, spread, positions, half-points won by
/// the player to move) counts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WinCounts {
    pub games: u64,
    pub counts: Vec<(u32, i32, u64, u64)>,
}
