//! The CNN evaluator's input: the position after a candidate play, from the mover's view, as
//! 85 planes of 15 x 15 and 76 scalars (`docs/CNN.md` documents every number). One frame is
//! `FRAME_LEN` `f32`s, planes first (plane-major, each row-major from the top-left square),
//! then the scalars.
//!
//! The encoding reads only what the mover may know: the board, their own rack, the unseen
//! tiles as a multiset, the scores and the opponent's last turn (whose exchanged tiles are
//! hidden, but not how many there were).
//!
//! # Design notes
//!
//! `Encoder::encode` writes the frame of a play from a `Before` (the mover's view: board, rack,
//! unseen tiles as a multiset, bag, spread, the opponent's last move); `Target` is what a record
//! teaches (the outcome, or the win table's view H plies on); `transpose` mirrors a frame on the
//! diagonal; `Encoder::records` turns a replayed finished log (`gcg::Replay`) into records (frame +
//! target). Invariants: the cross-set planes equal a plain check of the words formed; a log's
//! records equal the frames the players saw live; transposing the frame equals encoding the
//! transposed position (`engine/tests/features.rs`).

use crate::board::{ACROSS, Board, DIM, DOWN, Layout, SQUARES, idx};
use crate::error::DataError;
use crate::game::{Game, board_counts};
use crate::gcg::Replay;
use crate::leaves::Klv;
use crate::movegen::Ctx;
use crate::moves::{Kind, Move};
use crate::tiles::{BLANK, BLANK_BIT, Distribution, HIDDEN, RACK_SIZE, letter_of};
use crate::winpct::WinTable;

/// Letters the encoding has a plane for: the encoding is for 26-letter alphabets.
pub const LETTERS: usize = 26;
pub const PLANES: usize = 85;
pub const SCALARS: usize = 76;
/// `f32`s in one frame's input: the planes, then the scalars.
pub const FRAME_LEN: usize = PLANES * SQUARES + SCALARS;
/// `f32`s in one record of a training stream: the frame, then its target.
pub const RECORD_LEN: usize = FRAME_LEN + 1;

/// First plane of each group.
pub mod plane {
    pub const LETTER: usize = 0;
    pub const BLANK: usize = 26;
    pub const CROSS_ACROSS: usize = 27;
    pub const CROSS_DOWN: usize = 53;
    /// 2L, 3L, 2W, 3W in that order.
    pub const PREMIUM: usize = 79;
    pub const OPPONENT_LAST: usize = 83;
    pub const PLAY: usize = 84;
}

/// First scalar of each group.
pub mod scalar {
    pub const LEAVE: usize = 0;
    pub const UNSEEN: usize = 27;
    pub const EXCHANGE: usize = 54;
    /// J Q X Z ? S in that order.
    pub const POWER: usize = 62;
    pub const UNSEEN_VOWELS: usize = 68;
    pub const UNSEEN_CONSONANTS: usize = 69;
    pub const LEAVE_VOWELS: usize = 70;
    pub const LEAVE_CONSONANTS: usize = 71;
    pub const SCORE: usize = 72;
    pub const LEAVE_VALUE: usize = 73;
    pub const BAG: usize = 74;
    pub const SPREAD: usize = 75;
}

/// Scales of the tanh-squashed scalars, in points.
pub const SCORE_SCALE: f32 = 50.0;
pub const LEAVE_SCALE: f32 = 25.0;
pub const SPREAD_SCALE: f32 = 100.0;

/// A value net: for a batch of frames ([`FRAME_LEN`] floats each), the expected outcome of
/// each for the player who made its play, -1 to 1. Implemented outside the engine (crate
/// `nn`); the CNN bot values its candidates with one, the simulator its open rollouts.
pub trait Valuer: Send {
    fn values(&mut self, frames: &[f32]) -> Result<Vec<f32>, String>;
}

/// What a record's target says of the mover.
#[derive(Clone, Copy, Debug)]
pub enum Target<'a> {
    /// The game's outcome: +1 win, 0 draw, -1 loss.
    Outcome,
    /// The mover's expected outcome `plies` turns later (the play itself is the first),
    /// `2 P(win) - 1` from the win-probability table at that position; the outcome when the
    /// game ends sooner.
    Horizon { plies: usize, table: &'a WinTable },
}

