//! `tune`: a bot's parameters tuned on the volunteers by SPSA (simultaneous perturbation
//! stochastic approximation, the scheme fishtest tunes chess engines with). Iteration `k`
//! perturbs every parameter at once, `theta ± c_k * delta` (`delta` a seeded random sign per
//! parameter), and plays each of the two bots against a reference bot on the same paired deals;
//! the difference of their scores estimates the gradient, and the coordinator moves `theta` up
//! it by `a_k`, within the parameters' bounds. Gains follow Spall's schedules, as fishtest's do:
//! `c_k = c / (k + 1)^0.101`, `a_k = a / (A + k + 1)^0.602`, `A` a tenth of the iterations.
//!
//! Every cell is stored at submission: iteration `k` is cells `2k` (`theta + c_k delta` against
//! the reference) and `2k + 1` (`theta - c_k delta`), each `games` games; the cells of later
//! iterations wait for the update that gives their bots (`CellSpec::waits`).

use super::Kind;
use super::matches::{MatchJob, MatchSpec, volunteer_bot};
use crate::spec::{CellSpec, File, MAX_GAMES, MAX_GAMES_PER_CELL, SpecError, err};
use crate::stats::{MatchTally, Sprt};
use engine::bots::{BotSpec, Spelled};
use engine::tiles::Distribution;
use serde::{Deserialize, Serialize};

/// The `tune` kind.
pub struct Tune;

/// Most iterations one run may have.
pub const MAX_ITERATIONS: u32 = 1000;
/// Most parameters one run may tune.
pub const MAX_PARAMS: usize = 20;
/// Spall's exponents for the gain sequences (fishtest's too).
const ALPHA: f64 = 0.602;
const GAMMA: f64 = 0.101;

impl Kind for Tune {
    const NAME: &'static str = "tune";
    const UNIT: &'static str = "pair of games (one deal, seats swapped)";
    const PLAYS_BOTS: bool = true;
    const PLAYS_GAMES: bool = true;
    const SHOWN_PER_UNIT: u64 = 2;
    type Spec = TuneSpec;
    type Job = MatchJob;
    type Result = MatchTally;

    fn parse(f: File) -> Result<TuneSpec, SpecError> {
        File::refuse(
            &[
                ("match", f.match_.is_some()),
                ("grid", !f.grid.is_empty()),
                ("sprt", f.sprt.is_some()),
                ("endgame", f.endgame.is_some()),
                ("generations", f.generations.is_some()),
                ("games", f.games.is_some()),
            ],
            "a tune experiment takes a [tune] section (bot, against, iterations, games, [tune.params.NAME]) and a seed",
        )?;
        let Some(t) = f.tune else {
            return err(
                "tune",
                "a tune experiment needs a [tune] section with bot, against, iterations, games and params",
            );
        };
        volunteer_bot(&t.bot).map_err(|message| SpecError { field: "tune.bot".into(), message })?;
        volunteer_bot(&t.against).map_err(|message| SpecError { field: "tune.against".into(), message })?;
        if !(1..=MAX_ITERATIONS).contains(&t.iterations) {
            return err("tune.iterations", format!("1 to {MAX_ITERATIONS}"));
        }
        if t.games < 2 || t.games % 2 == 1 || t.games > MAX_GAMES_PER_CELL {
            return err("tune.games", format!("must be even (deals are paired), 2 to {MAX_GAMES_PER_CELL}"));
        }
        if (2 * t.games).saturating_mul(t.iterations as u64) > MAX_GAMES {
            return err("tune", format!("2 x games x iterations is more than {MAX_GAMES} games"));
        }
        if t.method != "spsa" {
            return err("tune.method", format!("`{}`: the one method is `spsa`", t.method));
        }
        if t.params.is_empty() || t.params.len() > MAX_PARAMS {
            return err("tune.params", format!("1 to {MAX_PARAMS} parameters, each a [tune.params.NAME] table"));
        }
        let mut params = Vec::new();
        for (name, p) in t.params {
            let field = format!("tune.params.{name}");
            if !(p.min.is_finite() && p.max.is_finite() && p.min < p.max) {
                return err(field, "needs finite min < max");
            }
            if !(p.min..=p.max).contains(&p.start) {
                return err(format!("{field}.start"), format!("must lie in [{}, {}]", p.min, p.max));
            }
            let c = p.c.unwrap_or((p.max - p.min) / 10.0);
            if !(c.is_finite() && c > 0.0 && c <= p.max - p.min) {
                return err(format!("{field}.c"), "the perturbation must be > 0 and at most max - min");
            }
            if p.a.is_some_and(|a| !(a.is_finite() && a > 0.0)) {
                return err(format!("{field}.a"), "the gain must be a number > 0");
            }
            let param =
                Param { name: name.clone(), start: p.start, min: p.min, max: p.max, c, a: p.a, integer: p.integer };
            // Every value the run may give must make a bot the volunteers can play.
            for v in [p.min, p.start, p.max] {
                let bot = param.apply(&t.bot, v).map_err(|m| SpecError { field: field.clone(), message: m })?;
                volunteer_bot(&bot).map_err(|m| SpecError { field: field.clone(), message: m })?;
            }
            params.push(param);
        }
        Ok(TuneSpec { bot: t.bot, against: t.against, iterations: t.iterations, games: t.games, params })
    }

