//! The CNN's input frames: a hand-built position with every plane and scalar checked, the
//! cross-set planes against a plain per-square check of the words formed, and transposition.

mod common;
use common::*;
use engine::board::{ACROSS, Board, DIM, DOWN, SQUARES};
use engine::cgp::Position;
use engine::eval::request;
use engine::features::{Before, Encoder, FRAME_LEN, LETTERS, PLANES, Target, plane, scalar, transpose};
use engine::game::Game;
use engine::gcg::resolve;
use engine::leaves::RackLeaves;
use engine::movegen::{Generator, Mode};
use engine::moves::{Kind, Move};
use engine::rng::Rng;
use engine::tiles::BLANK_BIT;
use engine::view::HIDDEN;

const CAT: &str = "15/15/15/15/15/15/15/7CAT5/15/15/15/15/15/15/15 QI?ERST/AEINRST 40/30 0";

fn at(frame: &[f32], p: usize, row: usize, col: usize) -> f32 {
    frame[p * SQUARES + row * DIM + col]
}

fn plane_sum(frame: &[f32], p: usize) -> f32 {
    frame[p * SQUARES..][..SQUARES].iter().sum()
}

fn letter(c: char) -> usize {
    (c as u8 - b'A') as usize
}

fn game(cgp: &str) -> Game {
    Position::parse(cgp, dist()).unwrap().into_game(&enable().kwg, dist(), 1)
}

fn play(game: &Game, text: &str) -> Move {
    let f: Vec<&str> = text.split_whitespace().collect();
    resolve(&f, &game.racks[game.on_turn], &game.board, ctx(enable())).unwrap()
}

fn encode(game: &Game, mv: &Move, last: Option<&Move>, leave_value: f32) -> Vec<f32> {
    let mut unseen = Vec::new();
    let before = Before::of_game(game, &mut unseen, last);
    let mut frame = vec![f32::NAN; FRAME_LEN];
    Encoder::new(dist()).unwrap().encode(ctx(enable()), &before, mv, leave_value, &mut frame);
    frame
}

#[test]
fn every_plane_of_a_hand_built_position() {
    let g = game(CAT);
    let mv = play(&g, "8G sCAT");
    assert_eq!(mv.score, 5, "a blank S scores nothing");
    let cat = parse_cat(&g);
    let f = encode(&g, &mv, Some(&cat), 12.5);
    assert!(f.iter().all(|x| x.is_finite()), "every value is written");

    // Letters: C A T where they were, the blank S at 8G as an S and as a blank.
    for (c, col) in [('S', 6), ('C', 7), ('A', 8), ('T', 9)] {
        assert_eq!(at(&f, plane::LETTER + letter(c), 7, col), 1.0, "{c}");
    }
    let letters: f32 = (0..LETTERS).map(|l| plane_sum(&f, plane::LETTER + l)).sum();
    assert_eq!(letters, 4.0);
    assert_eq!(plane_sum(&f, plane::BLANK), 1.0);
    assert_eq!(at(&f, plane::BLANK, 7, 6), 1.0);

    // Cross-sets. Above the C: no across neighbour, so every letter; down, only a letter
    // that makes a two-letter word ending in C (none in ENABLE).
    for l in 0..LETTERS {
        assert_eq!(at(&f, plane::CROSS_ACROSS + l, 6, 7), 1.0);
        assert_eq!(at(&f, plane::CROSS_DOWN + l, 6, 7), 0.0);
    }
    // Right of SCAT: across, SCATS and SCATT are words, SCATQ is not.
    assert_eq!(at(&f, plane::CROSS_ACROSS + letter('S'), 7, 10), 1.0);
    assert_eq!(at(&f, plane::CROSS_ACROSS + letter('Q'), 7, 10), 0.0);
    assert_eq!(at(&f, plane::CROSS_DOWN + letter('Q'), 7, 10), 1.0);
    // Above the A: AA, BA, ... are down words; across it has no neighbour.
    assert_eq!(at(&f, plane::CROSS_DOWN + letter('B'), 6, 8), 1.0);
    assert_eq!(at(&f, plane::CROSS_DOWN + letter('V'), 6, 8), 0.0);
    // Occupied squares have empty cross-sets.
    for l in 0..LETTERS {
        for col in 6..10 {
            assert_eq!(at(&f, plane::CROSS_ACROSS + l, 7, col), 0.0);
            assert_eq!(at(&f, plane::CROSS_DOWN + l, 7, col), 0.0);
        }
    }

    // Premiums: the start square is covered; the corners are 3W, and so on.
    assert_eq!(at(&f, plane::PREMIUM + 3, 0, 0), 1.0, "3W");
    assert_eq!(at(&f, plane::PREMIUM, 0, 3), 1.0, "2L");
    assert_eq!(at(&f, plane::PREMIUM + 1, 1, 5), 1.0, "3L");
    assert_eq!(at(&f, plane::PREMIUM + 2, 1, 1), 1.0, "2W");
    for p in 0..4 {
        assert_eq!(at(&f, plane::PREMIUM + p, 7, 7), 0.0, "the covered start square");
    }
    let premiums: Vec<f32> = (0..4).map(|p| plane_sum(&f, plane::PREMIUM + p)).collect();
    assert_eq!(premiums, [24.0, 12.0, 16.0, 8.0], "2W counts the start square only while uncovered");

    assert_eq!(plane_sum(&f, plane::OPPONENT_LAST), 3.0);
    for col in 7..10 {
        assert_eq!(at(&f, plane::OPPONENT_LAST, 7, col), 1.0);
    }
    assert_eq!(plane_sum(&f, plane::PLAY), 1.0);
    assert_eq!(at(&f, plane::PLAY, 7, 6), 1.0);
}

