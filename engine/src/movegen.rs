//! Move generation: every legal placement (GADDAG anchor search), exchanges and the pass, with
//! exact scores and static equity; or only the best `n` by equity, searching anchors in order of
//! an admissible upper bound and stopping when no remaining anchor can beat the `n`-th best.
//!
//! Plays of all seven tiles are looked up in the lexicon's anagram index (`bingos`) rather
//! than searched for, and the graph search stops at six tiles: a blank on the rack makes the
//! seven-tile search the most expensive part of the whole generation.
//!
//! In best-move mode the plays of a rack holding a blank that spend it are found without the
//! graph: each window of empty squares is filled by looking up the rack's subsets, with the
//! letters played through, in the lexicon's word map (`word_map_anchor`), where a blank costs
//! one probe rather than a search per letter. The plays keeping every blank are the graph's.
//!
//! A blank is not a search of its own: the graph search puts a letter down as the rack's tile
//! while it holds one, else as a blank, and each way the blanks could lie on a word found is
//! listed when the word is (`found`).
//!
//! A placement is generated from the leftmost anchor among the squares it covers (going left
//! from an anchor never places a tile on another anchor), so each is produced once per
//! direction. A one-tile play is listed once: across if it forms an across word of two or more
//! letters, otherwise down.
//!
//! # Design notes
//!
//! `Generator`: all moves (in generation order, which is fixed; callers that show them sort with
//! `moves::rank`), or the best `n`, best first. GADDAG search from each anchor (going left never
//! places on another anchor, so each placement is found once per direction); an anchor right before
//! a run of board tiles is searched from the run's last tile (the `pivot`), so the graph walks the
//! run first and rules out at once the letters that cannot stand before it (from the anchor, every
//! left part of every word would be walked before the run). Best mode bounds every anchor
//! (`Generator::bound`: the best over the anchor's windows of empty squares, each from its lane's
//! tabled runs of tiles, `Runs`, and its placed tiles' coefficients kept sorted as it grows,
//! `Coefs`; each square's best tile from the rack that its cross-set and, beside tiles in the lane,
//! the GADDAG allows there: `caps`, `extension`), takes anchors from a heap of (bound, index) keys
//! of those that reach the threshold (`ranked`; about a fifth are searched, so the rest are never
//! sorted) and stops at the first whose bound is below the `n`-th best found (the `cut` field,
//! updated as moves are kept). A lane's runs and extension sets depend only on its tiles and the
//! graph: each lane's `LaneMemo` keeps them between calls, checked against the tiles and the
//! graph's process-unique `Kwg::id` (scores changing clears them all), and works out only letters
//! not asked before. The recursion (`extend`, `place`, `go_on`, compiled once per direction and
//! step layout) calls itself only where `worth` says a tile may go. It walks each letter path once:
//! a letter is put down as its own tile while the rack holds one, else as a blank, and which of a
//! found word's tiles the blanks stand for is settled when it is recorded (`found`:
//! `one_blank_ways` for one blank in play, `blank_ways` for more, and for the words that `bingos`
//! and the word map look up), each way its own move with its own score and rack slots. Walking each
//! way apart had cost half again as many steps on two-blank racks. Plays of all seven tiles
//! (bingos) are not searched for: `bingos` looks up the rack plus each window's played-through
//! letters in `anagrams` (each blank, at most two, standing for every letter), or in the word map
//! when it is on and either best mode runs or the map is already built (all-moves mode never builds
//! it: an endgame solve starts in 0.07 s, not 0.36; both ways list the same moves in the same
//! order, tested) (a window through one board tile or none by that letter's cached answer, with no
//! sort or key; one probe per blank but the last; with a blank on the rack, best mode bounds the
//! windows and looks them up best bound first until none can beat the best found), and the GADDAG
//! search stops at six tiles; with a blank on the rack the seven-tile search was most of the work.
//! Bounds are split by whether a play spends a blank, and by one blank or two: an anchor is
//! searched without it when plays spending it cannot reach the threshold. `generate_lanes` searches
//! only some lanes, ranking a known move from the others with what it finds (see
//! `Board::changed_lanes`: a lane whose tiles, cross-sets and cross-scores are unchanged has the
//! same plays with the same scores). Best mode on a rack holding a blank finds the plays spending
//! it in the word map instead of the graph (`Generator::word_map_anchor`): for each window of empty
//! squares whose leftmost anchor is the one searched, each distinct rack subset of the window's
//! size whose bound (its own tile scores on the window's squares, best on best, plus its own leave)
//! reaches the threshold is looked up with the letters played through, and each word found is
//! checked against the board letters and cross-sets, once per way of placing its blanks. One pass
//! per number of blanks spent, none first; that first pass, the plays keeping every blank, is the
//! graph's. The graph stays faster for plays without a blank (a window-by-window word-map search of
//! every rack was measured slower: docs/BENCHMARKS.md), and `set_word_map(false)` (`worker
//! --no-word-map`) turns the map off for machines short of memory. Invariant: every mode returns
//! exactly what the plain search of every lane would (tested against a brute-force reference,
//! against the sorted full list, and word map against graph). The generator owns its buffers; after
//! the first call it allocates nothing.

use crate::board::{ACROSS, Board, DIM, DOWN, Layout, SQUARES, idx};
use crate::leaves::RackLeaves;
use crate::lexicon::anagrams::{Anagrams, Word};
use crate::lexicon::{Kwg, SEPARATOR, Step, StepLayout, Steps};
use crate::moves::{Kind, Move, rank};
use crate::tiles::{BLANK_BIT, Distribution, RACK_SIZE, letter_of};
use rustc_hash::FxHashMap;
use std::collections::BinaryHeap;
use std::sync::atomic::AtomicBool;

pub const BINGO_BONUS: i32 = 50;
/// Flips an `i32`'s sign bit so that its `u32` sorts as the `i32` did.
const BIAS: u32 = 1 << 31;

/// The bound of a `Generator::ranked` key.
#[inline]
fn bound_of(key: u64) -> i32 {
    ((key >> 32) as u32 ^ BIAS) as i32
}

/// Where the bounds on plays spending `spent` blanks (at least one) are kept: plays spending
/// one, and plays spending two or more.
#[inline]
fn spent_ix(spent: u8) -> usize {
    spent.min(2) as usize - 1
}

/// Every lane, as a `generate_lanes` mask.
pub const ALL_LANES: u32 = (1 << (2 * DIM)) - 1;

/// Whether new generators search for the best moves with the word map (the default) or the
/// word graph alone; see `set_word_map`.
static WORD_MAP: AtomicBool = AtomicBool::new(true);

/// Choose, for the generators made from now on in this process, between best-move search with
/// the word map (faster; tens of MB per lexicon, built on first use) and the word graph alone
/// (for machines short of memory). Results are the same either way.
pub fn set_word_map(on: bool) {
    WORD_MAP.store(on, std::sync::atomic::Ordering::Relaxed);
}

/// Whether generators made now search with the word map (see `set_word_map`).
pub fn word_map_on() -> bool {
    WORD_MAP.load(std::sync::atomic::Ordering::Relaxed)
}

/// Build the lexicon's index that best-move search will use (the word map, or the bingo index
/// without it) now, so that its one-time cost (a quarter of a second for ENABLE) is not charged
/// to the first move searched: a volunteer's measured rate and a cell's pace come from move
/// times.
pub fn prepare(kwg: &Kwg) {
    if word_map_on() {
        kwg.word_map();
    } else {
        kwg.anagrams();
    }
}

/// What the generator needs that does not change during a game.
#[derive(Clone, Copy)]
pub struct Ctx<'a> {
    pub kwg: &'a Kwg,
    pub dist: &'a Distribution,
    pub layout: &'a Layout,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Every legal move, in generation order (the same on every run; sort with `moves::rank`
    /// for best first).
    All,
    /// The best `n` moves by equity, best first.
    Best(usize),
}

/// One position to generate for.
#[derive(Clone, Copy)]
pub struct Request<'a> {
    pub board: &'a Board,
    pub rack: &'a [u8],
    /// Leave values of this rack's subsets (including any endgame adjustments).
    pub leaves: &'a RackLeaves,
    /// Exchanges are legal (at least 7 tiles in the bag).
    pub can_exchange: bool,
    /// Millipoints subtracted per vowel placed beside a letter premium on the opening move.
    pub opening_vowel_penalty: i32,
}

/// One lane's squares as the search sees them.
#[derive(Clone, Copy, Default)]
struct Lane {
    tiles: [u8; DIM],
    cross: [u64; DIM],
    cross_score: [i16; DIM],
    lm: [u8; DIM],
    wm: [u8; DIM],
    anchor: [bool; DIM],
    /// Best-move mode: the best tile score each square admits from the rack (see `caps`).
    caps: [i32; DIM],
}

/// Score accumulated along the current partial word (32-bit fields: copied between recursion
/// levels as plain words).
#[derive(Clone, Copy)]
struct Acc {
    main: i32,
    word_mult: i32,
    perp: i32,
    placed: u32,
    /// Rack slots used (see `RackLeaves`).
    used: u32,
    /// First square of the word so far.
    start: u32,
}