    fn check(_: &TuneSpec, _: &Distribution) -> Result<(), SpecError> {
        Ok(())
    }

    fn cells(spec: &TuneSpec, seed: u64) -> Result<Vec<CellSpec>, SpecError> {
        let start: Vec<f64> = spec.params.iter().map(|p| p.start).collect();
        let mut cells = Vec::new();
        for k in 0..spec.iterations {
            let bots = if k == 0 {
                spec.perturbed(seed, 0, &start).map_err(|m| SpecError { field: "tune.params".into(), message: m })?
            } else {
                // Placeholders until the update before gives them: the bots as written.
                [spec.bot.clone(), spec.bot.clone()]
            };
            for (side, bot) in bots.into_iter().enumerate() {
                let mut params = serde_json::Map::new();
                params.insert("iteration".into(), k.into());
                params.insert("side".into(), (if side == 0 { "plus" } else { "minus" }).into());
                cells.push(CellSpec {
                    index: 2 * k + side as u32,
                    params,
                    bots: Some([bot, spec.against.clone()]),
                    target: spec.games / 2,
                    carved: true,
                    waits: k > 0,
                });
            }
        }
        Ok(cells)
    }

    fn matchup(_: &TuneSpec) -> Option<&MatchSpec> {
        None
    }

    fn sprt(_: &TuneSpec, _: u32) -> Option<&Sprt> {
        None
    }

    fn finished(target: u64) -> String {
        format!("all {} games played", 2 * target)
    }

    fn first_batch_units(threads: u64) -> u64 {
        threads.max(1)
    }

    fn job_units(job: &MatchJob) -> u64 {
        job.pairs
    }

    fn result_games(tally: &MatchTally) -> u64 {
        tally.games
    }

    fn tally(tally: &MatchTally) -> Option<&MatchTally> {
        Some(tally)
    }
}

/// A tuning run: the bot, its reference, and its parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TuneSpec {
    pub bot: String,
    pub against: String,
    pub iterations: u32,
    pub games: u64,
    pub params: Vec<Param>,
}

/// A tuned parameter.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Param {
    pub name: String,
    pub start: f64,
    pub min: f64,
    pub max: f64,
    pub c: f64,
    pub a: Option<f64>,
    pub integer: bool,
}

