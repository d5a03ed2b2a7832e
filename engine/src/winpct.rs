//! Win probability: P(the player to move wins | spread, tiles unseen), the table a simulating
//! bot scores its rollouts with.
//!
//! The table is made from self-play ([`WinSamples`]): every position of every game adds its
//! (spread, unseen, result) to integer counts, so a table depends only on the games, not on the
//! order they finished in. [`WinSamples::fit`] fits, for each unseen count, a logistic curve
//! in spread over that count and its neighbours (widening the window until it holds enough
//! positions), then smooths the curves' parameters across unseen counts. The slope is kept
//! positive, so every row is monotone in spread.
//!
//! File format (text, `.wpt`): a `#` comment header, a line `lexhive-winpct 1 SPREAD_MAX
//! UNSEEN_MAX`, then one line per unseen count `0..=UNSEEN_MAX`: `U: p(-SPREAD_MAX) ...
//! p(+SPREAD_MAX)` as integers in ten-thousandths. Spreads beyond the range clamp to its ends.
//!
//! # Design notes
//!
//! the win-probability table (`WinTable`: P(win | spread, unseen) for the player to move, text
//! `.wpt` files) and its fitting from self-play counts (`WinSamples`, fed finished `Game`s).

use crate::error::{DataError, Located, read_text};
use crate::game::Game;
use crate::moves::Kind;
use crate::tiles::Distribution;
use std::fmt::Write;
use std::path::Path;

/// Spreads are clamped to +-SPREAD_MAX when sampling and looking up.
pub const SPREAD_MAX: i32 = 300;
/// Positions a fit window must hold (widening over neighbouring unseen counts until it does).
const MIN_WINDOW: u64 = 4000;
/// Ridge penalty on the logistic parameters (in "positions" units): keeps sparse rows sane.
const RIDGE: f64 = 1.0;

#[derive(Clone, Debug, PartialEq)]
pub struct WinTable {
    spread_max: i32,
    /// Rows by unseen count, `2 * spread_max + 1` entries each, ten-thousandths.
    rows: Vec<Vec<u16>>,
}

impl WinTable {
    /// P(win) for the player to move, `spread` ahead (negative: behind), `unseen` tiles unseen
    /// (the bag plus the opponent's rack).
    pub fn win_prob(&self, spread: i32, unseen: usize) -> f64 {
        let row = &self.rows[unseen.min(self.rows.len() - 1)];
        row[(spread.clamp(-self.spread_max, self.spread_max) + self.spread_max) as usize] as f64 / 10_000.0
    }

    pub fn unseen_max(&self) -> usize {
        self.rows.len() - 1
    }

    pub fn spread_max(&self) -> i32 {
        self.spread_max
    }

    pub fn parse(text: &str, source: &str) -> Result<Self, DataError> {
        let mut lines = text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty() && !l.starts_with('#'));
        let (i, head) = lines.next().ok_or_else(|| DataError::new(source, "empty win-probability table"))?;
        let at = |i: usize| Located::new(source, i + 1);
        let f: Vec<&str> = head.split_whitespace().collect();
        let (spread_max, unseen_max) = match f.as_slice() {
            ["lexhive-winpct", "1", s, u] => (
                s.parse::<i32>()
                    .ok()
                    .filter(|s| (1..=1000).contains(s))
                    .ok_or_else(|| at(i).err("SPREAD_MAX must be 1..=1000"))?,
                u.parse::<usize>()
                    .ok()
                    .filter(|u| (1..=500).contains(u))
                    .ok_or_else(|| at(i).err("UNSEEN_MAX must be 1..=500"))?,
            ),
            _ => return Err(at(i).err("expected `lexhive-winpct 1 SPREAD_MAX UNSEEN_MAX`")),
        };
        let width = (2 * spread_max + 1) as usize;
        let mut rows = Vec::with_capacity(unseen_max + 1);
        for (i, line) in lines {
            let (u, vals) = line.split_once(':').ok_or_else(|| at(i).err("expected `UNSEEN: values...`"))?;
            if u.trim().parse::<usize>().ok() != Some(rows.len()) {
                return Err(at(i).err(format!("expected the row for {} unseen", rows.len())));
            }
            let row: Vec<u16> = vals
                .split_whitespace()
                .map(|v| v.parse::<u16>().ok().filter(|v| *v <= 10_000))
                .collect::<Option<_>>()
                .ok_or_else(|| at(i).err("values must be integers 0..=10000"))?;
            if row.len() != width {
                return Err(at(i).err(format!("{} values; expected {width}", row.len())));
            }
            if row.windows(2).any(|w| w[0] > w[1]) {
                return Err(at(i).err("win probability must not fall as the spread grows"));
            }
            rows.push(row);
            if rows.len() > unseen_max + 1 {
                return Err(at(i).err("more rows than UNSEEN_MAX + 1"));
            }
        }
        if rows.len() != unseen_max + 1 {
            return Err(DataError::new(source, format!("{} rows; expected {}", rows.len(), unseen_max + 1)));
        }
        Ok(Self { spread_max, rows })
    }

    pub fn load(path: &Path) -> Result<Self, DataError> {
        Self::parse(&read_text(path)?, &path.display().to_string())
    }

    pub fn to_text(&self, comment: &str) -> String {
        let mut s = String::new();
        for line in comment.lines() {
            let _ = writeln!(s, "# {line}");
        }
        let _ = writeln!(s, "lexhive-winpct 1 {} {}", self.spread_max, self.unseen_max());
        for (u, row) in self.rows.iter().enumerate() {
            let _ = write!(s, "{u}:");
            for v in row {
                let _ = write!(s, " {v}");
            }
            s.push('\n');
        }
        s
    }
}

