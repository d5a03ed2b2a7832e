//! The word graph: KWG, the format of the open engines — a DAWG and a GADDAG sharing one flat
//! array of `u32` nodes, so that users can bring `.kwg` files built elsewhere.
//!
//! Node layout: tile in bits 24-31, `accepts` (a word ends with this tile) bit 23, `is_end` (last
//! of its sibling list) bit 22, arc index (first node of the children's sibling list, 0 = none)
//! bits 0-21. Node 0's arc is the DAWG root list, node 1's the GADDAG root list. In the GADDAG,
//! tile 0 is the separator between the reversed prefix and the suffix. Siblings are sorted by tile.
//!
//! Invariant (checked on load): every arc index is inside the array, every sibling list is
//! terminated by an `is_end` node before the array ends (so no walk can run off the array), and
//! siblings are in strictly increasing tile order (so a child is found by counting the tiles
//! below it in its parent's mask of its children's letters: see `Step`).
//!
//! # Design notes
//!
//! the KWG word graph (DAWG + GADDAG in one `u32` array, the open engines' layout), built by a
//! bottom-up minimising builder or read from a `.kwg`; plain word lists are parsed here. Walks go
//! through `Kwg::steps`, derived on load: per node its arc, whether a word ends there, and its
//! children's letters as a `u64` mask side by side (a `Step`), so that a child is found by popcount
//! and a step from node to child reads one entry (a list's root is node 0's children in the DAWG,
//! node 1's in the GADDAG). Eight bytes a node for alphabets of up to 40 letters (`NarrowSteps`),
//! sixteen beyond (`WideSteps`); the move generator's recursion is compiled for each layout (the
//! `Steps` trait) and picks it once an anchor, other walks (cross-sets, leaves) call `Kwg::step`.
//! The generator prefetches a node's playable children's children together before it walks the
//! first.

use crate::error::{DataError, Located};
use crate::tiles::Distribution;
use std::collections::HashMap;
use std::path::Path;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

pub mod anagrams;
use anagrams::Anagrams;

const ACCEPTS: u32 = 1 << 23;
const IS_END: u32 = 1 << 22;
const ARC_MASK: u32 = (1 << 22) - 1;
/// Longest word the engine accepts (the board's side).
pub const MAX_WORD_LEN: usize = 15;
/// The GADDAG separator tile.
pub const SEPARATOR: u8 = 0;
/// Deepest word a walk of the DAWG lists: longer paths (a hostile file's cycles) are cut off.
const WALK_DEPTH: usize = 64;

#[derive(Clone, Debug)]
pub struct Kwg {
    nodes: Vec<u32>,
    /// Per node: the node and its children's letters, so that a search stepping from node to
    /// child reads one entry a step (see `Step`).
    steps: StepStore,
    /// The DAWG's long words by alphagram, built on first use (leave graphs never need it).
    anagrams: OnceLock<Anagrams>,
    /// Every word by alphagram, built on first use by best-move search.
    word_map: OnceLock<Anagrams>,
    /// Distinct for each graph loaded or built in this process (a clone keeps it): what data
    /// derived from the graph and kept across calls is checked against.
    id: u64,
}

/// A node as a search steps through it: where its children are, whether a word ends here, and
/// the children's letters. Searches read this rather than the node and its children's sibling
/// list apart: a step from node to child is then one cache miss, not two.
#[derive(Clone, Copy, Debug)]
pub struct Step {
    /// Arc in bits 0-21, `accepts` in bit 22.
    link: u32,
    kids: u64,
}

/// `Step::link`'s `accepts` bit.
const STEP_ACCEPTS: u32 = 1 << 22;

impl Step {
    #[inline(always)]
    pub fn accepts(self) -> bool {
        self.link & STEP_ACCEPTS != 0
    }
    /// First node of the children's sibling list (0: none).
    #[inline(always)]
    pub fn arc(self) -> u32 {
        self.link & ARC_MASK
    }
    /// The children's tiles as a bitmask.
    #[inline(always)]
    pub fn kids(self) -> u64 {
        self.kids
    }
    /// The child with `tile`'s node index, if the children hold it.
    #[inline(always)]
    pub fn child(self, tile: u8) -> Option<u32> {
        (tile < 64 && self.kids >> tile & 1 == 1).then(|| self.arc() + (self.kids & ((1u64 << tile) - 1)).count_ones())
    }
}

