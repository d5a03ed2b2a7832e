//! The 15x15 board: premium layout (read from a file), tiles, and the cross-sets kept per square.
//!
//! Everything is stored twice, once per direction, so that every lane (a row for horizontal
//! plays, a column for vertical ones) is a contiguous slice: `[dir][lane * DIM + pos]`.
//! Invariant: after every `place`, `cross[d]`/`cross_score[d]` of every square equal what a
//! full recomputation would give (only the squares the move can have changed are recomputed),
//! and each lane's key is that of its squares as they stand (every write keeps it).
//!
//! # Design notes
//!
//! `Layout` (premiums, read from `lexica/*.layout`) and `Board`: tiles, cross-sets and
//! cross-scores, each stored once per direction so that every lane is a contiguous slice. `place`
//! recomputes only the squares at either end of a run of tiles holding a placed tile and returns
//! the lanes it touched; the invariant (cross-sets equal a full recomputation) is tested after
//! every move of seeded games. `lane_key` digests what plays along one lane see (tiles, cross-sets,
//! cross-scores): a XOR of one hash per square, kept up to date by every write, so that reading it
//! costs nothing; `place_with` takes cross-sets from a `CrossMemo` (for searches that play the same
//! words beside the same words again and again: direct-mapped, 256 KB, one probe that stays in L2;
//! a set that lost its slot is walked again) and can keep an undo list for `unplace`.

use crate::error::{DataError, Located};
use crate::lexicon::Kwg;
use crate::rng::mix;
use crate::tiles::{Distribution, letter_of};
use std::path::Path;

pub const DIM: usize = 15;
pub const SQUARES: usize = DIM * DIM;

/// Direction of a play: `0` across (horizontal), `1` down (vertical).
pub type Dir = usize;
pub const ACROSS: Dir = 0;
pub const DOWN: Dir = 1;

/// The `changed_lanes` bit of (`dir`, `lane`).
#[inline]
pub fn lane_bit(dir: Dir, lane: usize) -> u32 {
    1 << (dir * DIM + lane)
}

/// Index of (lane, pos) in direction `dir`, and the same square seen from the other direction
/// is `idx(lane=pos, pos=lane)`.
#[inline]
pub fn idx(lane: usize, pos: usize) -> usize {
    lane * DIM + pos
}

/// Letter and word multipliers of every square, and the start square.
#[derive(Clone, Debug, PartialEq)]
pub struct Layout {
    pub letter_mult: [[u8; SQUARES]; 2],
    pub word_mult: [[u8; SQUARES]; 2],
    /// (row, col) of the square the first play must cover.
    pub start: (usize, usize),
}

impl Layout {
    /// Parse the layout format: one row of 15 characters per board line; `=` triple word,
    /// `-` double word, `"` triple letter, `'` double letter, `*` start (double word), `.` plain.
    pub fn parse(text: &str, source: &str) -> Result<Self, DataError> {
        let mut lm = [[1u8; SQUARES]; 2];
        let mut wm = [[1u8; SQUARES]; 2];
        let mut start = None;
        let mut row = 0;
        for (i, raw) in text.lines().enumerate() {
            let at = Located::new(source, i + 1);
            let line = raw.trim_end();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            if row == DIM {
                return Err(at.err(format!("more than {DIM} rows")));
            }
            if line.chars().count() != DIM {
                return Err(at.err(format!("row has {} squares, expected {DIM}", line.chars().count())));
            }
            for (col, c) in line.chars().enumerate() {
                let (l, w) = match c {
                    '.' => (1, 1),
                    '\'' => (2, 1),
                    '"' => (3, 1),
                    '-' => (1, 2),
                    '=' => (1, 3),
                    '*' => {
                        if start.replace((row, col)).is_some() {
                            return Err(at.err("more than one start square `*`"));
                        }
                        (1, 2)
                    }
                    _ => return Err(at.err(format!("unknown square `{c}`"))),
                };
                lm[ACROSS][idx(row, col)] = l;
                wm[ACROSS][idx(row, col)] = w;
                lm[DOWN][idx(col, row)] = l;
                wm[DOWN][idx(col, row)] = w;
            }
            row += 1;
        }
        if row != DIM {
            return Err(DataError::new(source, format!("{row} rows, expected {DIM}")));
        }
        let start = start.ok_or_else(|| DataError::new(source, "no start square `*`"))?;
        Ok(Self { letter_mult: lm, word_mult: wm, start })
    }

