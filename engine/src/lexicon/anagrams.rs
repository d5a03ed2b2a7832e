//! Words indexed by their alphagram (their letters sorted), so that the move generator finds
//! plays by lookup instead of walking the word graph. Two sizes:
//!
//! - the bingo index, words of seven or more letters: plays of a whole rack, where a graph
//!   search costs most (a blank may stand for any letter on every square, seven tiles deep);
//! - the word map, every word of two or more letters, and each word again under its alphagram
//!   less one letter (once per distinct letter), so that a rack subset holding a blank is one
//!   lookup rather than one per letter; and words of up to `MAX_TWO_LEN` letters under their
//!   alphagram less two letters, so that one spending two blanks is one lookup as well. Best-move
//!   search runs on it (see `movegen`).
//!
//! # Design notes
//!
//! words by alphagram (an `FxHashMap` from the sorted letters, packed into a `u128`, to a range of
//! words), built on first use from a walk of the graph (`Kwg::for_each_word`, no allocation per
//! word) and held by the `Kwg` (leave graphs never build one). Two sizes: the bingo index
//! (`Kwg::anagrams`, words of 7 to 15 letters) and the word map (`Kwg::word_map`, every word of 2
//! to 15 letters, each again under its alphagram less one letter, so that a rack subset with a
//! blank is one probe, and words of up to 10 letters again under their alphagram less two letters,
//! so that a subset spending two blanks is one probe too, a bingo through up to three board tiles
//! included; ~85 MB and 0.4-1 s for ENABLE; each table sized to its distinct keys), with one-hash
//! bit filters over its keys, and over every word's alphagram less two letters, that answer most
//! missing keys from cache. The build sorts plain `u128`s (alphagram at six bits a letter over the
//! entry's index), which order entries as (key, word) pairs would. Once the word map exists,
//! `anagrams` returns it. Whatever times moves (a volunteer's rates, benchmarks, `worker sim`)
//! calls `movegen::prepare` first, so that the build is not charged to the first move.

use super::{Kwg, MAX_WORD_LEN};
use crate::tiles::RACK_SIZE;
use rustc_hash::FxHashMap;

/// A word's letters, unused positions 0 (no letter is 0).
pub type Word = [u8; MAX_WORD_LEN];

#[derive(Clone, Debug, Default)]
pub struct Anagrams {
    /// Alphagram key -> range of `words`.
    index: FxHashMap<u128, (u32, u32)>,
    words: Vec<Word>,
    /// Alphagram less one letter -> range of `short_words` (the word map only).
    short_index: FxHashMap<u128, (u32, u32)>,
    /// Indices into `words`.
    short_words: Vec<u32>,
    /// A one-hash bit filter over the keys of both indexes (`Filter`).
    filter: Filter,
    /// The word map only: a filter over every word's alphagram less two letters, so that a
    /// rack subset spending two blanks, whose words take a probe of `short_index` per letter
    /// the first blank may be, is answered by one probe when no word has its letters (most).
    less_two: Filter,
    /// The word map only: alphagram less two letters -> range of `two_words`, for words of up
    /// to `MAX_TWO_LEN` letters, each once under each key. Their keys fit 64 bits, which
    /// halves the size of the table's entries.
    two_index: FxHashMap<u64, (u32, u32)>,
    two_words: Vec<u32>,
}

impl Anagrams {
    /// The bingo index: every word of `RACK_SIZE` letters or more.
    pub fn bingos(kwg: &Kwg) -> Self {
        Self::new(kwg, RACK_SIZE, false)
    }

    /// The word map: every word of two letters or more, also by alphagram less one letter.
    pub fn word_map(kwg: &Kwg) -> Self {
        Self::new(kwg, 2, true)
    }

