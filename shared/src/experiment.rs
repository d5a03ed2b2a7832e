//! Experiment files: what a researcher submits. An experiment names a job kind and what that
//! kind needs (for a match: the bots, their parameters, and optionally a grid of parameter
//! values); every grid point is a *cell* with its own target. The fields every kind has are
//! read here; each kind reads its own ([`crate::kinds`]).
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

use crate::kinds::matches::models;
use crate::kinds::{ExperimentKind, JobKind};
use crate::spec::{Artifacts, CellSpec, File, MAX_DESCRIPTION, MAX_NAME, MAX_PRIORITY, SpecError, err};
use serde::{Deserialize, Serialize};

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
            return err(
                "kind",
                format!("unknown job kind `{}` (known: {})", f.kind, JobKind::names(JobKind::ALL).join(", ")),
            );
        };
        let name = f.name.trim().to_string();
        if name.is_empty() || name.len() > MAX_NAME {
            return err("name", format!("must be 1 to {MAX_NAME} characters"));
        }
        if f.description.len() > MAX_DESCRIPTION {
            return err("description", format!("at most {MAX_DESCRIPTION} bytes"));
        }
        if !(-MAX_PRIORITY..=MAX_PRIORITY).contains(&f.priority) {
            return err("priority", format!("from -{MAX_PRIORITY} to {MAX_PRIORITY}"));
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
        if f.gpu && !kind.plays_bots() {
            let which = JobKind::names_where(|k| k.plays_bots).join(" and ");
            return err("gpu", format!("only {which} experiments (with a CNN bot) run on GPUs"));
        }
        let (description, priority, seed, artifacts, gpu) =
            (f.description.clone(), f.priority, f.seed, f.artifacts.clone(), f.gpu);
        let kind = ExperimentKind::parse(kind, f)?;
        Ok(ExperimentSpec { name, description, priority, seed, artifacts, gpu, kind })
    }

    /// Check the experiment against the tile distribution it runs with (an endgame
    /// experiment's listed positions), once the coordinator has resolved its artifacts.
    pub fn check_positions(&self, dist: &engine::tiles::Distribution) -> Result<(), SpecError> {
        self.kind.check(dist)
    }

    /// The cells to store: a match's grid points; an endgame experiment's two passes; a win
    /// table's one cell (each kind's [`crate::kinds::Kind::cells`]).
    pub fn cells(&self) -> Result<Vec<CellSpec>, SpecError> {
        self.kind.cells(self.seed)
    }
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
    use crate::kinds::wintable::WintableSpec;

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
        rejects(&GRID.replace("games = 100", "games = 100\npriority = 101"), "priority");
        rejects(&GRID.replace("games = 100", "games = 100\npriority = -2147483648"), "priority");
        rejects("name = \"w\"\nkind = \"wintable\"\ngames = 2\ngpu = true\n", "gpu");
        rejects(&format!("{GRID}\n[sprt]\np0 = 0.6\np1 = 0.5\nalpha = 0.05\nbeta = 0.05\n"), "sprt");
        // fishtest's elo bounds are not ours: an unknown key is refused, not ignored.
        let e = ExperimentSpec::parse(&format!(
            "{GRID}\n[sprt]\np0 = 0.5\np1 = 0.55\nalpha = 0.05\nbeta = 0.05\nelo0 = 3\n"
        ))
        .unwrap_err();
        assert!(e.to_string().contains("elo0"), "{e}");
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
    fn bots_name_their_own_leave_tables_by_sha256() {
        let (a, b) = ("a".repeat(64), "b".repeat(64));
        let text = format!(
            "name = \"x\"\nkind = \"match\"\ngames = 2\n[match]\nbot1 = \"static:leaves={b}\"\nbot2 = \"static\"\n[grid]\n\"bot1.leaves\" = [\"{b}\", \"{a}\"]\n"
        );
        let spec = ExperimentSpec::parse(&text).unwrap();
        let cells = spec.cells().unwrap();
        assert_eq!(crate::kinds::matches::tables(&cells), [a.clone(), b.clone()]);
        assert!(models(&cells).is_empty() && needs(&spec, &cells).is_empty());
        rejects(&text.replace(&format!("\"{a}\""), "\"mine.klv2\""), "grid.\"bot1.leaves\"");
        rejects(&GRID.replace("bot2 = \"static\"", "bot2 = \"greedy:leaves=x\""), "match.bot2");
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
        assert_eq!((m.games_per_cell, spec.kind.axes().len(), spec.kind.sprt(0)), (100, 2, None));
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
