//! `leaves`: a leave table made by generations of self-play on the volunteers. Generation `g`
//! plays static-vs-static games with the table the run holds (the first generation with none,
//! or with the experiment's leaves artifact), the volunteers upload each kept leave's count and
//! summed outcome, and the coordinator fits generation `g`'s table from them
//! (`engine::leavegen`, as `worker leaves generate` fits it). Each generation's table is then
//! rated: its static bot against greedy, and against the first table (the experiment's, or
//! generation 0's), on paired deals. With a gate, each new table plays the table the run holds
//! under an SPRT, and the run goes on with the better one.
//!
//! Every cell is stored at submission, so the run's size is known from the start: with `n`
//! generations, generation `g`'s self-play is cell `g`, its rating against greedy `n + g`,
//! against the first table `2n + g`, its gate `3n + g` (those a run has). Only the first
//! self-play cell runs at first; the others wait for the tables they play with
//! (`CellSpec::waits`), whose shas name the duels' bots (`static:leaves=SHA256`).

use super::Kind;
use super::matches::{MatchJob, MatchSpec, check_sprt};
use crate::spec::{CellSpec, File, MAX_GAMES, MAX_GAMES_PER_CELL, SpecError, err};
use crate::stats::{MatchTally, Sprt};
use engine::tiles::Distribution;
use serde::{Deserialize, Serialize};

/// The `leaves` kind.
pub struct Leaves;

/// Most generations one run may have.
pub const MAX_GENERATIONS: u32 = 100;

/// The bots of a rating cell: the generation's table in the static bot, against greedy.
pub const RATED: [&str; 2] = ["static", "greedy"];

/// A gate's test when the experiment has no `[sprt]`: is the new table 2% better?
pub const GATE_SPRT: Sprt = Sprt { p0: 0.5, p1: 0.52, alpha: 0.05, beta: 0.05 };

impl Kind for Leaves {
    const NAME: &'static str = "leaves";
    const UNIT: &'static str =
        "two games (self-play: two deals, each played once; ratings and gates: one deal, seats swapped)";
    const PLAYS_BOTS: bool = false;
    const PLAYS_GAMES: bool = true;
    const SHOWN_PER_UNIT: u64 = 2;
    type Spec = LeavesSpec;
    type Job = LeavesJob;
    type Result = LeavesResult;

    fn parse(f: File) -> Result<LeavesSpec, SpecError> {
        File::refuse(
            &[
                ("match", f.match_.is_some()),
                ("grid", !f.grid.is_empty()),
                ("endgame", f.endgame.is_some()),
                ("tune", f.tune.is_some()),
                ("games", f.games.is_some()),
            ],
            "a leaves experiment takes a [generations] section (count, games, rate_games, start, gate_games), an [sprt] for its gate, and a seed",
        )?;
        let Some(g) = f.generations else {
            return err("generations", "a leaves experiment needs a [generations] section with `count` and `games`");
        };
        if !(1..=MAX_GENERATIONS).contains(&g.count) {
            return err("generations.count", format!("1 to {MAX_GENERATIONS} generations"));
        }
        for (field, games, least) in [
            ("generations.games", g.games, 2),
            ("generations.rate_games", g.rate_games, 0),
            ("generations.gate_games", g.gate_games, 0),
        ] {
            if games < least || games % 2 == 1 || games > MAX_GAMES_PER_CELL {
                return err(field, format!("must be even, {least} to {MAX_GAMES_PER_CELL}"));
            }
        }
        if (g.games + 2 * g.rate_games + g.gate_games).saturating_mul(g.count as u64) > MAX_GAMES {
            return err(
                "generations",
                format!("count x (games + 2 x rate_games + gate_games) is more than {MAX_GAMES} games"),
            );
        }
        let start = match g.start.as_str() {
            "none" => Start::None,
            "table" => Start::Table,
            other => {
                return err(
                    "generations.start",
                    format!(
                        "`{other}`: `none` (the first generation plays with no table) or `table` (with the experiment's leaves artifact)"
                    ),
                );
            }
        };
        let gate = match (g.gate_games, f.sprt) {
            (0, Some(_)) => return err("sprt", "a leaves run's [sprt] is its gate's: set generations.gate_games"),
            (0, None) => None,
            (games, sprt) => {
                let sprt = sprt.unwrap_or(GATE_SPRT);
                check_sprt(&sprt)?;
                Some(Gate { games, sprt })
            }
        };
        Ok(LeavesSpec { generations: g.count, games: g.games, rate_games: g.rate_games, start, gate })
    }

