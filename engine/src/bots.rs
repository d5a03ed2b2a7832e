//! Bots: a `Player` picks a move for the player on turn. Bots are values built from a spec
//! string (`greedy`, `static`, `softmax:t=1.0,bag=60`, `sim:k=15,plies=2,iterations=300`) so
//! that experiments can name them.
//!
//! # Design notes
//!
//! `Player` trait (`knows`, `choose` from a `View`, `decide` from a `Game`), `BotSpec` (`greedy`,
//! `static`, `softmax:t=..,bag=..`, `sim:k=..,plies=..,iterations=..,stop=..,ms=..` plus
//! `infer=sim|static|flat,tau=..,infer_iters=..,infer_k=..,infer_plies=..,max_leaves=.., seq=0|1`
//! or `oracle=leave|rack`, and `model=..` for a rollout net; static and sim also take `endgame=MS`;
//! `cnn:model=..,k=..`; any bot but greedy takes `leaves=..`, a table of its own; `BOTS` lists them
//! for help and errors), the bots. The CNN bot's net is a `Valuer` and a bot's own table a `Klv`
//! that `build_with` gets from its `Named` loaders (the worker's: nets through crate `nn`, tables
//! fetched by sha256); plain `build` refuses CNN bots and reads `leaves=` as a path. The simulating bot with `infer=` reads the opponent's leave after each
//! of their turns (`infer`) and deals its simulations from the posterior, gated by `infer::gate`;
//! with `seq=1` it keeps the posterior for the next read. `EndgamePlayer` wraps static or sim: the
//! solver plays once the bag is empty and, for sim, the pre-endgame with one tile in the bag.
//! Without `endgame=` the simulating bot hands over to the static evaluator once the bag is empty.

use crate::endgame::{Options, Solver, peg};
use crate::eval::{OPENING_VOWEL_PENALTY, StaticEval, request};
use crate::features::{Before, Encoder, FRAME_LEN, Valuer};
use crate::game::Game;
use crate::infer::{self, InferConfig, Inference, Likelihood, Posterior};
use crate::leaves::{Klv, RackLeaves};
use crate::movegen::{Ctx, Generator, Mode};
use crate::moves::Move;
use crate::rng::Rng;
use crate::sim::{Opponent, RolloutNet, SimConfig, Simulator, StopLevel};
use crate::view::{Knows, View};
use crate::winpct::WinTable;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// Transposition table of each endgame-playing bot.
pub const ENDGAME_TABLE_BYTES: usize = 32 << 20;

pub trait Player: Send {
    /// What the bot is told of the opponent's tiles beyond what the rules show: only the
    /// oracle bots say anything but `Knows::Nothing`.
    fn knows(&self) -> Knows {
        Knows::Nothing
    }

    /// Choose a move for the player on turn, from what they may know. `rng` is this bot's own
    /// seeded stream.
    fn choose(&mut self, ctx: Ctx, view: &View, mg: &mut Generator, rng: &mut Rng) -> Move;

    /// The move of the player on turn in `game`, chosen from their view of it.
    fn decide(&mut self, ctx: Ctx, game: &Game, mg: &mut Generator, rng: &mut Rng) -> Move {
        let view = View::new(game, self.knows());
        self.choose(ctx, &view, mg, rng)
    }
}

/// Loads the value net a `cnn:model=...` spec names (a path or an artifact's sha256).
pub type ModelLoader<'a> = dyn Fn(&str) -> Result<Box<dyn Valuer>, String> + 'a;

/// Loads the leave table a `leaves=...` spec names (a path or an artifact's sha256).
pub type LeaveLoader<'a> = dyn Fn(&str) -> Result<Arc<Klv>, String> + 'a;

/// Where the data a spec names by `model=` and `leaves=` come from.
#[derive(Clone, Copy)]
pub struct Named<'a> {
    pub models: &'a ModelLoader<'a>,
    pub leaves: &'a LeaveLoader<'a>,
}

impl Named<'_> {
    /// Value nets refused; leave tables read from the path the spec names.
    pub fn paths() -> Named<'static> {
        Named {
            models: &|_| Err("this command cannot load value nets".into()),
            leaves: &|path| Klv::load(std::path::Path::new(path)).map(Arc::new).map_err(|e| e.to_string()),
        }
    }
}