/// Reusable move generator: holds its buffers so that generating allocates nothing once warm.
pub struct Generator {
    moves: Vec<Move>,
    lane: Lane,
    dir: usize,
    lane_no: usize,
    /// Where the loaded anchor's search turns: it goes left from here, then right from the
    /// square after. The anchor itself, or the last tile of the run of board tiles right after
    /// it (see `search_anchor`), so that the square after is empty or off the board.
    pivot: usize,
    left_limit: usize,
    rack: [u8; 64],
    /// Rack counts before any tile of the current word was placed.
    full_rack: [u8; 64],
    rack_len: usize,
    /// The rack's tiles other than blanks, sorted (`rack_len` less the blanks of them).
    rack_real: [u8; RACK_SIZE],
    /// Most tiles the graph search places: the rack's size, or six when bingos come from the
    /// anagram index.
    max_place: usize,
    word: [u8; DIM],
    best_n: Option<usize>,
    /// Lowest equity a new move must reach to be kept. Best-move mode: the `n`-th best so far
    /// once there are `n` (`i32::MIN` before, and in all-moves mode); a field rather than a
    /// look into `moves` because every word found is checked against it.
    cut: i32,
    opening: bool,
    anchors: Vec<Anchor>,
    /// Best-move mode: each lane's memo, across then down.
    memos: Vec<LaneMemo>,
    /// Best-move mode: the buffer of `ranked`'s heap.
    ranked: Vec<u64>,
    /// All 30 lanes as loaded for this call (across lanes, then down).
    lanes: Vec<Lane>,
    /// The rack's tile scores, highest first (best-move mode).
    rack_scores: [i32; RACK_SIZE],
    /// Letters with at least one tile left on the rack (blank aside).
    rack_letters: u64,
    /// Per-call copies of what the search reads at every step, so the recursion passes only
    /// the word graph: tile scores by board tile (designated blanks 0), the rack's leave values
    /// and slots, and on the opening move the squares beside a letter premium.
    scores: [i32; 256],
    /// The face values `scores` was filled from (the endgame calls with a few lanes at a time,
    /// where refilling it showed in profiles).
    scores_of: Vec<u8>,
    by_used: [i32; 128],
    first_slot: [u8; 64],
    /// Best leave for `k` tiles played keeping every blank, and spending some (by `spent_ix`: a
    /// blank kept is worth so much that plays spending one rarely compete, and plays spending
    /// two less often still: their anchors are searched without the blanks when the bound
    /// falls short).
    leave_keep: [i32; 8],
    leave_use: [[i32; 8]; 2],
    vowels: u64,
    vowel_penalty: i32,
    beside_premium: [bool; SQUARES],
    /// Per call: the anagram-index words for each set of played-through letters seen so far,
    /// as (key of the sorted through letters, range of `found`).
    through_words: Vec<(u128, u32, u32)>,
    /// Per call: the same for windows through at most one board tile (more than half of
    /// them), by that tile's letter (0: none), known where `through_one_known` has its bit.
    through_one: [(u32, u32); 64],
    through_one_known: u64,
    /// Per call: the windows `bingos` looks up, as (bound, lane, squares).
    bingo_windows: Vec<(i32, u8, [u8; RACK_SIZE])>,
    found: Vec<u32>,
    /// Best-move search looks words up in the word map (see `word_map_anchor`).
    word_map: bool,
    /// Word-map search: the rack's distinct subsets spending a blank, by blanks and size, best
    /// leave first; `by_size[b][k]` is where those of `b` blanks and size `k` start (each pass
    /// of the search spends a given number of blanks).
    subsets: Vec<Subset>,
    by_size: [[usize; RACK_SIZE + 2]; RACK_SIZE + 1],
    /// Word-map lookups of this call: (letters key, blanks) -> range of `found`.
    looked: FxHashMap<(u128, u8), (u32, u32)>,
    /// The distribution's letters (what a blank may stand for).
    letter_mask: u64,
}

/// An anchor square and what a play from it can be worth.
#[derive(Clone, Copy)]
struct Anchor {
    /// Bounds (millipoints) on the equity of its plays that keep every blank, and that spend
    /// some (by `spent_ix`; best-move mode; `i32::MIN` when there are none).
    keep: i32,
    spend: [i32; 2],
    dir: u8,
    lane: u8,
    at: u8,
    /// Leftmost square its plays may start on (the square after the previous anchor).
    left_limit: u8,
}

impl Anchor {
    /// Bound on the equity of its plays that spend any number of blanks.
    #[inline]
    fn spend_any(&self) -> i32 {
        self.spend[0].max(self.spend[1])
    }
}

/// Tiles a play may take from the rack, as the word-map search tries them.
#[derive(Clone, Copy)]
struct Subset {
    /// The leave of its canonical rack slots (see `RackLeaves`).
    leave: i32,
    blanks: u8,
    /// Tiles other than blanks, sorted, and as a letter mask.
    real: [u8; RACK_SIZE],
    letters: u64,
    /// Tile scores, highest first (blanks 0).
    scores: [i32; RACK_SIZE],
}

impl Default for Generator {
    fn default() -> Self {
        Self::new()
    }
}

impl Generator {
    pub fn new() -> Self {
        Self {
            moves: Vec::with_capacity(4096),
            lane: Lane::default(),
            dir: 0,
            lane_no: 0,
            pivot: 0,
            left_limit: 0,
            rack: [0; 64],
            full_rack: [0; 64],
            rack_len: 0,
            rack_real: [0; RACK_SIZE],
            max_place: 0,
            word: [0; DIM],
            best_n: None,
            cut: i32::MIN,
            opening: false,
            anchors: Vec::with_capacity(256),
            ranked: Vec::with_capacity(256),
            memos: vec![LaneMemo::NONE; 2 * DIM],
            lanes: vec![Lane::default(); 2 * DIM],
            rack_scores: [0; RACK_SIZE],
            rack_letters: 0,
            scores: [0; 256],
            scores_of: Vec::new(),
            by_used: [0; 128],
            first_slot: [0; 64],
            leave_keep: [0; 8],
            leave_use: [[0; 8]; 2],
            vowels: 0,
            vowel_penalty: 0,
            beside_premium: [false; SQUARES],
            through_words: Vec::new(),
            through_one: [(0, 0); 64],
            through_one_known: 0,
            bingo_windows: Vec::new(),
            found: Vec::new(),
            word_map: word_map_on(),
            subsets: Vec::with_capacity(128),
            by_size: [[0; RACK_SIZE + 2]; RACK_SIZE + 1],
            looked: FxHashMap::default(),
            letter_mask: 0,
        }
    }

    /// Generate moves for `req`: in best-move mode best first, else in generation order.
    pub fn generate(&mut self, ctx: Ctx, req: &Request, mode: Mode) -> &[Move] {
        self.generate_lanes(ctx, req, mode, ALL_LANES, None)
    }

