//! Match statistics that both sides compute the same way: the per-batch tally a worker uploads,
//! the per-cell sums the coordinator keeps, win rates with 95% intervals, and the SPRT.
//!
//! Tallies are integer counts, so summing them in any order gives the same cell totals — the
//! coordinator can recompute a cell from its stored batch results and compare exactly.

use serde::{Deserialize, Serialize};

pub use engine::stats::Z95;

/// Everything the dashboards show about a set of games, from the first bot's view whatever seat
/// it sat in. Batches always hold whole pairs (both legs of a deal).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MatchTally {
    pub games: u64,
    pub wins: u64,
    pub draws: u64,
    pub losses: u64,
    /// Complete pairs by the first bot's points over both legs: 0, 0.5, 1, 1.5, 2.
    pub pair_points: [u64; 5],
    /// Final scores summed over games: the first bot's, the second bot's.
    pub score: [i64; 2],
    pub bingos: [u64; 2],
    pub turns: [u64; 2],
    /// Games won / drawn by whoever moved first.
    pub first_wins: u64,
    pub first_draws: u64,
    /// Microseconds each bot spent choosing its moves (machine-dependent, unlike the rest).
    #[serde(default)]
    pub micros: [u64; 2],
}

impl MatchTally {
    /// Tally finished games; both legs of every pair must be among them. Bot 0 is the first bot.
    pub fn from_outcomes(games: &[engine::autoplay::Outcome]) -> MatchTally {
        let mut t = MatchTally::default();
        let mut legs: std::collections::BTreeMap<u64, u64> = Default::default();
        for o in games {
            t.games += 1;
            let (a, b) = (o.score_of(0), o.score_of(1));
            // Half-points of bot 0 in this game: 2 win, 1 draw, 0 loss.
            let half = match a.cmp(&b) {
                std::cmp::Ordering::Greater => {
                    t.wins += 1;
                    2
                }
                std::cmp::Ordering::Equal => {
                    t.draws += 1;
                    1
                }
                std::cmp::Ordering::Less => {
                    t.losses += 1;
                    0
                }
            };
            *legs.entry(o.id / 2).or_default() += half;
            t.score[0] += a as i64;
            t.score[1] += b as i64;
            for seat in 0..2 {
                let bot = o.seat_bot[seat];
                t.bingos[bot] += o.bingos[seat] as u64;
                t.turns[bot] += o.turns[seat] as u64;
                t.micros[bot] += o.micros[seat];
            }
            match o.scores[0].cmp(&o.scores[1]) {
                std::cmp::Ordering::Greater => t.first_wins += 1,
                std::cmp::Ordering::Equal => t.first_draws += 1,
                std::cmp::Ordering::Less => {}
            }
        }
        for half_points in legs.values() {
            t.pair_points[(*half_points as usize).min(4)] += 1;
        }
        t
    }

    pub fn merge(&mut self, o: &MatchTally) {
        self.games += o.games;
        self.wins += o.wins;
        self.draws += o.draws;
        self.losses += o.losses;
        for i in 0..5 {
            self.pair_points[i] += o.pair_points[i];
        }
        for b in 0..2 {
            self.score[b] += o.score[b];
            self.bingos[b] += o.bingos[b];
            self.turns[b] += o.turns[b];
            self.micros[b] += o.micros[b];
        }
        self.first_wins += o.first_wins;
        self.first_draws += o.first_draws;
    }

    /// Whether the counts agree with each other (a check on uploads).
    pub fn is_consistent(&self) -> bool {
        let pairs: u64 = self.pair_points.iter().sum();
        self.wins + self.draws + self.losses == self.games
            && 2 * pairs == self.games
            && self.first_wins + self.first_draws <= self.games
    }

    pub fn pairs(&self) -> u64 {
        self.pair_points.iter().sum()
    }

    /// The first bot's score rate: wins plus half the draws, over games.
    pub fn win_rate(&self) -> Option<f64> {
        (self.games > 0).then(|| (self.wins as f64 + 0.5 * self.draws as f64) / self.games as f64)
    }

    /// 95% interval for the win rate. With two or more pairs it comes from the spread of pair
    /// results, which is honest when the two legs of a deal are correlated (they are: paired
    /// deals exist to make them so); otherwise it is Wilson's interval over games.
    pub fn interval(&self) -> Option<(f64, f64)> {
        let p = self.win_rate()?;
        if let Some((mean, var, n)) = self.pair_moments() {
            let h = Z95 * (var / n).sqrt();
            return Some(((mean - h).max(0.0), (mean + h).min(1.0)));
        }
        let n = self.games as f64;
        let z2 = Z95 * Z95;
        let centre = (p + z2 / (2.0 * n)) / (1.0 + z2 / n);
        let h = Z95 / (1.0 + z2 / n) * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
        Some(((centre - h).max(0.0), (centre + h).min(1.0)))
    }

