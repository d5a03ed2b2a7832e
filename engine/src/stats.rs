//! The numbers under every interval lexhive prints: one streaming mean and variance
//! ([`Welford`]), one normal quantile per confidence level, and Wilson's score interval.
//!
//! The simulator's candidates and the match tallies (`shared::stats`) both use these, so a
//! 95% interval means the same thing wherever it is shown.
//!
//! # Design notes
//!
//! the numbers under every interval: `Welford` (streaming mean and variance), the z quantiles,
//! Wilson's interval. The match tally and its interval are `shared::stats`.

/// z for a two-sided 95% interval.
pub const Z95: f64 = 1.959_963_985;
/// z for a two-sided 98% interval.
pub const Z98: f64 = 2.326_347_874;
/// z for a two-sided 99% interval.
pub const Z99: f64 = 2.575_829_304;

/// Running mean and variance (Welford's update): numerically stable however many values come
/// in, and deterministic for a given order of values.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Welford {
    n: u64,
    mean: f64,
    /// Sum of squared differences from the current mean.
    m2: f64,
}

impl Welford {
    pub fn add(&mut self, x: f64) {
        self.add_n(x, 1);
    }

    /// Add `count` copies of `x` at once (for values kept as counts, such as pair results).
    pub fn add_n(&mut self, x: f64, count: u64) {
        if count == 0 {
            return;
        }
        let (n0, c) = (self.n as f64, count as f64);
        let n = n0 + c;
        let delta = x - self.mean;
        self.mean += delta * c / n;
        self.m2 += delta * delta * n0 * c / n;
        self.n += count;
    }

    pub fn count(&self) -> u64 {
        self.n
    }

    /// The mean (0 before any value).
    pub fn mean(&self) -> f64 {
        self.mean
    }

    /// Sample variance (n - 1 in the denominator); `None` below two values.
    pub fn variance(&self) -> Option<f64> {
        (self.n >= 2).then(|| self.m2 / (self.n - 1) as f64)
    }

    /// Standard error of the mean; infinite below two values, where it is unknown.
    pub fn stderr(&self) -> f64 {
        self.variance().map_or(f64::INFINITY, |v| (v / self.n as f64).sqrt())
    }
}

/// Wilson's score interval for a proportion `p` observed over `n` trials, at quantile `z`:
/// never empty, never outside [0, 1], and honest at small `n` and at `p` of 0 or 1, where the
/// normal interval collapses to a point.
pub fn wilson(p: f64, n: f64, z: f64) -> (f64, f64) {
    let z2 = z * z;
    let centre = (p + z2 / (2.0 * n)) / (1.0 + z2 / n);
    let h = z / (1.0 + z2 / n) * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
    ((centre - h).max(0.0), (centre + h).min(1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn welford_matches_the_two_pass_formulas() {
        let xs = [3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0];
        let mut w = Welford::default();
        xs.iter().for_each(|&x| w.add(x));
        let mean = xs.iter().sum::<f64>() / 8.0;
        let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / 7.0;
        assert!((w.mean() - mean).abs() < 1e-12 && (w.variance().unwrap() - var).abs() < 1e-12);
        // Counts give the same as repeated values.
        let mut c = Welford::default();
        c.add_n(1.0, 3);
        c.add_n(0.0, 2);
        let mut r = Welford::default();
        [1.0, 1.0, 1.0, 0.0, 0.0].iter().for_each(|&x| r.add(x));
        assert!((c.mean() - r.mean()).abs() < 1e-12 && (c.variance().unwrap() - r.variance().unwrap()).abs() < 1e-12);
        assert_eq!(Welford::default().variance(), None);
        assert_eq!(Welford::default().stderr(), f64::INFINITY);
    }

    #[test]
    fn wilson_is_never_a_point() {
        let (lo, hi) = wilson(1.0, 5.0, Z95);
        assert!(lo > 0.5 && lo < 1.0 && hi == 1.0, "{lo} {hi}");
        let (lo, hi) = wilson(0.0, 5.0, Z95);
        assert!(lo == 0.0 && hi > 0.0 && hi < 0.5, "{lo} {hi}");
        let (lo, hi) = wilson(0.5, 1000.0, Z95);
        assert!((hi - lo - 2.0 * Z95 * (0.25f64 / 1000.0).sqrt()).abs() < 1e-3);
    }
}