    fn check(_: &LeavesSpec, _: &Distribution) -> Result<(), SpecError> {
        Ok(())
    }

    fn cells(spec: &LeavesSpec, _seed: u64) -> Result<Vec<CellSpec>, SpecError> {
        Ok((0..4 * spec.generations).filter_map(|i| spec.cell(i)).collect())
    }

    fn matchup(_: &LeavesSpec) -> Option<&MatchSpec> {
        None
    }

    fn sprt(spec: &LeavesSpec, cell: u32) -> Option<&Sprt> {
        match spec.part(cell) {
            Some(Part::Gate(_)) => spec.gate.as_ref().map(|g| &g.sprt),
            _ => None,
        }
    }

    fn finished(target: u64) -> String {
        format!("all {} games played", 2 * target)
    }

    fn first_batch_units(threads: u64) -> u64 {
        threads.max(1)
    }

    fn job_units(job: &LeavesJob) -> u64 {
        match job {
            LeavesJob::Play(p) => p.pairs,
            LeavesJob::Rate(m) => m.pairs,
        }
    }

    fn result_games(r: &LeavesResult) -> u64 {
        match r {
            LeavesResult::Play(c) => c.games,
            LeavesResult::Rate(t) => t.games,
        }
    }

    fn tally(r: &LeavesResult) -> Option<&MatchTally> {
        match r {
            LeavesResult::Play(_) => None,
            LeavesResult::Rate(t) => Some(t),
        }
    }

    fn goes_without(spec: &LeavesSpec) -> &'static [&'static str] {
        match spec.start {
            Start::None => &["leaves"],
            Start::Table => &[],
        }
    }
}

/// What the first generation plays with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Start {
    /// No table: the static bot values every leave at 0.
    None,
    /// The experiment's leaves artifact (pinned, or the coordinator's default).
    Table,
}

/// A leave-table run: how many generations, the games of each, and its gate.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LeavesSpec {
    pub generations: u32,
    pub games: u64,
    pub rate_games: u64,
    pub start: Start,
    #[serde(default)]
    pub gate: Option<Gate>,
}

/// Each new table against the one the run holds: at most `games` games under `sprt`. The run
/// keeps the new table when the test says it is better (H1), or, when the games run out
/// before a verdict, when it won more than half.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Gate {
    pub games: u64,
    pub sprt: Sprt,
}

/// Which part of a generation a cell is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    /// Self-play whose leaves generation `.0`'s table is fitted from.
    Play(u32),
    /// Generation `.0`'s table rated against greedy.
    Rate(u32),
    /// Generation `.0`'s table against the first table.
    First(u32),
    /// Generation `.0`'s table against the table the run holds: which one it goes on with.
    Gate(u32),
}

impl Part {
    /// How the cell's params name the part.
    pub fn name(self) -> &'static str {
        match self {
            Part::Play(_) => "play",
            Part::Rate(_) => "rate",
            Part::First(_) => "first",
            Part::Gate(_) => "gate",
        }
    }

    pub fn generation(self) -> u32 {
        match self {
            Part::Play(g) | Part::Rate(g) | Part::First(g) | Part::Gate(g) => g,
        }
    }
}

impl LeavesSpec {
    /// Whether generation `g` has a table before it to be held against: the experiment's, or
    /// an earlier generation's.
    fn has_before(&self, g: u32) -> bool {
        g > 0 || self.start == Start::Table
    }

