//! Making leave tables by self-play.
//!
//! Each kept leave `L` is credited with what its owner got out of it on the next turn: the
//! next move's score plus the previous table's value of the leave kept then (a one-step
//! temporal-difference target, so later iterations see further than one turn). Values are
//! fitted by ridge regression on features a player would name (each copy of each tile,
//! vowel/consonant balance by leave size, Q without U), which gives every one of the ~900,000
//! possible leaves a value; pairs of different tiles kept together (ER, QU, SZ) get a
//! synergy term; leaves seen often enough get their own mean residual on top,
//! shrunk towards the model by `n / (n + SHRINK)`. A leave's value is relative to keeping
//! nothing, which is worth 0.

use crate::leaves::Klv;
use crate::moves::Kind;
use crate::record::GameRecord;
use crate::tiles::Distribution;
use std::collections::HashMap;

/// Largest leave in the table (a rack keeps at most 6 tiles after a play).
pub const MAX_LEAVE: usize = 6;
const COPIES: usize = 3;
const SHRINK: f64 = 30.0;
const RIDGE: f64 = 1.0;

/// Feature layout over a distribution.
struct Features {
    tiles: usize,
    u: Option<u8>,
    q: Option<u8>,
}

impl Features {
    fn new(dist: &Distribution) -> Self {
        Self { tiles: dist.size(), u: dist.letter('U'), q: dist.letter('Q') }
    }
    /// Intercept, per-copy tile features, (vowels, size) balance, Q without U, tile pairs.
    fn len(&self) -> usize {
        self.pairs_base() + self.tiles * self.tiles
    }
    fn pairs_base(&self) -> usize {
        1 + self.tiles * COPIES + (MAX_LEAVE + 1) * (MAX_LEAVE + 1) + 1
    }
    /// Indices of the features that are 1 for this sorted leave.
    fn active(&self, leave: &[u8], dist: &Distribution, out: &mut Vec<usize>) {
        out.clear();
        out.push(0);
        if leave.is_empty() {
            return;
        }
        let mut copies = [0usize; 64];
        let mut vowels = 0;
        for &t in leave {
            let c = copies[t as usize].min(COPIES - 1);
            copies[t as usize] += 1;
            out.push(1 + t as usize * COPIES + c);
            vowels += dist.is_vowel(t) as usize;
        }
        let base = 1 + self.tiles * COPIES;
        out.push(base + vowels * (MAX_LEAVE + 1) + leave.len().min(MAX_LEAVE));
        if let (Some(q), Some(u)) = (self.q, self.u)
            && leave.contains(&q)
            && !leave.contains(&u)
        {
            out.push(base + (MAX_LEAVE + 1) * (MAX_LEAVE + 1));
        }
        for (i, &a) in leave.iter().enumerate() {
            for &b in &leave[i + 1..] {
                if a != b && (i == 0 || leave[i - 1] != a) {
                    let pair = self.pairs_base() + a as usize * self.tiles + b as usize;
                    if !out.contains(&pair) {
                        out.push(pair);
                    }
                }
            }
        }
    }
}

/// Accumulated (leave, target) observations: normal equations plus per-leave sums. Targets are
/// integer millipoints and every sum is an integer, so the result does not depend on the order
/// games finish in (threads) — the same seed gives the same table, bit for bit.
pub struct Samples {
    feats: Features,
    xtx: Vec<u64>,
    xty: Vec<i64>,
    per_leave: HashMap<Vec<u8>, (u32, i64)>,
    pub count: u64,
    active: Vec<usize>,
}

impl Samples {
    pub fn new(dist: &Distribution) -> Self {
        let feats = Features::new(dist);
        let n = feats.len();
        Self { feats, xtx: vec![0; n * n], xty: vec![0; n], per_leave: HashMap::new(), count: 0, active: Vec::new() }
    }

    /// One observation: keeping `leave` was followed by `y` millipoints.
    pub fn add(&mut self, leave: &[u8], y: i64, dist: &Distribution) {
        self.add_counted(leave, 1, y, dist);
    }

    /// `count` observations of keeping `leave`, followed by `sum` millipoints in all: what
    /// `count` calls of [`Samples::add`] add (the fit sees only these sums).
    fn add_counted(&mut self, leave: &[u8], count: u32, sum: i64, dist: &Distribution) {
        let n = self.feats.len();
        let mut active = std::mem::take(&mut self.active);
        self.feats.active(leave, dist, &mut active);
        for &i in &active {
            self.xty[i] += sum;
            for &j in &active {
                self.xtx[i * n + j] += count as u64;
            }
        }
        self.active = active;
        let e = self.per_leave.entry(leave.to_vec()).or_insert((0, 0));
        e.0 += count;
        e.1 += sum;
        self.count += count as u64;
    }

    /// Each kept leave with its count and summed millipoints, sorted by leave: all the fit
    /// needs, so that samples made on many machines add up to those made on one.
    pub fn to_counts(&self) -> Vec<(Vec<u8>, u32, i64)> {
        let mut out: Vec<_> = self.per_leave.iter().map(|(l, &(c, s))| (l.clone(), c, s)).collect();
        out.sort_unstable();
        out
    }

    /// Add counts made by [`Samples::to_counts`], refusing (and adding nothing of) any that no
    /// game could make: a leave longer than [`MAX_LEAVE`], unsorted, or holding more
    /// of a tile than the distribution has; a count of 0; a sum beyond 10,000 points a
    /// observation.
    pub fn add_counts(&mut self, counts: &[(Vec<u8>, u32, i64)], dist: &Distribution) -> Result<(), String> {
        Self::check_counts(counts, dist)?;
        for (leave, count, sum) in counts {
            self.add_counted(leave, *count, *sum, dist);
        }
        Ok(())
    }

