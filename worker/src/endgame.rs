//! `worker endgame`: solve a position whose bag is empty and print its value and best line.

use crate::data::DataArgs;
use anyhow::{Result, bail};
use engine::cgp::Position;
use engine::endgame::{Depth, Options, Solver};
use engine::game::Game;
use engine::moves::Move;
use std::time::Duration;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    data: DataArgs,
    /// The position in CGP notation; the tiles not on the board must be exactly the two racks.
    #[arg(long)]
    cgp: String,
    /// Deepest search in plies (default: until solved).
    #[arg(long)]
    plies: Option<u8>,
    /// Search threads (they share out the root's moves).
    #[arg(long, value_parser = crate::cli::threads, default_value_t = 1)]
    threads: usize,
    /// Give up deepening after this many seconds and answer from the last complete depth.
    #[arg(long)]
    time: Option<f64>,
    /// Only decide win, draw or loss (faster).
    #[arg(long)]
    win_only: bool,
    /// Also list the exact values of this many first moves.
    #[arg(long, default_value_t = 0)]
    moves: usize,
    /// Most MiB the transposition table takes (each solve gets one sized to its tiles, up to
    /// this: 1 MiB at three tiles, all of it from seven); each search thread's play memo grows
    /// to about as much at most (96 MiB at least).
    #[arg(long, default_value_t = 256)]
    table_mb: usize,
}

/// The solver's time limit (`--time` seconds) and table size (`--table-mb`), checked.
fn limits(time: Option<f64>, table_mb: usize) -> Result<(Option<Duration>, usize)> {
    let time = match time {
        Some(s) if !(s.is_finite() && s > 0.0) => bail!("--time: a positive number of seconds"),
        Some(s) => Some(Duration::from_secs_f64(s)),
        None => None,
    };
    if table_mb == 0 || table_mb > 1 << 20 {
        bail!("--table-mb: 1 to 1048576");
    }
    Ok((time, table_mb << 20))
}

pub fn run(a: Args) -> Result<()> {
    if a.threads == 0 {
        bail!("--threads: at least 1");
    }
    if a.plies == Some(0) {
        bail!("--plies: at least 1");
    }
    let (time_limit, table_bytes) = limits(a.time, a.table_mb)?;
    let data = a.data.load()?;
    let ctx = data.ctx();
    let pos = Position::parse(&a.cgp, &data.dist)?;
    let game = pos.into_game(&data.kwg, &data.dist, 0);
    let solver = Solver::new(table_bytes);
    let opts = Options { plies: a.plies, threads: a.threads, time_limit, win_only: a.win_only, first_moves: a.moves };
    let progress = |d: &Depth| {
        let best = d.best.notation(ctx.dist, |r, c| game.board.at(r, c));
        eprintln!(
            "depth {:>2}  value {:>+5}  best {best:<20} nodes {:>11}  {:.2}s",
            d.depth,
            d.value,
            d.nodes,
            d.elapsed.as_secs_f64()
        );
    };
    let sol = solver.solve(ctx, &game, &opts, &progress).map_err(|e| anyhow::anyhow!("--cgp: {e}"))?;
    let secs = sol.elapsed.as_secs_f64();
    let mut out = String::new();
    if a.win_only {
        let result = match sol.value {
            v if v > 0 => "win",
            0 => "draw",
            _ => "loss",
        };
        out += &format!("result: {result}\n");
    }
    out += &format!("value: {}\n", sol.value);
    let exact = match (sol.exact, a.plies, a.time) {
        (true, ..) => "yes".to_string(),
        (false, Some(p), _) if sol.depth >= p => format!("no (stopped at the --plies {p} limit)"),
        (false, _, Some(t)) => format!("no (out of time: --time {t} s; deepest complete depth {})", sol.depth),
        (false, ..) => "no".to_string(),
    };
    out += &format!("exact: {exact}\n");
    let best = sol.pv.first().map_or("-".to_string(), |m| m.notation(ctx.dist, |r, c| game.board.at(r, c)));
    out += &format!("best: {best}\n");
    out += &format!("sequence: {}\n", crate::runners::line_notation(ctx, &game, &sol.pv).join("  "));
    out += &format!("stuck: {}\n", stuck_tiles(ctx, &game));
    for (mv, v) in &sol.first_moves {
        out += &format!("move: {:<20} {v:+}\n", mv.notation(ctx.dist, |r, c| game.board.at(r, c)));
    }
    out += &format!(
        "depth: {}  nodes: {}  nodes/s: {:.0}  time: {secs:.3}s  threads: {}  table: {} KiB\n",
        sol.depth,
        sol.nodes,
        sol.nodes as f64 / secs.max(1e-9),
        a.threads,
        solver.table_bytes() >> 10
    );
    crate::emit(&out)
}

