//! Words of seven or more letters indexed by their alphagram (their letters sorted), so that the
//! move generator finds plays of a whole rack — bingos — by lookup. Searching the word graph
//! for them is where a blank costs most: it may stand for any letter on every square, and a
//! seven-tile search is the deepest there is.

use super::MAX_WORD_LEN;
use crate::tiles::RACK_SIZE;
use rustc_hash::FxHashMap;

/// A word's letters, unused positions 0 (no letter is 0).
pub type Word = [u8; MAX_WORD_LEN];

#[derive(Clone, Debug, Default)]
pub struct Anagrams {
    /// Alphagram key -> range of `words`.
    index: FxHashMap<u128, (u32, u32)>,
    words: Vec<Word>,
}

impl Anagrams {
    /// Index every word with at least `RACK_SIZE` letters (and at most a board's side: longer
    /// words of a hostile graph could never be played).
    pub fn new(words: Vec<Vec<u8>>) -> Self {
        let mut keyed: Vec<(u128, Word)> = words
            .into_iter()
            .filter(|w| (RACK_SIZE..=MAX_WORD_LEN).contains(&w.len()))
            .map(|w| {
                let mut sorted = w.clone();
                sorted.sort_unstable();
                let mut word = [0; MAX_WORD_LEN];
                word[..w.len()].copy_from_slice(&w);
                (key(&sorted), word)
            })
            .collect();
        keyed.sort_unstable();
        keyed.dedup();
        let mut index = FxHashMap::default();
        let mut start = 0;
        for (i, &(k, _)) in keyed.iter().enumerate() {
            if i + 1 == keyed.len() || keyed[i + 1].0 != k {
                index.insert(k, (start as u32, i as u32 + 1));
                start = i + 1;
            }
        }
        Self { index, words: keyed.into_iter().map(|(_, w)| w).collect() }
    }

    /// Indices (for [`Anagrams::word`]) of the words made of exactly these letters, given
    /// sorted.
    #[inline]
    pub fn of_sorted(&self, sorted: &[u8]) -> std::ops::Range<u32> {
        match self.index.get(&key(sorted)) {
            Some(&(a, b)) => a..b,
            None => 0..0,
        }
    }

    #[inline]
    pub fn word(&self, i: u32) -> &Word {
        &self.words[i as usize]
    }
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
        let a = Anagrams::new(kwg.words());
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
    }
}
