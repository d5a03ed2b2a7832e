//! `worker bench`: move generation and self-play speed on positions from seeded self-play.

use crate::data::{DataArgs, load_leaves};
use crate::play::Match;
use anyhow::{Result, bail};
use engine::autoplay::play_leg;
use engine::bots::BotSpec;
use engine::eval::{OPENING_VOWEL_PENALTY, StaticEval};
use engine::game::{Game, MIN_BAG_TO_EXCHANGE};
use engine::gcg::{replay_deal, write_csv, write_gcg};
use engine::leaves::RackLeaves;
use engine::movegen::{Generator, Mode, Request};
use engine::tiles::BLANK;
use indicatif::{ProgressBar, ProgressStyle};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    data: DataArgs,
    /// Leave table (default: the shipped one).
    #[arg(long)]
    leaves: Option<PathBuf>,
    /// Positions sampled from self-play for the generation benchmarks.
    #[arg(long, default_value_t = 2000)]
    positions: usize,
    /// Games for the self-play benchmarks.
    #[arg(long, default_value_t = 1000)]
    games: u64,
    /// Mid-game positions for the simulation benchmark.
    #[arg(long, default_value_t = 40)]
    sim_positions: usize,
    /// Threads for the all-threads self-play run (default: all cores).
    #[arg(long, value_parser = crate::cli::threads)]
    threads: Option<usize>,
    /// Seed of the self-play games the positions come from.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