/// CAT as the move that put it on the board (for the opponent's-last-play plane).
fn parse_cat(g: &Game) -> Move {
    let mut before = g.board.clone();
    for col in 7..10 {
        before.set(7, col, 0);
    }
    engine::gcg::parse_placement("8H", "CAT", &before, dist()).unwrap()
}

#[test]
fn every_scalar_of_a_hand_built_position() {
    let g = game(CAT);
    let mv = play(&g, "8G sCAT");
    let f = encode(&g, &mv, None, 12.5);
    let s = &f[PLANES * SQUARES..];
    assert_eq!(s.len(), 76);

    // Leave QIERST: one each of Q I E R S T, no blank.
    for c in ['Q', 'I', 'E', 'R', 'S', 'T'] {
        assert_eq!(s[scalar::LEAVE + letter(c)], 1.0 / 7.0, "{c}");
    }
    assert_eq!(s[scalar::LEAVE + 26], 0.0, "blank");
    assert!((s[scalar::LEAVE..scalar::LEAVE + 27].iter().sum::<f32>() - 6.0 / 7.0).abs() < 1e-6);

    // Unseen: 100 tiles less C A T on the board and QI?ERST on the rack: 90.
    let unseen = 90.0;
    let total = |c: char| dist().count(dist().letter(c).unwrap()) as f32;
    assert_eq!(s[scalar::UNSEEN + letter('A')], (total('A') - 1.0) / unseen);
    assert_eq!(s[scalar::UNSEEN + letter('Q')], 0.0);
    assert_eq!(s[scalar::UNSEEN + 26], 1.0 / unseen, "the other blank");
    assert!((s[scalar::UNSEEN..scalar::UNSEEN + 27].iter().sum::<f32>() - 1.0).abs() < 1e-5);

    assert_eq!(&s[scalar::EXCHANGE..scalar::EXCHANGE + 8], &[0.0; 8], "no exchange before");
    // Power tiles J Q X Z ? S, unseen over the distribution's count.
    let power = [1.0, 0.0, 1.0, 1.0, 0.5, (total('S') - 1.0) / total('S')];
    assert_eq!(&s[scalar::POWER..scalar::POWER + 6], &power);

    // Vowels unseen: A E I O U less A on the board and I E on the rack; consonants the rest
    // less the blank.
    let vowels = ['A', 'E', 'I', 'O', 'U'].iter().map(|&c| total(c)).sum::<f32>() - 3.0;
    assert!((s[scalar::UNSEEN_VOWELS] - vowels / unseen).abs() < 1e-6);
    assert!((s[scalar::UNSEEN_CONSONANTS] - (unseen - 1.0 - vowels) / unseen).abs() < 1e-6);
    assert_eq!(s[scalar::LEAVE_VOWELS], 2.0 / 6.0);
    assert_eq!(s[scalar::LEAVE_CONSONANTS], 4.0 / 6.0);

    assert_eq!(s[scalar::SCORE], (5.0f32 / 50.0).tanh());
    assert_eq!(s[scalar::LEAVE_VALUE], 0.5f32.tanh());
    assert_eq!(s[scalar::BAG], (g.bag.len() - 1) as f32 / 100.0, "the bag after the mover draws one");
    assert_eq!(s[scalar::SPREAD], (15.0f32 / 100.0).tanh(), "40 - 30 + 5");
}

