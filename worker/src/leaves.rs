//! `worker leaves generate|value`: make leave tables by iterated self-play; look values up.

use crate::data::{DataArgs, load_leaves, write_atomic};
use crate::play::Match;
use anyhow::Result;
use engine::bots::BotSpec;
use engine::leavegen::Samples;
use engine::leaves::Klv;
use engine::rng::derive;
use indicatif::{ProgressBar, ProgressStyle};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

#[derive(clap::Subcommand)]
pub enum Cmd {
    /// Generate a leave table by self-play of the static bot, iterating from no table.
    Generate {
        #[command(flatten)]
        data: DataArgs,
        /// Games per iteration.
        #[arg(long, default_value_t = 20_000)]
        games: u64,
        /// Iterations (each plays with the previous iteration's table).
        #[arg(long, default_value_t = 3)]
        iterations: u32,
        /// Seed of the self-play games (each iteration's games follow from it).
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Threads (default: all cores).
        #[arg(long, value_parser = crate::cli::threads)]
        threads: Option<usize>,
        /// Output `.klv2` file.
        #[arg(long)]
        out: PathBuf,
    },
    /// Print the value of each leave (e.g. `?ERS`, `QU`) in a table.
    Value {
        /// Leave table (default: the shipped one).
        #[arg(long)]
        leaves: Option<PathBuf>,
        /// Tile distribution the table is for (default: lexica/english.dist): its letters and
        /// blank spell the leaves.
        #[arg(long)]
        dist: Option<PathBuf>,
        /// Leaves to look up: up to six tiles each, `?` for a blank.
        #[arg(required = true)]
        leave: Vec<String>,
    },
}

pub fn run(cmd: Cmd) -> Result<()> {
    match cmd {
        Cmd::Generate { data, games, iterations, seed, threads, out } => {
            let data = data.load()?;
            let threads = threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build()?;
            let mut table: Option<Arc<Klv>> = None;
            for it in 0..iterations {
                let m = Match {
                    net: None,
                    data: &data,
                    specs: [BotSpec::STATIC, BotSpec::STATIC],
                    leaves: table.clone(),
                    tables: Default::default(),
                    table: None,
                    seed: derive(seed, it as u64),
                    first_game: 0,
                    games,
                    paired: false,
                };
                let samples = Mutex::new(Samples::new(&data.dist));
                let bar = ProgressBar::new(games).with_style(
                    ProgressStyle::with_template(&format!(
                        "iteration {}/{iterations} {{bar:40}} {{pos}}/{{len}} games  eta {{eta}}",
                        it + 1
                    ))
                    .expect("valid template"),
                );
                pool.install(|| {
                    m.play(&|rec| {
                        samples.lock().expect("samples").add_game(rec, table.as_deref(), &data.dist);
                        bar.inc(1);
                        Ok(())
                    })
                })?;
                bar.finish_and_clear();
                let samples = samples.into_inner().expect("samples");
                let klv = samples.fit(&data.dist)?;
                eprintln!(
                    "iteration {}: {} games, {} kept leaves observed, {} leaves in table",
                    it + 1,
                    games,
                    samples.count,
                    klv.len()
                );
                table = Some(Arc::new(klv));
            }
            let klv = table.expect("at least one iteration");
            write_atomic(&out, &klv.to_bytes())?;
            crate::emit(&format!(
                "{}: {} leaves (seed {seed}, {iterations} x {games} games)\n",
                out.display(),
                klv.len()
            ))?;
            Ok(())
        }
        Cmd::Value { leaves, dist, leave } => {
            let klv =
                load_leaves(leaves.as_deref())?.ok_or_else(|| anyhow::anyhow!("no leave table: pass --leaves"))?;
            let dist = match dist {
                Some(p) => engine::tiles::Distribution::load(&p)?,
                None => engine::tiles::Distribution::english(),
            };
            for l in leave {
                let mut tiles = dist.parse_rack(&l).map_err(|m| anyhow::anyhow!("leave `{l}`: {m}"))?;
                let most = engine::tiles::RACK_SIZE - 1;
                if tiles.len() > most {
                    anyhow::bail!(
                        "leave `{l}`: {} tiles; a leave keeps at most {most} (a play uses one or more)",
                        tiles.len()
                    );
                }
                tiles.sort_unstable();
                crate::emit(&format!("{} {:.3}\n", dist.rack_string(&tiles), klv.value(&tiles)))?;
            }
            Ok(())
        }
    }
}
