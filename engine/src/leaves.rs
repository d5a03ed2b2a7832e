//! Leave values: what the tiles kept on the rack are worth for future turns.
//!
//! Stored as KLV2, the open engines' format (little-endian): `u32` node count, that many KWG
//! nodes of a DAWG whose words are sorted leaves (blank = tile 0), `u32` value count, that many
//! `f32` values; a leave's value is at its word index in the DAWG's sorted order.
//!
//! # Design notes
//!
//! KLV2 leave tables (`Klv`) and `RackLeaves`, the 128 subset values of one rack (one walk of the
//! leave graph, each step by letter mask, the index from the word counts).

use crate::error::DataError;
use crate::lexicon::Kwg;
use std::path::Path;

#[derive(Clone, Debug)]
pub struct Klv {
    kwg: Kwg,
    /// `counts[i]`: words reachable through node `i` and its later siblings.
    counts: Vec<u32>,
    values: Vec<f32>,
}

impl Klv {
    pub fn from_bytes(bytes: &[u8], source: &str) -> Result<Self, DataError> {
        let err = |m: &str| DataError::new(source, m.to_string());
        let word = |at: usize| -> Option<u32> { Some(u32::from_le_bytes(bytes.get(at..at + 4)?.try_into().ok()?)) };
        let n = word(0).ok_or_else(|| err("truncated: no node count"))? as usize;
        let nodes_end = n
            .checked_mul(4)
            .and_then(|b| b.checked_add(4))
            .filter(|&e| e <= bytes.len())
            .ok_or_else(|| err("truncated: fewer nodes than the node count says"))?;
        let kwg = Kwg::from_bytes(&bytes[4..nodes_end], source)?;
        let v = word(nodes_end).ok_or_else(|| err("truncated: no value count"))? as usize;
        let values_end =
            v.checked_mul(4).and_then(|b| b.checked_add(nodes_end + 4)).ok_or_else(|| err("value count overflows"))?;
        if values_end != bytes.len() {
            return Err(err(&format!("value count {v} does not match the file size (truncated or trailing bytes)")));
        }
        let values: Vec<f32> =
            bytes[nodes_end + 4..].chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
        if let Some(i) = values.iter().position(|v| !v.is_finite()) {
            return Err(err(&format!("value {i} is not a finite number")));
        }
        let counts = word_counts(&kwg).ok_or_else(|| err("leave graph has a cycle: corrupt"))?;
        let root = kwg.dawg_root();
        let words = if root == 0 { 0 } else { counts[root as usize] };
        if words as usize != values.len() {
            return Err(err(&format!("{} leaves but {} values", words, values.len())));
        }
        Ok(Self { kwg, counts, values })
    }

    pub fn load(path: &Path) -> Result<Self, DataError> {
        Self::from_bytes(&crate::error::read_bytes(path)?, &path.display().to_string())
    }