/// A bot by name and parameters.
#[derive(Clone, Debug, PartialEq)]
pub enum BotSpec {
    /// Highest score.
    Greedy,
    /// `inner` valuing leaves with a table of its own (`leaves=` a `.klv2` path, or a leaves
    /// artifact's sha256 on a coordinator) instead of the match's: how two tables meet in one
    /// match. Spelled as `inner`'s parameters plus `leaves=..`.
    OwnLeaves { inner: Box<BotSpec>, table: String },
    /// Highest static equity: score + `leave_scale` times the leave's value, with opening and
    /// endgame adjustments (`leave_scale` 1 is the table's own weight; 0 plays for score alone;
    /// `vowel_penalty`, points per vowel beside a premium square on the opening move).
    Static { leave_scale: f64, vowel_penalty: f64 },
    /// Samples moves with probability proportional to `exp(equity / t)` while the bag holds
    /// more than `bag` tiles; plays like `Static` after.
    Softmax { t: f64, bag: usize },
    /// Simulates the top `k` moves `plies` deep for `iterations` (stopping early at `stop`
    /// 95/98/99 when set, or after `ms` milliseconds when set); plays like `Static` once the
    /// bag is empty (`endgame=MS` puts the solver there: see `Endgame`).
    /// `infer`: read the opponent's leave after each of their turns (`infer=sim|static|flat`
    /// and its options, see [`InferSpec`]); `oracle`: be told their leave (`oracle=leave`) or
    /// rack (`oracle=rack`); `model`: a value net (as the CNN bot's) scores the rollouts that
    /// stop before the game ends, instead of the win-probability table.
    Sim {
        k: usize,
        plies: usize,
        iterations: u64,
        stop: Option<u8>,
        ms: Option<u64>,
        infer: Option<InferSpec>,
        oracle: Knows,
        model: Option<String>,
    },
    /// `inner` (static or sim) with the endgame solver playing once the bag is empty, and for
    /// a simming bot the pre-endgame with one tile in the bag, within `ms` per move. Spelled
    /// as `inner`'s parameters plus `endgame=MS`.
    Endgame { inner: Box<BotSpec>, ms: u64 },
    /// The static evaluator's top `k` moves (every move when `None`), each valued by a value
    /// net `model` in the position it leaves; plays the one the net values highest.
    Cnn { model: String, k: Option<usize> },
}

/// The simulating bot's rack inference, spelled `infer=sim,tau=0.05,infer_iters=200,infer_k=8,
/// infer_plies=1,max_leaves=750` (the defaults) plus `seq=1` for sequential inference.
#[derive(Clone, Debug, PartialEq)]
pub struct InferSpec {
    /// The inference's options (its seed is drawn each turn; leaves are drawn `max_leaves` at a
    /// time when sampled).
    pub config: InferConfig,
    /// Carry the posterior from turn to turn.
    pub sequential: bool,
}

impl InferSpec {
    fn new(likelihood: Likelihood) -> Self {
        let config = InferConfig { likelihood, tau: likelihood.default_tau(), ..InferConfig::default() };
        Self { config, sequential: false }
    }

    pub fn config(&self, seed: u64) -> InferConfig {
        InferConfig { draws: self.config.max_leaves, seed, ..self.config.clone() }
    }
}

macro_rules! sim_params {
    () => {
        "sim:k=K,plies=P,iterations=N,stop=99,ms=M (to read racks add infer=sim|static|flat,tau=T,infer_iters=N,infer_k=K,infer_plies=P,max_leaves=M,seq=0|1; to be told them, oracle=leave|rack; to score rollouts with a value net, model=PATH|SHA256)"
    };
}

/// The simulating bot's parameters, as errors list them.
pub const SIM_PARAMS: &str = sim_params!();

/// Every bot and its parameters, as `worker autoplay --help` and errors list them.
pub const BOTS: &str = concat!(
    "greedy, static:leave_scale=X,vowel_penalty=P, softmax:t=T,bag=N, ",
    sim_params!(),
    ", cnn:model=PATH|SHA256,k=N|all; static and sim also take endgame=MS; all but greedy take leaves=PATH|SHA256 (a table of their own)"
);

/// Most weight `static:leave_scale` may put on the leave.
pub const MAX_LEAVE_SCALE: f64 = 10.0;

/// The static bot's opening vowel penalty, points (`static:vowel_penalty`).
pub const VOWEL_PENALTY: f64 = OPENING_VOWEL_PENALTY as f64 / 1000.0;
/// Most `static:vowel_penalty` may be.
pub const MAX_VOWEL_PENALTY: f64 = 10.0;

/// Candidates the CNN bot values when its spec does not say.
pub const CNN_DEFAULT_K: usize = 20;

/// A bot spec as written: its name and its `key=value` parameters, in order. The one reader of
/// spec text (`BotSpec::parse` reads through it) and, with `Display`, its one writer where a
/// spec is edited by parameter name (an experiment grid's axes: `shared::kinds::matches`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Spelled {
    pub name: String,
    pub params: Vec<(String, String)>,
}

impl Spelled {
    /// `name` or `name:key=value,key=value` (keys and values trimmed).
    pub fn read(s: &str) -> Result<Spelled, String> {
        let (name, params) = s.split_once(':').unwrap_or((s, ""));
        let mut out = Vec::new();
        for p in params.split(',').filter(|p| !p.is_empty()) {
            let (k, v) = p.split_once('=').ok_or_else(|| format!("bot `{s}`: parameter `{p}` is not `key=value`"))?;
            out.push((k.trim().to_string(), v.trim().to_string()));
        }
        Ok(Spelled { name: name.to_string(), params: out })
    }