/// Every node's `Step`, derived on load.
#[derive(Clone, Debug)]
enum StepStore {
    /// A `Step` packed in eight bytes, the children's letters above its `link`: for graphs
    /// whose tiles are below `NARROW_TILES` (alphabets of up to 40 letters), so that eight
    /// nodes share a cache line.
    Narrow(Vec<u64>),
    /// Sixteen bytes a node, for larger alphabets.
    Wide(Vec<Step>),
}

/// Where a `StepStore::Narrow` entry's letters start: above its `link` (arc and `accepts`).
const NARROW_SHIFT: u32 = 23;
/// Tiles a `StepStore::Narrow` entry has room for.
const NARROW_TILES: u32 = 64 - NARROW_SHIFT;

impl StepStore {
    fn new(nodes: &[u32], letters: &[u64]) -> Self {
        let step = |node: u32| {
            let arc = node & ARC_MASK;
            let accepts = if node & ACCEPTS != 0 { STEP_ACCEPTS } else { 0 };
            Step { link: arc | accepts, kids: if arc == 0 { 0 } else { letters[arc as usize] } }
        };
        if letters.iter().all(|&l| l >> NARROW_TILES == 0) {
            StepStore::Narrow(nodes.iter().map(|&n| step(n)).map(|s| s.kids << NARROW_SHIFT | s.link as u64).collect())
        } else {
            StepStore::Wide(nodes.iter().map(|&n| step(n)).collect())
        }
    }
}

/// A graph's `Step`s as a search reads them. One type per layout, so that a search compiled
/// for each chooses its layout once (see `Kwg::steps`), not at every step.
pub trait Steps: Copy {
    /// Node `i`'s step.
    fn step(self, i: u32) -> Step;
    /// Start fetching node `i`'s step into the cache.
    fn prefetch(self, i: u32);
}

#[derive(Clone, Copy)]
pub struct NarrowSteps<'a>(&'a [u64]);

#[derive(Clone, Copy)]
pub struct WideSteps<'a>(&'a [Step]);

impl Steps for NarrowSteps<'_> {
    #[inline(always)]
    fn step(self, i: u32) -> Step {
        let p = self.0[i as usize];
        Step { link: p as u32 & (ARC_MASK | STEP_ACCEPTS), kids: p >> NARROW_SHIFT }
    }
    #[inline(always)]
    fn prefetch(self, i: u32) {
        if let Some(p) = self.0.get(i as usize) {
            crate::memory::prefetch(p);
        }
    }
}

impl Steps for WideSteps<'_> {
    #[inline(always)]
    fn step(self, i: u32) -> Step {
        self.0[i as usize]
    }
    #[inline(always)]
    fn prefetch(self, i: u32) {
        if let Some(s) = self.0.get(i as usize) {
            crate::memory::prefetch(s);
        }
    }
}

