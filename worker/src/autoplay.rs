//! `worker autoplay`: bot-vs-bot self-play on paired deals, in parallel, with the summary block
//! and optional GCG/CSV logs.

use crate::data::{DataArgs, load_leaves};
use crate::play::Match;
use anyhow::{Context, Result, bail};
use engine::bots::BotSpec;
use engine::gcg::{CSV_HEADER, write_csv, write_gcg};
use indicatif::{ProgressBar, ProgressStyle};
use shared::stats::Tallier;
use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Instant;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    data: DataArgs,
    /// Bot 1 (`--help` lists every bot and its parameters).
    #[arg(long, long_help = format!("Bot 1, one of: {}", engine::bots::BOTS))]
    bot1: String,
    /// Bot 2.
    #[arg(long)]
    bot2: String,
    /// Number of games (even when paired: each deal is played twice, seats swapped).
    #[arg(long)]
    games: u64,
    /// Seed of the whole run; every deal and every bot's random choice derives from it.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Worker threads (default: all cores).
    #[arg(long, value_parser = crate::cli::threads)]
    threads: Option<usize>,
    /// Leave table (`.klv2`; default: the shipped table).
    #[arg(long)]
    leaves: Option<PathBuf>,
    /// Win-probability table for `sim` bots (`.wpt`; default: lexica/enable.wpt).
    #[arg(long)]
    wintable: Option<PathBuf>,
    /// Write one `.gcg` per game and `turns.csv` here.
    #[arg(long)]
    log_dir: Option<PathBuf>,
    /// Play every deal once (alternating who starts) instead of twice.
    #[arg(long)]
    unpaired: bool,
    #[command(flatten)]
    net: crate::nets::NetArgs,
}

pub fn run(a: Args) -> Result<()> {
    let specs = [BotSpec::parse(&a.bot1).context("--bot1")?, BotSpec::parse(&a.bot2).context("--bot2")?];
    if a.games == 0 {
        bail!("--games: must be at least 1");
    }
    if !a.unpaired && a.games % 2 == 1 {
        bail!("--games: paired play needs an even number of games (or pass --unpaired)");
    }
    let data = a.data.load()?;
    let leaves =
        if specs.iter().any(BotSpec::uses_leaves) { load_leaves(a.leaves.as_deref())?.map(Arc::new) } else { None };
    if leaves.is_none() && specs.iter().any(BotSpec::uses_leaves) {
        eprintln!("warning: no leave table found; equity bots play on score alone");
    }
    let table = match specs.iter().any(BotSpec::uses_wintable) {
        true => Some(Arc::new(crate::data::load_wintable(a.wintable.as_deref())?)),
        false => None,
    };
    let tables = crate::play::read_tables(&specs).context("a bot's leaves=")?;
    let threads = a.threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build()?;
    // Bots are named as given on the command line (the summary's lines come in bot order).
    let names = [a.bot1.clone(), a.bot2.clone()];
    let m = Match {
        data: &data,
        specs,
        leaves,
        tables,
        table,
        seed: a.seed,
        first_game: 0,
        games: a.games,
        paired: !a.unpaired,
        net: Some(crate::nets::Nets { args: &a.net, models: &crate::nets::Models::new() }),
    };

    let csv = match &a.log_dir {
        Some(dir) => {
            std::fs::create_dir_all(dir).with_context(|| format!("{}: cannot create", dir.display()))?;
            let path = dir.join("turns.csv");
            let mut f = std::io::BufWriter::new(
                std::fs::File::create(&path).with_context(|| format!("{}: cannot create", path.display()))?,
            );
            writeln!(f, "{CSV_HEADER}")?;
            Some(Mutex::new(f))
        }
        None => None,
    };
    let bar = ProgressBar::new(a.games).with_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} games  {per_sec}  eta {eta}").expect("valid template"),
    );
    let start = Instant::now();
    let name_refs = [names[0].as_str(), names[1].as_str()];
    // The tally is sums of integers, so the order games finish in is irrelevant.
    let tally = Mutex::new(Tallier::new(m.paired));
    pool.install(|| {
        m.play(&|rec| {
            tally.lock().expect("tally").add(&rec.outcome());
            if let (Some(dir), Some(csv)) = (&a.log_dir, &csv) {
                let seats = [name_refs[rec.seat_bot[0]], name_refs[rec.seat_bot[1]]];
                let path = dir.join(format!("game-{:06}.gcg", rec.id));
                std::fs::write(&path, write_gcg(&rec.game, seats, &data.dist))
                    .with_context(|| format!("{}: cannot write", path.display()))?;
                let rows = write_csv(rec, name_refs, &data.dist);
                csv.lock().expect("csv writer").write_all(rows.as_bytes())?;
            }
            bar.inc(1);
            Ok(())
        })
    })?;
    bar.finish_and_clear();
    if let Some(csv) = csv {
        csv.into_inner().expect("csv writer").flush()?;
    }
    let secs = start.elapsed().as_secs_f64();
    let tally = tally.into_inner().expect("tally").tally();
    crate::emit(&tally.report(name_refs))?;
    crate::emit(&format!(
        "Seed: {}  Threads: {threads}  Time: {secs:.2}s  Games per second: {:.1}\n",
        a.seed,
        a.games as f64 / secs
    ))?;
    Ok(())
}