    /// Generate as `generate` does, but search only the lanes in `lanes` (bits `dir * DIM +
    /// lane`), ranking `known` with what is found: a placement in another lane, known to be
    /// legal with this equity (see `Board::changed_lanes`). Non-placements are always
    /// generated.
    pub fn generate_lanes(&mut self, ctx: Ctx, req: &Request, mode: Mode, lanes: u32, known: Option<Move>) -> &[Move] {
        self.moves.clear();
        self.cut = i32::MIN;
        self.best_n = match mode {
            Mode::All => None,
            Mode::Best(n) => Some(n.max(1)),
        };
        self.rack = [0; 64];
        for &t in req.rack {
            self.rack[t as usize] += 1;
        }
        self.full_rack = self.rack;
        self.rack_len = req.rack.len();
        let mut real = req.rack.iter().filter(|&&t| t != 0);
        self.rack_real = std::array::from_fn(|_| real.next().copied().unwrap_or(0));
        self.rack_real[..self.rack_len - self.rack[0] as usize].sort_unstable();
        // The word map pays where the graph search is slow, on racks holding a blank; without
        // one, the graph finds an anchor's plays in fewer steps than its windows take lookups
        // (measured: docs/BENCHMARKS.md).
        let word_map = self.word_map && self.best_n.is_some() && self.rack[0] > 0;
        self.letter_mask = ctx.dist.all_letters_mask();
        // More than two blanks would mean too many designations to look up: search instead.
        let lookup_bingos = self.rack_len == RACK_SIZE && self.rack[0] <= 2;
        self.max_place = if lookup_bingos { RACK_SIZE - 1 } else { self.rack_len };
        self.opening = req.board.is_empty();
        self.rack_letters = req.rack.iter().filter(|&&t| t != 0).fold(0, |m, &t| m | 1 << t);
        if self.scores_of != ctx.dist.scores() {
            for t in 0..256 {
                self.scores[t] =
                    if (t as u8 & !BLANK_BIT) < ctx.dist.size() as u8 { ctx.dist.score(t as u8) } else { 0 };
            }
            self.scores_of = ctx.dist.scores().to_vec();
            self.memos.fill(LaneMemo::NONE); // their runs hold tile scores
        }
        self.by_used = req.leaves.by_used;
        self.first_slot = req.leaves.first_slot;
        if self.rack[0] > 0 {
            // Blanks sort first, and a canonical mask uses the first blank slot first.
            (self.leave_keep, self.leave_use) = ([i32::MIN; 8], [[i32::MIN; 8]; 2]);
            let blank_slots = (1 << self.rack[0]) - 1;
            for used in 0..1usize << self.rack_len {
                let best = match (used & blank_slots).count_ones() {
                    0 => &mut self.leave_keep,
                    spent => &mut self.leave_use[spent_ix(spent as u8)],
                };
                let k = used.count_ones() as usize;
                best[k] = best[k].max(self.by_used[used]);
            }
        } else {
            (self.leave_keep, self.leave_use) = (req.leaves.best_by_count, [[i32::MIN; 8]; 2]);
        }
        self.vowel_penalty = if self.opening { req.opening_vowel_penalty } else { 0 };
        if self.vowel_penalty != 0 {
            self.vowels = ctx.dist.letters().filter(|&t| ctx.dist.is_vowel(t)).fold(0, |m, t| m | 1 << t);
            for (sq, beside) in self.beside_premium.iter_mut().enumerate() {
                let (row, col) = (sq / DIM, sq % DIM);
                *beside = [(0i32, 1i32), (0, -1), (1, 0), (-1, 0)].iter().any(|&(dr, dc)| {
                    let (r, c) = (row as i32 + dr, col as i32 + dc);
                    (0..DIM as i32).contains(&r)
                        && (0..DIM as i32).contains(&c)
                        && ctx.layout.is_letter_premium(r as usize, c as usize)
                });
            }
        }

        // Non-placements first: in best mode they set a threshold that prunes anchors.
        self.push(Move { equity: req.leaves.by_used[0], ..Move::PASS });
        if req.can_exchange {
            self.exchanges(req);
        }
        if let Some(m) = known {
            debug_assert!(m.kind == Kind::Place && lanes >> (m.dir as usize * DIM + m.lane as usize) & 1 == 0);
            self.push(m);
        }

        self.rack_scores = [0; RACK_SIZE];
        for (s, &t) in self.rack_scores.iter_mut().zip(req.rack) {
            *s = self.scores[t as usize];
        }
        self.rack_scores.sort_unstable_by(|x, y| y.cmp(x));
        self.anchors.clear();
        for dir in [ACROSS, DOWN] {
            for lane_no in 0..DIM {
                if lanes >> (dir * DIM + lane_no) & 1 == 0 {
                    continue;
                }
                self.load_lane(ctx, req, dir, lane_no);
                self.lanes[dir * DIM + lane_no] = self.lane;
                if !self.lane.anchor.contains(&true) {
                    continue;
                }
                let ix = dir * DIM + lane_no;
                let caps = if self.best_n.is_some() {
                    self.memos[ix].refresh(ctx.kwg, &self.lane.tiles, &self.scores);
                    self.caps(ctx)
                } else {
                    [0; DIM]
                };
                self.lane.caps = caps;
                self.lanes[ix].caps = caps;
                // Anchors are empty squares: each one's windows start after the one before.
                let (empties, m) = empty_squares(&self.lane.tiles, 0);
                let (mut left, mut left_limit) = (0, 0);
                for (i, &a) in empties[..m].iter().enumerate() {
                    if self.lane.anchor[a] {
                        let (keep, spend) = if self.best_n.is_some() {
                            self.bound(&caps, &self.memos[ix].runs, &empties[left..m], i - left)
                        } else {
                            (0, [0; 2])
                        };
                        self.anchors.push(Anchor {
                            keep,
                            spend,
                            dir: dir as u8,
                            lane: lane_no as u8,
                            at: a as u8,
                            left_limit: left_limit as u8,
                        });
                        (left, left_limit) = (i + 1, a + 1);
                    }
                }
            }
        }
        if lookup_bingos {
            // First: in best mode a bingo found now sets a high threshold for the anchors.
            self.bingos(ctx, lanes);
        }
        let anchors = std::mem::take(&mut self.anchors);
        // Best-move mode searches anchors best bound first, and stops at the first that cannot
        // reach the threshold. Ties in any order: results never depend on the search order
        // (see `push`).
        if word_map {
            // One pass per number of blanks spent, none first: a blank kept is worth so much
            // that the cheap pass sets a threshold few plays spending one reach. That pass is
            // the graph's, which finds an anchor's blankless plays in fewer steps than its
            // windows take probes.
            let map = ctx.kwg.word_map();
            self.subsets(req);
            self.found.clear();
            self.looked.clear(); // it holds ranges of `found`
            for spent in 0..=self.rack[0] {
                let mut ranked = self.ranked(&anchors, |a| if spent == 0 { a.keep } else { a.spend[spent_ix(spent)] });
                while let Some(key) = ranked.pop() {
                    if bound_of(key) < self.cut {
                        break;
                    }
                    let a = &anchors[key as u32 as usize];
                    if spent == 0 {
                        self.search_anchor(ctx.kwg, a, false);
                    } else {
                        self.load(a);
                        self.word_map_anchor(map, a.at as usize, a.left_limit as usize, spent);
                    }
                }
                self.ranked = ranked.into_vec();
            }
        } else if self.best_n.is_none() {
            for a in &anchors {
                self.search_anchor(ctx.kwg, a, true);
            }
        } else {
            let mut ranked = self.ranked(&anchors, |a| a.keep.max(a.spend_any()));
            while let Some(key) = ranked.pop() {
                let cut = self.cut;
                if bound_of(key) < cut {
                    break;
                }
                let a = &anchors[key as u32 as usize];
                self.search_anchor(ctx.kwg, a, a.spend_any() >= cut);
            }
            self.ranked = ranked.into_vec();
        }
        self.anchors = anchors;
        &self.moves
    }

    /// The anchors whose `bound` reaches the threshold now, as a max-heap of keys: the bound
    /// (biased to sort as unsigned) over the anchor's index. Best-move search takes them best
    /// first and stops after about a fifth of them, so the rest are never put in order (a
    /// full sort cost 2.5% of a static game).
    fn ranked(&mut self, anchors: &[Anchor], bound: impl Fn(&Anchor) -> i32) -> BinaryHeap<u64> {
        let cut = self.cut;
        let mut keys = std::mem::take(&mut self.ranked);
        keys.clear();
        keys.extend(
            anchors
                .iter()
                .enumerate()
                .filter(|(_, a)| bound(a) >= cut)
                .map(|(i, a)| ((bound(a) as u32 ^ BIAS) as u64) << 32 | i as u64),
        );
        BinaryHeap::from(keys)
    }

    /// Search the plays from anchor `a` in the graph; with the rack's blanks only if `spend`.
    fn search_anchor(&mut self, kwg: &Kwg, a: &Anchor, spend: bool) {
        let blanks = self.rack[0];
        if !spend {
            self.rack[0] = 0;
        }
        self.load(a);
        // Every play from the anchor spells the run of tiles right after it: the graph is
        // walked through that run first, and rules out at once the letters that cannot stand
        // before it. From the anchor, every way a word can go on left of the anchor's letter
        // would be walked before the run was reached (a quarter of the steps of rollouts went
        // on anchors before runs such as FAWN or JOULE that no play could use).
        let mut pivot = a.at as usize;
        while pivot + 1 < DIM && self.lane.tiles[pivot + 1] != 0 {
            pivot += 1;
        }
        self.pivot = pivot;
        self.left_limit = a.left_limit as usize;
        let acc = Acc { main: 0, word_mult: 1, perp: 0, placed: 0, used: 0, start: a.at as u32 };
        match kwg.steps() {
            StepLayout::Narrow(g) => self.search_from(g, acc),
            StepLayout::Wide(g) => self.search_from(g, acc),
        }
        self.rack[0] = blanks;
    }

    /// Search the loaded anchor's plays in the graph's steps `g`.
    fn search_from<S: Steps>(&mut self, g: S, acc: Acc) {
        // Node 1's children are the GADDAG's root list.
        let root = g.step(1);
        if self.worth(self.pivot, root.kids(), acc) {
            self.extend::<true, S>(g, self.pivot, root, acc);
        }
    }

    /// Make `a`'s lane the loaded one.
    #[inline]
    fn load(&mut self, a: &Anchor) {
        let (dir, lane) = (a.dir as usize, a.lane as usize);
        if (self.dir, self.lane_no) != (dir, lane) {
            self.lane = self.lanes[dir * DIM + lane];
            (self.dir, self.lane_no) = (dir, lane);
        }
    }

    #[inline]
    fn push(&mut self, m: Move) {
        let Some(n) = self.best_n else {
            self.moves.push(m);
            return;
        };
        if self.moves.len() >= n && rank(&m, &self.moves[n - 1]).is_ge() {
            return;
        }
        let at = self.moves.partition_point(|x| rank(x, &m).is_lt());
        if self.moves.len() >= n {
            self.moves.pop();
        }
        self.moves.insert(at, m);
        if self.moves.len() >= n {
            self.cut = self.moves[n - 1].equity;
        }
    }

    fn exchanges(&mut self, req: &Request) {
        let slots = &req.leaves.slots;
        let (mut tiles, repeats) = ([0u8; 7], RackLeaves::repeats(slots));
        for used in 1u32..(1 << slots.len()) {
            let equity = req.leaves.by_used[used as usize];
            // Non-canonical masks hold i32::MIN; in best mode most exchanges miss the cut.
            if equity < self.cut || !RackLeaves::canonical(repeats, used) {
                continue;
            }
            let mut n = 0;
            for (i, &t) in slots.iter().enumerate() {
                if used >> i & 1 == 1 {
                    tiles[n] = t;
                    n += 1;
                }
            }
            let m = Move { equity, ..Move::exchange(&tiles[..n]) };
            self.push(m);
        }
    }