    /// The cell of `part`, if the run has one.
    pub fn index(&self, part: Part) -> Option<u32> {
        let (section, g) = match part {
            Part::Play(g) => (0, g),
            Part::Rate(g) if self.rate_games > 0 => (1, g),
            Part::First(g) if self.rate_games > 0 && self.has_before(g) => (2, g),
            Part::Gate(g) if self.gate.is_some() && self.has_before(g) => (3, g),
            _ => return None,
        };
        (g < self.generations).then_some(section * self.generations + g)
    }

    /// What cell `index` is.
    pub fn part(&self, index: u32) -> Option<Part> {
        let g = index % self.generations;
        let part = match index / self.generations {
            0 => Part::Play(g),
            1 => Part::Rate(g),
            2 => Part::First(g),
            3 => Part::Gate(g),
            _ => return None,
        };
        (self.index(part) == Some(index)).then_some(part)
    }

    /// Cell `index`, as stored at submission: only the first self-play runs; every other cell
    /// waits for the table it plays with.
    fn cell(&self, index: u32) -> Option<CellSpec> {
        let part = self.part(index)?;
        let mut params = serde_json::Map::new();
        params.insert("generation".into(), part.generation().into());
        params.insert("part".into(), part.name().into());
        let (bots, games) = match part {
            Part::Play(_) => (None, self.games),
            Part::Rate(_) => (Some(RATED.map(String::from)), self.rate_games),
            Part::First(_) => (None, self.rate_games),
            Part::Gate(_) => (None, self.gate.map_or(0, |g| g.games)),
        };
        Some(CellSpec { index, params, bots, target: games / 2, carved: true, waits: index > 0 })
    }

    /// The bots of a duel between two tables (a rating against the first, a gate): the static
    /// bot with each.
    pub fn duel(new: &str, old: &str) -> [String; 2] {
        [format!("static:leaves={new}"), format!("static:leaves={old}")]
    }

    /// The seed of generation `g`'s self-play deals: each generation plays new ones. Rating
    /// cells all play the experiment's own deals, so that generations are compared on the same
    /// deals.
    pub fn play_seed(seed: u64, g: u32) -> u64 {
        engine::rng::derive(seed, g as u64)
    }
}

/// A batch of a leaves run: self-play games to fit from, or a rating match.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "part", rename_all = "lowercase")]
pub enum LeavesJob {
    Play(SelfPlayJob),
    Rate(MatchJob),
}

/// Static-vs-static games `2 * first_pair .. 2 * (first_pair + pairs)` of the run seeded `seed`,
/// game `i` on deal `i` (each deal played once), with the batch's leaves artifact as the table
/// (none when the batch has none).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SelfPlayJob {
    pub seed: u64,
    pub first_pair: u64,
    pub pairs: u64,
}

/// What a leaves batch reports.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "part", rename_all = "lowercase")]
pub enum LeavesResult {
    Play(LeaveCounts),
    Rate(MatchTally),
}

