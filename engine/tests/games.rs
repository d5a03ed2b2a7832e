//! Rules, determinism and logs: every self-play game replays legally from its GCG.

mod common;
use common::*;
use engine::autoplay::play_leg;
use engine::bots::{BotSpec, Player};
use engine::game::{Bag, End, Game, MoveError};
use engine::gcg::{replay, replay_deal, summarize, write_gcg};
use engine::leaves::RackLeaves;
use engine::movegen::{Generator, Mode, Request};
use engine::moves::{Kind, Move};

fn bots(a: &str, b: &str) -> [Box<dyn Player>; 2] {
    [BotSpec::parse(a).unwrap().build(None, None).unwrap(), BotSpec::parse(b).unwrap().build(None, None).unwrap()]
}

#[test]
fn every_self_play_game_replays_from_its_gcg() {
    let lex = enable();
    let mut mg = Generator::new();
    let mut b = bots("static", "softmax:t=3,bag=20");
    for i in 0..24 {
        let rec = play_leg(ctx(lex), &mut b, 11, i / 2, (i % 2) as usize, &mut mg);
        assert!(rec.game.is_over());
        let gcg = write_gcg(&rec.game, ["static", "softmax"], dist());
        let r = replay(&gcg, ctx(lex), "game.gcg").unwrap_or_else(|e| panic!("{e}\n{gcg}"));
        assert_eq!(r.scores, rec.game.scores, "{gcg}");
        assert_eq!(r.turns.len(), rec.game.history.len());
        assert!(r.ended && r.warnings.is_empty(), "{:?}", r.warnings);
        assert_eq!(r.board.rows().collect::<Vec<_>>(), rec.game.board.rows().collect::<Vec<_>>());
    }
}

#[test]
fn cross_sets_after_every_move_equal_a_full_recomputation() {
    for (lex, seed) in [(enable(), 5), (scrambled(), 6)] {
        let mut mg = Generator::new();
        let mut b = bots("softmax:t=4,bag=0", "greedy");
        for pair in 0..6 {
            let mut game = Game::new(dist(), engine::autoplay::deal_seed(seed, pair));
            let mut rng = engine::rng::Rng::new(pair);
            while !game.is_over() {
                let mv = b[game.on_turn].decide(ctx(lex), &game, &mut mg, &mut rng);
                game.play(ctx(lex), &mv);
                let mut fresh = game.board.clone();
                fresh.recompute_all(&lex.kwg, dist());
                assert!(fresh == game.board, "cross-sets differ after {mv:?}");
            }
        }
    }
}

#[test]
fn a_log_replays_on_its_deal_only_if_it_is_exactly_a_game_of_that_deal() {
    let lex = enable();
    let mut mg = Generator::new();
    let mut b = bots("static", "softmax:t=3,bag=20");
    for i in 0..8 {
        let rec = play_leg(ctx(lex), &mut b, 21, i / 2, (i % 2) as usize, &mut mg);
        let names = ["static", "softmax"];
        let gcg = write_gcg(&rec.game, names, dist());
        let deal = rec.deal_seed;
        let game = replay_deal(&gcg, ctx(lex), deal, names, "g").unwrap_or_else(|e| panic!("{e}\n{gcg}"));
        assert_eq!(game.scores, rec.game.scores);
        // The summary read without replaying is the game's.
        let o = rec.outcome();
        assert_eq!(
            summarize(&gcg, "g").unwrap(),
            engine::gcg::Summary { scores: o.scores, turns: o.turns, bingos: o.bingos }
        );
        // Another deal, other names, a changed total or rack, a missing end: refused.
        assert!(replay_deal(&gcg, ctx(lex), deal + 1, names, "g").is_err());
        assert!(replay_deal(&gcg, ctx(lex), deal, ["static", "greedy"], "g").is_err());
        let lines: Vec<&str> = gcg.lines().collect();
        let last = lines.last().unwrap();
        let (head, total) = last.rsplit_once(' ').unwrap();
        let inflated = gcg.replace(last, &format!("{head} {}", total.parse::<i32>().unwrap() + 100));
        let err = replay_deal(&inflated, ctx(lex), deal, names, "g").unwrap_err();
        assert_eq!(err.place, format!("g:{}", lines.len()), "{err}");
        let truncated: String = lines[..lines.len() / 2].iter().map(|l| format!("{l}\n")).collect();
        assert!(replay_deal(&truncated, ctx(lex), deal, names, "g").is_err());
        // A first move whose rack is not the dealt one is refused at its line, even when the
        // play itself would be legal with the rack the log claims.
        let first = lines[3];
        let fake = first.replacen(first.split_whitespace().nth(1).unwrap(), "QQQQQQQ", 1);
        assert_eq!(replay_deal(&gcg.replace(first, &fake), ctx(lex), deal, names, "g").unwrap_err().place, "g:4");
    }
}

#[test]
fn a_gcg_with_a_wrong_score_or_an_illegal_play_is_rejected_at_its_line() {
    let lex = enable();
    let mut mg = Generator::new();
    let rec = play_leg(ctx(lex), &mut bots("greedy", "greedy"), 3, 0, 0, &mut mg);
    let gcg = write_gcg(&rec.game, ["a", "b"], dist());
    let lines: Vec<&str> = gcg.lines().collect();
    // Line 4 is the first move: change its score.
    let first = lines[3];
    let (head, _) = first.rsplit_once(" +").unwrap();
    let total: i32 = first.rsplit(' ').next().unwrap().parse().unwrap();
    let bad = gcg.replace(first, &format!("{head} +{} {}", total + 1, total + 1));
    let err = replay(&bad, ctx(lex), "g.gcg").unwrap_err();
    assert_eq!(err.place, "g.gcg:4", "{err}");
    let bad = gcg.replace(first, ">p1: ABCDEFG 8H ZZZ +30 30");
    assert_eq!(replay(&bad, ctx(lex), "g.gcg").unwrap_err().place, "g.gcg:4");
}