    fn load_lane(&mut self, ctx: Ctx, req: &Request, dir: usize, lane_no: usize) {
        let b = req.board;
        let l = &mut self.lane;
        l.tiles.copy_from_slice(b.lane_tiles(dir, lane_no));
        l.cross.copy_from_slice(b.lane_cross(dir, lane_no));
        l.cross_score.copy_from_slice(b.lane_cross_score(dir, lane_no));
        let r = idx(lane_no, 0)..idx(lane_no, DIM);
        l.lm.copy_from_slice(&ctx.layout.letter_mult[dir][r.clone()]);
        l.wm.copy_from_slice(&ctx.layout.word_mult[dir][r]);
        let (sr, sc) = ctx.layout.start;
        let (start_lane, start_pos) = if dir == ACROSS { (sr, sc) } else { (sc, sr) };
        for p in 0..DIM {
            l.anchor[p] = if b.is_empty() {
                lane_no == start_lane && p == start_pos
            } else {
                l.tiles[p] == 0
                    && (l.cross_score[p] >= 0 || (p > 0 && l.tiles[p - 1] != 0) || (p + 1 < DIM && l.tiles[p + 1] != 0))
            };
        }
        self.dir = dir;
        self.lane_no = lane_no;
    }

    /// Best tile score each square of the loaded lane admits from this rack, -1 where no rack
    /// tile fits (occupied squares: unused). A square beside board tiles in the lane admits
    /// only letters some word has there (`extension`, kept between calls in `LaneMemo`).
    fn caps(&mut self, ctx: Ctx) -> [i32; DIM] {
        let l = &self.lane;
        let blank = self.rack[0] > 0;
        let ext = &mut self.memos[self.dir * DIM + self.lane_no];
        let mut cap = [0i32; DIM];
        for (p, c) in cap.iter_mut().enumerate() {
            if l.tiles[p] != 0 {
                continue;
            }
            let cross = l.cross[p] & ctx.dist.all_letters_mask();
            let beside = (p > 0 && l.tiles[p - 1] != 0) || (p + 1 < DIM && l.tiles[p + 1] != 0);
            let mut fits = cross & self.rack_letters;
            if beside {
                fits = ext.admit(ctx.kwg, p, fits);
            }
            // A blank needs only some letter to fit: looked for among the rest only when no
            // rack letter does.
            *c = if fits != 0 {
                let mut best = 0;
                while fits != 0 {
                    best = best.max(self.scores[fits.trailing_zeros() as usize]);
                    fits &= fits - 1;
                }
                best
            } else if blank && cross != 0 && (!beside || ext.admits_any(ctx.kwg, p, cross)) {
                0
            } else {
                -1
            };
        }
        cap
    }

    /// Admissible upper bound (millipoints) on the equity of any placement generated from the
    /// anchor `empties[ai]` (`empties`: the loaded lane's empty squares from the one after the
    /// anchor before it): the placed tiles fill `k` consecutive empty squares of the window
    /// around the anchor; the best rack tile scores go on the best-paying squares
    /// (rearrangement inequality) or, if lower, each square gets the best tile its cross-set
    /// admits; every cross-word counts; plus the best leave for `k` tiles: (keeping every
    /// blank, [spending one, spending two or more]).
    fn bound(&self, caps: &[i32; DIM], runs: &Runs, empties: &[usize], ai: usize) -> (i32, [i32; 2]) {
        let l = &self.lane;
        let scores = &self.rack_scores;
        let r = self.max_place;
        let m = empties.len();
        // Without a blank on the rack there are no plays spending one.
        let blank = self.rack[0] > 0;
        let (mut keep, mut spend) = (i32::MIN, [i32::MIN; 2]);
        // Windows by leftmost empty square `j`, growing rightwards one tile at a time.
        for j in ai.saturating_sub(r.saturating_sub(1))..=ai {
            let lo = runs.lo(empties[j]);
            let mut c = Coefs::new();
            for k in 1..=r.min(m - j) {
                let p = empties[j + k - 1];
                if caps[p] < 0 {
                    break; // no rack tile fits here, nor in any longer window
                }
                c.add(l, caps, p);
                if j + k - 1 < ai {
                    continue; // the window must reach the anchor
                }
                let hi = runs.hi(p);
                let existing = runs.before[hi + 1] - runs.before[lo];
                let fixed = existing * c.word_mult + c.perp_fixed + if k == RACK_SIZE { BINGO_BONUS } else { 0 };
                let score = 1000 * (fixed + c.paired(scores));
                if self.leave_keep[k] > i32::MIN {
                    keep = keep.max(score + self.leave_keep[k]);
                }
                if blank {
                    for (s, leave) in spend.iter_mut().zip(&self.leave_use) {
                        if leave[k] > i32::MIN {
                            *s = (*s).max(score + leave[k]);
                        }
                    }
                }
            }
        }
        (keep, spend)
    }

    /// Best-move search without the graph: choose whether generators search with the word
    /// map (see `set_word_map`, which sets the default).
    pub fn use_word_map(&mut self, on: bool) {
        self.word_map = on;
    }

    /// The distinct subsets (one per canonical slot mask) of a rack holding a blank that spend
    /// one, by blanks and size, best leave first.
    fn subsets(&mut self, req: &Request) {
        let slots = &req.leaves.slots;
        let n = slots.len();
        let repeats = RackLeaves::repeats(slots);
        // Ordered by (blanks, size, best leave first) as keys (blanks, size, leave inverted,
        // mask: bits 56, 48, 8 and 0 on), so that only the keys are sorted. Blanks sort first:
        // a mask spending one holds slot 0.
        let mut keys = [0u64; 64];
        let mut m = 0;
        let blank_slots = (1u32 << self.rack[0]) - 1;
        for used in (1u32..1 << n).step_by(2) {
            if !RackLeaves::canonical(repeats, used) {
                continue;
            }
            let leave = self.by_used[used as usize] as u32 ^ BIAS;
            let (blanks, size) = ((used & blank_slots).count_ones() as u64, used.count_ones() as u64);
            keys[m] = blanks << 56 | size << 48 | u64::from(!leave) << 8 | u64::from(used);
            m += 1;
        }
        let keys = &mut keys[..m];
        keys.sort_unstable();
        // Slots by tile score, highest first, so that a subset's scores come out in order.
        let mut by_score: [u8; RACK_SIZE] = std::array::from_fn(|i| i as u8);
        let by_score = &mut by_score[..n];
        by_score.sort_unstable_by_key(|&i| std::cmp::Reverse(self.scores[slots[i as usize] as usize]));
        self.subsets.clear();
        for &key in keys.iter() {
            let used = key as u32 & 0xff;
            let mut sub = Subset {
                leave: self.by_used[used as usize],
                blanks: (key >> 56) as u8,
                real: [0; RACK_SIZE],
                letters: 0,
                scores: [0; RACK_SIZE],
            };
            for (j, slot) in bits(used & !blank_slots).enumerate() {
                sub.real[j] = slots[slot];
                sub.letters |= 1 << slots[slot];
            }
            let scored = by_score.iter().filter(|&&slot| used >> slot & 1 == 1);
            for (s, &slot) in sub.scores.iter_mut().zip(scored) {
                *s = self.scores[slots[slot as usize] as usize];
            }
            self.subsets.push(sub);
        }
        let mut at = 0;
        for (b, starts) in self.by_size.iter_mut().enumerate() {
            for (k, start) in starts.iter_mut().enumerate() {
                while at < m && keys[at] >> 48 < ((b as u64) << 8 | k as u64) {
                    at += 1;
                }
                *start = at;
            }
        }
    }

    /// Every play spending `blanks` blanks (one or more) from anchor `a` of the loaded lane that
    /// can reach the threshold, by lookup:
    /// for each window of empty squares whose leftmost anchor is `a`, each rack subset of the
    /// window's size whose score bound (its tiles on the window's squares, best on best) plus
    /// its leave can reach the threshold, the words of the subset's letters and the letters
    /// played through, checked against the board letters and the cross-sets.
    fn word_map_anchor(&mut self, map: &Anagrams, a: usize, left_limit: usize, blanks: u8) {
        let l = self.lane;
        let r = self.max_place;
        let (empties, m) = empty_squares(&l.tiles, left_limit);
        let ai = empties[..m].iter().position(|&p| p == a).expect("anchor is empty");
        // Best mode refreshed the memo of every lane with an anchor.
        let memo = &self.memos[self.dir * DIM + self.lane_no];
        debug_assert!(memo.tiles == l.tiles);
        let runs = memo.runs;
        for j in ai.saturating_sub(r.saturating_sub(1))..=ai {
            let lo = runs.lo(empties[j]);
            let mut c = Coefs::new();
            for k in 1..=r.min(m - j) {
                let p = empties[j + k - 1];
                if l.caps[p] < 0 {
                    break; // no rack tile fits here, nor in any longer window
                }
                c.add(&l, &l.caps, p);
                if j + k - 1 < ai {
                    continue; // the window must reach the anchor
                }
                let hi = runs.hi(p);
                if hi == lo {
                    continue; // one letter is not a word
                }
                let existing = runs.before[hi + 1] - runs.before[lo];
                let fixed = existing * c.word_mult + c.perp_fixed + if k == RACK_SIZE { BINGO_BONUS } else { 0 };
                let top = fixed + c.paired(&self.rack_scores);
                let best_leave = self.leave_use[spent_ix(blanks)][k];
                if best_leave == i32::MIN || top * 1000 + best_leave < self.cut {
                    continue; // no subset of this size can reach the threshold here
                }
                let (through, nt) = sorted_through(&l.tiles, lo, hi);
                let ps = &empties[j..j + k];
                let b = blanks as usize;
                for si in self.by_size[b][k]..self.by_size[b][k + 1] {
                    let sub = &self.subsets[si];
                    let cut = self.cut;
                    if top * 1000 + sub.leave < cut {
                        break; // best leave first: no later subset can reach it either
                    }
                    if (fixed + c.paired(&sub.scores)) * 1000 + sub.leave < cut {
                        continue;
                    }
                    // Squares no tile of the subset fits must take its blanks.
                    let no_fit = ps.iter().filter(|&&p| l.cross[p] & sub.letters == 0).count();
                    if no_fit > sub.blanks as usize {
                        continue;
                    }
                    let sub = *sub; // copied only here: `look_up` needs `self`
                    let real = &sub.real[..k - sub.blanks as usize];
                    let (letters, n) = merged(real, &through[..nt]);
                    let (from, to) = self.look_up(map, &letters[..n], sub.blanks as usize);
                    for f in from..to {
                        let word = map.word(self.found[f as usize]);
                        self.place_word(ps, lo, hi, existing, word, real, sub.blanks as usize);
                    }
                }
            }
        }
    }

