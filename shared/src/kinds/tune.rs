//! `tune`: a bot's parameters tuned on the volunteers by SPSA (simultaneous perturbation
//! stochastic approximation, the scheme fishtest tunes chess engines with) or by CMA-ES
//! (`crate::cmaes`: each iteration `population` points drawn around the mean, each played
//! against the reference, the mean moved to the weighted best half). SPSA's iteration `k`
//! perturbs every parameter at once, `theta ± c_k * delta` (`delta` a seeded random sign per
//! parameter), and plays each of the two bots against a reference bot on the same paired deals;
//! the difference of their scores estimates the gradient, and the coordinator moves `theta` up
//! it by `a_k`, within the parameters' bounds. Gains follow Spall's schedules, as fishtest's do:
//! `c_k = c / (k + 1)^0.101`, `a_k = a / (A + k + 1)^0.602`, `A` a tenth of the iterations.
//!
//! Every cell is stored at submission: SPSA's iteration `k` is cells `2k` (`theta + c_k delta`
//! against the reference) and `2k + 1` (`theta - c_k delta`); CMA-ES's is cells `lambda k + i`,
//! its `lambda` points; each `games` games. The cells of later iterations wait for the update
//! that gives their bots (`CellSpec::waits`).

use super::Kind;
use super::matches::{MatchJob, MatchSpec, volunteer_bot};
use crate::cmaes::{self, Cma};
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
/// Most points a CMA-ES iteration may play.
pub const MAX_POPULATION: u32 = 64;
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
        if t.params.is_empty() || t.params.len() > MAX_PARAMS {
            return err("tune.params", format!("1 to {MAX_PARAMS} parameters, each a [tune.params.NAME] table"));
        }
        let method = match (t.method.as_str(), t.population) {
            ("spsa", None) => Method::Spsa,
            ("spsa", Some(_)) => {
                return err("tune.population", "SPSA plays two bots an iteration; population is CMA-ES's");
            }
            ("cmaes", population) => {
                let population = population.unwrap_or_else(|| cmaes::default_lambda(t.params.len()));
                if !(2..=MAX_POPULATION).contains(&population) {
                    return err("tune.population", format!("2 to {MAX_POPULATION} points an iteration"));
                }
                Method::Cmaes { population }
            }
            (other, _) => return err("tune.method", format!("`{other}`: `spsa` or `cmaes`")),
        };
        let width = method.width() as u64;
        if (width * t.games).saturating_mul(t.iterations as u64) > MAX_GAMES {
            return err("tune", format!("{width} x games x iterations is more than {MAX_GAMES} games"));
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
        Ok(TuneSpec { bot: t.bot, against: t.against, iterations: t.iterations, games: t.games, params, method })
    }

    fn check(_: &TuneSpec, _: &Distribution) -> Result<(), SpecError> {
        Ok(())
    }

    fn cells(spec: &TuneSpec, seed: u64) -> Result<Vec<CellSpec>, SpecError> {
        let width = spec.method.width();
        let mut cells = Vec::new();
        for k in 0..spec.iterations {
            let bots = if k == 0 {
                spec.first_bots(seed).map_err(|m| SpecError { field: "tune.params".into(), message: m })?
            } else {
                // Placeholders until the update before gives them: the bots as written.
                vec![spec.bot.clone(); width as usize]
            };
            for (i, bot) in bots.into_iter().enumerate() {
                let mut params = serde_json::Map::new();
                params.insert("iteration".into(), k.into());
                match spec.method {
                    Method::Spsa => params.insert("side".into(), (if i == 0 { "plus" } else { "minus" }).into()),
                    Method::Cmaes { .. } => params.insert("point".into(), i.into()),
                };
                cells.push(CellSpec {
                    index: width * k + i as u32,
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

/// A tuning run: the bot, its reference, its parameters, and how it searches.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TuneSpec {
    pub bot: String,
    pub against: String,
    pub iterations: u32,
    pub games: u64,
    pub params: Vec<Param>,
    #[serde(default)]
    pub method: Method,
}

/// How a tuning run searches.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "name", rename_all = "lowercase")]
pub enum Method {
    #[default]
    Spsa,
    Cmaes {
        population: u32,
    },
}

impl Method {
    /// Cells an iteration plays.
    pub fn width(self) -> u32 {
        match self {
            Method::Spsa => 2,
            Method::Cmaes { population } => population,
        }
    }
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
        format!("{}", self.played(value))
    }

    /// The value a bot plays: within the bounds, rounded where whole, to six places else.
    pub fn played(&self, value: f64) -> f64 {
        let v = self.clamp(value);
        if self.integer { v.round() } else { (v * 1e6).round() / 1e6 }
    }

    pub fn clamp(&self, value: f64) -> f64 {
        value.clamp(self.min, self.max)
    }

    /// The value in coordinates where the range is `[0, 1]`.
    pub fn unit(&self, value: f64) -> f64 {
        (value - self.min) / (self.max - self.min)
    }
}

/// One step: what iteration `k` played and what it moved `theta` to.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Step {
    pub iteration: u32,
    /// The parameters before the step (CMA-ES: its mean).
    pub theta: Vec<f64>,
    /// Each parameter's spread this iteration: SPSA's perturbation `c_k`; CMA-ES's standard
    /// deviation, `sigma sqrt(C_ii)` in the parameter's units.
    pub c: Vec<f64>,
    /// SPSA's sign per parameter; empty for CMA-ES.
    pub delta: Vec<f64>,
    /// Score (wins + half the draws, a fraction) against the reference: SPSA's of `theta + c
    /// delta` and of `theta - c delta`; CMA-ES's best and worst point's.
    pub score_plus: f64,
    pub score_minus: f64,
    /// The parameters after the step.
    pub next: Vec<f64>,
    /// Every bot the iteration played: its parameters as played and its score.
    #[serde(default)]
    pub tried: Vec<Tried>,
    /// CMA-ES's state after the step, which the next iteration draws from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cma: Option<Cma>,
}

/// A point an iteration played.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Tried {
    pub params: Vec<f64>,
    pub score: f64,
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
        let tried = [1.0, -1.0]
            .iter()
            .zip([score_plus, score_minus])
            .map(|(sign, score)| Tried {
                params: (0..theta.len()).map(|i| self.params[i].clamp(theta[i] + sign * c[i] * delta[i])).collect(),
                score,
            })
            .collect();
        Step { iteration: k, theta: theta.to_vec(), c, delta, score_plus, score_minus, next, tried, cma: None }
    }

    /// Which iteration cell `index` belongs to.
    pub fn iteration(&self, index: u32) -> u32 {
        index / self.method.width()
    }

    /// The bots of iteration 0.
    pub fn first_bots(&self, seed: u64) -> Result<Vec<String>, String> {
        match self.method {
            Method::Spsa => {
                let start: Vec<f64> = self.params.iter().map(|p| p.start).collect();
                Ok(self.perturbed(seed, 0, &start)?.into())
            }
            Method::Cmaes { population } => self.bots_at(&self.points(seed, 0, &self.cma_start(population))),
        }
    }

    /// The bot with each parameter at its value in `values`.
    pub fn bot_at(&self, values: &[f64]) -> Result<String, String> {
        let mut bot = self.bot.clone();
        for (p, v) in self.params.iter().zip(values) {
            bot = p.apply(&bot, *v)?;
        }
        Ok(bot)
    }

    fn bots_at(&self, points: &[Vec<f64>]) -> Result<Vec<String>, String> {
        points.iter().map(|v| self.bot_at(v)).collect()
    }

    /// CMA-ES's state before its first iteration, drawing `population` points: the start, each
    /// parameter's spread `c`, in coordinates where each range is `[0, 1]`.
    pub fn cma_start(&self, population: u32) -> Cma {
        let mean = self.params.iter().map(|p| p.unit(p.start)).collect();
        let spread: Vec<f64> = self.params.iter().map(|p| p.c / (p.max - p.min)).collect();
        Cma::new(mean, &spread, population)
    }

    /// CMA-ES's points of iteration `k` drawn from `state`, in the parameters' units, each
    /// repaired into its bounds (and rounded where whole) as the bots play them.
    pub fn points(&self, seed: u64, k: u32, state: &Cma) -> Vec<Vec<f64>> {
        state
            .ask(engine::rng::derive(seed, 2_000_000 + k as u64))
            .iter()
            .map(|u| self.params.iter().zip(u).map(|(p, x)| p.played(p.min + x * (p.max - p.min))).collect())
            .collect()
    }

    /// CMA-ES's step from iteration `k`'s scores, drawn from `state` (the state after the
    /// iteration before): the state it leaves and what the run records.
    pub fn cma_step(&self, seed: u64, k: u32, state: &Cma, scores: &[f64]) -> Step {
        let points = self.points(seed, k, state);
        let units: Vec<Vec<f64>> =
            points.iter().map(|v| self.params.iter().zip(v).map(|(p, x)| p.unit(*x)).collect()).collect();
        let next_state = state.tell(&units, scores);
        let real = |u: &[f64]| -> Vec<f64> {
            self.params.iter().zip(u).map(|(p, x)| p.clamp(p.min + x * (p.max - p.min))).collect()
        };
        let spread =
            |s: &Cma| -> Vec<f64> { self.params.iter().zip(s.spread()).map(|(p, d)| d * (p.max - p.min)).collect() };
        let best = scores.iter().copied().fold(f64::MIN, f64::max);
        let worst = scores.iter().copied().fold(f64::MAX, f64::min);
        Step {
            iteration: k,
            theta: real(&state.mean),
            c: spread(state),
            delta: Vec::new(),
            score_plus: best,
            score_minus: worst,
            next: real(&next_state.mean),
            tried: points.into_iter().zip(scores).map(|(params, &score)| Tried { params, score }).collect(),
            cma: Some(next_state),
        }
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
    fn a_cmaes_run_plays_its_population_each_iteration_and_steps_towards_the_better_points() {
        let (s, t) = spec(&FILE.replace("games = 20", "games = 20\nmethod = \"cmaes\"")).unwrap();
        assert_eq!(t.method, Method::Cmaes { population: 4 });
        let cells = s.cells().unwrap();
        assert_eq!(cells.len(), 12);
        assert_eq!(cells.iter().filter(|c| !c.waits).count(), 4);
        assert_eq!(
            cells.iter().map(|c| t.iteration(c.index)).collect::<Vec<_>>(),
            [0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2]
        );
        let start = t.cma_start(4);
        let points = t.points(4, 0, &start);
        // Drawn around the start with spread c = 0.3, repaired into [0, 2]: some at the bound.
        assert!(points.iter().all(|p| (0.0..=2.0).contains(&p[0])), "{points:?}");
        let bots: Vec<String> = cells[..4].iter().map(|c| c.bots.clone().unwrap()[0].clone()).collect();
        assert_eq!(bots, points.iter().map(|p| t.bot_at(p).unwrap()).collect::<Vec<_>>());
        // Points further up score better: the mean climbs.
        let scores: Vec<f64> = points.iter().map(|p| 0.5 + 0.1 * p[0]).collect();
        let step = t.cma_step(4, 0, &start, &scores);
        assert_eq!(step.theta, [0.0]);
        assert!(step.next[0] > 0.0, "{step:?}");
        assert_eq!(step.tried.len(), 4);
        assert_eq!(step.score_plus, scores.iter().copied().fold(f64::MIN, f64::max));
        let again = t.points(4, 1, step.cma.as_ref().unwrap());
        assert_eq!(again, t.points(4, 1, step.cma.as_ref().unwrap()), "drawn from the seed alone");
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
        assert_eq!(field("iterations = 3", "iterations = 3\npopulation = 6"), "tune.population");
        assert_eq!(field("iterations = 3", "iterations = 3\nmethod = \"cmaes\"\npopulation = 1"), "tune.population");
        assert_eq!(field("max = 2.0", "max = 20.0"), "tune.params.leave_scale");
    }
}
