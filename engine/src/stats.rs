//! Match statistics: win rates with 95% intervals, scores, bingos, points per turn, first-move
//! advantage, and paired-deal statistics.

use crate::autoplay::Outcome;
use std::collections::HashMap;
use std::fmt::Write;

/// z for a two-sided 95% interval.
pub const Z95: f64 = 1.959_963_985;

/// Mean and sample variance of the per-pair score (0, 0.25, ..., 1 for 0, 0.5, ..., 2 points
/// over both legs), and the number of pairs; `None` below two pairs.
pub fn pair_moments(pair_points: &[u64; 5]) -> Option<(f64, f64, f64)> {
    let n: u64 = pair_points.iter().sum();
    if n < 2 {
        return None;
    }
    let n = n as f64;
    let vals = pair_points.iter().enumerate().map(|(i, &c)| (i as f64 / 4.0, c as f64));
    let mean = vals.clone().map(|(v, c)| v * c).sum::<f64>() / n;
    let var = vals.map(|(v, c)| c * (v - mean).powi(2)).sum::<f64>() / (n - 1.0);
    Some((mean, var, n))
}

#[derive(Clone, Debug, Default)]
pub struct Summary {
    pub games: u64,
    /// Wins of each bot, draws counting half.
    pub wins: [f64; 2],
    score_sum: [f64; 2],
    score_sq: [f64; 2],
    bingos: [u64; 2],
    turns: [u64; 2],
    micros: [u64; 2],
    went_first: [u64; 2],
    first_wins: f64,
    spread_sum: f64,
    /// Per complete pair, bot 0's points out of 2 (both legs): counts of 0, 0.5, ..., 2.
    pair_points: [u64; 5],
    /// First-finished leg's result of each pair still waiting for its other leg.
    pending: HashMap<u64, f64>,
}

impl Summary {
    pub fn add(&mut self, r: &Outcome) {
        self.games += 1;
        for b in 0..2 {
            let s = r.score_of(b) as f64;
            self.wins[b] += r.result_of(b);
            self.score_sum[b] += s;
            self.score_sq[b] += s * s;
        }
        self.spread_sum += (r.score_of(0) - r.score_of(1)) as f64;
        self.went_first[r.seat_bot[0]] += 1;
        self.first_wins += r.result_of(r.seat_bot[0]);
        for seat in 0..2 {
            let b = r.seat_bot[seat];
            self.turns[b] += r.turns[seat] as u64;
            self.bingos[b] += r.bingos[seat] as u64;
            self.micros[b] += r.micros[seat];
        }
        let pair = r.id / 2;
        match self.pending.remove(&pair) {
            Some(other) => {
                let pts = other + r.result_of(0);
                self.pair_points[(pts * 2.0).round() as usize] += 1;
            }
            None => {
                self.pending.insert(pair, r.result_of(0));
            }
        }
    }

    /// Win rate of bot `b` and the half-width of its 95% interval (normal approximation).
    pub fn win_rate(&self, b: usize) -> (f64, f64) {
        let n = self.games.max(1) as f64;
        let p = self.wins[b] / n;
        (p, Z95 * (p * (1.0 - p) / n).sqrt())
    }

    fn mean_sd(&self, b: usize) -> (f64, f64) {
        let n = self.games.max(1) as f64;
        let m = self.score_sum[b] / n;
        let var = (self.score_sq[b] / n - m * m).max(0.0) * n / (n - 1.0).max(1.0);
        (m, var.sqrt())
    }

    /// Bot 0's win rate estimated from pairs, with a 95% interval from the spread of pair
    /// results (honest when the two legs of a pair are correlated).
    pub fn paired_rate(&self) -> Option<(f64, f64, u64)> {
        let (mean, var, n) = pair_moments(&self.pair_points)?;
        Some((mean, Z95 * (var / n).sqrt(), n as u64))
    }

    /// The summary block researchers know from other engines' autoplay.
    pub fn report(&self, names: [&str; 2]) -> String {
        let mut s = String::new();
        let n = self.games.max(1) as f64;
        let _ = writeln!(s, "Games played: {}", self.games);
        for (b, name) in names.iter().enumerate() {
            let (p, ci) = self.win_rate(b);
            let _ = writeln!(s, "{name} wins: {} ({:.3}% +- {:.2}%)", self.wins[b], 100.0 * p, 100.0 * ci);
        }
        for (b, name) in names.iter().enumerate() {
            let (m, sd) = self.mean_sd(b);
            let _ = writeln!(s, "{name} Mean Score: {m:.2}  Stdev: {sd:.2}");
        }
        for (b, name) in names.iter().enumerate() {
            let _ = writeln!(s, "{name} Mean Bingos: {:.3}", self.bingos[b] as f64 / n);
        }
        for (b, name) in names.iter().enumerate() {
            let ppt = self.score_sum[b] / self.turns[b].max(1) as f64;
            let _ = writeln!(s, "{name} Mean Points Per Turn: {ppt:.2}");
        }
        for (b, name) in names.iter().enumerate() {
            let _ = writeln!(
                s,
                "{name} Mean Time Per Move: {:.2} ms",
                self.micros[b] as f64 / 1000.0 / self.turns[b].max(1) as f64
            );
        }
        let _ = writeln!(
            s,
            "{} went first: {} ({:.3}%)",
            names[0],
            self.went_first[0],
            100.0 * self.went_first[0] as f64 / n
        );
        let _ = writeln!(s, "Player who went first wins: {} ({:.3}%)", self.first_wins, 100.0 * self.first_wins / n);
        let _ = writeln!(s, "{} Mean Spread: {:+.2}", names[0], self.spread_sum / n);
        if let Some((rate, ci, pairs)) = self.paired_rate() {
            let [lost_both, lost_and_drew, split, won_and_drew, won_both] = self.pair_points;
            let half = lost_and_drew + won_and_drew;
            let _ = writeln!(
                s,
                "Pairs: {pairs}  {} won both: {won_both}  split: {split}  lost both: {lost_both}  with a draw: {half}",
                names[0]
            );
            let _ = writeln!(s, "{} paired win rate: {:.3}% +- {:.2}%", names[0], 100.0 * rate, 100.0 * ci);
        }
        s
    }
}