    /// Range of `found` holding the words of `letters` (sorted) plus `blanks` letters more,
    /// each once; looked up once per call.
    fn look_up(&mut self, map: &Anagrams, letters: &[u8], blanks: usize) -> (u32, u32) {
        let start = self.found.len();
        if letters.len() + blanks > crate::lexicon::MAX_WORD_LEN {
            return (start as u32, start as u32);
        }
        // One probe of the map: not worth a probe of a cache first.
        if blanks < 2 {
            if blanks == 0 {
                self.found.extend(map.of_sorted(letters));
            } else {
                self.found.extend_from_slice(map.plus_one(letters));
            }
            return (start as u32, self.found.len() as u32);
        }
        if blanks == 2
            && let Some(words) = map.plus_two(letters)
        {
            self.found.extend_from_slice(words);
            return (start as u32, self.found.len() as u32);
        }
        let k = (crate::lexicon::anagrams::key(letters), blanks as u8);
        if let Some(&range) = self.looked.get(&k) {
            return range;
        }
        // All but one blank as every letter (in order, so each set once), the last
        // one by the map; a word with several letters from blanks comes up more
        // than once.
        let mut more = [0u8; 2 * DIM];
        more[..letters.len()].copy_from_slice(letters);
        self.more_blanks(map, &mut more, letters.len(), blanks - 1, 1);
        self.found[start..].sort_unstable();
        let mut n = start;
        for i in start..self.found.len() {
            if i == start || self.found[i] != self.found[i - 1] {
                self.found[n] = self.found[i];
                n += 1;
            }
        }
        self.found.truncate(n);
        let range = (start as u32, self.found.len() as u32);
        self.looked.insert(k, range);
        range
    }

    /// Look up `letters[..n]` (sorted) plus `left` more letters, each of them from `from` on,
    /// the last by the map's words of one letter more; `letters` stays sorted.
    fn more_blanks(&mut self, map: &Anagrams, letters: &mut [u8; 2 * DIM], n: usize, left: usize, from: u8) {
        if left == 0 {
            self.found.extend_from_slice(map.plus_one(&letters[..n]));
            return;
        }
        for x in from..64 {
            if self.letter_mask >> x & 1 == 1 {
                let at = letters[..n].partition_point(|&t| t <= x);
                letters.copy_within(at..n, at + 1);
                letters[at] = x;
                self.more_blanks(map, letters, n + 1, left - 1, x);
                letters.copy_within(at + 1..n + 1, at);
            }
        }
    }

    /// Extend the word at `pos` with a child of `parent`: going left from the anchor (`LEFT`,
    /// through the GADDAG's reversed prefix) or right after the separator. The direction is a
    /// type parameter: each direction's recursion is compiled apart, without a branch on it at
    /// every step (3% fewer instructions a static game).
    fn extend<const LEFT: bool, S: Steps>(&mut self, g: S, pos: usize, parent: Step, acc: Acc) {
        let on_board = self.lane.tiles[pos];
        if on_board != 0 {
            if let Some(n) = parent.child(letter_of(on_board)) {
                let acc = Acc { main: acc.main + self.scores[on_board as usize], ..acc };
                self.go_on::<LEFT, S>(g, pos, g.step(n), acc);
            }
            return;
        }
        // Called only where `worth` holds: some tile may go here.
        let fits = self.fits();
        let (list, letters) = (parent.arc(), parent.kids());
        let mut playable = letters & self.lane.cross[pos] & fits & !1;
        let mut ahead = playable;
        while ahead != 0 {
            let t = ahead.trailing_zeros();
            ahead &= ahead - 1;
            g.prefetch(g.step(list + (letters & ((1u64 << t) - 1)).count_ones()).arc());
        }
        while playable != 0 {
            let t = playable.trailing_zeros() as u8;
            playable &= playable - 1;
            let n = g.step(list + (letters & ((1u64 << t) - 1)).count_ones());
            // One walk a letter: the letter's own tile while the rack holds one, else a blank.
            // Which of a word's tiles the blanks stand for is settled once it is found
            // (`found`), so that a path is walked once, not once per way of putting the blanks
            // on it.
            if self.rack[t as usize] > 0 {
                self.place::<LEFT, S>(g, pos, n, t, t, acc);
            } else {
                self.place::<LEFT, S>(g, pos, n, t | BLANK_BIT, 0, acc);
            }
        }
    }

    // Always inlined: called twice in `extend` (the letter, a blank as it), it was left out of
    // line, and its entry and exit cost 5% of a static game's instructions.
    #[inline(always)]
    fn place<const LEFT: bool, S: Steps>(&mut self, g: S, pos: usize, n: Step, tile: u8, rack_tile: u8, acc: Acc) {
        let rt = rack_tile as usize;
        // Tiles of one kind use their rack slots in order, keeping leave masks canonical.
        let slot = (self.first_slot[rt] + self.full_rack[rt] - self.rack[rt]) as u32;
        self.rack[rt] -= 1;
        if self.rack[rt] == 0 {
            self.rack_letters &= !(1 << rt);
        }
        self.word[pos] = tile;
        let l = &self.lane;
        let ts = self.scores[tile as usize];
        let (lm, wm) = (l.lm[pos] as i32, l.wm[pos] as i32);
        let perp = if l.cross_score[pos] >= 0 { (l.cross_score[pos] as i32 + ts * lm) * wm } else { 0 };
        let acc = Acc {
            main: acc.main + ts * lm,
            word_mult: acc.word_mult * wm,
            perp: acc.perp + perp,
            placed: acc.placed + 1,
            used: acc.used | (1 << slot),
            start: acc.start,
        };
        self.go_on::<LEFT, S>(g, pos, n, acc);
        // Outside the current word the buffer stays zero, so a move can copy it whole.
        self.word[pos] = 0;
        self.rack[rt] += 1;
        self.rack_letters |= 1 << rt;
    }

    #[inline(always)]
    fn go_on<const LEFT: bool, S: Steps>(&mut self, g: S, pos: usize, n: Step, acc: Acc) {
        let tiles = &self.lane.tiles;
        if LEFT {
            let acc = Acc { start: pos as u32, ..acc };
            let left_open = pos == 0 || tiles[pos - 1] == 0;
            if n.accepts() && left_open {
                self.found(pos, self.pivot, acc);
            }
            if n.arc() == 0 {
                return;
            }
            if pos > self.left_limit && self.worth(pos - 1, n.kids(), acc) {
                self.extend::<true, S>(g, pos - 1, n, acc);
            }
            // The separator sorts first among the children. The plays going right before the
            // anchor is reached (no tile placed yet) are another anchor's.
            if left_open && acc.placed > 0 && self.pivot + 1 < DIM && n.kids() & 1 << SEPARATOR != 0 {
                let sep = g.step(n.arc());
                if self.worth(self.pivot + 1, sep.kids(), acc) {
                    self.extend::<false, S>(g, self.pivot + 1, sep, acc);
                }
            }
        } else {
            if n.accepts() && (pos + 1 == DIM || tiles[pos + 1] == 0) {
                self.found(acc.start as usize, pos, acc);
            }
            if n.arc() != 0 && pos + 1 < DIM && self.worth(pos + 1, n.kids(), acc) {
                self.extend::<false, S>(g, pos + 1, n, acc);
            }
        }
    }

    /// Letters the rack can put down now: all of them while it holds a blank.
    #[inline(always)]
    fn fits(&self) -> u64 {
        if self.rack[0] > 0 { !0 } else { self.rack_letters }
    }

    /// Whether `extend` at `pos` among children with letters `kids` could go anywhere: a board
    /// tile to follow, or a rack tile the graph and the cross-set allow. Checked before the
    /// call, because most calls would return at once and their entry and exit cost more than
    /// the check.
    #[inline(always)]
    fn worth(&self, pos: usize, kids: u64, acc: Acc) -> bool {
        let fits = self.fits();
        self.lane.tiles[pos] != 0
            || (acc.placed as usize) < self.max_place && self.lane.cross[pos] & fits & kids & !1 != 0
    }

