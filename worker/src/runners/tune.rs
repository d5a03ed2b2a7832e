//! `tune`: a perturbed bot against the reference, a match's games (`super::matches`).

use super::{Kit, Played, Runner, matches};
use anyhow::Result;
use shared::kinds::matches::MatchJob;
use shared::kinds::tune::Tune;
use shared::stats::MatchTally;
use std::sync::atomic::AtomicBool;

impl Runner for Tune {
    fn run(job: &MatchJob, kit: Kit<'_>, cancel: &AtomicBool) -> Result<Played<MatchTally>> {
        matches::play(kit, job, true, cancel)
    }

    fn summary(job: &MatchJob, tally: &MatchTally, secs: f64) -> String {
        matches::summary(job, tally, secs)
    }
}