#[test]
fn the_opponents_exchange_is_a_flag_and_a_count() {
    let g = game(CAT);
    let mv = play(&g, "8G sCAT");
    let thrown = Move::exchange(&[HIDDEN; 3]);
    let f = encode(&g, &mv, Some(&thrown), 0.0);
    let s = &f[PLANES * SQUARES..];
    assert_eq!(&s[scalar::EXCHANGE..scalar::EXCHANGE + 8], &[1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0]);
    assert_eq!(plane_sum(&f, plane::OPPONENT_LAST), 0.0, "an exchange places nothing");
}

#[test]
fn an_exchange_and_a_pass_leave_the_board_planes_alone() {
    let g = game(CAT);
    let ex = play(&g, "-QI");
    let f = encode(&g, &ex, None, 0.0);
    let s = &f[PLANES * SQUARES..];
    assert_eq!(plane_sum(&f, plane::PLAY), 0.0);
    assert_eq!(s[scalar::LEAVE + letter('Q')], 0.0);
    assert_eq!(s[scalar::BAG], g.bag.len() as f32 / 100.0);
    assert_eq!(s[scalar::SCORE], 0.0);
    let pass = encode(&g, &Move::PASS, None, 0.0);
    assert_eq!(f[..PLANES * SQUARES], pass[..PLANES * SQUARES]);
}

/// The word formed through an empty square along `dir` with `letter` put there, or `None`
/// when the square has no neighbour that way.
fn word_through(board: &Board, row: usize, col: usize, dir: usize, letter: u8) -> Option<Vec<u8>> {
    let get = |k: i32| {
        let (r, c) = if dir == ACROSS { (row as i32, col as i32 + k) } else { (row as i32 + k, col as i32) };
        ((0..DIM as i32).contains(&r) && (0..DIM as i32).contains(&c)).then(|| board.at(r as usize, c as usize))
    };
    let (mut lo, mut hi) = (0, 0);
    while get(lo - 1).is_some_and(|t| t != 0) {
        lo -= 1;
    }
    while get(hi + 1).is_some_and(|t| t != 0) {
        hi += 1;
    }
    if lo == 0 && hi == 0 {
        return None;
    }
    Some((lo..=hi).map(|k| if k == 0 { letter } else { get(k).unwrap() & !BLANK_BIT }).collect())
}