    /// Set `key` to `value`: where the spec names it, else after its other parameters.
    pub fn set(&mut self, key: &str, value: &str) {
        match self.params.iter_mut().find(|(k, _)| k == key) {
            Some(kv) => kv.1 = value.to_string(),
            None => self.params.push((key.to_string(), value.to_string())),
        }
    }
}

impl fmt::Display for Spelled {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(&self.name)?;
        for (i, (k, v)) in self.params.iter().enumerate() {
            write!(f, "{}{k}={v}", if i == 0 { ':' } else { ',' })?;
        }
        Ok(())
    }
}

impl BotSpec {
    /// The static bot with the table's own leave weight.
    pub const STATIC: BotSpec = BotSpec::Static { leave_scale: 1.0, vowel_penalty: VOWEL_PENALTY };

    pub fn parse(s: &str) -> Result<Self, crate::DataError> {
        Self::parse_spec(s).map_err(|m| crate::DataError::new("bot", m))
    }

    fn parse_spec(s: &str) -> Result<Self, String> {
        let mut spelled = Spelled::read(s)?;
        if let Some(at) = spelled.params.iter().position(|(k, _)| k == "leaves") {
            let (_, table) = spelled.params.remove(at);
            if table.is_empty() {
                return Err(format!("bot `{s}`: leaves names a table: a .klv2 file, or a leaves artifact's sha256"));
            }
            return match Self::parse_spec(&spelled.to_string())? {
                BotSpec::Greedy => Err(format!("bot `{s}`: greedy plays without a leave table")),
                BotSpec::OwnLeaves { .. } => Err(format!("bot `{s}`: leaves is given twice")),
                inner => Ok(BotSpec::OwnLeaves { inner: Box::new(inner), table }),
            };
        }
        let mut endgame = None;
        if let Some(at) = spelled.params.iter().position(|(k, _)| k == "endgame") {
            let (_, v) = spelled.params.remove(at);
            let ms = v.parse::<u64>().ok().filter(|n| (1..=3_600_000).contains(n));
            endgame = Some(ms.ok_or_else(|| format!("bot `{s}`: endgame must be 1 to 3600000 milliseconds per move"))?);
        }
        let name = spelled.name.as_str();
        if let Some(ms) = endgame {
            if !matches!(name, "static" | "sim") {
                return Err(format!("bot `{s}`: endgame applies to the static and sim bots"));
            }
            let inner = Self::parse_spec(&spelled.to_string())?;
            return Ok(BotSpec::Endgame { inner: Box::new(inner), ms });
        }
        let kv: Vec<(&str, &str)> = spelled.params.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let unknown = |k: &str| Err(format!("bot `{s}`: unknown parameter `{k}`"));
        match name {
            "greedy" => match kv.first() {
                Some((k, _)) => unknown(k),
                None => Ok(BotSpec::Greedy),
            },
            "static" => {
                let (mut leave_scale, mut vowel_penalty) = (1.0, VOWEL_PENALTY);
                let weight = |v: &str, what: &str, max: f64| {
                    v.parse::<f64>()
                        .ok()
                        .filter(|x| (0.0..=max).contains(x))
                        .ok_or_else(|| format!("bot `{s}`: {what} must be a number from 0 to {max}"))
                };
                for (k, v) in kv {
                    match k {
                        "leave_scale" => leave_scale = weight(v, "leave_scale", MAX_LEAVE_SCALE)?,
                        "vowel_penalty" => vowel_penalty = weight(v, "vowel_penalty", MAX_VOWEL_PENALTY)?,
                        k => return unknown(k),
                    }
                }
                Ok(BotSpec::Static { leave_scale, vowel_penalty })
            }
            "cnn" => {
                let (mut model, mut k) = (None, Some(CNN_DEFAULT_K));
                for (key, v) in kv {
                    match key {
                        "model" if !v.is_empty() => model = Some(v.to_string()),
                        "k" if v == "all" => k = None,
                        "k" => {
                            k = Some(v.parse().ok().filter(|k| (1..=10_000).contains(k)).ok_or_else(|| {
                                format!("bot `{s}`: k must be a number of candidates (1 to 10000) or `all`")
                            })?)
                        }
                        key => return unknown(key),
                    }
                }
                let model = model.ok_or_else(|| format!("bot `{s}`: cnn needs model=PATH or model=SHA256"))?;
                Ok(BotSpec::Cnn { model, k })
            }
            "softmax" => {
                let (mut t, mut bag) = (1.0, 60);
                for (k, v) in kv {
                    match k {
                        "t" => {
                            t = v
                                .parse::<f64>()
                                .ok()
                                .filter(|t| t.is_finite() && *t >= 0.0)
                                .ok_or_else(|| format!("bot `{s}`: t must be a number >= 0"))?
                        }
                        "bag" => bag = v.parse().map_err(|_| format!("bot `{s}`: bag must be a tile count"))?,
                        k => return unknown(k),
                    }
                }
                Ok(BotSpec::Softmax { t, bag })
            }
            "sim" => {
                let (mut k, mut plies, mut iterations, mut stop, mut ms) = (15, 2, 300, None, None);
                let (mut infer, mut oracle, mut model) = (None, Knows::Nothing, None);
                let num = |v: &str, what: &str, max: u64| {
                    v.parse::<u64>()
                        .ok()
                        .filter(|n| (1..=max).contains(n))
                        .ok_or_else(|| format!("bot `{s}`: {what} must be 1 to {max}"))
                };
                // Inference options come after `infer=` is known, whatever their order.
                let mut reading = Vec::new();
                for (key, v) in kv {
                    match key {
                        "k" => k = num(v, "k", 100)? as usize,
                        "plies" => {
                            plies = v
                                .parse()
                                .ok()
                                .filter(|p| *p <= 20)
                                .ok_or_else(|| format!("bot `{s}`: plies must be 0 to 20"))?
                        }
                        "iterations" => iterations = num(v, "iterations", 1_000_000)?,
                        "stop" => {
                            stop = Some(
                                v.parse()
                                    .ok()
                                    .filter(|l| matches!(l, 95 | 98 | 99))
                                    .ok_or_else(|| format!("bot `{s}`: stop must be 95, 98 or 99"))?,
                            )
                        }
                        "ms" => ms = Some(num(v, "ms", 3_600_000)?),
                        "model" if !v.is_empty() => model = Some(v.to_string()),
                        "infer" => {
                            let l = Likelihood::parse(v)
                                .ok_or_else(|| format!("bot `{s}`: infer must be sim, static or flat"))?;
                            infer = Some(InferSpec::new(l));
                        }
                        "oracle" => {
                            oracle = match v {
                                "leave" => Knows::Leave,
                                "rack" => Knows::Rack,
                                _ => return Err(format!("bot `{s}`: oracle must be leave or rack")),
                            }
                        }
                        "tau" | "infer_iters" | "infer_k" | "infer_plies" | "max_leaves" | "seq" => {
                            reading.push((key, v))
                        }
                        k => return Err(format!("bot `{s}`: unknown parameter `{k}` (known: {SIM_PARAMS})")),
                    }
                }
                if let Some((key, _)) = reading.first()
                    && infer.is_none()
                {
                    return Err(format!("bot `{s}`: `{key}` needs infer=sim|static|flat"));
                }
                if let Some(spec) = infer.as_mut() {
                    if oracle != Knows::Nothing {
                        return Err(format!("bot `{s}`: an oracle is told what inference would guess; use one"));
                    }
                    for (key, v) in reading {
                        match key {
                            "tau" => {
                                spec.config.tau = v
                                    .parse::<f64>()
                                    .ok()
                                    .filter(|t| t.is_finite() && *t > 0.0 && *t <= 1000.0)
                                    .ok_or_else(|| format!("bot `{s}`: tau must be a number above 0, at most 1000"))?
                            }
                            "infer_iters" => spec.config.iterations = num(v, "infer_iters", 100_000)?,
                            "infer_k" => spec.config.candidates = num(v, "infer_k", 100)? as usize,
                            "infer_plies" => {
                                spec.config.plies = v
                                    .parse()
                                    .ok()
                                    .filter(|p| *p <= 20)
                                    .ok_or_else(|| format!("bot `{s}`: infer_plies must be 0 to 20"))?
                            }
                            "max_leaves" => spec.config.max_leaves = num(v, "max_leaves", 1_000_000)? as usize,
                            _ => {
                                spec.sequential = match v {
                                    "0" => false,
                                    "1" => true,
                                    _ => return Err(format!("bot `{s}`: seq must be 0 or 1")),
                                }
                            }
                        }
                    }
                }
                Ok(BotSpec::Sim { k, plies, iterations, stop, ms, infer, oracle, model })
            }
            _ => Err(format!("unknown bot `{name}` (known: {BOTS})")),
        }
    }

