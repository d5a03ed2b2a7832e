//! What one player may know of a game. Bots choose from a [`View`], never from the game
//! itself, so that no bot can read the opponent's rack or the bag's order by accident: the
//! view's game holds the unseen tiles (bag and opponent's rack) in an order that depends only
//! on which tiles they are, and the opponent's past racks and exchanged tiles are hidden. An
//! oracle bot says what more it is told ([`Knows`]); the harness that seats it grants exactly
//! that, through [`View::revealed`].
//!
//! # Design notes
//!
//! `View`: what one player may know of a game. Bots choose from a view, never from the game: the
//! opponent's rack and the bag hold the unseen tiles in an order that depends only on which tiles
//! they are, past opponent racks and exchanged tiles read `HIDDEN`. An oracle says what more it is
//! told (`Knows::Leave`, `Knows::Rack`) and gets exactly that through `View::revealed`. Invariant:
//! a non-oracle bot's move does not change when the hidden tiles are dealt otherwise
//! (`engine/tests/infer.rs`).

use crate::game::{Bag, Game, Turn};
use crate::moves::{Kind, Move};

pub use crate::tiles::HIDDEN;

/// What a player is told of the opponent's tiles beyond what the rules show everyone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Knows {
    /// Nothing: the honest player.
    Nothing,
    /// The tiles the opponent kept after their last turn (the leave oracle).
    Leave,
    /// The opponent's whole rack (the rack oracle).
    Rack,
}

/// One past turn as the viewer saw it.
#[derive(Clone, Debug, PartialEq)]
pub struct SeenTurn {
    pub player: usize,
    /// The move; an opponent's exchange shows `HIDDEN` for each tile thrown back.
    pub mv: Move,
    /// The rack before the move: the viewer's own whole rack; for the opponent, the tiles
    /// they placed, then `HIDDEN` for the rest (so its length is the rack's).
    pub rack: Vec<u8>,
    pub score: i32,
    pub total: i32,
    pub bag_after: usize,
}

/// A player's view of a game: the position with hidden tiles put in a canonical order, the
/// history as they saw it, and what an oracle is told.
pub struct View<'a> {
    game: Game,
    turns: &'a [Turn],
    revealed: Option<Vec<u8>>,
}

impl<'a> View<'a> {
    /// The view of the player on turn in `game`, told what `knows` grants.
    pub fn new(game: &'a Game, knows: Knows) -> Self {
        let me = game.on_turn;
        let opp = 1 - me;
        let mut unseen = game.bag.tiles().to_vec();
        unseen.extend_from_slice(&game.racks[opp]);
        unseen.sort_unstable();
        // With the bag empty the opponent's rack is exactly the unseen tiles, as a player who
        // tracks tiles knows; otherwise the split below is arbitrary but fixed.
        let opp_len = game.racks[opp].len();
        let mut racks = [Vec::new(), Vec::new()];
        racks[me] = game.racks[me].clone();
        racks[opp] = unseen[..opp_len].to_vec();
        let masked = Game {
            board: game.board.clone(),
            racks,
            scores: game.scores,
            bag: Bag::from_tiles(unseen[opp_len..].to_vec(), 0),
            on_turn: me,
            scoreless: game.scoreless,
            end: game.end,
            history: Vec::new(),
            adjustments: Vec::new(),
        };
        let revealed = match knows {
            Knows::Nothing => None,
            Knows::Rack => Some(sorted(game.racks[opp].clone())),
            Knows::Leave => game.history.last().filter(|t| t.player == opp).map(|t| t.mv.leave(&t.rack)),
        };
        Self { game: masked, turns: &game.history, revealed }
    }

    /// The position: the board, scores and the viewer's rack are the game's; the opponent's
    /// rack and the bag hold the unseen tiles in a canonical order (with the bag empty, the
    /// opponent's rack is exact). The history is empty: see [`View::turns`].
    pub fn game(&self) -> &Game {
        &self.game
    }

    /// The seat of the viewer (the player on turn).
    pub fn me(&self) -> usize {
        self.game.on_turn
    }

    /// The tiles the viewer has not seen (bag and opponent's rack), sorted.
    pub fn unseen(&self) -> Vec<u8> {
        let opp = &self.game.racks[1 - self.me()];
        sorted(self.game.bag.tiles().iter().chain(opp).copied().collect())
    }

    /// The opponent's tiles an oracle was told, sorted: their leave after their last turn
    /// (`Knows::Leave`) or their rack (`Knows::Rack`). `None` for an honest viewer, and for a
    /// leave oracle before the opponent has moved.
    pub fn revealed(&self) -> Option<&[u8]> {
        self.revealed.as_deref()
    }

    /// How many turns have been played.
    pub fn turn_count(&self) -> usize {
        self.turns.len()
    }

    /// Turn `i` (from 0) as the viewer saw it.
    pub fn turn(&self, i: usize) -> SeenTurn {
        let t = &self.turns[i];
        if t.player == self.me() {
            return SeenTurn {
                player: t.player,
                mv: t.mv,
                rack: t.rack.clone(),
                score: t.score,
                total: t.total,
                bag_after: t.bag_after,
            };
        }
        let mut rack: Vec<u8> = if t.mv.kind == Kind::Place { t.mv.rack_tiles().collect() } else { Vec::new() };
        rack.resize(t.rack.len(), HIDDEN);
        let mv = if t.mv.kind == Kind::Exchange { Move::exchange(&vec![HIDDEN; t.mv.len as usize]) } else { t.mv };
        SeenTurn { player: t.player, mv, rack, score: t.score, total: t.total, bag_after: t.bag_after }
    }
}

fn sorted(mut v: Vec<u8>) -> Vec<u8> {
    v.sort_unstable();
    v
}
