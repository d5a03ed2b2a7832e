//! `wintable`: static-vs-static games, each deal once, logged, and their positions counted.

use super::{Cancelled, Kit, Logged, Played, Runner};
use crate::play::Match;
use anyhow::Result;
use engine::bots::BotSpec;
use engine::gcg::{write_csv, write_gcg};
use engine::record::GameRecord;
use shared::kinds::wintable::{WINTABLE_BOT, WinCounts, Wintable, WintableJob};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

impl Runner for Wintable {
    fn run(job: &WintableJob, kit: Kit<'_>, cancel: &AtomicBool) -> Result<Played<WinCounts>> {
        count_positions(kit, job, cancel)
    }

    fn summary(_: &WintableJob, w: &WinCounts, secs: f64) -> String {
        format!("{} games  {:.1} games/s  {} (unseen, spread) counts", w.games, w.games as f64 / secs, w.counts.len())
    }
}

/// Play a wintable job's static-vs-static games and count their positions. Counts are
/// integers: their sum does not depend on the order games finish in.
fn count_positions(kit: Kit<'_>, job: &WintableJob, cancel: &AtomicBool) -> Result<Played<WinCounts>> {
    let samples = Mutex::new(engine::winpct::WinSamples::new(&kit.loaded.data.dist));
    let played = static_selfplay(kit, job.seed, job.first_pair, job.pairs, cancel, &|rec| {
        samples.lock().expect("samples").add_game(&rec.game)
    })?;
    Ok(played.map(|()| WinCounts { games: 2 * job.pairs, counts: samples.into_inner().expect("samples").to_counts() }))
}

/// Play static-vs-static games `2 * first_pair .. 2 * (first_pair + pairs)` of the run seeded
/// `seed`, each deal once (as `worker wintable generate` and `worker leaves generate` play
/// them), with the batch's leave table, handing each finished game to `each`. The games are
/// logged as game `i` of deal `i`, both seats `static`, for the coordinator to re-play and
/// count again.
pub fn static_selfplay(
    kit: Kit<'_>,
    seed: u64,
    first_pair: u64,
    pairs: u64,
    cancel: &AtomicBool,
    each: &(dyn Fn(&GameRecord) + Sync),
) -> Result<Played<()>> {
    let loaded = kit.loaded;
    let m = Match {
        net: None,
        data: &loaded.data,
        specs: [BotSpec::STATIC, BotSpec::STATIC],
        leaves: loaded.leaves.clone(),
        tables: Default::default(),
        table: None,
        seed,
        first_game: 2 * first_pair,
        games: 2 * pairs,
        paired: false,
    };
    let games = Mutex::new(Vec::with_capacity(m.games as usize));
    let names = [WINTABLE_BOT; 2];
    let r = kit.pool.install(|| {
        m.play(&|rec: &GameRecord| {
            if cancel.load(Ordering::Relaxed) {
                return Err(Cancelled.into());
            }
            each(rec);
            // Both seats are `static`: the logs name bot 0 first whoever started.
            let rec = GameRecord { seat_bot: [0, 1], ..rec.clone() };
            let gcg = write_gcg(&rec.game, names, &loaded.data.dist);
            let csv = write_csv(&rec, names, &loaded.data.dist);
            games.lock().expect("games").push((rec.id, gcg, csv));
            Ok(())
        })
    });
    if let Err(e) = r {
        if e.is::<Cancelled>() {
            return Ok(Played::Cancelled);
        }
        return Err(e);
    }
    Ok(Played::Done((), Logged::Games(games.into_inner().expect("games"))))
}