    /// Whether the bot's moves follow from the position and seed alone, on any machine: false
    /// for time budgets (`ms`, `endgame=MS`), which stop a search wherever the clock says, and
    /// for bots with a value net (the CNN bot, a sim bot scoring rollouts with one), whose
    /// values differ in their last bits between CPUs (ONNX Runtime picks kernels by
    /// instruction set), GPUs and library versions, so that two candidates valued alike can
    /// swap places on another machine.
    pub fn deterministic(&self) -> bool {
        match self {
            BotSpec::Greedy | BotSpec::Static { .. } | BotSpec::Softmax { .. } => true,
            BotSpec::Sim { ms, model, .. } => ms.is_none() && model.is_none(),
            BotSpec::Endgame { .. } | BotSpec::Cnn { .. } => false,
            BotSpec::OwnLeaves { inner, .. } => inner.deterministic(),
        }
    }

    /// The leave table the bot names for itself (`leaves=`), if it does.
    pub fn own_leaves(&self) -> Option<&str> {
        match self {
            BotSpec::OwnLeaves { table, .. } => Some(table),
            _ => None,
        }
    }

    /// The value net the bot plays with (a CNN bot's, or a simulating bot's for its
    /// rollouts), as its spec names it.
    pub fn model(&self) -> Option<&str> {
        match self {
            BotSpec::Cnn { model, .. } | BotSpec::Sim { model: Some(model), .. } => Some(model),
            BotSpec::Endgame { inner, .. } | BotSpec::OwnLeaves { inner, .. } => inner.model(),
            BotSpec::Greedy | BotSpec::Static { .. } | BotSpec::Softmax { .. } | BotSpec::Sim { model: None, .. } => {
                None
            }
        }
    }