/// Each kept leave of a self-play batch's games (`engine::leavegen::Samples::add_game`): the
/// leave's tiles, how often it was kept, and the summed outcome in millipoints. Sorted by
/// leave, so that replicas agree byte for byte.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeaveCounts {
    pub games: u64,
    pub leaves: Vec<(Vec<u8>, u32, i64)>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::ExperimentSpec;

    fn parse(generations: &str) -> Result<ExperimentSpec, SpecError> {
        ExperimentSpec::parse(&format!("name = \"l\"\nkind = \"leaves\"\n{generations}"))
    }

    #[test]
    fn a_run_stores_every_generations_cells_and_only_the_first_runs() {
        let s = parse("[generations]\ncount = 3\ngames = 200\nrate_games = 100\nstart = \"table\"").unwrap();
        let crate::kinds::ExperimentKind::Leaves(l) = &s.kind else { panic!("{s:?}") };
        assert_eq!((l.start, l.gate), (Start::Table, None));
        let cells = s.cells().unwrap();
        // Self-play, against greedy, against the first table: three of each.
        assert_eq!(cells.iter().map(|c| c.index).collect::<Vec<_>>(), (0..9).collect::<Vec<_>>());
        assert_eq!(cells.iter().map(|c| c.waits).filter(|w| !w).count(), 1);
        assert_eq!(cells.iter().map(|c| c.target).sum::<u64>(), 3 * 100 + 6 * 50);
        for c in &cells {
            let part = l.part(c.index).unwrap();
            assert_eq!(
                (part.generation() as u64, part.name()),
                (c.params["generation"].as_u64().unwrap(), c.params["part"].as_str().unwrap())
            );
            assert_eq!(l.index(part), Some(c.index));
            assert_eq!(c.bots.is_some(), matches!(part, Part::Rate(_)));
        }
        assert_eq!(l.part(9), None);
        let plain = parse("[generations]\ncount = 2\ngames = 20").unwrap();
        assert_eq!(plain.cells().unwrap().len(), 2);

        // From nothing, generation 0 has no table before it: no rating against the first, no
        // gate; the others have both.
        let gated = parse("[generations]\ncount = 3\ngames = 20\nrate_games = 10\ngate_games = 40").unwrap();
        let crate::kinds::ExperimentKind::Leaves(l) = &gated.kind else { panic!() };
        assert_eq!(l.gate, Some(super::Gate { games: 40, sprt: GATE_SPRT }));
        let parts: Vec<Part> = gated.cells().unwrap().iter().map(|c| l.part(c.index).unwrap()).collect();
        use Part::*;
        assert_eq!(parts, [Play(0), Play(1), Play(2), Rate(0), Rate(1), Rate(2), First(1), First(2), Gate(1), Gate(2)]);
        assert_eq!((l.part(6), l.part(9)), (None, None));
        assert_eq!(gated.kind.sprt(10), Some(&GATE_SPRT));
        assert_eq!(gated.kind.sprt(3), None, "only gates are tested");
        let own = parse("[generations]\ncount = 1\ngames = 20\ngate_games = 40\n[sprt]\np0 = 0.5\np1 = 0.55\nalpha = 0.1\nbeta = 0.1").unwrap();
        assert_eq!(own.kind.sprt(0), None, "nothing to gate against from nothing");
    }

    #[test]
    fn bad_generations_name_their_field() {
        let field = |text: &str| parse(text).unwrap_err().field;
        assert_eq!(field(""), "generations");
        assert_eq!(field("[generations]\ncount = 0\ngames = 20"), "generations.count");
        assert_eq!(field("[generations]\ncount = 2\ngames = 21"), "generations.games");
        assert_eq!(field("[generations]\ncount = 2\ngames = 20\nrate_games = 3"), "generations.rate_games");
        assert_eq!(field("[generations]\ncount = 2\ngames = 20\nstart = \"shipped\""), "generations.start");
        assert!(field("[generations]\ncount = 2\ngames = 20\nrounds = 3").starts_with("line"));
        assert_eq!(field("games = 20\n[generations]\ncount = 2\ngames = 20"), "games");
        assert_eq!(field("[generations]\ncount = 2\ngames = 20\ngate_games = 3"), "generations.gate_games");
        assert_eq!(
            field("[generations]\ncount = 2\ngames = 20\n[sprt]\np0 = 0.5\np1 = 0.6\nalpha = 0.05\nbeta = 0.05"),
            "sprt"
        );
        assert_eq!(
            field(
                "[generations]\ncount = 2\ngames = 20\ngate_games = 4\n[sprt]\np0 = 0.6\np1 = 0.5\nalpha = 0.05\nbeta = 0.05"
            ),
            "sprt"
        );
        assert_eq!(
            ExperimentSpec::parse("name = \"m\"\nkind = \"match\"\ngames = 2\n[match]\nbot1 = \"static\"\nbot2 = \"greedy\"\n[generations]\ncount = 1\ngames = 2")
                .unwrap_err()
                .field,
            "generations"
        );
    }
}
