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

use super::fingerprint;
use crate::board::{Board, DIM, lane_bit};
use crate::leaves::RackLeaves;
use crate::memory::Zeroed;
use crate::movegen::{ALL_LANES, Ctx, Generator, Mode, Request};
use crate::moves::{Kind, Move};
use crate::rng::mix;

/// Lanes on the board, and so keys per position.
pub(super) const LANES: usize = 2 * DIM;

/// Plays held before the memo starts afresh (28 bytes each): bounds a thread's memory.
const MAX_PLAYS: usize = 1 << 21;
/// Slots of the memo's index (32 bytes each).
const SLOTS: usize = 1 << 20;

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

/// One (lane, rack)'s plays: a range of `Plays::plays`, the rack tiles they use, and the best
/// of them for a frontier node (see [`Plays::best`]).
#[derive(Clone, Copy, Debug, Default)]
struct Lane {
    start: u32,
    end: u32,
    /// Bit `t` set when some play here uses rack tile `t` (the blank is tile 0).
    used: u64,
    /// Index and worth (score plus the tiles' face value) of the first best play that keeps a
    /// tile, and of the first best that goes out; `u32::MAX` when there is none.
    keep: (u32, i32),
    out: (u32, i32),
}

/// The first best of several plays by worth.
fn better(best: &mut (u32, i32), at: u32, worth: i32) {
    if best.0 == u32::MAX || worth > best.1 {
        *best = (at, worth);
    }
}

/// The best plays of a frontier node by worth (score plus the face value of the tiles played,
/// plus a bonus for going out), each the first best in `Plays::all`'s order: of the moves that
/// keep a tile (the pass, worth 0, when no placement does), and of those going out; and the
/// rack tiles some play uses.
pub(super) struct Best {
    pub keep: (Move, i32),
    pub out: Option<(Move, i32)>,
    pub used: u64,
}

/// The index slot of `key`: from bits above the lowest, which is always set.
fn slot(key: u64) -> usize {
    (key >> 1) as usize & (SLOTS - 1)
}

/// The memo's keys of each lane (its key `lane_keys`) with `rack`: never 0.
fn slot_keys(lane_keys: &[u64; LANES], rack: &[u8]) -> [u64; LANES] {
    let rack_key = mix(rack_key(rack));
    lane_keys.map(|k| (k ^ rack_key) | 1)
}

#[derive(Default)]
pub(super) struct Plays {
    /// A direct-mapped cache: slot `slot(key)` holds (key, lane), the key mixing the
    /// lane's and the rack's (never 0, so an empty slot matches nothing). A search reads
    /// thirty of these per node, mostly out of cache; one load each, all independent, lets the
    /// processor overlap them.
    /// On huge pages where the system has them (see `Zeroed`); made on first use.
    slots: Option<Zeroed<(u64, Lane)>>,
    plays: Vec<Move>,
    /// The last answer of `all`.
    out: Vec<Move>,
    found: Vec<Move>,
}

impl Plays {
    /// Every move of `rack` on `board` (whose lane keys are `keys`): all placements, then the
    /// pass (the bag is empty, so no exchanges).
    pub fn all(&mut self, mg: &mut Generator, ctx: Ctx, board: &Board, keys: &[u64; LANES], rack: &[u8]) -> &[Move] {
        let lanes = self.lanes(mg, ctx, board, keys, rack, ALL_LANES);
        self.out.clear();
        for l in &lanes {
            self.out.extend_from_slice(&self.plays[l.start as usize..l.end as usize]);
        }
        self.out.push(Move::PASS);
        &self.out
    }

    /// The best moves by worth in the lanes `wanted`, going out earning `out_bonus` more: what a
    /// scan of `all` would find first (when all lanes are wanted), without listing the moves.
    #[allow(clippy::too_many_arguments)]
    pub fn best(
        &mut self,
        mg: &mut Generator,
        ctx: Ctx,
        board: &Board,
        keys: &[u64; LANES],
        rack: &[u8],
        out_bonus: i32,
        wanted: u32,
    ) -> Best {
        let lanes = self.lanes(mg, ctx, board, keys, rack, wanted);
        let (mut keep, mut out, mut used) = ((u32::MAX, 0), (u32::MAX, 0), 0);
        for l in (0..LANES).filter(|&bit| wanted & lane_bit(0, bit) != 0).map(|bit| &lanes[bit]) {
            if l.keep.0 != u32::MAX {
                better(&mut keep, l.keep.0, l.keep.1);
            }
            if l.out.0 != u32::MAX {
                better(&mut out, l.out.0, l.out.1 + out_bonus);
            }
            used |= l.used;
        }
        // The pass (worth 0) comes last: it is best only when nothing else is better.
        let keep =
            if keep.0 == u32::MAX || keep.1 < 0 { (Move::PASS, 0) } else { (self.plays[keep.0 as usize], keep.1) };
        Best { keep, out: (out.0 != u32::MAX).then(|| (self.plays[out.0 as usize], out.1)), used }
    }

