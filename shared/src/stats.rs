//! Match statistics, in one place for every program that prints them: the tally a worker
//! uploads and `worker autoplay` prints, the per-cell sums the coordinator keeps, the win rate
//! with its 95% interval, and the SPRT. The dashboards, the JSON API and the CLI all call
//! [`MatchTally::interval`], so the same games get the same interval everywhere.
//!
//! Tallies are integer counts, so summing them in any order gives the same cell totals — the
//! coordinator can recompute a cell from its stored batch results and compare exactly.
//!
//! # Design notes
//!
//! `MatchTally` (integer counts from the first bot's view: W/D/L, pair results, score and
//! squared-score sums, bingo, turn and first-player sums), built from games in any order by
//! `Tallier`, its merge, the report block `worker autoplay` prints, the win rate with its 95%
//! interval (Wilson over pairs below 30 pairs; from there the pairs' variance with a lost and a won
//! pseudo-pair added; never a point), and `Sprt` (GSPRT on pair scores, same moments). The CLI, the
//! JSON API and the pages all print this one interval.

use engine::record::Outcome;
use engine::stats::{Welford, Z95, wilson};
use serde::{Deserialize, Serialize};
use std::cmp::Ordering;
use std::collections::HashMap;
use std::fmt::Write;

/// Below this many pairs the interval is Wilson's over pairs; from here on it comes from the
/// observed spread of pair results.
pub const SMALL_PAIRS: u64 = 30;

/// Pairs a worker and the rest of its cell each need before its results are compared with
/// theirs ([`MatchTally::outlier_z`]).
pub const OUTLIER_MIN_PAIRS: u64 = 30;

/// Standard errors from the rest of its cell at which a worker's results are an outlier: about
/// one honest worker in three million checks is flagged by chance.
pub const OUTLIER_Z: f64 = 5.0;

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
    /// Squares of the final scores summed over games, for their standard deviation.
    #[serde(default)]
    pub score_sq: [u64; 2],
    pub bingos: [u64; 2],
    pub turns: [u64; 2],
    /// Games won / drawn by whoever moved first.
    pub first_wins: u64,
    pub first_draws: u64,
    /// Microseconds each bot spent choosing its moves (machine-dependent, unlike the rest).
    #[serde(default)]
    pub micros: [u64; 2],
}

/// Builds a [`MatchTally`] from games as they finish, in any order: a pair counts once both of
/// its legs are in.
#[derive(Debug, Default)]
pub struct Tallier {
    tally: MatchTally,
    paired: bool,
    /// Half-points of the first bot in the finished leg of each pair still missing its other.
    pending: HashMap<u64, u64>,
}

impl Tallier {
    /// `paired`: games `2p` and `2p + 1` are the two legs of deal `p`.
    pub fn new(paired: bool) -> Self {
        Self { paired, ..Self::default() }
    }

    pub fn add(&mut self, o: &Outcome) {
        let t = &mut self.tally;
        t.games += 1;
        let (a, b) = (o.score_of(0), o.score_of(1));
        // Half-points of bot 0 in this game: 2 win, 1 draw, 0 loss.
        let half = match a.cmp(&b) {
            Ordering::Greater => {
                t.wins += 1;
                2
            }
            Ordering::Equal => {
                t.draws += 1;
                1
            }
            Ordering::Less => {
                t.losses += 1;
                0
            }
        };
        for (bot, s) in [a, b].into_iter().enumerate() {
            t.score[bot] += s as i64;
            t.score_sq[bot] += (s as i64 * s as i64) as u64;
        }
        for seat in 0..2 {
            let bot = o.seat_bot[seat];
            t.bingos[bot] += o.bingos[seat] as u64;
            t.turns[bot] += o.turns[seat] as u64;
            t.micros[bot] += o.micros[seat];
        }
        match o.scores[0].cmp(&o.scores[1]) {
            Ordering::Greater => t.first_wins += 1,
            Ordering::Equal => t.first_draws += 1,
            Ordering::Less => {}
        }
        if self.paired {
            match self.pending.remove(&(o.id / 2)) {
                Some(other) => t.pair_points[(other + half) as usize] += 1,
                None => {
                    self.pending.insert(o.id / 2, half);
                }
            }
        }
    }

