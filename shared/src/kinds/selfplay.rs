//! `selfplay`: games generated for their logs (a CNN's training data). A match's bots and
//! grid, but each deal played once with the seats alternating (more positions per CPU-second
//! than paired deals give, none repeated), and no SPRT: every cell plays its games.

use super::Kind;
use super::matches::{self, MatchJob, MatchSpec};
use crate::spec::{CellSpec, File, SpecError};
use crate::stats::{MatchTally, Sprt};
use engine::tiles::Distribution;

/// The `selfplay` kind. Its job is a [`MatchJob`]: games `2 * first_pair .. 2 * (first_pair +
/// pairs)` of the cell's run, game `i` on deal `i` (`engine::autoplay::deal_seed(seed, i)`),
/// the first bot moving first in even games. Its result is the games' tally from the first
/// bot's side (unpaired: no `pair_points`).
pub struct Selfplay;

impl Kind for Selfplay {
    const NAME: &'static str = "selfplay";
    const UNIT: &'static str = "two games (two deals, each played once, the seats alternating)";
    const PLAYS_BOTS: bool = true;
    const PLAYS_GAMES: bool = true;
    const SHOWN_PER_UNIT: u64 = 2;
    type Spec = MatchSpec;
    type Job = MatchJob;
    type Result = MatchTally;

    fn parse(file: File) -> Result<MatchSpec, SpecError> {
        matches::parse(file, false)
    }

    fn check(_: &MatchSpec, _: &Distribution) -> Result<(), SpecError> {
        Ok(())
    }

    fn cells(spec: &MatchSpec, _seed: u64) -> Result<Vec<CellSpec>, SpecError> {
        spec.cells()
    }

    fn matchup(spec: &MatchSpec) -> Option<&MatchSpec> {
        Some(spec)
    }

    fn sprt(_: &MatchSpec, _: u32) -> Option<&Sprt> {
        None
    }

    fn finished(target: u64) -> String {
        format!("all {} games played and logged", 2 * target)
    }

    fn first_batch_units(threads: u64) -> u64 {
        threads.max(1)
    }

    fn job_units(job: &MatchJob) -> u64 {
        job.pairs
    }

    fn result_games(tally: &MatchTally) -> u64 {
        tally.games
    }

    fn tally(tally: &MatchTally) -> Option<&MatchTally> {
        Some(tally)
    }
}