/// Counts of positions by (unseen, spread) and how the player to move fared.
#[derive(Clone, Debug)]
pub struct WinSamples {
    unseen_max: usize,
    /// `[unseen][spread + SPREAD_MAX]`: positions, and half-points won by the player to move.
    seen: Vec<Vec<u64>>,
    half_points: Vec<Vec<u64>>,
}

impl WinSamples {
    pub fn new(dist: &Distribution) -> Self {
        let total: usize = (0..dist.size() as u8).map(|t| dist.count(t) as usize).sum();
        let unseen_max = total.saturating_sub(crate::tiles::RACK_SIZE).max(1);
        let width = (2 * SPREAD_MAX + 1) as usize;
        Self {
            unseen_max,
            seen: vec![vec![0; width]; unseen_max + 1],
            half_points: vec![vec![0; width]; unseen_max + 1],
        }
    }

    pub fn positions(&self) -> u64 {
        self.seen.iter().flatten().sum()
    }

    /// Every position of a finished game, seen by the player to move.
    pub fn add_game(&mut self, g: &Game) {
        let total_tiles = self.unseen_max + crate::tiles::RACK_SIZE;
        let mut on_board = 0usize;
        let mut scores = [0i32; 2];
        for t in &g.history {
            let p = t.player;
            let unseen = total_tiles.saturating_sub(on_board + t.rack.len()).min(self.unseen_max);
            let spread = (scores[p] - scores[1 - p]).clamp(-SPREAD_MAX, SPREAD_MAX);
            let half = match g.scores[p].cmp(&g.scores[1 - p]) {
                std::cmp::Ordering::Greater => 2,
                std::cmp::Ordering::Equal => 1,
                std::cmp::Ordering::Less => 0,
            };
            let s = (spread + SPREAD_MAX) as usize;
            self.seen[unseen][s] += 1;
            self.half_points[unseen][s] += half;
            if t.mv.kind == Kind::Place {
                on_board += t.mv.tiles_used();
            }
            scores[p] = t.total;
        }
    }

    /// The non-zero counts as (unseen, spread, positions, half-points won), for sending.
    pub fn to_counts(&self) -> Vec<(u32, i32, u64, u64)> {
        let mut out = Vec::new();
        for (u, row) in self.seen.iter().enumerate() {
            for (i, &n) in row.iter().enumerate() {
                if n > 0 {
                    out.push((u as u32, i as i32 - SPREAD_MAX, n, self.half_points[u][i]));
                }
            }
        }
        out
    }

    /// Add counts made by `to_counts`; an entry out of range or claiming more half-points than
    /// two per position is an error naming it.
    pub fn add_counts(&mut self, counts: &[(u32, i32, u64, u64)]) -> Result<(), String> {
        for (k, &(u, spread, n, half)) in counts.iter().enumerate() {
            if u as usize > self.unseen_max
                || !(-SPREAD_MAX..=SPREAD_MAX).contains(&spread)
                || half > n.saturating_mul(2)
            {
                return Err(format!("count {k}: ({u}, {spread}, {n}, {half}) is out of range"));
            }
            let i = (spread + SPREAD_MAX) as usize;
            self.seen[u as usize][i] = self.seen[u as usize][i].checked_add(n).ok_or("counts overflow")?;
            self.half_points[u as usize][i] =
                self.half_points[u as usize][i].checked_add(half).ok_or("counts overflow")?;
        }
        Ok(())
    }

    pub fn merge(&mut self, o: &WinSamples) {
        for (a, b) in self.seen.iter_mut().flatten().zip(o.seen.iter().flatten()) {
            *a += b;
        }
        for (a, b) in self.half_points.iter_mut().flatten().zip(o.half_points.iter().flatten()) {
            *a += b;
        }
    }

    /// Fit the table (see the module notes).
    pub fn fit(&self) -> WinTable {
        let rows = self.unseen_max + 1;
        let mut params: Vec<(f64, f64)> = (0..rows).map(|u| self.fit_window(u)).collect();
        // Smooth across unseen counts: a 5-point moving average of both parameters.
        let raw = params.clone();
        for (u, p) in params.iter_mut().enumerate() {
            let (lo, hi) = (u.saturating_sub(2), (u + 2).min(rows - 1));
            let n = (hi - lo + 1) as f64;
            *p = (raw[lo..=hi].iter().map(|q| q.0).sum::<f64>() / n, raw[lo..=hi].iter().map(|q| q.1).sum::<f64>() / n);
        }
        let rows = params
            .iter()
            .map(|&(a, b)| {
                (-SPREAD_MAX..=SPREAD_MAX)
                    .map(|s| {
                        let p = 1.0 / (1.0 + (-(a + b.max(1e-4) * s as f64)).exp());
                        (p * 10_000.0).round() as u16
                    })
                    .collect()
            })
            .collect();
        WinTable { spread_max: SPREAD_MAX, rows }
    }