/// A graph's steps in the layout it has.
pub enum StepLayout<'a> {
    Narrow(NarrowSteps<'a>),
    Wide(WideSteps<'a>),
}

/// Graphs are equal when their nodes are: the rest is derived.
impl PartialEq for Kwg {
    fn eq(&self, other: &Self) -> bool {
        self.nodes == other.nodes
    }
}
impl Eq for Kwg {}

impl Kwg {
    #[inline]
    pub fn tile(&self, i: u32) -> u8 {
        (self.nodes[i as usize] >> 24) as u8
    }
    #[inline]
    pub fn accepts(&self, i: u32) -> bool {
        self.nodes[i as usize] & ACCEPTS != 0
    }
    #[inline]
    pub fn is_end(&self, i: u32) -> bool {
        self.nodes[i as usize] & IS_END != 0
    }
    #[inline]
    pub fn arc(&self, i: u32) -> u32 {
        self.nodes[i as usize] & ARC_MASK
    }
    pub fn dawg_root(&self) -> u32 {
        self.arc(0)
    }
    pub fn gaddag_root(&self) -> u32 {
        self.arc(1)
    }
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// This graph's number in this process (see the field).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The same graph with its steps in the wide layout whatever its alphabet, to check the
    /// two layouts against each other (larger alphabets get it anyway).
    pub fn with_wide_steps(mut self) -> Self {
        let wide = (0..self.nodes.len() as u32).map(|i| self.step(i)).collect();
        self.steps = StepStore::Wide(wide);
        self
    }

    /// Node `i`'s `Step`, for walks outside the move generator's recursion (which reads
    /// `steps` in the graph's layout, chosen once).
    #[inline]
    pub fn step(&self, i: u32) -> Step {
        match self.steps() {
            StepLayout::Narrow(s) => s.step(i),
            StepLayout::Wide(s) => s.step(i),
        }
    }

    /// Every node's `Step`, for searches that walk the graph.
    pub fn steps(&self) -> StepLayout<'_> {
        match &self.steps {
            StepStore::Narrow(v) => StepLayout::Narrow(NarrowSteps(v)),
            StepStore::Wide(v) => StepLayout::Wide(WideSteps(v)),
        }
    }

    /// Iterate the nodes of the sibling list starting at `list`.
    #[inline]
    pub fn siblings(&self, list: u32) -> Siblings<'_> {
        Siblings { kwg: self, next: list }
    }

    /// The DAWG's words of a rack's length or more, by alphagram (the word map when it is
    /// built: it holds them too).
    pub fn anagrams(&self) -> &Anagrams {
        match self.word_map.get() {
            Some(map) => map,
            None => self.anagrams.get_or_init(|| Anagrams::bingos(self)),
        }
    }

    /// The word map: every word by alphagram, also less one letter (tens of MB for a large
    /// lexicon; see `movegen::Generator::use_word_map`).
    pub fn word_map(&self) -> &Anagrams {
        self.word_map.get_or_init(|| Anagrams::word_map(self))
    }

    /// Whether the word map has been built.
    pub fn has_word_map(&self) -> bool {
        self.word_map.get().is_some()
    }

    /// Whether `word` (letters, no blank bits) is in the DAWG.
    pub fn contains(&self, word: &[u8]) -> bool {
        // Node 0's children are the DAWG's root list.
        let mut node = 0;
        for &t in word {
            let Some(n) = self.step(node).child(t) else { return false };
            node = n;
        }
        !word.is_empty() && self.step(node).accepts()
    }

    /// Every word of the DAWG in graph order (sorted by tile for a well-formed graph).
    pub fn words(&self) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        self.for_each_word(|w| out.push(w.to_vec()));
        out
    }

    /// Call `f` with every word of the DAWG in graph order, without allocating one per word.
    pub fn for_each_word(&self, mut f: impl FnMut(&[u8])) {
        self.visit(self.dawg_root(), &mut [0; WALK_DEPTH], 0, &mut f);
    }

    fn visit(&self, list: u32, prefix: &mut [u8; WALK_DEPTH], len: usize, f: &mut impl FnMut(&[u8])) {
        // The depth bound keeps a hostile file with a cycle from recursing forever.
        if len >= WALK_DEPTH {
            return;
        }
        for n in self.siblings(list) {
            prefix[len] = self.tile(n);
            if self.accepts(n) {
                f(&prefix[..=len]);
            }
            self.visit(self.arc(n), prefix, len + 1, f);
        }
    }

    /// Read a `.kwg` file (little-endian `u32` nodes).
    pub fn from_bytes(bytes: &[u8], source: &str) -> Result<Self, DataError> {
        if !bytes.len().is_multiple_of(4) {
            return Err(DataError::new(
                source,
                format!("size {} is not a multiple of 4 bytes: truncated or not a KWG", bytes.len()),
            ));
        }
        let nodes: Vec<u32> = bytes.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
        Self::from_nodes(nodes, source)
    }

    /// Check the structural invariant and wrap the nodes.
    pub fn from_nodes(nodes: Vec<u32>, source: &str) -> Result<Self, DataError> {
        if nodes.len() < 2 {
            return Err(DataError::new(source, "fewer than 2 nodes: truncated or not a KWG"));
        }
        if nodes.len() > ARC_MASK as usize + 1 {
            return Err(DataError::new(source, "more nodes than a 22-bit arc index can address"));
        }
        let len = nodes.len() as u32;
        for (i, &n) in nodes.iter().enumerate() {
            if n & ARC_MASK >= len {
                return Err(DataError::new(
                    source,
                    format!("node {i} points past the end ({} >= {len}): corrupt or truncated", n & ARC_MASK),
                ));
            }
        }
        if nodes[nodes.len() - 1] & IS_END == 0 {
            return Err(DataError::new(source, "last sibling list is unterminated: corrupt or truncated"));
        }
        // The move generator finds children by counting lower tiles: siblings must be sorted.
        if let Some(i) = (0..nodes.len() - 1).find(|&i| nodes[i] & IS_END == 0 && nodes[i + 1] >> 24 <= nodes[i] >> 24)
        {
            return Err(DataError::new(
                source,
                format!("siblings at node {i} are not in increasing tile order: corrupt"),
            ));
        }
        // Each node's letters and its later siblings': a list's letters at its first node.
        let mut letters = vec![0u64; nodes.len()];
        for i in (0..nodes.len()).rev() {
            let tile = nodes[i] >> 24;
            let own = if tile < 64 { 1u64 << tile } else { 0 };
            let later = if nodes[i] & IS_END == 0 && i + 1 < nodes.len() { letters[i + 1] } else { 0 };
            letters[i] = own | later;
        }
        let steps = StepStore::new(&nodes, &letters);
        static NEXT_ID: AtomicU64 = AtomicU64::new(1);
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        Ok(Self { nodes, steps, anagrams: OnceLock::new(), word_map: OnceLock::new(), id })
    }

    pub fn load(path: &Path) -> Result<Self, DataError> {
        let bytes = crate::error::read_bytes(path)?;
        Self::from_bytes(&bytes, &path.display().to_string())
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        self.nodes.iter().flat_map(|n| n.to_le_bytes()).collect()
    }

    /// Check that every tile in the graph belongs to `dist` (the separator aside).
    pub fn check_alphabet(&self, dist: &Distribution, source: &str) -> Result<(), DataError> {
        let max = dist.size() as u8;
        match self.nodes.iter().skip(2).position(|&n| (n >> 24) as u8 >= max) {
            Some(i) => Err(DataError::new(
                source,
                format!(
                    "node {} holds tile {} outside the {}-letter distribution",
                    i + 2,
                    self.nodes[i + 2] >> 24,
                    max - 1
                ),
            )),
            None => Ok(()),
        }
    }

    /// Build a KWG holding the DAWG and GADDAG of `words` (each a sequence of letters `1..`).
    pub fn build(words: &[Vec<u8>]) -> Result<Self, DataError> {
        Self::build_parts(words, true)
    }

    /// Build a KWG with only the DAWG half (node 1's arc is empty), as leave tables use.
    pub fn build_dawg(words: &[Vec<u8>]) -> Result<Self, DataError> {
        Self::build_parts(words, false)
    }

    fn build_parts(words: &[Vec<u8>], with_gaddag: bool) -> Result<Self, DataError> {
        let mut dawg: Vec<&[u8]> = words.iter().map(|w| w.as_slice()).collect();
        dawg.sort_unstable();
        dawg.dedup();
        // GADDAG strings of ABC: CBA, BA^C, A^BC (reversed prefix, separator, suffix).
        let mut gaddag: Vec<Vec<u8>> = Vec::new();
        for w in dawg.iter().filter(|_| with_gaddag) {
            for split in 1..=w.len() {
                let mut s: Vec<u8> = w[..split].iter().rev().copied().collect();
                if split < w.len() {
                    s.push(SEPARATOR);
                    s.extend_from_slice(&w[split..]);
                }
                gaddag.push(s);
            }
        }
        gaddag.sort_unstable();
        gaddag.dedup();
        let gaddag: Vec<&[u8]> = gaddag.iter().map(|w| w.as_slice()).collect();
        let mut b = Builder { nodes: vec![0, 0], lists: HashMap::new() };
        let dawg_root = b.list(&dawg, 0)?;
        let gaddag_root = b.list(&gaddag, 0)?;
        b.nodes[0] = IS_END | dawg_root;
        b.nodes[1] = IS_END | gaddag_root;
        Self::from_nodes(breadth_first(&b.nodes), "built graph")
    }
}