#[test]
fn cross_set_planes_agree_with_the_words_formed_on_self_play_positions() {
    let lex = enable();
    let c = ctx(lex);
    let mut rng = Rng::new(7);
    let mut mg = Generator::new();
    let mut checked = 0;
    for (board, rack) in positions(lex, 120, 31) {
        let mut g = Game::new(dist(), 3);
        g.board = board;
        g.racks[0] = rack;
        let leaves = RackLeaves::new(&g.racks[0], |_| 0);
        let req = request(&g, &leaves, 0);
        let moves: Vec<Move> =
            mg.generate(c, &req, Mode::All).iter().filter(|m| m.kind == Kind::Place).copied().collect();
        if moves.is_empty() {
            continue;
        }
        let mv = moves[rng.below(moves.len() as u64) as usize];
        let f = encode(&g, &mv, None, 0.0);
        let mut after = g.board.clone();
        after.place(mv.dir(), mv.lane as usize, mv.start as usize, mv.tiles(), &lex.kwg, dist());
        for row in 0..DIM {
            for col in 0..DIM {
                for (dir, first) in [(ACROSS, plane::CROSS_ACROSS), (DOWN, plane::CROSS_DOWN)] {
                    for l in 0..LETTERS {
                        let want = if after.at(row, col) != 0 {
                            0.0
                        } else {
                            match word_through(&after, row, col, dir, l as u8 + 1) {
                                None => 1.0,
                                Some(w) => lex.set.contains(&w) as u8 as f32,
                            }
                        };
                        assert_eq!(at(&f, first + l, row, col), want, "dir {dir} letter {l} at ({row},{col})");
                    }
                }
            }
        }
        checked += 1;
    }
    assert!(checked > 100);
}

#[test]
fn transposing_the_frame_is_encoding_the_transposed_position() {
    let lex = enable();
    let c = ctx(lex);
    let mut mg = Generator::new();
    let mut rng = Rng::new(11);
    for (board, rack) in positions(lex, 40, 5) {
        let mut g = Game::new(dist(), 3);
        g.board = board;
        g.racks[0] = rack;
        g.scores = [rng.below(300) as i32, rng.below(300) as i32];
        let leaves = RackLeaves::new(&g.racks[0], |_| 0);
        let req = request(&g, &leaves, 0);
        let moves: Vec<Move> = mg.generate(c, &req, Mode::All).to_vec();
        let mv = moves[rng.below(moves.len() as u64) as usize];

        let mut t = g.clone();
        t.board = Board::new();
        for row in 0..DIM {
            for col in 0..DIM {
                t.board.set(col, row, g.board.at(row, col));
            }
        }
        t.board.recompute_all(&lex.kwg, dist());
        let tmv = Move { dir: 1 - mv.dir, ..mv };

        let mut f = encode(&g, &mv, None, 3.0);
        transpose(&mut f);
        assert_eq!(f, encode(&t, &tmv, None, 3.0));
    }
}

#[test]
fn only_a_26_letter_alphabet_is_encoded() {
    let small = engine::tiles::Distribution::parse("? 2 0 0\nA 50 1 1\nB 48 3 0\n", "small.dist").unwrap();
    let e = Encoder::new(&small).unwrap_err().to_string();
    assert!(e.contains("needs 26 letters; the distribution has 2"), "{e}");
}

