//! `toy` (test-only, feature `toy-kind`): sum the job's draws.

use super::{Kit, Logged, Played, Runner};
use anyhow::Result;
use shared::kinds::toy::{Toy, ToyJob, ToySum, sum};
use std::sync::atomic::AtomicBool;

impl Runner for Toy {
    fn run(job: &ToyJob, _: Kit<'_>, _: &AtomicBool) -> Result<Played<ToySum>> {
        Ok(Played::Done(ToySum { draws: job.count, sum: sum(job) }, Logged::None))
    }

    fn summary(_: &ToyJob, s: &ToySum, _: f64) -> String {
        format!("{} draws  sum {}", s.draws, s.sum)
    }
}
