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
    // Per class and round: (moves, all-moves seconds, best-move seconds). The leave values
    // of the rack's subsets are worked out inside the timing, as every engine must per call.
    let mut runs: [Vec<(usize, f64, f64)>; 3] = Default::default();
    for _ in 0..a.rounds {
        for (class, games) in classes.iter().enumerate() {
            let (mut moves, start) = (0, Instant::now());
            for g in games {
                let leaves = eval.rack_leaves(ctx, g);
                moves += mg.generate(ctx, &request(g, &leaves), Mode::All).len();
            }
            let all = start.elapsed().as_secs_f64();
            let start = Instant::now();
            for g in games {
                let leaves = eval.rack_leaves(ctx, g);
                std::hint::black_box(mg.generate(ctx, &request(g, &leaves), Mode::Best(1)));
            }
            runs[class].push((moves, all, start.elapsed().as_secs_f64()));
        }
    }
    let mut out = format!(
        "{}: {} rounds, median round\n\n| rack class | positions | moves (total) | all-moves M moves/s | best-move us/position |\n\
         | --- | --- | --- | --- | --- |\n",
        a.file.display(),
        a.rounds
    );
    for ((name, games), mut r) in CLASSES.iter().zip(&classes).zip(runs) {
        if games.is_empty() {
            continue;
        }
        let moves = r[0].0;
        r.sort_by(|x, y| x.1.total_cmp(&y.1));
        let all = r[r.len() / 2].1;
        r.sort_by(|x, y| x.2.total_cmp(&y.2));
        let best = r[r.len() / 2].2;
        out += &format!(
            "| {name} | {} | {moves} | {:.2} | {:.0} |\n",
            games.len(),
            moves as f64 / all / 1e6,
            1e6 * best / games.len() as f64
        );
    }
    crate::emit(&out)
}
