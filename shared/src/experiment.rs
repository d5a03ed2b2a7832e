//! Experiment files: what a researcher submits. An experiment names a job kind, the bots and
//! their parameters, and optionally a grid of parameter values; every grid point is a *cell*
//! with its own game target.
//!
//! ```toml
//! name = "softmax temperature x bag threshold"
//! kind = "match"
//! games = 2000            # per cell; even, since deals are paired
//! seed = 7
//!
//! [match]
//! bot1 = "softmax"
//! bot2 = "static"
//!
//! [grid]                  # axes in name order; `botN` or `botN.param`
//! "bot1.t" = [0.5, 1.0, 2.0]
//! "bot1.bag" = [20, 60]
//!
//! [sprt]                  # optional: stop a cell early
//! p0 = 0.50
//! p1 = 0.55
//! alpha = 0.05
//! beta = 0.05
//! ```

use crate::stats::Sprt;
use engine::bots::BotSpec;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Most cells one experiment may have.
pub const MAX_CELLS: usize = 1000;
/// Most games one cell may ask for.
pub const MAX_GAMES_PER_CELL: u64 = 10_000_000;
/// Most games one experiment may ask for in all.
pub const MAX_GAMES: u64 = 1_000_000_000;
/// Longest experiment name.
pub const MAX_NAME: usize = 200;

/// The kinds of work the spine carries. Later kinds (sim grids, endgame sets, ...) add variants.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum JobKind {
    Match,
}

impl JobKind {
    pub fn as_str(self) -> &'static str {
        match self {
            JobKind::Match => "match",
        }
    }
}

/// A rejected experiment: which field, and why.
#[derive(Debug, thiserror::Error, PartialEq)]
#[error("{field}: {message}")]
pub struct SpecError {
    pub field: String,
    pub message: String,
}

fn err<T>(field: impl Into<String>, message: impl Into<String>) -> Result<T, SpecError> {
    Err(SpecError { field: field.into(), message: message.into() })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    name: String,
    kind: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    priority: i32,
    #[serde(default = "default_seed")]
    seed: u64,
    games: u64,
    #[serde(rename = "match")]
    match_: Option<MatchSection>,
    #[serde(default)]
    grid: BTreeMap<String, Vec<toml::Value>>,
    sprt: Option<Sprt>,
    #[serde(default)]
    artifacts: Artifacts,
}

fn default_seed() -> u64 {
    1
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MatchSection {
    bot1: String,
    bot2: String,
}

/// Artifacts an experiment pins by sha256; unset ones are the coordinator's defaults.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Artifacts {
    pub lexicon: Option<String>,
    pub leaves: Option<String>,
    pub winpct: Option<String>,
}

/// One grid axis: a parameter and the values it takes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Axis {
    pub name: String,
    pub values: Vec<serde_json::Value>,
}

/// A validated experiment, as the coordinator stores it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ExperimentSpec {
    pub name: String,
    pub description: String,
    pub kind: JobKind,
    pub priority: i32,
    pub seed: u64,
    pub games_per_cell: u64,
    /// The base bot specs; grid values override their parameters per cell.
    pub bots: [String; 2],
    pub axes: Vec<Axis>,
    pub sprt: Option<Sprt>,
    pub artifacts: Artifacts,
}

/// One grid point.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CellSpec {
    pub index: u32,
    /// Axis name -> value at this point (empty without a grid).
    pub params: serde_json::Map<String, serde_json::Value>,
    /// The two bots, fully specified.
    pub bots: [String; 2],
}

