//! CMA-ES (covariance matrix adaptation evolution strategy; Hansen, "The CMA Evolution
//! Strategy: A Tutorial", 2016), written as ask and tell over a state that serialises, so that
//! a tuning run's coordinator keeps it in Postgres between iterations and resumes exactly.
//!
//! Each iteration samples `lambda` points `x = m + sigma * A z` (`z` standard normal from the
//! iteration's seed, `A` the Cholesky factor of `C`), the caller scores them (higher is
//! better), and `tell` moves the mean to the weighted best half, adapts `C` by the rank-one and
//! rank-mu updates and `sigma` by the length of the evolution path. The sampling uses the
//! Cholesky factor instead of the tutorial's eigendecomposition: the samples have the same
//! distribution, and `A^-1 y` stands in for `C^-1/2 y` in the step-size path (same length
//! distribution under random selection), which is all that path is used for.
//!
//! The caller works in coordinates where each parameter's range is `[0, 1]`; points outside are
//! repaired to the box by the caller and told as played.
//!
//! Why not a crate: the Rust ones (`cmaes`, `haru_cmaes`, `basin`) keep their state in nalgebra
//! or ndarray types without serde and draw from `rand`'s thread RNG, so a run could neither be
//! stored between batches nor replayed from its seed; and n is at most 20 here, which needs no
//! linear-algebra library. This is a hundred lines of the tutorial's equations.

use serde::{Deserialize, Serialize};

/// The search's state between iterations.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Cma {
    pub mean: Vec<f64>,
    pub sigma: f64,
    /// Covariance, row by row.
    pub cov: Vec<Vec<f64>>,
    /// Evolution paths of the step size and of the covariance.
    pub path_sigma: Vec<f64>,
    pub path_c: Vec<f64>,
    /// Iterations told so far.
    pub told: u32,
    pub lambda: u32,
}

/// The default population: `4 + floor(3 ln n)`.
pub fn default_lambda(n: usize) -> u32 {
    4 + (3.0 * (n as f64).ln()).floor() as u32
}

/// The strategy's constants for `n` dimensions and `lambda` points (the tutorial's defaults).
struct Constants {
    mu: usize,
    weights: Vec<f64>,
    mu_eff: f64,
    c_sigma: f64,
    d_sigma: f64,
    c_c: f64,
    c_1: f64,
    c_mu: f64,
    chi_n: f64,
}

impl Constants {
    fn new(n: usize, lambda: u32) -> Self {
        let nf = n as f64;
        let mu = (lambda as usize / 2).max(1);
        let raw: Vec<f64> = (1..=mu).map(|i| (mu as f64 + 0.5).ln() - (i as f64).ln()).collect();
        let sum: f64 = raw.iter().sum();
        let weights: Vec<f64> = raw.iter().map(|w| w / sum).collect();
        let mu_eff = 1.0 / weights.iter().map(|w| w * w).sum::<f64>();
        let c_sigma = (mu_eff + 2.0) / (nf + mu_eff + 5.0);
        let d_sigma = 1.0 + 2.0 * (((mu_eff - 1.0) / (nf + 1.0)).sqrt() - 1.0).max(0.0) + c_sigma;
        let c_c = (4.0 + mu_eff / nf) / (nf + 4.0 + 2.0 * mu_eff / nf);
        let c_1 = 2.0 / ((nf + 1.3).powi(2) + mu_eff);
        let c_mu = (1.0 - c_1).min(2.0 * (mu_eff - 2.0 + 1.0 / mu_eff) / ((nf + 2.0).powi(2) + mu_eff));
        let chi_n = nf.sqrt() * (1.0 - 1.0 / (4.0 * nf) + 1.0 / (21.0 * nf * nf));
        Constants { mu, weights, mu_eff, c_sigma, d_sigma, c_c, c_1, c_mu, chi_n }
    }
}