#[derive(clap::Args)]
pub struct SetArgs {
    #[command(flatten)]
    data: DataArgs,
    /// How many positions.
    #[arg(long, default_value_t = 10)]
    count: usize,
    /// Seed of the self-play games the positions come from.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Tiles left in the bag (1: pre-endgames).
    #[arg(long, default_value_t = 0)]
    bag: usize,
    /// Static moves played after that point (smaller endgames).
    #[arg(long, default_value_t = 0)]
    extra: usize,
    /// Leave table (`.klv2`; default: the shipped table).
    #[arg(long)]
    leaves: Option<std::path::PathBuf>,
}

/// `worker endgame-set`: print positions where the bag just emptied (or first held `--bag`
/// tiles) in seeded static self-play, one CGP per line.
pub fn run_set(a: SetArgs) -> Result<()> {
    if a.count > 1_000_000 {
        bail!("--count: at most 1000000");
    }
    if a.bag > 86 {
        bail!("--bag: at most 86 tiles");
    }
    let data = a.data.load()?;
    let leaves = crate::data::load_leaves(a.leaves.as_deref())?.map(std::sync::Arc::new);
    let mut out = String::new();
    for (_, g) in engine::endgame::sets::bag_emptied_set(data.ctx(), leaves, a.seed, a.count, a.bag, a.extra) {
        out += &engine::cgp::write(&g, &data.dist);
        out.push('\n');
    }
    crate::emit(&out)
}

#[derive(clap::Args)]
pub struct PegArgs {
    #[command(flatten)]
    data: DataArgs,
    /// The position in CGP notation, with exactly one tile in the bag.
    #[arg(long)]
    cgp: String,
    /// Candidates: the static evaluator's top N placements (0: all).
    #[arg(long, default_value_t = 10)]
    candidates: usize,
    /// Search threads for each endgame.
    #[arg(long, value_parser = crate::cli::threads, default_value_t = 1)]
    threads: usize,
    /// Seconds per endgame before answering from the last complete depth.
    #[arg(long)]
    time: Option<f64>,
    /// Most MiB the transposition table takes (each solve gets one sized to its tiles, up to
    /// this: 1 MiB at three tiles, all of it from seven); each search thread's play memo grows
    /// to about as much at most (96 MiB at least).
    #[arg(long, default_value_t = 256)]
    table_mb: usize,
    /// Leave table (`.klv2`; default: the shipped table), to pick the candidates.
    #[arg(long)]
    leaves: Option<std::path::PathBuf>,
}

/// `worker peg`: rank the plays of a position with one tile in the bag by exact endgames.
pub fn run_peg(a: PegArgs) -> Result<()> {
    if a.threads == 0 {
        bail!("--threads: at least 1");
    }
    let (time_limit, table_bytes) = limits(a.time, a.table_mb)?;
    let data = a.data.load()?;
    let ctx = data.ctx();
    let leaves = crate::data::load_leaves(a.leaves.as_deref())?.map(std::sync::Arc::new);
    let game = Position::parse(&a.cgp, &data.dist)?.into_game(&data.kwg, &data.dist, 0);
    if game.bag.len() != 1 {
        bail!("--cgp: the bag holds {} tiles; a pre-endgame needs exactly one", game.bag.len());
    }
    if game.racks.iter().any(|r| r.is_empty()) {
        bail!("--cgp: a rack is empty");
    }
    let mut mg = engine::movegen::Generator::new();
    let n = if a.candidates == 0 { usize::MAX } else { a.candidates };
    let moves: Vec<Move> = engine::eval::StaticEval::new(leaves)
        .best(ctx, &game, &mut mg, n.saturating_add(2))
        .iter()
        .filter(|m| m.kind == engine::moves::Kind::Place)
        .take(n)
        .copied()
        .collect();
    if moves.is_empty() {
        bail!("--cgp: the player on turn has no placement");
    }
    let solver = Solver::new(table_bytes);
    let opts = Options { threads: a.threads, time_limit, ..Options::default() };
    let bar = indicatif::ProgressBar::new(moves.len() as u64).with_style(
        indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} candidates  {elapsed}").expect("valid template"),
    );
    let start = std::time::Instant::now();
    let ranked = engine::endgame::peg::rank(&solver, ctx, &game, &moves, &opts, &|| bar.inc(1))
        .map_err(|e| anyhow::anyhow!("--cgp: {e}"))?;
    bar.finish_and_clear();
    let total: u32 = engine::endgame::peg::unseen(&game).iter().map(|u| u.1).sum();
    let mut out = format!("{:<22} {:>5}  {:>7}  {:>8}  Bag tile: final spread\n", "Play", "Score", "Wins", "Spread");
    for c in &ranked {
        let per_tile: Vec<String> = c
            .outcomes
            .iter()
            .map(|o| {
                format!(
                    "{}{}:{:+}{}",
                    if o.weight > 1 { format!("{}x", o.weight) } else { String::new() },
                    data.dist.rack_char(o.tile),
                    o.value,
                    if o.exact { "" } else { "~" }
                )
            })
            .collect();
        out += &format!(
            "{:<22} {:>5}  {:>5.2}/{total}  {:>+8.2}  {}\n",
            c.mv.notation(ctx.dist, |r, col| game.board.at(r, col)),
            c.mv.score,
            c.wins * total as f64,
            c.spread,
            per_tile.join(" ")
        );
    }
    out += &format!(
        "Candidates: {}  Unseen: {total}  Time: {:.2}s  (~: not solved to the end)\n",
        ranked.len(),
        start.elapsed().as_secs_f64()
    );
    crate::emit(&out)
}

