//! `leaves`: a generation's self-play (static-vs-static games with the batch's leave table,
//! each kept leave counted as `worker leaves generate` counts it), or its table rated against
//! greedy (a match, `super::matches`).

use super::wintable::static_selfplay;
use super::{Kit, Played, Runner, matches};
use anyhow::Result;
use engine::leavegen::Samples;
use shared::kinds::leaves::{LeaveCounts, Leaves, LeavesJob, LeavesResult};
use std::sync::Mutex;
use std::sync::atomic::AtomicBool;

impl Runner for Leaves {
    fn run(job: &LeavesJob, kit: Kit<'_>, cancel: &AtomicBool) -> Result<Played<LeavesResult>> {
        match job {
            LeavesJob::Play(p) => {
                let (table, dist) = (kit.loaded.leaves.as_deref(), &kit.loaded.data.dist);
                let samples = Mutex::new(Samples::new(dist));
                let played = static_selfplay(kit, p.seed, p.first_pair, p.pairs, cancel, &|rec| {
                    samples.lock().expect("samples").add_game(rec, table, dist)
                })?;
                let leaves = samples.into_inner().expect("samples").to_counts();
                Ok(played.map(|()| LeavesResult::Play(LeaveCounts { games: 2 * p.pairs, leaves })))
            }
            LeavesJob::Rate(m) => Ok(matches::play(kit, m, true, cancel)?.map(LeavesResult::Rate)),
        }
    }

    fn summary(job: &LeavesJob, result: &LeavesResult, secs: f64) -> String {
        match (job, result) {
            (_, LeavesResult::Play(c)) => {
                format!("{} games  {:.1} games/s  {} kept leaves", c.games, c.games as f64 / secs, c.leaves.len())
            }
            (LeavesJob::Rate(m), LeavesResult::Rate(t)) => matches::summary(m, t, secs),
            (LeavesJob::Play(_), LeavesResult::Rate(t)) => format!("{} games", t.games),
        }
    }
}