    pub fn load(path: &Path) -> Result<Self, DataError> {
        Self::parse(&crate::error::read_text(path)?, &path.display().to_string())
    }

    /// The standard layout shipped in `lexica/standard15.layout`.
    pub fn standard() -> Self {
        Self::parse(include_str!("../../lexica/standard15.layout"), "lexica/standard15.layout")
            .expect("shipped layout parses")
    }

    /// Whether (row, col) is a letter premium (double or triple letter).
    pub fn is_letter_premium(&self, row: usize, col: usize) -> bool {
        self.letter_mult[ACROSS][idx(row, col)] > 1
    }
}

/// Tiles on the board and the cross-sets derived from them.
#[derive(Clone, Debug, PartialEq)]
pub struct Board {
    /// `tiles[dir][idx(lane, pos)]`: 0 = empty, else a board tile.
    tiles: [[u8; SQUARES]; 2],
    /// Letters allowed on an empty square by the perpendicular word when playing along `dir`.
    cross: [[u64; SQUARES]; 2],
    /// Sum of the perpendicular word's existing tile scores, or -1 when no perpendicular word
    /// would be formed.
    cross_score: [[i16; SQUARES]; 2],
    tile_count: usize,
    /// `keys[dir * DIM + lane]`: the XOR of `square_key` over the lane's squares, kept by every
    /// write (see `lane_key`).
    keys: [u64; 2 * DIM],
}

/// A square as seen along one direction, as it was before a write: what `Board::unplace` puts
/// back.
#[derive(Clone, Copy, Debug)]
pub struct Saved {
    dir: u8,
    /// `idx(lane, pos)` along `dir`.
    i: u8,
    tile: u8,
    cross_score: i16,
    cross: u64,
    /// The lane's key.
    key: u64,
}

/// Where writes to a board record what they overwrite: nowhere (`()`), or a list to undo them
/// from (`Vec<Saved>`).
pub trait Journal {
    fn save(&mut self, saved: Saved);
}

impl Journal for () {
    #[inline]
    fn save(&mut self, _: Saved) {}
}

impl Journal for Vec<Saved> {
    #[inline]
    fn save(&mut self, saved: Saved) {
        self.push(saved);
    }
}

/// One square's part of its lane's key: its place, tile, cross-set and cross-score as seen
/// along `dir`. Two independent hashes, so that the lane key needs no more than a XOR.
#[inline]
fn square_key(dir: Dir, i: usize, tile: u8, cross: u64, cross_score: i16) -> u64 {
    let place = ((dir * SQUARES + i) as u64) << 32;
    mix(cross ^ place) ^ mix(!(place | (tile as u64) << 16 | cross_score as u16 as u64))
}

impl Board {
    pub fn new() -> Self {
        let mut board = Self {
            tiles: [[0; SQUARES]; 2],
            cross: [[!0; SQUARES]; 2],
            cross_score: [[-1; SQUARES]; 2],
            tile_count: 0,
            keys: [0; 2 * DIM],
        };
        for dir in [ACROSS, DOWN] {
            for i in 0..SQUARES {
                board.keys[dir * DIM + i / DIM] ^= square_key(dir, i, 0, !0, -1);
            }
        }
        board
    }

