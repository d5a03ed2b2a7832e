//! `worker infer`: read the leave of the player who made a turn of a GCG game, from the view of
//! the other player, and print the posterior as rack-inference tools do.

use crate::data::{DataArgs, load_leaves};
use anyhow::{Context, Result, bail};
use engine::gcg::Viewer;
use engine::infer::{InferConfig, Inference, Likelihood, Posterior, observe};
use engine::tiles::Distribution;
use engine::view::{Knows, View};
use indicatif::{ProgressBar, ProgressStyle};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    data: DataArgs,
    /// The game, in GCG.
    #[arg(long)]
    gcg: PathBuf,
    /// The turn whose mover's leave is inferred (from 1: plays, exchanges and passes in file
    /// order; a phony and the `--` line that takes it back are one turn; bonus, penalty and
    /// end-of-game lines are none).
    #[arg(long)]
    turn: usize,
    /// The viewer's rack (default: what the log shows of it on the viewer's next turn, or in
    /// `#rack1`/`#rack2` after the last turn; '' for none, so that every tile off the board
    /// counts as unseen).
    #[arg(long)]
    rack: Option<String>,
    /// How the observed turn is weighed: mini-simulation, static equity, or not at all (the
    /// prior).
    #[arg(long, default_value = "sim")]
    likelihood: String,
    /// Softmax temperature: on log-odds of winning (sim; default 0.05) or equity points
    /// (static; default 3).
    #[arg(long)]
    tau: Option<f64>,
    /// Mini-simulation iterations per leave.
    #[arg(long, default_value_t = 200)]
    iterations: u64,
    /// The opponent's candidates per leave (their static top K, plus the move they made).
    #[arg(long, default_value_t = 8)]
    candidates: usize,
    /// Plies of the mini-simulations (one: the opponent's reply to each candidate, both
    /// players' leaves counted; measured as good a read as two at a sixth of the cost,
    /// docs/BENCHMARKS.md)
    #[arg(long, default_value_t = 1)]
    plies: usize,
    /// Enumerate the leaves when there are at most this many distinct ones; else draw this
    /// many from the prior.
    #[arg(long, default_value_t = 750)]
    max_leaves: usize,
    /// Seed of the mini-simulations and of the leaves drawn (same seed, same posterior).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Threads (default: all cores; the posterior is the same at any count).
    #[arg(long, value_parser = crate::cli::threads)]
    threads: Option<usize>,
    /// Leaves to list.
    #[arg(long, default_value_t = 20)]
    top: usize,
    /// Leave table (`.klv2`; default: the shipped table).
    #[arg(long)]
    leaves: Option<PathBuf>,
    /// Win-probability table (`.wpt`; default: lexica/enable.wpt).
    #[arg(long)]
    wintable: Option<PathBuf>,
    /// Also print the posterior as one JSON object on the last line.
    #[arg(long)]
    json: bool,
    /// Then simulate the reader's move this many iterations twice, with the opponent's rack
    /// drawn at random and with the read (as `sim:...,infer=` does), and show whether the best
    /// play changes.
    #[arg(long)]
    simulate: Option<u64>,
    /// Candidates of those simulations (the reader's static top K).
    #[arg(long, default_value_t = 15)]
    sim_candidates: usize,
    /// Plies of those simulations.
    #[arg(long, default_value_t = 2)]
    sim_plies: usize,
}