#[test]
fn records_from_a_log_are_the_frames_the_players_saw() {
    use engine::features::RECORD_LEN;
    use engine::gcg::{replay, write_gcg};
    let lex = enable();
    let c = ctx(lex);
    let klv =
        engine::leaves::Klv::load(std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../lexica/enable.klv2")))
            .unwrap();
    let enc = Encoder::new(dist()).unwrap();
    let mut mg = Generator::new();
    for seed in 0..6u64 {
        let mut game = Game::new(dist(), seed);
        let mut bots = [
            engine::bots::BotSpec::parse("softmax:t=2,bag=0").unwrap().build(None, None).unwrap(),
            engine::bots::BotSpec::Greedy.build(None, None).unwrap(),
        ];
        let mut rng = Rng::new(seed);
        let mut live = Vec::new();
        // Before each turn: who moves, their spread, the tiles they have not seen.
        let mut horizon = Vec::new();
        while !game.is_over() {
            let me = game.on_turn;
            horizon.push((me, game.scores[me] - game.scores[1 - me], game.bag.len() + game.racks[1 - me].len()));
            let mv = bots[game.on_turn].decide(c, &game, &mut mg, &mut rng);
            let last = game.history.last().map(|t| t.mv);
            let mut unseen = Vec::new();
            let before = Before::of_game(&game, &mut unseen, last.as_ref());
            let mut frame = vec![0.0; FRAME_LEN];
            enc.encode(c, &before, &mv, klv.value(&mv.leave(&game.racks[game.on_turn])), &mut frame);
            live.push((game.on_turn, frame));
            game.play(c, &mv);
        }
        let text = write_gcg(&game, ["a", "b"], dist());
        let log = replay(&text, c, "game.gcg").unwrap();
        for transposed in [false, true] {
            let mut out = Vec::new();
            assert_eq!(enc.records(&log, c, Some(&klv), transposed, Target::Outcome, &mut out), Ok(live.len()));
            assert_eq!(out.len(), live.len() * RECORD_LEN);
            for (k, (player, frame)) in live.iter().enumerate() {
                let record = &out[k * RECORD_LEN..][..RECORD_LEN];
                let mut want = frame.clone();
                if transposed {
                    transpose(&mut want);
                }
                assert!(record[..FRAME_LEN] == want[..], "seed {seed} turn {k} transposed {transposed}");
                let target = (game.scores[*player] - game.scores[1 - player]).signum() as f32;
                assert_eq!(record[FRAME_LEN], target);
            }
        }
        // Horizon targets: the win table's view of the mover H plies on, from the live game.
        let table = engine::winpct::WinTable::load(std::path::Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../lexica/enable.wpt"
        )))
        .unwrap();
        for plies in [1usize, 4] {
            let mut out = Vec::new();
            enc.records(&log, c, None, false, Target::Horizon { plies, table: &table }, &mut out).unwrap();
            for (k, (player, _)) in live.iter().enumerate() {
                let got = out[k * RECORD_LEN + FRAME_LEN];
                let want = match horizon.get(k + plies) {
                    None => (game.scores[*player] - game.scores[1 - player]).signum() as f32,
                    Some(&(q, spread, unseen)) => {
                        let w = 2.0 * table.win_prob(spread, unseen) as f32 - 1.0;
                        if q == *player { w } else { -w }
                    }
                };
                assert_eq!(got, want, "seed {seed} turn {k} horizon {plies}");
            }
        }
        // A log cut before its end has no outcome to learn from.
        let cut: String = text.lines().filter(|l| !l.contains('(')).map(|l| format!("{l}\n")).collect();
        let err = enc.records(&replay(&cut, c, "cut.gcg").unwrap(), c, None, false, Target::Outcome, &mut Vec::new());
        assert!(err.unwrap_err().contains("not finished"));
    }
}

#[test]
fn cnn_bot_specs_round_trip_and_bad_ones_are_refused() {
    use engine::bots::BotSpec;
    for s in ["cnn:model=models/a.onnx,k=12", "cnn:model=ab12,k=all"] {
        let b = BotSpec::parse(s).unwrap();
        assert_eq!(b.to_string(), s);
        assert_eq!(BotSpec::parse(&b.to_string()).unwrap(), b);
    }
    assert_eq!(BotSpec::parse("cnn:model=m").unwrap(), BotSpec::Cnn { model: "m".into(), k: Some(20) });
    for (bad, says) in [("cnn", "needs model="), ("cnn:model=m,k=0", "k must be"), ("cnn:model=m,depth=2", "depth")] {
        let e = BotSpec::parse(bad).unwrap_err().to_string();
        assert!(e.contains(says), "{bad}: {e}");
    }
    // Without a model loader a CNN bot cannot be built, and says why.
    let e = BotSpec::parse("cnn:model=m").unwrap().build(None, None).err().unwrap().to_string();
    assert!(e.contains("cannot load value nets"), "{e}");
}