    /// Logistic fit (intercept, slope per point) over unseen counts around `u` holding at
    /// least `MIN_WINDOW` positions, by Newton's method with a small ridge.
    fn fit_window(&self, u: usize) -> (f64, f64) {
        let (mut lo, mut hi) = (u, u);
        let count = |lo: usize, hi: usize| (lo..=hi).map(|v| self.seen[v].iter().sum::<u64>()).sum::<u64>();
        while count(lo, hi) < MIN_WINDOW && (lo > 0 || hi < self.unseen_max) {
            lo = lo.saturating_sub(1);
            hi = (hi + 1).min(self.unseen_max);
        }
        // Spread in units of 100 points keeps the Newton steps well scaled.
        let (mut a, mut b) = (0.0f64, 1.0f64);
        for _ in 0..50 {
            let (mut ga, mut gb, mut haa, mut hab, mut hbb) = (-RIDGE * a, -RIDGE * b, RIDGE, 0.0, RIDGE);
            for v in lo..=hi {
                for (i, (&n, &h)) in self.seen[v].iter().zip(&self.half_points[v]).enumerate() {
                    if n == 0 {
                        continue;
                    }
                    let x = (i as f64 - SPREAD_MAX as f64) / 100.0;
                    let p = 1.0 / (1.0 + (-(a + b * x)).exp());
                    let (n, y) = (n as f64, h as f64 / 2.0);
                    let r = y - n * p;
                    let w = n * p * (1.0 - p);
                    ga += r;
                    gb += r * x;
                    haa += w;
                    hab += w * x;
                    hbb += w * x * x;
                }
            }
            let det = haa * hbb - hab * hab;
            if det.abs() < 1e-12 {
                break;
            }
            let (da, db) = ((hbb * ga - hab * gb) / det, (haa * gb - hab * ga) / det);
            a += da;
            b += db;
            if da.abs() + db.abs() < 1e-9 {
                break;
            }
        }
        (a, b / 100.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Samples from a known model: P = logistic(0.1 + s * 4 / (u + 10)).
    fn synthetic() -> WinSamples {
        let mut w = WinSamples::new(&Distribution::english());
        let mut rng = crate::rng::Rng::new(3);
        for _ in 0..400_000 {
            let u = rng.below(94) as usize;
            let s = rng.below(401) as i32 - 200;
            let p = 1.0 / (1.0 + (-(0.1 + s as f64 * 4.0 / (u as f64 + 10.0) / 10.0)).exp());
            let half = if rng.unit() < p { 2 } else { 0 };
            let i = (s + SPREAD_MAX) as usize;
            w.seen[u][i] += 1;
            w.half_points[u][i] += half;
        }
        w
    }

    #[test]
    fn fit_recovers_a_known_model_and_is_monotone() {
        let t = synthetic().fit();
        for u in [5usize, 30, 80] {
            for s in [-100, 0, 60] {
                let want = 1.0 / (1.0 + (-(0.1 + s as f64 * 4.0 / (u as f64 + 10.0) / 10.0)).exp());
                assert!((t.win_prob(s, u) - want).abs() < 0.03, "u {u} s {s}: {} vs {want}", t.win_prob(s, u));
            }
        }
        for u in 0..=t.unseen_max() {
            assert!((-SPREAD_MAX..SPREAD_MAX).all(|s| t.win_prob(s, u) <= t.win_prob(s + 1, u)));
        }
    }

    #[test]
    fn text_round_trip_and_bad_files() {
        let t = synthetic().fit();
        let text = t.to_text("test table");
        assert_eq!(WinTable::parse(&text, "t.wpt").unwrap(), t);
        assert_eq!(t.win_prob(10_000, 3), t.win_prob(SPREAD_MAX, 3));
        let e = WinTable::parse("lexhive-winpct 1 2 1\n0: 1 2 3 4 5\n1: 1 2 3\n", "x.wpt").unwrap_err();
        assert_eq!(e.place, "x.wpt:3");
        let e = WinTable::parse("lexhive-winpct 1 2 1\n0: 1 2 9 4 5\n", "x.wpt").unwrap_err();
        assert!(e.message.contains("must not fall"), "{e}");
        assert!(WinTable::parse("lexhive-winpct 1 2 1\n0: 1 2 3 4 5\n", "x.wpt").unwrap_err().message.contains("rows"));
        assert!(WinTable::parse("nonsense", "x.wpt").is_err());
        assert!(WinTable::parse("lexhive-winpct 1 2 1\n0: 1 2 3 4 99999\n1: 1 2 3 4 5\n", "x.wpt").is_err());
    }
}
