//! The transposition table shared by all search threads: a power-of-two array of lockless
//! two-word entries.
//!
//! Each slot holds `key ^ data` and `data` in two atomics (Hyatt's trick): a reader that sees
//! half of one writer's entry and half of another's gets `stored ^ data != key` and treats it as
//! a miss, so no locks are needed. The full 64-bit key is checked, so positions that share a
//! slot (type-1 collisions) are told apart by the key bits above the index.

use crate::memory::{Zeroed, prefetch};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// What a stored value says about the true value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bound {
    Exact = 0,
    /// The true value is at least this (the search failed high).
    Lower = 1,
    /// The true value is at most this (the search failed low).
    Upper = 2,
}

/// One stored search result. `value` excludes the spread at the node (the future's worth is
/// independent of the score so far), so it is re-added on read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    pub value: i16,
    /// Plies searched below the node.
    pub depth: u8,
    pub bound: Bound,
    /// The result came from lines that all reached the end of the game: it holds at any depth.
    pub solved: bool,
    /// Fingerprint of the best move found (see `super::fingerprint`).
    pub mv: u32,
}

const OCCUPIED: u64 = 1 << 63;

impl Entry {
    fn pack(self) -> u64 {
        (self.value as u16 as u64)
            | (self.depth as u64) << 16
            | (self.bound as u64) << 24
            | (self.solved as u64) << 26
            | ((self.mv & 0xFF_FFFF) as u64) << 32
            | OCCUPIED
    }
    fn unpack(d: u64) -> Self {
        let bound = match d >> 24 & 3 {
            0 => Bound::Exact,
            1 => Bound::Lower,
            _ => Bound::Upper,
        };
        Self {
            value: d as u16 as i16,
            depth: (d >> 16) as u8,
            bound,
            solved: d >> 26 & 1 == 1,
            mv: (d >> 32) as u32 & 0xFF_FFFF,
        }
    }
}

pub struct Table {
    /// On huge pages where the system has them (see `Zeroed`).
    slots: Zeroed<AtomicU64>,
    mask: usize,
}

/// Bytes per entry.
pub const ENTRY_BYTES: usize = 16;

impl Table {
    /// The largest power-of-two table that fits in `bytes` (at least 1,024 entries).
    pub fn with_bytes(bytes: usize) -> Self {
        let n = Self::entries_in(bytes);
        // SAFETY: zero is a valid AtomicU64 (and an empty slot).
        Self { slots: unsafe { Zeroed::new(2 * n) }, mask: n - 1 }
    }

    /// The entries of the table `with_bytes(bytes)` makes.
    pub fn entries_in(bytes: usize) -> usize {
        let mut n = 1024usize;
        while n.checked_mul(2 * ENTRY_BYTES).is_some_and(|b| b <= bytes) {
            n *= 2;
        }
        n
    }

    pub fn entries(&self) -> usize {
        self.mask + 1
    }

    pub fn bytes(&self) -> usize {
        self.entries() * ENTRY_BYTES
    }

    #[inline]
    pub fn get(&self, key: u64) -> Option<Entry> {
        let i = 2 * (key as usize & self.mask);
        let (check, data) = (self.slots[i].load(Relaxed), self.slots[i + 1].load(Relaxed));
        (data & OCCUPIED != 0 && check ^ data == key).then(|| Entry::unpack(data))
    }

    /// Store, keeping a deeper result for the same position.
    #[inline]
    pub fn put(&self, key: u64, e: Entry) {
        let i = 2 * (key as usize & self.mask);
        if let Some(old) = self.get(key)
            && old.depth > e.depth
            && !e.solved
            && old.bound == Bound::Exact
        {
            return;
        }
        self.write(i, key, e);
    }

    /// Store only where no entry is, for results worth less than any other.
    #[inline]
    pub fn put_if_vacant(&self, key: u64, e: Entry) {
        let i = 2 * (key as usize & self.mask);
        if self.slots[i + 1].load(Relaxed) & OCCUPIED == 0 {
            self.write(i, key, e);
        }
    }

    #[inline]
    fn write(&self, i: usize, key: u64, e: Entry) {
        let data = e.pack();
        self.slots[i].store(key ^ data, Relaxed);
        self.slots[i + 1].store(data, Relaxed);
    }

    /// Start fetching `key`'s slot into the cache, for a `get` soon after.
    #[inline]
    pub fn prefetch(&self, key: u64) {
        prefetch(&self.slots[2 * (key as usize & self.mask)]);
    }

    /// Forget everything (a new position set, or a benchmark from cold).
    pub fn clear(&self) {
        for s in self.slots.iter() {
            s.store(0, Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_round_trip_and_other_keys_miss() {
        let t = Table::with_bytes(1 << 16);
        let e = Entry { value: -321, depth: 9, bound: Bound::Upper, solved: true, mv: 0xAB_CDEF };
        t.put(42, e);
        assert_eq!(t.get(42), Some(e));
        assert_eq!(t.get(42 + t.entries() as u64), None, "same slot, different key");
        assert_eq!(t.get(7), None);
        t.clear();
        assert_eq!(t.get(42), None);
    }

    #[test]
    fn a_vacant_put_never_evicts() {
        let t = Table::with_bytes(1 << 16);
        let deep = Entry { value: 7, depth: 6, bound: Bound::Exact, solved: false, mv: 3 };
        let shallow = Entry { value: 1, depth: 1, bound: Bound::Lower, solved: false, mv: 0 };
        t.put(5, deep);
        t.put_if_vacant(5 + t.entries() as u64, shallow);
        t.put_if_vacant(5, shallow);
        assert_eq!(t.get(5), Some(deep));
        t.put_if_vacant(6, shallow);
        assert_eq!(t.get(6), Some(shallow));
    }

    #[test]
    fn a_torn_entry_reads_as_a_miss() {
        let t = Table::with_bytes(1 << 16);
        let a = Entry { value: 5, depth: 1, bound: Bound::Exact, solved: false, mv: 1 };
        let b = Entry { value: 6, depth: 2, bound: Bound::Lower, solved: false, mv: 2 };
        t.put(99, a);
        // Another writer's data word lands without its check word.
        t.slots[2 * (99 & t.mask) + 1].store(b.pack(), Relaxed);
        assert_eq!(t.get(99), None);
    }

    #[test]
    fn size_is_what_it_was_given() {
        assert_eq!(Table::with_bytes(64 << 20).bytes(), 64 << 20);
        assert!(Table::with_bytes(100 << 20).bytes() <= 100 << 20);
    }
}