/// Lay the sibling lists out breadth-first from the roots (GADDAG first, the move generator's
/// hot path): the upper levels, which every search visits, end up together in a few cache lines.
fn breadth_first(old: &[u32]) -> Vec<u32> {
    let mut new_at = vec![u32::MAX; old.len()];
    let mut order = Vec::new();
    let mut queue = std::collections::VecDeque::new();
    let mut next = 2u32;
    for root in [old[1] & ARC_MASK, old[0] & ARC_MASK] {
        if root != 0 && new_at[root as usize] == u32::MAX {
            new_at[root as usize] = 0;
            queue.push_back(root);
        }
    }
    while let Some(list) = queue.pop_front() {
        new_at[list as usize] = next;
        order.push(list);
        let mut i = list;
        loop {
            next += 1;
            let child = old[i as usize] & ARC_MASK;
            if child != 0 && new_at[child as usize] == u32::MAX {
                new_at[child as usize] = 0; // queued
                queue.push_back(child);
            }
            if old[i as usize] & IS_END != 0 {
                break;
            }
            i += 1;
        }
    }
    let relink = |n: u32| {
        let arc = n & ARC_MASK;
        if arc == 0 { n } else { (n & !ARC_MASK) | new_at[arc as usize] }
    };
    let mut nodes = vec![relink(old[0]), relink(old[1])];
    for list in order {
        let mut i = list;
        loop {
            nodes.push(relink(old[i as usize]));
            if old[i as usize] & IS_END != 0 {
                break;
            }
            i += 1;
        }
    }
    nodes
}

