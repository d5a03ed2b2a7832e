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
/// Longest experiment description.
pub const MAX_DESCRIPTION: usize = 4000;

/// The kinds of work the spine carries: matches between bots (grids of them included), sets
/// of endgames to solve, and games counted for a win-probability table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum JobKind {
    Match,
    Endgame,
    /// Static-vs-static games whose positions make a win-probability table.
    Wintable,
    /// Games kept as training data (a CNN's): each deal played once, seats alternating.
    Selfplay,
}

impl JobKind {
    /// Every kind this build runs.
    pub const ALL: [JobKind; 4] = [JobKind::Match, JobKind::Endgame, JobKind::Wintable, JobKind::Selfplay];

    pub fn as_str(self) -> &'static str {
        match self {
            JobKind::Match => "match",
            JobKind::Endgame => "endgame",
            JobKind::Wintable => "wintable",
            JobKind::Selfplay => "selfplay",
        }
    }

    pub fn parse(s: &str) -> Option<JobKind> {
        Self::ALL.into_iter().find(|k| k.as_str() == s)
    }

    /// What one unit of a batch of this kind is, in words.
    pub fn unit(self) -> &'static str {
        match self {
            JobKind::Match => "pair of games (one deal, seats swapped)",
            JobKind::Endgame => "position",
            JobKind::Wintable => "two games (two deals, each played once)",
            JobKind::Selfplay => "two games (two deals, each played once, the seats alternating)",
        }
    }

    /// Whether its cells play two bots against each other (a match's, or a selfplay's for
    /// their logs), tallied as a [`crate::stats::MatchTally`].
    pub fn plays_bots(self) -> bool {
        matches!(self, JobKind::Match | JobKind::Selfplay)
    }

    /// Whether its batches play games (whose rate the workers page shows as games/s).
    pub fn plays_games(self) -> bool {
        match self {
            JobKind::Match | JobKind::Wintable | JobKind::Selfplay => true,
            JobKind::Endgame => false,
        }
    }

    /// What the dashboards count: games, or positions.
    pub fn shown(self) -> &'static str {
        if self.plays_games() { "games" } else { "positions" }
    }

    /// How many of [`JobKind::shown`] one unit is.
    pub fn shown_per_unit(self) -> u64 {
        match self {
            JobKind::Match | JobKind::Wintable | JobKind::Selfplay => 2,
            JobKind::Endgame => 1,
        }
    }

    /// Why a cell of this kind finished, from its target in units.
    pub fn finished(self, target: u64) -> String {
        match self {
            JobKind::Match => format!("reached its target of {} games", 2 * target),
            JobKind::Endgame => format!("all {target} positions solved"),
            JobKind::Wintable => format!("all {} games played; table fitted", 2 * target),
            JobKind::Selfplay => format!("all {} games played and logged", 2 * target),
        }
    }

    /// Units a worker that has not run this kind yet is given per thread: a first batch that
    /// finishes quickly and measures the worker. An endgame position can take its whole time
    /// limit, so a first endgame batch is one position.
    pub fn first_batch_units(self, threads: u64) -> u64 {
        match self {
            JobKind::Match | JobKind::Wintable | JobKind::Selfplay => threads.max(1),
            JobKind::Endgame => 1,
        }
    }
}

/// Most positions an endgame experiment may list or generate.
pub const MAX_POSITIONS: u64 = 100_000;

/// Where an endgame experiment's positions come from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PositionSource {
    /// CGPs given in the file.
    Listed(Vec<String>),
    /// Position `i` is `engine::endgame::sets::bag_emptied(seed, i, bag 0, extra)`: a
    /// static-vs-static game at the turn its bag emptied, `extra` static moves later. Workers
    /// generate them; indices whose game ended first are reported as skipped.
    Generated { count: u64, extra: usize },
}

/// An endgame experiment: positions, solver limits, and the share solved twice.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EndgameSpec {
    pub source: PositionSource,
    /// Deepest search; `None`: until solved.
    pub plies: Option<u8>,
    /// Time limit per position.
    pub time_ms: u64,
    /// Fraction of positions solved a second time, by a different worker.
    pub cross_check: f64,
}