    /// Give square `pos` of (`dir`, `lane`), as seen along `dir`, this tile, cross-set and
    /// cross-score, and its lane the key that goes with them; what it overwrites goes to
    /// `journal`.
    #[inline]
    #[allow(clippy::too_many_arguments)]
    fn write(
        &mut self,
        journal: &mut impl Journal,
        dir: Dir,
        lane: usize,
        pos: usize,
        tile: u8,
        cross: u64,
        cross_score: i16,
    ) {
        let i = idx(lane, pos);
        let (was_tile, was_cross, was_score) = (self.tiles[dir][i], self.cross[dir][i], self.cross_score[dir][i]);
        let key = &mut self.keys[dir * DIM + lane];
        journal.save(Saved {
            dir: dir as u8,
            i: i as u8,
            tile: was_tile,
            cross_score: was_score,
            cross: was_cross,
            key: *key,
        });
        *key ^= square_key(dir, i, was_tile, was_cross, was_score) ^ square_key(dir, i, tile, cross, cross_score);
        (self.tiles[dir][i], self.cross[dir][i], self.cross_score[dir][i]) = (tile, cross, cross_score);
    }

    #[inline]
    pub fn at(&self, row: usize, col: usize) -> u8 {
        self.tiles[ACROSS][idx(row, col)]
    }
    /// The tiles of one lane.
    #[inline]
    pub fn lane_tiles(&self, dir: Dir, lane: usize) -> &[u8] {
        &self.tiles[dir][lane * DIM..lane * DIM + DIM]
    }
    #[inline]
    pub fn lane_cross(&self, dir: Dir, lane: usize) -> &[u64] {
        &self.cross[dir][lane * DIM..lane * DIM + DIM]
    }
    #[inline]
    pub fn lane_cross_score(&self, dir: Dir, lane: usize) -> &[i16] {
        &self.cross_score[dir][lane * DIM..lane * DIM + DIM]
    }
    pub fn is_empty(&self) -> bool {
        self.tile_count == 0
    }
    pub fn tile_count(&self) -> usize {
        self.tile_count
    }

    /// Put a tile without updating cross-sets (for bulk loading; call `recompute_all` after).
    pub fn set(&mut self, row: usize, col: usize, tile: u8) {
        let was = self.tiles[ACROSS][idx(row, col)];
        let (i, j) = (idx(row, col), idx(col, row));
        self.write(&mut (), ACROSS, row, col, tile, self.cross[ACROSS][i], self.cross_score[ACROSS][i]);
        self.write(&mut (), DOWN, col, row, tile, self.cross[DOWN][j], self.cross_score[DOWN][j]);
        self.tile_count = self.tile_count + (tile != 0) as usize - (was != 0) as usize;
    }

    /// Place tiles along `dir` in `lane` from `start` (0 = square already occupied) and update
    /// the cross-sets the move changed: only squares at either end of a run of tiles that now
    /// holds a placed tile can see a different word beside them. Returns the lanes touched, as
    /// bits `dir * DIM + lane`: a superset of `changed_lanes` against the board before.
    pub fn place(&mut self, dir: Dir, lane: usize, start: usize, tiles: &[u8], kwg: &Kwg, dist: &Distribution) -> u32 {
        self.place_with(dir, lane, start, tiles, &mut &*kwg, dist, &mut ())
    }

    /// Take back the plays placed since `undo` held `mark` entries, latest first.
    pub fn unplace(&mut self, undo: &mut Vec<Saved>, mark: usize) {
        for s in undo.drain(mark..).rev() {
            let (dir, i) = (s.dir as usize, s.i as usize);
            if dir == ACROSS && s.tile == 0 && self.tiles[ACROSS][i] != 0 {
                self.tile_count -= 1;
            }
            (self.tiles[dir][i], self.cross[dir][i], self.cross_score[dir][i]) = (s.tile, s.cross, s.cross_score);
            self.keys[dir * DIM + i / DIM] = s.key;
        }
    }

