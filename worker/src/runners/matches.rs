//! `match`: games between the job's two bots on paired deals, each logged; the tally is
//! the logged games'. Selfplay (`super::selfplay`) plays the same way, each deal once.

use super::{Cancelled, Kit, Logged, Played, Runner};
use crate::play::Match;
use anyhow::{Context, Result};
use engine::bots::BotSpec;
use engine::gcg::{write_csv, write_gcg};
use engine::record::GameRecord;
use shared::kinds::matches::{self, MatchJob};
use shared::stats::MatchTally;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

impl Runner for matches::Match {
    fn run(job: &MatchJob, kit: Kit<'_>, cancel: &AtomicBool) -> Result<Played<MatchTally>> {
        play(kit, job, true, cancel)
    }

    fn summary(job: &MatchJob, tally: &MatchTally, secs: f64) -> String {
        summary(job, tally, secs)
    }
}

/// Games and their rate, and the first bot's win rate.
pub fn summary(job: &MatchJob, tally: &MatchTally, secs: f64) -> String {
    format!(
        "{} games  {:.1} games/s{}",
        tally.games,
        tally.games as f64 / secs,
        tally.win_rate().map_or(String::new(), |w| format!("  {}: {:.1}%", job.bot1, 100.0 * w))
    )
}

/// Play a match job (`paired`: each deal twice, seats swapped) or a selfplay job (each deal
/// once) on the current rayon pool; `cancel` stops it between games.
pub fn play(kit: Kit<'_>, job: &MatchJob, paired: bool, cancel: &AtomicBool) -> Result<Played<MatchTally>> {
    let (loaded, net) = (kit.loaded, kit.net);
    let specs = [BotSpec::parse(&job.bot1)?, BotSpec::parse(&job.bot2)?];
    for spec in &specs {
        if let Some(model) = spec.model() {
            let Some(net) = net else {
                return Ok(Played::Unrunnable(
                    "value nets (CNN bots, sim bots with model=) are off on this worker".into(),
                ));
            };
            let rt = match net.runtime() {
                Ok(rt) => rt,
                Err(e) => return Ok(Played::Unrunnable(format!("{e:#}"))),
            };
            let path =
                loaded.models.get(model).with_context(|| format!("the batch lists no model artifact {model}"))?;
            // A model that does not load on the CPU is the model's fault (every worker would
            // fail it: building the bots below fails the batch); on a GPU it may be this
            // machine's (memory, driver), so there it is loaded first (into the queue the
            // bots then share).
            if rt.cuda()
                && let Err(e) = rt.shared(path, crate::nets::QUEUE_BATCH)
            {
                return Ok(Played::Unrunnable(e.to_string()));
            }
        }
    }
    let m = Match {
        net: net.map(|args| crate::nets::Nets { args, models: &loaded.models }),
        data: &loaded.data,
        specs,
        leaves: loaded.leaves.clone(),
        tables: loaded.tables.clone(),
        table: loaded.table.clone(),
        seed: job.seed,
        first_game: 2 * job.first_pair,
        games: 2 * job.pairs,
        paired,
    };
    let names = [job.bot1.as_str(), job.bot2.as_str()];
    let games: Mutex<Vec<(u64, engine::record::Outcome, String, String)>> =
        Mutex::new(Vec::with_capacity(m.games as usize));
    let r = kit.pool.install(|| {
        m.play(&|rec: &GameRecord| {
            if cancel.load(Ordering::Relaxed) {
                return Err(Cancelled.into());
            }
            let seats = [names[rec.seat_bot[0]], names[rec.seat_bot[1]]];
            let gcg = write_gcg(&rec.game, seats, &loaded.data.dist);
            let csv = write_csv(rec, names, &loaded.data.dist);
            games.lock().expect("games").push((rec.id, rec.outcome(), gcg, csv));
            Ok(())
        })
    });
    if let Err(e) = r {
        if e.is::<Cancelled>() {
            return Ok(Played::Cancelled);
        }
        return Err(e);
    }
    let games = games.into_inner().expect("games");
    let outcomes: Vec<_> = games.iter().map(|g| g.1).collect();
    let tally = MatchTally::from_games(&outcomes, paired);
    let logs = games.into_iter().map(|(id, _, gcg, csv)| (id, gcg, csv)).collect();
    Ok(Played::Done(tally, Logged::Games(logs)))
}