/// Bottom-up minimising builder: each distinct sibling list (with its children already
/// placed) is stored once, so equal suffix structures are shared (a minimal graph).
struct Builder {
    nodes: Vec<u32>,
    lists: HashMap<Vec<u32>, u32>,
}

impl Builder {
    /// Place the sibling list for the suffixes at `depth` of the sorted strings `strs`
    /// (all sharing the same prefix of length `depth`); returns its index, 0 if empty.
    fn list(&mut self, strs: &[&[u8]], depth: usize) -> Result<u32, DataError> {
        let mut list = Vec::new();
        let mut i = 0;
        while i < strs.len() {
            if strs[i].len() <= depth {
                i += 1;
                continue;
            }
            let tile = strs[i][depth];
            let mut j = i;
            while j < strs.len() && strs[j].len() > depth && strs[j][depth] == tile {
                j += 1;
            }
            let group = &strs[i..j];
            let accepts = group.iter().any(|s| s.len() == depth + 1);
            let child = self.list(group, depth + 1)?;
            list.push((tile as u32) << 24 | if accepts { ACCEPTS } else { 0 } | child);
            i = j;
        }
        let Some(last) = list.last_mut() else { return Ok(0) };
        *last |= IS_END;
        if let Some(&at) = self.lists.get(&list) {
            return Ok(at);
        }
        let at = self.nodes.len() as u32;
        if at as usize + list.len() > ARC_MASK as usize {
            return Err(DataError::new("lexicon", "word list too large for a KWG (over 4M nodes)"));
        }
        self.nodes.extend_from_slice(&list);
        self.lists.insert(list, at);
        Ok(at)
    }
}

pub struct Siblings<'a> {
    kwg: &'a Kwg,
    next: u32,
}

impl Iterator for Siblings<'_> {
    type Item = u32;
    #[inline]
    fn next(&mut self) -> Option<u32> {
        if self.next == 0 {
            return None;
        }
        let i = self.next;
        self.next = if self.kwg.is_end(i) { 0 } else { i + 1 };
        Some(i)
    }
}

/// Parse a plain word list (one word per line, either case, `#` comments and blank lines
/// ignored) into letter sequences, rejecting unknown characters and over-long words.
pub fn parse_word_list(text: &str, dist: &Distribution, source: &str) -> Result<Vec<Vec<u8>>, DataError> {
    let mut words = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let at = Located::new(source, i + 1);
        let word = line.split_whitespace().next().unwrap_or("");
        let tiles: Vec<u8> = word
            .chars()
            .map(|c| {
                dist.letter(c).ok_or_else(|| at.err(format!("`{c}` in `{word}` is not a letter of the distribution")))
            })
            .collect::<Result<_, _>>()?;
        if tiles.len() > MAX_WORD_LEN {
            return Err(
                at.err(format!("`{word}` has {} letters; at most {MAX_WORD_LEN} fit on the board", tiles.len()))
            );
        }
        words.push(tiles);
    }
    if words.is_empty() {
        return Err(DataError::new(source, "no words"));
    }
    Ok(words)
}

/// Load a lexicon from a `.kwg` file or a plain word list (decided by content, not name:
/// a KWG is binary, a word list is text).
pub fn load_lexicon(path: &Path, dist: &Distribution) -> Result<Kwg, DataError> {
    let source = path.display().to_string();
    let bytes = crate::error::read_bytes(path)?;
    let is_kwg = path.extension().is_some_and(|e| e.eq_ignore_ascii_case("kwg"));
    let kwg = if is_kwg {
        Kwg::from_bytes(&bytes, &source)?
    } else {
        let text = String::from_utf8(bytes)
            .map_err(|_| DataError::new(&source, "not UTF-8 text (a binary graph should be named *.kwg)"))?;
        Kwg::build(&parse_word_list(&text, dist, &source)?)?
    };
    kwg.check_alphabet(dist, &source)?;
    Ok(kwg)
}
