//! `worker cnn`: the CNN evaluator's tools. `features` prints one frame; `assemble` turns GCG
//! logs into the binary record stream the trainer reads (`docs/CNN.md`).

use crate::data::{DataArgs, load_leaves};
use crate::nets::{NetArgs, QUEUE_BATCH};
use anyhow::{Context, Result, bail};
use engine::board::{DIM, SQUARES};
use engine::cgp::Position;
use engine::features::{Before, Encoder, FRAME_LEN, LETTERS, PLANES, RECORD_LEN, SCALARS, Target, plane};
use engine::gcg::{replay_at, resolve};
use engine::leaves::Klv;
use engine::movegen::Generator;
use engine::rng::derive;
use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;
use std::io::{BufRead, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

#[derive(clap::Subcommand)]
pub enum Cmd {
    /// Print the frame of a move: the position after it, from the mover's view.
    Features(FeaturesArgs),
    /// Turn GCG logs into a record stream for the trainer (frame + target per turn).
    Assemble(AssembleArgs),
    /// Measure a model's evaluations per second by batch size.
    Bench(BenchArgs),
}

#[derive(clap::Args)]
pub struct BenchArgs {
    #[command(flatten)]
    net: NetArgs,
    /// The model (`.onnx`).
    #[arg(long)]
    model: PathBuf,
    /// Batch sizes to time, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1,8,32,128,512,1024")]
    batch: Vec<usize>,
    /// ONNX Runtime intra-op threads for the model (1 is best when every core runs its own).
    #[arg(long, value_parser = crate::cli::threads, default_value_t = 1)]
    threads: usize,
    /// Seconds to time each batch size.
    #[arg(long, default_value_t = 2.0)]
    seconds: f64,
    /// Then time this many threads sharing the model through its batching queue, each
    /// sending one position's candidates (20 frames) at a time, as CNN bots on a GPU do.
    #[arg(long, default_value_t = 0)]
    feeders: usize,
}

#[derive(clap::Args)]
pub struct FeaturesArgs {
    #[command(flatten)]
    data: DataArgs,
    /// The position in CGP notation; its player on turn makes the move.
    #[arg(long)]
    cgp: String,
    /// The move as GCG writes it: `8G SCAT` (`.` or the letter for tiles played through,
    /// lowercase for a blank), `-TILES` to exchange, `-` to pass.
    #[arg(long = "move", allow_hyphen_values = true)]
    mv: String,
    /// Leave table valuing the move's leave (default: the shipped table).
    #[arg(long)]
    leaves: Option<PathBuf>,
    /// Print `{"planes": 85x15x15, "scalars": 76}` as JSON instead of a summary.
    #[arg(long)]
    json: bool,
}

#[derive(clap::Args)]
pub struct AssembleArgs {
    #[command(flatten)]
    data: DataArgs,
    /// GCG files, or folders searched for `*.gcg`; a file may hold many games one after another.
    #[arg(required = true)]
    inputs: Vec<PathBuf>,
    /// The training record stream to write.
    #[arg(long)]
    out: PathBuf,
    /// Also write a validation stream here, of whole games held out of `--out`.
    #[arg(long, requires = "val_percent")]
    val: Option<PathBuf>,
    /// Percent of games held out for `--val` (chosen from the seed).
    #[arg(long, value_parser = clap::value_parser!(u8).range(1..=50), requires = "val")]
    val_percent: Option<u8>,
    /// Seed of which games are transposed (half of them) and which are held out.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Leave table valuing each move's leave (default: the shipped table).
    #[arg(long)]
    leaves: Option<PathBuf>,
    /// Target the mover's expected outcome H plies on (2 P(win) - 1 from the win table)
    /// instead of the game's outcome.
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=100))]
    horizon: Option<u16>,
    /// Win-probability table for `--horizon` (`.wpt`; default: lexica/enable.wpt).
    #[arg(long, requires = "horizon")]
    wintable: Option<PathBuf>,
    /// Threads (default: all cores).
    #[arg(long, value_parser = crate::cli::threads)]
    threads: Option<usize>,
}