    /// Index every word of `kwg` with at least `min_len` letters (and at most a board's side,
    /// and only of letters 1 to 63: nothing else can be played).
    ///
    /// Built at the start of every process that searches for best moves, so it sorts plain
    /// `u128`s: each alphagram packed at six bits a letter, which orders alphagrams as their
    /// keys do, above the entry's index, which orders anagrams as the words do (the graph lists
    /// its words sorted). Half the bytes of (key, index) pairs, and a third of the time.
    fn new(kwg: &Kwg, min_len: usize, short: bool) -> Self {
        let (mut listed, mut order) = (Vec::<Word>::new(), Vec::<u128>::new());
        kwg.for_each_word(|w| {
            if !(min_len..=MAX_WORD_LEN).contains(&w.len()) || w.iter().any(|&t| t == 0 || t >= 64) {
                return;
            }
            let mut word = [0; MAX_WORD_LEN];
            word[..w.len()].copy_from_slice(w);
            let mut sorted = word;
            sorted[..w.len()].sort_unstable();
            order.push(packed(&sorted[..w.len()]) << INDEX_BITS | listed.len() as u128);
            listed.push(word);
        });
        order.sort_unstable();
        let index = ranges(&order, |k| k);
        let words: Vec<Word> = order.iter().map(|&e| listed[(e & INDEX_MASK) as usize]).collect();
        let (mut short_index, mut short_words) = (FxHashMap::default(), Vec::new());
        let (mut less_two, mut two_index, mut two_words) = Default::default();
        if short {
            (less_two, two_index, two_words) = less_two_index(&order);
            // Each word's alphagram less each distinct letter in turn, cut out of the packed
            // alphagram (`n` letters, the first in the top six bits).
            let mut less_one: Vec<u128> = Vec::with_capacity(words.len() * 7);
            for (i, &e) in order.iter().enumerate() {
                let p = e >> INDEX_BITS;
                let n = (128 - p.leading_zeros()).div_ceil(6);
                let mut previous = 0;
                for j in 0..n {
                    let shift = 6 * (n - 1 - j);
                    let letter = p >> shift & 63;
                    if letter == previous {
                        continue;
                    }
                    previous = letter;
                    let rest = (p >> (shift + 6)) << shift | p & ((1 << shift) - 1);
                    less_one.push(rest << INDEX_BITS | i as u128);
                }
            }
            less_one.sort_unstable();
            short_index = ranges(&less_one, |k| k);
            short_words = less_one.into_iter().map(|e| (e & INDEX_MASK) as u32).collect();
        }
        let mut filter = Filter::new(index.len() + short_index.len());
        index.keys().for_each(|&k| filter.insert(k, EXACT));
        short_index.keys().for_each(|&k| filter.insert(k, LESS_ONE));
        Self { index, words, short_index, short_words, filter, less_two, two_index, two_words }
    }

    /// Indices (for [`Anagrams::word`]) of the words made of these letters (given sorted) and
    /// two more, each once, where the word map can say in one probe: `None` where the caller
    /// must go letter by letter (words longer than `MAX_TWO_LEN` that the filter does not rule
    /// out, and the bingo index).
    #[inline]
    pub fn plus_two(&self, sorted: &[u8]) -> Option<&[u32]> {
        let k = key(sorted);
        if !self.less_two.may_hold(k, LESS_TWO) {
            return Some(&[]);
        }
        if sorted.len() + 2 > MAX_TWO_LEN || self.less_two.bits.is_empty() {
            return None;
        }
        Some(match self.two_index.get(&(k as u64)) {
            Some(&(a, b)) => &self.two_words[a as usize..b as usize],
            None => &[],
        })
    }

    /// Indices (for [`Anagrams::word`]) of the words made of these letters (given sorted) and
    /// one more letter, each word once. Empty for the bingo index.
    #[inline]
    pub fn plus_one(&self, sorted: &[u8]) -> &[u32] {
        let k = key(sorted);
        if !self.filter.may_hold(k, LESS_ONE) {
            return &[];
        }
        match self.short_index.get(&k) {
            Some(&(a, b)) => &self.short_words[a as usize..b as usize],
            None => &[],
        }
    }

