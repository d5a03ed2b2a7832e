//! `match`: two bots play each other on paired deals (each deal twice, the seats swapped),
//! over a grid of their parameters, each cell to a game target or until its SPRT decides.
//! The bots and grid are also a selfplay experiment's (`super::selfplay`).

use super::Kind;
use crate::spec::{Axis, CellSpec, File, MAX_CELLS, MAX_GAMES, MAX_GAMES_PER_CELL, SpecError, err, is_sha256};
use crate::stats::{MatchTally, Sprt};
use engine::bots::{BotSpec, Spelled};
use engine::tiles::Distribution;
use serde::{Deserialize, Serialize};

/// The `match` kind.
pub struct Match;

impl Kind for Match {
    const NAME: &'static str = "match";
    const UNIT: &'static str = "pair of games (one deal, seats swapped)";
    const PLAYS_BOTS: bool = true;
    const PLAYS_GAMES: bool = true;
    const SHOWN_PER_UNIT: u64 = 2;
    type Spec = MatchSpec;
    type Job = MatchJob;
    type Result = MatchTally;

    fn parse(file: File) -> Result<MatchSpec, SpecError> {
        parse(file, true)
    }

    fn check(_: &MatchSpec, _: &Distribution) -> Result<(), SpecError> {
        Ok(())
    }

    fn cells(spec: &MatchSpec, _seed: u64) -> Result<Vec<CellSpec>, SpecError> {
        spec.cells()
    }

    fn matchup(spec: &MatchSpec) -> Option<&MatchSpec> {
        Some(spec)
    }

    fn sprt(spec: &MatchSpec, _: u32) -> Option<&Sprt> {
        spec.sprt.as_ref()
    }

    fn finished(target: u64) -> String {
        format!("reached its target of {} games", 2 * target)
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

/// A match experiment: two bots, a grid over their parameters, and a game target per cell.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MatchSpec {
    /// Even: deals are paired.
    pub games_per_cell: u64,
    /// The base bot specs; grid values override their parameters per cell.
    pub bots: [String; 2],
    pub axes: Vec<Axis>,
    pub sprt: Option<Sprt>,
}

/// Pairs `first_pair..first_pair + pairs` of the cell's deal sequence, each played twice with
/// the seats swapped. Deal `p` is `engine::autoplay::deal_seed(seed, p)`, so a batch replays
/// identically wherever it runs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MatchJob {
    pub bot1: String,
    pub bot2: String,
    pub seed: u64,
    pub first_pair: u64,
    pub pairs: u64,
}

