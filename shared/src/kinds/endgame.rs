//! `endgame`: a set of endgames (listed, or generated from seeded self-play at the turn its
//! bag emptied) solved exactly, a share of them twice by different owners' workers.

use super::Kind;
use super::matches::MatchSpec;
use crate::spec::{CellSpec, File, SpecError, err};
use crate::stats::{MatchTally, Sprt};
use engine::tiles::Distribution;
use serde::{Deserialize, Serialize};

/// Most positions an endgame experiment may list or generate.
pub const MAX_POSITIONS: u64 = 100_000;

/// The `endgame` kind.
pub struct Endgame;

impl Kind for Endgame {
    const NAME: &'static str = "endgame";
    const UNIT: &'static str = "position";
    const PLAYS_BOTS: bool = false;
    const PLAYS_GAMES: bool = false;
    const SHOWN_PER_UNIT: u64 = 1;
    type Spec = EndgameSpec;
    type Job = EndgameJob;
    type Result = EndgameReport;

    fn parse(f: File) -> Result<EndgameSpec, SpecError> {
        File::refuse(
            &[
                ("match", f.match_.is_some()),
                ("grid", !f.grid.is_empty()),
                ("sprt", f.sprt.is_some()),
                ("generations", f.generations.is_some()),
                ("tune", f.tune.is_some()),
                ("games", f.games.is_some()),
            ],
            "an endgame experiment takes no `games`, [match], [grid] or [sprt]; its size is its positions",
        )?;
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
                // `Kind::check`.
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
        Ok(EndgameSpec { source, plies: e.plies, time_ms: (time * 1000.0).round().max(1.0) as u64, cross_check })
    }

    /// Two cells: pass 0 solves every position, pass 1 solves the cross-checked ones again
    /// (queued as the first solves arrive, not carved).
    fn cells(spec: &EndgameSpec, seed: u64) -> Result<Vec<CellSpec>, SpecError> {
        let pass = |index: u32, name: &str, target: u64, carved: bool| {
            let mut params = serde_json::Map::new();
            params.insert("pass".into(), serde_json::Value::from(name));
            CellSpec { index, params, bots: None, target, carved, waits: false }
        };
        Ok(vec![pass(0, "solve", spec.count(), true), pass(1, "check", spec.checks(seed), false)])
    }

    fn matchup(_: &EndgameSpec) -> Option<&MatchSpec> {
        None
    }

    fn sprt(_: &EndgameSpec, _: u32) -> Option<&Sprt> {
        None
    }

    fn finished(target: u64) -> String {
        format!("all {target} positions solved")
    }

    /// An endgame position can take its whole time limit, so a first batch is one position.
    fn first_batch_units(_threads: u64) -> u64 {
        1
    }

    fn job_units(job: &EndgameJob) -> u64 {
        job.positions.len() as u64
    }

    fn result_games(report: &EndgameReport) -> u64 {
        report.solved.len() as u64
    }

    fn tally(_: &EndgameReport) -> Option<&MatchTally> {
        None
    }

    /// The listed positions, read against the tile distribution the experiment runs with:
    /// each must parse, have an empty bag, and not be over.
    fn check(spec: &EndgameSpec, dist: &Distribution) -> Result<(), SpecError> {
        let PositionSource::Listed(positions) = &spec.source else { return Ok(()) };
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
}

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

/// Endgames to solve: positions of the experiment's set by index, each with its CGP when the
/// set was listed, or generated by the worker from (`seed`, index, `extra`) when not.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EndgameJob {
    pub seed: u64,
    pub extra: usize,
    pub positions: Vec<EndgamePosition>,
    pub plies: Option<u8>,
    pub time_ms: u64,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EndgamePosition {
    pub index: u64,
    pub cgp: Option<String>,
}

/// One solved position.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Solved {
    pub index: u64,
    /// The position solved (empty when skipped).
    pub cgp: String,
    /// A generated index whose game ended before its bag emptied: nothing to solve.
    pub skipped: bool,
    /// Final spread for the player on turn.
    pub value: i32,
    /// Solved to the end of the game (not cut by the plies or time limit).
    pub exact: bool,
    /// First move of the best sequence (`-` for a pass).
    pub best: String,
    /// The whole best sequence, moves with their scores.
    pub sequence: String,
    pub nodes: u64,
    pub ms: u64,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EndgameReport {
    pub solved: Vec<Solved>,
}