pub fn run(cmd: Cmd) -> Result<()> {
    match cmd {
        Cmd::Features(a) => features(a),
        Cmd::Assemble(a) => assemble(a),
        Cmd::Bench(a) => bench(a),
    }
}

/// Frames of real positions to time the net on: every move of a few self-play turns.
fn bench_frames(count: usize) -> Result<Vec<f32>> {
    let data = DataArgs::default().load()?;
    let ctx = data.ctx();
    let encoder = Encoder::new(&data.dist)?;
    let mut game = engine::game::Game::new(&data.dist, 7);
    let mut mg = Generator::new();
    let mut frames = Vec::with_capacity(count * FRAME_LEN);
    let eval = engine::eval::StaticEval::new(None);
    while frames.len() < count * FRAME_LEN && !game.is_over() {
        let moves = eval.best(ctx, &game, &mut mg, 64).to_vec();
        let mut unseen = Vec::new();
        let before = Before::of_game(&game, &mut unseen, None);
        for m in moves.iter().take(count - frames.len() / FRAME_LEN) {
            let start = frames.len();
            frames.resize(start + FRAME_LEN, 0.0);
            encoder.encode(ctx, &before, m, 0.0, &mut frames[start..]);
        }
        game.play(ctx, &moves[0]);
    }
    // Repeat what the game gave until there are enough.
    let have = frames.len();
    while frames.len() < count * FRAME_LEN {
        let take = (count * FRAME_LEN - frames.len()).min(have);
        frames.extend_from_within(..take);
    }
    Ok(frames)
}

fn bench(a: BenchArgs) -> Result<()> {
    if a.batch.is_empty() || a.batch.iter().any(|&b| !(1..=65_536).contains(&b)) {
        bail!("--batch: sizes must be 1 to 65536");
    }
    let rt = a.net.runtime()?;
    let mut model = rt.model(&a.model, a.threads)?;
    let largest = *a.batch.iter().max().expect("not empty");
    let frames = bench_frames(largest)?;
    let mut last = 0.0;
    for &batch in &a.batch {
        let input = &frames[..batch * FRAME_LEN];
        model.evaluate(input)?; // warm-up: the first run plans the graph
        let (start, mut evals) = (Instant::now(), 0usize);
        while start.elapsed().as_secs_f64() < a.seconds {
            model.evaluate(input)?;
            evals += batch;
        }
        let secs = start.elapsed().as_secs_f64();
        last = evals as f64 / secs;
        crate::emit(&format!(
            "batch {batch:>5}: {last:>10.0} evals/s  {:>8.3} ms/batch\n",
            1e3 * secs * batch as f64 / evals as f64
        ))?;
    }
    if a.feeders > 0 {
        last = bench_queue(rt, &a, &frames)?;
    }
    crate::emit(&format!("evals/s: {last:.0}\n"))
}

/// `--feeders` threads, each sending 20 frames at a time through the model's one queue.
fn bench_queue(rt: &nn::Runtime, a: &BenchArgs, frames: &[f32]) -> Result<f64> {
    const CANDIDATES: usize = 20;
    let queue = rt.shared(&a.model, QUEUE_BATCH)?;
    let input: Vec<f32> = frames.iter().copied().cycle().take(CANDIDATES * FRAME_LEN).collect();
    queue.evaluate(&input).map_err(anyhow::Error::msg)?;
    let (runs0, valued0) = queue.stats();
    let start = Instant::now();
    std::thread::scope(|s| -> Result<()> {
        let handles: Vec<_> = (0..a.feeders)
            .map(|_| {
                let (queue, input) = (queue.clone(), &input);
                s.spawn(move || -> Result<(), String> {
                    while start.elapsed().as_secs_f64() < a.seconds {
                        queue.evaluate(input)?;
                    }
                    Ok(())
                })
            })
            .collect();
        for h in handles {
            h.join().map_err(|_| anyhow::anyhow!("a feeding thread panicked"))?.map_err(anyhow::Error::msg)?;
        }
        Ok(())
    })?;
    let secs = start.elapsed().as_secs_f64();
    let (runs, valued) = queue.stats();
    let (runs, valued) = (runs - runs0, valued - valued0);
    let rate = valued as f64 / secs;
    crate::emit(&format!(
        "queue, {} threads x {CANDIDATES} frames: {rate:>10.0} evals/s  mean batch {:.1}\n",
        a.feeders,
        valued as f64 / runs.max(1) as f64
    ))?;
    Ok(rate)
}

