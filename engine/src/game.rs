//! Games: the bag, racks, turns, scoring and the end-of-game rules.
//!
//! Rules: bingo (all seven tiles) +50; exchanges only with at least 7 tiles in the bag; going
//! out with the bag empty scores twice the opponent's rack; six consecutive scoreless turns end
//! the game with each rack's value subtracted from its owner.
//!
//! # Design notes
//!
//! `Bag`, `Game` (turns, scoring, end of game), per-turn history. A finished game with its
//! seating is a `record::GameRecord`.

use crate::board::Board;
use crate::leaves::RackLeaves;
use crate::movegen::{Ctx, Generator, Mode, Request};
use crate::moves::{Kind, Move};
use crate::rng::Rng;
use crate::tiles::RACK_SIZE;
use crate::tiles::{BLANK, BLANK_BIT, Distribution, TileCounts, letter_of};
use thiserror::Error;

pub const MIN_BAG_TO_EXCHANGE: usize = 7;
pub const MAX_SCORELESS_TURNS: u8 = 6;

/// The tiles not yet drawn, in draw order (the next tile drawn is the last), plus the RNG that
/// put them there and that places exchanged tiles back.
#[derive(Clone, Debug)]
pub struct Bag {
    tiles: Vec<u8>,
    rng: Rng,
}

impl Bag {
    /// A full bag for `dist`, shuffled from `seed`.
    pub fn full(dist: &Distribution, seed: u64) -> Self {
        let tiles: Vec<u8> =
            (0..dist.size() as u8).flat_map(|t| std::iter::repeat_n(t, dist.count(t) as usize)).collect();
        Self::from_tiles(tiles, seed)
    }
    /// A bag of the given tiles, shuffled from `seed`.
    pub fn from_tiles(mut tiles: Vec<u8>, seed: u64) -> Self {
        let mut rng = Rng::new(seed);
        tiles.sort_unstable();
        rng.shuffle(&mut tiles);
        Self { tiles, rng }
    }
    pub fn len(&self) -> usize {
        self.tiles.len()
    }
    pub fn is_empty(&self) -> bool {
        self.tiles.is_empty()
    }
    pub fn tiles(&self) -> &[u8] {
        &self.tiles
    }
    /// Draw until `rack` holds `RACK_SIZE` tiles or the bag is empty.
    pub fn refill(&mut self, rack: &mut Vec<u8>) {
        while rack.len() < RACK_SIZE {
            match self.tiles.pop() {
                Some(t) => rack.push(t),
                None => break,
            }
        }
    }
    /// Put tiles back at random places.
    pub fn put_back(&mut self, tiles: &[u8]) {
        for &t in tiles {
            let at = self.rng.below(self.tiles.len() as u64 + 1) as usize;
            self.tiles.insert(at, t);
        }
    }
}

#[derive(Debug, Error, Clone, PartialEq)]
pub enum MoveError {
    #[error("the game is over")]
    GameOver,
    #[error("tile not on the rack")]
    NotOnRack,
    #[error("exchange with fewer than {MIN_BAG_TO_EXCHANGE} tiles in the bag")]
    ExchangeBagTooSmall,
    #[error("not a legal placement here")]
    IllegalPlacement,
}

/// How a game ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// `player` used their last tile with the bag empty.
    WentOut { player: usize },
    /// Six scoreless turns in a row.
    Scoreless,
}

/// One turn of a finished or running game, for logs. (Played-through tiles never change, so
/// a move's notation can be written from the final board.)
#[derive(Clone, Debug)]
pub struct Turn {
    pub player: usize,
    pub rack: Vec<u8>,
    pub mv: Move,
    pub score: i32,
    pub total: i32,
    pub bag_after: usize,
}

/// Adjustments made when the game ends, for GCG end lines.
#[derive(Clone, Debug, PartialEq)]
pub struct EndAdjustment {
    pub player: usize,
    /// The rack counted (the opponent's when going out, one's own after scoreless turns).
    pub rack: Vec<u8>,
    pub points: i32,
    pub total: i32,
}

#[derive(Clone, Debug)]
pub struct Game {
    pub board: Board,
    pub racks: [Vec<u8>; 2],
    pub scores: [i32; 2],
    pub bag: Bag,
    pub on_turn: usize,
    pub scoreless: u8,
    pub end: Option<End>,
    pub history: Vec<Turn>,
    pub adjustments: Vec<EndAdjustment>,
}