pub fn run(a: Args) -> Result<()> {
    let likelihood = Likelihood::parse(&a.likelihood).context("--likelihood: must be sim, static or flat")?;
    let tau = a.tau.unwrap_or(likelihood.default_tau());
    if !(tau.is_finite() && tau > 0.0) {
        bail!("--tau: must be a number above 0");
    }
    if a.iterations == 0 || a.candidates == 0 || a.max_leaves == 0 {
        bail!("--iterations, --candidates and --max-leaves: at least 1");
    }
    let data = a.data.load()?;
    let ctx = data.ctx();
    let source = a.gcg.display().to_string();
    let bytes = std::fs::read(&a.gcg).with_context(|| format!("{source}: cannot read"))?;
    let replay = engine::gcg::read(&engine::gcg::decode(&bytes, &source)?, ctx, &source);
    for w in &replay.warnings {
        eprintln!("warning: {w}");
    }
    let rack = match a.rack.as_deref() {
        Some("") => Some(Vec::new()),
        Some(r) => Some(data.dist.parse_rack(r).map_err(|e| anyhow::anyhow!("--rack: {e}"))?),
        None => None,
    };
    let at = engine::gcg::game_at(&replay, a.turn, rack, ctx).map_err(|e| anyhow::anyhow!("{source}: {e}"))?;
    let game = &at.game;
    let t = &replay.turns[a.turn - 1];
    if t.withdrawn {
        bail!(
            "{source}: turn {} (line {}) was challenged off: it placed nothing, which says nothing of the rack",
            a.turn,
            t.line
        );
    }
    if !t.unknown_words.is_empty() && likelihood != Likelihood::Flat {
        bail!(
            "{source}: turn {} (line {}) forms {}, which the lexicon lacks, so no rack makes it by the engine's moves: read it with the game's word list{} (--lexicon), or weigh nothing (--likelihood flat)",
            a.turn,
            t.line,
            t.unknown_words.join(", "),
            replay.lexicon.as_ref().map_or(String::new(), |l| format!(", {l} by the log")),
        );
    }
    let view = View::new(game, Knows::Nothing);
    let Some(obs) = observe(ctx, &view) else {
        bail!("{source}: turn {} is a pass, which says nothing of the rack", a.turn);
    };
    let whole_rack = match at.viewer {
        Viewer::Given if game.racks[game.on_turn].is_empty() => {
            eprintln!("the viewer's rack: unknown (--rack ''): every tile off the board counts as unseen");
            false
        }
        Viewer::Given | Viewer::Logged => true,
        Viewer::Partial { known, holds } => {
            eprintln!(
                "the viewer's rack: the log shows {known} of its {holds} tiles ({}); the rest count as unseen (give it with --rack)",
                data.dist.rack_string(&game.racks[game.on_turn])
            );
            false
        }
        Viewer::Unknown => {
            eprintln!(
                "the viewer's rack: the log does not show it, so every tile off the board counts as unseen (give it with --rack)"
            );
            false
        }
    };
    if a.simulate.is_some() && !whole_rack {
        bail!("--simulate plays the viewer's move, so it needs the viewer's whole rack: give it with --rack");
    }
    let leaves = load_leaves(a.leaves.as_deref())?.map(Arc::new);
    let table = crate::data::load_wintable(a.wintable.as_deref())?;
    let threads = a.threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build()?;
    let cfg = InferConfig {
        likelihood,
        tau,
        iterations: a.iterations,
        candidates: a.candidates,
        plies: a.plies,
        max_leaves: a.max_leaves,
        draws: a.max_leaves,
        seed: a.seed,
        ..InferConfig::default()
    };
    let spinner = ProgressBar::new_spinner()
        .with_style(ProgressStyle::with_template("{spinner} inferring ({elapsed})").expect("valid template"));
    spinner.enable_steady_tick(Duration::from_millis(200));
    let start = Instant::now();
    let inference = Inference { ctx, leaves: leaves.clone(), table: &table };
    let post = pool.install(|| inference.infer(&obs, &cfg, None));
    spinner.finish_and_clear();
    if post.leaves.is_empty() {
        bail!(
            "{source}: turn {}: no leave of the {} evaluated makes the logged play by the engine's moves",
            a.turn,
            post.evaluated
        );
    }
    let secs = start.elapsed().as_secs_f64();
    let shown = if obs.exchanged > 0 {
        format!("an exchange of {}", obs.exchanged)
    } else {
        format!(
            "{} (placed {})",
            t.mv.notation(&data.dist, |r, c| game.board.at(r, c)),
            data.dist.rack_string(&obs.played)
        )
    };
    println!(
        "turn {} ({}, line {}): {shown}; {} tiles unseen before it, a {}-tile leave",
        a.turn,
        if t.player == 0 { "first player" } else { "second player" },
        t.line,
        obs.pool.len(),
        obs.rack_len - obs.played.len() - obs.exchanged,
    );
    println!(
        "{} distinct leaves evaluated ({}), {} mini-sim iterations, effective sample size {:.1}, {:.2} s on {threads} threads",
        post.evaluated,
        if post.draws == 0 { "enumerated".to_string() } else { format!("{} drawn from the prior", post.draws) },
        post.iterations,
        post.ess,
        secs
    );
    println!("\ntile  on the leave vs chance");
    for (tile, ratio) in post.tile_ratios() {
        let r = ratio.map_or("-".to_string(), |r| format!("{r:.2}x"));
        println!("{:>4}  {r:>8}", data.dist.rack_char(tile));
    }
    println!("\n{:<8} {:>8} {:>8}", "leave", "weight", "prior");
    for w in post.leaves.iter().take(a.top) {
        println!("{:<8} {:>7.2}% {:>7.2}%", leave_text(&data.dist, &w.leave), 100.0 * w.weight, 100.0 * w.prior);
    }
    // The log lists the mover's rack (self-play logs always do): then the read can be scored
    // against the leave really kept.
    let truth = Some(t.mv.leave(&t.rack))
        .filter(|_| t.rack_complete())
        .map(|l| (leave_text(&data.dist, &l), l.len(), post.overlap(&l)));
    if let Some((kept, n, (read, prior))) = &truth {
        println!(
            "\nthe leave really kept (from the log): {kept}; of its {n} tiles a leave holds {read:.2} by the read, {prior:.2} by chance"
        );
    }
    let compared = match a.simulate {
        Some(iterations) => {
            let sim = engine::sim::Simulator { ctx, leaves, table: &table, net: None };
            Some(pool.install(|| compare(&sim, game, &post, iterations, &a, &data.dist)))
        }
        None => None,
    };
    if a.json {
        let mut j = json(&data.dist, &post, secs);
        if let Some((kept, _, (read, prior))) = &truth {
            j["truth"] = serde_json::json!({ "leave": kept.replace('-', ""), "overlap": read, "prior_overlap": prior });
        }
        if let Some([blind, read]) = compared {
            j["best_without_read"] = blind.into();
            j["best_with_read"] = read.into();
        }
        println!("{j}");
    }
    Ok(())
}