fn features(a: FeaturesArgs) -> Result<()> {
    let data = a.data.load()?;
    let ctx = data.ctx();
    let klv = load_leaves(a.leaves.as_deref())?;
    let encoder = Encoder::new(&data.dist)?;
    let game = Position::parse(&a.cgp, &data.dist)?.into_game(&data.kwg, &data.dist, 0);
    let fields: Vec<&str> = a.mv.split_whitespace().collect();
    let mv =
        resolve(&fields, &game.racks[0], &game.board, ctx).map_err(|e| anyhow::anyhow!("--move `{}`: {e}", a.mv))?;
    let mut unseen = Vec::new();
    let before = Before::of_game(&game, &mut unseen, None);
    let leave_value = klv.as_ref().map_or(0.0, |k| k.value(&mv.leave(&game.racks[0])));
    let mut frame = vec![0.0; FRAME_LEN];
    encoder.encode(ctx, &before, &mv, leave_value, &mut frame);
    let (planes, scalars) = frame.split_at(PLANES * SQUARES);
    if a.json {
        let planes: Vec<Vec<&[f32]>> = planes.chunks(SQUARES).map(|p| p.chunks(DIM).collect()).collect();
        crate::emit(&format!("{}\n", serde_json::json!({ "planes": planes, "scalars": scalars })))?;
        return Ok(());
    }
    let mut out = format!("{} scores {}; planes (of {PLANES}), values set to 1:\n", a.mv, mv.score);
    for (name, first, n) in PLANE_GROUPS {
        let ones: usize = planes[first * SQUARES..(first + n) * SQUARES].iter().filter(|&&x| x != 0.0).count();
        out += &format!("  {name:<22} {ones} values set\n");
    }
    out += &format!("scalars ({SCALARS}):\n");
    for (k, chunk) in scalars.chunks(8).enumerate() {
        let row: Vec<String> = chunk.iter().map(|x| format!("{x:.3}")).collect();
        out += &format!("  {:>2}: {}\n", k * 8, row.join(" "));
    }
    crate::emit(&out)
}

const PLANE_GROUPS: [(&str, usize, usize); 7] = [
    ("letters", plane::LETTER, LETTERS),
    ("blanks", plane::BLANK, 1),
    ("across cross-sets", plane::CROSS_ACROSS, LETTERS),
    ("down cross-sets", plane::CROSS_DOWN, LETTERS),
    ("uncovered premiums", plane::PREMIUM, 4),
    ("opponent's last play", plane::OPPONENT_LAST, 1),
    ("this play", plane::PLAY, 1),
];

/// One game's text and where it starts.
struct GameText {
    source: String,
    first_line: usize,
    text: String,
}

/// Games in flight at once: bounds memory (each game's records are ~2 MB) whatever the input.
const CHUNK: usize = 64;