    /// Whether the bot needs the match's leave table (greedy needs none, a bot with a table
    /// of its own plays with that).
    pub fn uses_leaves(&self) -> bool {
        !matches!(self, BotSpec::Greedy | BotSpec::OwnLeaves { .. })
    }

    /// Whether the bot needs a win-probability table.
    pub fn uses_wintable(&self) -> bool {
        match self {
            BotSpec::Sim { .. } => true,
            BotSpec::Endgame { inner, .. } | BotSpec::OwnLeaves { inner, .. } => inner.uses_wintable(),
            BotSpec::Greedy | BotSpec::Static { .. } | BotSpec::Softmax { .. } | BotSpec::Cnn { .. } => false,
        }
    }

    /// The bot, with the data it uses (`leaves`: the match's table, which a bot with a table
    /// of its own does not use). A simulating bot without a win-probability table is an
    /// error, and so is a CNN bot: it needs [`BotSpec::build_with`] and a model loader.
    pub fn build(
        &self,
        leaves: Option<Arc<Klv>>,
        table: Option<Arc<WinTable>>,
    ) -> Result<Box<dyn Player>, crate::DataError> {
        self.build_with(leaves, table, Named::paths())
    }

    /// [`BotSpec::build`], with `named` loading the value nets and leave tables the spec names.
    pub fn build_with(
        &self,
        leaves: Option<Arc<Klv>>,
        table: Option<Arc<WinTable>>,
        named: Named,
    ) -> Result<Box<dyn Player>, crate::DataError> {
        let models = named.models;
        Ok(match *self {
            BotSpec::OwnLeaves { ref inner, table: ref own } => {
                let own = (named.leaves)(own).map_err(|e| crate::DataError::new("bot", format!("`{self}`: {e}")))?;
                return inner.build_with(Some(own), table, named);
            }
            BotSpec::Cnn { ref model, k } => {
                let net = models(model).map_err(|e| crate::DataError::new("bot", format!("`{self}`: {e}")))?;
                Box::new(CnnBot { eval: StaticEval::new(leaves), net, k, encoder: None, frames: Vec::new() })
            }
            BotSpec::Greedy => Box::new(Greedy),
            BotSpec::Static { leave_scale, vowel_penalty } => Box::new(
                StaticEval::scaled(leaves, leave_scale).with_vowel_penalty((vowel_penalty * 1000.0).round() as i32),
            ),
            BotSpec::Softmax { t, bag } => Box::new(Softmax { eval: StaticEval::new(leaves), t, bag }),
            BotSpec::Sim { k, plies, iterations, stop, ms, ref infer, oracle, ref model } => {
                let table = table
                    .ok_or_else(|| crate::DataError::new("bot", format!("`{self}` needs a win-probability table")))?;
                let net = match model {
                    Some(m) => Some(models(m).map_err(|e| crate::DataError::new("bot", format!("`{self}`: {e}")))?),
                    None => None,
                };
                let stop = stop.map(|l| StopLevel::parse(&l.to_string()).expect("parsed as 95, 98 or 99"));
                Box::new(SimBot {
                    eval: StaticEval::new(leaves),
                    table,
                    k,
                    plies,
                    iterations,
                    stop,
                    ms,
                    infer: infer.clone(),
                    oracle,
                    memory: None,
                    net,
                    encoder: None,
                })
            }
            BotSpec::Endgame { ref inner, ms } => {
                let peg = match **inner {
                    BotSpec::Sim { k, .. } => Some(k),
                    _ => None,
                };
                Box::new(EndgamePlayer {
                    eval: StaticEval::new(leaves.clone()),
                    inner: inner.build_with(leaves, table, named)?,
                    solver: Solver::new(ENDGAME_TABLE_BYTES),
                    limit: Duration::from_millis(ms),
                    peg,
                })
            }
        })
    }
}

