//! CGP reading/writing, move notation, and bad positions.

mod common;
use common::*;
use engine::cgp::{Position, write};
use engine::leaves::RackLeaves;
use engine::movegen::{Generator, Mode, Request};

const EMPTY: &str = "15/15/15/15/15/15/15/15/15/15/15/15/15/15/15";

fn best_notation(cgp: &str, n: usize) -> Vec<String> {
    let lex = enable();
    let game = Position::parse(cgp, dist()).unwrap().into_game(&lex.kwg, dist(), 0);
    let leaves = RackLeaves::new(&game.racks[0], |_| 0);
    let req = Request {
        board: &game.board,
        rack: &game.racks[0],
        leaves: &leaves,
        can_exchange: game.bag.len() >= 7,
        opening_vowel_penalty: 0,
    };
    Generator::new()
        .generate(ctx(lex), &req, Mode::Best(n))
        .iter()
        .map(|m| format!("{} {}", m.notation(dist(), |r, c| game.board.at(r, c)), m.score))
        .collect()
}

#[test]
fn cgp_round_trips_through_self_play_positions() {
    let lex = enable();
    let mut mg = Generator::new();
    let mut game = engine::game::Game::new(dist(), 5);
    let mut bots = [
        engine::bots::BotSpec::Greedy.build(None, None).unwrap(),
        engine::bots::BotSpec::Greedy.build(None, None).unwrap(),
    ];
    let mut rng = engine::rng::Rng::new(5);
    while !game.is_over() {
        let text = write(&game, dist());
        let back = Position::parse(&text, dist()).unwrap();
        assert_eq!(back.racks[0], game.racks[game.on_turn]);
        assert_eq!(back.scores, [game.scores[game.on_turn], game.scores[1 - game.on_turn]]);
        let g2 = back.into_game(&lex.kwg, dist(), 1);
        assert_eq!(write(&g2, dist()), text);
        assert_eq!(g2.bag.len(), game.bag.len());
        let s = game.on_turn;
        let mv = bots[s].decide(ctx(lex), &game, &mut mg, &mut rng);
        game.play(ctx(lex), &mv);
    }
}

#[test]
fn notation_puts_played_through_tiles_in_parentheses_and_blanks_in_lowercase() {
    // LUNY at 1L through an L on 1L; QUOD down column G through a U on G12.
    let mut rows = vec!["15".to_string(); 15];
    rows[0] = "11L3".into();
    rows[11] = "6U8".into();
    let cgp = format!("{} UNYQOD?/ 0/0 0", rows.join("/"));
    let lex = enable();
    let game = Position::parse(&cgp, dist()).unwrap().into_game(&lex.kwg, dist(), 0);
    let leaves = RackLeaves::new(&game.racks[0], |_| 0);
    let req = Request {
        board: &game.board,
        rack: &game.racks[0],
        leaves: &leaves,
        can_exchange: true,
        opening_vowel_penalty: 0,
    };
    let all: Vec<String> = Generator::new()
        .generate(ctx(lex), &req, Mode::All)
        .iter()
        .map(|m| m.notation(dist(), |r, c| game.board.at(r, c)))
        .collect();
    for want in ["1L (L)UNY", "G11 Q(U)OD", "1L (L)uNY", "-Q", "-"] {
        assert!(all.iter().any(|m| m == want), "{want} missing");
    }
}

#[test]
fn a_lone_tile_is_listed_once() {
    // TA across at 8H, O at 9H. An S at 9I makes OS across and AS down: one move, across, scoring both words with the S doubled on 9I (3 + 3).
    let mut rows = vec!["15".to_string(); 15];
    rows[7] = "7TA6".into();
    rows[8] = "7O7".into();
    let all = best_notation(&format!("{} SX/ 0/0 0", rows.join("/")), 1000);
    let at_9i: Vec<&String> = all.iter().filter(|m| m.starts_with("9H (O)S ") || m.starts_with("I8 (A)S ")).collect();
    assert_eq!(at_9i, vec!["9H (O)S 6"], "{all:?}");
    assert!(all.iter().any(|m| m.starts_with("9H (O)X ")), "{all:?}");
}

#[test]
fn bad_positions_are_rejected_with_the_field_named() {
    let d = dist();
    let cases = [
        ("15/15/15 A/ 0/0 0", "board"),
        (&format!("{EMPTY} A1/ 0/0 0") as &str, "rack on turn"),
        (&format!("{EMPTY} AAAAAAAA/ 0/0 0"), "rack on turn"),
        (&format!("{EMPTY} A/B x/0 0"), "scores"),
        (&format!("{EMPTY} A/B 0/0"), "scoreless turns"),
        (&format!("{EMPTY} AB 0/0 0"), "racks"),
        (&format!("{} ZZ/ 0/0 0", EMPTY.replacen("15", "14Z", 1)), "tiles"),
        (&format!("{} A/ 0/0 0", EMPTY.replacen("15", "16", 1)), "row 1"),
        (&format!("{} A/ 0/0 0", EMPTY.replacen("15", "14$", 1)), "row 1"),
        ("", "board"),
    ];
    for (cgp, field) in cases {
        let err = Position::parse(cgp, d).unwrap_err();
        assert!(err.place.contains(field), "`{cgp}`: got {err}, want field {field}");
    }
}

#[test]
fn cgp_operations_are_kept() {
    let p = Position::parse(&format!("{EMPTY} AB/CD 10/20 3 lex NWL20; tmo 2;"), dist()).unwrap();
    assert_eq!(p.ops, vec![("lex".to_string(), "NWL20".to_string()), ("tmo".to_string(), "2".to_string())]);
    assert_eq!(p.scores, [10, 20]);
    assert_eq!(p.scoreless, 3);
}