    /// `place`, taking cross-sets from `cross` (e.g. a [`CrossMemo`]) and adding to `journal`
    /// what it overwrites: `&mut ()` keeps nothing; a `Vec<Saved>` lets `unplace` take the play
    /// back, for a search that walks down and up a tree of plays on one board instead of
    /// copying it at every node.
    #[allow(clippy::too_many_arguments)]
    pub fn place_with(
        &mut self,
        dir: Dir,
        lane: usize,
        start: usize,
        tiles: &[u8],
        cross: &mut impl CrossSets,
        dist: &Distribution,
        journal: &mut impl Journal,
    ) -> u32 {
        let other = 1 - dir;
        let mut touched = lane_bit(dir, lane);
        for (k, &t) in tiles.iter().enumerate() {
            if t != 0 {
                let pos = start + k;
                // The square is taken: no play in either direction may put a tile there.
                self.write(journal, dir, lane, pos, t, 0, -1);
                self.write(journal, other, pos, lane, t, 0, -1);
                self.tile_count += 1;
                touched |= lane_bit(other, pos) | self.recompute_run_ends(other, pos, lane, cross, dist, journal);
            }
        }
        if let Some(first) = tiles.iter().position(|&t| t != 0) {
            touched |= self.recompute_run_ends(dir, lane, start + first, cross, dist, journal);
        }
        touched
    }

    /// Recompute the squares just before and after the run of tiles through `pos` in
    /// (`dir`, `lane`); the lanes (along `1 - dir`) those squares lie in.
    fn recompute_run_ends(
        &mut self,
        dir: Dir,
        lane: usize,
        pos: usize,
        cross: &mut impl CrossSets,
        dist: &Distribution,
        journal: &mut impl Journal,
    ) -> u32 {
        let (before, after) = self.run_ends(dir, lane, pos, pos);
        let mut touched = 0;
        for end in before.into_iter().chain(after) {
            self.recompute_square(dir, lane, end, cross, dist, journal);
            touched |= lane_bit(1 - dir, end);
        }
        touched
    }

    /// The empty squares just before `lo` and just after `hi` along (`dir`, `lane`), past
    /// the board's tiles, where the board has them.
    fn run_ends(&self, dir: Dir, lane: usize, mut lo: usize, mut hi: usize) -> (Option<usize>, Option<usize>) {
        let tiles = &self.tiles[dir][lane * DIM..lane * DIM + DIM];
        while lo > 0 && tiles[lo - 1] != 0 {
            lo -= 1;
        }
        while hi + 1 < DIM && tiles[hi + 1] != 0 {
            hi += 1;
        }
        (lo.checked_sub(1), (hi + 1 < DIM).then_some(hi + 1))
    }

    /// The lanes `place` would say it touched, for the same play, without placing it: the
    /// lanes whose `lane_key` may change.
    pub fn touched_by(&self, dir: Dir, lane: usize, start: usize, tiles: &[u8]) -> u32 {
        let other = 1 - dir;
        let ends = |(before, after): (Option<usize>, Option<usize>), along: Dir| {
            before.into_iter().chain(after).fold(0, |t, end| t | lane_bit(along, end))
        };
        let mut touched = lane_bit(dir, lane);
        for (k, _) in tiles.iter().enumerate().filter(|&(_, &t)| t != 0) {
            // Only the new tile joins this cross lane's run.
            touched |= lane_bit(other, start + k) | ends(self.run_ends(other, start + k, lane, lane), dir);
        }
        if tiles.iter().any(|&t| t != 0) {
            // After the play its whole span holds tiles.
            touched |= ends(self.run_ends(dir, lane, start, start + tiles.len() - 1), other);
        }
        touched
    }

    pub fn recompute_all(&mut self, kwg: &Kwg, dist: &Distribution) {
        for dir in [ACROSS, DOWN] {
            for lane in 0..DIM {
                self.recompute_lane(dir, lane, kwg, dist);
            }
        }
    }

    /// Recompute the cross-sets that words along (`dir`, `lane`) impose on plays in the other
    /// direction, i.e. `cross[1 - dir]` of this lane's squares.
    fn recompute_lane(&mut self, dir: Dir, lane: usize, kwg: &Kwg, dist: &Distribution) {
        for pos in 0..DIM {
            self.recompute_square(dir, lane, pos, &mut &*kwg, dist, &mut ());
        }
    }

