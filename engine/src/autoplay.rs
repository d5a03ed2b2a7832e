//! Self-play between two bots. Deals are paired: each deal (bag order) is played twice with the
//! seats swapped, which cancels most of the luck of the tiles from the comparison.

use crate::bots::Player;
use crate::game::Game;
use crate::movegen::{Ctx, Generator};
use crate::record::GameRecord;
use crate::rng::{Rng, derive};

/// The deal seed of pair `pair` in a run seeded with `seed`.
pub fn deal_seed(seed: u64, pair: u64) -> u64 {
    derive(seed, pair)
}

/// Play one game on deal `deal_seed`; `seated[s]` plays seat `s`. Also returns the
/// microseconds each seat spent choosing (the only thing here that depends on the machine).
pub fn play_game(ctx: Ctx, seated: [&mut dyn Player; 2], deal_seed: u64, mg: &mut Generator) -> (Game, [u64; 2]) {
    let mut game = Game::new(ctx.dist, deal_seed);
    // Each seat's bot gets its own stream, the same in both legs for the same deal.
    let mut rngs = [Rng::new(derive(deal_seed, 1 << 32)), Rng::new(derive(deal_seed, 2 << 32))];
    // Summed unrounded: a move takes tens of microseconds, so rounding each would lose a percent.
    let mut spent = [std::time::Duration::ZERO; 2];
    // A game ends after at most ~100 tiles played plus 6 scoreless turns per refill; the cap
    // only guards against a bot that never ends one.
    for _ in 0..1000 {
        if game.is_over() {
            break;
        }
        let s = game.on_turn;
        let clock = std::time::Instant::now();
        let mv = seated[s].decide(ctx, &game, mg, &mut rngs[s]);
        spent[s] += clock.elapsed();
        game.play(ctx, &mv);
    }
    (game, spent.map(|d| d.as_micros() as u64))
}

/// Play leg `leg` (0: bot 0 first, 1: bot 1 first) of pair `pair`'s deal.
pub fn play_leg(
    ctx: Ctx,
    bots: &mut [Box<dyn Player>; 2],
    seed: u64,
    pair: u64,
    leg: usize,
    mg: &mut Generator,
) -> GameRecord {
    let deal = deal_seed(seed, pair);
    let [b0, b1] = bots;
    let ((game, micros), seat_bot) = if leg == 0 {
        (play_game(ctx, [b0.as_mut(), b1.as_mut()], deal, mg), [0, 1])
    } else {
        (play_game(ctx, [b1.as_mut(), b0.as_mut()], deal, mg), [1, 0])
    };
    GameRecord { id: 2 * pair + leg as u64, deal_seed: deal, seat_bot, game, micros }
}