    /// Indices (for [`Anagrams::word`]) of the words made of exactly these letters, given
    /// sorted.
    #[inline]
    pub fn of_sorted(&self, sorted: &[u8]) -> std::ops::Range<u32> {
        let k = key(sorted);
        if !self.filter.may_hold(k, EXACT) {
            return 0..0;
        }
        match self.index.get(&k) {
            Some(&(a, b)) => a..b,
            None => 0..0,
        }
    }

    #[inline]
    pub fn word(&self, i: u32) -> &Word {
        &self.words[i as usize]
    }
}

/// Which index a key is filtered for.
const EXACT: u64 = 0x9e37_79b9_7f4a_7c15;
const LESS_ONE: u64 = 0xc2b2_ae3d_27d4_eb4f;
const LESS_TWO: u64 = 0x1656_67b1_9e37_79f9;

/// Longest words the word map also holds under their alphagram less two letters
/// (`two_index`): two blanks in words up to this long are one probe, else a probe per letter
/// the first blank may be. Ten letters cover a two-blank bingo through up to three board
/// tiles, which eight left to those probes (a third of that rack class's best-move time went
/// to them); ENABLE: 2.5 M entries up to ten letters, 1.3 M up to eight, 4.2 M in all.
const MAX_TWO_LEN: usize = 10;

/// What the word map keeps of each word's alphagram less two letters, from `order` (packed
/// entries, sorted): the filter over all of them, and the index of those of words of up to
/// `MAX_TWO_LEN` letters.
fn less_two_index(order: &[u128]) -> (Filter, FxHashMap<u64, (u32, u32)>, Vec<u32>) {
    // Letters `i < j` of an alphagram of `n` letters, as `bits` a letter (`packed`: 6; `key`:
    // 8), cut out of it.
    let cut = |p: u128, n: usize, i: usize, j: usize, bits: usize| {
        let below = |k: usize| (1u128 << (bits * k)) - 1;
        let before = p >> (bits * (n - i));
        let between = p >> (bits * (n - j)) & below(j - i - 1);
        let after = p & below(n - 1 - j);
        ((before << (bits * (j - i - 1)) | between) << (bits * (n - 1 - j))) | after
    };
    // Each distinct pair of an alphagram's letters: a letter goes only as the first of its run,
    // or as the second of the pair right after the first taken from the same run.
    fn pairs(a: &[u8]) -> impl Iterator<Item = (usize, usize)> + '_ {
        (0..a.len())
            .filter(move |&i| i == 0 || a[i] != a[i - 1])
            .flat_map(move |i| (i + 1..a.len()).filter(move |&j| j == i + 1 || a[j] != a[j - 1]).map(move |j| (i, j)))
    }
    let letters = |e: u128| {
        let p = e >> INDEX_BITS;
        let n = (128 - p.leading_zeros()).div_ceil(6) as usize;
        let mut a = [0u8; MAX_WORD_LEN];
        for (j, t) in a[..n].iter_mut().enumerate() {
            *t = (p >> (6 * (n - 1 - j)) & 63) as u8;
        }
        (p, a, n)
    };
    let inserts: usize = order.iter().map(|&e| letters(e)).map(|(_, a, n)| pairs(&a[..n]).count()).sum();
    // Keys are not deduplicated for the filter (that would sort millions): an alphagram less
    // two letters comes from about two words, so two bits an insert make at least four a
    // distinct key (ENABLE: 4.2 M inserts of 2.0 M keys, 2 MB).
    let mut filter = Filter::new(inserts / 4);
    let mut short = Vec::new();
    for (w, &e) in order.iter().enumerate() {
        let (p, a, n) = letters(e);
        let k = key(&a[..n]);
        for (i, j) in pairs(&a[..n]) {
            filter.insert(cut(k, n, i, j, 8), LESS_TWO);
            if n <= MAX_TWO_LEN {
                short.push(cut(p, n, i, j, 6) << INDEX_BITS | w as u128);
            }
        }
    }
    short.sort_unstable();
    const { assert!(8 * (MAX_TWO_LEN - 2) <= 64) };
    let index = ranges(&short, |k| k as u64);
    (filter, index, short.into_iter().map(|e| (e & INDEX_MASK) as u32).collect())
}