pub fn run(a: Args) -> Result<()> {
    let data = a.data.load()?;
    let Some(klv) = load_leaves(a.leaves.as_deref())?.map(Arc::new) else { bail!("no leave table: pass --leaves") };
    let ctx = data.ctx();
    engine::movegen::prepare(ctx.kwg); // built here, not inside the first timed stage
    let mut mg = Generator::new();

    // Positions (with the static bot's leave values) from static-vs-static games.
    let bar = stage("positions from self-play");
    let eval = StaticEval::new(Some(klv.clone()));
    let mut bots = [BotSpec::STATIC.build(Some(klv.clone()), None)?, BotSpec::STATIC.build(Some(klv.clone()), None)?];
    let mut positions: Vec<(Game, RackLeaves)> = Vec::with_capacity(a.positions);
    let mut pair = 0;
    while positions.len() < a.positions {
        let rec = play_leg(ctx, &mut bots, a.seed, pair, 0, &mut mg);
        pair += 1;
        let mut replay = Game::new(&data.dist, rec.deal_seed);
        for t in &rec.game.history {
            if positions.len() < a.positions {
                positions.push((replay.clone(), eval.rack_leaves(ctx, &replay)));
            }
            replay.play(ctx, &t.mv);
        }
    }

    bar.set_message("all-moves generation");
    let start = Instant::now();
    let mut moves = 0usize;
    let mut rounds = 0;
    while rounds == 0 || start.elapsed().as_secs_f64() < 2.0 {
        for (g, leaves) in &positions {
            moves += mg.generate(ctx, &request(g, leaves), Mode::All).len();
        }
        rounds += 1;
    }
    let secs = start.elapsed().as_secs_f64();
    bar.finish_and_clear();
    crate::emit(&format!(
        "all-moves generation: {:.0} moves/s ({:.0} positions/s, {:.0} moves per position; 1 thread)\n",
        moves as f64 / secs,
        (rounds * positions.len()) as f64 / secs,
        moves as f64 / (rounds * positions.len()) as f64
    ))?;

    let bar = stage("best-move evaluation");
    let start = Instant::now();
    let mut evals = 0usize;
    while evals == 0 || start.elapsed().as_secs_f64() < 2.0 {
        for (g, _) in &positions {
            let leaves = eval.rack_leaves(ctx, g);
            std::hint::black_box(mg.generate(ctx, &request(g, &leaves), Mode::Best(1)));
            evals += 1;
        }
    }
    let secs = start.elapsed().as_secs_f64();
    bar.finish_and_clear();
    crate::emit(&format!(
        "best-move static evaluation: {:.0} positions/s (leave lookups included; 1 thread)\n",
        evals as f64 / secs
    ))?;

    // The same positions in three rack classes, so that what a blank costs is measured on the
    // same boards and rack sizes.
    let bar = stage("generation by rack class");
    let mut classes = String::from(
        "\n| rack class | positions | all-moves M moves/s | moves per position | best-move us/position | best-move vs no blank |\n\
         | --- | --- | --- | --- | --- | --- |\n",
    );
    let mut no_blank_us = None;
    let e = data.dist.letter('E').unwrap_or(1);
    for blanks in 0..=2 {
        let class: Vec<(Game, RackLeaves)> = positions
            .iter()
            .filter_map(|(g, _)| with_blanks(g, blanks, e))
            .map(|g| {
                let leaves = eval.rack_leaves(ctx, &g);
                (g, leaves)
            })
            .collect();
        let (mut moves, mut gens) = (0usize, 0usize);
        let start = Instant::now();
        while gens == 0 || start.elapsed().as_secs_f64() < 1.0 {
            for (g, leaves) in &class {
                moves += mg.generate(ctx, &request(g, leaves), Mode::All).len();
                gens += 1;
            }
        }
        let all_secs = start.elapsed().as_secs_f64();
        let mut evals = 0usize;
        let start = Instant::now();
        while evals == 0 || start.elapsed().as_secs_f64() < 1.0 {
            for (g, leaves) in &class {
                std::hint::black_box(mg.generate(ctx, &request(g, leaves), Mode::Best(1)));
                evals += 1;
            }
        }
        let us = 1e6 * start.elapsed().as_secs_f64() / evals as f64;
        let base = *no_blank_us.get_or_insert(us);
        classes += &format!(
            "| {} | {} | {:.2} | {:.0} | {:.0} | {:.2}x |\n",
            ["no blank", "one blank", "two blanks"][blanks],
            class.len(),
            moves as f64 / all_secs / 1e6,
            moves as f64 / gens as f64,
            us,
            us / base
        );
    }
    bar.finish_and_clear();
    crate::emit(&classes)?;

    // Simulation: 2-ply rollouts of the top 15 candidates against a random opponent rack, on
    // mid-game positions (at least 14 tiles in the bag), one thread.
    let table = crate::data::load_wintable(None)?;
    let sim = engine::sim::Simulator { ctx, leaves: Some(klv.clone()), table: &table, net: None };
    let one = rayon::ThreadPoolBuilder::new().num_threads(1).build()?;
    let midgame: Vec<&Game> = positions
        .iter()
        .map(|(g, _)| g)
        .filter(|g| g.bag.len() >= 14 && !g.history.is_empty())
        .step_by(7)
        .take(a.sim_positions)
        .collect();
    let cfg = |seed| engine::sim::SimConfig {
        candidates: 15,
        plies: 2,
        iterations: engine::sim::BLOCK,
        stop: None,
        seed,
        time_limit: None,
    };
    let bar = stage("simulation");
    let start = Instant::now();
    let rollouts: u64 = one.install(|| {
        midgame
            .iter()
            .enumerate()
            .map(|(i, g)| sim.run(g, &cfg(i as u64), &|_| {}))
            .map(|r| r.iterations * r.candidates.len() as u64)
            .sum()
    });
    let secs = start.elapsed().as_secs_f64();
    bar.finish_and_clear();
    crate::emit(&format!(
        "simulation: {:.0} rollouts/s (2 plies, 15 candidates, {} positions x {} iterations; 1 thread)\n",
        rollouts as f64 / secs,
        midgame.len(),
        engine::sim::BLOCK
    ))?;

    // The coordinator's check of a match upload: the batch's logged games re-played on their
    // deals (`engine::gcg::replay_deal`), against the time the same games took to play.
    let names = ["static", "static"];
    let bar = stage("the upload check");
    let start = Instant::now();
    let logs: Vec<(u64, String)> = (0..a.games.min(200))
        .map(|i| {
            let rec = play_leg(ctx, &mut bots, a.seed, i / 2, (i % 2) as usize, &mut mg);
            (rec.deal_seed, write_gcg(&rec.game, names, &data.dist))
        })
        .collect();
    let played = start.elapsed().as_secs_f64();
    let start = Instant::now();
    for (deal, gcg) in &logs {
        replay_deal(gcg, ctx, *deal, names, "bench")?;
    }
    let replayed = start.elapsed().as_secs_f64();
    bar.finish_and_clear();
    crate::emit(&format!(
        "upload check (re-play on the deal): {:.1} games/s against {:.1} games/s playing them, static-vs-static: \
         {:.0}% of the playing time (1 thread)\n",
        logs.len() as f64 / replayed,
        logs.len() as f64 / played,
        100.0 * replayed / played
    ))?;

    // Where self-play's time goes, one thread: the bots' choices (move generation and leave
    // values), the game loop around them (racks, bag, scoring, the record), and the logs a
    // volunteer writes of every game (GCG and CSV).
    let bar = stage("where self-play's time goes");
    let (mut playing, mut choosing, mut logging, mut turns) = (0.0, 0u64, 0.0, 0usize);
    let games = a.games.min(1000);
    for i in 0..games {
        let start = Instant::now();
        let rec = play_leg(ctx, &mut bots, a.seed + 1, i / 2, (i % 2) as usize, &mut mg);
        playing += start.elapsed().as_secs_f64();
        choosing += rec.micros.iter().sum::<u64>();
        turns += rec.game.history.len();
        let start = Instant::now();
        std::hint::black_box((write_gcg(&rec.game, names, &data.dist), write_csv(&rec, names, &data.dist)));
        logging += start.elapsed().as_secs_f64();
    }
    bar.finish_and_clear();
    let search = choosing as f64 / 1e6;
    let whole = playing + logging;
    crate::emit(&format!(
        concat!(
            "where static self-play's time goes ({} games, {} turns, 1 thread): search {:.1}% ({:.1} us a turn: ",
            "move generation and leave values), game loop {:.1}% ({:.1} us a turn: racks, bag, scoring, the ",
            "record), logs {:.1}% (GCG and CSV, {:.0} us a game); {:.1} games/s with logs\n"
        ),
        games,
        turns,
        100.0 * search / whole,
        1e6 * search / turns as f64,
        100.0 * (playing - search) / whole,
        1e6 * (playing - search) / turns as f64,
        100.0 * logging / whole,
        1e6 * logging / games as f64,
        games as f64 / whole
    ))?;

    let threads = a.threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    for t in [1, threads] {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(t).build()?;
        let m = Match {
            net: None,
            data: &data,
            specs: [BotSpec::STATIC, BotSpec::STATIC],
            leaves: Some(klv.clone()),
            tables: Default::default(),
            table: None,
            seed: a.seed,
            first_game: 0,
            games: a.games,
            paired: true,
        };
        let bar = stage(&format!("self-play on {t} thread(s)"));
        let start = Instant::now();
        pool.install(|| m.play(&|_| Ok(())))?;
        let secs = start.elapsed().as_secs_f64();
        bar.finish_and_clear();
        crate::emit(&format!(
            "static-vs-static self-play: {:.1} games/s on {t} thread(s), {:.1} games per CPU-second\n",
            a.games as f64 / secs,
            a.games as f64 / secs / t as f64
        ))?;
        if threads == 1 {
            break;
        }
    }
    Ok(())
}