    /// The tally so far (legs still waiting for their pair count as games only).
    pub fn tally(&self) -> MatchTally {
        self.tally
    }
}

impl MatchTally {
    /// Tally finished paired games; both legs of every pair must be among them. Bot 0 is the
    /// first bot.
    pub fn from_outcomes(games: &[Outcome]) -> MatchTally {
        Self::from_games(games, true)
    }

    /// Tally finished games, paired (as [`MatchTally::from_outcomes`]) or each on a deal of
    /// its own.
    pub fn from_games(games: &[Outcome], paired: bool) -> MatchTally {
        let mut t = Tallier::new(paired);
        games.iter().for_each(|o| t.add(o));
        t.tally()
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
            self.score_sq[b] += o.score_sq[b];
            self.bingos[b] += o.bingos[b];
            self.turns[b] += o.turns[b];
            self.micros[b] += o.micros[b];
        }
        self.first_wins += o.first_wins;
        self.first_draws += o.first_draws;
    }

    /// Whether the counts agree with each other (a check on uploads): every game in a pair
    /// when `paired`, in none when not.
    pub fn is_consistent(&self, paired: bool) -> bool {
        // Checked: an upload's counts are a stranger's, and may be made to wrap.
        let sum = |xs: &[u64]| xs.iter().try_fold(0u64, |a, &x| a.checked_add(x));
        let pairs = sum(&self.pair_points);
        sum(&[self.wins, self.draws, self.losses]) == Some(self.games)
            && (if paired { pairs.and_then(|p| p.checked_mul(2)) == Some(self.games) } else { pairs == Some(0) })
            && sum(&[self.first_wins, self.first_draws]).is_some_and(|f| f <= self.games)
    }

    pub fn pairs(&self) -> u64 {
        self.pair_points.iter().sum()
    }

    /// What these games can say about which bot is stronger; see [`Evidence`].
    pub fn evidence(&self) -> Evidence {
        let n = self.pairs();
        if self.games == 0 {
            return Evidence::Nothing;
        }
        if n == 0 {
            return Evidence::Varied;
        }
        if self.pair_points[2] == n && self.score[0] == self.score[1] && self.bingos[0] == self.bingos[1] {
            return Evidence::Identical;
        }
        if self.pair_points.contains(&n) { Evidence::Uniform } else { Evidence::Varied }
    }

    /// Whether the bots played alike on so many deals ([`ALIKE_PAIRS`]) that playing on could
    /// not tell them apart: by the rule of three, bots that agreed on all `n` deals differ on at
    /// most `3 / n` of deals (95%), which moves a win rate by at most half that.
    pub fn alike_long_enough(&self) -> bool {
        self.evidence() == Evidence::Identical && self.pairs() >= ALIKE_PAIRS
    }

    /// The first bot's score rate: wins plus half the draws, over games.
    pub fn win_rate(&self) -> Option<f64> {
        (self.games > 0).then(|| (self.wins as f64 + 0.5 * self.draws as f64) / self.games as f64)
    }

    /// 95% interval for the first bot's win rate; never a single point.
    ///
    /// The unit is the pair, because the two legs of a deal are correlated (paired deals exist
    /// to make them so) and games are not independent trials. Below [`SMALL_PAIRS`] pairs it
    /// is Wilson's interval over pairs: a pair's score lies in [0, 1], so its variance is at
    /// most a coin's of the same mean and Wilson's bound is conservative. From there on it is
    /// the normal interval with the pairs' observed variance, estimated with one pseudo-pair
    /// lost and one won added (as Agresti and Coull add pseudo-trials): all-alike pairs give a
    /// narrow interval, not none. Unpaired games get Wilson's interval over games.
    ///
    /// Degenerate data gets no normal interval: none at all when the bots played alike
    /// ([`Evidence::Identical`]), and Wilson's over pairs however many there are when every
    /// pair had the same result ([`Evidence::Uniform`]), whose spread nobody has observed.
    pub fn interval(&self) -> Option<(f64, f64)> {
        let n = self.pairs();
        match self.evidence() {
            Evidence::Nothing | Evidence::Identical => return None,
            _ if n == 0 => return Some(wilson(self.win_rate()?, self.games as f64, Z95)),
            Evidence::Uniform => return Some(wilson(self.pair_moments().0, n as f64, Z95)),
            Evidence::Varied => {}
        }
        let (mean, var) = self.pair_moments();
        if n < SMALL_PAIRS {
            return Some(wilson(mean, n as f64, Z95));
        }
        let h = Z95 * (var / n as f64).sqrt();
        Some(((mean - h).max(0.0), (mean + h).min(1.0)))
    }

    /// How many standard errors this tally's mean pair score lies above `rest`'s: Welch's z
    /// over pairs, each side's variance padded as in [`MatchTally::interval`]. The check of a
    /// worker whose games cannot be replicated (time-budgeted bots) against everyone else's in
    /// its cell; nothing below [`OUTLIER_MIN_PAIRS`] pairs on either side. Unpaired games (a
    /// selfplay cell's) are compared game by game, from twice as many games on each side.
    pub fn outlier_z(&self, rest: &MatchTally) -> Option<f64> {
        let (paired, n1, n2) = match (self.pairs(), rest.pairs()) {
            (0, 0) => (false, self.games, rest.games),
            (a, b) => (true, a, b),
        };
        let least = if paired { OUTLIER_MIN_PAIRS } else { 2 * OUTLIER_MIN_PAIRS };
        if n1 < least || n2 < least {
            return None;
        }
        let moments = |t: &MatchTally| if paired { t.pair_moments() } else { t.game_moments() };
        let ((m1, v1), (m2, v2)) = (moments(self), moments(rest));
        Some((m1 - m2) / (v1 / n1 as f64 + v2 / n2 as f64).sqrt())
    }

    /// Mean of the per-game score (0, 0.5, 1) and its variance, padded as the pairs' are.
    fn game_moments(&self) -> (f64, f64) {
        let mut w = Welford::default();
        let mut padded = Welford::default();
        for (score, count) in [(0.0, self.losses), (0.5, self.draws), (1.0, self.wins)] {
            w.add_n(score, count);
            padded.add_n(score, count);
        }
        padded.add(0.0);
        padded.add(1.0);
        (w.mean(), padded.variance().expect("two pseudo-games"))
    }

    /// Mean of the per-pair score (0, 0.25, ..., 1), and its variance estimated with a lost
    /// and a won pseudo-pair added (so never zero). Needs at least one pair.
    fn pair_moments(&self) -> (f64, f64) {
        let mut w = Welford::default();
        let mut padded = Welford::default();
        for (i, &c) in self.pair_points.iter().enumerate() {
            w.add_n(i as f64 / 4.0, c);
            padded.add_n(i as f64 / 4.0, c);
        }
        padded.add(0.0);
        padded.add(1.0);
        (w.mean(), padded.variance().expect("two pseudo-pairs"))
    }

    /// Mean final score of bot `b` (0: first bot).
    pub fn mean_score(&self, b: usize) -> f64 {
        self.score[b] as f64 / self.games.max(1) as f64
    }

    /// Standard deviation of bot `b`'s final scores.
    pub fn score_sd(&self, b: usize) -> f64 {
        let n = self.games as f64;
        if n < 2.0 {
            return 0.0;
        }
        let m = self.score[b] as f64 / n;
        ((self.score_sq[b] as f64 - n * m * m).max(0.0) / (n - 1.0)).sqrt()
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

    /// The first bot's win rate and interval as every program prints it: `56.3% (95%: 54.1% – 58.4%)`.
    /// Degenerate games say so instead (`bots are identical on these deals`).
    pub fn rate_text(&self) -> String {
        if let Some(c) = self.evidence().caveat() {
            return c.into();
        }
        match (self.win_rate(), self.interval()) {
            (Some(p), Some((lo, hi))) => format!("{} (95%: {} – {})", pct(p), pct(lo), pct(hi)),
            _ => "–".into(),
        }
    }

    /// The summary block researchers know from other engines' autoplay.
    pub fn report(&self, names: [&str; 2]) -> String {
        let mut s = String::new();
        let n = self.games.max(1) as f64;
        let _ = writeln!(s, "Games played: {}", self.games);
        let _ = writeln!(s, "{} wins: {}  draws: {}  losses: {}", names[0], self.wins, self.draws, self.losses);
        let _ = writeln!(s, "{} win rate: {}", names[0], self.rate_text());
        for (b, name) in names.iter().enumerate() {
            let _ = writeln!(s, "{name} Mean Score: {:.2}  Stdev: {:.2}", self.mean_score(b), self.score_sd(b));
        }
        for (b, name) in names.iter().enumerate() {
            let _ = writeln!(s, "{name} Mean Bingos: {:.3}", self.mean_bingos(b));
        }
        for (b, name) in names.iter().enumerate() {
            let _ = writeln!(s, "{name} Mean Points Per Turn: {:.2}", self.points_per_turn(b));
        }
        for (b, name) in names.iter().enumerate() {
            let _ = writeln!(s, "{name} Mean Time Per Move: {:.2} ms", self.ms_per_move(b));
        }
        let first = self.first_wins as f64 + 0.5 * self.first_draws as f64;
        let _ = writeln!(s, "Player who went first wins: {first} ({:.3}%)", 100.0 * first / n);
        let _ = writeln!(s, "{} Mean Spread: {:+.2}", names[0], (self.score[0] - self.score[1]) as f64 / n);
        if self.pairs() > 0 {
            let [lost_both, lost_and_drew, split, won_and_drew, won_both] = self.pair_points;
            let _ = writeln!(
                s,
                "Pairs: {}  {} won both: {won_both}  split: {split}  lost both: {lost_both}  with a draw: {}",
                self.pairs(),
                names[0],
                lost_and_drew + won_and_drew
            );
        }
        s
    }
}

