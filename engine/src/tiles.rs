//! Machine letters and the tile distribution.
//!
//! A tile is a `u8`: `0` is the blank on a rack (and "empty" on a board square), `1..=n` are the
//! letters in the order of the distribution file, and a blank standing for letter `l` on the
//! board is `l | BLANK_BIT`. Nothing outside the distribution file knows which letters exist.
//!
//! # Design notes
//!
//! machine letters and the `Distribution` (read from `lexica/*.dist`). A tile is a `u8`: 0 = blank
//! on a rack / empty on the board, `1..n` = letters in file order, `l | BLANK_BIT` = a blank
//! standing for `l` on the board. Nothing else in the engine knows what the letters are.

use crate::error::{DataError, Located};
use std::path::Path;

/// Set on a board tile that is a blank standing for the letter in the low bits.
pub const BLANK_BIT: u8 = 0x80;
/// The blank on a rack, in a leave, or in an exchange.
pub const BLANK: u8 = 0;
/// Most letters a distribution may hold (cross-sets are `u64` bitmasks over letters).
pub const MAX_LETTERS: usize = 63;
/// A tile the reader cannot see: in a player's view of the opponent's racks and exchanges, or
/// in a log's exchange of tiles it does not name. No rack or board tile has this value
/// (letters are below 64, board blanks have bit 7 set).
pub const HIDDEN: u8 = 0x7F;
/// Tiles on a full rack.
pub const RACK_SIZE: usize = 7;

/// Strip the blank designation: the letter a board tile reads as.
#[inline]
pub fn letter_of(tile: u8) -> u8 {
    tile & !BLANK_BIT
}

/// A set of tiles as counts indexed by tile (index 0 = blanks).
pub type TileCounts = [u8; MAX_LETTERS + 1];

/// Letter labels, counts, scores and vowels of one tile set (e.g. English Scrabble).
#[derive(Clone, Debug, PartialEq)]
pub struct Distribution {
    labels: Vec<char>,
    counts: Vec<u8>,
    scores: Vec<u8>,
    vowels: u64,
}

impl Distribution {
    /// Parse the text format: `letter count score vowel` per line, `#` comments, the blank as `?`.
    pub fn parse(text: &str, source: &str) -> Result<Self, DataError> {
        let mut labels = vec!['?'];
        let mut counts = vec![0];
        let mut scores = vec![0];
        let mut vowels = 0u64;
        let mut saw_blank = false;
        for (i, raw) in text.lines().enumerate() {
            let at = Located::new(source, i + 1);
            let line = raw.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.len() != 4 {
                return Err(at.err("expected `letter count score vowel`"));
            }
            let mut chars = f[0].chars();
            let (Some(label), None) = (chars.next(), chars.next()) else {
                return Err(at.err(format!("letter `{}` must be one character", f[0])));
            };
            let num = |s: &str, what: &str| s.parse::<u8>().map_err(|_| at.err(format!("bad {what} `{s}`")));
            let (count, score, vowel) = (num(f[1], "count")?, num(f[2], "score")?, num(f[3], "vowel flag")?);
            if vowel > 1 {
                return Err(at.err("vowel flag must be 0 or 1"));
            }
            if label == '?' {
                if saw_blank {
                    return Err(at.err("the blank `?` is listed twice"));
                }
                saw_blank = true;
                counts[0] = count;
                scores[0] = score;
                continue;
            }
            if !label.is_alphabetic() || !label.is_uppercase() || label.to_lowercase().count() != 1 {
                return Err(at.err(format!("letter `{label}` must be an uppercase letter")));
            }
            if labels.contains(&label) {
                return Err(at.err(format!("letter `{label}` is listed twice")));
            }
            if labels.len() > MAX_LETTERS {
                return Err(at.err(format!("more than {MAX_LETTERS} letters")));
            }
            if vowel == 1 {
                vowels |= 1 << labels.len();
            }
            labels.push(label);
            counts.push(count);
            scores.push(score);
        }
        if labels.len() < 2 {
            return Err(DataError::new(source, "no letters defined"));
        }
        Ok(Self { labels, counts, scores, vowels })
    }

    pub fn load(path: &Path) -> Result<Self, DataError> {
        let text = crate::error::read_text(path)?;
        Self::parse(&text, &path.display().to_string())
    }

    /// The standard English distribution shipped in `lexica/english.dist`.
    pub fn english() -> Self {
        Self::parse(include_str!("../../lexica/english.dist"), "lexica/english.dist")
            .expect("shipped distribution parses")
    }

    /// Number of tile kinds including the blank (tile values are `0..size()`).
    pub fn size(&self) -> usize {
        self.labels.len()
    }
    /// Letter tiles `1..size()`.
    pub fn letters(&self) -> std::ops::Range<u8> {
        1..self.labels.len() as u8
    }
    /// Bitmask with one bit per letter (bit `l` for letter `l`).
    pub fn all_letters_mask(&self) -> u64 {
        ((1u64 << self.labels.len()) - 1) & !1
    }
    pub fn count(&self, tile: u8) -> u8 {
        self.counts[tile as usize]
    }
    /// Face value; a designated blank on the board scores 0.
    #[inline]
    pub fn score(&self, tile: u8) -> i32 {
        if tile & BLANK_BIT != 0 { 0 } else { self.scores[tile as usize] as i32 }
    }
    pub fn is_vowel(&self, tile: u8) -> bool {
        tile & BLANK_BIT == 0 && self.vowels >> tile & 1 == 1
    }

    /// The uppercase tile for a letter label, ignoring case.
    pub fn letter(&self, c: char) -> Option<u8> {
        let up = c.to_uppercase().next()?;
        self.labels.iter().skip(1).position(|&l| l == up).map(|i| i as u8 + 1)
    }

    /// A board tile from its notation: uppercase = letter, lowercase = blank standing for it.
    pub fn board_tile(&self, c: char) -> Option<u8> {
        let t = self.letter(c)?;
        Some(if c.is_lowercase() { t | BLANK_BIT } else { t })
    }

    /// Face value of every tile kind, blank first.
    pub fn scores(&self) -> &[u8] {
        &self.scores
    }

    /// A rack tile from its notation: a letter (either case) or `?` for the blank.
    pub fn rack_tile(&self, c: char) -> Option<u8> {
        if c == '?' { Some(BLANK) } else { self.letter(c) }
    }

    /// Board notation of a tile: uppercase letter, lowercase for a designated blank.
    pub fn board_char(&self, tile: u8) -> char {
        let c = self.labels[letter_of(tile) as usize];
        if tile & BLANK_BIT != 0 { c.to_lowercase().next().unwrap_or(c) } else { c }
    }

    /// Rack notation of a tile: the letter, or `?` for the blank.
    pub fn rack_char(&self, tile: u8) -> char {
        self.labels[tile as usize]
    }

    /// Parse a rack such as `AEIN?RS`; `line` names where it came from for errors.
    pub fn parse_rack(&self, s: &str) -> Result<Vec<u8>, String> {
        s.chars()
            .map(|c| self.rack_tile(c).ok_or_else(|| format!("`{c}` is not a tile of this distribution")))
            .collect()
    }

    pub fn rack_string(&self, tiles: &[u8]) -> String {
        tiles.iter().map(|&t| self.rack_char(t)).collect()
    }
}
