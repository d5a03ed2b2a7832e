//! `worker sim`: simulate a position and print the candidate table, best first.

use crate::data::{DataArgs, load_leaves};
use anyhow::{Context, Result, bail};
use engine::cgp::Position;
use engine::sim::{SimConfig, Simulator, StopLevel};
use indicatif::{ProgressBar, ProgressStyle};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    data: DataArgs,
    /// The position in CGP notation (the player on turn is the one simulated for).
    #[arg(long)]
    cgp: String,
    /// Static plies after each candidate.
    #[arg(long, default_value_t = 2)]
    plies: usize,
    /// Candidates: the static evaluator's top K.
    #[arg(long, default_value_t = 15)]
    candidates: usize,
    /// Iterations (the most, when --stop is given).
    #[arg(long, default_value_t = 1000)]
    iterations: u64,
    /// Stop early at this confidence: 95, 98 or 99.
    #[arg(long)]
    stop: Option<String>,
    /// Seed of the opponent racks and draws.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Threads (default: all cores).
    #[arg(long, value_parser = crate::cli::threads)]
    threads: Option<usize>,
    /// Leave table (`.klv2`; default: the shipped table).
    #[arg(long)]
    leaves: Option<PathBuf>,
    /// Win-probability table (`.wpt`; default: lexica/enable.wpt).
    #[arg(long)]
    wintable: Option<PathBuf>,
}

pub fn run(a: Args) -> Result<()> {
    let stop = match a.stop.as_deref() {
        None => None,
        Some(s) => Some(StopLevel::parse(s).context("--stop: must be 95, 98 or 99")?),
    };
    if a.iterations == 0 || a.candidates == 0 {
        bail!("--iterations and --candidates: at least 1");
    }
    let data = a.data.load()?;
    let leaves = load_leaves(a.leaves.as_deref())?.map(Arc::new);
    let table = crate::data::load_wintable(a.wintable.as_deref())?;
    let game = Position::parse(&a.cgp, &data.dist)?.into_game(&data.kwg, &data.dist, a.seed);
    if game.racks[game.on_turn].is_empty() {
        bail!("--cgp: the player on turn has no tiles");
    }
    let threads = a.threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build()?;
    let sim = Simulator { ctx: data.ctx(), leaves, table: &table, net: None };
    let cfg = SimConfig {
        candidates: a.candidates,
        plies: a.plies,
        iterations: a.iterations,
        stop,
        seed: a.seed,
        time_limit: None,
    };
    let bar = ProgressBar::new(a.iterations).with_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} iterations  {per_sec}").expect("valid template"),
    );
    engine::movegen::prepare(data.ctx().kwg); // built here, not inside the timed simulation
    let start = Instant::now();
    let result = pool.install(|| sim.run(&game, &cfg, &|done| bar.set_position(done)));
    bar.finish_and_clear();
    let secs = start.elapsed().as_secs_f64();
    let rack = &game.racks[game.on_turn];
    let mut out = format!("{:<22} {:<8} {:>5}  {:>15}  {:>16}\n", "Play", "Leave", "Score", "Win%", "Equity");
    for c in &result.candidates {
        let play = c.mv.notation(&data.dist, |r, col| game.board.at(r, col));
        let mut leave = c.mv.leave(rack);
        leave.sort_unstable();
        let ci = |s: &engine::stats::Welford, scale: f64| engine::stats::Z95 * s.stderr() * scale;
        out.push_str(&format!(
            "{play:<22} {:<8} {:>5}  {:>7.2} ± {:<5.2}  {:>+8.2} ± {:<5.2}{}\n",
            data.dist.rack_string(&leave),
            c.mv.score,
            100.0 * c.win.mean(),
            ci(&c.win, 100.0).min(99.99),
            c.equity.mean(),
            ci(&c.equity, 1.0).min(999.99),
            if c.cut { "  (cut)" } else { "" }
        ));
    }
    out.push_str(&format!(
        "Iterations: {}  Plies: {}  Candidates: {}  Seed: {}  Threads: {threads}  Time: {secs:.2}s\n",
        result.iterations,
        a.plies,
        result.candidates.len(),
        a.seed
    ));
    crate::emit(&out)
}