/// Deals a cell's bots must play alike on before it finishes early
/// ([`MatchTally::alike_long_enough`]): 200, so that they differ on at most 1.5% of deals.
pub const ALIKE_PAIRS: u64 = 200;

/// What a tally can say about which of its bots is stronger.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Evidence {
    /// No games yet.
    Nothing,
    /// Every deal was split with the seats swapped and the bots scored the same in total: they
    /// played alike (identical bots, or bots that never differ on these deals). Neither an
    /// interval nor an SPRT means anything here.
    Identical,
    /// Every pair had the same result (all won, all split, all lost) but the bots did not play
    /// alike: the pairs' spread is unobserved, so intervals and SPRTs assume the widest.
    Uniform,
    /// Pairs of different results (or unpaired games): the usual statistics.
    Varied,
}

impl Evidence {
    /// What the dashboards and the CLI say instead of a win rate, when they should.
    pub fn caveat(self) -> Option<&'static str> {
        match self {
            Evidence::Nothing => Some("no information yet"),
            Evidence::Identical => Some("bots are identical on these deals"),
            Evidence::Uniform | Evidence::Varied => None,
        }
    }
}

/// A rate as a percentage with one decimal, as the dashboards and the CLI show it.
pub fn pct(x: f64) -> String {
    format!("{:.1}%", 100.0 * x)
}