#[test]
fn the_same_seed_gives_the_same_game_and_paired_legs_share_the_deal() {
    let lex = enable();
    let mut mg = Generator::new();
    let mut b = bots("softmax:t=2,bag=30", "static");
    let a1 = play_leg(ctx(lex), &mut b, 5, 3, 0, &mut mg);
    let a2 = play_leg(ctx(lex), &mut b, 5, 3, 0, &mut mg);
    let b1 = play_leg(ctx(lex), &mut b, 5, 3, 1, &mut mg);
    let moves = |g: &Game| g.history.iter().map(|t| t.mv).collect::<Vec<Move>>();
    assert_eq!(moves(&a1.game), moves(&a2.game));
    assert_eq!(a1.game.scores, a2.game.scores);
    // Same bag order: the first player's opening rack is the same in both legs.
    assert_eq!(a1.game.history[0].rack, b1.game.history[0].rack);
    assert_eq!(a1.deal_seed, b1.deal_seed);
    let other = play_leg(ctx(lex), &mut b, 6, 3, 0, &mut mg);
    assert_ne!(moves(&a1.game), moves(&other.game));
}

fn endgame(racks: [&str; 2], bag: Vec<u8>) -> Game {
    let mut g = Game::new(dist(), 1);
    let mut rows = vec!["15".to_string(); 15];
    rows[7] = "7CAT5".into();
    let cgp = format!("{} {}/{} 100/90 0", rows.join("/"), racks[0], racks[1]);
    let pos = engine::cgp::Position::parse(&cgp, dist()).unwrap();
    let lex = enable();
    let loaded = pos.into_game(&lex.kwg, dist(), 1);
    g.board = loaded.board;
    g.racks = loaded.racks;
    g.scores = loaded.scores;
    g.bag = Bag::from_tiles(bag, 1);
    g
}

#[test]
fn going_out_with_the_bag_empty_scores_twice_the_opponents_rack() {
    let lex = enable();
    let mut g = endgame(["S", "QZ"], vec![]);
    let mut mg = Generator::new();
    let leaves = RackLeaves::new(&g.racks[0], |_| 0);
    let req =
        Request { board: &g.board, rack: &g.racks[0], leaves: &leaves, can_exchange: false, opening_vowel_penalty: 0 };
    let mv = mg.generate(ctx(lex), &req, Mode::Best(1))[0];
    assert_eq!(mv.kind, Kind::Place);
    g.play(ctx(lex), &mv);
    assert_eq!(g.end, Some(End::WentOut { player: 0 }));
    assert_eq!(g.scores[0], 100 + mv.score + 2 * 20);
    assert_eq!(g.scores[1], 90);
}

#[test]
fn six_scoreless_turns_end_the_game_with_racks_subtracted() {
    let lex = enable();
    let mut g = endgame(["QZ", "XJ"], vec![1, 2, 3]);
    for turn in 0..6 {
        assert!(!g.is_over(), "over after {turn} turns");
        g.play(ctx(lex), &Move::PASS);
    }
    assert_eq!(g.end, Some(End::Scoreless));
    assert_eq!(g.scores, [100 - 20, 90 - 16]);
}

#[test]
fn exchanges_need_seven_tiles_in_the_bag() {
    let lex = enable();
    let mut mg = Generator::new();
    let g = endgame(["QZ", "XJ"], vec![1, 2, 3, 4, 5, 6]);
    assert_eq!(g.check(ctx(lex), &Move::exchange(&[17]), &mut mg), Err(MoveError::ExchangeBagTooSmall));
    let g = endgame(["QZ", "XJ"], vec![1, 2, 3, 4, 5, 6, 7]);
    assert_eq!(g.check(ctx(lex), &Move::exchange(&[17]), &mut mg), Ok(()));
    assert_eq!(g.check(ctx(lex), &Move::exchange(&[1]), &mut mg), Err(MoveError::NotOnRack));
    // The static bot never exchanges with a short bag.
    let mut g = endgame(["QVVUUI", "XJ"], vec![1, 2, 3, 4, 5, 6]);
    let mut b = bots("static", "static");
    let mv = b[0].decide(ctx(lex), &g, &mut mg, &mut engine::rng::Rng::new(1));
    assert_ne!(mv.kind, Kind::Exchange);
    g.play(ctx(lex), &mv);
}

#[test]
fn the_static_bots_vowel_penalty_moves_its_opening_plays_and_its_default_is_the_plain_bots() {
    use engine::leaves::Klv;
    use std::sync::Arc;
    let klv =
        Arc::new(Klv::load(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../lexica/enable.klv2")).unwrap());
    let opening = |spec: &str, deal: u64| {
        let mut bot = BotSpec::parse(spec).unwrap().build(Some(klv.clone()), None).unwrap();
        let game = engine::game::Game::new(dist(), deal);
        bot.decide(ctx(enable()), &game, &mut engine::movegen::Generator::new(), &mut engine::rng::Rng::new(0))
    };
    let deals = 0..60u64;
    let differ = deals.clone().filter(|&d| opening("static:vowel_penalty=0", d) != opening("static", d)).count();
    // Without it, vowels go beside the double-letter squares wherever the score allows.
    assert!(differ > 0, "{differ} of 60 openings differ");
    assert!(
        deals.clone().all(|d| opening("static:vowel_penalty=0.7", d) == opening("static", d)),
        "0.7 is the default"
    );
}