impl fmt::Display for BotSpec {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            BotSpec::Greedy => write!(f, "greedy"),
            BotSpec::Static { leave_scale, vowel_penalty } => {
                let mut spelled = Spelled { name: "static".into(), params: Vec::new() };
                if *leave_scale != 1.0 {
                    spelled.set("leave_scale", &leave_scale.to_string());
                }
                if *vowel_penalty != VOWEL_PENALTY {
                    spelled.set("vowel_penalty", &vowel_penalty.to_string());
                }
                write!(f, "{spelled}")
            }
            BotSpec::Softmax { t, bag } => write!(f, "softmax:t={t},bag={bag}"),
            BotSpec::Sim { k, plies, iterations, stop, ms, infer, oracle, model } => {
                write!(f, "sim:k={k},plies={plies},iterations={iterations}")?;
                if let Some(m) = model {
                    write!(f, ",model={m}")?;
                }
                if let Some(l) = stop {
                    write!(f, ",stop={l}")?;
                }
                if let Some(ms) = ms {
                    write!(f, ",ms={ms}")?;
                }
                if let Some(i) = infer {
                    write!(
                        f,
                        ",infer={},tau={},infer_iters={},infer_k={},infer_plies={},max_leaves={}",
                        i.config.likelihood.name(),
                        i.config.tau,
                        i.config.iterations,
                        i.config.candidates,
                        i.config.plies,
                        i.config.max_leaves
                    )?;
                    if i.sequential {
                        write!(f, ",seq=1")?;
                    }
                }
                match oracle {
                    Knows::Nothing => Ok(()),
                    Knows::Leave => write!(f, ",oracle=leave"),
                    Knows::Rack => write!(f, ",oracle=rack"),
                }
            }
            BotSpec::Endgame { inner, ms } => {
                let inner = inner.to_string();
                write!(f, "{inner}{}endgame={ms}", if inner.contains(':') { ',' } else { ':' })
            }
            BotSpec::Cnn { model, k: Some(k) } => write!(f, "cnn:model={model},k={k}"),
            BotSpec::Cnn { model, k: None } => write!(f, "cnn:model={model},k=all"),
            BotSpec::OwnLeaves { inner, table } => {
                let inner = inner.to_string();
                write!(f, "{inner}{}leaves={table}", if inner.contains(':') { ',' } else { ':' })
            }
        }
    }
}

pub struct Greedy;

impl Player for Greedy {
    fn choose(&mut self, ctx: Ctx, view: &View, mg: &mut Generator, _rng: &mut Rng) -> Move {
        let game = view.game();
        let leaves = RackLeaves::new(&game.racks[game.on_turn], |_| 0);
        mg.generate(ctx, &request(game, &leaves, 0), Mode::Best(1))[0]
    }
}

/// The static bot plays the static evaluator's best move.
impl Player for StaticEval {
    fn choose(&mut self, ctx: Ctx, view: &View, mg: &mut Generator, _rng: &mut Rng) -> Move {
        let game = view.game();
        self.best_move(ctx, game, mg)
    }
}

pub struct Softmax {
    eval: StaticEval,
    t: f64,
    bag: usize,
}

impl Player for Softmax {
    fn choose(&mut self, ctx: Ctx, view: &View, mg: &mut Generator, rng: &mut Rng) -> Move {
        let game = view.game();
        if game.bag.len() <= self.bag || self.t == 0.0 {
            return self.eval.choose(ctx, view, mg, rng);
        }
        let leaves = self.eval.rack_leaves(ctx, game);
        let moves = mg.generate(ctx, &request(game, &leaves, OPENING_VOWEL_PENALTY), Mode::All);
        // Moves arrive in a fixed generation order, so the draw below is reproducible.
        let best = moves.iter().map(|m| m.equity).max().expect("the pass is always legal") as f64;
        let weight = |m: &Move| ((m.equity as f64 - best) / (1000.0 * self.t)).exp();
        let total: f64 = moves.iter().map(weight).sum();
        let mut x = rng.unit() * total;
        for m in moves {
            x -= weight(m);
            if x < 0.0 {
                return *m;
            }
        }
        moves[0]
    }
}

/// The simulating bot: the static evaluator's top `k`, rolled out `plies` deep, the
/// opponent's rack dealt from what it read of them (`infer`) or was told (`oracle`).
pub struct SimBot {
    eval: StaticEval,
    table: Arc<WinTable>,
    k: usize,
    plies: usize,
    iterations: u64,
    stop: Option<StopLevel>,
    ms: Option<u64>,
    infer: Option<InferSpec>,
    oracle: Knows,
    /// For sequential inference: the posterior after the opponent's turn of this index and
    /// move (checked, so that a new game or a pass starts afresh).
    memory: Option<(usize, Move, Posterior)>,
    /// The value net scoring open rollouts, and its encoder (made on the first simulation).
    net: Option<Box<dyn Valuer>>,
    encoder: Option<Encoder>,
}

impl Player for SimBot {
    fn knows(&self) -> Knows {
        self.oracle
    }

