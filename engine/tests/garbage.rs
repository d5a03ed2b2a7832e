//! Hostile input: truncated, bit-flipped and random text or bytes must give an error or a
//! value, never a panic. Deterministic (seeded) so a failure reproduces.

mod common;
use common::*;
use engine::board::Layout;
use engine::cgp::Position;
use engine::gcg::{replay, write_gcg};
use engine::leaves::Klv;
use engine::lexicon::Kwg;
use engine::rng::Rng;
use engine::tiles::Distribution;

fn mutate(rng: &mut Rng, bytes: &[u8]) -> Vec<u8> {
    let mut b = bytes.to_vec();
    match rng.below(4) {
        0 => b.truncate(rng.below(b.len() as u64 + 1) as usize),
        1 => {
            for _ in 0..1 + rng.below(4) {
                if !b.is_empty() {
                    let i = rng.below(b.len() as u64) as usize;
                    b[i] ^= 1 << rng.below(8);
                }
            }
        }
        2 => {
            let i = rng.below(b.len() as u64 + 1) as usize;
            const JUNK: &[u8] = b"0123456789/ ;?aZ-+().#:>\n\xff";
            let junk: Vec<u8> = (0..rng.below(8)).map(|_| JUNK[rng.below(JUNK.len() as u64) as usize]).collect();
            b.splice(i..i, junk);
        }
        _ => {
            if b.len() > 1 {
                let i = rng.below(b.len() as u64 - 1) as usize;
                b.remove(i);
            }
        }
    }
    b
}

#[test]
fn mangled_positions_and_game_logs_never_panic() {
    let lex = enable();
    let mut rng = Rng::new(17);
    let mut mg = engine::movegen::Generator::new();
    let rec = engine::autoplay::play_leg(
        ctx(lex),
        &mut [
            engine::bots::BotSpec::Greedy.build(None, None).unwrap(),
            engine::bots::BotSpec::Greedy.build(None, None).unwrap(),
        ],
        1,
        0,
        0,
        &mut mg,
    );
    let gcg = write_gcg(&rec.game, ["a", "b"], dist());
    let cgp = engine::cgp::write(&rec.game, dist());
    for _ in 0..400 {
        let text = String::from_utf8_lossy(&mutate(&mut rng, cgp.as_bytes())).into_owned();
        if let Ok(p) = Position::parse(&text, dist()) {
            let _ = p.into_game(&lex.kwg, dist(), 1);
        }
        let text = String::from_utf8_lossy(&mutate(&mut rng, gcg.as_bytes())).into_owned();
        let _ = replay(&text, ctx(lex), "m.gcg");
    }
    // Logs as people write them, mangled as bytes: decoded, read, and every turn read as a
    // position, without a panic.
    let data = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/gcg");
    for name in ["tournament-latin1.gcg", "annotated-partial.gcg", "other-lexicon.gcg"] {
        let bytes = std::fs::read(data.join(name)).unwrap();
        for _ in 0..300 {
            let Ok(text) = engine::gcg::decode(&mutate(&mut rng, &bytes), name) else { continue };
            let r = engine::gcg::read(&text, ctx(lex), name);
            for n in 0..=r.turns.len() + 1 {
                let _ = engine::gcg::game_at(&r, n, None, ctx(lex));
            }
        }
    }
}

#[test]
fn mangled_graphs_tables_and_data_files_never_panic() {
    let mut rng = Rng::new(23);
    let small: Vec<Vec<u8>> = enable().words.iter().step_by(500).cloned().collect();
    let kwg = Kwg::build(&small).unwrap().to_bytes();
    let klv = Klv::build(engine::leavegen::all_leaves(dist()).into_iter().step_by(97).map(|l| (l, 1.0)).collect())
        .unwrap()
        .to_bytes();
    let dist_text = include_str!("../../lexica/english.dist");
    let layout_text = include_str!("../../lexica/standard15.layout");
    for _ in 0..300 {
        if let Ok(k) = Kwg::from_bytes(&mutate(&mut rng, &kwg), "m.kwg") {
            let _ = k.words();
            let _ = k.check_alphabet(dist(), "m.kwg");
        }
        if let Ok(k) = Klv::from_bytes(&mutate(&mut rng, &klv), "m.klv2") {
            let _ = engine::leaves::RackLeaves::from_klv(&[0, 1, 1, 5, 19, 26, 20], &k);
        }
        let _ = Distribution::parse(&String::from_utf8_lossy(&mutate(&mut rng, dist_text.as_bytes())), "m.dist");
        let _ = Layout::parse(&String::from_utf8_lossy(&mutate(&mut rng, layout_text.as_bytes())), "m.layout");
    }
}

#[test]
fn bad_distribution_and_layout_files_name_the_line() {
    let err = Distribution::parse("? 2 0 0\nA 9 1 1\nB two 3 0\n", "x.dist").unwrap_err();
    assert_eq!(err.place, "x.dist:3");
    let err = Distribution::parse("A 9 1 1\nA 9 1 1\n", "x.dist").unwrap_err();
    assert!(err.message.contains("twice"), "{err}");
    let err = Layout::parse("=..\n", "x.layout").unwrap_err();
    assert_eq!(err.place, "x.layout:1");
    let rows = include_str!("../../lexica/standard15.layout").replace('*', ".");
    assert!(Layout::parse(&rows, "x.layout").unwrap_err().message.contains("start"));
}