impl EndgameSpec {
    pub fn count(&self) -> u64 {
        match &self.source {
            PositionSource::Listed(p) => p.len() as u64,
            PositionSource::Generated { count, .. } => *count,
        }
    }

    /// Whether position `index` is solved twice (a fixed choice from the experiment's seed).
    pub fn is_checked(&self, seed: u64, index: u64) -> bool {
        (engine::rng::derive(seed ^ 0xC4EC_C4EC, index) % 1_000_000) < (self.cross_check * 1_000_000.0).round() as u64
    }

    /// How many positions are solved twice.
    pub fn checks(&self, seed: u64) -> u64 {
        (0..self.count()).filter(|&i| self.is_checked(seed, i)).count() as u64
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
    games: Option<u64>,
    #[serde(rename = "match")]
    match_: Option<MatchSection>,
    endgame: Option<EndgameSection>,
    #[serde(default)]
    grid: BTreeMap<String, Vec<toml::Value>>,
    sprt: Option<Sprt>,
    #[serde(default)]
    artifacts: Artifacts,
    /// Hand the batches only to workers whose CNN inference runs on a GPU.
    #[serde(default)]
    gpu: bool,
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

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EndgameSection {
    #[serde(default)]
    positions: Vec<String>,
    generate: Option<GenerateSection>,
    plies: Option<u8>,
    /// Seconds per position.
    time: Option<f64>,
    cross_check: Option<f64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GenerateSection {
    count: u64,
    #[serde(default)]
    extra: usize,
}

/// Artifacts an experiment pins by sha256; unset ones are the coordinator's defaults.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Artifacts {
    pub lexicon: Option<String>,
    pub leaves: Option<String>,
    #[serde(default)]
    pub distribution: Option<String>,
    #[serde(default)]
    pub layout: Option<String>,
    pub winpct: Option<String>,
}

impl Artifacts {
    /// The pinned sha256 for an artifact role, if any.
    pub fn pinned(&self, role: &str) -> Option<&str> {
        match role {
            "lexicon" => self.lexicon.as_deref(),
            "leaves" => self.leaves.as_deref(),
            "distribution" => self.distribution.as_deref(),
            "layout" => self.layout.as_deref(),
            "winpct" => self.winpct.as_deref(),
            _ => None,
        }
    }
}

/// One grid axis: a parameter and the values it takes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Axis {
    pub name: String,
    pub values: Vec<serde_json::Value>,
}

/// A validated experiment, as the coordinator stores it: what every kind has, and the kind
/// with what only it has.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ExperimentSpec {
    pub name: String,
    pub description: String,
    pub priority: i32,
    pub seed: u64,
    pub artifacts: Artifacts,
    /// Only workers whose CNN inference runs on a GPU are given its batches.
    #[serde(default)]
    pub gpu: bool,
    /// Stored flat beside the fields above, tagged by `"kind"`.
    #[serde(flatten)]
    pub kind: ExperimentKind,
}

/// What an experiment asks of the volunteers. Adding a job kind is a variant here (and in
/// [`JobKind`], the protocol's `Job` and `JobResult`), then the places the compiler points at.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum ExperimentKind {
    /// Bots play each other, optionally over a grid of their parameters.
    Match(MatchSpec),
    /// A set of endgames solved exactly, some twice by different workers.
    Endgame(EndgameSpec),
    /// Static-vs-static games counted into a win-probability table.
    Wintable(WintableSpec),
    /// Games generated for their logs (a CNN's training data): a match's bots and grid, each
    /// deal played once with the seats alternating (more positions per CPU-second than paired
    /// deals give, none repeated), no SPRT: every cell plays its games.
    Selfplay(MatchSpec),
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

/// A win-table experiment: how many static-vs-static games (each deal played once).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WintableSpec {
    pub games: u64,
}

/// One grid point.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CellSpec {
    pub index: u32,
    /// Axis name -> value at this point (empty without a grid).
    pub params: serde_json::Map<String, serde_json::Value>,
    /// A match cell's two bots, fully specified.
    pub bots: Option<[String; 2]>,
    /// Units of work ([`JobKind::unit`]) the cell needs.
    pub target: u64,
    /// Whether the queue carves batches from `0..target` as workers claim; if not, the cell's
    /// batches are queued as other results arrive (an endgame's cross-checks).
    pub carved: bool,
}