impl Param {
    /// `bot` with this parameter set to `value` (clamped to the bounds; rounded if whole).
    pub fn apply(&self, bot: &str, value: f64) -> Result<String, String> {
        let mut spelled = Spelled::read(bot)?;
        spelled.set(&self.name, &self.spell(value));
        let text = spelled.to_string();
        BotSpec::parse(&text).map_err(|e| e.to_string())?;
        Ok(text)
    }

    /// The value as the bot's spec spells it.
    pub fn spell(&self, value: f64) -> String {
        let v = value.clamp(self.min, self.max);
        if self.integer { format!("{}", v.round() as i64) } else { format!("{}", (v * 1e6).round() / 1e6) }
    }
}

/// One SPSA step: what iteration `k` played and what it moved `theta` to.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Step {
    pub iteration: u32,
    /// The parameters before the step.
    pub theta: Vec<f64>,
    /// The perturbation's size per parameter, `c_k`, and its sign, `delta`.
    pub c: Vec<f64>,
    pub delta: Vec<f64>,
    /// Score (wins + half the draws, a fraction) of `theta + c delta` and of `theta - c delta`
    /// against the reference.
    pub score_plus: f64,
    pub score_minus: f64,
    /// The parameters after the step.
    pub next: Vec<f64>,
}

impl TuneSpec {
    /// The perturbation size of each parameter at iteration `k`.
    pub fn c_k(&self, k: u32) -> Vec<f64> {
        self.params.iter().map(|p| p.c / ((k + 1) as f64).powf(GAMMA)).collect()
    }

    /// Each parameter's random sign at iteration `k`: a fixed function of the seed.
    pub fn delta(&self, seed: u64, k: u32) -> Vec<f64> {
        let base = engine::rng::derive(seed, 1_000_000 + k as u64);
        (0..self.params.len()).map(|i| if engine::rng::derive(base, i as u64) & 1 == 0 { 1.0 } else { -1.0 }).collect()
    }

    /// The deals of iteration `k`: new ones each iteration, the same for both of its bots.
    pub fn iteration_seed(seed: u64, k: u32) -> u64 {
        engine::rng::derive(seed, k as u64)
    }

    /// The two bots of iteration `k` at `theta`: `theta + c_k delta` and `theta - c_k delta`.
    pub fn perturbed(&self, seed: u64, k: u32, theta: &[f64]) -> Result<[String; 2], String> {
        let (c, delta) = (self.c_k(k), self.delta(seed, k));
        let side = |sign: f64| -> Result<String, String> {
            let mut bot = self.bot.clone();
            for (i, p) in self.params.iter().enumerate() {
                bot = p.apply(&bot, theta[i] + sign * c[i] * delta[i])?;
            }
            Ok(bot)
        };
        Ok([side(1.0)?, side(-1.0)?])
    }

    /// SPSA's step from iteration `k`'s scores: `theta + a_k * g`, where `g`, the gradient's
    /// estimate, is `(score_plus - score_minus) / (2 c_k delta)`; within the bounds.
    pub fn step(&self, seed: u64, k: u32, theta: &[f64], score_plus: f64, score_minus: f64) -> Step {
        let (c, delta) = (self.c_k(k), self.delta(seed, k));
        let big_a = 0.1 * self.iterations as f64;
        let next = self
            .params
            .iter()
            .enumerate()
            .map(|(i, p)| {
                // By default a 10-point score edge at the first iteration moves the value by c.
                let a = p.a.unwrap_or(20.0 * p.c * p.c * (big_a + 1.0).powf(ALPHA));
                let a_k = a / (big_a + k as f64 + 1.0).powf(ALPHA);
                let g = (score_plus - score_minus) / (2.0 * c[i] * delta[i]);
                (theta[i] + a_k * g).clamp(p.min, p.max)
            })
            .collect();
        Step { iteration: k, theta: theta.to_vec(), c, delta, score_plus, score_minus, next }
    }