    /// `cross[1 - dir]` and `cross_score[1 - dir]` of square `pos` of (`dir`, `lane`), from the
    /// tiles beside it in that lane.
    fn recompute_square(
        &mut self,
        dir: Dir,
        lane: usize,
        pos: usize,
        cross: &mut impl CrossSets,
        dist: &Distribution,
        journal: &mut impl Journal,
    ) {
        let other = 1 - dir;
        let tiles = &self.tiles[dir][lane * DIM..lane * DIM + DIM];
        let tile = tiles[pos];
        if tile != 0 {
            self.write(journal, other, pos, lane, tile, 0, -1);
            return;
        }
        let mut lo = pos;
        while lo > 0 && tiles[lo - 1] != 0 {
            lo -= 1;
        }
        let mut hi = pos + 1;
        while hi < DIM && tiles[hi] != 0 {
            hi += 1;
        }
        if lo == pos && hi == pos + 1 {
            self.write(journal, other, pos, lane, 0, !0, -1);
            return;
        }
        let (prefix, suffix) = (&tiles[lo..pos], &tiles[pos + 1..hi]);
        let score: i32 = prefix.iter().chain(suffix).map(|&t| dist.score(t)).sum();
        let set = cross.cross_set(prefix, suffix);
        self.write(journal, other, pos, lane, 0, set, score as i16);
    }

    /// Lanes where plays see a difference between `self` and `other`, as bits `dir * DIM +
    /// lane`: a tile, a cross-set or a cross-score of the lane's squares (as seen along `dir`)
    /// differs. A play in any other lane is legal on both boards or on neither, with the same
    /// score.
    pub fn changed_lanes(&self, other: &Board) -> u32 {
        let mut mask = 0;
        for dir in [ACROSS, DOWN] {
            for lane in 0..DIM {
                let r = lane * DIM..lane * DIM + DIM;
                if self.tiles[dir][r.clone()] != other.tiles[dir][r.clone()]
                    || self.cross[dir][r.clone()] != other.cross[dir][r.clone()]
                    || self.cross_score[dir][r.clone()] != other.cross_score[dir][r]
                {
                    mask |= 1 << (dir * DIM + lane);
                }
            }
        }
        mask
    }

    /// A 64-bit digest of what plays along (`dir`, `lane`) see: the lane's number and its
    /// squares' tiles, cross-sets and cross-scores (the state `changed_lanes` compares). On a
    /// board with tiles, two lanes with the same key admit the same plays with the same scores.
    /// Kept up to date by every write: reading it costs nothing.
    #[inline]
    pub fn lane_key(&self, dir: Dir, lane: usize) -> u64 {
        self.keys[dir * DIM + lane]
    }

    /// Every lane's `lane_key`, by bit `dir * DIM + lane`.
    #[inline]
    pub fn lane_keys(&self) -> &[u64; 2 * DIM] {
        &self.keys
    }

    /// Lanes/tiles as CGP-like rows, for debugging and tests.
    pub fn rows(&self) -> impl Iterator<Item = &[u8]> {
        self.tiles[ACROSS].chunks_exact(DIM)
    }
}

impl Default for Board {
    fn default() -> Self {
        Self::new()
    }
}

/// Where `Board::place_with` gets cross-sets: the word graph, or a memo in front of it.
pub trait CrossSets {
    /// Letters `x` such that `prefix x suffix` is a word.
    fn cross_set(&mut self, prefix: &[u8], suffix: &[u8]) -> u64;
}

impl CrossSets for &Kwg {
    fn cross_set(&mut self, prefix: &[u8], suffix: &[u8]) -> u64 {
        cross_set(self, prefix, suffix)
    }
}

/// Cross-sets already found, by the letters either side of the square. A search that plays the
/// same words beside the same words again and again (the endgame) walks the graph once for each.
/// Squares with more than `MEMO_LETTERS` letters beside them, rare, walk it every time: the
/// others' keys fit a `u64`. Direct-mapped, a slot per key: one probe, and a set that lost its
/// slot is walked again, which costs less than a hash map's probe sequence on every hit.
pub struct CrossMemo<'k> {
    kwg: &'k Kwg,
    /// (key with `MEMO_USED` set, cross-set); key 0 marks an empty slot.
    sets: Box<[(u64, u64)]>,
}

