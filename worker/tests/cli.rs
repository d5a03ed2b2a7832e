//! The `worker` binary as users and scripts meet it: real processes, real files.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn worker(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_worker"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn temp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("lexhive-cli-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn enable_txt() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../lexica/enable.txt").display().to_string()
}

const EMPTY: &str = "15/15/15/15/15/15/15/15/15/15/15/15/15/15/15";

#[test]
fn lexicon_build_then_check() {
    let d = temp("lex");
    let words = d.join("w.txt");
    std::fs::write(&words, "cat\nCATS\nact\nTa\nat\n").unwrap();
    let kwg = d.join("w.kwg");
    let o = worker(&["lexicon", "build", "--words", words.to_str().unwrap(), "--out", kwg.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("5 words"));
    let o = worker(&["lexicon", "check", kwg.to_str().unwrap(), "cats", "TAC", "at"]);
    assert_eq!(stdout(&o), "CATS valid\nTAC invalid\nAT valid\n");
    // The plain list works wherever a lexicon is taken.
    let o = worker(&["lexicon", "check", words.to_str().unwrap(), "act"]);
    assert_eq!(stdout(&o), "ACT valid\n");
}

#[test]
fn bad_word_lists_and_graphs_fail_with_file_and_line_and_status_2() {
    let d = temp("badlex");
    let words = d.join("bad.txt");
    std::fs::write(&words, "cat\ndog\nca7\n").unwrap();
    let out = d.join("bad.kwg");
    let o = worker(&["lexicon", "build", "--words", words.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("bad.txt:3"), "{}", stderr(&o));
    assert_eq!(stderr(&o).lines().count(), 1);
    assert!(!out.exists(), "nothing half-written");
    let corrupt = d.join("corrupt.kwg");
    std::fs::write(&corrupt, [1u8, 2, 3, 4, 5, 6]).unwrap();
    let o = worker(&["lexicon", "check", corrupt.to_str().unwrap(), "cat"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("corrupt.kwg"), "{}", stderr(&o));
    let o = worker(&[
        "movegen",
        "--lexicon",
        d.join("nope.kwg").to_str().unwrap(),
        "--cgp",
        &format!("{EMPTY} CAT/ 0/0 0"),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("nope.kwg") && stderr(&o).contains("cannot read"), "{}", stderr(&o));
}

#[test]
fn movegen_prints_best_first_in_the_contract_format() {
    let cgp = format!("{EMPTY} ZYMURGY/ 0/0 0");
    let o = worker(&["movegen", "--lexicon", &enable_txt(), "--cgp", &cgp, "--top", "3"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 3);
    assert!(lines[0].starts_with("8D ZYMURGY 120 "), "{out}");
    let all = worker(&["movegen", "--lexicon", &enable_txt(), "--cgp", &format!("{EMPTY} AEINRST/ 0/0 0"), "--all"]);
    let all = stdout(&all);
    let equities: Vec<f64> = all.lines().map(|l| l.rsplit(' ').next().unwrap().parse().unwrap()).collect();
    assert!(equities.windows(2).all(|w| w[0] >= w[1]), "best first");
    assert!(all.lines().any(|l| l.starts_with("-AEINRST 0 ")), "exchanges listed");
    assert!(all.lines().any(|l| l.starts_with("- 0 ")), "pass listed");
    assert!(all.lines().any(|l| l.starts_with("H4 RETAINS 66 ") || l.starts_with("8D RETAINS ")), "{}", &all[..200]);
}

#[test]
fn malformed_positions_fail_with_the_field_named_and_status_2() {
    for (cgp, want) in [("15/15 A/ 0/0 0", "CGP board"), (&format!("{EMPTY} A#/ 0/0 0") as &str, "CGP rack on turn")] {
        let o = worker(&["movegen", "--lexicon", &enable_txt(), "--cgp", cgp]);
        assert_eq!(o.status.code(), Some(2));
        assert!(stderr(&o).contains(want), "{}", stderr(&o));
        assert!(!stderr(&o).contains("panicked"));
    }
}

#[test]
fn autoplay_summary_logs_and_thread_independence() {
    let d = temp("auto");
    let run = |threads: &str, log: Option<&Path>| {
        let mut args = vec![
            "autoplay",
            "--bot1",
            "static",
            "--bot2",
            "softmax:t=2,bag=40",
            "--games",
            "6",
            "--seed",
            "9",
            "--threads",
            threads,
        ];
        let l;
        if let Some(p) = log {
            l = p.display().to_string();
            args.extend(["--log-dir", &l]);
        }
        let o = worker(&args);
        assert!(o.status.success(), "{}", stderr(&o));
        stdout(&o)
    };
    let one = run("1", Some(&d));
    let two = run("2", None);
    let first_wins = one.lines().find(|l| l.contains("wins:")).unwrap();
    assert!(first_wins.starts_with("static wins: "), "{one}");
    assert!(one.starts_with("Games played: 6\n"));
    // Timings are the machine's; everything else must match.
    let body = |s: &str| {
        s.lines()
            .filter(|l| !l.starts_with("Seed:") && !l.contains("Time Per Move"))
            .map(String::from)
            .collect::<Vec<_>>()
    };
    assert_eq!(body(&one), body(&two), "results do not depend on the thread count");
    let gcgs: Vec<PathBuf> = std::fs::read_dir(&d)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "gcg"))
        .collect();
    assert_eq!(gcgs.len(), 6);
    // Every logged game replays legally, move by move and score by score.
    let dist = engine::tiles::Distribution::english();
    let layout = engine::board::Layout::standard();
    let text = std::fs::read_to_string(enable_txt()).unwrap();
    let kwg =
        engine::lexicon::Kwg::build(&engine::lexicon::parse_word_list(&text, &dist, "enable.txt").unwrap()).unwrap();
    let ctx = engine::movegen::Ctx { kwg: &kwg, dist: &dist, layout: &layout };
    for p in &gcgs {
        let gcg = std::fs::read_to_string(p).unwrap();
        let r = engine::gcg::replay(&gcg, ctx, &p.display().to_string()).unwrap_or_else(|e| panic!("{e}"));
        let last_total = |nick: &str| {
            gcg.lines()
                .rfind(|l| l.starts_with(&format!(">{nick}:")))
                .and_then(|l| l.rsplit(' ').next())
                .unwrap()
                .parse::<i32>()
                .unwrap()
        };
        assert_eq!(r.scores, [last_total("p1"), last_total("p2")]);
        assert!(r.turns.len() > 10);
    }
    let csv = std::fs::read_to_string(d.join("turns.csv")).unwrap();
    assert!(csv.starts_with("game_id,turn,player,rack,move,score,total,tiles_played,leave,equity,bag\n"));
    assert!(csv.lines().count() > 6 * 15);
    let o = worker(&["autoplay", "--bot1", "static", "--bot2", "nosuchbot", "--games", "2"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("nosuchbot"));
}

#[test]
fn bench_endgame_reports_every_position_at_every_thread_count() {
    let bench =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/endgame-bench.cgp")).unwrap();
    let two: Vec<&str> = bench.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()).take(2).collect();
    let file = temp("bench").join("bench-two.cgp");
    std::fs::write(&file, format!("# two positions\n{}\n", two.join("\n"))).unwrap();
    let o = worker(&[
        "bench-endgame",
        "--file",
        file.to_str().unwrap(),
        "--plies",
        "2",
        "--threads",
        "1,2",
        "--table-mb",
        "16",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    for threads in [1, 2] {
        assert_eq!(out.matches(&format!("  threads {threads}  value")).count(), 2, "{out}");
        assert!(out.contains(&format!("threads {threads}: 2 positions in")), "{out}");
    }
    // A broken line is named with its file and line number.
    std::fs::write(&file, "# one bad position\nnot a cgp\n").unwrap();
    let o = worker(&["bench-endgame", "--file", file.to_str().unwrap(), "--plies", "1"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("bench-two.cgp:2:"), "{}", stderr(&o));
}

#[test]
fn bench_movegen_counts_every_move_of_each_rack_class() {
    // One position of each class from the benchmark file; the class totals must be the move
    // lists `worker movegen --all` prints, position by position.
    let bench =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/movegen-bench.cgp")).unwrap();
    let lines: Vec<&str> = bench.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()).collect();
    let blanks = |l: &str| l.split_whitespace().nth(1).unwrap().split('/').next().unwrap().matches('?').count();
    let file = temp("bench").join("movegen-three.cgp");
    let mut picked = Vec::new();
    for class in 0..3 {
        picked.push(*lines.iter().find(|l| blanks(l) == class).expect("each class in the file"));
    }
    std::fs::write(&file, format!("# three positions\n{}\n", picked.join("\n"))).unwrap();
    let o = worker(&["bench-movegen", "--file", file.to_str().unwrap(), "--rounds", "1"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    for (name, cgp) in ["no blank", "one blank", "two blanks"].iter().zip(&picked) {
        let all = worker(&["movegen", "--all", "--cgp", cgp]);
        assert!(all.status.success(), "{}", stderr(&all));
        let moves = stdout(&all).lines().count();
        assert!(out.contains(&format!("| {name} | 1 | {moves} | ")), "{name}: {moves} moves\n{out}");
    }
    std::fs::write(&file, "# one bad position\nnot a cgp\n").unwrap();
    let o = worker(&["bench-movegen", "--file", file.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("movegen-three.cgp:2:"), "{}", stderr(&o));
}

#[test]
fn leave_values_are_looked_up_and_impossible_leaves_refused() {
    let o = worker(&["leaves", "value", "QU", "?ERS"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.starts_with("QU ") && out.contains("\n?ERS "), "{out}");
    // Seven tiles kept means no tile played: not a leave.
    let o = worker(&["leaves", "value", "AEINRST"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("leave `AEINRST`: 7 tiles"), "{}", stderr(&o));
    // Leaves are spelled in the table's own distribution (`--dist`): in one without a Q,
    // `QU` is no leave at all.
    let d = temp("leaves-dist");
    let english =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../lexica/english.dist")).unwrap();
    let no_q: String = english.lines().filter(|l| !l.starts_with("Q ")).map(|l| format!("{l}\n")).collect();
    let dist = d.join("no-q.dist");
    std::fs::write(&dist, no_q).unwrap();
    let o = worker(&["leaves", "value", "--dist", dist.to_str().unwrap(), "QU"]);
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    assert!(stderr(&o).contains("leave `QU`"), "{}", stderr(&o));
}

#[test]
fn leave_generation_is_reproducible_whatever_the_thread_count() {
    let d = temp("leaves");
    let generate = |threads: &str, out: &Path| {
        let o = worker(&[
            "leaves",
            "generate",
            "--lexicon",
            &enable_txt(),
            "--games",
            "30",
            "--iterations",
            "2",
            "--seed",
            "3",
            "--threads",
            threads,
            "--out",
            out.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        std::fs::read(out).unwrap()
    };
    let a = generate("1", &d.join("a.klv2"));
    let b = generate("2", &d.join("b.klv2"));
    assert!(a == b, "same seed, same table");
    let k = engine::leaves::Klv::from_bytes(&a, "a.klv2").unwrap();
    assert_eq!(k.len(), 914_624);
    let o = worker(&["leaves", "value", "--leaves", d.join("a.klv2").to_str().unwrap(), "?", "VVW"]);
    let out = stdout(&o);
    let v: Vec<f64> = out.lines().map(|l| l.rsplit(' ').next().unwrap().parse().unwrap()).collect();
    assert!(v[0] > v[1], "a blank is worth more than VVW even after a few games: {out}");
}

#[test]
fn win_table_generation_is_reproducible_and_readable() {
    let d = temp("wintable");
    let generate = |threads: &str, out: &Path| {
        let o = worker(&[
            "wintable",
            "generate",
            "--games",
            "60",
            "--seed",
            "4",
            "--threads",
            threads,
            "--out",
            out.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        std::fs::read(out).unwrap()
    };
    let a = generate("1", &d.join("a.wpt"));
    let b = generate("2", &d.join("b.wpt"));
    assert!(a == b, "same seed, same table, any thread count");
    let o = worker(&[
        "wintable",
        "show",
        "--table",
        d.join("a.wpt").to_str().unwrap(),
        "--unseen",
        "20",
        "--",
        "-40",
        "0",
        "40",
    ]);
    let p: Vec<f64> = stdout(&o).lines().map(|l| l.split(' ').nth(1).unwrap().parse().unwrap()).collect();
    assert!(p[0] < p[1] && p[1] < p[2], "{p:?}");
    // A damaged table names its file and line.
    let bad = d.join("bad.wpt");
    std::fs::write(&bad, String::from_utf8(a).unwrap().replacen("\n5:", "\n6:", 1)).unwrap();
    let o = worker(&["wintable", "show", "--table", bad.to_str().unwrap(), "--unseen", "3", "0"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("bad.wpt:") && stderr(&o).contains("row for 5"), "{}", stderr(&o));
}

#[test]
fn sim_table_is_the_same_on_one_and_two_threads() {
    let run = |threads: &str| {
        let o = worker(&[
            "sim",
            "--lexicon",
            &enable_txt(),
            "--cgp",
            &format!("{EMPTY} AEINRST/ 0/0 0"),
            "--candidates",
            "4",
            "--iterations",
            "128",
            "--seed",
            "7",
            "--threads",
            threads,
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        // Everything but the timing line.
        stdout(&o).lines().filter(|l| !l.starts_with("Iterations:")).map(str::to_string).collect::<Vec<_>>()
    };
    let (a, b) = (run("1"), run("2"));
    assert_eq!(a, b);
    assert!(a[0].starts_with("Play") && a.len() == 5, "{a:?}");
    // The first row is the chosen play: a 66-point bingo from AEINRST on an empty board.
    assert!(a[1].split_whitespace().nth(2) == Some("66"), "{}", a[1]);
    let o = worker(&["sim", "--lexicon", &enable_txt(), "--cgp", &format!("{EMPTY} AEINRST/ 0/0 0"), "--stop", "97"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--stop"));
}

#[test]
fn sim_bot_plays_the_same_games_on_any_thread_count() {
    let run = |threads: &str| {
        let o = worker(&[
            "autoplay",
            "--lexicon",
            &enable_txt(),
            "--bot1",
            "sim:k=3,plies=1,iterations=16",
            "--bot2",
            "static",
            "--games",
            "2",
            "--seed",
            "5",
            "--threads",
            threads,
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        stdout(&o)
            .lines()
            .filter(|l| !l.starts_with("Seed:") && !l.contains("Time Per Move"))
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    assert_eq!(run("1"), run("2"));
}

#[test]
fn endgame_prints_value_and_best_move_the_same_at_one_and_two_threads() {
    let cgp = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/endgame-bench.cgp")).unwrap();
    let cgp = cgp.lines().find(|l| !l.starts_with('#')).unwrap().to_string();
    let field = |out: &str, key: &str| {
        out.lines()
            .find_map(|l| l.strip_prefix(key))
            .map(str::trim)
            .map(String::from)
            .unwrap_or_else(|| panic!("no `{key}` in {out}"))
    };
    let mut values = Vec::new();
    for threads in ["1", "2"] {
        let o = worker(&["endgame", "--cgp", &cgp, "--threads", threads, "--table-mb", "32"]);
        assert!(o.status.success(), "{}", stderr(&o));
        let out = stdout(&o);
        assert_eq!(field(&out, "exact:"), "yes");
        assert_eq!(field(&out, "stuck:"), "-");
        let best = field(&out, "best:");
        assert!(field(&out, "sequence:").starts_with(&best), "{out}");
        values.push(field(&out, "value:").parse::<i32>().unwrap());
        assert!(stderr(&o).contains("depth  1"), "progress per depth: {}", stderr(&o));
    }
    assert_eq!(values[0], values[1]);

    // Stuck tiles are named, the mover's first: the benchmark set's line 11, where the other
    // side holds a Z that no play places.
    let bench =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/endgame-bench.cgp")).unwrap();
    let o = worker(&["endgame", "--cgp", bench.lines().nth(10).unwrap(), "--plies", "1", "--table-mb", "32"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(field(&stdout(&o), "stuck:"), "/Z");
    assert_eq!(field(&stdout(&o), "exact:"), "no (stopped at the --plies 1 limit)");

    // A bag that is not empty, and nonsense options: one line naming the problem, status 2.
    let o = worker(&["endgame", "--cgp", &format!("{EMPTY} AB/CD 0/0 0")]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("bag"), "{}", stderr(&o));
    let o = worker(&["endgame", "--cgp", &cgp, "--plies", "0"]);
    assert_eq!(o.status.code(), Some(2));
    let o = worker(&["peg", "--cgp", &cgp]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("exactly one"), "{}", stderr(&o));
}

#[test]
fn infer_reads_a_logged_turn_the_same_on_any_thread_count() {
    let d = temp("infer");
    let o = worker(&[
        "autoplay",
        "--bot1",
        "static",
        "--bot2",
        "static",
        "--games",
        "2",
        "--seed",
        "5",
        "--log-dir",
        d.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let gcg = d.join("game-000000.gcg");
    let text = std::fs::read_to_string(&gcg).unwrap();
    // Turn 6 of this deal: the second player's H11 (SH)OTT from IETOGTT, keeping EGIT.
    let line = text.lines().filter(|l| l.starts_with('>')).nth(5).unwrap();
    assert!(line.starts_with(">p2: IETOGTT H11"), "{line}");
    let run = |likelihood: &str, threads: &str| {
        let o = worker(&[
            "infer",
            "--gcg",
            gcg.to_str().unwrap(),
            "--turn",
            "6",
            "--likelihood",
            likelihood,
            "--threads",
            threads,
            "--iterations",
            "10",
            "--candidates",
            "3",
            "--plies",
            "1",
            "--max-leaves",
            "60",
            "--json",
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        let out = stdout(&o);
        let v: serde_json::Value = serde_json::from_str(out.lines().last().unwrap()).unwrap();
        (out, v)
    };
    let (out, v) = run("static", "2");
    assert!(out.contains("tile") && out.contains("weight"), "{out}");
    let leaves = v["leaves"].as_array().unwrap();
    let sum: f64 = leaves.iter().map(|l| l["weight"].as_f64().unwrap()).sum();
    assert!((sum - 1.0).abs() < 1e-9, "{sum}");
    for l in leaves {
        let s = l["leave"].as_str().unwrap();
        assert_eq!(s.len(), 4, "a four-tile leave: {s}");
        let letters: Vec<char> = s.chars().filter(|&c| c != '?').collect();
        assert!(letters.windows(2).all(|w| w[0] <= w[1]) && !s.trim_end_matches('?').contains('?'), "{s}");
    }
    // The log lists the rack, so the read is scored against the leave really kept: EGIT.
    let truth = &v["truth"];
    assert_eq!(truth["leave"], "EGIT", "{out}");
    let (read, chance) = (truth["overlap"].as_f64().unwrap(), truth["prior_overlap"].as_f64().unwrap());
    assert!(chance > 0.0 && chance < read && read < 4.0, "{read} against {chance}");
    assert!(out.contains("the leave really kept (from the log): EGIT"), "{out}");
    // A simulated read is the same on one thread and two.
    let strip = |v: &serde_json::Value| v["leaves"].clone();
    assert_eq!(strip(&run("sim", "1").1), strip(&run("sim", "2").1));
    // Flat: the prior, every weight its prior.
    for l in run("flat", "2").1["leaves"].as_array().unwrap() {
        assert_eq!(l["weight"], l["prior"]);
    }
    let o = worker(&["infer", "--gcg", gcg.to_str().unwrap(), "--turn", "400"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("game-000000.gcg") && stderr(&o).contains("turn 400"), "{}", stderr(&o));
}

/// The shipped example of a read (examples/exchange-read.gcg): the second player exchanges
/// three tiles at turn 10 (LQR), keeping DERS; read from that exchange, an S is on their rack
/// far more often than chance, and the reader's simulated best play turns from D12 UH to
/// 8K HO(C)US. README shows it with the default (mini-simulated) read; this is the cheap
/// static read, which says the same.
#[test]
fn an_exchange_read_changes_the_simulated_best_play() {
    let gcg = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/exchange-read.gcg");
    let o = worker(&[
        "infer",
        "--gcg",
        gcg.to_str().unwrap(),
        "--turn",
        "10",
        "--likelihood",
        "static",
        "--simulate",
        "1000",
        "--sim-candidates",
        "6",
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("the read changes the best play: D12 UH -> 8K HO(C)US"), "{out}");
    let v: serde_json::Value = serde_json::from_str(out.lines().last().unwrap()).unwrap();
    assert_eq!((v["best_without_read"].as_str(), v["best_with_read"].as_str()), (Some("D12 UH"), Some("8K HO(C)US")));
    let holding_s = |key: &str| -> f64 {
        v["leaves"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|l| l["leave"].as_str().unwrap().contains('S'))
            .map(|l| l[key].as_f64().unwrap())
            .sum()
    };
    assert!(holding_s("weight") > 2.0 * holding_s("prior"), "{} against {}", holding_s("weight"), holding_s("prior"));
    assert_eq!(v["truth"]["leave"], "DERS");
}

/// An HTTP server on a free port that answers every request with `status` and `body` (JSON).
fn answering(status: &str, body: &'static str) -> String {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let head = format!(
        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    std::thread::spawn(move || {
        for mut s in listener.incoming().flatten() {
            let mut buf = [0u8; 8192];
            let _ = s.read(&mut buf);
            let _ = s.write_all(head.as_bytes());
            let _ = s.write_all(body.as_bytes());
        }
    });
    url
}

/// `worker volunteer --exit-when-idle` against `url`, with a config folder of its own.
fn volunteer_at(url: &str, home: &Path, extra: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_worker"));
    let name = if extra.contains(&"--name") { &[][..] } else { &["--name", "cli-volunteer"][..] };
    c.args(["volunteer", "--coordinator", url, "--threads", "1"])
        .args(name)
        .args(extra)
        .env("LEXHIVE_CONFIG_DIR", home.join("config"))
        .env("LEXHIVE_CACHE_DIR", home.join("cache"));
    c
}

#[test]
fn a_volunteer_says_why_it_cannot_start_and_exits_with_the_documented_status() {
    let d = temp("volunteer-exits");
    // Nothing listens: it says so with each wait, then gives up (status 3).
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let url = format!("http://{closed}");
    let o = volunteer_at(&url, &d, &["--exit-when-idle"]).output().unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert!(
        err.contains(&format!("cannot reach the coordinator at {url}")) && err.contains("trying again in ~1 s"),
        "{err}"
    );
    assert!(err.lines().last().unwrap().contains("gave up after 10 s"), "{err}");
    // A server that is not a coordinator (or a URL with a path): one line, status 4.
    let url = answering("404 Not Found", r#"{"error":"no such page"}"#);
    let o = volunteer_at(&format!("{url}/dashboard"), &d, &["--exit-when-idle"]).output().unwrap();
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("is not a lexhive coordinator (GET /api/v1/version answered HTTP 404)"),
        "{}",
        stderr(&o)
    );
    assert_eq!(stderr(&o).lines().count(), 1, "{}", stderr(&o));
    // A coordinator of another protocol: status 5, whatever --exit-when-idle says.
    let url = answering("200 OK", r#"{"service":"lexhive","protocol":999,"version":"9.9.9"}"#);
    let o = volunteer_at(&url, &d, &[]).output().unwrap();
    assert_eq!(o.status.code(), Some(5), "{}", stderr(&o));
    assert!(stderr(&o).contains("speaks protocol 999") && stderr(&o).contains("upgrade the worker"), "{}", stderr(&o));
    // Registration refused: status 6, with the coordinator's reason.
    let url = answering_version_then("403 Forbidden", r#"{"error":"registration is by invitation"}"#);
    let o = volunteer_at(&url, &d, &[]).output().unwrap();
    assert_eq!(o.status.code(), Some(6), "{}", stderr(&o));
    assert!(stderr(&o).contains("registration is by invitation"), "{}", stderr(&o));
}

/// A server that answers `GET /api/v1/version` as a coordinator of this protocol, and every
/// other request with `status` and `body`.
fn answering_version_then(status: &'static str, body: &'static str) -> String {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let version = format!(r#"{{"service":"lexhive","protocol":{},"version":"test"}}"#, shared::PROTOCOL_VERSION);
    std::thread::spawn(move || {
        for mut s in listener.incoming().flatten() {
            let mut buf = [0u8; 8192];
            let n = s.read(&mut buf).unwrap_or(0);
            let (status, body) = if buf[..n].starts_with(b"GET /api/v1/version") {
                ("200 OK", version.as_str())
            } else {
                (status, body)
            };
            let _ = write!(
                s,
                "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    url
}

#[test]
fn two_volunteers_of_one_name_never_share_a_config_folder() {
    let d = temp("volunteer-lock");
    // The first waits for a coordinator that never answers, holding its name.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let url = format!("http://{closed}");
    // A volunteer says it is waiting only once it holds its name: read that line first.
    let waiting = |c: &mut std::process::Child| {
        let mut line = String::new();
        std::io::BufRead::read_line(&mut std::io::BufReader::new(c.stderr.as_mut().unwrap()), &mut line).unwrap();
        assert!(line.contains("cannot reach the coordinator"), "{line}");
    };
    let mut first = volunteer_at(&url, &d, &[]).stderr(std::process::Stdio::piped()).spawn().unwrap();
    waiting(&mut first);
    let o = volunteer_at(&url, &d, &[]).output().unwrap();
    assert_eq!(o.status.code(), Some(7), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("a volunteer named `cli-volunteer`") && stderr(&o).contains("already running"),
        "{}",
        stderr(&o)
    );
    // Another name may share the folder.
    let mut other =
        volunteer_at(&url, &d, &["--name", "cli-other"]).stderr(std::process::Stdio::piped()).spawn().unwrap();
    waiting(&mut other);
    assert!(other.try_wait().unwrap().is_none(), "a second name runs beside the first");
    for c in [&mut first, &mut other] {
        c.kill().unwrap();
        c.wait().unwrap();
    }
    // Once the first has gone, the name is free again.
    let o = volunteer_at(&url, &d, &["--exit-when-idle"]).output().unwrap();
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
}

/// `worker infer` on games as people write them (`engine/tests/data/gcg/`): an annotated game
/// whose opponent racks show only what was played reads at either player's turns, with the
/// viewer's rack whole, partial or unknown as the log shows it; a withdrawn phony, a play in
/// another word list and a simulation without the viewer's rack are refused with the reason.
#[test]
fn infer_reads_turns_of_games_as_people_write_them() {
    let data = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../engine/tests/data/gcg");
    let file = |name: &str| data.join(name).display().to_string();
    let annotated = file("annotated-partial.gcg");
    let infer = |gcg: &str, turn: &str, more: &[&str]| {
        let mut args =
            vec!["infer", "--gcg", gcg, "--turn", turn, "--likelihood", "static", "--max-leaves", "60", "--json"];
        args.extend_from_slice(more);
        worker(&args)
    };
    // (turn, what the log shows of the viewer's rack, as said on stderr)
    for (turn, viewer) in [
        ("2", None),
        ("3", Some("the viewer's rack: the log does not show it, so every tile off the board counts as unseen")),
        ("5", Some("the viewer's rack: the log shows 6 of its 7 tiles (OOTIER)")),
    ] {
        let o = infer(&annotated, turn, &[]);
        assert!(o.status.success(), "turn {turn}: {}", stderr(&o));
        let out = stdout(&o);
        let v: serde_json::Value = serde_json::from_str(out.lines().last().unwrap()).unwrap();
        let sum: f64 = v["leaves"].as_array().unwrap().iter().map(|l| l["weight"].as_f64().unwrap()).sum();
        assert!((sum - 1.0).abs() < 1e-9, "turn {turn}: {sum}");
        match viewer {
            Some(says) => assert!(stderr(&o).contains(says), "turn {turn}: {}", stderr(&o)),
            None => assert!(!stderr(&o).contains("the viewer's rack"), "turn {turn}: {}", stderr(&o)),
        }
        // The annotator's racks are whole, so a read of their turn is scored against the truth;
        // the opponent's are not.
        assert_eq!(v.get("truth").is_some(), turn != "2", "turn {turn}: {out}");
    }
    let refused = [
        (
            annotated.clone(),
            "3",
            vec!["--simulate", "100"],
            "--simulate plays the viewer's move, so it needs the viewer's whole rack",
        ),
        (file("tournament-latin1.gcg"), "8", vec![], "turn 8 (line 17) was challenged off"),
        (file("other-lexicon.gcg"), "1", vec![], "forms QI, which the lexicon lacks"),
        (annotated.clone(), "2", vec!["--rack", "ZZ"], "more `Z` than are off the board"),
    ];
    for (gcg, turn, more, says) in refused {
        let o = infer(&gcg, turn, &more);
        assert_eq!(o.status.code(), Some(2), "{gcg} {turn}");
        assert!(stderr(&o).contains(says), "{}", stderr(&o));
    }
    // With the viewer's rack given as unknown, a read still runs.
    let o = infer(&annotated, "2", &["--rack", ""]);
    assert!(o.status.success() && stderr(&o).contains("unknown (--rack '')"), "{}", stderr(&o));
}

/// An option shows in the help of the commands it applies to, and of no other.
#[test]
fn the_word_map_option_is_on_the_commands_that_play() {
    for (args, has) in [
        (&["autoplay", "--help"][..], true),
        (&["volunteer", "--help"], true),
        (&["movegen", "--help"], true),
        (&["submit", "--help"], false),
        (&["experiments", "login", "--help"], false),
        (&["owner", "--help"], false),
    ] {
        let o = worker(args);
        assert!(o.status.success(), "{args:?}");
        assert_eq!(stdout(&o).contains("--no-word-map"), has, "{args:?}");
    }
}