impl ExperimentKind {
    pub fn job_kind(&self) -> JobKind {
        match self {
            ExperimentKind::Match(_) => JobKind::Match,
            ExperimentKind::Endgame(_) => JobKind::Endgame,
            ExperimentKind::Wintable(_) => JobKind::Wintable,
            ExperimentKind::Selfplay(_) => JobKind::Selfplay,
        }
    }

    /// The bots and grid of an experiment whose cells play games between two bots.
    pub fn matchup(&self) -> Option<&MatchSpec> {
        match self {
            ExperimentKind::Match(m) | ExperimentKind::Selfplay(m) => Some(m),
            ExperimentKind::Endgame(_) | ExperimentKind::Wintable(_) => None,
        }
    }

    /// The sequential test that may stop a cell early (matches only).
    pub fn sprt(&self) -> Option<&Sprt> {
        match self {
            ExperimentKind::Match(m) => m.sprt.as_ref(),
            ExperimentKind::Endgame(_) | ExperimentKind::Wintable(_) | ExperimentKind::Selfplay(_) => None,
        }
    }

    /// The grid's axes (none but a match's or a self-play's).
    pub fn axes(&self) -> &[Axis] {
        self.matchup().map_or(&[], |m| &m.axes)
    }
}

impl ExperimentSpec {
    /// Parse and validate an experiment file's text.
    pub fn parse(text: &str) -> Result<Self, SpecError> {
        let f: File = toml::from_str(text).map_err(|e| {
            let msg = e.message().to_string();
            let line = e
                .span()
                .map(|s| text.as_bytes()[..s.start.min(text.len())].iter().filter(|&&b| b == b'\n').count() + 1);
            SpecError { field: line.map_or("file".into(), |l| format!("line {l}")), message: msg }
        })?;
        let Some(kind) = JobKind::parse(&f.kind) else {
            let known: Vec<&str> = JobKind::ALL.iter().map(|k| k.as_str()).collect();
            return err("kind", format!("unknown job kind `{}` (known: {})", f.kind, known.join(", ")));
        };
        let name = f.name.trim().to_string();
        if name.is_empty() || name.len() > MAX_NAME {
            return err("name", format!("must be 1 to {MAX_NAME} characters"));
        }
        if f.description.len() > MAX_DESCRIPTION {
            return err("description", format!("at most {MAX_DESCRIPTION} bytes"));
        }
        for (field, a) in [
            ("artifacts.lexicon", &f.artifacts.lexicon),
            ("artifacts.leaves", &f.artifacts.leaves),
            ("artifacts.distribution", &f.artifacts.distribution),
            ("artifacts.layout", &f.artifacts.layout),
            ("artifacts.winpct", &f.artifacts.winpct),
        ] {
            if a.as_ref()
                .is_some_and(|h| h.len() != 64 || !h.bytes().all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()))
            {
                return err(field, "must be a lowercase hex sha256");
            }
        }
        if f.gpu && !matches!(kind, JobKind::Match | JobKind::Selfplay) {
            return err("gpu", "only match and selfplay experiments (with a CNN bot) run on GPUs");
        }
        match kind {
            JobKind::Match | JobKind::Selfplay => Self::parse_match(f, name, kind),
            JobKind::Endgame => Self::parse_endgame(f, name),
            JobKind::Wintable => Self::parse_wintable(f, name),
        }
    }

    /// A match, or a self-play experiment (`selfplay`: the same bots and grid, each deal
    /// played once, no SPRT).
    fn parse_match(f: File, name: String, kind: JobKind) -> Result<Self, SpecError> {
        let what = kind.as_str();
        if f.endgame.is_some() {
            return err("endgame", "only an endgame experiment takes an [endgame] section");
        }
        if kind == JobKind::Selfplay && f.sprt.is_some() {
            return err("sprt", "a selfplay experiment plays every game it asks for: it takes no [sprt]");
        }
        let Some(games) = f.games else { return err("games", format!("a {what} experiment needs `games` (per cell)")) };
        if games == 0 || games % 2 == 1 || games > MAX_GAMES_PER_CELL {
            let why = if kind == JobKind::Match { "deals are paired" } else { "batches deal two games at a time" };
            return err("games", format!("must be even ({why}), 2 to {MAX_GAMES_PER_CELL}"));
        }
        let Some(m) = f.match_ else {
            return err("match", format!("a {what} experiment needs a [match] section with bot1 and bot2"));
        };
        for (field, b) in [("match.bot1", &m.bot1), ("match.bot2", &m.bot2)] {
            volunteer_bot(b).map_err(|message| SpecError { field: field.into(), message })?;
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
        Ok(ExperimentSpec {
            name,
            description: f.description,
            priority: f.priority.clamp(-100, 100),
            seed: f.seed,
            artifacts: f.artifacts,
            gpu: f.gpu,
            kind: if kind == JobKind::Match { ExperimentKind::Match(m) } else { ExperimentKind::Selfplay(m) },
        })
    }

    /// A win-probability table: `games` static-vs-static games (each deal played once), whose
    /// every position is counted by tiles unseen and spread; the coordinator fits the table
    /// when the last batch is in.
    fn parse_wintable(f: File, name: String) -> Result<Self, SpecError> {
        for (field, present) in [
            ("match", f.match_.is_some()),
            ("grid", !f.grid.is_empty()),
            ("sprt", f.sprt.is_some()),
            ("endgame", f.endgame.is_some()),
        ] {
            if present {
                return err(field, "a wintable experiment takes only `games` (static-vs-static games) and a seed");
            }
        }
        let Some(games) = f.games else { return err("games", "a wintable experiment needs `games`") };
        if games == 0 || games % 2 == 1 || games > MAX_GAMES_PER_CELL {
            return err("games", format!("must be even, 2 to {MAX_GAMES_PER_CELL}"));
        }
        Ok(ExperimentSpec {
            name,
            description: f.description,
            priority: f.priority.clamp(-100, 100),
            seed: f.seed,
            artifacts: f.artifacts,
            gpu: false,
            kind: ExperimentKind::Wintable(WintableSpec { games }),
        })
    }

    fn parse_endgame(f: File, name: String) -> Result<Self, SpecError> {
        for (field, present) in [
            ("match", f.match_.is_some()),
            ("grid", !f.grid.is_empty()),
            ("sprt", f.sprt.is_some()),
            ("games", f.games.is_some()),
        ] {
            if present {
                return err(
                    field,
                    "an endgame experiment takes no `games`, [match], [grid] or [sprt]; its size is its positions",
                );
            }
        }
        let Some(e) = f.endgame else {
            return err("endgame", "an endgame experiment needs an [endgame] section with `positions` or `generate`");
        };
        let source = match (e.positions.is_empty(), e.generate) {
            (false, Some(_)) => return err("endgame", "give `positions` or `generate`, not both"),
            (true, None) => {
                return err("endgame", "give `positions` (a list of CGPs) or `generate = { count = N, extra = 0 }`");
            }
            (true, Some(g)) => {
                if g.count == 0 || g.count > MAX_POSITIONS {
                    return err("endgame.generate.count", format!("1 to {MAX_POSITIONS} positions"));
                }
                if g.extra > 40 {
                    return err("endgame.generate.extra", "at most 40 moves after the bag empties");
                }
                PositionSource::Generated { count: g.count, extra: g.extra }
            }
            (false, None) => {
                if e.positions.len() as u64 > MAX_POSITIONS {
                    return err(
                        "endgame.positions",
                        format!("{} positions; at most {MAX_POSITIONS}", e.positions.len()),
                    );
                }
                // The positions are read against the experiment's tile distribution, which
                // the coordinator knows once it has resolved the artifacts: see
                // `ExperimentSpec::check_positions`.
                PositionSource::Listed(e.positions)
            }
        };
        if e.plies == Some(0) {
            return err("endgame.plies", "at least 1");
        }
        let time = e.time.unwrap_or(60.0);
        if !(time.is_finite() && time > 0.0 && time <= 3600.0) {
            return err("endgame.time", "seconds per position, more than 0 and at most 3600");
        }
        let cross_check = e.cross_check.unwrap_or(0.1);
        if !(0.0..=1.0).contains(&cross_check) {
            return err("endgame.cross_check", "a fraction from 0 to 1");
        }
        let spec =
            EndgameSpec { source, plies: e.plies, time_ms: (time * 1000.0).round().max(1.0) as u64, cross_check };
        Ok(ExperimentSpec {
            name,
            description: f.description,
            priority: f.priority.clamp(-100, 100),
            seed: f.seed,
            artifacts: f.artifacts,
            gpu: false,
            kind: ExperimentKind::Endgame(spec),
        })
    }

    /// Check an endgame experiment's listed positions against the tile distribution it runs
    /// with: each must parse, have an empty bag, and not be over. Other kinds pass.
    pub fn check_positions(&self, dist: &engine::tiles::Distribution) -> Result<(), SpecError> {
        let ExperimentKind::Endgame(EndgameSpec { source: PositionSource::Listed(positions), .. }) = &self.kind else {
            return Ok(());
        };
        for (i, cgp) in positions.iter().enumerate() {
            let field = format!("endgame.positions[{i}]");
            let pos = engine::cgp::Position::parse(cgp, dist)
                .map_err(|d| SpecError { field: field.clone(), message: d.to_string() })?;
            let bag = pos.bag_tiles(dist).len();
            if bag != 0 {
                return err(field, format!("the bag holds {bag} tiles; an endgame needs it empty"));
            }
            if pos.racks.iter().any(|r| r.is_empty()) || pos.scoreless >= engine::game::MAX_SCORELESS_TURNS {
                return err(field, "the game is already over");
            }
        }
        Ok(())
    }

    /// The cells to store: a match's grid points; an endgame experiment's two passes (0 solves
    /// every position, 1 solves the cross-checked ones again); a win table's one cell.
    pub fn cells(&self) -> Result<Vec<CellSpec>, SpecError> {
        let pass = |index: u32, name: &str, target: u64, carved: bool| {
            let mut params = serde_json::Map::new();
            params.insert("pass".into(), serde_json::Value::from(name));
            CellSpec { index, params, bots: None, target, carved }
        };
        Ok(match &self.kind {
            ExperimentKind::Match(m) | ExperimentKind::Selfplay(m) => m.cells()?,
            ExperimentKind::Endgame(e) => {
                vec![pass(0, "solve", e.count(), true), pass(1, "check", e.checks(self.seed), false)]
            }
            ExperimentKind::Wintable(w) => vec![CellSpec {
                index: 0,
                params: serde_json::Map::new(),
                bots: None,
                target: w.games / 2,
                carved: true,
            }],
        })
    }
}