impl Game {
    /// A new game: bag shuffled from `seed`, seven tiles to each player (first player first).
    pub fn new(dist: &Distribution, seed: u64) -> Self {
        let mut bag = Bag::full(dist, seed);
        let mut racks = [Vec::with_capacity(RACK_SIZE), Vec::with_capacity(RACK_SIZE)];
        bag.refill(&mut racks[0]);
        bag.refill(&mut racks[1]);
        Self {
            board: Board::new(),
            racks,
            scores: [0; 2],
            bag,
            on_turn: 0,
            scoreless: 0,
            end: None,
            history: Vec::new(),
            adjustments: Vec::new(),
        }
    }

    pub fn is_over(&self) -> bool {
        self.end.is_some()
    }

    pub fn rack_value(dist: &Distribution, rack: &[u8]) -> i32 {
        rack.iter().map(|&t| dist.score(t)).sum()
    }

    /// Check that `mv` is legal for the player on turn (placements against the full move list).
    pub fn check(&self, ctx: Ctx, mv: &Move, mg: &mut Generator) -> Result<(), MoveError> {
        if self.is_over() {
            return Err(MoveError::GameOver);
        }
        let mut rack = self.racks[self.on_turn].clone();
        for t in mv.rack_tiles() {
            match rack.iter().position(|&x| x == t) {
                Some(i) => {
                    rack.swap_remove(i);
                }
                None => return Err(MoveError::NotOnRack),
            }
        }
        match mv.kind {
            Kind::Pass => Ok(()),
            Kind::Exchange if self.bag.len() < MIN_BAG_TO_EXCHANGE => Err(MoveError::ExchangeBagTooSmall),
            Kind::Exchange => Ok(()),
            Kind::Place => {
                let leaves = RackLeaves::new(&self.racks[self.on_turn], |_| 0);
                let req = Request {
                    board: &self.board,
                    rack: &self.racks[self.on_turn],
                    leaves: &leaves,
                    can_exchange: false,
                    opening_vowel_penalty: 0,
                };
                let same = |m: &Move| {
                    m.kind == Kind::Place
                        && m.dir == mv.dir
                        && m.lane == mv.lane
                        && m.start == mv.start
                        && m.tiles() == mv.tiles()
                };
                if mg.generate(ctx, &req, Mode::All).iter().any(same) {
                    Ok(())
                } else {
                    Err(MoveError::IllegalPlacement)
                }
            }
        }
    }

    /// Play a move for the player on turn. The move must be legal (see `check`); its score is
    /// taken from `mv.score`, which the generator computed.
    pub fn play(&mut self, ctx: Ctx, mv: &Move) {
        debug_assert!(!self.is_over());
        let p = self.on_turn;
        let rack_before = self.racks[p].clone();
        for t in mv.rack_tiles() {
            let i = self.racks[p].iter().position(|&x| x == t).expect("move tiles are on the rack");
            self.racks[p].swap_remove(i);
        }
        match mv.kind {
            Kind::Place => {
                self.board.place(mv.dir(), mv.lane as usize, mv.start as usize, mv.tiles(), ctx.kwg, ctx.dist);
                self.scores[p] += mv.score;
                self.bag.refill(&mut self.racks[p]);
            }
            Kind::Exchange => {
                let thrown: Vec<u8> = mv.tiles().to_vec();
                self.bag.refill(&mut self.racks[p]);
                self.bag.put_back(&thrown);
            }
            Kind::Pass => {}
        }
        self.scoreless = if mv.kind == Kind::Place && mv.score > 0 { 0 } else { self.scoreless + 1 };
        self.history.push(Turn {
            player: p,
            rack: rack_before,
            mv: *mv,
            score: mv.score,
            total: self.scores[p],
            bag_after: self.bag.len(),
        });
        if self.racks[p].is_empty() && self.bag.is_empty() {
            let opp = self.racks[1 - p].clone();
            let bonus = 2 * Self::rack_value(ctx.dist, &opp);
            self.scores[p] += bonus;
            self.adjustments.push(EndAdjustment { player: p, rack: opp, points: bonus, total: self.scores[p] });
            self.end = Some(End::WentOut { player: p });
        } else if self.scoreless >= MAX_SCORELESS_TURNS {
            for q in [p, 1 - p] {
                let rack = self.racks[q].clone();
                let v = Self::rack_value(ctx.dist, &rack);
                self.scores[q] -= v;
                self.adjustments.push(EndAdjustment { player: q, rack, points: -v, total: self.scores[q] });
            }
            self.end = Some(End::Scoreless);
        }
        self.on_turn = 1 - p;
    }
}

/// Tile counts of a board's tiles (blanks counted as blanks).
pub fn board_counts(board: &Board) -> TileCounts {
    let mut c = [0u8; 64];
    for row in board.rows() {
        for &t in row {
            if t != 0 {
                let k = if t & BLANK_BIT != 0 { BLANK } else { letter_of(t) };
                c[k as usize] += 1;
            }
        }
    }
    c
}
