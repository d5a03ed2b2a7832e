//! `leaves`: a leave table made by generations of self-play on the volunteers. Generation `g`
//! plays static-vs-static games with the table of generation `g - 1` (the first with none, or
//! with the experiment's leaves artifact), the volunteers upload each kept leave's count and
//! summed outcome, and the coordinator fits generation `g`'s table from them
//! (`engine::leavegen`, as `worker leaves generate` fits it). Each generation's table is then
//! rated: its static bot against greedy on paired deals.
//!
//! Every cell is stored at submission, so the run's size is known from the start: generation
//! `g`'s self-play is cell `g`, its rating cell `count + g`. Only the first self-play cell runs
//! at first; the others wait for the table they play with (`CellSpec::waits`).

use super::Kind;
use super::matches::{MatchJob, MatchSpec};
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

impl Kind for Leaves {
    const NAME: &'static str = "leaves";
    const UNIT: &'static str = "two games (self-play: two deals, each played once; rating: one deal, seats swapped)";
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
                ("sprt", f.sprt.is_some()),
                ("endgame", f.endgame.is_some()),
                ("tune", f.tune.is_some()),
                ("games", f.games.is_some()),
            ],
            "a leaves experiment takes a [generations] section (count, games, rate_games, start) and a seed",
        )?;
        let Some(g) = f.generations else {
            return err("generations", "a leaves experiment needs a [generations] section with `count` and `games`");
        };
        if !(1..=MAX_GENERATIONS).contains(&g.count) {
            return err("generations.count", format!("1 to {MAX_GENERATIONS} generations"));
        }
        for (field, games, least) in [("generations.games", g.games, 2), ("generations.rate_games", g.rate_games, 0)] {
            if games < least || games % 2 == 1 || games > MAX_GAMES_PER_CELL {
                return err(field, format!("must be even, {least} to {MAX_GAMES_PER_CELL}"));
            }
        }
        if (g.games + g.rate_games).saturating_mul(g.count as u64) > MAX_GAMES {
            return err("generations", format!("count x (games + rate_games) is more than {MAX_GAMES} games"));
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
        Ok(LeavesSpec { generations: g.count, games: g.games, rate_games: g.rate_games, start })
    }

    fn check(_: &LeavesSpec, _: &Distribution) -> Result<(), SpecError> {
        Ok(())
    }

    fn cells(spec: &LeavesSpec, _seed: u64) -> Result<Vec<CellSpec>, SpecError> {
        let mut cells: Vec<CellSpec> = (0..spec.generations).map(|g| spec.play_cell(g)).collect();
        if spec.rate_games > 0 {
            cells.extend((0..spec.generations).map(|g| spec.rate_cell(g)));
        }
        Ok(cells)
    }

    fn matchup(_: &LeavesSpec) -> Option<&MatchSpec> {
        None
    }

    fn sprt(_: &LeavesSpec) -> Option<&Sprt> {
        None
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

/// A leave-table run: how many generations, and the games of each.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LeavesSpec {
    pub generations: u32,
    pub games: u64,
    pub rate_games: u64,
    pub start: Start,
}

/// Which part of a generation a cell is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    /// Self-play whose leaves generation `.0`'s table is fitted from.
    Play(u32),
    /// Generation `.0`'s table rated against greedy.
    Rate(u32),
}

impl LeavesSpec {
    /// Generation `g`'s self-play cell: waits for generation `g - 1`'s table, but the first.
    pub fn play_cell(&self, g: u32) -> CellSpec {
        let mut params = serde_json::Map::new();
        params.insert("generation".into(), g.into());
        params.insert("part".into(), "play".into());
        CellSpec { index: g, params, bots: None, target: self.games / 2, carved: true, waits: g > 0 }
    }

    /// Generation `g`'s rating cell: waits for the table it rates.
    pub fn rate_cell(&self, g: u32) -> CellSpec {
        let mut params = serde_json::Map::new();
        params.insert("generation".into(), g.into());
        params.insert("part".into(), "rate".into());
        CellSpec {
            index: self.generations + g,
            params,
            bots: Some(RATED.map(String::from)),
            target: self.rate_games / 2,
            carved: true,
            waits: true,
        }
    }

    /// What cell `index` is.
    pub fn part(&self, index: u32) -> Option<Part> {
        match index.checked_sub(self.generations) {
            None => Some(Part::Play(index)),
            Some(g) if g < self.generations && self.rate_games > 0 => Some(Part::Rate(g)),
            Some(_) => None,
        }
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
        assert_eq!(l.start, Start::Table);
        let cells = s.cells().unwrap();
        assert_eq!(cells.len(), 6);
        assert_eq!(cells.iter().map(|c| c.waits).collect::<Vec<_>>(), [false, true, true, true, true, true]);
        assert_eq!(cells.iter().map(|c| c.target).sum::<u64>(), 3 * 100 + 3 * 50);
        for c in &cells {
            let g = c.params["generation"].as_u64().unwrap() as u32;
            let want = if c.bots.is_some() { Part::Rate(g) } else { Part::Play(g) };
            assert_eq!(l.part(c.index), Some(want));
        }
        assert_eq!(l.part(6), None);
        let plain = parse("[generations]\ncount = 2\ngames = 20").unwrap();
        assert_eq!(plain.cells().unwrap().len(), 2);
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
        assert_eq!(
            ExperimentSpec::parse("name = \"m\"\nkind = \"match\"\ngames = 2\n[match]\nbot1 = \"static\"\nbot2 = \"greedy\"\n[generations]\ncount = 1\ngames = 2")
                .unwrap_err()
                .field,
            "generations"
        );
    }
}