    /// The graph search found a word on `start..=end`, its tiles as `place` put them down
    /// (each letter's own tiles first, then blanks): record it, once for each way the blanks
    /// in hand could lie on its letters.
    #[inline]
    fn found(&mut self, start: usize, end: usize, acc: Acc) {
        if end == start || acc.placed == 0 {
            return;
        }
        if acc.placed == 1 && self.dir == DOWN {
            // A lone tile that also makes an across word is listed as the across play.
            let p = (start..=end).find(|&p| self.word[p] != 0).expect("one tile placed");
            if self.lane.cross_score[p] >= 0 {
                return;
            }
        }
        let bingo = if acc.placed as usize == RACK_SIZE { BINGO_BONUS } else { 0 };
        let score = acc.main * acc.word_mult + acc.perp + bingo;
        let spent = match self.full_rack[0] {
            0 => 0,
            _ => (start..=end).filter(|&p| self.word[p] & BLANK_BIT != 0).count(),
        };
        let blanks = self.rack[0] as usize + spent;
        match blanks {
            0 => return self.record(start, end, score, acc.used),
            1 => return self.one_blank_ways(start, end, score, acc),
            _ => {}
        }
        // Score it with no blank on it, and note what each letter adds.
        let (mut squares, mut costs, mut tiles, mut k) = ([0u8; RACK_SIZE], [0; RACK_SIZE], [0; RACK_SIZE], 0);
        let mut unblanked = score;
        for p in start..=end {
            let tile = self.word[p];
            if tile != 0 {
                let cost = self.letter_worth(p, tile, acc.word_mult);
                if tile & BLANK_BIT != 0 {
                    unblanked += cost;
                }
                (squares[k], costs[k], tiles[k]) = (p as u8, cost, tile);
                k += 1;
            }
        }
        let real = self.rack_real;
        let real = &real[..self.rack_len - self.full_rack[0] as usize];
        self.blank_ways(start, end, &squares[..k], &costs[..k], unblanked, real, blanks);
        // The search goes on from the word as it was.
        for (&p, &tile) in squares[..k].iter().zip(&tiles) {
            self.word[p as usize] = tile;
        }
    }

    /// `found` with one blank in play, the common case, without `blank_ways`' bookkeeping.
    fn one_blank_ways(&mut self, start: usize, end: usize, score: i32, acc: Acc) {
        match (start..=end).find(|&p| self.word[p] & BLANK_BIT != 0) {
            None => {
                // The blank in hand: the word as placed, then with the blank for each of its
                // tiles in turn, that letter's last rack slot given up for the blank's.
                self.record(start, end, score, acc.used);
                let blank_slot = 1 << self.first_slot[0];
                for p in start..=end {
                    let tile = self.word[p];
                    if tile != 0 {
                        let t = tile as usize;
                        let last = self.first_slot[t] + self.full_rack[t] - self.rack[t] - 1;
                        self.word[p] = tile | BLANK_BIT;
                        let used = acc.used & !(1 << last) | blank_slot;
                        self.record(start, end, score - self.letter_worth(p, tile, acc.word_mult), used);
                        self.word[p] = tile;
                    }
                }
            }
            Some(b) => {
                // The blank stands for a letter whose own tiles are all down: it may lie on
                // any of that letter's squares, with the same rack slots.
                let letter = letter_of(self.word[b]);
                let unblanked = score + self.letter_worth(b, letter, acc.word_mult);
                self.word[b] = letter;
                for p in start..=end {
                    if self.word[p] == letter {
                        self.word[p] |= BLANK_BIT;
                        self.record(start, end, unblanked - self.letter_worth(p, letter, acc.word_mult), acc.used);
                        self.word[p] = letter;
                    }
                }
                self.word[b] = letter | BLANK_BIT;
            }
        }
    }

    /// What the letter of `tile` scores on empty square `p` of the loaded lane, in a main word
    /// of multiplier `word_mult` and in the cross-word it makes there, if any.
    #[inline]
    fn letter_worth(&self, p: usize, tile: u8, word_mult: i32) -> i32 {
        let l = &self.lane;
        let cross_mult = if l.cross_score[p] >= 0 { l.wm[p] as i32 } else { 0 };
        self.scores[letter_of(tile) as usize] * l.lm[p] as i32 * (word_mult + cross_mult)
    }

    /// Record the word on `start..=end` whose placed tiles are on `squares` (their letters in
    /// `word`), worth `score` with every tile its letter's, once for each way of laying them
    /// from the tiles `real` (blanks aside) and `blanks`: up to `blanks` blanks on any of its
    /// letters (taking `costs[i]` off the score on `squares[i]`), as long as the letter's own
    /// tiles in `real` suffice for the rest.
    #[allow(clippy::too_many_arguments)]
    fn blank_ways(
        &mut self,
        start: usize,
        end: usize,
        squares: &[u8],
        costs: &[i32],
        score: i32,
        real: &[u8],
        blanks: usize,
    ) {
        let k = squares.len();
        // The placed tiles by letter: (squares as a mask over `squares`, letter, how many of
        // them the blanks must supply).
        let mut groups = [(0u32, 0u8, 0u32); RACK_SIZE];
        let mut n = 0;
        for (i, &p) in squares.iter().enumerate() {
            let t = letter_of(self.word[p as usize]);
            match groups[..n].iter_mut().find(|g| g.1 == t) {
                Some(g) => g.0 |= 1 << i,
                None => {
                    groups[n] = (1 << i, t, 0);
                    n += 1;
                }
            }
        }
        for g in &mut groups[..n] {
            let have = real.iter().filter(|&&t| t == g.1).count() as u32;
            g.2 = g.0.count_ones().saturating_sub(have);
        }
        let groups = &groups[..n];
        for &p in squares {
            self.word[p as usize] &= !BLANK_BIT;
        }
        for size in 0..=blanks.min(k) {
            // Every set of `size` squares for the blanks, in increasing order of its mask.
            let mut set = (1u32 << size) - 1;
            while set < 1 << k {
                if groups.iter().all(|g| (set & g.0).count_ones() >= g.2) {
                    // Tiles of one kind use their rack slots in order (see `place`).
                    let mut used = ((1u32 << size) - 1) << self.first_slot[0];
                    for g in groups {
                        used |= ((1u32 << (g.0 & !set).count_ones()) - 1) << self.first_slot[g.1 as usize];
                    }
                    let mut v = score;
                    for i in bits(set) {
                        self.word[squares[i] as usize] |= BLANK_BIT;
                        v -= costs[i];
                    }
                    self.record(start, end, v, used);
                    for i in bits(set) {
                        self.word[squares[i] as usize] &= !BLANK_BIT;
                    }
                }
                if set == 0 {
                    break;
                }
                // The next larger mask with as many bits (Gosper's hack).
                let low = set & set.wrapping_neg();
                let ripple = set + low;
                set = (((ripple ^ set) >> 2) / low) | ripple;
            }
        }
    }

    /// Record the move on `start..=end` whose tiles are in `word`, scoring `score` and taking
    /// the rack slots `used`.
    #[inline]
    fn record(&mut self, start: usize, end: usize, score: i32, used: u32) {
        let len = end - start + 1;
        let mut equity = score * 1000 + self.by_used[used as usize];
        if self.vowel_penalty != 0 {
            equity -= self.vowel_penalty * self.opening_vowels(start, end);
        }
        if equity < self.cut {
            return;
        }
        let m = Move {
            kind: Kind::Place,
            dir: self.dir as u8,
            lane: self.lane_no as u8,
            start: start as u8,
            len: len as u8,
            tiles: self.word,
            score,
            equity,
        };
        self.push(m);
    }

    /// Every play of all seven tiles: for each lane, each run of seven empty squares that
    /// reaches an anchor, and each word the anagram index holds for the rack plus the letters
    /// played through, every way the rack's blanks (at most two) can lie in it.
    fn bingos(&mut self, ctx: Ctx, lanes: u32) {
        // The word map holds the bingo index's words, and finds those with blanks in one
        // probe per blank but the last (the bingo index: one per letter). All-moves mode does
        // not build it for that: the bingo index takes a fraction of its time and memory, and
        // a process that only lists moves (an endgame solve) never needs the map.
        let by_map = self.word_map && (self.best_n.is_some() || ctx.kwg.has_word_map());
        let anagrams = if by_map { ctx.kwg.word_map() } else { ctx.kwg.anagrams() };
        let blanks = self.full_rack[0] as usize;
        let real = self.rack_real;
        let real = &real[..self.rack_len - blanks];
        let fits = if blanks > 0 { !0 } else { self.rack_letters } & !1;
        self.through_words.clear();
        self.through_one_known = 0;
        self.found.clear();
        self.looked.clear(); // it holds ranges of `found`
        // Windows of seven empty squares that reach an anchor, as (bound, lane, first square).
        // A rack with a blank costs a probe per blank and set of letters played through: in
        // best mode its windows are searched best bound first, so that once a bingo is found
        // the windows that cannot beat it are not looked up.
        let ordered = self.best_n.is_some() && blanks > 0;
        let mut windows = std::mem::take(&mut self.bingo_windows);
        windows.clear();
        let full = self.by_used[(1 << self.rack_len) - 1];
        for dir in [ACROSS, DOWN] {
            for lane_no in 0..DIM {
                if lanes >> (dir * DIM + lane_no) & 1 == 0 {
                    continue;
                }
                let lane = &self.lanes[dir * DIM + lane_no];
                let (empties, m) = empty_squares(&lane.tiles, 0);
                if m < RACK_SIZE {
                    continue;
                }
                // Best mode refreshed the memo of every lane with an anchor, and a window
                // without one is skipped before its bound is needed.
                let runs = ordered.then(|| &self.memos[dir * DIM + lane_no].runs);
                for ps in empties[..m].windows(RACK_SIZE) {
                    if !ps.iter().any(|&p| lane.anchor[p]) || ps.iter().any(|&p| lane.cross[p] & fits == 0) {
                        continue;
                    }
                    let bound = match runs {
                        Some(runs) => {
                            let mut c = Coefs::new();
                            ps.iter().for_each(|&p| c.add(lane, &lane.caps, p));
                            let (lo, hi) = (runs.lo(ps[0]), runs.hi(ps[RACK_SIZE - 1]));
                            let existing = runs.before[hi + 1] - runs.before[lo];
                            let score =
                                existing * c.word_mult + c.perp_fixed + BINGO_BONUS + c.paired(&self.rack_scores);
                            score * 1000 + full
                        }
                        None => i32::MAX,
                    };
                    windows.push((bound, (dir * DIM + lane_no) as u8, std::array::from_fn(|i| ps[i] as u8)));
                }
            }
        }
        if ordered {
            windows.sort_unstable_by_key(|w| std::cmp::Reverse(w.0));
        }
        for &(bound, lane, squares) in &windows {
            if bound < self.cut {
                break;
            }
            let lane = lane as usize;
            let ps = squares.map(|p| p as usize);
            // The main word runs on through any board tiles beside the window's ends.
            let tiles = &self.lanes[lane].tiles;
            let (mut lo, mut hi) = (ps[0], ps[RACK_SIZE - 1]);
            while lo > 0 && tiles[lo - 1] != 0 {
                lo -= 1;
            }
            while hi + 1 < DIM && tiles[hi + 1] != 0 {
                hi += 1;
            }
            // Most windows hold no word: found out from the letters played through before
            // anything else is computed, with no sort for one letter or none.
            let (a, b) = if hi + 1 - lo <= RACK_SIZE + 1 {
                let t = tiles[lo..=hi].iter().find(|&&t| t != 0).map_or(0, |&t| letter_of(t));
                if self.through_one_known >> t & 1 == 0 {
                    let through = [t];
                    self.through_one[t as usize] =
                        self.words_through(ctx, anagrams, by_map, real, blanks, &through[..(t != 0) as usize]);
                    self.through_one_known |= 1 << t;
                }
                self.through_one[t as usize]
            } else {
                let (through, nt) = sorted_through(tiles, lo, hi);
                self.words_through(ctx, anagrams, by_map, real, blanks, &through[..nt])
            };
            if a == b {
                continue;
            }
            (self.lane, self.dir, self.lane_no) = (self.lanes[lane], lane / DIM, lane % DIM);
            let through_score = self.lane.tiles[lo..=hi].iter().map(|&t| self.scores[t as usize]).sum();
            for f in a..b {
                let word = anagrams.word(self.found[f as usize]);
                self.place_word(&ps, lo, hi, through_score, word, real, blanks);
            }
        }
        self.bingo_windows = windows;
    }

