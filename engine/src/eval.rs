//! Static evaluation: a move's equity is its score plus the value of the tiles it leaves
//! (from the leave table while tiles remain to be drawn; from the racks once the bag is empty).
//! The static bot, the softmax bot, the simulator's candidates and rollouts, and the endgame
//! sets all evaluate through this one module.
//!
//! # Design notes
//!
//! static evaluation: `StaticEval` (equity = score + leave value; leaves from the table while the
//! bag has tiles, from the racks once it is empty), `request`, the opening penalty. The static and
//! softmax bots, the simulator's candidates and rollouts and the endgame sets all evaluate through
//! it.

use crate::game::Game;
use crate::leaves::{Klv, RackLeaves};
use crate::movegen::{Ctx, Generator, Mode, Request};
use crate::moves::Move;
use std::sync::Arc;

/// Penalty (millipoints) per vowel placed beside a letter premium on the opening move.
pub const OPENING_VOWEL_PENALTY: i32 = 700;

/// What the move generator needs to rank the moves of the player on turn.
pub fn request<'a>(game: &'a Game, leaves: &'a RackLeaves, penalty: i32) -> Request<'a> {
    Request {
        board: &game.board,
        rack: &game.racks[game.on_turn],
        leaves,
        can_exchange: game.bag.len() >= crate::game::MIN_BAG_TO_EXCHANGE,
        opening_vowel_penalty: penalty,
    }
}

/// The leave-table evaluator.
#[derive(Clone)]
pub struct StaticEval {
    leaves: Option<Arc<Klv>>,
    /// Weight on the table's leave values (1: as the table says).
    leave_scale: f64,
    /// Opening penalty per vowel beside a premium square, millipoints.
    vowel_penalty: i32,
}

impl StaticEval {
    pub fn new(leaves: Option<Arc<Klv>>) -> Self {
        Self::scaled(leaves, 1.0)
    }

    /// An evaluator that weighs the table's leave values by `leave_scale` (>= 0).
    pub fn scaled(leaves: Option<Arc<Klv>>, leave_scale: f64) -> Self {
        debug_assert!(leave_scale >= 0.0);
        Self { leaves, leave_scale, vowel_penalty: OPENING_VOWEL_PENALTY }
    }

    /// The evaluator with another opening vowel penalty (millipoints per vowel).
    pub fn with_vowel_penalty(self, millis: i32) -> Self {
        Self { vowel_penalty: millis, ..self }
    }

    pub fn leaves(&self) -> Option<&Arc<Klv>> {
        self.leaves.as_ref()
    }

    /// The best move for the player on turn by static equity.
    pub fn best_move(&self, ctx: Ctx, game: &Game, mg: &mut Generator) -> Move {
        self.best(ctx, game, mg, 1)[0]
    }

    /// Leave values for the player on turn: the table's values while tiles remain to be drawn;
    /// with the bag empty, going out earns twice the opponent's rack and every kept tile costs
    /// twice its value.
    pub fn rack_leaves(&self, ctx: Ctx, game: &Game) -> RackLeaves {
        let rack = &game.racks[game.on_turn];
        if game.bag.is_empty() {
            let opp = Game::rack_value(ctx.dist, &game.racks[1 - game.on_turn]);
            RackLeaves::new(
                rack,
                |kept| if kept.is_empty() { 2000 * opp } else { -2000 * Game::rack_value(ctx.dist, kept) },
            )
        } else {
            match self.leaves.as_deref() {
                Some(klv) if self.leave_scale == 1.0 => RackLeaves::from_klv(rack, klv),
                Some(klv) => RackLeaves::from_klv(rack, klv).scaled(self.leave_scale),
                None => RackLeaves::new(rack, |_| 0),
            }
        }
    }
}

impl StaticEval {
    /// The `n` best moves for the player on turn by static equity, best first.
    pub fn best<'g>(&self, ctx: Ctx, game: &Game, mg: &'g mut Generator, n: usize) -> &'g [Move] {
        let leaves = self.rack_leaves(ctx, game);
        mg.generate(ctx, &request(game, &leaves, self.vowel_penalty), Mode::Best(n))
    }
}
