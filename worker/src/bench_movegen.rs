//! `worker bench-movegen`: all-moves and best-move generation on a fixed file of positions, by
//! rack class, so that other engines can be timed on exactly the same positions
//! (`scripts/peers.sh`; docs/BENCHMARKS.md).

use crate::bench::request;
use crate::data::{DataArgs, load_leaves};
use anyhow::{Result, bail};
use engine::eval::StaticEval;
use engine::game::Game;
use engine::movegen::{Generator, Mode};
use engine::tiles::BLANK;
use std::path::PathBuf;
use std::time::Instant;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    data: DataArgs,
    /// Leave table (default: the shipped one).
    #[arg(long)]
    leaves: Option<PathBuf>,
    /// Positions, one CGP a line (`#` comments); the player on turn's rack is generated for.
    #[arg(long, default_value = "docs/movegen-bench.cgp")]
    file: PathBuf,
    /// Passes over the positions; each class's median pass is reported.
    #[arg(long, default_value_t = 5)]
    rounds: usize,
}

const CLASSES: [&str; 3] = ["no blank", "one blank", "two blanks"];

pub fn run(a: Args) -> Result<()> {
    if a.rounds == 0 {
        bail!("--rounds: at least 1");
    }
    let data = a.data.load()?;
    let ctx = data.ctx();
    let Some(klv) = load_leaves(a.leaves.as_deref())?.map(std::sync::Arc::new) else {
        bail!("no leave table: pass --leaves")
    };
    let eval = StaticEval::new(Some(klv));
    engine::movegen::prepare(ctx.kwg);
    let mut classes: [Vec<Game>; 3] = Default::default();
    for (_, g) in data.read_positions(&a.file)? {
        let blanks = g.racks[g.on_turn].iter().filter(|&&t| t == BLANK).count();
        classes[blanks.min(2)].push(g);
    }
    let mut mg = Generator::new();
    // One pass over the positions, as each round: (moves, seconds). The leave values of the
    // rack's subsets are worked out inside the timing, as every engine must per call.
    let mut pass = |games: &[Game], mode: Mode| {
        let (mut moves, start) = (0, Instant::now());
        for g in games {
            let leaves = eval.rack_leaves(ctx, g);
            moves += std::hint::black_box(mg.generate(ctx, &request(g, &leaves), mode)).len();
        }
        (moves, start.elapsed().as_secs_f64())
    };
    // The word map is built on the first best-move call with a blank: not a round's cost.
    classes.iter().for_each(|games| _ = pass(games, Mode::Best(1)));
    // All-moves rounds, then best-move rounds, the classes alternated within each so that the
    // machine's swings fall on them alike. Best-move rounds do not follow all-moves passes: a
    // two-blank rack's 16,000 moves a position would leave the caches cold for it, which no
    // caller of best move (self-play, rollouts) meets.
    let mut all: [Vec<(usize, f64)>; 3] = Default::default();
    let mut best: [Vec<f64>; 3] = Default::default();
    for _ in 0..a.rounds {
        for (class, games) in classes.iter().enumerate() {
            all[class].push(pass(games, Mode::All));
        }
    }
    for _ in 0..a.rounds {
        for (class, games) in classes.iter().enumerate() {
            best[class].push(pass(games, Mode::Best(1)).1);
        }
    }
    let mut out = format!(
        "{}: {} rounds, median round\n\n| rack class | positions | moves (total) | all-moves M moves/s | best-move us/position |\n\
         | --- | --- | --- | --- | --- |\n",
        a.file.display(),
        a.rounds
    );
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    for (((name, games), all), best) in CLASSES.iter().zip(&classes).zip(all).zip(best) {
        if games.is_empty() {
            continue;
        }
        let moves = all[0].0;
        out += &format!(
            "| {name} | {} | {moves} | {:.2} | {:.0} |\n",
            games.len(),
            moves as f64 / median(all.iter().map(|r| r.1).collect()) / 1e6,
            1e6 * median(best) / games.len() as f64
        );
    }
    crate::emit(&out)
}