    /// Range of `found` holding the words of the rack plus `through` (sorted), each blank
    /// standing for any letter, from `anagrams` (the word map when `by_map`); looked up once
    /// per set of through letters and call.
    fn words_through(
        &mut self,
        ctx: Ctx,
        anagrams: &Anagrams,
        by_map: bool,
        real: &[u8],
        blanks: usize,
        through: &[u8],
    ) -> (u32, u32) {
        let k = crate::lexicon::anagrams::key(through);
        if let Some(&(_, a, b)) = self.through_words.iter().find(|e| e.0 == k) {
            return (a, b);
        }
        let start = self.found.len() as u32;
        let (base, n) = merged(real, through);
        if by_map {
            let range = self.look_up(anagrams, &base[..n], blanks);
            self.through_words.push((k, range.0, range.1));
            return range;
        }
        let letters = 1..ctx.dist.size() as u8;
        let look = |extra: &[u8], found: &mut Vec<u32>| {
            let mut all = base;
            all[n..n + extra.len()].copy_from_slice(extra);
            let all = &mut all[..n + extra.len()];
            if all.len() <= crate::lexicon::MAX_WORD_LEN {
                all.sort_unstable();
                found.extend(anagrams.of_sorted(all));
            }
        };
        match blanks {
            0 => look(&[], &mut self.found),
            1 => letters.for_each(|x| look(&[x], &mut self.found)),
            _ => {
                for x in letters.clone() {
                    for y in x..ctx.dist.size() as u8 {
                        look(&[x, y], &mut self.found);
                    }
                }
            }
        }
        let end = self.found.len() as u32;
        self.through_words.push((k, start, end));
        (start, end)
    }

    /// Record `word` on the empty squares `ps` of the loaded lane (the word spanning `lo..=hi`,
    /// whose board tiles score `through`) if it fits there, once for each way of laying it
    /// from the tiles `real` and `blanks` blanks, all of them.
    #[allow(clippy::too_many_arguments)]
    fn place_word(
        &mut self,
        ps: &[usize],
        lo: usize,
        hi: usize,
        through: i32,
        word: &Word,
        real: &[u8],
        blanks: usize,
    ) {
        let l = &self.lane;
        if (lo..=hi).any(|q| l.tiles[q] != 0 && letter_of(l.tiles[q]) != word[q - lo]) {
            return;
        }
        let (mut squares, mut letters, k) = ([0u8; RACK_SIZE], [0u8; RACK_SIZE], ps.len());
        if k == 1 && self.dir == DOWN && l.cross_score[ps[0]] >= 0 {
            return; // listed as the across play (see `found`)
        }
        for (i, &p) in ps.iter().enumerate() {
            (squares[i], letters[i]) = (p as u8, word[p - lo]);
            if l.cross[p] >> letters[i] & 1 == 0 {
                return;
            }
        }
        let (mut main, mut word_mult, mut perp) = (through, 1, 0);
        for (&p, &t) in ps.iter().zip(&letters) {
            let ts = self.scores[t as usize];
            let (lm, wm) = (l.lm[p] as i32, l.wm[p] as i32);
            main += ts * lm;
            word_mult *= wm;
            if l.cross_score[p] >= 0 {
                perp += (l.cross_score[p] as i32 + ts * lm) * wm;
            }
        }
        let bingo = if k == RACK_SIZE { BINGO_BONUS } else { 0 };
        let mut costs = [0; RACK_SIZE];
        for (i, &p) in ps.iter().enumerate() {
            costs[i] = self.letter_worth(p, letters[i], word_mult);
            self.word[p] = letters[i];
        }
        let score = main * word_mult + perp + bingo;
        self.blank_ways(lo, hi, &squares[..k], &costs[..k], score, real, blanks);
        for &p in ps {
            self.word[p] = 0;
        }
    }

    /// Vowels of an opening play placed orthogonally beside a letter premium, which hand the
    /// opponent a cheap double- or triple-letter hot spot.
    fn opening_vowels(&self, start: usize, end: usize) -> i32 {
        (start..=end)
            .filter(|&p| {
                let t = self.word[p];
                let (row, col) = if self.dir == ACROSS { (self.lane_no, p) } else { (p, self.lane_no) };
                t & BLANK_BIT == 0 && self.vowels >> t & 1 == 1 && self.beside_premium[row * DIM + col]
            })
            .count() as i32
    }
}

/// The positions of the set bits of `mask`, lowest first.
pub(crate) fn bits(mut mask: u32) -> impl Iterator<Item = usize> {
    std::iter::from_fn(move || {
        let i = mask.trailing_zeros() as usize;
        mask &= mask.wrapping_sub(1);
        (i < 32).then_some(i)
    })
}

/// The letters of `want` that some word allows on empty square `p` of a lane, given the runs
/// of board tiles beside it in the lane (`runs`: the lane's). From the GADDAG, whose paths
/// include every word's letters up to any point read backwards: a letter may stand before a
/// run if the run read backwards leads on to it, and after a run if the letter, then the run
/// read backwards, is a path. Returns those letters and the letters of `want` settled: all of
/// them, unless `first`, which may stop at the first letter found.
fn extension(kwg: &Kwg, tiles: &[u8; DIM], runs: &Runs, p: usize, want: u64, first: bool) -> (u64, u64) {
    // Follow the letters of `tiles[a..b]` backwards from `node`'s children: the node reached.
    let backwards = |mut node: u32, a: usize, b: usize| {
        for q in (a..b).rev() {
            node = kwg.step(node).child(letter_of(tiles[q]))?;
        }
        Some(node)
    };
    let (lo, hi) = (runs.lo(p), runs.hi(p));
    // Node 1's children are the GADDAG's root list.
    let mut node = 1;
    let mut letters = want;
    if hi > p {
        match backwards(node, p + 1, hi + 1) {
            Some(n) => {
                node = n;
                letters &= kwg.step(n).kids();
            }
            None => letters = 0,
        }
    }
    if lo < p {
        let from = kwg.step(node);
        let mut after = 0;
        while letters != 0 {
            let t = letters.trailing_zeros() as u8;
            letters &= letters - 1;
            if from.child(t).is_some_and(|n| backwards(n, lo, p).is_some()) {
                after |= 1 << t;
                if first {
                    return (after, want & !letters);
                }
            }
        }
        letters = after;
    }
    (letters, want)
}

/// The letters of the board's tiles in `lo..=hi`, sorted, and how many.
fn sorted_through(tiles: &[u8; DIM], lo: usize, hi: usize) -> ([u8; DIM], usize) {
    let (mut through, mut n) = ([0u8; DIM], 0);
    for &t in tiles[lo..=hi].iter().filter(|&&t| t != 0) {
        through[n] = letter_of(t);
        n += 1;
    }
    through[..n].sort_unstable();
    (through, n)
}

/// The letters of `a` and `b` (each sorted), sorted, and how many.
#[inline]
fn merged(a: &[u8], b: &[u8]) -> ([u8; 2 * DIM], usize) {
    let (mut out, mut i, mut j) = ([0u8; 2 * DIM], 0, 0);
    while i < a.len() || j < b.len() {
        if j == b.len() || (i < a.len() && a[i] <= b[j]) {
            out[i + j] = a[i];
            i += 1;
        } else {
            out[i + j] = b[j];
            j += 1;
        }
    }
    (out, i + j)
}