    fn choose(&mut self, ctx: Ctx, view: &View, mg: &mut Generator, rng: &mut Rng) -> Move {
        let game = view.game();
        // With the bag empty the opponent's rack is known and simulating is pointless: the
        // static evaluator plays (with its going-out adjustments), unless `EndgamePlayer`
        // wraps this bot and solves it first.
        if game.bag.is_empty() || self.k == 1 {
            return self.eval.choose(ctx, view, mg, rng);
        }
        let moves = self.eval.best(ctx, game, mg, self.k).to_vec();
        if moves.len() == 1 {
            return moves[0];
        }
        let cfg = SimConfig {
            candidates: self.k,
            plies: self.plies,
            iterations: self.iterations,
            stop: self.stop,
            seed: rng.next_u64(),
            time_limit: self.ms.map(std::time::Duration::from_millis),
        };
        let opponent = self.opponent(ctx, view, rng);
        let net = match (&mut self.net, &mut self.encoder) {
            (Some(valuer), encoder) => {
                let encoder = encoder.get_or_insert_with(|| {
                    Encoder::new(ctx.dist).expect("value nets read 26-letter games (the model loader checks)")
                });
                Some(RolloutNet { valuer: std::sync::Mutex::new(valuer.as_mut()), encoder })
            }
            (None, _) => None,
        };
        let sim = Simulator { ctx, leaves: self.eval.leaves().cloned(), table: &self.table, net };
        sim.run_against(game, moves, &cfg, &opponent, &|_| {}).candidates[0].mv
    }
}

impl SimBot {
    /// What the simulation deals the opponent: what an oracle was told, or the posterior
    /// after their last turn, gated by how many leaves it holds.
    fn opponent(&mut self, ctx: Ctx, view: &View, rng: &mut Rng) -> Opponent {
        if self.oracle != Knows::Nothing {
            return view.revealed().map_or(Opponent::Unknown, |t| Opponent::Holds(t.to_vec()));
        }
        let Some(spec) = &self.infer else {
            return Opponent::Unknown;
        };
        let seed = rng.next_u64();
        let Some(obs) = infer::observe(ctx, view) else {
            return Opponent::Unknown;
        };
        let previous = self
            .memory
            .as_ref()
            .filter(|(turn, mv, _)| {
                spec.sequential && obs.turn >= 2 && *turn == obs.turn - 2 && view.turn(*turn).mv == *mv
            })
            .map(|m| &m.2);
        let inference = Inference { ctx, leaves: self.eval.leaves().cloned(), table: &self.table };
        let post = inference.infer(&obs, &spec.config(seed), previous);
        let alpha = infer::gate(post.leaves.len());
        let leaves = post.leaves.iter().map(|w| (w.leave.clone(), w.weight)).collect();
        if spec.sequential {
            self.memory = Some((obs.turn, view.turn(obs.turn).mv, post));
        }
        Opponent::Inferred { leaves, alpha }
    }
}

/// A bot that hands the endgame to the solver: with the bag empty it plays the first move of
/// the best sequence found within the time limit; with one tile in the bag (simming bots) it
/// ranks the static evaluator's top `k` placements by pre-endgame, sharing the time limit
/// among their endgames. Elsewhere the inner bot plays.
pub struct EndgamePlayer {
    eval: StaticEval,
    inner: Box<dyn Player>,
    solver: Solver,
    limit: Duration,
    peg: Option<usize>,
}

impl Player for EndgamePlayer {
    fn knows(&self) -> Knows {
        self.inner.knows()
    }

    fn choose(&mut self, ctx: Ctx, view: &View, mg: &mut Generator, rng: &mut Rng) -> Move {
        let game = view.game();
        if game.bag.is_empty() {
            let opts = Options { time_limit: Some(self.limit), ..Options::default() };
            if let Ok(sol) = self.solver.solve(ctx, game, &opts, &|_| {})
                && let Some(&mv) = sol.pv.first()
            {
                return mv;
            }
        }
        if let Some(k) = self.peg
            && game.bag.len() == 1
        {
            let moves: Vec<Move> = self.eval.best(ctx, game, mg, k).to_vec();
            let solves = (moves.len() * peg::unseen(game).len()).max(1) as u32;
            let opts =
                Options { time_limit: Some((self.limit / solves).max(Duration::from_millis(1))), ..Options::default() };
            if let Ok(ranked) = peg::rank(&self.solver, ctx, game, &moves, &opts, &|| {})
                && let Some(best) = ranked.first()
            {
                return best.mv;
            }
        }
        self.inner.choose(ctx, view, mg, rng)
    }
}

/// The CNN bot: the static evaluator's top `k`, each valued by the net in the position it
/// leaves, from the mover's view; the highest value plays (ties to the better static equity).
pub struct CnnBot {
    eval: StaticEval,
    net: Box<dyn Valuer>,
    k: Option<usize>,
    /// Made on the first move, from the game's distribution.
    encoder: Option<Encoder>,
    frames: Vec<f32>,
}

