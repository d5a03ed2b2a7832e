//! Seeded sets of endgame positions, for tests, benchmarks and endgame batches.

use crate::eval::StaticEval;
use crate::game::Game;
use crate::leaves::Klv;
use crate::movegen::{Ctx, Generator};
use crate::rng::derive;
use std::sync::Arc;

/// Position `index` of the set seeded `seed`: a static-vs-static game dealt from
/// `derive(seed, index)` at the first turn the bag holds exactly `bag` tiles (0: the turn it
/// emptied), with `extra` more static moves played after it (to get smaller endgames). `None`
/// when that game never got there.
pub fn bag_emptied(
    ctx: Ctx,
    leaves: Option<Arc<Klv>>,
    seed: u64,
    index: u64,
    bag: usize,
    extra: usize,
    mg: &mut Generator,
) -> Option<Game> {
    let deal = derive(seed, index);
    let mut game = Game::new(ctx.dist, deal);
    let bot = StaticEval::new(leaves);
    let mut after = None;
    for _ in 0..1000 {
        if game.is_over() {
            return None;
        }
        if game.bag.len() < bag {
            return None;
        }
        if game.bag.len() == bag {
            let n = after.get_or_insert(0);
            if *n == extra {
                // Play and history are not part of the endgame: start it fresh.
                game.history.clear();
                return Some(game);
            }
            *n += 1;
        }
        let mv = bot.best_move(ctx, &game, mg);
        game.play(ctx, &mv);
    }
    None
}

/// The first `count` positions of the set seeded `seed` (indices with no such position are
/// skipped), with their indices.
pub fn bag_emptied_set(
    ctx: Ctx,
    leaves: Option<Arc<Klv>>,
    seed: u64,
    count: usize,
    bag: usize,
    extra: usize,
) -> Vec<(u64, Game)> {
    let mut mg = Generator::new();
    let mut out = Vec::with_capacity(count);
    let mut index = 0;
    while out.len() < count {
        if let Some(g) = bag_emptied(ctx, leaves.clone(), seed, index, bag, extra, &mut mg) {
            out.push((index, g));
        }
        index += 1;
    }
    out
}