/// Simulate the reader's move with the opponent's rack drawn at random, then with it drawn
/// from the read; print both tables' top and return both best plays.
fn compare(
    sim: &engine::sim::Simulator,
    game: &engine::game::Game,
    post: &Posterior,
    iterations: u64,
    a: &Args,
    dist: &Distribution,
) -> [String; 2] {
    use engine::sim::{Opponent, SimConfig};
    let mut mg = engine::movegen::Generator::new();
    let moves = engine::eval::StaticEval::new(sim.leaves.clone()).best(sim.ctx, game, &mut mg, a.sim_candidates.max(1));
    let cfg = SimConfig {
        candidates: a.sim_candidates,
        plies: a.sim_plies,
        iterations,
        stop: None,
        seed: a.seed,
        time_limit: None,
    };
    let read = Opponent::Inferred {
        leaves: post.leaves.iter().map(|w| (w.leave.clone(), w.weight)).collect(),
        alpha: engine::infer::gate(post.leaves.len()),
    };
    let rack = dist.rack_string(&game.racks[game.on_turn]);
    let mut best = Vec::new();
    for (title, opponent) in
        [("their rack drawn at random", Opponent::Unknown), ("their rack drawn from the read", read)]
    {
        let r = sim.run_against(game, moves.to_vec(), &cfg, &opponent, &|_| {});
        println!("\nsimulating {rack} ({iterations} iterations, {} plies), {title}:", a.sim_plies);
        println!("{:<24} {:>7} {:>8}", "play", "win%", "equity");
        for c in r.candidates.iter().take(5) {
            let play = c.mv.notation(dist, |row, col| game.board.at(row, col));
            println!("{play:<24} {:>6.2}% {:>8.2}", 100.0 * c.win.mean(), c.equity.mean());
        }
        best.push(r.candidates[0].mv.notation(dist, |row, col| game.board.at(row, col)));
    }
    let [blind, read] = <[String; 2]>::try_from(best).expect("two simulations");
    if blind == read {
        println!("\nthe read does not change the best play: {read}");
    } else {
        println!("\nthe read changes the best play: {blind} -> {read}");
    }
    [blind, read]
}

/// A leave as players write it: letters sorted, the blank as `?` at the end.
fn leave_text(dist: &Distribution, leave: &[u8]) -> String {
    let mut s: String = leave.iter().filter(|&&t| t != 0).map(|&t| dist.rack_char(t)).collect();
    s.extend(leave.iter().filter(|&&t| t == 0).map(|_| '?'));
    if s.is_empty() { "-".into() } else { s }
}

fn json(dist: &Distribution, post: &Posterior, secs: f64) -> serde_json::Value {
    let leaves: Vec<serde_json::Value> = post
        .leaves
        .iter()
        .map(|w| serde_json::json!({ "leave": leave_text(dist, &w.leave).replace('-', ""), "weight": w.weight, "prior": w.prior }))
        .collect();
    serde_json::json!({
        "leaves": leaves,
        "evaluated": post.evaluated,
        "draws": post.draws,
        "iterations": post.iterations,
        "ess": post.ess,
        "seconds": secs,
    })
}