#[derive(clap::Args)]
pub struct BenchArgs {
    #[command(flatten)]
    data: DataArgs,
    /// Positions, one CGP a line (`#` comments).
    #[arg(long, default_value = "docs/endgame-bench.cgp")]
    file: std::path::PathBuf,
    /// Deepest search in plies (default: until solved).
    #[arg(long)]
    plies: Option<u8>,
    /// Thread counts to compare, comma-separated.
    #[arg(long, default_value = "1,2", value_delimiter = ',')]
    threads: Vec<usize>,
    /// Most MiB the transposition table takes (sized to each solve's tiles, up to this; cleared
    /// before every solve); each search thread's play memo grows to about as much at most
    /// (96 MiB at least).
    #[arg(long, default_value_t = 256)]
    table_mb: usize,
}

/// Each rack's stuck tiles (`engine::endgame::stuck`) as `MOVER/OTHER`, or `-` when neither
/// has any.
fn stuck_tiles(ctx: engine::movegen::Ctx, g: &Game) -> String {
    let [a, b] =
        [g.on_turn, 1 - g.on_turn].map(|p| ctx.dist.rack_string(&engine::endgame::stuck(ctx, &g.board, &g.racks[p])));
    if a.is_empty() && b.is_empty() { "-".into() } else { format!("{a}/{b}") }
}

/// The median of some times, as `0.123s`; `-` for none.
fn median(mut xs: Vec<f64>) -> String {
    xs.sort_by(f64::total_cmp);
    let n = xs.len();
    match n {
        0 => "-".to_string(),
        _ if n % 2 == 1 => format!("{:.3}s", xs[n / 2]),
        _ => format!("{:.3}s", (xs[n / 2 - 1] + xs[n / 2]) / 2.0),
    }
}

/// `worker bench-endgame`: solve a fixed set of positions from a cold table at each thread
/// count, with per-position times and the speedup over the first thread count.
pub fn run_bench(a: BenchArgs) -> Result<()> {
    if a.threads.is_empty() || a.threads.contains(&0) {
        bail!("--threads: counts of at least 1");
    }
    let (_, table_bytes) = limits(None, a.table_mb)?;
    let data = a.data.load()?;
    let ctx = data.ctx();
    let games = data.read_positions(&a.file)?;
    // Stuck tiles (on either rack) make a different, harder class of endgame: the targets
    // speak of stuck-tile-free ones, so the medians are given both ways.
    let stuck: Vec<String> = games.iter().map(|(_, g)| stuck_tiles(ctx, g)).collect();
    let solver = Solver::new(table_bytes);
    let mut out = String::new();
    let mut totals = Vec::new();
    for &threads in &a.threads {
        let (mut secs, mut nodes, mut times) = (0.0, 0u64, Vec::new());
        for ((line, game), stuck) in games.iter().zip(&stuck) {
            solver.clear();
            let opts = Options { plies: a.plies, threads, ..Options::default() };
            let sol = solver
                .solve(ctx, game, &opts, &|_| {})
                .map_err(|e| anyhow::anyhow!("{}:{line}: {e}", a.file.display()))?;
            let s = sol.elapsed.as_secs_f64();
            // Each position's line as it is solved: a run takes minutes.
            crate::emit(&format!(
                "line {line:>3}  threads {threads}  value {:>+5}{}  depth {:>2}  nodes {:>10}  {:>8.3}s  {:>9.0} nodes/s  stuck {stuck}\n",
                sol.value,
                if sol.exact { " " } else { "~" },
                sol.depth,
                sol.nodes,
                s,
                sol.nodes as f64 / s.max(1e-9)
            ))?;
            secs += s;
            nodes += sol.nodes;
            times.push((s, stuck == "-"));
        }
        totals.push((threads, secs, nodes, times));
    }
    for (threads, secs, nodes, times) in &totals {
        let free: Vec<f64> = times.iter().filter(|t| t.1).map(|t| t.0).collect();
        let n_free = free.len();
        out += &format!(
            "threads {threads}: {} positions in {secs:.3}s  ({:.0} nodes/s, speedup {:.2}x)  median {}, stuck-tile-free median {} ({} of {})\n",
            games.len(),
            *nodes as f64 / secs.max(1e-9),
            totals[0].1 / secs.max(1e-9),
            median(times.iter().map(|t| t.0).collect()),
            median(free),
            n_free,
            times.len()
        );
    }
    out += &format!(
        "plies: {}  table: {} MiB  (~: not solved to the end)\n",
        a.plies.map_or("until solved".to_string(), |p| p.to_string()),
        solver.table_bytes() >> 10
    );
    crate::emit(&out)
}