/// The position before the evaluated play, as the mover sees it.
#[derive(Clone, Copy, Debug)]
pub struct Before<'a> {
    pub board: &'a Board,
    pub rack: &'a [u8],
    /// Bag plus the opponent's rack, as a multiset (any order).
    pub unseen: &'a [u8],
    /// The bag's size before the play.
    pub bag: usize,
    /// The mover's score minus the opponent's, before the play.
    pub spread: i32,
    /// The opponent's last turn, if the turn before this one was theirs.
    pub opponent_last: Option<&'a Move>,
}

impl<'a> Before<'a> {
    /// The player on turn's view of `game`, with `unseen` the tiles they have not seen (the
    /// caller's buffer, filled here) and `opponent_last` the turn before, if the opponent's.
    pub fn of_game(game: &'a Game, unseen: &'a mut Vec<u8>, opponent_last: Option<&'a Move>) -> Self {
        let me = game.on_turn;
        unseen.clear();
        unseen.extend_from_slice(game.bag.tiles());
        unseen.extend_from_slice(&game.racks[1 - me]);
        Self {
            board: &game.board,
            rack: &game.racks[me],
            unseen,
            bag: game.bag.len(),
            spread: game.scores[me] - game.scores[1 - me],
            opponent_last,
        }
    }
}

/// Encodes frames for one distribution (it finds the power tiles and vowels once).
#[derive(Clone, Debug)]
pub struct Encoder {
    /// J Q X Z, blank, S as tiles.
    power: [u8; 6],
    /// How many of each tile kind the distribution has, blank first.
    counts: [u8; LETTERS + 1],
    vowels: u32,
}

impl Encoder {
    /// An encoder for `dist`, which must have the 26 letters A..Z.
    pub fn new(dist: &Distribution) -> Result<Self, DataError> {
        let err = |m: String| DataError::new("CNN features", m);
        if dist.size() != LETTERS + 1 {
            return Err(err(format!("the encoding needs 26 letters; the distribution has {}", dist.size() - 1)));
        }
        let mut counts = [0u8; LETTERS + 1];
        let mut vowels = 0u32;
        for (i, c) in ('A'..='Z').enumerate() {
            let t = dist.letter(c).ok_or_else(|| err(format!("the distribution has no letter {c}")))?;
            if t as usize != i + 1 {
                return Err(err(format!("letter {c} is tile {t}, expected A..Z in order")));
            }
            counts[t as usize] = dist.count(t);
            vowels |= (dist.is_vowel(t) as u32) << t;
        }
        counts[0] = dist.count(BLANK);
        let l = |c| dist.letter(c).expect("checked above");
        Ok(Self { power: [l('J'), l('Q'), l('X'), l('Z'), BLANK, l('S')], counts, vowels })
    }

    /// Writes the frame of `mv` played from `before` into `out` (`FRAME_LEN` long; every value
    /// is written). `leave_value` is the leave table's value of the tiles `mv` keeps, in points.
    pub fn encode(&self, ctx: Ctx, before: &Before, mv: &Move, leave_value: f32, out: &mut [f32]) {
        assert_eq!(out.len(), FRAME_LEN, "a frame is FRAME_LEN floats");
        out.fill(0.0);
        let mut board = before.board.clone();
        if mv.kind == Kind::Place {
            board.place(mv.dir(), mv.lane as usize, mv.start as usize, mv.tiles(), ctx.kwg, ctx.dist);
        }
        let (planes, scalars) = out.split_at_mut(PLANES * SQUARES);
        self.board_planes(&board, ctx.layout, planes);
        if let Some(last) = before.opponent_last.filter(|m| m.kind == Kind::Place) {
            mark_play(last, &mut planes[plane::OPPONENT_LAST * SQUARES..][..SQUARES]);
        }
        if mv.kind == Kind::Place {
            mark_play(mv, &mut planes[plane::PLAY * SQUARES..][..SQUARES]);
        }

        let leave = mv.leave(before.rack);
        let mut leave_counts = [0u8; LETTERS + 1];
        for &t in &leave {
            leave_counts[t as usize] += 1;
        }
        let mut unseen_counts = [0u8; LETTERS + 1];
        for &t in before.unseen {
            unseen_counts[t as usize] += 1;
        }
        let unseen_total = before.unseen.len().max(1) as f32;
        for k in 0..=LETTERS {
            // Letters A..Z then the blank; tile 0 is the blank.
            let slot = if k == LETTERS { 0 } else { k + 1 };
            scalars[scalar::LEAVE + k] = leave_counts[slot] as f32 / RACK_SIZE as f32;
            scalars[scalar::UNSEEN + k] = unseen_counts[slot] as f32 / unseen_total;
        }
        if let Some(last) = before.opponent_last.filter(|m| m.kind == Kind::Exchange) {
            scalars[scalar::EXCHANGE] = 1.0;
            scalars[scalar::EXCHANGE + (last.len as usize).clamp(1, RACK_SIZE)] = 1.0;
        }
        for (i, &t) in self.power.iter().enumerate() {
            scalars[scalar::POWER + i] = unseen_counts[t as usize] as f32 / self.counts[t as usize].max(1) as f32;
        }
        let (uv, uc) = self.vowels_consonants(&unseen_counts);
        scalars[scalar::UNSEEN_VOWELS] = uv / unseen_total;
        scalars[scalar::UNSEEN_CONSONANTS] = uc / unseen_total;
        let (lv, lc) = self.vowels_consonants(&leave_counts);
        let leave_total = leave.len().max(1) as f32;
        scalars[scalar::LEAVE_VOWELS] = lv / leave_total;
        scalars[scalar::LEAVE_CONSONANTS] = lc / leave_total;
        scalars[scalar::SCORE] = (mv.score as f32 / SCORE_SCALE).tanh();
        scalars[scalar::LEAVE_VALUE] = (leave_value / LEAVE_SCALE).tanh();
        scalars[scalar::BAG] = before.bag.saturating_sub(mv.tiles_used()) as f32 / 100.0;
        scalars[scalar::SPREAD] = ((before.spread + mv.score) as f32 / SPREAD_SCALE).tanh();
    }