    /// Build from (sorted leave, value) pairs; leaves must be sorted tile sequences.
    pub fn build(mut entries: Vec<(Vec<u8>, f32)>) -> Result<Self, DataError> {
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        entries.dedup_by(|a, b| a.0 == b.0);
        let words: Vec<Vec<u8>> = entries.iter().map(|e| e.0.clone()).collect();
        let kwg = Kwg::build_dawg(&words)?;
        let counts = word_counts(&kwg).expect("built graph is acyclic");
        Ok(Self { kwg, counts, values: entries.into_iter().map(|e| e.1).collect() })
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        let nodes = self.kwg.to_bytes();
        let mut out = Vec::with_capacity(8 + nodes.len() + 4 * self.values.len());
        out.extend_from_slice(&((nodes.len() / 4) as u32).to_le_bytes());
        out.extend_from_slice(&nodes);
        out.extend_from_slice(&(self.values.len() as u32).to_le_bytes());
        for v in &self.values {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out
    }

    pub fn len(&self) -> usize {
        self.values.len()
    }
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// From node `parent`'s children, reached with `idx` words before them, find `tile`: its
    /// node and the index the word ending there would have (the words of the siblings before
    /// it come from the counts, without a walk along them).
    #[inline]
    fn step(&self, parent: u32, idx: u32, tile: u8) -> Option<(u32, u32)> {
        let s = self.kwg.step(parent);
        let i = s.child(tile)?;
        Some((i, idx + self.counts[s.arc() as usize] - self.counts[i as usize]))
    }

    /// Word index of a sorted leave, if the table has it.
    pub fn index(&self, leave: &[u8]) -> Option<usize> {
        // Node 0's children are the DAWG's root list.
        let (mut parent, mut idx) = (0, 0);
        let mut node = None;
        for &t in leave {
            if let Some(n) = node {
                idx += self.kwg.accepts(n) as u32;
                parent = n;
            }
            let (n, i) = self.step(parent, idx, t)?;
            node = Some(n);
            idx = i;
        }
        node.filter(|&n| self.kwg.accepts(n)).map(|_| idx as usize)
    }

    /// Millipoints of a leave value, rounded: what equity uses.
    #[inline]
    pub fn millis(value: f32) -> i32 {
        (value as f64 * 1000.0).round() as i32
    }

    /// Value of a sorted leave in points; 0 for the empty leave and unknown leaves.
    pub fn value(&self, leave: &[u8]) -> f32 {
        self.index(leave).map_or(0.0, |i| self.values[i])
    }

    /// Every (leave, value) pair in index order.
    pub fn entries(&self) -> Vec<(Vec<u8>, f32)> {
        self.kwg.words().into_iter().zip(self.values.iter().copied()).collect()
    }
}

/// Per-node counts of words through a node and its later siblings; `None` on a cycle.
fn word_counts(kwg: &Kwg) -> Option<Vec<u32>> {
    const UNSEEN: u32 = u32::MAX;
    const BUSY: u32 = u32::MAX - 1;
    let mut counts = vec![UNSEEN; kwg.node_count()];
    fn visit(kwg: &Kwg, i: u32, counts: &mut Vec<u32>, depth: usize) -> Option<u32> {
        match counts[i as usize] {
            BUSY => return None,
            c if c != UNSEEN => return Some(c),
            _ => {}
        }
        if depth > 10_000 {
            return None;
        }
        counts[i as usize] = BUSY;
        let child = if kwg.arc(i) == 0 { 0 } else { visit(kwg, kwg.arc(i), counts, depth + 1)? };
        let next = if kwg.is_end(i) { 0 } else { visit(kwg, i + 1, counts, depth + 1)? };
        let c = kwg.accepts(i) as u32 + child + next;
        counts[i as usize] = c;
        Some(c)
    }
    if kwg.dawg_root() != 0 {
        visit(kwg, kwg.dawg_root(), &mut counts, 0)?;
    }
    // Unreached nodes (e.g. a GADDAG half) are never indexed; keep `counts[i] - counts[i + 1]`
    // well-defined for reached ones by giving the rest 0.
    for c in counts.iter_mut() {
        if *c == UNSEEN {
            *c = 0;
        }
    }
    counts.push(0);
    Some(counts)
}

/// Leave values for every subset of one rack, precomputed before move generation so that a
/// move's leave costs one array read. Subsets are keyed by a mask of *used* rack slots, where
/// the rack is sorted and each kind of tile uses its slots from the first (so each multiset
/// has one canonical mask).
#[derive(Clone, Debug)]
pub struct RackLeaves {
    /// Sorted rack tiles (blank = 0 first).
    pub slots: Vec<u8>,
    /// First slot of each tile kind.
    pub first_slot: [u8; 64],
    /// Equity millipoints of the leave after using `mask`.
    pub by_used: [i32; 128],
    /// Best `by_used` over masks using exactly `k` tiles.
    pub best_by_count: [i32; 8],
}

impl RackLeaves {
    /// `value(kept)` gives the millipoint value of a sorted kept leave. A rack holds at most
    /// `RACK_SIZE` tiles.
    pub fn new(rack: &[u8], mut value: impl FnMut(&[u8]) -> i32) -> Self {
        let mut out = Self::unvalued(rack);
        let slots = out.slots.clone();
        let (mut kept, repeats) = (Vec::with_capacity(7), Self::repeats(&slots));
        for used in 0..1u32 << slots.len() {
            if Self::canonical(repeats, used) {
                kept.clear();
                kept.extend((0..slots.len()).filter(|i| used >> i & 1 == 0).map(|i| slots[i]));
                out.set(used, value(&kept));
            }
        }
        out
    }