/// What best-move search works out about one lane from its tiles alone, kept between calls
/// (between two turns most lanes are unchanged): its runs, and its `extension` sets as far as
/// they have been asked for.
#[derive(Clone, Copy)]
struct LaneMemo {
    /// The graph (`Kwg::id`) and tiles it holds for; graph 0 (no graph's): nothing yet. Tile
    /// scores are the generator's (`scores`): a change of them clears every memo.
    graph: u64,
    tiles: [u8; DIM],
    runs: Runs,
    /// By square: the letters asked about so far, and those of them some word admits.
    asked: [u64; DIM],
    admitted: [u64; DIM],
}

impl LaneMemo {
    const NONE: Self = LaneMemo { graph: 0, tiles: [0; DIM], runs: Runs::NONE, asked: [0; DIM], admitted: [0; DIM] };

    /// Make this the memo of a lane holding `tiles` in `kwg`'s game, afresh if it held another.
    #[inline]
    fn refresh(&mut self, kwg: &Kwg, tiles: &[u8; DIM], scores: &[i32; 256]) {
        if self.graph != kwg.id() || self.tiles != *tiles {
            *self = LaneMemo {
                graph: kwg.id(),
                tiles: *tiles,
                runs: Runs::of(tiles, |t| scores[t as usize]),
                ..LaneMemo::NONE
            };
        }
    }

    /// `extension(kwg, tiles, runs, p, want)`, working out only the letters not asked before.
    #[inline]
    fn admit(&mut self, kwg: &Kwg, p: usize, want: u64) -> u64 {
        let new = want & !self.asked[p];
        if new != 0 {
            self.admitted[p] |= extension(kwg, &self.tiles, &self.runs, p, new, false).0;
            self.asked[p] |= new;
        }
        want & self.admitted[p]
    }

    /// Whether `admit` would admit some letter of `want`, working out no more letters than
    /// that takes (a square only a blank fits asks about every letter).
    #[inline]
    fn admits_any(&mut self, kwg: &Kwg, p: usize, want: u64) -> bool {
        let new = want & !self.asked[p];
        if want & self.admitted[p] == 0 && new != 0 {
            let (admitted, settled) = extension(kwg, &self.tiles, &self.runs, p, new, true);
            self.admitted[p] |= admitted;
            self.asked[p] |= settled;
        }
        want & self.admitted[p] != 0
    }
}

/// A lane's runs of board tiles: the face values of the tiles before each square, and each
/// square's run (the square itself when it touches no tile on that side) as its first and last
/// squares; so that a window's main word and its board tiles' score come without a scan. Bytes
/// for squares: thirty lanes' memos stay small in the cache.
#[derive(Clone, Copy)]
pub(crate) struct Runs {
    pub(crate) before: [i32; DIM + 1],
    lo: [u8; DIM],
    hi: [u8; DIM],
}

impl Runs {
    const NONE: Self = Runs { before: [0; DIM + 1], lo: [0; DIM], hi: [0; DIM] };

    /// The runs of `tiles`, a board tile scoring `score(tile)`.
    pub(crate) fn of(tiles: &[u8; DIM], score: impl Fn(u8) -> i32) -> Self {
        let mut r = Runs { before: [0; DIM + 1], lo: [0; DIM], hi: [0; DIM] };
        for q in 0..DIM {
            r.before[q + 1] = r.before[q] + if tiles[q] != 0 { score(tiles[q]) } else { 0 };
            r.lo[q] = if q > 0 && tiles[q - 1] != 0 { r.lo[q - 1] } else { q as u8 };
        }
        for q in (0..DIM).rev() {
            r.hi[q] = if q + 1 < DIM && tiles[q + 1] != 0 { r.hi[q + 1] } else { q as u8 };
        }
        r
    }

    /// First square of `p`'s run.
    #[inline]
    pub(crate) fn lo(&self, p: usize) -> usize {
        self.lo[p] as usize
    }

    /// Last square of `p`'s run.
    #[inline]
    pub(crate) fn hi(&self, p: usize) -> usize {
        self.hi[p] as usize
    }
}

/// A window's squares as it grows rightwards: what each placed tile's face value is
/// multiplied by (its letter premium times the word multiplier, plus its cross-word's
/// multiplier), kept highest first, and the rest of its score bound.
struct Coefs {
    k: usize,
    coef: [i32; RACK_SIZE],
    lms: [i32; RACK_SIZE],
    perps: [i32; RACK_SIZE],
    word_mult: i32,
    perp_fixed: i32,
    lm_cap: i32,
    perp_cap: i32,
}

impl Coefs {
    fn new() -> Self {
        Coefs {
            k: 0,
            coef: [0; RACK_SIZE],
            lms: [0; RACK_SIZE],
            perps: [0; RACK_SIZE],
            word_mult: 1,
            perp_fixed: 0,
            lm_cap: 0,
            perp_cap: 0,
        }
    }

    #[inline]
    fn add(&mut self, l: &Lane, caps: &[i32; DIM], p: usize) {
        let (lm, wm, i) = (l.lm[p] as i32, l.wm[p] as i32, self.k);
        self.k += 1;
        self.lms[i] = lm;
        self.perps[i] = if l.cross_score[p] >= 0 { lm * wm } else { 0 };
        if l.cross_score[p] >= 0 {
            self.perp_fixed += l.cross_score[p] as i32 * wm;
        }
        self.lm_cap += lm * caps[p];
        self.perp_cap += self.perps[i] * caps[p];
        if wm == 1 {
            self.insert(i, lm * self.word_mult + self.perps[i]);
        } else {
            // A word premium changes every coefficient (rare: re-sort them all).
            self.word_mult *= wm;
            for j in 0..self.k {
                self.insert(j, self.lms[j] * self.word_mult + self.perps[j]);
            }
        }
    }

    /// Insert `c` among the first `n` coefficients, highest first.
    #[inline]
    fn insert(&mut self, n: usize, c: i32) {
        let mut j = n;
        while j > 0 && self.coef[j - 1] < c {
            self.coef[j] = self.coef[j - 1];
            j -= 1;
        }
        self.coef[j] = c;
    }

    /// Bound on the score of the placed tiles with these face values (highest first): best on
    /// best (rearrangement inequality), or, if lower, each square taking the best tile its
    /// cross-set admits.
    #[inline]
    fn paired(&self, scores: &[i32; RACK_SIZE]) -> i32 {
        let paired: i32 = self.coef[..self.k].iter().zip(scores).map(|(c, s)| c * s).sum();
        paired.min(self.lm_cap * self.word_mult + self.perp_cap)
    }
}

/// The lane's empty squares from `left_limit` on: their positions, then how many.
#[inline]
pub(crate) fn empty_squares(tiles: &[u8; DIM], left_limit: usize) -> ([usize; DIM], usize) {
    let mut empties = [0usize; DIM];
    let mut m = 0;
    for (p, &t) in tiles.iter().enumerate().skip(left_limit) {
        if t == 0 {
            empties[m] = p;
            m += 1;
        }
    }
    (empties, m)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `extension` against its definition: a letter may stand between the runs beside a square
    /// when some word holds the runs with the letter between them, contiguous.
    #[test]
    fn extension_admits_exactly_the_letters_some_word_has_there() {
        let words: Vec<Vec<u8>> =
            ["CAT", "CATS", "SCAT", "ACTS", "TACT", "AT", "TA", "AS", "QI", "QAT", "STAT", "ASCOT"]
                .iter()
                .map(|w| w.bytes().map(|b| b - b'A' + 1).collect())
                .collect();
        let kwg = Kwg::build(&words).unwrap();
        // Every run that occurs in some word, and the empty run, on either side of square 5.
        let mut runs: Vec<Vec<u8>> = vec![vec![]];
        for w in &words {
            for a in 0..w.len() {
                for b in a + 1..=w.len().min(a + 4) {
                    runs.push(w[a..b].to_vec());
                }
            }
        }
        runs.sort();
        runs.dedup();
        let p = 5;
        let mut checked = 0;
        for left in &runs {
            for right in &runs {
                if left.is_empty() && right.is_empty() {
                    continue;
                }
                let mut tiles = [0u8; DIM];
                tiles[p - left.len()..p].copy_from_slice(left);
                tiles[p + 1..p + 1 + right.len()].copy_from_slice(right);
                let want = (1..=26u64).fold(0, |m, t| m | 1 << t);
                let runs = Runs::of(&tiles, |_| 0);
                let (got, settled) = extension(&kwg, &tiles, &runs, p, want, false);
                assert_eq!(settled, want);
                let expected = (1..=26u8).fold(0u64, |m, t| {
                    let pattern: Vec<u8> = left.iter().copied().chain([t]).chain(right.iter().copied()).collect();
                    let held = words.iter().any(|w| w.windows(pattern.len()).any(|x| x == pattern));
                    if held { m | 1 << t } else { m }
                });
                assert_eq!(got, expected, "left {left:?} right {right:?}");
                // Only letters asked about are answered.
                assert_eq!(extension(&kwg, &tiles, &runs, p, want & !(1 << 20), false).0, expected & !(1 << 20));
                // Asked for the first, it finds one when there is one, and what it settles is
                // right.
                let (some, settled) = extension(&kwg, &tiles, &runs, p, want, true);
                assert_eq!(some != 0, expected != 0);
                assert_eq!(expected & settled, some, "left {left:?} right {right:?}");
                checked += 1;
            }
        }
        assert!(checked > 500, "{checked} lanes");
    }
}