/// The most letters beside a square whose cross-set the memo holds: both lengths in four bits
/// each, then six bits a letter (62 bits in all).
const MEMO_LETTERS: usize = 9;

/// Marks a memo key as used, so that no key is 0.
const MEMO_USED: u64 = 1 << 63;

/// The memo's slots (a power of two): an endgame meets some thousands of cross-sets.
const MEMO_SLOTS: usize = 1 << 14;

impl<'k> CrossMemo<'k> {
    pub fn new(kwg: &'k Kwg) -> Self {
        Self { kwg, sets: vec![(0, 0); MEMO_SLOTS].into_boxed_slice() }
    }
}

impl CrossSets for CrossMemo<'_> {
    fn cross_set(&mut self, prefix: &[u8], suffix: &[u8]) -> u64 {
        if prefix.len() + suffix.len() > MEMO_LETTERS {
            return cross_set(self.kwg, prefix, suffix);
        }
        let key = prefix
            .iter()
            .chain(suffix)
            .fold((prefix.len() as u64) << 4 | suffix.len() as u64, |k, &t| k << 6 | letter_of(t) as u64)
            | MEMO_USED;
        let slot = &mut self.sets[(mix(key) >> (64 - MEMO_SLOTS.trailing_zeros())) as usize];
        if slot.0 != key {
            *slot = (key, cross_set(self.kwg, prefix, suffix));
        }
        slot.1
    }
}

/// Letters `x` such that `prefix x suffix` is a word.
fn cross_set(kwg: &Kwg, prefix: &[u8], suffix: &[u8]) -> u64 {
    // Node 0's children are the DAWG's root list.
    let mut node = 0;
    for &t in prefix {
        match kwg.step(node).child(letter_of(t)) {
            Some(n) => node = n,
            None => return 0,
        }
    }
    let before = kwg.step(node);
    let mut set = 0u64;
    let mut letters = before.kids();
    'letters: while letters != 0 {
        let x = letters.trailing_zeros() as u8;
        letters &= letters - 1;
        let Some(mut node) = before.child(x) else { continue };
        for &t in suffix {
            match kwg.step(node).child(letter_of(t)) {
                Some(m) => node = m,
                None => continue 'letters,
            }
        }
        if kwg.step(node).accepts() {
            set |= 1 << x;
        }
    }
    set
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The memo answers as the graph does, key after key, for more keys than it has slots:
    /// sets that lost their slot to another key are walked again, never mistaken.
    #[test]
    fn the_cross_memo_agrees_with_the_graph_through_evictions() {
        let words: Vec<Vec<u8>> = (0..216u8)
            .map(|n| vec![n / 36 + 1, n / 6 % 6 + 1, n % 6 + 1])
            .filter(|w| (w[0] + 2 * w[1] + w[2]) % 3 != 0)
            .collect();
        let kwg = Kwg::build(&words).unwrap();
        let mut memo = CrossMemo::new(&kwg);
        let sides: Vec<Vec<u8>> = (0..=3u32)
            .flat_map(|len| {
                (0..6usize.pow(len)).map(move |n| (0..len).map(|i| (n / 6usize.pow(i) % 6) as u8 + 1).collect())
            })
            .collect();
        let pairs: Vec<_> = sides.iter().flat_map(|p| sides.iter().map(move |s| (p, s))).collect();
        assert!(pairs.len() > 2 * MEMO_SLOTS);
        let mut nonempty = 0;
        for (prefix, suffix) in pairs.iter().chain(pairs.iter().rev()).filter(|(p, s)| p.len() + s.len() > 0) {
            let set = memo.cross_set(prefix, suffix);
            assert_eq!(set, cross_set(&kwg, prefix, suffix), "{prefix:?} _ {suffix:?}");
            nonempty += (set != 0) as usize;
        }
        assert!(nonempty > 100, "some squares admit letters ({nonempty})");
    }
}