impl Cma {
    /// A search from `mean` with each coordinate's spread `spread[i]` (`sigma` 1, `C` diagonal).
    pub fn new(mean: Vec<f64>, spread: &[f64], lambda: u32) -> Self {
        let n = mean.len();
        let cov = (0..n).map(|i| (0..n).map(|j| if i == j { spread[i] * spread[i] } else { 0.0 }).collect()).collect();
        Cma { mean, sigma: 1.0, cov, path_sigma: vec![0.0; n], path_c: vec![0.0; n], told: 0, lambda }
    }

    /// Each coordinate's standard deviation now, `sigma * sqrt(C_ii)`.
    pub fn spread(&self) -> Vec<f64> {
        (0..self.mean.len()).map(|i| self.sigma * self.cov[i][i].sqrt()).collect()
    }

    /// The iteration's points, from `seed`: the same seed gives the same points.
    pub fn ask(&self, seed: u64) -> Vec<Vec<f64>> {
        let a = cholesky(&self.cov);
        let mut rng = engine::rng::Rng::new(seed);
        (0..self.lambda)
            .map(|_| {
                let z: Vec<f64> = (0..self.mean.len()).map(|_| normal(&mut rng)).collect();
                (0..self.mean.len())
                    .map(|i| self.mean[i] + self.sigma * (0..=i).map(|j| a[i][j] * z[j]).sum::<f64>())
                    .collect()
            })
            .collect()
    }

    /// The state after the iteration that played `points` (as played: repaired into the box)
    /// and scored `scores`, higher better.
    pub fn tell(&self, points: &[Vec<f64>], scores: &[f64]) -> Cma {
        let n = self.mean.len();
        let k = Constants::new(n, self.lambda);
        let mut order: Vec<usize> = (0..points.len()).collect();
        // Best first; ties keep the sampling order, so the step is a function of the scores.
        order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]).then(a.cmp(&b)));
        let steps: Vec<Vec<f64>> = order
            .iter()
            .take(k.mu)
            .map(|&i| (0..n).map(|d| (points[i][d] - self.mean[d]) / self.sigma).collect())
            .collect();
        let y_w: Vec<f64> = (0..n).map(|d| steps.iter().zip(&k.weights).map(|(y, w)| w * y[d]).sum()).collect();
        let mean: Vec<f64> = (0..n).map(|d| self.mean[d] + self.sigma * y_w[d]).collect();
        let a = cholesky(&self.cov);
        let z_w = solve_lower(&a, &y_w);
        let ps_gain = (k.c_sigma * (2.0 - k.c_sigma) * k.mu_eff).sqrt();
        let path_sigma: Vec<f64> = (0..n).map(|d| (1.0 - k.c_sigma) * self.path_sigma[d] + ps_gain * z_w[d]).collect();
        let ps_norm = path_sigma.iter().map(|x| x * x).sum::<f64>().sqrt();
        let told = self.told + 1;
        let h_sigma =
            ps_norm / (1.0 - (1.0 - k.c_sigma).powi(2 * told as i32)).sqrt() < (1.4 + 2.0 / (n as f64 + 1.0)) * k.chi_n;
        let h = if h_sigma { 1.0 } else { 0.0 };
        let pc_gain = (k.c_c * (2.0 - k.c_c) * k.mu_eff).sqrt();
        let path_c: Vec<f64> = (0..n).map(|d| (1.0 - k.c_c) * self.path_c[d] + h * pc_gain * y_w[d]).collect();
        let keep = 1.0 - k.c_1 - k.c_mu + (1.0 - h) * k.c_1 * k.c_c * (2.0 - k.c_c);
        let cov = (0..n)
            .map(|i| {
                (0..n)
                    .map(|j| {
                        let rank_mu: f64 = steps.iter().zip(&k.weights).map(|(y, w)| w * y[i] * y[j]).sum();
                        keep * self.cov[i][j] + k.c_1 * path_c[i] * path_c[j] + k.c_mu * rank_mu
                    })
                    .collect()
            })
            .collect();
        let sigma = self.sigma * ((k.c_sigma / k.d_sigma) * (ps_norm / k.chi_n - 1.0)).exp();
        Cma { mean, sigma, cov, path_sigma, path_c, told, lambda: self.lambda }
    }
}