/// A match's fields of an experiment file, or a self-play experiment's (`paired` false: the
/// same bots and grid, each deal played once, no SPRT).
pub fn parse(f: File, paired: bool) -> Result<MatchSpec, SpecError> {
    let what = if paired { Match::NAME } else { super::selfplay::Selfplay::NAME };
    if f.endgame.is_some() {
        return err("endgame", "only an endgame experiment takes an [endgame] section");
    }
    if f.generations.is_some() {
        return err("generations", "only a leaves experiment takes a [generations] section");
    }
    if f.tune.is_some() {
        return err("tune", "only a tune experiment takes a [tune] section");
    }
    if !paired && f.sprt.is_some() {
        return err("sprt", "a selfplay experiment plays every game it asks for: it takes no [sprt]");
    }
    let Some(games) = f.games else { return err("games", format!("a {what} experiment needs `games` (per cell)")) };
    if games == 0 || games % 2 == 1 || games > MAX_GAMES_PER_CELL {
        let why = if paired { "deals are paired" } else { "batches deal two games at a time" };
        return err("games", format!("must be even ({why}), 2 to {MAX_GAMES_PER_CELL}"));
    }
    let Some(m) = f.match_ else {
        return err("match", format!("a {what} experiment needs a [match] section with bot1 and bot2"));
    };
    for (field, b) in [("match.bot1", &m.bot1), ("match.bot2", &m.bot2)] {
        volunteer_bot(b).map_err(|message| SpecError { field: field.into(), message })?;
    }
    if let Some(s) = &f.sprt {
        check_sprt(s)?;
    }
    let mut axes = Vec::new();
    for (name, values) in f.grid {
        let field = format!("grid.\"{name}\"");
        if values.is_empty() {
            return err(field, "an axis needs at least one value");
        }
        let (bot, _) = name.split_once('.').unwrap_or((&name, ""));
        if bot != "bot1" && bot != "bot2" {
            return err(field, "axes are named `bot1`, `bot2`, `bot1.PARAM` or `bot2.PARAM`");
        }
        let mut vs = Vec::new();
        for v in values {
            vs.push(match v {
                toml::Value::Integer(i) => serde_json::Value::from(i),
                toml::Value::Float(x) if x.is_finite() => serde_json::Value::from(x),
                toml::Value::String(s) => serde_json::Value::from(s),
                other => return err(field, format!("values must be numbers or strings, not {}", other.type_str())),
            });
        }
        axes.push(Axis { name, values: vs });
    }
    // Checked: a grid of many long axes must not wrap to a small number of cells.
    let cells = axes.iter().try_fold(1u64, |n, a| n.checked_mul(a.values.len() as u64)).unwrap_or(u64::MAX);
    if cells > MAX_CELLS as u64 {
        return err(
            "grid",
            format!(
                "{} cells; at most {MAX_CELLS}",
                if cells == u64::MAX { "too many".into() } else { cells.to_string() }
            ),
        );
    }
    if cells * games > MAX_GAMES {
        return err("games", format!("{} games in all; at most {MAX_GAMES}", cells * games));
    }
    let m = MatchSpec { games_per_cell: games, bots: [m.bot1, m.bot2], axes, sprt: f.sprt };
    m.check_axes()?;
    // Building every cell validates every bot the grid makes.
    let cells = m.cells()?;
    if f.gpu && models(&cells).is_empty() {
        return err(
            "gpu",
            "no bot of this experiment has a value net (a CNN bot, or a sim bot with model=), so none would use a GPU",
        );
    }
    Ok(m)
}

impl MatchSpec {
    /// Check each axis value on its own, so that a bad one is reported against its axis.
    fn check_axes(&self) -> Result<(), SpecError> {
        for a in &self.axes {
            let field = format!("grid.\"{}\"", a.name);
            let bad = |message: String| SpecError { field: field.clone(), message };
            let (who, param) = a.name.split_once('.').map_or((a.name.as_str(), None), |(w, p)| (w, Some(p)));
            let b = if who == "bot1" { 0 } else { 1 };
            // The bots this parameter may apply to: the base bot, or a whole-bot axis's values
            // (checked with their own parameters, which others may depend on).
            let bases: Vec<String> = match self.axes.iter().find(|x| x.name == who) {
                Some(whole) => whole.values.iter().map(text).collect(),
                None => vec![self.bots[b].clone()],
            };
            for v in &a.values {
                let specs: Vec<String> = match param {
                    None => vec![text(v)],
                    Some(p) => bases
                        .iter()
                        .map(|base| {
                            let mut spelled = Spelled::read(base)?;
                            spelled.set(p, &text(v));
                            Ok(spelled.to_string())
                        })
                        .collect::<Result<_, String>>()
                        .map_err(bad)?,
                };
                for s in specs {
                    volunteer_bot(&s).map_err(bad)?;
                }
            }
        }
        Ok(())
    }

    /// The grid points in row-major order (the last axis varies fastest).
    pub fn cells(&self) -> Result<Vec<CellSpec>, SpecError> {
        let mut out = Vec::new();
        let n: usize = self.axes.iter().map(|a| a.values.len()).product();
        for index in 0..n {
            let mut params = serde_json::Map::new();
            let mut rest = index;
            for a in self.axes.iter().rev() {
                params.insert(a.name.clone(), a.values[rest % a.values.len()].clone());
                rest /= a.values.len();
            }
            let mut bots = self.bots.clone();
            for (b, bot) in bots.iter_mut().enumerate() {
                *bot = apply_params(bot, &format!("bot{}", b + 1), &self.axes, &params)?;
            }
            out.push(CellSpec {
                index: index as u32,
                params,
                bots: Some(bots),
                target: self.games_per_cell / 2,
                carved: true,
                waits: false,
            });
        }
        Ok(out)
    }
}