    fn board_planes(&self, board: &Board, layout: &Layout, planes: &mut [f32]) {
        for row in 0..DIM {
            for col in 0..DIM {
                let sq = idx(row, col);
                let tile = board.at(row, col);
                if tile != 0 {
                    planes[(plane::LETTER + letter_of(tile) as usize - 1) * SQUARES + sq] = 1.0;
                    if tile & BLANK_BIT != 0 {
                        planes[plane::BLANK * SQUARES + sq] = 1.0;
                    }
                    continue;
                }
                // The word formed across is what constrains a play going down, and so on.
                let across = board.lane_cross(DOWN, col)[row];
                let down = board.lane_cross(ACROSS, row)[col];
                for l in 0..LETTERS {
                    planes[(plane::CROSS_ACROSS + l) * SQUARES + sq] = (across >> (l + 1) & 1) as f32;
                    planes[(plane::CROSS_DOWN + l) * SQUARES + sq] = (down >> (l + 1) & 1) as f32;
                }
                let premium = match (layout.letter_mult[ACROSS][sq], layout.word_mult[ACROSS][sq]) {
                    (2, _) => Some(0),
                    (3, _) => Some(1),
                    (_, 2) => Some(2),
                    (_, 3) => Some(3),
                    _ => None,
                };
                if let Some(p) = premium {
                    planes[(plane::PREMIUM + p) * SQUARES + sq] = 1.0;
                }
            }
        }
    }

    fn vowels_consonants(&self, counts: &[u8; LETTERS + 1]) -> (f32, f32) {
        let (mut v, mut c) = (0u32, 0u32);
        for (t, &n) in counts.iter().enumerate().skip(1) {
            if self.vowels >> t & 1 == 1 {
                v += n as u32;
            } else {
                c += n as u32;
            }
        }
        (v as f32, c as f32)
    }