/// A bit per hashed key, 8 bits a key or more (about one false "maybe" in 8): most probes of
/// the word map are for letters no word has, and this answers them from a MB or two that stay
/// in cache, where the hash tables' hundred MB cost a miss to memory a probe. (16 bits a key
/// made fewer false answers but a filter twice the size of a core's L2, and was slower.)
#[derive(Clone, Debug, Default)]
struct Filter {
    bits: Vec<u64>,
    shift: u32,
}

impl Filter {
    fn new(keys: usize) -> Self {
        let n = (keys * 8).next_power_of_two().max(64);
        Filter { bits: vec![0; n / 64], shift: 64 - n.trailing_zeros() }
    }

    #[inline]
    fn slot(&self, key: u128, salt: u64) -> usize {
        let h = ((key as u64) ^ (key >> 64) as u64 ^ salt).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        ((h.rotate_left(29) ^ h).wrapping_mul(0xbf58_476d_1ce4_e5b9) >> self.shift) as usize
    }

    fn insert(&mut self, key: u128, salt: u64) {
        let i = self.slot(key, salt);
        self.bits[i / 64] |= 1 << (i % 64);
    }

    #[inline]
    fn may_hold(&self, key: u128, salt: u64) -> bool {
        if self.bits.is_empty() {
            return true;
        }
        let i = self.slot(key, salt);
        self.bits[i / 64] >> (i % 64) & 1 == 1
    }
}

/// Bits of a packed entry below its alphagram: room for 2^38 words.
const INDEX_BITS: u32 = 38;
const INDEX_MASK: u128 = (1 << INDEX_BITS) - 1;

/// Letters 1 to 63 at six bits each (at most 15: 90 bits). Packed alphagrams compare as their
/// `key`s do (by length, then letter by letter).
#[inline]
fn packed(sorted: &[u8]) -> u128 {
    sorted.iter().fold(0u128, |k, &t| k << 6 | t as u128)
}

/// Each alphagram's `key` (as `K`) and its range in `sorted` (packed entries, sorted).
fn ranges<K: std::hash::Hash + Eq>(sorted: &[u128], key: impl Fn(u128) -> K) -> FxHashMap<K, (u32, u32)> {
    let alphagram = |i: usize| sorted[i] >> INDEX_BITS;
    let distinct = (0..sorted.len()).filter(|&i| i == 0 || alphagram(i) != alphagram(i - 1)).count();
    let mut index = FxHashMap::with_capacity_and_hasher(distinct, Default::default());
    let mut start = 0;
    for i in 0..sorted.len() {
        if i + 1 == sorted.len() || alphagram(i + 1) != alphagram(i) {
            index.insert(key(widened(alphagram(i))), (start as u32, i as u32 + 1));
            start = i + 1;
        }
    }
    index
}

/// The `key` of a `packed` alphagram.
fn widened(mut packed: u128) -> u128 {
    let (mut k, mut shift) = (0u128, 0);
    while packed != 0 {
        k |= (packed & 63) << shift;
        packed >>= 6;
        shift += 8;
    }
    k
}