impl MatchSpec {
    /// Check each axis value on its own, so that a bad one is reported against its axis.
    fn check_axes(&self) -> Result<(), SpecError> {
        let text = |v: &serde_json::Value| v.as_str().map_or_else(|| v.to_string(), str::to_string);
        let name_of = |spec: &str| spec.split_once(':').map_or(spec, |(n, _)| n).to_string();
        for a in &self.axes {
            let field = format!("grid.\"{}\"", a.name);
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
                        .map(|base| match base.split_once(':') {
                            Some((n, rest)) if !rest.is_empty() => format!("{n}:{rest},{p}={}", text(v)),
                            _ => format!("{}:{p}={}", name_of(base), text(v)),
                        })
                        .collect(),
                };
                for s in specs {
                    volunteer_bot(&s).map_err(|message| SpecError { field: field.clone(), message })?;
                }
            }
        }
        Ok(())
    }

    /// The grid points in row-major order (the last axis varies fastest).
    fn cells(&self) -> Result<Vec<CellSpec>, SpecError> {
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
    let (mut name, rest) = base.split_once(':').map_or((base.to_string(), ""), |(n, r)| (n.to_string(), r));
    let mut kv: Vec<(String, String)> = rest
        .split(',')
        .filter(|p| !p.is_empty())
        .map(|p| p.split_once('=').map_or((p.into(), String::new()), |(k, v)| (k.trim().into(), v.trim().into())))
        .collect();
    let text = |v: &serde_json::Value| v.as_str().map_or_else(|| v.to_string(), str::to_string);
    let mut field = String::from("match.") + who;
    for a in axes {
        let v = &params[&a.name];
        if a.name == who {
            // A whole-bot axis replaces the base spec.
            let s = text(v);
            let (n, r) = s.split_once(':').map_or((s.clone(), String::new()), |(n, r)| (n.to_string(), r.to_string()));
            name = n;
            kv = r
                .split(',')
                .filter(|p| !p.is_empty())
                .map(|p| p.split_once('=').map_or((p.into(), String::new()), |(k, v)| (k.into(), v.into())))
                .collect();
            field = format!("grid.\"{}\"", a.name);
        } else if let Some(param) = a.name.strip_prefix(who).and_then(|p| p.strip_prefix('.')) {
            match kv.iter_mut().find(|(k, _)| k == param) {
                Some(e) => e.1 = text(v),
                None => kv.push((param.to_string(), text(v))),
            }
            field = format!("grid.\"{}\"", a.name);
        }
    }
    let spec = if kv.is_empty() {
        name
    } else {
        format!("{name}:{}", kv.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(","))
    };
    volunteer_bot(&spec).map_err(|message| SpecError { field, message })?;
    Ok(spec)
}