    /// Appends one record per turn of a finished game's replayed log for the CNN (`crate::features`): the
    /// frame of the move from the mover's view, transposed if asked, then the target (see [`Target`]).
    /// `leaves` values each move's leave. Returns the number of records, or why the log cannot
    /// give any.
    pub fn records(
        &self,
        log: &Replay,
        ctx: Ctx,
        leaves: Option<&Klv>,
        transposed: bool,
        target: Target,
        out: &mut Vec<f32>,
    ) -> Result<usize, String> {
        if !log.ended {
            return Err(
                "the game is not finished (no end-of-game line with the bag empty), so it has no outcome".into()
            );
        }
        // A record is the mover's whole view: their rack, and what they threw back.
        if let Some(t) = log.turns.iter().find(|t| !t.rack_complete() || t.mv.rack_tiles().any(|x| x == HIDDEN)) {
            return Err(format!("line {}: the log does not show the mover's whole rack, which a record needs", t.line));
        }
        let dist = ctx.dist;
        let total_tiles: usize = (0..dist.size() as u8).map(|t| dist.count(t) as usize).sum();
        // Before each turn: both scores and the tiles on the board, for horizon targets.
        let mut running = Vec::with_capacity(log.turns.len());
        let mut tiles = 0usize;
        for turn in &log.turns {
            running.push((turn.before, tiles));
            tiles += if turn.withdrawn { 0 } else { turn.mv.tiles_used() };
        }
        let outcome = |p: usize| (log.scores[p] - log.scores[1 - p]).signum() as f32;
        let target_of = |i: usize, p: usize| match target {
            Target::Outcome => outcome(p),
            Target::Horizon { plies, table } => match log.turns.get(i + plies.max(1)) {
                None => outcome(p),
                Some(later) => {
                    let q = later.player;
                    let (sc, tiles) = running[i + plies.max(1)];
                    let unseen = total_tiles.saturating_sub(tiles + later.rack.len());
                    let win = 2.0 * table.win_prob(sc[q] - sc[1 - q], unseen) as f32 - 1.0;
                    if q == p { win } else { -win }
                }
            },
        };
        let mut board = Board::new();
        let mut unseen = Vec::with_capacity(100);
        let mut written = 0;
        for (i, turn) in log.turns.iter().enumerate() {
            // A play challenged off changed nothing on the board, so it teaches nothing of it.
            if turn.withdrawn {
                continue;
            }
            let me = turn.player;
            let mut counts = board_counts(&board);
            for &t in &turn.rack {
                counts[t as usize] += 1;
            }
            unseen.clear();
            for t in 0..dist.size() as u8 {
                let n = dist.count(t).saturating_sub(counts[t as usize]);
                unseen.extend(std::iter::repeat_n(t, n as usize));
            }
            // While the bag has tiles the opponent holds a full rack; once it is empty, the
            // unseen tiles are their rack.
            let bag = unseen.len() - unseen.len().min(RACK_SIZE);
            let last = log.turns[..i].last().filter(|t| t.player != me && !t.withdrawn).map(|t| &t.mv);
            let before = Before {
                board: &board,
                rack: &turn.rack,
                unseen: &unseen,
                bag,
                spread: turn.before[me] - turn.before[1 - me],
                opponent_last: last,
            };
            let leave_value = leaves.map_or(0.0, |k| k.value(&turn.mv.leave(&turn.rack)));
            let start = out.len();
            out.resize(start + RECORD_LEN, 0.0);
            let record = &mut out[start..];
            self.encode(ctx, &before, &turn.mv, leave_value, &mut record[..FRAME_LEN]);
            if transposed {
                transpose(&mut record[..FRAME_LEN]);
            }
            record[FRAME_LEN] = target_of(i, me);
            if turn.mv.kind == Kind::Place {
                let mv = &turn.mv;
                board.place(mv.dir(), mv.lane as usize, mv.start as usize, mv.tiles(), ctx.kwg, dist);
            }
            written += 1;
        }
        Ok(written)
    }
}

/// Sets the squares `mv` places a tile on.
fn mark_play(mv: &Move, plane: &mut [f32]) {
    let (row, col) = mv.origin();
    for (k, &t) in mv.tiles().iter().enumerate() {
        if t != 0 {
            let (r, c) = if mv.dir() == ACROSS { (row, col + k) } else { (row + k, col) };
            plane[idx(r, c)] = 1.0;
        }
    }
}

/// The frame of the transposed position (rows become columns): every plane is transposed and
/// the across and down cross-set planes trade places. The game is the same game, so a net
/// should value both alike; training on both halves its need to learn it.
pub fn transpose(frame: &mut [f32]) {
    assert_eq!(frame.len(), FRAME_LEN, "a frame is FRAME_LEN floats");
    for p in 0..PLANES {
        let plane = &mut frame[p * SQUARES..][..SQUARES];
        for r in 0..DIM {
            for c in r + 1..DIM {
                plane.swap(idx(r, c), idx(c, r));
            }
        }
    }
    let (head, tail) = frame.split_at_mut(plane::CROSS_DOWN * SQUARES);
    head[plane::CROSS_ACROSS * SQUARES..].swap_with_slice(&mut tail[..LETTERS * SQUARES]);
}
