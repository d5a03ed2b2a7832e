//! `selfplay`: a match's games (`super::matches`), each deal played once.

use super::{Kit, Played, Runner, matches};
use anyhow::Result;
use shared::kinds::matches::MatchJob;
use shared::kinds::selfplay::Selfplay;
use shared::stats::MatchTally;
use std::sync::atomic::AtomicBool;

impl Runner for Selfplay {
    fn run(job: &MatchJob, kit: Kit<'_>, cancel: &AtomicBool) -> Result<Played<MatchTally>> {
        matches::play(kit, job, false, cancel)
    }

    fn summary(job: &MatchJob, tally: &MatchTally, secs: f64) -> String {
        matches::summary(job, tally, secs)
    }
}