/// A bot volunteers can play: any bot, but a CNN bot's model is named by the sha256 of an
/// artifact (volunteers fetch it from the coordinator), never by a path.
fn volunteer_bot(spec: &str) -> Result<BotSpec, String> {
    let bot = BotSpec::parse(spec).map_err(|e| e.message)?;
    match bot.model() {
        Some(model) if !is_sha256(model) => Err(format!(
            "`{spec}`: volunteers fetch models by sha256: register the file with `coordinator artifact --role model {model}` and name the sha256 it prints (model=SHA256)"
        )),
        _ => Ok(bot),
    }
}

/// Whether `s` is a sha256 as artifacts are named: 64 lowercase hex digits.
pub fn is_sha256(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c))
}

/// The sha256s of the value nets the cells' bots play with (CNN bots', simulating bots' for
/// their rollouts), each once, in order.
pub fn models(cells: &[CellSpec]) -> Vec<String> {
    let mut out: Vec<String> = cells
        .iter()
        .flat_map(|c| c.bots.iter().flatten())
        .filter_map(|b| BotSpec::parse(b).ok()?.model().map(str::to_string))
        .collect();
    out.sort();
    out.dedup();
    out
}

/// What a worker must be able to do to run an experiment's batches ([`crate::protocol::Capabilities::names`]):
/// `onnx` where a bot is a CNN bot, `cuda` too where the experiment asks for a GPU.
pub fn needs(spec: &ExperimentSpec, cells: &[CellSpec]) -> Vec<&'static str> {
    let mut out = Vec::new();
    if !models(cells).is_empty() {
        out.push(crate::protocol::ONNX);
    }
    if spec.gpu {
        out.push(crate::protocol::CUDA);
    }
    out
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
        let bot = |i: usize, b: usize| cells[i].bots.as_ref().unwrap()[b].clone();
        assert_eq!(bot(0, 0), "softmax:t=0.5,bag=20");
        assert_eq!(bot(1, 0), "softmax:t=1,bag=20");
        assert_eq!(bot(5, 0), "softmax:t=1,bag=60");
        assert_eq!(cells[5].params["bot1.bag"], 60);
        assert!(cells.iter().all(|c| bot(c.index as usize, 1) == "static" && c.target == 50 && c.carved));
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
        rejects(&GRID.replace("kind = \"match\"", "kind = \"endgame\""), "match");
        rejects(&GRID.replace("kind = \"match\"", "kind = \"sudoku\""), "kind");
        rejects(&GRID.replace("kind = \"match\"", "kind = \"match\"\ncolour = 1"), "line 4");
        rejects("name = \"x\"\nkind = \"match\"\ngames = 2\n", "match");
        let e = ExperimentSpec::parse(&GRID.replace("bot2 = \"static\"", "bot2 = \"cnn:model=m.onnx\"")).unwrap_err();
        assert!(e.field == "match.bot2" && e.message.contains("coordinator artifact --role model m.onnx"), "{e}");
        rejects(&GRID.replace("kind = \"match\"", "kind = \"match\"\ngpu = true"), "gpu");
        rejects("name = \"w\"\nkind = \"wintable\"\ngames = 2\ngpu = true\n", "gpu");
        rejects(&format!("{GRID}\n[sprt]\np0 = 0.6\np1 = 0.5\nalpha = 0.05\nbeta = 0.05\n"), "sprt");
        rejects(
            &GRID.replace("name = \"grid\"", &format!("name = \"grid\"\ndescription = \"{}\"", "x".repeat(5000))),
            "description",
        );
        // Five axes of 2^13 values: 2^65 cells, which must not wrap to 2.
        let wide = (0..8192).map(|i| i.to_string()).collect::<Vec<_>>().join(",");
        let axes: String = ["t", "bag", "a", "b", "c"].iter().map(|p| format!("\"bot1.{p}\" = [{wide}]\n")).collect();
        let e = ExperimentSpec::parse(
            &GRID.replace("[grid]\n\"bot1.t\" = [0.5, 1]\n\"bot1.bag\" = [20, 40, 60]\n", &format!("[grid]\n{axes}")),
        )
        .unwrap_err();
        assert!(e.field == "grid" || e.field.starts_with("grid."), "{e}");
        let big = (0..40).map(|i| i.to_string()).collect::<Vec<_>>().join(",");
        rejects(
            &format!("{GRID}\"bot2\" = [\"greedy\"]\n\"bot1.x\" = [{big}]\n").replace("\"bot1.x\"", "\"bot2.t\""),
            "grid",
        );
    }

    #[test]
    fn cnn_bots_name_their_models_and_what_they_need() {
        let (a, b) = ("a".repeat(64), "b".repeat(64));
        let text = format!(
            "name = \"x\"\nkind = \"match\"\ngames = 2\n[match]\nbot1 = \"cnn:model={b}\"\nbot2 = \"static\"\n[grid]\n\"bot1.model\" = [\"{b}\", \"{a}\"]\n"
        );
        let spec = ExperimentSpec::parse(&text).unwrap();
        let cells = spec.cells().unwrap();
        assert_eq!(models(&cells), [a.clone(), b.clone()]);
        assert_eq!(needs(&spec, &cells), ["onnx"]);
        let spec = ExperimentSpec::parse(&text.replace("games = 2", "games = 2\ngpu = true")).unwrap();
        assert_eq!(needs(&spec, &spec.cells().unwrap()), ["onnx", "cuda"]);
        let plain = ExperimentSpec::parse(GRID).unwrap();
        assert!(needs(&plain, &plain.cells().unwrap()).is_empty());
        // A simulating bot's rollout net is a model too.
        let sim = ExperimentSpec::parse(&GRID.replace("bot2 = \"static\"", &format!("bot2 = \"sim:k=3,model={a}\"")))
            .unwrap();
        assert_eq!(models(&sim.cells().unwrap()), std::slice::from_ref(&a));
        rejects(&GRID.replace("bot2 = \"static\"", "bot2 = \"sim:model=net.onnx\""), "match.bot2");
        // A model axis of paths is refused too, naming the axis.
        rejects(&text.replace(&format!("\"{a}\""), "\"net.onnx\""), "grid.\"bot1.model\"");
        rejects(&text.replace(&b, &b.to_uppercase()), "match.bot1");
    }

    #[test]
    fn whole_bot_axis() {
        let text = "name = \"x\"\nkind = \"match\"\ngames = 2\n[match]\nbot1 = \"static\"\nbot2 = \"greedy\"\n[grid]\nbot2 = [\"greedy\", \"softmax:t=2\"]\n";
        let cells = ExperimentSpec::parse(text).unwrap().cells().unwrap();
        assert_eq!(cells[1].bots, Some(["static".to_string(), "softmax:t=2".to_string()]));
    }

    #[test]
    fn endgame_experiments_validate_their_positions() {
        let base = "name = \"e\"\nkind = \"endgame\"\nseed = 3\n[endgame]\n";
        let spec = ExperimentSpec::parse(&format!("{base}generate = {{ count = 50, extra = 2 }}\ncross_check = 0.2\n"))
            .unwrap();
        let ExperimentKind::Endgame(e) = &spec.kind else { panic!("an endgame experiment: {spec:?}") };
        assert_eq!((e.count(), e.time_ms), (50, 60_000));
        let checks = e.checks(3);
        assert!((3..=20).contains(&checks), "{checks} of 50 at 0.2");
        let cells = spec.cells().unwrap();
        let plan: Vec<_> = cells.iter().map(|c| (c.target, c.carved, c.bots.is_none())).collect();
        assert_eq!(plan, [(50, true, true), (checks, false, true)]);
        let cgp = "15/15/15/15/15/15/15/15/15/15/15/15/15/15/15";
        let english = engine::tiles::Distribution::english();
        let bad_position = |text: String| {
            let e = ExperimentSpec::parse(&text).unwrap().check_positions(&english).unwrap_err();
            assert_eq!(e.field, "endgame.positions[0]", "{e}");
        };
        bad_position(format!("{base}positions = [\"{cgp} AB/CD 0/0 0\"]\n"));
        bad_position(format!("{base}positions = [\"nonsense\"]\n"));
        rejects(&format!("{base}generate = {{ count = 0 }}\n"), "endgame.generate.count");
        rejects(&format!("{base}generate = {{ count = 5 }}\ncross_check = 2\n"), "endgame.cross_check");
        rejects(&format!("{base}generate = {{ count = 5 }}\ntime = -1\n"), "endgame.time");
        rejects(base, "endgame");
        rejects(&format!("games = 4\n{base}generate = {{ count = 5 }}\n"), "games");
    }

    #[test]
    fn wintable_experiments_take_games_and_a_seed() {
        let spec = ExperimentSpec::parse("name = \"t\"\nkind = \"wintable\"\ngames = 40000\nseed = 2026\n").unwrap();
        assert_eq!(spec.kind, ExperimentKind::Wintable(WintableSpec { games: 40000 }));
        assert_eq!(spec.cells().unwrap().iter().map(|c| c.target).collect::<Vec<_>>(), [20000]);
        rejects("name = \"t\"\nkind = \"wintable\"\n", "games");
        rejects("name = \"t\"\nkind = \"wintable\"\ngames = 3\n", "games");
        rejects(
            "name = \"t\"\nkind = \"wintable\"\ngames = 4\n[match]\nbot1 = \"static\"\nbot2 = \"static\"\n",
            "match",
        );
    }

    #[test]
    fn selfplay_experiments_are_matches_without_an_sprt() {
        let text = GRID.replace("kind = \"match\"", "kind = \"selfplay\"");
        let spec = ExperimentSpec::parse(&text).unwrap();
        let ExperimentKind::Selfplay(m) = &spec.kind else { panic!("a selfplay experiment: {spec:?}") };
        assert_eq!(spec.kind.job_kind(), JobKind::Selfplay);
        assert_eq!((m.games_per_cell, spec.kind.axes().len(), spec.kind.sprt()), (100, 2, None));
        assert_eq!(spec.cells().unwrap(), ExperimentSpec::parse(GRID).unwrap().cells().unwrap());
        rejects(&format!("{text}\n[sprt]\np0 = 0.5\np1 = 0.55\nalpha = 0.05\nbeta = 0.05\n"), "sprt");
        rejects(&text.replace("games = 100", "games = 3"), "games");
        rejects("name = \"s\"\nkind = \"selfplay\"\ngames = 2\n", "match");
    }

    #[test]
    fn stored_specs_are_flat_and_tagged_by_kind() {
        for text in [
            GRID.to_string(),
            GRID.replace("kind = \"match\"", "kind = \"selfplay\""),
            "name = \"t\"\nkind = \"wintable\"\ngames = 4\n".into(),
            "name = \"e\"\nkind = \"endgame\"\n[endgame]\ngenerate = { count = 5 }\nplies = 3\n".into(),
        ] {
            let spec = ExperimentSpec::parse(&text).unwrap();
            let json = serde_json::to_value(&spec).unwrap();
            assert_eq!(json["kind"], spec.kind.job_kind().as_str());
            assert_eq!(json["seed"], 1);
            assert_eq!(serde_json::from_value::<ExperimentSpec>(json).unwrap(), spec);
        }
    }
}