impl ExperimentSpec {
    /// Parse and validate an experiment file's text.
    pub fn parse(text: &str) -> Result<Self, SpecError> {
        let f: File = toml::from_str(text).map_err(|e| {
            let msg = e.message().to_string();
            let line = e.span().map(|s| text.as_bytes()[..s.start.min(text.len())].iter().filter(|&&b| b == b'\n').count() + 1);
            SpecError { field: line.map_or("file".into(), |l| format!("line {l}")), message: msg }
        })?;
        let kind = match f.kind.as_str() {
            "match" => JobKind::Match,
            k => return err("kind", format!("unknown job kind `{k}` (known: match)")),
        };
        let name = f.name.trim().to_string();
        if name.is_empty() || name.len() > MAX_NAME {
            return err("name", format!("must be 1 to {MAX_NAME} characters"));
        }
        if f.games == 0 || f.games % 2 == 1 || f.games > MAX_GAMES_PER_CELL {
            return err("games", format!("must be even (deals are paired), 2 to {MAX_GAMES_PER_CELL}"));
        }
        let Some(m) = f.match_ else { return err("match", "a match experiment needs a [match] section with bot1 and bot2") };
        for (field, b) in [("match.bot1", &m.bot1), ("match.bot2", &m.bot2)] {
            BotSpec::parse(b).map_err(|e| SpecError { field: field.into(), message: e.message })?;
        }
        if let Some(s) = &f.sprt {
            let ok = |p: f64| p > 0.0 && p < 1.0;
            if !(ok(s.p0) && ok(s.p1) && s.p0 < s.p1) {
                return err("sprt", "need 0 < p0 < p1 < 1");
            }
            if !(s.alpha > 0.0 && s.alpha < 0.5 && s.beta > 0.0 && s.beta < 0.5) {
                return err("sprt", "alpha and beta must be between 0 and 0.5");
            }
        }
        for (field, a) in [("artifacts.lexicon", &f.artifacts.lexicon), ("artifacts.leaves", &f.artifacts.leaves), ("artifacts.winpct", &f.artifacts.winpct)] {
            if a.as_ref().is_some_and(|h| h.len() != 64 || !h.bytes().all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())) {
                return err(field, "must be a lowercase hex sha256");
            }
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
        let cells: u64 = axes.iter().map(|a| a.values.len() as u64).product();
        if cells > MAX_CELLS as u64 {
            return err("grid", format!("{cells} cells; at most {MAX_CELLS}"));
        }
        if cells * f.games > MAX_GAMES {
            return err("games", format!("{} games in all; at most {MAX_GAMES}", cells * f.games));
        }
        let spec = ExperimentSpec {
            name,
            description: f.description,
            kind,
            priority: f.priority.clamp(-100, 100),
            seed: f.seed,
            games_per_cell: f.games,
            bots: [m.bot1, m.bot2],
            axes,
            sprt: f.sprt,
            artifacts: f.artifacts,
        };
        spec.check_axes()?;
        // Building every cell validates every bot the grid makes.
        spec.cells()?;
        Ok(spec)
    }

