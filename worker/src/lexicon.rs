//! `worker lexicon build|check`.

use crate::data::write_atomic;
use anyhow::Result;
use engine::lexicon::{Kwg, load_lexicon, parse_word_list};
use engine::tiles::Distribution;
use std::path::PathBuf;

#[derive(clap::Subcommand)]
pub enum Cmd {
    /// Build a KWG (DAWG + GADDAG) from a word list.
    Build {
        /// Word list: one word per line, either case.
        #[arg(long)]
        words: PathBuf,
        /// Output `.kwg` file.
        #[arg(long)]
        out: PathBuf,
        /// Tile distribution (default: English).
        #[arg(long)]
        dist: Option<PathBuf>,
    },
    /// Say whether each word is valid in a lexicon (`.kwg` or word list).
    Check {
        /// The lexicon: a `.kwg` graph or a plain word list.
        lexicon: PathBuf,
        /// Words to check.
        #[arg(required = true)]
        words: Vec<String>,
        /// Tile distribution file (default: lexica/english.dist).
        #[arg(long)]
        dist: Option<PathBuf>,
    },
}

fn dist(path: &Option<PathBuf>) -> Result<Distribution> {
    Ok(match path {
        Some(p) => Distribution::load(p)?,
        None => Distribution::english(),
    })
}

pub fn run(cmd: Cmd) -> Result<()> {
    match cmd {
        Cmd::Build { words, out, dist: d } => {
            let dist = dist(&d)?;
            let text = std::fs::read(&words).map_err(|e| anyhow::anyhow!("{}: cannot read: {e}", words.display()))?;
            let text = String::from_utf8(text).map_err(|_| anyhow::anyhow!("{}: not UTF-8 text", words.display()))?;
            let list = parse_word_list(&text, &dist, &words.display().to_string())?;
            let kwg = Kwg::build(&list)?;
            write_atomic(&out, &kwg.to_bytes())?;
            let distinct = kwg.words().len();
            crate::emit(&format!("{}: {distinct} words, {} nodes\n", out.display(), kwg.node_count()))?;
            Ok(())
        }
        Cmd::Check { lexicon, words, dist: d } => {
            let dist = dist(&d)?;
            let kwg = load_lexicon(&lexicon, &dist)?;
            for w in words {
                let tiles: Option<Vec<u8>> = w.chars().map(|c| dist.letter(c)).collect();
                let ok = tiles.is_some_and(|t| kwg.contains(&t));
                crate::emit(&format!("{} {}\n", w.to_uppercase(), if ok { "valid" } else { "invalid" }))?;
            }
            Ok(())
        }
    }
}
