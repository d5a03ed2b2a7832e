//! Finding and loading the data files: the shipped lexica folder, lexicons (KWG or word list),
//! leave tables, distributions and layouts.

use anyhow::{Context, Result};
use engine::board::Layout;
use engine::leaves::Klv;
use engine::lexicon::{Kwg, load_lexicon};
use engine::tiles::Distribution;
use std::path::{Path, PathBuf};

/// The shipped data folder: `$LEXHIVE_LEXICA`, else `./lexica`, else the source tree's.
pub fn lexica_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("LEXHIVE_LEXICA") {
        return d.into();
    }
    let here = PathBuf::from("lexica");
    if here.join("enable.txt").exists() {
        return here;
    }
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../lexica")
}

/// Data shared by the commands that play: distribution, layout, lexicon, optional leaves.
pub struct Data {
    pub dist: Distribution,
    pub layout: Layout,
    pub kwg: Kwg,
}

impl Data {
    pub fn ctx(&self) -> engine::movegen::Ctx<'_> {
        engine::movegen::Ctx { kwg: &self.kwg, dist: &self.dist, layout: &self.layout }
    }

    /// The positions of a file of CGP lines (blank lines and `#` comments skipped), each with
    /// its line number; an error names the file and line.
    pub fn read_positions(&self, path: &Path) -> Result<Vec<(usize, engine::game::Game)>> {
        let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let mut games = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let pos = engine::cgp::Position::parse(line, &self.dist)
                .map_err(|e| anyhow::anyhow!("{}:{}: {e}", path.display(), i + 1))?;
            games.push((i + 1, pos.into_game(&self.kwg, &self.dist, 0)));
        }
        Ok(games)
    }
}

/// Whether best-move searches use the word map, for the commands that play.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct WordMapArg {
    /// Search for best moves with the word graph alone, without the word map (which holds
    /// every word by its letters: ~85 MB for ENABLE, built in 0.4-1 s on first use; it makes
    /// racks holding a blank several times faster). For machines short of memory; the moves
    /// found are the same.
    #[arg(long)]
    pub no_word_map: bool,
}

impl WordMapArg {
    /// Sets the engine's choice for this process.
    pub fn apply(&self) {
        engine::movegen::set_word_map(!self.no_word_map);
    }
}

#[derive(clap::Args, Debug, Clone, Default)]
pub struct DataArgs {
    /// Lexicon: a `.kwg` graph or a plain word list (default: the shipped ENABLE list).
    #[arg(long)]
    pub lexicon: Option<PathBuf>,
    /// Tile distribution file (default: lexica/english.dist).
    #[arg(long)]
    pub dist: Option<PathBuf>,
    /// Board layout file (default: lexica/standard15.layout).
    #[arg(long)]
    pub layout: Option<PathBuf>,
    #[command(flatten)]
    pub word_map: WordMapArg,
}

impl DataArgs {
    /// The data, with the engine set to use the word map or not as asked.
    pub fn load(&self) -> Result<Data> {
        self.word_map.apply();
        let dist = match &self.dist {
            Some(p) => Distribution::load(p)?,
            None => Distribution::english(),
        };
        let layout = match &self.layout {
            Some(p) => Layout::load(p)?,
            None => Layout::standard(),
        };
        let kwg = match &self.lexicon {
            Some(p) => load_lexicon(p, &dist)?,
            None => shipped_kwg(&dist)?,
        };
        Ok(Data { dist, layout, kwg })
    }
}

/// The shipped lexicon graph, built from `lexica/enable.txt` on first use.
pub fn shipped_kwg(dist: &Distribution) -> Result<Kwg> {
    let dir = lexica_dir();
    let kwg_path = dir.join("enable.kwg");
    if kwg_path.exists() {
        let kwg = Kwg::load(&kwg_path)?;
        kwg.check_alphabet(dist, &kwg_path.display().to_string())?;
        return Ok(kwg);
    }
    let words = dir.join("enable.txt");
    eprintln!("building {} from {} (first use)", kwg_path.display(), words.display());
    let kwg = load_lexicon(&words, dist)?;
    write_atomic(&kwg_path, &kwg.to_bytes())?;
    Ok(kwg)
}

/// The leave table: the given file, else the shipped one if present.
pub fn load_leaves(path: Option<&Path>) -> Result<Option<Klv>> {
    match path {
        Some(p) => Ok(Some(Klv::load(p)?)),
        None => {
            let shipped = lexica_dir().join("enable.klv2");
            if shipped.exists() { Ok(Some(Klv::load(&shipped)?)) } else { Ok(None) }
        }
    }
}

/// Write via a temporary file and rename, so a crash never leaves half a file.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    let tmp = path.with_extension(format!("{ext}.{}.tmp", std::process::id()));
    std::fs::write(&tmp, bytes).with_context(|| format!("{}: cannot write", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("{}: cannot rename into place", path.display()))?;
    Ok(())
}

/// A win-probability table: `path`, or the shipped `lexica/enable.wpt`.
pub fn load_wintable(path: Option<&Path>) -> Result<engine::winpct::WinTable> {
    let path = path.map_or_else(|| lexica_dir().join("enable.wpt"), Path::to_path_buf);
    Ok(engine::winpct::WinTable::load(&path)?)
}