impl Player for CnnBot {
    fn choose(&mut self, ctx: Ctx, view: &View, mg: &mut Generator, _rng: &mut Rng) -> Move {
        let game = view.game();
        let moves: Vec<Move> = match self.k {
            Some(k) => self.eval.best(ctx, game, mg, k).to_vec(),
            None => {
                let leaves = self.eval.rack_leaves(ctx, game);
                let mut all = mg.generate(ctx, &request(game, &leaves, OPENING_VOWEL_PENALTY), Mode::All).to_vec();
                all.sort_unstable_by(crate::moves::rank);
                all
            }
        };
        if moves.len() == 1 {
            return moves[0];
        }
        let last = view.turn_count().checked_sub(1).map(|i| view.turn(i)).filter(|t| t.player != view.me());
        let unseen = view.unseen();
        let rack = &game.racks[game.on_turn];
        let before = Before {
            board: &game.board,
            rack,
            unseen: &unseen,
            bag: game.bag.len(),
            spread: game.scores[game.on_turn] - game.scores[1 - game.on_turn],
            opponent_last: last.as_ref().map(|t| &t.mv),
        };
        let encoder = self.encoder.get_or_insert_with(|| {
            Encoder::new(ctx.dist).expect("the CNN bot plays 26-letter games (the model loader checks)")
        });
        self.frames.clear();
        self.frames.resize(moves.len() * FRAME_LEN, 0.0);
        for (m, frame) in moves.iter().zip(self.frames.chunks_exact_mut(FRAME_LEN)) {
            let leave = self.eval.leaves().map_or(0.0, |k| k.value(&m.leave(rack)));
            encoder.encode(ctx, &before, m, leave, frame);
        }
        // A net that loaded has the checked shapes; failing now is the machine (out of memory,
        // a lost GPU), which no move can answer.
        let values = self.net.values(&self.frames).unwrap_or_else(|e| panic!("the value net failed: {e}"));
        let mut best = 0;
        for (i, v) in values.iter().enumerate() {
            if *v > values[best] {
                best = i;
            }
        }
        moves[best]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One spec of every bot, parameters set away from their defaults.
    const EVERY_BOT: [&str; 12] = [
        "greedy",
        "static",
        "static:leave_scale=0.25,vowel_penalty=1.5",
        "softmax:t=0.25,bag=20",
        "sim:k=3,plies=1,iterations=50,stop=98,ms=40",
        "sim:k=4,plies=2,iterations=64,infer=static,tau=0.5,infer_iters=20,infer_k=3,infer_plies=0,max_leaves=99,seq=1",
        "sim:k=5,plies=2,iterations=10,oracle=rack",
        "sim:k=2,plies=2,iterations=10,model=net.onnx",
        "static:endgame=200",
        "cnn:model=net.onnx,k=all",
        "static:leave_scale=0.5,leaves=other.klv2",
        "sim:k=2,plies=2,iterations=10,endgame=100,leaves=other.klv2",
    ];

    #[test]
    fn every_bot_prints_as_it_parses_and_says_whether_it_replicates() {
        for text in EVERY_BOT {
            let spec = BotSpec::parse(text).unwrap();
            assert_eq!(BotSpec::parse(&spec.to_string()).unwrap(), spec, "{text}");
            assert_eq!(Spelled::read(text).unwrap().to_string(), text);
            // Only a clock or a value net makes a bot's play depend on the machine.
            let machine_bound = text.contains("ms=") || text.contains("endgame=") || text.contains("model=");
            assert_eq!(spec.deterministic(), !machine_bound, "{text}");
        }
    }

    #[test]
    fn spelled_specs_set_parameters_by_name() {
        let mut s = Spelled::read("softmax: t = 9 ").unwrap();
        assert_eq!(s.params, [("t".to_string(), "9".to_string())]);
        s.set("bag", "20");
        s.set("t", "0.5");
        assert_eq!(s.to_string(), "softmax:t=0.5,bag=20");
        assert!(Spelled::read("softmax:t").unwrap_err().contains("`t` is not `key=value`"));
    }

    #[test]
    fn the_static_bots_leave_weight_is_a_number_in_range_and_one_is_the_plain_static_bot() {
        assert_eq!(BotSpec::parse("static:leave_scale=1").unwrap(), BotSpec::STATIC);
        assert_eq!(BotSpec::parse("static:leave_scale=1.0").unwrap().to_string(), "static");
        assert_eq!(BotSpec::parse("static:leave_scale=0").unwrap().to_string(), "static:leave_scale=0");
        assert_eq!(BotSpec::parse("static:vowel_penalty=0.7").unwrap(), BotSpec::STATIC);
        for bad in [
            "static:leave_scale=-0.1",
            "static:leave_scale=11",
            "static:leave_scale=NaN",
            "static:scale=1",
            "static:vowel_penalty=-1",
        ] {
            assert!(BotSpec::parse(bad).is_err(), "{bad}");
        }
    }
}