/// A standard normal draw (Box-Muller).
fn normal(rng: &mut engine::rng::Rng) -> f64 {
    let u = 1.0 - rng.unit(); // in (0, 1]: its log is finite
    let v = rng.unit();
    (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
}

/// The lower-triangular `A` with `A A^T = c`; a covariance that lost definiteness to rounding
/// is factored with a little more on its diagonal.
fn cholesky(c: &[Vec<f64>]) -> Vec<Vec<f64>> {
    let n = c.len();
    let mut jitter = 0.0;
    loop {
        let mut a = vec![vec![0.0; n]; n];
        let mut ok = true;
        for i in 0..n {
            for j in 0..=i {
                let s: f64 = (0..j).map(|k| a[i][k] * a[j][k]).sum();
                if i == j {
                    let d = c[i][i] + jitter - s;
                    if d <= 0.0 || !d.is_finite() {
                        ok = false;
                        break;
                    }
                    a[i][i] = d.sqrt();
                } else {
                    a[i][j] = (c[i][j] - s) / a[j][j];
                }
            }
            if !ok {
                break;
            }
        }
        if ok {
            return a;
        }
        jitter = if jitter == 0.0 { 1e-12 } else { jitter * 10.0 };
    }
}

/// `x` with `a x = y`, `a` lower triangular.
fn solve_lower(a: &[Vec<f64>], y: &[f64]) -> Vec<f64> {
    let mut x = vec![0.0; y.len()];
    for i in 0..y.len() {
        x[i] = (y[i] - (0..i).map(|j| a[i][j] * x[j]).sum::<f64>()) / a[i][i];
    }
    x
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Scores of a noisy bowl peaking at `best`, as a win rate against a reference would be.
    fn score(x: &[f64], best: &[f64], noise: f64, rng: &mut engine::rng::Rng) -> f64 {
        -x.iter().zip(best).map(|(a, b)| (a - b).powi(2)).sum::<f64>() + noise * normal(rng)
    }

    #[test]
    fn it_finds_the_top_of_a_noisy_bowl_from_a_bad_start_and_replays_exactly() {
        let best = [0.7, 0.3, 0.55];
        let mut rng = engine::rng::Rng::new(1);
        let run = |rng: &mut engine::rng::Rng| {
            let mut cma = Cma::new(vec![0.0, 1.0, 0.0], &[0.3, 0.3, 0.3], default_lambda(3));
            for k in 0..60 {
                let points = cma.ask(1000 + k);
                let scores: Vec<f64> = points.iter().map(|p| score(p, &best, 0.002, rng)).collect();
                cma = cma.tell(&points, &scores);
            }
            cma
        };
        let end = run(&mut rng);
        for (m, b) in end.mean.iter().zip(best) {
            assert!((m - b).abs() < 0.05, "{:?}", end.mean);
        }
        assert!(end.spread().iter().all(|s| *s < 0.3), "the search narrowed: {:?}", end.spread());
        assert_eq!(run(&mut engine::rng::Rng::new(1)), end, "the same seeds, the same run");
    }

    #[test]
    fn samples_follow_the_covariance_and_factoring_survives_rounding() {
        let mut cma = Cma::new(vec![0.0, 0.0], &[1.0, 1.0], 4000);
        cma.cov = vec![vec![4.0, 1.2], vec![1.2, 1.0]];
        let points = cma.ask(7);
        let n = points.len() as f64;
        let var = |i: usize| points.iter().map(|p| p[i] * p[i]).sum::<f64>() / n;
        let cov01 = points.iter().map(|p| p[0] * p[1]).sum::<f64>() / n;
        assert!((var(0) - 4.0).abs() < 0.3 && (var(1) - 1.0).abs() < 0.08 && (cov01 - 1.2).abs() < 0.12);
        let a = cholesky(&[vec![1.0, 1.0], vec![1.0, 1.0]]);
        assert!(a.iter().flatten().all(|x| x.is_finite()));
        assert_eq!(solve_lower(&cholesky(&cma.cov), &[2.0, 0.6]).len(), 2);
        assert_eq!(default_lambda(1), 4);
        assert_eq!(default_lambda(10), 10);
    }
}
