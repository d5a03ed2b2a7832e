//! A per-thread memo of the endgame's move generation.
//!
//! The plays of one lane depend only on what the lane's squares hold (tiles, cross-sets,
//! cross-scores: [`Board::lane_key`]) and on the rack. An endgame search meets the same lane
//! with the same rack over and over: a move leaves most lanes as they were, siblings and
//! transpositions share them, and racks only shrink. So each (lane, rack) is generated once,
//! and afterwards its plays are copied from here.
//!
//! Invariant: the list for a position is the same whatever the memo held before (each lane's
//! plays in generation order, lanes in bit order, then the pass), so a search is repeatable.
//! Lane keys describe a lane fully only on a board with tiles, which every endgame has.

use crate::board::{lane_bit, Board, DIM};
use crate::leaves::RackLeaves;
use crate::movegen::{Ctx, Generator, Mode, Request};
use crate::moves::{Kind, Move};
use rustc_hash::FxHashMap;

/// Lanes on the board, and so keys per position.
pub(super) const LANES: usize = 2 * DIM;

/// Plays held before the memo starts afresh (28 bytes each): bounds a thread's memory.
const MAX_PLAYS: usize = 1 << 21;

/// Every lane's key on `board`.
pub(super) fn lane_keys(board: &Board) -> [u64; LANES] {
    std::array::from_fn(|bit| board.lane_key(bit / DIM, bit % DIM))
}

/// A rack as one number: its tiles sorted, each stored plus one in its own byte (a rack holds
/// at most seven tiles).
fn rack_key(rack: &[u8]) -> u64 {
    let mut sorted = [0u8; 8];
    sorted[..rack.len()].copy_from_slice(rack);
    sorted[..rack.len()].sort_unstable();
    sorted[..rack.len()].iter().fold(0, |k, &t| k << 8 | (t as u64 + 1))
}

#[derive(Default)]
pub(super) struct Plays {
    /// (lane key, rack key) -> range of `plays`.
    lanes: FxHashMap<(u64, u64), (u32, u32)>,
    plays: Vec<Move>,
    /// The last answer.
    out: Vec<Move>,
    found: Vec<Move>,
}

impl Plays {
    /// Every move of `rack` on `board` (whose lane keys are `keys`): all placements, then the
    /// pass (the bag is empty, so no exchanges).
    pub fn all(&mut self, mg: &mut Generator, ctx: Ctx, board: &Board, keys: &[u64; LANES], rack: &[u8]) -> &[Move] {
        if self.plays.len() > MAX_PLAYS {
            self.lanes.clear();
            self.plays.clear();
        }
        let rack_key = rack_key(rack);
        let mut ranges = [(0u32, 0u32); LANES];
        let mut missing = 0u32;
        for (bit, &key) in keys.iter().enumerate() {
            match self.lanes.get(&(key, rack_key)) {
                Some(&r) => ranges[bit] = r,
                None => missing |= lane_bit(0, bit),
            }
        }
        if missing != 0 {
            let leaves = RackLeaves::new(rack, |_| 0);
            let req = Request { board, rack, leaves: &leaves, can_exchange: false, opening_vowel_penalty: 0 };
            self.found.clear();
            self.found.extend(mg.generate_lanes(ctx, &req, Mode::All, missing, None).iter().filter(|m| m.kind == Kind::Place));
            // Stable: within a lane, generation order.
            self.found.sort_by_key(|m| m.dir as usize * DIM + m.lane as usize);
            let mut found = self.found.iter().peekable();
            for bit in (0..LANES).filter(|&b| missing & lane_bit(0, b) != 0) {
                let start = self.plays.len() as u32;
                while let Some(m) = found.next_if(|m| m.dir as usize * DIM + m.lane as usize == bit) {
                    self.plays.push(*m);
                }
                ranges[bit] = (start, self.plays.len() as u32);
                self.lanes.insert((keys[bit], rack_key), ranges[bit]);
            }
        }
        self.out.clear();
        for &(a, b) in &ranges {
            self.out.extend_from_slice(&self.plays[a as usize..b as usize]);
        }
        self.out.push(Move::PASS);
        &self.out
    }
}

#[cfg(test)]
mod tests {
    use super::rack_key;

    #[test]
    fn rack_keys_ignore_order_and_tell_racks_apart() {
        assert_eq!(rack_key(&[3, 0, 1]), rack_key(&[0, 1, 3]));
        assert_ne!(rack_key(&[0, 1]), rack_key(&[1]));
        assert_ne!(rack_key(&[0]), rack_key(&[]));
        assert_ne!(rack_key(&[1, 1, 2]), rack_key(&[1, 2, 2]));
    }
}