/// `base` with this cell's values for `who` (`bot1`/`bot2`) applied, validated.
fn apply_params(
    base: &str,
    who: &str,
    axes: &[Axis],
    params: &serde_json::Map<String, serde_json::Value>,
) -> Result<String, SpecError> {
    let mut field = String::from("match.") + who;
    let mut spelled = Spelled::read(base).map_err(|message| SpecError { field: field.clone(), message })?;
    for a in axes {
        let v = text(&params[&a.name]);
        if a.name == who {
            // A whole-bot axis replaces the base spec.
            field = format!("grid.\"{}\"", a.name);
            spelled = Spelled::read(&v).map_err(|message| SpecError { field: field.clone(), message })?;
        } else if let Some(param) = a.name.strip_prefix(who).and_then(|p| p.strip_prefix('.')) {
            field = format!("grid.\"{}\"", a.name);
            spelled.set(param, &v);
        }
    }
    let spec = spelled.to_string();
    volunteer_bot(&spec).map_err(|message| SpecError { field, message })?;
    Ok(spec)
}

/// A grid value as a bot spec's text: strings bare, numbers as JSON writes them.
fn text(v: &serde_json::Value) -> String {
    v.as_str().map_or_else(|| v.to_string(), str::to_string)
}

/// An `[sprt]` section's bounds and error rates make a test.
pub fn check_sprt(s: &Sprt) -> Result<(), SpecError> {
    let ok = |p: f64| p > 0.0 && p < 1.0;
    if !(ok(s.p0) && ok(s.p1) && s.p0 < s.p1) {
        return err("sprt", "need 0 < p0 < p1 < 1");
    }
    if !(s.alpha > 0.0 && s.alpha < 0.5 && s.beta > 0.0 && s.beta < 0.5) {
        return err("sprt", "alpha and beta must be between 0 and 0.5");
    }
    Ok(())
}

/// A bot volunteers can play: any bot, but the value net and the leave table a bot names for
/// itself are named by the sha256 of an artifact (volunteers fetch it from the coordinator),
/// never by a path.
pub fn volunteer_bot(spec: &str) -> Result<BotSpec, String> {
    let bot = BotSpec::parse(spec).map_err(|e| e.message)?;
    if let Some(model) = bot.model().filter(|m| !is_sha256(m)) {
        return Err(format!(
            "`{spec}`: volunteers fetch models by sha256: register the file with `coordinator artifact --role model {model}` and name the sha256 it prints (model=SHA256)"
        ));
    }
    if let Some(table) = bot.own_leaves().filter(|t| !is_sha256(t)) {
        return Err(format!(
            "`{spec}`: volunteers fetch leave tables by sha256: register the file with `coordinator artifact --role leaves {table}` and name the sha256 it prints (leaves=SHA256)"
        ));
    }
    Ok(bot)
}

/// The sha256s of the value nets the cells' bots play with (CNN bots', simulating bots' for
/// their rollouts), each once, in order.
pub fn models(cells: &[CellSpec]) -> Vec<String> {
    named(cells, BotSpec::model)
}

/// The sha256s of the leave tables the cells' bots name for themselves, each once, in order.
pub fn tables(cells: &[CellSpec]) -> Vec<String> {
    named(cells, BotSpec::own_leaves)
}

fn named(cells: &[CellSpec], name: fn(&BotSpec) -> Option<&str>) -> Vec<String> {
    let mut out: Vec<String> = cells
        .iter()
        .flat_map(|c| c.bots.iter().flatten())
        .filter_map(|b| name(&BotSpec::parse(b).ok()?).map(str::to_string))
        .collect();
    out.sort();
    out.dedup();
    out
}