    /// Check each axis value on its own, so that a bad one is reported against its axis.
    fn check_axes(&self) -> Result<(), SpecError> {
        let text = |v: &serde_json::Value| v.as_str().map_or_else(|| v.to_string(), str::to_string);
        let name_of = |spec: &str| spec.split_once(':').map_or(spec, |(n, _)| n).to_string();
        for a in &self.axes {
            let field = format!("grid.\"{}\"", a.name);
            let (who, param) = a.name.split_once('.').map_or((a.name.as_str(), None), |(w, p)| (w, Some(p)));
            let b = if who == "bot1" { 0 } else { 1 };
            // The bot names this parameter may apply to: the base bot's, or a whole-bot axis's.
            let names: Vec<String> = match self.axes.iter().find(|x| x.name == who) {
                Some(whole) => whole.values.iter().map(|v| name_of(&text(v))).collect(),
                None => vec![name_of(&self.bots[b])],
            };
            for v in &a.values {
                let specs: Vec<String> = match param {
                    None => vec![text(v)],
                    Some(p) => names.iter().map(|n| format!("{n}:{p}={}", text(v))).collect(),
                };
                for s in specs {
                    BotSpec::parse(&s).map_err(|e| SpecError { field: field.clone(), message: e.message })?;
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
            out.push(CellSpec { index: index as u32, params, bots });
        }
        Ok(out)
    }
}

/// `base` with this cell's values for `who` (`bot1`/`bot2`) applied, validated.
fn apply_params(base: &str, who: &str, axes: &[Axis], params: &serde_json::Map<String, serde_json::Value>) -> Result<String, SpecError> {
    let (mut name, rest) = base.split_once(':').map_or((base.to_string(), ""), |(n, r)| (n.to_string(), r));
    let mut kv: Vec<(String, String)> =
        rest.split(',').filter(|p| !p.is_empty()).map(|p| p.split_once('=').map_or((p.into(), String::new()), |(k, v)| (k.trim().into(), v.trim().into()))).collect();
    let text = |v: &serde_json::Value| v.as_str().map_or_else(|| v.to_string(), str::to_string);
    let mut field = String::from("match.") + who;
    for a in axes {
        let v = &params[&a.name];
        if a.name == who {
            // A whole-bot axis replaces the base spec.
            let s = text(v);
            let (n, r) = s.split_once(':').map_or((s.clone(), String::new()), |(n, r)| (n.to_string(), r.to_string()));
            name = n;
            kv = r.split(',').filter(|p| !p.is_empty()).map(|p| p.split_once('=').map_or((p.into(), String::new()), |(k, v)| (k.into(), v.into()))).collect();
            field = format!("grid.\"{}\"", a.name);
        } else if let Some(param) = a.name.strip_prefix(who).and_then(|p| p.strip_prefix('.')) {
            match kv.iter_mut().find(|(k, _)| k == param) {
                Some(e) => e.1 = text(v),
                None => kv.push((param.to_string(), text(v))),
            }
            field = format!("grid.\"{}\"", a.name);
        }
    }
    let spec = if kv.is_empty() { name } else { format!("{name}:{}", kv.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(",")) };
    BotSpec::parse(&spec).map_err(|e| SpecError { field, message: e.message })?;
    Ok(spec)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GRID: &str = r#"
name = "grid"
kind = "match"
games = 100
[match]
bot1 = "softmax:t=9"
bot2 = "static"
[grid]
"bot1.t" = [0.5, 1]
"bot1.bag" = [20, 40, 60]
"#;

    #[test]
    fn grid_makes_every_cell() {
        let spec = ExperimentSpec::parse(GRID).unwrap();
        let cells = spec.cells().unwrap();
        assert_eq!(cells.len(), 6);
        // Axes sort by name: bag first, t varies fastest.
        assert_eq!(cells[0].bots[0], "softmax:t=0.5,bag=20");
        assert_eq!(cells[1].bots[0], "softmax:t=1,bag=20");
        assert_eq!(cells[5].bots[0], "softmax:t=1,bag=60");
        assert_eq!(cells[5].params["bot1.bag"], 60);
        assert!(cells.iter().all(|c| c.bots[1] == "static"));
        assert_eq!(spec.seed, 1);
    }

    fn rejects(text: &str, field: &str) {
        let e = ExperimentSpec::parse(text).unwrap_err();
        assert!(e.field.contains(field), "expected field {field}, got {e}");
    }

    #[test]
    fn bad_files_name_the_field() {
        rejects(&GRID.replace("softmax:t=9", "minimax"), "match.bot1");
        rejects(&GRID.replace("\"bot1.bag\"", "\"bot1.depth\""), "grid.\"bot1.depth\"");
        rejects(&GRID.replace("[0.5, 1]", "[]"), "grid.\"bot1.t\"");
        rejects(&GRID.replace("[0.5, 1]", "[-1]"), "grid.\"bot1.t\"");
        rejects(&GRID.replace("games = 100", "games = 99"), "games");
        rejects(&GRID.replace("games = 100", "games = 100000000000"), "games");
        rejects(&GRID.replace("kind = \"match\"", "kind = \"endgame\""), "kind");
        rejects(&GRID.replace("kind = \"match\"", "kind = \"match\"\ncolour = 1"), "line 4");
        rejects("name = \"x\"\nkind = \"match\"\ngames = 2\n", "match");
        rejects(&format!("{GRID}\n[sprt]\np0 = 0.6\np1 = 0.5\nalpha = 0.05\nbeta = 0.05\n"), "sprt");
        let big = (0..40).map(|i| i.to_string()).collect::<Vec<_>>().join(",");
        rejects(&format!("{GRID}\"bot2\" = [\"greedy\"]\n\"bot1.x\" = [{big}]\n").replace("\"bot1.x\"", "\"bot2.t\""), "grid");
    }

    #[test]
    fn whole_bot_axis() {
        let text = "name = \"x\"\nkind = \"match\"\ngames = 2\n[match]\nbot1 = \"static\"\nbot2 = \"greedy\"\n[grid]\nbot2 = [\"greedy\", \"softmax:t=2\"]\n";
        let cells = ExperimentSpec::parse(text).unwrap().cells().unwrap();
        assert_eq!(cells[1].bots, ["static".to_string(), "softmax:t=2".to_string()]);
    }
}