/// A sequential probability ratio test on the first bot's per-pair score: H0 "its win rate is
/// `p0`" against H1 "it is `p1`", with error rates `alpha` (accepting H1 wrongly) and `beta`.
/// Uses the normal (generalised) approximation of the log-likelihood ratio over pair results.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
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
/// Fewest pairs a batch of an SPRT cell is cut to near a bound ([`Sprt::batch_pairs`]).
pub const SPRT_MIN_BATCH: u64 = 8;

impl Sprt {
    /// Lower and upper log-likelihood-ratio bounds.
    pub fn bounds(&self) -> (f64, f64) {
        ((self.beta / (1.0 - self.alpha)).ln(), ((1.0 - self.beta) / self.alpha).ln())
    }

    /// The log-likelihood ratio of H1 to H0; none without pairs, or when the bots played alike.
    /// Where every pair had the same result, the variance is the largest a pair score of the
    /// hypotheses' mean could have, not the (zero) one observed.
    pub fn llr(&self, t: &MatchTally) -> Option<f64> {
        let n = t.pairs();
        let (mean, var) = match t.evidence() {
            _ if n == 0 => return None,
            Evidence::Nothing | Evidence::Identical => return None,
            Evidence::Uniform => {
                let (mean, _) = t.pair_moments();
                let mid = 0.5 * (self.p0 + self.p1);
                (mean, (mid * (1.0 - mid)).max(mean * (1.0 - mean)))
            }
            Evidence::Varied => t.pair_moments(),
        };
        Some(n as f64 * (self.p1 - self.p0) * (2.0 * mean - self.p0 - self.p1) / (2.0 * var))
    }

