//! The position after a logged turn, for the player who moves next: what `worker infer` reads
//! a turn from.

use super::read::Replay;
use crate::game::{Bag, Game, Turn};
use crate::movegen::Ctx;
use crate::moves::{Kind, Move};
use crate::tiles::HIDDEN;

/// Where the viewer's rack in a position came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Viewer {
    /// The caller gave it.
    Given,
    /// The log shows it whole (on the viewer's next turn, or in `#rack1`/`#rack2` after the
    /// last turn).
    Logged,
    /// The log shows `known` of the `holds` tiles the viewer holds; the rest are unseen.
    Partial { known: usize, holds: usize },
    /// The log shows none of it: every tile off the board is unseen.
    Unknown,
}

/// A position read from a log.
#[derive(Debug)]
pub struct At {
    /// The board, scores and history as logged; the viewer's rack holds the tiles known to be
    /// on it; the other tiles off the board are split between the opponent's rack (as many as
    /// they hold) and the bag in no particular order, which a player's view (`engine::view`)
    /// hides.
    pub game: Game,
    pub viewer: Viewer,
}

/// The game after the first `n` turns of a log, for the player who moves next, with that
/// player's rack `rack` (else what the log shows of it). Rack sizes and the bag follow from the
/// plays; a rack a log shows in part fills what it shows.
pub fn game_at(replay: &Replay, n: usize, rack: Option<Vec<u8>>, ctx: Ctx) -> Result<At, String> {
    let dist = ctx.dist;
    let read = replay.turns.len();
    if n == 0 || n > read {
        return Err(match &replay.refused {
            Some(e) if n > read => format!("turn {n}: the log reads only to turn {read}, then stops at {e}"),
            _ => format!("turn {n}: the log has turns 1 to {read}"),
        });
    }
    let mut game = Game::new(dist, 0);
    for t in &replay.turns[..n] {
        // A play challenged off placed nothing and scored nothing: to the board, a pass.
        let mv = if t.withdrawn { Move::PASS } else { t.mv };
        if mv.kind == Kind::Place {
            game.board.place(mv.dir(), mv.lane as usize, mv.start as usize, mv.tiles(), ctx.kwg, dist);
        }
        game.scoreless = if mv.kind == Kind::Place && mv.score > 0 { 0 } else { game.scoreless + 1 };
        let mut rack = t.rack.clone();
        rack.resize(t.rack_size(), HIDDEN);
        game.history.push(Turn {
            player: t.player,
            rack,
            mv,
            score: mv.score,
            total: t.before[t.player] + mv.score,
            bag_after: t.after().1,
        });
    }
    let last = &replay.turns[n - 1];
    game.scores = match replay.turns.get(n) {
        Some(next) => next.before,
        None => {
            let mut s = last.before;
            s[last.player] += if last.withdrawn { 0 } else { last.mv.score };
            s
        }
    };
    let me = 1 - last.player;
    let opp = last.player;
    let (sizes, bag) = last.after();
    let (known, viewer) = match rack {
        Some(r) if r.len() > sizes[me] => {
            return Err(format!(
                "the rack given has {} tiles, but after turn {n} the player holds {}",
                r.len(),
                sizes[me]
            ));
        }
        Some(r) => (r, Viewer::Given),
        None => {
            let logged = match replay.turns.get(n) {
                Some(next) => (next.player == me).then(|| next.rack.clone()),
                None => replay.racks[me].clone(),
            };
            match logged {
                Some(r) if r.len() == sizes[me] => (r, Viewer::Logged),
                Some(r) if !r.is_empty() && r.len() < sizes[me] => {
                    let known = r.len();
                    (r, Viewer::Partial { known, holds: sizes[me] })
                }
                _ => (Vec::new(), Viewer::Unknown),
            }
        }
    };
    let mut unseen: Vec<u8> =
        (0..dist.size() as u8).flat_map(|t| std::iter::repeat_n(t, dist.count(t) as usize)).collect();
    let on_board = crate::game::board_counts(&game.board);
    for t in 0..dist.size() as u8 {
        for _ in 0..on_board[t as usize] {
            let k = unseen.iter().position(|&x| x == t).ok_or("the board holds more tiles than the distribution")?;
            unseen.remove(k);
        }
    }
    for &t in &known {
        let k = unseen.iter().position(|&x| x == t).ok_or_else(|| {
            format!("rack {}: more `{}` than are off the board", dist.rack_string(&known), dist.rack_char(t))
        })?;
        unseen.remove(k);
    }
    let hidden_own = sizes[me] - known.len();
    if unseen.len() != sizes[opp] + bag + hidden_own {
        return Err(format!(
            "after turn {n}: {} tiles are off the board and off the viewer's known rack, but by the plays the opponent holds {}, the bag {bag} and the viewer {hidden_own} more",
            unseen.len(),
            sizes[opp]
        ));
    }
    game.racks[me] = known;
    game.racks[opp] = unseen[..sizes[opp]].to_vec();
    game.bag = Bag::from_tiles(unseen[sizes[opp]..].to_vec(), 0);
    game.on_turn = me;
    Ok(At { game, viewer })
}