    /// The rack's slots, with no values yet.
    fn unvalued(rack: &[u8]) -> Self {
        assert!(rack.len() <= crate::tiles::RACK_SIZE, "a rack holds at most 7 tiles");
        let mut slots = rack.to_vec();
        slots.sort_unstable();
        let mut first_slot = [0u8; 64];
        for (i, &t) in slots.iter().enumerate().rev() {
            first_slot[t as usize] = i as u8;
        }
        Self { slots, first_slot, by_used: [i32::MIN; 128], best_by_count: [i32::MIN; 8] }
    }

    /// Every value times `k` (>= 0, so the best of each count stays the best), rounded.
    pub fn scaled(mut self, k: f64) -> Self {
        let scale = |v: i32| if v == i32::MIN { v } else { (v as f64 * k).round() as i32 };
        self.by_used = self.by_used.map(scale);
        self.best_by_count = self.best_by_count.map(scale);
        self
    }

    fn set(&mut self, used: u32, value: i32) {
        self.by_used[used as usize] = value;
        let k = used.count_ones() as usize;
        self.best_by_count[k] = self.best_by_count[k].max(value);
    }

    /// The table's values for every subset of `rack` (0 for keeping nothing or everything),
    /// found in one walk of the leave graph that shares common prefixes.
    pub fn from_klv(rack: &[u8], klv: &Klv) -> Self {
        let mut out = Self::unvalued(rack);
        // (tile, count, first slot) per kind of tile on the rack.
        let mut kinds = [(0u8, 0u8, 0u8); 7];
        let mut n = 0;
        for (i, &t) in out.slots.iter().enumerate() {
            if i == 0 || out.slots[i - 1] != t {
                kinds[n] = (t, 0, i as u8);
                n += 1;
            }
            kinds[n - 1].1 += 1;
        }
        // Node 0's children are the DAWG's root list.
        out.walk(klv, &kinds[..n], Some(0), 0, 0, 0, 0);
        out
    }

    /// Keep 0..=count copies of the first kind, then recurse on the rest; `parent`/`idx` are
    /// where the kept tiles so far lead in the leave graph (`None`: not in the table).
    #[allow(clippy::too_many_arguments)]
    fn walk(
        &mut self,
        klv: &Klv,
        kinds: &[(u8, u8, u8)],
        parent: Option<u32>,
        idx: u32,
        value: i32,
        kept: usize,
        used: u32,
    ) {
        let Some((&(tile, count, first), rest)) = kinds.split_first() else {
            self.set(used, if kept == 0 || kept >= crate::tiles::RACK_SIZE { 0 } else { value });
            return;
        };
        let (mut parent, mut idx, mut value) = (parent, idx, value);
        for keep in 0..=count {
            if keep > 0 {
                match parent.and_then(|p| klv.step(p, idx, tile)) {
                    Some((n, i)) => {
                        let accepts = klv.kwg.step(n).accepts();
                        value = if accepts { Klv::millis(klv.values[i as usize]) } else { 0 };
                        idx = i + accepts as u32;
                        parent = Some(n);
                    }
                    None => (parent, value) = (None, 0),
                }
            }
            let use_bits = ((1u32 << (count - keep)) - 1) << first;
            self.walk(klv, rest, parent, idx, value, kept + keep as usize, used | use_bits);
        }
    }

    /// The slots of sorted `slots` that hold the same tile as the slot before them, as bits.
    pub fn repeats(slots: &[u8]) -> u32 {
        (1..slots.len()).filter(|&i| slots[i] == slots[i - 1]).fold(0, |m, i| m | 1 << i)
    }

    /// A mask is canonical when each tile kind's used slots are its first ones: it takes a
    /// slot repeating the one before (a bit of `repeats`) only with that one.
    #[inline]
    pub fn canonical(repeats: u32, used: u32) -> bool {
        used & repeats & !(used << 1) == 0
    }
}
