//! A finished game as the logs and statistics see it: the game, who sat where, and how long
//! each seat thought. Rules-level data: self-play makes these, logs write and read them.

use crate::game::Game;

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
