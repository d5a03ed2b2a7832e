//! `worker cnn` and the CNN bot as users meet them: the features contract, record streams from
//! real self-play logs, the bench, and every way ONNX Runtime or a model can be missing.
//! Needs ONNX Runtime (`ORT_DYLIB_PATH`, or python3's `onnxruntime`: scripts/trainer-env.sh).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const RECORD_BYTES: u64 = 76_808;
const CAT: &str = "15/15/15/15/15/15/15/7CAT5/15/15/15/15/15/15/15 QI?ERST/AEINRST 40/30 0";

fn worker(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_worker"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("runs")
}

fn ok(o: Output) -> String {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn temp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("lexhive-cnn-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn tiny() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../nn/tests/data/tiny.onnx").display().to_string()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn features_json_is_the_documented_shape() {
    let out = ok(worker(&["cnn", "features", "--cgp", CAT, "--move", "8G sCAT", "--json"]));
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let planes = v["planes"].as_array().unwrap();
    assert_eq!(planes.len(), 85);
    assert!(planes.iter().all(|p| p.as_array().unwrap().len() == 15));
    assert!(planes.iter().all(|p| p.as_array().unwrap().iter().all(|r| r.as_array().unwrap().len() == 15)));
    // S (letter 18) and the blank plane at row 8, column G; the play's plane there too.
    assert_eq!(planes[18][7][6], 1.0);
    assert_eq!(planes[26][7][6], 1.0);
    assert_eq!(planes[84][7][6], 1.0);
    assert_eq!(planes[83][7][7], 0.0, "a CGP has no history");
    let scalars = v["scalars"].as_array().unwrap();
    assert_eq!(scalars.len(), 76);
    assert!((scalars[72].as_f64().unwrap() - (5.0f64 / 50.0).tanh()).abs() < 1e-6);

    let o = worker(&["cnn", "features", "--cgp", CAT, "--move", "8G QQQQ"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--move `8G QQQQ`"), "{}", stderr(&o));
    assert_eq!(stderr(&o).lines().count(), 1);
}

/// Six self-play games' logs in `d`; returns their move-line counts.
fn games(d: &Path) -> Vec<u64> {
    ok(worker(&["autoplay", "--bot1", "static", "--bot2", "greedy", "--games", "6", "--seed", "4", "--log-dir", s(d)]));
    let mut files: Vec<PathBuf> = std::fs::read_dir(d)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "gcg"))
        .collect();
    files.sort();
    files
        .iter()
        .map(|f| {
            let text = std::fs::read_to_string(f).unwrap();
            text.lines().filter(|l| l.starts_with('>') && !l.contains('(')).count() as u64
        })
        .collect()
}

#[test]
fn assemble_writes_one_record_per_turn_reproducibly() {
    let d = temp("assemble");
    let logs = d.join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    let turns: u64 = games(&logs).iter().sum();
    let out = d.join("all.frames");
    let summary = ok(worker(&["cnn", "assemble", s(&logs), "--out", s(&out), "--seed", "3"]));
    assert!(summary.starts_with("6 games from 6 files\n"), "{summary}");
    assert_eq!(std::fs::metadata(&out).unwrap().len(), turns * RECORD_BYTES);

    // The same games from one concatenated file, split train/validation: every record once.
    let mut all = String::new();
    let mut names: Vec<PathBuf> = std::fs::read_dir(&logs).unwrap().map(|e| e.unwrap().path()).collect();
    names.sort();
    for n in names.iter().filter(|p| p.extension().is_some_and(|e| e == "gcg")) {
        all += &std::fs::read_to_string(n).unwrap();
    }
    let many = d.join("many.gcg");
    std::fs::write(&many, &all).unwrap();
    let (train, val) = (d.join("t.frames"), d.join("v.frames"));
    let args =
        ["cnn", "assemble", s(&many), "--out", s(&train), "--val", s(&val), "--val-percent", "50", "--seed", "5"];
    assert!(ok(worker(&args)).starts_with("6 games from 1 files\n"));
    let (t, v) = (std::fs::metadata(&train).unwrap().len(), std::fs::metadata(&val).unwrap().len());
    assert_eq!(t + v, turns * RECORD_BYTES);
    assert!(t > 0 && v > 0);
    // Same seed, same bytes; the one-file stream holds the same records as the folder's.
    let again = d.join("again.frames");
    ok(worker(&["cnn", "assemble", s(&many), "--out", s(&again), "--seed", "3"]));
    assert!(std::fs::read(&again).unwrap() == std::fs::read(&out).unwrap());

    // Horizon targets: the same frames, targets from the win table (strictly inside -1..1
    // except for the last turns, whose horizon is the game's end).
    let near = d.join("near.frames");
    ok(worker(&["cnn", "assemble", s(&many), "--out", s(&near), "--seed", "3", "--horizon", "2"]));
    let (a, b) = (std::fs::read(&out).unwrap(), std::fs::read(&near).unwrap());
    assert_eq!(a.len(), b.len());
    let target = |bytes: &[u8], k: usize| {
        let at = (k + 1) * RECORD_BYTES as usize - 4;
        f32::from_le_bytes(bytes[at..at + 4].try_into().unwrap())
    };
    let records = a.len() / RECORD_BYTES as usize;
    let inside = (0..records).filter(|&k| target(&b, k).abs() < 1.0).count();
    assert!(inside > records / 2, "{inside} of {records}");
    assert!((0..records).all(|k| [-1.0, 0.0, 1.0].contains(&target(&a, k))));
    for k in 0..records {
        let r = k * RECORD_BYTES as usize..(k + 1) * RECORD_BYTES as usize - 4;
        assert!(a[r.clone()] == b[r], "record {k}: the frames are the same");
    }
}

/// A game that cannot give records is skipped with a report naming its file, line and why,
/// and the others are assembled: a broken score, and from `engine/tests/data/gcg/` an annotated
/// game (partial racks) and a fragment (no end), while the tournament game there (withdrawn
/// phony, challenge bonus, time penalty, ISO-8859-1) gives one record per turn but the phony's.
/// When no game gives records, nothing is written and the exit status is 2.
#[test]
fn games_that_give_no_records_are_skipped_with_a_report() {
    let d = temp("badlog");
    let logs = d.join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    let turns = games(&logs);
    let mut text = std::fs::read_to_string(logs.join("game-000000.gcg")).unwrap();
    let first_len = text.lines().count();
    let second = std::fs::read_to_string(logs.join("game-000001.gcg")).unwrap();
    // Break the fifth line of the second game: its score.
    let broken: Vec<String> =
        second.lines().enumerate().map(|(i, l)| if i == 4 { l.replace(" +", " +1") } else { l.to_string() }).collect();
    text += &(broken.join("\n") + "\n");
    let mixed = d.join("mixed");
    std::fs::create_dir_all(&mixed).unwrap();
    std::fs::write(mixed.join("two.gcg"), text).unwrap();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../engine/tests/data/gcg");
    for f in ["annotated-partial.gcg", "other-lexicon.gcg", "tournament-latin1.gcg"] {
        std::fs::copy(fixtures.join(f), mixed.join(f)).unwrap();
    }
    let out = d.join("out.frames");
    let o = worker(&["cnn", "assemble", s(&mixed), "--out", s(&out)]);
    let (e, summary) = (stderr(&o), ok(o));
    for says in [
        format!("two.gcg:{}: ", first_len + 5),
        "annotated-partial.gcg:1: line 5: the log does not show the mover's whole rack".to_string(),
        "other-lexicon.gcg:1: the game is not finished".to_string(),
    ] {
        assert!(e.contains(&format!("skipped: {}", mixed.join(&says).display())), "{says}: {e}");
    }
    assert!(summary.starts_with("2 games from 4 files\n3 games skipped (said above)"), "{summary}");
    let tournament = std::fs::read(fixtures.join("tournament-latin1.gcg")).unwrap();
    let moves = tournament.split(|&b| b == b'\n').filter(|l| l.starts_with(b">") && !l.contains(&b'(')).count() as u64;
    // Less the `--` line and the phony it takes back.
    assert_eq!(std::fs::metadata(&out).unwrap().len(), (turns[0] + moves - 2) * RECORD_BYTES);

    let only_bad = d.join("bad");
    std::fs::create_dir_all(&only_bad).unwrap();
    std::fs::copy(fixtures.join("other-lexicon.gcg"), only_bad.join("other-lexicon.gcg")).unwrap();
    let out = d.join("none.frames");
    let o = worker(&["cnn", "assemble", s(&only_bad), "--out", s(&out)]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("no game in") && stderr(&o).contains("all 1 skipped"), "{}", stderr(&o));
    assert!(
        !out.exists()
            && std::fs::read_dir(&d).unwrap().all(|f| !f.unwrap().file_name().to_string_lossy().contains(".tmp"))
    );
}

#[test]
fn bench_ends_with_evals_per_second() {
    let out =
        ok(worker(&["cnn", "bench", "--model", &tiny(), "--batch", "1,16", "--seconds", "0.2", "--device", "cpu"]));
    let last = out.lines().last().unwrap();
    let rate: f64 = last.strip_prefix("evals/s: ").unwrap().parse().unwrap();
    assert!(rate > 0.0);
    assert_eq!(out.lines().filter(|l| l.starts_with("batch")).count(), 2);
}

#[test]
fn a_missing_runtime_or_model_or_cuda_is_one_line_and_status_2() {
    let o = worker(&["cnn", "bench", "--model", &tiny(), "--onnxruntime", "/nonexistent/libonnxruntime.so"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("/nonexistent/libonnxruntime.so: no such file; install it with"), "{}", stderr(&o));
    assert_eq!(stderr(&o).lines().count(), 1);

    let o = worker(&["cnn", "bench", "--model", "/nonexistent/m.onnx", "--device", "cpu"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("/nonexistent/m.onnx: no such file"), "{}", stderr(&o));

    // The CPU library has no CUDA provider (and this machine no GPU).
    let o = worker(&["cnn", "bench", "--model", &tiny(), "--device", "cuda"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--device cuda"), "{}", stderr(&o));
    assert_eq!(stderr(&o).lines().count(), 1);

    let o = worker(&["autoplay", "--bot1", "cnn:model=/nonexistent/m.onnx", "--bot2", "static", "--games", "2"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("/nonexistent/m.onnx: no such file"), "{}", stderr(&o));
}

#[test]
fn the_bench_times_threads_sharing_the_models_queue() {
    let out = ok(worker(&[
        "cnn",
        "bench",
        "--model",
        &tiny(),
        "--batch",
        "16",
        "--seconds",
        "0.3",
        "--device",
        "cpu",
        "--feeders",
        "3",
    ]));
    let queue = out.lines().find(|l| l.starts_with("queue, 3 threads x 20 frames:")).expect("the queue's line");
    let mean: f64 = queue.rsplit("mean batch ").next().unwrap().parse().unwrap();
    assert!((20.0..=1024.0).contains(&mean), "{queue}");
    assert!(out.lines().last().unwrap().starts_with("evals/s: "), "{out}");
}

/// The same games with a model per thread, with one model shared through its queue (as on a
/// GPU), and on one or two threads: on the CPU a frame's value does not depend on what it is
/// batched with.
#[test]
fn the_cnn_bot_plays_the_same_games_on_any_thread_count() {
    let bot = format!("cnn:model={},k=8", tiny());
    let run = |threads: &str, shared: bool| {
        let shared: &[&str] = if shared { &["--shared-net"] } else { &[] };
        autoplay(
            &[&["--bot1", &bot, "--bot2", "static", "--games", "4", "--seed", "5", "--threads", threads][..], shared]
                .concat(),
        )
    };
    let one = run("1", false);
    assert!(one[0].starts_with("Games played: 4"), "{one:?}");
    assert_eq!(one, run("2", false));
    assert_eq!(one, run("2", true));
}

/// An autoplay run on the CPU: its summary, less what depends on the machine (times).
fn autoplay(args: &[&str]) -> Vec<String> {
    ok(worker(&[&["autoplay", "--device", "cpu"][..], args].concat()))
        .lines()
        .filter(|l| !l.starts_with("Seed:") && !l.contains("Time Per Move"))
        .map(String::from)
        .collect()
}

/// A simulating bot may score its rollouts with a value net (`model=`): the same games on one
/// thread as on two, since a block's open rollouts are valued in iteration order.
#[test]
fn a_sim_bot_scores_its_rollouts_with_a_net_on_any_thread_count() {
    let bot = format!("sim:k=3,plies=1,iterations=8,model={}", tiny());
    let run = |threads: &str| {
        autoplay(&["--bot1", &bot, "--bot2", "static", "--games", "2", "--seed", "5", "--threads", threads])
    };
    let one = run("1");
    assert!(one[0].starts_with("Games played: 2"), "{one:?}");
    assert_eq!(one, run("2"));
    let o = worker(&["autoplay", "--bot1", "sim:model=/nonexistent/m.onnx", "--bot2", "static", "--games", "2"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("/nonexistent/m.onnx"), "{}", stderr(&o));
}
