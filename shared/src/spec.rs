//! What every experiment file has, whatever its kind: the file as written ([`File`]), the
//! limits, the grid's parts ([`Axis`], [`CellSpec`]), pinned [`Artifacts`], and the error that
//! names a field ([`SpecError`]). Each kind reads its own fields of the file
//! (`kinds::Kind::parse`).

use crate::stats::Sprt;
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
/// Priorities run from `-MAX_PRIORITY` to `MAX_PRIORITY` (higher is served first).
pub const MAX_PRIORITY: i32 = 100;

/// A rejected experiment: which field, and why.
#[derive(Debug, thiserror::Error, PartialEq)]
#[error("{field}: {message}")]
pub struct SpecError {
    pub field: String,
    pub message: String,
}

/// `Err` of a [`SpecError`] naming `field`.
pub fn err<T>(field: impl Into<String>, message: impl Into<String>) -> Result<T, SpecError> {
    Err(SpecError { field: field.into(), message: message.into() })
}

/// An experiment file as written (TOML). Sections are named for what they hold, not for a
/// kind: a selfplay experiment has a `[match]` too.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct File {
    pub name: String,
    pub kind: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub priority: i32,
    #[serde(default = "default_seed")]
    pub seed: u64,
    pub games: Option<u64>,
    #[serde(rename = "match")]
    pub match_: Option<MatchSection>,
    pub endgame: Option<EndgameSection>,
    #[serde(default)]
    pub grid: BTreeMap<String, Vec<toml::Value>>,
    pub sprt: Option<Sprt>,
    pub generations: Option<GenerationsSection>,
    pub tune: Option<TuneSection>,
    #[serde(default)]
    pub artifacts: Artifacts,
    /// Hand the batches only to workers whose CNN inference runs on a GPU.
    #[serde(default)]
    pub gpu: bool,
}

fn default_seed() -> u64 {
    1
}

impl File {
    /// Refuse every section or field of `present` that is there: `(field, present)` pairs.
    pub fn refuse(present: &[(&str, bool)], why: &str) -> Result<(), SpecError> {
        match present.iter().find(|(_, there)| *there) {
            Some((field, _)) => err(*field, why),
            None => Ok(()),
        }
    }
}

/// `[match]`: the two bots.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MatchSection {
    pub bot1: String,
    pub bot2: String,
}

/// `[endgame]`: positions listed or generated, and the solver's limits.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EndgameSection {
    #[serde(default)]
    pub positions: Vec<String>,
    pub generate: Option<GenerateSection>,
    pub plies: Option<u8>,
    /// Seconds per position.
    pub time: Option<f64>,
    pub cross_check: Option<f64>,
}

/// `[endgame] generate = { count, extra }`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GenerateSection {
    pub count: u64,
    #[serde(default)]
    pub extra: usize,
}

/// `[generations]`: a leave-table run's generations (`kinds::leaves`).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GenerationsSection {
    pub count: u32,
    /// Self-play games each generation's table is fitted from.
    pub games: u64,
    /// Games of each generation's table (its static bot) against greedy, on paired deals.
    #[serde(default)]
    pub rate_games: u64,
    #[serde(default = "start_none")]
    pub start: String,
    /// At most this many games of each new table against the table the run keeps, under the
    /// experiment's `[sprt]` (a gate); no gate when 0.
    #[serde(default)]
    pub gate_games: u64,
}

fn start_none() -> String {
    "none".into()
}

/// `[tune]`: a tuning run's bot, reference and parameters (`kinds::tune`).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TuneSection {
    /// The bot tuned, with its other parameters as they stay.
    pub bot: String,
    /// The reference bot both perturbed bots play.
    pub against: String,
    pub iterations: u32,
    /// Games each perturbed bot plays against the reference per iteration (paired deals).
    pub games: u64,
    #[serde(default = "spsa")]
    pub method: String,
    /// CMA-ES's points per iteration (default `4 + floor(3 ln n)`).
    pub population: Option<u32>,
    pub params: BTreeMap<String, ParamSection>,
}

fn spsa() -> String {
    "spsa".into()
}

/// `[tune.params.NAME]`: a parameter of the bot, its start and bounds, and its gains.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ParamSection {
    pub start: f64,
    pub min: f64,
    pub max: f64,
    /// The perturbation at the first iteration, SPSA's, or CMA-ES's first spread (default a
    /// tenth of the range).
    pub c: Option<f64>,
    /// The step gain (default: a 10-point score edge moves the value by `c` at first).
    pub a: Option<f64>,
    /// Values are rounded to whole numbers (a count, such as a sim bot's `k`).
    #[serde(default)]
    pub integer: bool,
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

/// One grid point.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CellSpec {
    pub index: u32,
    /// Axis name -> value at this point (empty without a grid).
    pub params: serde_json::Map<String, serde_json::Value>,
    /// A match cell's two bots, fully specified.
    pub bots: Option<[String; 2]>,
    /// Units of work (`JobKind::unit`) the cell needs.
    pub target: u64,
    /// Whether the queue carves batches from `0..target` as workers claim; if not, the cell's
    /// batches are queued as other results arrive (an endgame's cross-checks).
    pub carved: bool,
    /// Whether the cell waits for what an earlier cell makes (a generation's table) before it
    /// runs: its kind starts it (`cells.status` `waiting`, then `running`).
    pub waits: bool,
}

impl CellSpec {
    /// The one cell of an experiment without a grid, of `target` units.
    pub fn single(target: u64) -> CellSpec {
        CellSpec { index: 0, params: serde_json::Map::new(), bots: None, target, carved: true, waits: false }
    }
}

/// Whether `s` is a sha256 as artifacts are named: 64 lowercase hex digits.
pub fn is_sha256(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c))
}