    /// The rack tiles some play of `rack` on `board` uses (bit `t` for tile `t`), or at least
    /// all of the rack's tiles: lanes the memo holds are looked at first, and the others are
    /// generated only when those leave a tile unplaced.
    pub fn used(&mut self, mg: &mut Generator, ctx: Ctx, board: &Board, keys: &[u64; LANES], rack: &[u8]) -> u64 {
        let all = rack.iter().fold(0u64, |set, &t| set | 1 << t);
        let (mut used, mut missing) = (0, 0);
        for (bit, key) in slot_keys(keys, rack).into_iter().enumerate() {
            match self.cached(key) {
                Some(l) => used |= l.used,
                None => missing |= lane_bit(0, bit),
            }
            if used & all == all {
                return used;
            }
        }
        let lanes = self.lanes(mg, ctx, board, keys, rack, missing);
        lanes.iter().fold(used, |used, l| used | l.used)
    }

    /// The move whose `fingerprint` is `fp`, if `rack` has it on `board`: looked for in its
    /// lane alone.
    pub fn find(
        &mut self,
        mg: &mut Generator,
        ctx: Ctx,
        board: &Board,
        keys: &[u64; LANES],
        rack: &[u8],
        fp: u32,
    ) -> Option<Move> {
        let bit = (fp & 31) as usize;
        if bit >= LANES {
            return (fingerprint(&Move::PASS) == fp).then_some(Move::PASS);
        }
        let l = self.lanes(mg, ctx, board, keys, rack, lane_bit(0, bit))[bit];
        self.plays[l.start as usize..l.end as usize].iter().find(|m| fingerprint(m) == fp).copied()
    }

    /// The lane the memo holds under `key`, if it does.
    fn cached(&self, key: u64) -> Option<Lane> {
        let slots = self.slots.as_ref()?;
        Some(slots[slot(key)]).filter(|(k, _)| *k == key).map(|(_, l)| l)
    }

    /// The plays of each lane in `wanted` (the others are left empty), generating the (lane,
    /// rack) pairs not seen before.
    fn lanes(
        &mut self,
        mg: &mut Generator,
        ctx: Ctx,
        board: &Board,
        keys: &[u64; LANES],
        rack: &[u8],
        wanted: u32,
    ) -> [Lane; LANES] {
        match &mut self.slots {
            None => {
                // SAFETY: all-zero is a valid (key, lane): integers, and key 0 marks it empty.
                self.slots = Some(unsafe { Zeroed::new(SLOTS) });
                self.plays.clear();
            }
            Some(slots) if self.plays.len() > MAX_PLAYS => {
                slots.fill((0, Lane::default()));
                self.plays.clear();
            }
            Some(_) => {}
        }
        let keys = slot_keys(keys, rack);
        let mut lanes = [Lane::default(); LANES];
        let mut missing = 0u32;
        for (bit, &key) in keys.iter().enumerate().filter(|&(b, _)| wanted & lane_bit(0, b) != 0) {
            match self.cached(key) {
                Some(l) => lanes[bit] = l,
                None => missing |= lane_bit(0, bit),
            }
        }
        if missing == 0 {
            return lanes;
        }
        let leaves = RackLeaves::new(rack, |_| 0);
        let req = Request { board, rack, leaves: &leaves, can_exchange: false, opening_vowel_penalty: 0 };
        self.found.clear();
        self.found
            .extend(mg.generate_lanes(ctx, &req, Mode::All, missing, None).iter().filter(|m| m.kind == Kind::Place));
        // Stable: within a lane, generation order.
        self.found.sort_by_key(|m| m.dir as usize * DIM + m.lane as usize);
        let mut found = self.found.iter().peekable();
        for bit in (0..LANES).filter(|&b| missing & lane_bit(0, b) != 0) {
            let mut l =
                Lane { start: self.plays.len() as u32, keep: (u32::MAX, 0), out: (u32::MAX, 0), ..Lane::default() };
            while let Some(m) = found.next_if(|m| m.dir as usize * DIM + m.lane as usize == bit) {
                let at = self.plays.len() as u32;
                let worth = m.score + m.rack_tiles().map(|t| ctx.dist.score(t)).sum::<i32>();
                better(if m.tiles_used() == rack.len() { &mut l.out } else { &mut l.keep }, at, worth);
                l.used |= m.rack_tiles().fold(0, |used, t| used | 1 << t);
                self.plays.push(*m);
            }
            l.end = self.plays.len() as u32;
            lanes[bit] = l;
            if let Some(slots) = &mut self.slots {
                slots[slot(keys[bit])] = (keys[bit], l);
            }
        }
        lanes
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