/// A sorted letter sequence of up to 15 letters as one integer (letters are below 64, so
/// never 0 once shifted in: distinct sequences get distinct keys).
#[inline]
pub fn key(sorted: &[u8]) -> u128 {
    debug_assert!(sorted.len() <= MAX_WORD_LEN);
    sorted.iter().fold(0u128, |k, &t| k << 8 | t as u128)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(s: &str) -> Vec<u8> {
        s.bytes().map(|b| b - b'A' + 1).collect()
    }

    #[test]
    fn finds_every_anagram_and_only_long_words() {
        let kwg = super::super::Kwg::build(&[
            w("RETAINS"),
            w("NASTIER"),
            w("STAINER"),
            w("RETAIN"),
            w("ANESTRI"),
            w("STEARINE"),
        ])
        .unwrap();
        let a = Anagrams::bingos(&kwg);
        let mut letters = w("AEINRST");
        letters.sort_unstable();
        let found: Vec<Vec<u8>> =
            a.of_sorted(&letters).map(|i| a.word(i).iter().copied().take_while(|&t| t != 0).collect()).collect();
        assert_eq!(found, vec![w("ANESTRI"), w("NASTIER"), w("RETAINS"), w("STAINER")]);
        let mut six = w("AEINRT");
        six.sort_unstable();
        assert!(a.of_sorted(&six).is_empty(), "six-letter words are not indexed");
        let mut eight = w("AEEINRST");
        eight.sort_unstable();
        assert_eq!(a.of_sorted(&eight).len(), 1);
        assert!(a.plus_one(&letters).is_empty(), "the bingo index has no short keys");
    }

    #[test]
    fn keys_tell_sequences_apart_up_to_a_boards_length() {
        // Every sequence of up to three letters from {1, 2, 63}, and the longest words.
        let mut seqs: Vec<Vec<u8>> = vec![vec![]];
        for len in 1..=3 {
            let shorter: Vec<Vec<u8>> = seqs.iter().filter(|s| s.len() == len - 1).cloned().collect();
            for s in shorter {
                for t in [1u8, 2, 63] {
                    seqs.push([s.as_slice(), &[t]].concat());
                }
            }
        }
        seqs.push(vec![63; MAX_WORD_LEN]);
        seqs.push([vec![1], vec![63; MAX_WORD_LEN - 1]].concat());
        let keys: std::collections::HashSet<u128> = seqs.iter().map(|s| key(s)).collect();
        assert_eq!(keys.len(), seqs.len());
        assert_eq!(key(&[1, 2]), 0x0102, "the first letter is the most significant byte");
    }

    #[test]
    fn packed_alphagrams_sort_as_their_keys_and_widen_to_them() {
        let mut rng = crate::rng::Rng::new(3);
        let seqs: Vec<Vec<u8>> = (0..2_000)
            .map(|_| {
                let mut s: Vec<u8> = (0..rng.below(MAX_WORD_LEN as u64 + 1)).map(|_| 1 + rng.below(63) as u8).collect();
                s.sort_unstable();
                s
            })
            .collect();
        for s in &seqs {
            assert_eq!(widened(packed(s)), key(s), "{s:?}");
        }
        for pair in seqs.windows(2) {
            let (a, b) = (&pair[0], &pair[1]);
            assert_eq!(packed(a).cmp(&packed(b)), key(a).cmp(&key(b)), "{a:?} {b:?}");
        }
    }

    #[test]
    fn filter_keeps_every_key_and_drops_most_others() {
        let keys: Vec<u128> = (0..20_000u128).map(|i| i * 0x1_0000_0001 + 7).collect();
        let mut f = Filter::new(keys.len());
        keys.iter().for_each(|&k| f.insert(k, EXACT));
        assert!(keys.iter().all(|&k| f.may_hold(k, EXACT)));
        let others = (0..20_000u128).map(|i| i * 0x1_0000_0001 + 8);
        let false_maybes = others.filter(|&k| f.may_hold(k, EXACT)).count();
        assert!(false_maybes < 20_000 / 8, "{false_maybes} false maybes");
        let other_index = keys.iter().filter(|&&k| f.may_hold(k, LESS_ONE)).count();
        assert!(other_index < 20_000 / 8, "the salt separates the indexes: {other_index}");
    }

    #[test]
    fn word_map_finds_words_with_one_letter_more() {
        let kwg =
            super::super::Kwg::build(&[w("AT"), w("TA"), w("TAT"), w("EAT"), w("TEA"), w("ATE"), w("TATE")]).unwrap();
        let a = Anagrams::word_map(&kwg);
        let word = |i: u32| a.word(i).iter().copied().take_while(|&t| t != 0).collect::<Vec<u8>>();
        let mut at = w("AT");
        at.sort_unstable();
        let mut two: Vec<Vec<u8>> = a.of_sorted(&at).map(word).collect();
        two.sort();
        assert_eq!(two, vec![w("AT"), w("TA")]);
        // AT plus one letter: ATE, EAT, TEA and TAT, each once (TAT has two Ts but one key).
        let mut three: Vec<Vec<u8>> = a.plus_one(&at).iter().map(|&i| word(i)).collect();
        three.sort();
        assert_eq!(three, vec![w("ATE"), w("EAT"), w("TAT"), w("TEA")]);
        let mut att = w("ATT");
        att.sort_unstable();
        let four: Vec<Vec<u8>> = a.plus_one(&att).iter().map(|&i| word(i)).collect();
        assert_eq!(four, vec![w("TATE")]);
    }

    /// `plus_two` against its definition on a random lexicon of four letters (so that most
    /// letter sets have words with two more): where it answers, each word of the letters and
    /// two more, once; where it does not, only letters too many for the index (and not ruled
    /// out by the filter).
    #[test]
    fn word_map_finds_words_with_two_letters_more() {
        let mut rng = crate::rng::Rng::new(11);
        let mut words: Vec<Vec<u8>> =
            (0..3_000).map(|_| (0..2 + rng.below(9)).map(|_| 1 + rng.below(4) as u8).collect()).collect();
        words.sort();
        words.dedup();
        let kwg = super::super::Kwg::build(&words).unwrap();
        let a = Anagrams::word_map(&kwg);
        let alphagram = |w: &[u8]| {
            let mut s = w.to_vec();
            s.sort_unstable();
            s
        };
        // Whether `sub` (sorted) is a sub-multiset of `all` (sorted).
        let within = |sub: &[u8], all: &[u8]| {
            let mut rest = all.iter();
            sub.iter().all(|t| rest.by_ref().any(|x| x == t))
        };
        let (mut answered, mut found) = (0, 0);
        let mut sets: Vec<Vec<u8>> = vec![vec![]];
        for len in 1..=MAX_WORD_LEN - 2 {
            let shorter: Vec<Vec<u8>> = sets.iter().filter(|s| s.len() == len - 1).cloned().collect();
            for s in shorter {
                for t in *s.last().unwrap_or(&1)..=4 {
                    sets.push([s.as_slice(), &[t]].concat());
                }
            }
        }
        for letters in &sets {
            let mut expected: Vec<Vec<u8>> = words
                .iter()
                .filter(|w| w.len() == letters.len() + 2 && within(letters, &alphagram(w)))
                .cloned()
                .collect();
            expected.sort();
            match a.plus_two(letters) {
                Some(got) => {
                    let mut got: Vec<Vec<u8>> =
                        got.iter().map(|&i| a.word(i).iter().copied().take_while(|&t| t != 0).collect()).collect();
                    got.sort();
                    assert_eq!(got, expected, "{letters:?}");
                    answered += 1;
                    found += got.len();
                }
                None => assert!(letters.len() + 2 > MAX_TWO_LEN, "{letters:?}"),
            }
        }
        assert!(answered > 300 && found > 1_000, "{answered} sets answered, {found} words");
        assert!(Anagrams::bingos(&kwg).plus_two(&[1, 2, 3, 4, 1]).is_none(), "the bingo index has no short keys");
    }
}
