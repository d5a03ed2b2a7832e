//! The pre-endgame with one tile in the bag: for each candidate play, for each tile that could
//! be the one left in the bag, the player draws it, the bag is empty, and the endgame is solved
//! exactly with the opponent to move. Candidates rank by expected wins (draws half), then by
//! mean final spread.
//!
//! The player on turn cannot tell the bag tile from the opponent's rack, so every unseen tile
//! is equally likely to be the one in the bag. Passes are not ranked: after a pass the
//! opponent faces the one-tile bag, a pre-endgame of its own.

use super::{EndgameError, Options, Solver};
use crate::game::{Bag, Game};
use crate::movegen::Ctx;
use crate::moves::{Kind, Move};
use thiserror::Error;

#[derive(Debug, Error, PartialEq)]
pub enum PegError {
    #[error("the bag holds {0} tiles; a pre-endgame needs exactly one")]
    BagNotOne(usize),
    #[error(transparent)]
    Endgame(#[from] EndgameError),
}

/// The endgame after a candidate when `tile` was the one in the bag.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    pub tile: u8,
    /// How many of the unseen tiles are this tile.
    pub weight: u32,
    /// Final spread from the view of the player on turn.
    pub value: i32,
    pub exact: bool,
}

#[derive(Clone, Debug)]
pub struct Candidate {
    pub mv: Move,
    /// Expected wins over the possible bag tiles, draws counted half (0..=1).
    pub wins: f64,
    /// Mean final spread.
    pub spread: f64,
    pub outcomes: Vec<Outcome>,
}

/// The tiles the player on turn cannot see (the opponent's rack and the bag), as (tile, count).
pub fn unseen(game: &Game) -> Vec<(u8, u32)> {
    let mut tiles: Vec<u8> = game.racks[1 - game.on_turn].iter().chain(game.bag.tiles()).copied().collect();
    tiles.sort_unstable();
    let mut out: Vec<(u8, u32)> = Vec::new();
    for t in tiles {
        match out.last_mut() {
            Some((u, c)) if *u == t => *c += 1,
            _ => out.push((t, 1)),
        }
    }
    out
}

/// The position after `mv` when `tile` is the bag's one tile (the opponent holds the rest).
pub fn after(ctx: Ctx, game: &Game, mv: &Move, tile: u8) -> Game {
    let me = game.on_turn;
    let mut g = game.clone();
    let mut opp: Vec<u8> = game.racks[1 - me].iter().chain(game.bag.tiles()).copied().collect();
    let i = opp.iter().position(|&t| t == tile).expect("the tile is unseen");
    opp.swap_remove(i);
    g.racks[1 - me] = opp;
    g.bag = Bag::from_tiles(vec![tile], 0);
    g.play(ctx, mv);
    g
}

/// Rank `moves` (placements; anything else is skipped) of a position with one tile in the bag.
/// Each endgame is solved with `opts`; `progress` hears each candidate done.
pub fn rank(
    solver: &Solver,
    ctx: Ctx,
    game: &Game,
    moves: &[Move],
    opts: &Options,
    progress: &dyn Fn(),
) -> Result<Vec<Candidate>, PegError> {
    if game.bag.len() != 1 {
        return Err(PegError::BagNotOne(game.bag.len()));
    }
    let unseen = unseen(game);
    let total: u32 = unseen.iter().map(|u| u.1).sum();
    let me = game.on_turn;
    let mut out = Vec::new();
    for mv in moves.iter().filter(|m| m.kind == Kind::Place) {
        let mut outcomes = Vec::with_capacity(unseen.len());
        for &(tile, weight) in &unseen {
            let g = after(ctx, game, mv, tile);
            let (value, exact) = if g.is_over() {
                (g.scores[me] - g.scores[1 - me], true)
            } else {
                let s = solver.solve(ctx, &g, opts, &|_| {})?;
                (-s.value, s.exact)
            };
            outcomes.push(Outcome { tile, weight, value, exact });
        }
        let wins = outcomes.iter().map(|o| o.weight as f64 * (o.value.signum() as f64 + 1.0) / 2.0).sum::<f64>()
            / total as f64;
        let spread = outcomes.iter().map(|o| o.weight as f64 * o.value as f64).sum::<f64>() / total as f64;
        out.push(Candidate { mv: *mv, wins, spread, outcomes });
        progress();
    }
    // Stable: equal candidates keep the order they were given in.
    out.sort_by(|a, b| b.wins.total_cmp(&a.wins).then(b.spread.total_cmp(&a.spread)));
    Ok(out)
}