    /// Whether counts could come from games of `dist` (see [`Samples::add_counts`]).
    pub fn check_counts(counts: &[(Vec<u8>, u32, i64)], dist: &Distribution) -> Result<(), String> {
        for (i, (leave, count, sum)) in counts.iter().enumerate() {
            let bad = |why: &str| Err(format!("leave {i} ({leave:?}): {why}"));
            if leave.len() > MAX_LEAVE {
                return bad(&format!("a kept leave has at most {MAX_LEAVE} tiles"));
            }
            if leave.windows(2).any(|w| w[0] > w[1]) {
                return bad("its tiles are not sorted");
            }
            if leave.iter().any(|&t| t as usize >= dist.size())
                || leave.chunk_by(|a, b| a == b).any(|run| run.len() > dist.count(run[0]) as usize)
            {
                return bad("not tiles of this distribution");
            }
            if *count == 0 || sum.unsigned_abs() > *count as u64 * 10_000_000 {
                return bad("a count of 0, or a sum past 10,000 points an observation");
            }
        }
        Ok(())
    }

    /// Record every kept leave of a finished game; `prev` is the table the game was played with.
    pub fn add_game(&mut self, rec: &GameRecord, prev: Option<&Klv>, dist: &Distribution) {
        let h = &rec.game.history;
        for (i, t) in h.iter().enumerate() {
            // Only leaves that meet fresh tiles and get used on a later turn of their owner.
            if t.bag_after == 0 || t.mv.kind == Kind::Pass || i + 2 >= h.len() {
                continue;
            }
            let next = &h[i + 2];
            let leave = t.mv.leave(&t.rack);
            if leave.len() > MAX_LEAVE {
                continue;
            }
            let carry = match prev {
                Some(k) if next.bag_after > 0 => Klv::millis(k.value(&next.mv.leave(&next.rack))),
                _ => 0,
            };
            self.add(&leave, next.score as i64 * 1000 + carry as i64, dist);
        }
    }

    /// Fit the model and produce a table of every leave of 1..=6 tiles.
    pub fn fit(&self, dist: &Distribution) -> Result<Klv, crate::DataError> {
        let n = self.feats.len();
        let mut a: Vec<f64> = self.xtx.iter().map(|&c| c as f64).collect();
        for i in 1..n {
            a[i * n + i] += RIDGE;
        }
        a[0] += 1e-9;
        let w = solve(a, self.xty.iter().map(|&y| y as f64 / 1000.0).collect(), n);
        let mut active = Vec::new();
        let predict = |leave: &[u8], active: &mut Vec<usize>| {
            self.feats.active(leave, dist, active);
            active.iter().skip(1).map(|&i| w[i]).sum::<f64>()
        };
        let mut entries = Vec::new();
        for leave in all_leaves(dist) {
            let mut v = predict(&leave, &mut active);
            if let Some(&(count, sum)) = self.per_leave.get(&leave) {
                let residual = sum as f64 / 1000.0 / count as f64 - w[0] - v;
                v += residual * count as f64 / (count as f64 + SHRINK);
            }
            entries.push((leave, v as f32));
        }
        Klv::build(entries)
    }
}

/// Every sorted multiset of 1..=MAX_LEAVE tiles the distribution allows.
pub fn all_leaves(dist: &Distribution) -> Vec<Vec<u8>> {
    fn rec(dist: &Distribution, tile: u8, cur: &mut Vec<u8>, out: &mut Vec<Vec<u8>>) {
        if tile as usize == dist.size() {
            if !cur.is_empty() {
                out.push(cur.clone());
            }
            return;
        }
        let room = MAX_LEAVE - cur.len();
        for k in 0..=(dist.count(tile) as usize).min(room) {
            cur.extend(std::iter::repeat_n(tile, k));
            rec(dist, tile + 1, cur, out);
            cur.truncate(cur.len() - k);
        }
    }
    let mut out = Vec::new();
    rec(dist, 0, &mut Vec::new(), &mut out);
    out
}

/// Solve the symmetric positive-definite system `a x = b` (Gaussian elimination with partial
/// pivoting; the system is small).
fn solve(mut a: Vec<f64>, mut b: Vec<f64>, n: usize) -> Vec<f64> {
    for col in 0..n {
        let piv = (col..n).max_by(|&i, &j| a[i * n + col].abs().total_cmp(&a[j * n + col].abs())).unwrap_or(col);
        if a[piv * n + col].abs() < 1e-12 {
            continue;
        }
        if piv != col {
            for k in 0..n {
                a.swap(piv * n + k, col * n + k);
            }
            b.swap(piv, col);
        }
        for r in col + 1..n {
            let f = a[r * n + col] / a[col * n + col];
            if f != 0.0 {
                for k in col..n {
                    a[r * n + k] -= f * a[col * n + k];
                }
                b[r] -= f * b[col];
            }
        }
    }
    let mut x = vec![0.0; n];
    for r in (0..n).rev() {
        let s: f64 = (r + 1..n).map(|k| a[r * n + k] * x[k]).sum();
        x[r] = if a[r * n + r].abs() < 1e-12 { 0.0 } else { (b[r] - s) / a[r * n + r] };
    }
    x
}