    /// The most pairs a cell's next batch should take, so that the test looks again before it
    /// could pass a bound by far: half the pairs the LLR's drift so far would take to reach the
    /// nearer bound, and at least [`SPRT_MIN_BATCH`] (fishtest shrinks its batches near a
    /// bound the same way). None before [`SPRT_MIN_PAIRS`] pairs (the cell's probes are small
    /// then) or while the LLR has not moved.
    pub fn batch_pairs(&self, t: &MatchTally) -> Option<u64> {
        let n = t.pairs();
        if n < SPRT_MIN_PAIRS {
            return None;
        }
        let llr = self.llr(t)?;
        let drift = llr.abs() / n as f64;
        if drift < 1e-9 {
            return None;
        }
        let (lo, hi) = self.bounds();
        let room = (hi - llr).min(llr - lo).max(0.0);
        Some(((room / drift / 2.0).ceil() as u64).max(SPRT_MIN_BATCH))
    }

    pub fn decide(&self, t: &MatchTally) -> SprtDecision {
        let Some(llr) = self.llr(t) else { return SprtDecision::Continue { llr: 0.0 } };
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

    #[test]
    fn outliers_are_many_standard_errors_from_the_rest() {
        // The rest: 100 pairs around 60%; a worker whose every pair is won, and one like them.
        let rest = tally([5, 15, 30, 30, 20]);
        let liar = tally([0, 0, 0, 0, 40]);
        let like = tally([2, 6, 12, 12, 8]);
        let z = liar.outlier_z(&rest).unwrap();
        assert!(z > OUTLIER_Z, "{z}");
        let z = like.outlier_z(&rest).unwrap();
        assert!(z.abs() < 1.0, "{z}");
        // Losing everything is as far out the other way.
        assert!(tally([40, 0, 0, 0, 0]).outlier_z(&rest).unwrap() < -OUTLIER_Z);
        // Too few pairs on either side: no verdict.
        assert_eq!(tally([0, 0, 0, 0, 29]).outlier_z(&rest), None);
        assert_eq!(liar.outlier_z(&tally([0, 0, 29, 0, 0])), None);
        // Unpaired games (selfplay) are weighed game by game: 200 at 55%, 80 all won.
        let games = |wins, draws, losses| MatchTally {
            games: wins + draws + losses,
            wins,
            draws,
            losses,
            ..Default::default()
        };
        let rest = games(108, 4, 88);
        assert!(games(80, 0, 0).outlier_z(&rest).unwrap() > OUTLIER_Z);
        assert!(games(33, 2, 25).outlier_z(&rest).unwrap().abs() < 1.0);
        assert_eq!(games(59, 0, 0).outlier_z(&rest), None, "fewer than 60 games");
    }

    #[test]
    fn sprt_batches_shrink_as_the_llr_nears_a_bound() {
        let s = Sprt { p0: 0.5, p1: 0.55, alpha: 0.05, beta: 0.05 };
        // 60, then 100 pairs at ~56%: the LLR climbs towards the upper bound (2.94).
        let far = tally([6, 8, 21, 15, 10]);
        let near = tally([10, 14, 34, 24, 18]);
        let (l_far, l_near) = (s.llr(&far).unwrap(), s.llr(&near).unwrap());
        assert!(0.0 < l_far && l_far < l_near && l_near < s.bounds().1, "{l_far} {l_near}");
        let (b_far, b_near) = (s.batch_pairs(&far).unwrap(), s.batch_pairs(&near).unwrap());
        assert!(b_near < b_far, "{b_far} {b_near}");
        // Half the way to the bound at the drift so far: the next look comes before it.
        let drift = l_near / near.pairs() as f64;
        assert!(l_near + drift * b_near as f64 <= s.bounds().1 + drift * SPRT_MIN_BATCH as f64);
        assert_eq!(s.batch_pairs(&tally([2, 2, 6, 4, 5])), None, "fewer than 20 pairs");
        assert!(s.batch_pairs(&tally([0, 0, 0, 0, 60])).unwrap() >= SPRT_MIN_BATCH);
    }

    #[test]
    fn bots_alike_on_enough_deals_are_done() {
        let alike = |pairs| MatchTally { score: [0, 0], ..tally([0, 0, pairs, 0, 0]) };
        assert_eq!(alike(ALIKE_PAIRS - 1).evidence(), Evidence::Identical);
        assert!(!alike(ALIKE_PAIRS - 1).alike_long_enough());
        assert!(alike(ALIKE_PAIRS).alike_long_enough());
        // Every pair split, but the bots' scores differ: they did not play alike.
        assert!(!tally([0, 0, ALIKE_PAIRS, 0, 0]).alike_long_enough());
        assert!(!tally([1, 0, ALIKE_PAIRS, 0, 0]).alike_long_enough());
    }

    /// Pairs of two bots that did not play alike (their score totals differ).
    fn tally(pair_points: [u64; 5]) -> MatchTally {
        let mut t = MatchTally { pair_points, score: [1, 0], ..Default::default() };
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
        use engine::record::Outcome;
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
        assert!(t.is_consistent(true) && !t.is_consistent(false));
        // Each deal once: the same games, no pairs.
        let u = MatchTally::from_games(&[g(0, [0, 1], [400, 300]), g(1, [1, 0], [420, 300])], false);
        assert_eq!((u.games, u.wins, u.losses, u.pair_points), (2, 1, 1, [0; 5]));
        assert!(u.is_consistent(false) && !u.is_consistent(true));
    }

    #[test]
    fn merge_is_a_sum_and_stays_consistent() {
        let a = tally([1, 2, 3, 4, 5]);
        let b = tally([5, 0, 1, 0, 2]);
        let mut m = a;
        m.merge(&b);
        let mut sum = tally([6, 2, 4, 4, 7]);
        sum.score = [2, 0];
        assert_eq!(m, sum);
        assert!(m.is_consistent(true));
        let mut bad = m;
        bad.wins += 1;
        assert!(!bad.is_consistent(true));
        // Counts made to wrap are inconsistent, not a panic nor a match.
        let mut wrapped = m;
        wrapped.wins = u64::MAX;
        wrapped.draws = m.games - m.losses + 1;
        assert!(!wrapped.is_consistent(true));
        wrapped.pair_points[0] = u64::MAX;
        assert!(!wrapped.is_consistent(true) && !wrapped.is_consistent(false));
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
        let (mean, var) = small.pair_moments();
        assert!((mean - (0.0 * 10.0 + 0.5 * 20.0 + 30.0) / 60.0).abs() < 1e-12);
        assert!(var > 0.0);
    }

    #[test]
    fn interval_is_never_a_point() {
        // Five won-both pairs: not [1, 1].
        for pairs in [5, 29, 30, 40, 1000] {
            let (lo, hi) = tally([0, 0, 0, 0, pairs]).interval().unwrap();
            assert!(lo < 1.0 && hi > 1.0 - 1e-9, "{pairs} won-both pairs: [{lo}, {hi}]");
            let (lo, hi) = tally([0, 0, pairs, 0, 0]).interval().unwrap();
            assert!(lo < 0.5 && hi > 0.5, "{pairs} split pairs: [{lo}, {hi}]");
        }
        // Unpaired games: Wilson over games.
        let t = MatchTally { games: 10, wins: 10, ..Default::default() };
        let (lo, hi) = t.interval().unwrap();
        assert!(lo > 0.6 && lo < 1.0 && hi == 1.0, "[{lo}, {hi}]");
    }

    #[test]
    fn tallier_pairs_legs_in_any_order_and_only_when_paired() {
        use engine::record::Outcome;
        let g = |id, seat_bot, scores| Outcome { id, seat_bot, scores, bingos: [0, 0], turns: [1, 1], micros: [0, 0] };
        let games =
            [g(3, [1, 0], [300, 400]), g(0, [0, 1], [400, 300]), g(2, [0, 1], [350, 350]), g(1, [1, 0], [1, 2])];
        let mut paired = Tallier::new(true);
        games.iter().for_each(|o| paired.add(o));
        // Pair 0: won both (4 half-points); pair 1: a draw and a win (3).
        assert_eq!(paired.tally().pair_points, [0, 0, 0, 1, 1]);
        assert_eq!(paired.tally(), MatchTally::from_outcomes(&games));
        let mut unpaired = Tallier::new(false);
        games.iter().for_each(|o| unpaired.add(o));
        assert_eq!((unpaired.tally().pairs(), unpaired.tally().games, unpaired.tally().wins), (0, 4, 3));
        assert_eq!(paired.tally().score_sq[0], 400 * 400 * 2 + 350 * 350 + 4);
        assert!(
            (paired.tally().score_sd(0) - {
                let xs = [400.0f64, 400.0, 350.0, 2.0];
                let m = xs.iter().sum::<f64>() / 4.0;
                (xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / 3.0).sqrt()
            })
            .abs()
                < 1e-9
        );
    }

    /// Two identical bots: every deal's two legs are the same game with the seats swapped.
    fn identical(pairs: u64) -> MatchTally {
        let mut t = tally([0, 0, pairs, 0, 0]);
        t.score = [400 * pairs as i64; 2];
        t.bingos = [pairs; 2];
        t
    }

    #[test]
    fn degenerate_tallies_get_no_normal_statistics() {
        let s = Sprt { p0: 0.45, p1: 0.5, alpha: 0.05, beta: 0.05 };
        assert_eq!(MatchTally::default().evidence(), Evidence::Nothing);
        assert_eq!(MatchTally::default().interval(), None);
        // Identical bots: no interval and no SPRT, however many pairs.
        for pairs in [25, 500] {
            let t = identical(pairs);
            assert_eq!(t.evidence(), Evidence::Identical);
            assert_eq!(t.evidence().caveat(), Some("bots are identical on these deals"));
            assert_eq!((t.interval(), s.llr(&t)), (None, None));
            assert!(matches!(s.decide(&t), SprtDecision::Continue { .. }));
        }
        // Split pairs of bots that did not play alike: Wilson over pairs, never a point.
        let mut split = identical(400);
        split.score[0] += 37;
        assert_eq!(split.evidence(), Evidence::Uniform);
        let (lo, hi) = split.interval().unwrap();
        assert!(lo < 0.46 && hi > 0.54, "400 split pairs: [{lo}, {hi}], not 50.0% +- 0.0");
        // Its LLR is finite and modest, not the thousands a near-zero variance would give.
        let llr = s.llr(&split).unwrap();
        assert!(llr > 0.0 && llr < 10.0, "{llr}");
        // 40 won-both pairs is strong evidence, at a believable LLR (not the thousands a
        // near-zero variance would give).
        let won = tally([0, 0, 0, 0, 40]);
        assert_eq!(won.evidence(), Evidence::Uniform);
        let llr = s.llr(&won).unwrap();
        assert!(llr > s.bounds().1 && llr < 100.0, "{llr}");
        assert_eq!(tally([1, 0, 0, 0, 40]).evidence(), Evidence::Varied);
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

    /// Share of `runs` simulated tallies of `pairs` pairs whose interval holds the true rate.
    fn coverage(p: f64, pairs: u64, runs: usize, seed: u64) -> f64 {
        let mut rng = engine::rng::Rng::new(seed);
        // The true rate of `simulate`: half the deals at p + 0.15, half at p - 0.15, each leg a
        // draw 1% of the time.
        let q = |x: f64| 0.01 * 0.5 + 0.99 * x.clamp(0.0, 1.0);
        let truth = 0.5 * (q(p + 0.15) + q(p - 0.15));
        let covered = (0..runs)
            .filter(|_| {
                let (lo, hi) = simulate(p, pairs, &mut rng).interval().unwrap();
                lo <= truth && truth <= hi
            })
            .count();
        covered as f64 / runs as f64
    }

    #[test]
    fn interval_covers_the_true_rate_95_percent_of_the_time() {
        // Large counts: the normal interval over pairs is close to exact.
        for (p, pairs) in [(0.56, 200), (0.56, 1000), (0.75, 500)] {
            let rate = coverage(p, pairs, 2000, 7);
            assert!((0.93..=0.97).contains(&rate), "{pairs} pairs at {p}: coverage {rate}");
        }
        // Small counts, and rates near the edge, where a normal interval would undercover:
        // Wilson's over pairs covers at least 95%.
        for (p, pairs) in [(0.56, 3), (0.56, 10), (0.8, 10), (0.84, 25), (0.5, 29)] {
            let rate = coverage(p, pairs, 4000, 11);
            assert!(rate >= 0.94, "{pairs} pairs at {p}: coverage {rate}");
        }
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