    /// Mean and sample variance of the per-pair score (0, 0.25, ..., 1), and the pair count.
    fn pair_moments(&self) -> Option<(f64, f64, f64)> {
        engine::stats::pair_moments(&self.pair_points)
    }

    /// Mean final score of bot `b` (0: first bot).
    pub fn mean_score(&self, b: usize) -> f64 {
        self.score[b] as f64 / self.games.max(1) as f64
    }

    pub fn mean_bingos(&self, b: usize) -> f64 {
        self.bingos[b] as f64 / self.games.max(1) as f64
    }

    /// Milliseconds bot `b` spent per move.
    pub fn ms_per_move(&self, b: usize) -> f64 {
        self.micros[b] as f64 / 1000.0 / self.turns[b].max(1) as f64
    }

    pub fn points_per_turn(&self, b: usize) -> f64 {
        self.score[b] as f64 / self.turns[b].max(1) as f64
    }

    /// Share of games won by the player who moved first, draws counting half.
    pub fn first_player_rate(&self) -> Option<f64> {
        (self.games > 0).then(|| (self.first_wins as f64 + 0.5 * self.first_draws as f64) / self.games as f64)
    }
}

/// A sequential probability ratio test on the first bot's per-pair score: H0 "its win rate is
/// `p0`" against H1 "it is `p1`", with error rates `alpha` (accepting H1 wrongly) and `beta`.
/// Uses the normal (generalised) approximation of the log-likelihood ratio over pair results.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sprt {
    pub p0: f64,
    pub p1: f64,
    pub alpha: f64,
    pub beta: f64,
}

/// What an SPRT says about a tally.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SprtDecision {
    Continue { llr: f64 },
    AcceptH0 { llr: f64 },
    AcceptH1 { llr: f64 },
}

/// Pairs an SPRT waits for before deciding: the normal approximation needs a few.
pub const SPRT_MIN_PAIRS: u64 = 20;

impl Sprt {
    /// Lower and upper log-likelihood-ratio bounds.
    pub fn bounds(&self) -> (f64, f64) {
        ((self.beta / (1.0 - self.alpha)).ln(), ((1.0 - self.beta) / self.alpha).ln())
    }

    pub fn llr(&self, t: &MatchTally) -> Option<f64> {
        let (mean, var, n) = t.pair_moments()?;
        // All pairs alike gives no variance estimate; a tiny floor keeps the ratio finite.
        let var = var.max(1e-6);
        Some(n * (self.p1 - self.p0) * (2.0 * mean - self.p0 - self.p1) / (2.0 * var))
    }