/// `g` with its rack's blanks taken out and its last `blanks` tiles made blanks (racks of at
/// least two tiles only): every class holds the same boards and rack sizes.
fn with_blanks(g: &Game, blanks: usize, e: u8) -> Option<Game> {
    let rack = &g.racks[g.on_turn];
    if rack.len() < 2 {
        return None;
    }
    let mut g = g.clone();
    let rack = &mut g.racks[g.on_turn];
    // A blank taken out comes back as the letter it most often stands for.
    for t in rack.iter_mut().filter(|t| **t == BLANK) {
        *t = e;
    }
    let n = rack.len();
    rack[n - blanks..].fill(BLANK);
    Some(g)
}

/// A spinner naming what is being measured (stderr, hidden when not a terminal).
fn stage(what: &str) -> ProgressBar {
    let bar = ProgressBar::new_spinner()
        .with_style(ProgressStyle::with_template("{spinner} measuring {msg} ({elapsed})").expect("valid template"))
        .with_message(what.to_string());
    bar.enable_steady_tick(std::time::Duration::from_millis(120));
    bar
}

pub(crate) fn request<'a>(g: &'a Game, leaves: &'a RackLeaves) -> Request<'a> {
    Request {
        board: &g.board,
        rack: &g.racks[g.on_turn],
        leaves,
        can_exchange: g.bag.len() >= MIN_BAG_TO_EXCHANGE,
        opening_vowel_penalty: OPENING_VOWEL_PENALTY,
    }
}
