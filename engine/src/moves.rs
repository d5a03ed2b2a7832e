//! A move as a small `Copy` value, its notation, and the total order used to rank moves.
//!
//! # Design notes
//!
//! `Move` (a 36-byte `Copy` value: the word's tiles indexed by square in its lane, so the generator
//! copies its buffer whole), notation (`8D WORD`, `D8 Q(U)OD`, `-TILES`, `-`), and `rank`, the
//! total order on moves.

use crate::board::{ACROSS, DIM, DOWN, Dir};
use crate::tiles::{BLANK_BIT, Distribution};
use std::cmp::Ordering;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    Place,
    Exchange,
    Pass,
}

/// One move. For a placement, `tiles[start..start + len]` is the whole main word along `dir`
/// in `lane`, indexed by square: 0 = a tile already on the board (played through), else the
/// tile placed (`BLANK_BIT` set for a blank); every other entry is 0. For an exchange
/// (`start` 0), `tiles[..len]` are the rack tiles thrown back (0 = blank).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Move {
    pub kind: Kind,
    pub dir: u8,
    pub lane: u8,
    pub start: u8,
    pub len: u8,
    pub tiles: [u8; DIM],
    pub score: i32,
    /// Static equity in millipoints (score, leave and adjustments); integer so that ranking is
    /// a total, platform-independent order.
    pub equity: i32,
}

impl Move {
    pub const PASS: Move =
        Move { kind: Kind::Pass, dir: 0, lane: 0, start: 0, len: 0, tiles: [0; DIM], score: 0, equity: 0 };

    pub fn exchange(tiles: &[u8]) -> Move {
        let mut m = Move { kind: Kind::Exchange, len: tiles.len() as u8, ..Move::PASS };
        m.tiles[..tiles.len()].copy_from_slice(tiles);
        m
    }

    pub fn dir(&self) -> Dir {
        self.dir as Dir
    }
    pub fn tiles(&self) -> &[u8] {
        &self.tiles[self.start as usize..(self.start + self.len) as usize]
    }
    /// (row, col) of the first square of the main word.
    pub fn origin(&self) -> (usize, usize) {
        if self.dir() == ACROSS {
            (self.lane as usize, self.start as usize)
        } else {
            (self.start as usize, self.lane as usize)
        }
    }
    /// Tiles taken from the rack (placed or exchanged); blanks as rack blanks (0).
    pub fn rack_tiles(&self) -> impl Iterator<Item = u8> + '_ {
        let place = self.kind == Kind::Place;
        self.tiles()
            .iter()
            .filter(move |&&t| !place || t != 0)
            .map(move |&t| if place && t & BLANK_BIT != 0 { 0 } else { t })
    }
    /// The tiles `rack` keeps after this move, sorted.
    pub fn leave(&self, rack: &[u8]) -> Vec<u8> {
        let mut left = rack.to_vec();
        for t in self.rack_tiles() {
            if let Some(k) = left.iter().position(|&x| x == t) {
                left.swap_remove(k);
            }
        }
        left.sort_unstable();
        left
    }

    pub fn tiles_used(&self) -> usize {
        match self.kind {
            Kind::Place => self.tiles().iter().filter(|&&t| t != 0).count(),
            Kind::Exchange | Kind::Pass => 0,
        }
    }

    /// Coordinate: `8D` across (row then column letter), `D8` down; empty for non-placements.
    pub fn coord(&self) -> String {
        let (row, col) = self.origin();
        let col = (b'A' + col as u8) as char;
        if self.dir() == ACROSS { format!("{}{col}", row + 1) } else { format!("{col}{}", row + 1) }
    }

    /// The word with played-through tiles in parentheses, e.g. `Q(U)OD`; `board` supplies
    /// those tiles.
    pub fn word(&self, dist: &Distribution, board_tile: impl Fn(usize, usize) -> u8) -> String {
        let mut s = String::new();
        let mut open = false;
        for (k, &t) in self.tiles().iter().enumerate() {
            let through = t == 0;
            if through != open {
                s.push(if through { '(' } else { ')' });
                open = through;
            }
            let tile = if through {
                let (row, col) = self.origin();
                if self.dir() == ACROSS { board_tile(row, col + k) } else { board_tile(row + k, col) }
            } else {
                t
            };
            s.push(dist.board_char(tile));
        }
        if open {
            s.push(')');
        }
        s
    }

    /// Full notation: `8D WORD`, `-TILES` for an exchange, `-` for a pass.
    pub fn notation(&self, dist: &Distribution, board_tile: impl Fn(usize, usize) -> u8) -> String {
        match self.kind {
            Kind::Place => format!("{} {}", self.coord(), self.word(dist, board_tile)),
            Kind::Exchange => format!("-{}", dist.rack_string(self.tiles())),
            Kind::Pass => "-".to_string(),
        }
    }
}

/// Ranking: higher equity first, then higher score, then a fixed order on the move itself, so
/// that equal-equity choices never depend on generation order or thread count.
pub fn rank(a: &Move, b: &Move) -> Ordering {
    b.equity.cmp(&a.equity).then(b.score.cmp(&a.score)).then_with(|| key(a).cmp(&key(b)))
}

fn key(m: &Move) -> (u8, u8, u8, u8, u8, [u8; DIM]) {
    let kind = match m.kind {
        Kind::Place => 0,
        Kind::Exchange => 1,
        Kind::Pass => 2,
    };
    (kind, m.dir, m.lane, m.start, m.len, m.tiles)
}

/// Parse a coordinate: `8D` (across) or `D8` (down) into (dir, row, col).
pub fn parse_coord(s: &str) -> Option<(Dir, usize, usize)> {
    if !s.is_ascii() {
        return None;
    }
    let b = s.as_bytes();
    let first = *b.first()?;
    let (dir, letter, digits) =
        if first.is_ascii_digit() { (ACROSS, *b.last()?, &s[..s.len() - 1]) } else { (DOWN, first, &s[1..]) };
    let col = letter.to_ascii_uppercase().checked_sub(b'A')? as usize;
    let row = digits.parse::<usize>().ok()?.checked_sub(1)?;
    (row < DIM && col < DIM && !digits.starts_with('+')).then_some((dir, row, col))
}