fn assemble(a: AssembleArgs) -> Result<()> {
    let data = a.data.load()?;
    let ctx = data.ctx();
    let klv: Option<Klv> = load_leaves(a.leaves.as_deref())?;
    let encoder = Encoder::new(&data.dist)?;
    let table = a.horizon.map(|_| crate::data::load_wintable(a.wintable.as_deref())).transpose()?;
    let target = match (a.horizon, &table) {
        (Some(plies), Some(table)) => Target::Horizon { plies: plies as usize, table },
        _ => Target::Outcome,
    };
    let files = gcg_files(&a.inputs)?;
    let threads = a.threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build()?;

    let mut train = Output::create(&a.out)?;
    let mut val = a.val.as_deref().map(Output::create).transpose()?;
    let bar = ProgressBar::new_spinner()
        .with_style(ProgressStyle::with_template("{spinner} {pos} games  {msg}  {per_sec}").expect("valid template"));
    let start = Instant::now();
    let mut index = 0u64;
    let mut chunk = Vec::with_capacity(CHUNK);
    // A game that cannot give records (unreadable, unfinished, racks not shown) is skipped and
    // said so; the others go on.
    let mut skipped: Vec<String> = Vec::new();
    let mut written = 0u64;
    let mut flush = |chunk: &mut Vec<GameText>, index: &mut u64, skipped: &mut Vec<String>| -> Result<()> {
        let results: Vec<Result<Vec<f32>>> = pool.install(|| {
            chunk
                .par_iter()
                .enumerate()
                .map(|(k, g)| {
                    let i = *index + k as u64;
                    let log = replay_at(&g.text, ctx, &g.source, g.first_line)?;
                    let mut records = Vec::with_capacity(log.turns.len() * RECORD_LEN);
                    encoder
                        .records(&log, ctx, klv.as_ref(), derive(a.seed, i) & 1 == 1, target, &mut records)
                        .map_err(|e| anyhow::anyhow!("{}:{}: {e}", g.source, g.first_line))?;
                    Ok(records)
                })
                .collect()
        });
        for (k, records) in results.into_iter().enumerate() {
            let i = *index + k as u64;
            let records = match records {
                Ok(r) => r,
                Err(e) => {
                    bar.suspend(|| eprintln!("skipped: {e:#}"));
                    skipped.push(format!("{e:#}"));
                    continue;
                }
            };
            let held_out = a.val_percent.is_some_and(|p| derive(a.seed ^ HOLDOUT, i) % 100 < p as u64);
            let out = match (&mut val, held_out) {
                (Some(v), true) => v,
                _ => &mut train,
            };
            out.write(&records)?;
            written += 1;
        }
        *index += chunk.len() as u64;
        bar.set_position(written);
        bar.set_message(format!("{:.0} MB", (train.bytes + val.as_ref().map_or(0, |v| v.bytes)) as f64 / 1e6));
        chunk.clear();
        Ok(())
    };
    for path in &files {
        for game in games_in(path)? {
            match game {
                Ok(g) => chunk.push(g),
                Err(e) => {
                    bar.suspend(|| eprintln!("skipped: {e:#}"));
                    skipped.push(format!("{e:#}"));
                }
            }
            if chunk.len() == CHUNK {
                flush(&mut chunk, &mut index, &mut skipped)?;
            }
        }
    }
    flush(&mut chunk, &mut index, &mut skipped)?;
    bar.finish_and_clear();
    let inputs = || a.inputs.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ");
    if written == 0 {
        match skipped.first() {
            Some(first) => {
                bail!("no game in {} gives records: all {} skipped, the first: {first}", inputs(), skipped.len())
            }
            None => bail!("no games in {}", inputs()),
        }
    }
    let secs = start.elapsed().as_secs_f64();
    let total = train.bytes + val.as_ref().map_or(0, |v| v.bytes);
    let mut summary = format!("{written} games from {} files\n", files.len());
    if !skipped.is_empty() {
        summary += &format!("{} games skipped (said above), the first: {}\n", skipped.len(), skipped[0]);
    }
    summary += &train.finish()?;
    if let Some(v) = val {
        summary += &v.finish()?;
    }
    summary += &format!(
        "{:.1} MB in {secs:.2}s ({:.0} MB/s, {threads} threads)\n",
        total as f64 / 1e6,
        total as f64 / 1e6 / secs
    );
    crate::emit(&summary)
}

/// Stream of the held-out draw, apart from the transposition's.
const HOLDOUT: u64 = 0x5eed_0fba;

/// A record stream being written: to a temporary file renamed into place by `finish`, so an
/// error leaves nothing half-written.
struct Output {
    path: PathBuf,
    tmp: PathBuf,
    file: BufWriter<std::fs::File>,
    bytes: u64,
    records: u64,
}

impl Output {
    fn create(path: &Path) -> Result<Self> {
        let tmp = path.with_extension(format!("{}.tmp", std::process::id()));
        let file = std::fs::File::create(&tmp).with_context(|| format!("{}: cannot create", tmp.display()))?;
        Ok(Self { path: path.into(), tmp, file: BufWriter::with_capacity(1 << 20, file), bytes: 0, records: 0 })
    }

