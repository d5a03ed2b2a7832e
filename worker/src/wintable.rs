//! `worker wintable generate|show`: make the win-probability table by static self-play; look
//! probabilities up.

use crate::data::{DataArgs, load_leaves, write_atomic};
use crate::play::Match;
use anyhow::{Result, bail};
use engine::bots::BotSpec;
use engine::winpct::WinSamples;
use indicatif::{ProgressBar, ProgressStyle};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

#[derive(clap::Subcommand)]
pub enum Cmd {
    /// Play static-vs-static games and fit P(win | spread, unseen) from every position.
    Generate {
        #[command(flatten)]
        data: DataArgs,
        /// Games to play.
        #[arg(long, default_value_t = 40_000)]
        games: u64,
        /// Seed of the games.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Threads (default: all cores).
        #[arg(long, value_parser = crate::cli::threads)]
        threads: Option<usize>,
        /// Output `.wpt` file.
        #[arg(long)]
        out: PathBuf,
    },
    /// Print P(win) for the player to move at each SPREAD, with UNSEEN tiles unseen.
    Show {
        /// Table (default: the shipped `lexica/enable.wpt`).
        #[arg(long)]
        table: Option<PathBuf>,
        /// Tiles unseen by the player to move (bag + opponent's rack).
        #[arg(long)]
        unseen: usize,
        /// Spreads (the mover's score minus the opponent's).
        #[arg(required = true, allow_negative_numbers = true)]
        spread: Vec<i32>,
    },
}

pub fn run(cmd: Cmd) -> Result<()> {
    match cmd {
        Cmd::Generate { data, games, seed, threads, out } => {
            if games == 0 {
                bail!("--games: at least 1");
            }
            let data = data.load()?;
            let leaves = load_leaves(None)?.map(Arc::new);
            let threads = threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build()?;
            let m = Match {
                net: None,
                data: &data,
                specs: [BotSpec::STATIC, BotSpec::STATIC],
                leaves,
                tables: Default::default(),
                table: None,
                seed,
                first_game: 0,
                games,
                paired: false,
            };
            // Counts are integers, so the table does not depend on the order games finish in.
            let samples = Mutex::new(WinSamples::new(&data.dist));
            let bar = ProgressBar::new(games).with_style(
                ProgressStyle::with_template("{bar:40} {pos}/{len} games  eta {eta}").expect("valid template"),
            );
            pool.install(|| {
                m.play(&|rec| {
                    samples.lock().expect("samples").add_game(&rec.game);
                    bar.inc(1);
                    Ok(())
                })
            })?;
            bar.finish_and_clear();
            let samples = samples.into_inner().expect("samples");
            let table = samples.fit();
            let comment = format!(
                "P(win) for the player to move by tiles unseen (rows) and spread (columns, -{s}..+{s}).\nMade by `worker wintable generate --games {games} --seed {seed}`: {} positions of static-vs-static self-play.",
                samples.positions(),
                s = table.spread_max()
            );
            write_atomic(&out, table.to_text(&comment).as_bytes())?;
            crate::emit(&format!("{} positions from {games} games -> {}\n", samples.positions(), out.display()))
        }
        Cmd::Show { table, unseen, spread } => {
            let t = crate::data::load_wintable(table.as_deref())?;
            if unseen > t.unseen_max() {
                bail!("--unseen: at most {}", t.unseen_max());
            }
            let mut out = String::new();
            for s in spread {
                out.push_str(&format!("{s:+} {:.4}\n", t.win_prob(s, unseen)));
            }
            crate::emit(&out)
        }
    }
}
