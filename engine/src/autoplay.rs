//! Self-play between two bots. Deals are paired: each deal (bag order) is played twice with the
//! seats swapped, which cancels most of the luck of the tiles from the comparison.

use crate::bots::Player;
use crate::game::Game;
use crate::movegen::{Ctx, Generator};
use crate::rng::{Rng, derive};

/// One finished game and who sat where.
#[derive(Clone, Debug)]
pub struct GameRecord {
    /// `2 * pair + leg`; leg 0 has bot 0 moving first, leg 1 bot 1.
    pub id: u64,
    /// Seed of the deal (bag order), shared by both legs of a pair.
    pub deal_seed: u64,
    /// `seat_bot[s]`: which bot (0 or 1) sat in seat `s` (seat 0 moves first).
    pub seat_bot: [usize; 2],
    pub game: Game,
    /// Microseconds each seat spent choosing its moves.
    pub micros: [u64; 2],
}

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
    let mut micros = [0u64; 2];
    // A game ends after at most ~100 tiles played plus 6 scoreless turns per refill; the cap
    // only guards against a bot that never ends one.
    for _ in 0..1000 {
        if game.is_over() {
            break;
        }
        let s = game.on_turn;
        let clock = std::time::Instant::now();
        let mv = seated[s].decide(ctx, &game, mg, &mut rngs[s]);
        micros[s] += clock.elapsed().as_micros() as u64;
        game.play(ctx, &mv);
    }
    (game, micros)
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

/// What the statistics need of one game, small enough to keep for millions of games.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Outcome {
    pub id: u64,
    pub seat_bot: [usize; 2],
    /// Final scores, bingos and turns by seat.
    pub scores: [i32; 2],
    pub bingos: [u32; 2],
    pub turns: [u32; 2],
    /// Microseconds spent choosing moves, by seat.
    pub micros: [u64; 2],
}

impl Outcome {
    pub fn score_of(&self, b: usize) -> i32 {
        self.scores[if self.seat_bot[0] == b { 0 } else { 1 }]
    }
    /// 1 for a win of bot `b`, 0.5 for a draw, 0 for a loss.
    pub fn result_of(&self, b: usize) -> f64 {
        let (me, them) = (self.score_of(b), self.score_of(1 - b));
        if me > them {
            1.0
        } else if me == them {
            0.5
        } else {
            0.0
        }
    }
}

impl GameRecord {
    pub fn outcome(&self) -> Outcome {
        let mut o = Outcome {
            id: self.id,
            seat_bot: self.seat_bot,
            scores: self.game.scores,
            bingos: [0; 2],
            turns: [0; 2],
            micros: self.micros,
        };
        for t in &self.game.history {
            o.turns[t.player] += 1;
            if t.mv.kind == crate::moves::Kind::Place && t.mv.tiles_used() == crate::tiles::RACK_SIZE {
                o.bingos[t.player] += 1;
            }
        }
        o
    }
}