    /// Which iteration cell `index` belongs to, and whether it is the `+` side.
    pub fn cell(index: u32) -> (u32, bool) {
        (index / 2, index.is_multiple_of(2))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::ExperimentSpec;

    const FILE: &str = "name = \"t\"\nkind = \"tune\"\nseed = 4\n[tune]\nbot = \"static:leave_scale=0\"\nagainst = \"static:leave_scale=0\"\niterations = 3\ngames = 20\n[tune.params.leave_scale]\nstart = 0.0\nmin = 0.0\nmax = 2.0\nc = 0.3\n";

    fn spec(text: &str) -> Result<(ExperimentSpec, TuneSpec), SpecError> {
        let s = ExperimentSpec::parse(text)?;
        let crate::kinds::ExperimentKind::Tune(t) = &s.kind else { panic!("{s:?}") };
        let t = t.clone();
        Ok((s, t))
    }

    #[test]
    fn iteration_zero_plays_both_perturbations_and_later_ones_wait() {
        let (s, t) = spec(FILE).unwrap();
        let cells = s.cells().unwrap();
        assert_eq!(cells.len(), 6);
        assert_eq!(cells.iter().map(|c| c.waits).collect::<Vec<_>>(), [false, false, true, true, true, true]);
        let bots: Vec<String> = cells[..2].iter().map(|c| c.bots.clone().unwrap()[0].clone()).collect();
        // From 0 with c = 0.3: the minus side is clamped to the bound.
        let plus_first = t.delta(4, 0)[0] > 0.0;
        let (hi, lo) = ("static:leave_scale=0.3", "static:leave_scale=0");
        assert_eq!(bots, if plus_first { [hi, lo] } else { [lo, hi] });
        assert!(cells.iter().all(|c| c.bots.as_ref().unwrap()[1] == "static:leave_scale=0"));
    }

    #[test]
    fn a_step_climbs_towards_the_better_side_within_the_bounds_and_its_gains_shrink() {
        let (_, t) = spec(FILE).unwrap();
        let d = t.delta(4, 0)[0];
        // The side that moved up (delta > 0: plus) scored better: theta goes up.
        let (better, worse) = (0.55, 0.45);
        let up = if d > 0.0 { t.step(4, 0, &[1.0], better, worse) } else { t.step(4, 0, &[1.0], worse, better) };
        assert!(up.next[0] > 1.0, "{up:?}");
        // The default gain: a 10-point edge moves the value by c at the first iteration.
        assert!((up.next[0] - 1.0 - 0.3).abs() < 1e-9, "{up:?}");
        let top = t.step(4, 0, &[1.95], if d > 0.0 { 1.0 } else { 0.0 }, if d > 0.0 { 0.0 } else { 1.0 });
        assert_eq!(top.next[0], 2.0);
        assert!(t.c_k(5)[0] < t.c_k(0)[0]);
        let flat = t.step(4, 2, &[1.0], 0.5, 0.5);
        assert_eq!(flat.next, [1.0]);
    }

    #[test]
    fn bad_tuning_files_name_their_field() {
        let field = |from: &str, to: &str| spec(&FILE.replace(from, to)).unwrap_err().field;
        assert_eq!(field("iterations = 3", "iterations = 0"), "tune.iterations");
        assert_eq!(field("games = 20", "games = 21"), "tune.games");
        assert_eq!(field("start = 0.0", "start = 3.0"), "tune.params.leave_scale.start");
        assert_eq!(field("c = 0.3", "c = 0"), "tune.params.leave_scale.c");
        assert_eq!(field("max = 2.0", "max = -1.0"), "tune.params.leave_scale");
        assert_eq!(field("[tune.params.leave_scale]", "[tune.params.temperature]"), "tune.params.temperature");
        assert_eq!(field("bot = \"static:leave_scale=0\"", "bot = \"nobot\""), "tune.bot");
        assert_eq!(field("iterations = 3", "iterations = 3\nmethod = \"cma\""), "tune.method");
        assert_eq!(field("max = 2.0", "max = 20.0"), "tune.params.leave_scale");
    }
}