    pub fn decide(&self, t: &MatchTally) -> SprtDecision {
        let llr = self.llr(t).unwrap_or(0.0);
        if t.pairs() < SPRT_MIN_PAIRS {
            return SprtDecision::Continue { llr };
        }
        let (lo, hi) = self.bounds();
        if llr >= hi {
            SprtDecision::AcceptH1 { llr }
        } else if llr <= lo {
            SprtDecision::AcceptH0 { llr }
        } else {
            SprtDecision::Continue { llr }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tally(pair_points: [u64; 5]) -> MatchTally {
        let mut t = MatchTally { pair_points, ..Default::default() };
        for (i, &c) in pair_points.iter().enumerate() {
            // i half-points over two legs: i / 2 wins... spread as whole wins and draws.
            let (w, d) = (i as u64 / 2, i as u64 % 2);
            t.wins += w * c;
            t.draws += d * c;
            t.losses += (2 - w - d) * c;
            t.games += 2 * c;
        }
        t
    }

    #[test]
    fn outcomes_from_the_first_bots_view() {
        use engine::autoplay::Outcome;
        let g = |id, seat_bot, scores| Outcome { id, seat_bot, scores, bingos: [1, 0], turns: [10, 9], micros: [0, 0] };
        // Pair 0: bot 0 wins leg 0 (first), draws leg 1. Pair 1: bot 1 wins both.
        let t = MatchTally::from_outcomes(&[
            g(0, [0, 1], [400, 300]),
            g(1, [1, 0], [350, 350]),
            g(2, [0, 1], [300, 420]),
            g(3, [1, 0], [410, 330]),
        ]);
        assert_eq!((t.games, t.wins, t.draws, t.losses), (4, 1, 1, 2));
        assert_eq!(t.pair_points, [1, 0, 0, 1, 0]);
        assert_eq!(t.score, [400 + 350 + 300 + 330, 300 + 350 + 420 + 410]);
        assert_eq!(t.bingos, [2, 2]);
        assert_eq!(t.turns, [10 + 9 + 10 + 9, 9 + 10 + 9 + 10]);
        assert_eq!((t.first_wins, t.first_draws), (2, 1));
        assert!(t.is_consistent());
    }

    #[test]
    fn merge_is_a_sum_and_stays_consistent() {
        let a = tally([1, 2, 3, 4, 5]);
        let b = tally([5, 0, 1, 0, 2]);
        let mut m = a;
        m.merge(&b);
        assert_eq!(m, tally([6, 2, 4, 4, 7]));
        assert!(m.is_consistent());
        let mut bad = m;
        bad.wins += 1;
        assert!(!bad.is_consistent());
    }

    #[test]
    fn interval_contains_rate_and_narrows() {
        let small = tally([10, 0, 20, 0, 30]);
        let big = tally([100, 0, 200, 0, 300]);
        for t in [small, big] {
            let (lo, hi) = t.interval().unwrap();
            let p = t.win_rate().unwrap();
            assert!(lo < p && p < hi, "{lo} {p} {hi}");
        }
        let w = |t: MatchTally| {
            let (lo, hi) = t.interval().unwrap();
            hi - lo
        };
        assert!(w(big) < w(small) / 3.0);
        // Pair statistics: 60 pairs with values 0, .5, 1 in ratio 1:2:3.
        let (mean, var, n) = small.pair_moments().unwrap();
        assert_eq!(n, 60.0);
        assert!((mean - (0.0 * 10.0 + 0.5 * 20.0 + 30.0) / 60.0).abs() < 1e-12);
        assert!(var > 0.0);
    }

    #[test]
    fn wilson_for_a_single_pair() {
        let t = tally([0, 0, 0, 0, 1]);
        let (lo, hi) = t.interval().unwrap();
        assert!(lo > 0.0 && hi == 1.0, "{lo} {hi}");
        assert_eq!(MatchTally::default().interval(), None);
    }

    /// Pairs drawn from a bot of true win rate `p` whose two legs are positively correlated
    /// (as on paired deals): each pair is won both / split / lost both, plus some draws.
    fn simulate(p: f64, pairs: u64, rng: &mut engine::rng::Rng) -> MatchTally {
        let mut counts = [0u64; 5];
        for _ in 0..pairs {
            // A shared "deal luck" makes the legs agree more often than independent games would.
            let luck = rng.unit() < 0.5;
            let leg = |rng: &mut engine::rng::Rng| {
                let q = if luck { (p + 0.15).min(1.0) } else { (p - 0.15).max(0.0) };
                let u = rng.unit();
                if u < 0.01 {
                    1
                } else if u < 0.01 + q * 0.99 {
                    2
                } else {
                    0
                }
            };
            let pts = leg(rng) + leg(rng);
            counts[pts as usize] += 1;
        }
        tally(counts)
    }

    #[test]
    fn interval_covers_the_true_rate_95_percent_of_the_time() {
        let mut rng = engine::rng::Rng::new(7);
        let p = 0.56;
        let runs = 2000;
        let covered = (0..runs)
            .filter(|_| {
                let (lo, hi) = simulate(p, 200, &mut rng).interval().unwrap();
                lo <= p && p <= hi
            })
            .count();
        let rate = covered as f64 / runs as f64;
        assert!((0.93..=0.97).contains(&rate), "coverage {rate}");
    }

    #[test]
    fn sprt_error_rates_are_near_alpha_and_beta() {
        let s = Sprt { p0: 0.50, p1: 0.55, alpha: 0.05, beta: 0.05 };
        let mut rng = engine::rng::Rng::new(11);
        // Run each simulated test pair by pair until it decides.
        let mut run = |p: f64| {
            let mut t = MatchTally::default();
            for _ in 0..20_000 {
                t.merge(&simulate(p, 1, &mut rng));
                match s.decide(&t) {
                    SprtDecision::Continue { .. } => {}
                    d => return d,
                }
            }
            SprtDecision::Continue { llr: 0.0 }
        };
        let runs = 300;
        let false_h1 = (0..runs).filter(|_| matches!(run(0.50), SprtDecision::AcceptH1 { .. })).count();
        let false_h0 = (0..runs).filter(|_| matches!(run(0.55), SprtDecision::AcceptH0 { .. })).count();
        // Around 5% each; allow for 300 runs' noise (sd ~1.3%).
        assert!(false_h1 <= 27, "accepted H1 wrongly {false_h1} / {runs}");
        assert!(false_h0 <= 27, "accepted H0 wrongly {false_h0} / {runs}");
    }

    #[test]
    fn sprt_accepts_the_true_hypothesis() {
        let s = Sprt { p0: 0.5, p1: 0.6, alpha: 0.05, beta: 0.05 };
        // A clearly stronger bot: 70% of pairs won both.
        assert!(matches!(s.decide(&tally([30, 0, 40, 0, 130])), SprtDecision::AcceptH1 { .. }));
        // An equal one over many pairs.
        assert!(matches!(s.decide(&tally([250, 0, 500, 0, 250])), SprtDecision::AcceptH0 { .. }));
        // Too few pairs: keep going whatever they say.
        assert!(matches!(s.decide(&tally([0, 0, 0, 0, 19])), SprtDecision::Continue { .. }));
        let (lo, hi) = s.bounds();
        assert!((lo + 2.944).abs() < 1e-3 && (hi - 2.944).abs() < 1e-3);
    }
}