    fn write(&mut self, records: &[f32]) -> Result<()> {
        let bytes: Vec<u8> = records.iter().flat_map(|x| x.to_le_bytes()).collect();
        self.file.write_all(&bytes).with_context(|| format!("{}: cannot write", self.tmp.display()))?;
        self.bytes += bytes.len() as u64;
        self.records += (records.len() / RECORD_LEN) as u64;
        Ok(())
    }

    fn finish(mut self) -> Result<String> {
        self.file.flush().with_context(|| format!("{}: cannot write", self.tmp.display()))?;
        std::fs::rename(&self.tmp, &self.path)
            .with_context(|| format!("{}: cannot rename into place", self.path.display()))?;
        Ok(format!("{}: {} records\n", self.path.display(), self.records))
    }
}

impl Drop for Output {
    fn drop(&mut self) {
        // After `finish` the temporary file is gone; after an error this removes it.
        let _ = std::fs::remove_file(&self.tmp);
    }
}

/// The `.gcg` (and `.gcg.gz`) files named, folders searched one level deep, in name order.
fn gcg_files(inputs: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for p in inputs {
        if p.is_dir() {
            let mut found: Vec<PathBuf> = std::fs::read_dir(p)
                .with_context(|| format!("{}: cannot read the folder", p.display()))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|f| f.extension().is_some_and(|e| e == "gcg") || f.to_string_lossy().ends_with(".gcg.gz"))
                .collect();
            found.sort();
            files.extend(found);
        } else if p.exists() {
            files.push(p.clone());
        } else {
            bail!("{}: no such file or folder", p.display());
        }
    }
    Ok(files)
}

/// The games of a file, read line by line: a game starts at a header line (`#character-encoding`
/// or `#player1`) that follows a move line. A `.gz` file is read through gzip, every member of
/// it (a coordinator's `games.gcg.gz` is one member per batch). Each game's text is decoded as
/// its `#character-encoding` says (`engine::gcg::decode`).
fn games_in(path: &Path) -> Result<impl Iterator<Item = Result<GameText>>> {
    let file = std::fs::File::open(path).with_context(|| format!("{}: cannot open", path.display()))?;
    let mut reader: Box<dyn BufRead> = if path.extension().is_some_and(|e| e == "gz") {
        Box::new(std::io::BufReader::new(flate2::read::MultiGzDecoder::new(file)))
    } else {
        Box::new(std::io::BufReader::new(file))
    };
    let name = path.display().to_string();
    let mut line_no = 0;
    let mut pending: Option<(usize, Vec<u8>)> = None;
    let mut done = false;
    Ok(std::iter::from_fn(move || {
        if done {
            return None;
        }
        let (mut first, mut bytes) = pending.take().unwrap_or((1, Vec::new()));
        let mut moves = false;
        let mut line = Vec::new();
        loop {
            line.clear();
            match reader.read_until(b'\n', &mut line) {
                Ok(0) => {
                    done = true;
                    return (!bytes.iter().all(u8::is_ascii_whitespace)).then(|| game_text(&name, first, &bytes));
                }
                Err(e) => {
                    done = true;
                    return Some(Err(anyhow::anyhow!("{name}: cannot read: {e}")));
                }
                Ok(_) => {
                    line_no += 1;
                    let header = line.starts_with(b"#character-encoding") || line.starts_with(b"#player1");
                    if header && moves {
                        pending = Some((line_no, line.clone()));
                        return Some(game_text(&name, first, &bytes));
                    }
                    if bytes.is_empty() {
                        first = line_no;
                    }
                    moves |= line.starts_with(b">");
                    bytes.extend_from_slice(&line);
                }
            }
        }
    }))
}

fn game_text(name: &str, first_line: usize, bytes: &[u8]) -> Result<GameText> {
    let text = engine::gcg::decode_at(bytes, name, first_line)?;
    Ok(GameText { source: name.to_string(), first_line, text })
}
