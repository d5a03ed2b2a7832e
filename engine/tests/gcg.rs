//! GCG as players and other programs write it (`engine::gcg::read`): the files in
//! `tests/data/gcg/` are written in the styles of tournament software, annotators and other
//! word lists (see its README), not by our writer.

mod common;

use common::*;
use engine::gcg::{Viewer, check_placement, decode, game_at, parse_placement, read};
use engine::movegen::{Generator, Mode, Request};
use engine::moves::Kind;
use engine::rng::Rng;
use engine::tiles::HIDDEN;
use std::collections::HashSet;
use std::path::PathBuf;

fn fixture(name: &str) -> (String, String) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/gcg").join(name);
    let bytes = std::fs::read(&path).unwrap();
    (decode(&bytes, name).unwrap_or_else(|e| panic!("{e}")), name.to_string())
}

/// Every turn of a log gives a position whose tiles add up: on the board, on the racks and in
/// the bag, the distribution exactly.
fn every_turn_reads(r: &engine::gcg::Replay, lex: &Lex) -> Vec<Viewer> {
    (1..=r.turns.len())
        .map(|n| {
            let at = game_at(r, n, None, ctx(lex)).unwrap_or_else(|e| panic!("turn {n}: {e}"));
            let g = &at.game;
            let me = g.on_turn;
            let (sizes, bag) = r.turns[n - 1].after();
            assert_eq!(g.racks[1 - me].len(), sizes[1 - me], "turn {n}");
            let hidden_own = sizes[me] - g.racks[me].len();
            assert_eq!(g.bag.len(), bag + hidden_own, "turn {n}");
            let tiles = g.board.tile_count() + g.racks[0].len() + g.racks[1].len() + g.bag.len();
            assert_eq!(tiles, 100, "turn {n}");
            at.viewer
        })
        .collect()
}

#[test]
fn a_tournament_log_in_iso_8859_1_with_a_withdrawn_phony_a_challenge_bonus_and_a_time_penalty() {
    let lex = enable();
    let (text, name) = fixture("tournament-latin1.gcg");
    assert!(text.contains("Zoë Ångström") && text.contains("René Côté"), "decoded as ISO-8859-1: {text}");
    let r = read(&text, ctx(lex), &name);
    assert!(r.refused.is_none(), "{:?}", r.refused);
    // The phony stands in the log as a turn that was taken back: one warning, at its line.
    let phony: Vec<_> = r.turns.iter().filter(|t| t.withdrawn).collect();
    assert_eq!(phony.len(), 1);
    assert_eq!((phony[0].player, phony[0].line), (1, 17));
    assert_eq!(phony[0].unknown_words, ["WOOLEI"]);
    assert_eq!(r.warnings.len(), 1, "{:?}", r.warnings);
    assert!(
        r.warnings[0].to_string().starts_with("tournament-latin1.gcg:17: `K4 WOO.EI` forms WOOLEI"),
        "{}",
        r.warnings[0]
    );
    // The position after the phony's turn is the one before it, and its score is gone.
    let i = r.turns.iter().position(|t| t.withdrawn).unwrap();
    let board = |n| game_at(&r, n, None, ctx(lex)).unwrap().game.board;
    assert_eq!(board(i), board(i + 1));
    assert_eq!(r.turns[i + 1].before, r.turns[i].before);
    // The bonus counts for Zoë, the time penalty against René, and the game is over.
    assert_eq!(r.scores, [460 + 5, 305 - 10]);
    assert!(r.ended);
    let viewers = every_turn_reads(&r, lex);
    assert!(viewers.iter().all(|v| *v == Viewer::Logged), "{viewers:?}");
}

#[test]
fn an_annotated_log_with_the_opponents_racks_as_played_reads_at_every_turn() {
    let lex = enable();
    let (text, name) = fixture("annotated-partial.gcg");
    let r = read(&text, ctx(lex), &name);
    assert!(r.refused.is_none() && r.warnings.is_empty(), "{:?} {:?}", r.refused, r.warnings);
    assert!(r.ended);
    assert_eq!(r.scores, [428, 400]);
    // The opponent's exchange names no tile: five unknown tiles, and no draw.
    let thrown = r.turns.iter().find(|t| t.mv.kind == Kind::Exchange).unwrap();
    assert_eq!((thrown.player, thrown.mv.rack_tiles().filter(|&t| t == HIDDEN).count()), (1, 5));
    assert!(r.turns.iter().filter(|t| t.player == 1).all(|t| !t.rack_complete() || t.mv.tiles_used() == 7));
    assert!(r.turns.iter().filter(|t| t.player == 0).all(|t| t.rack_complete()));
    let viewers = every_turn_reads(&r, lex);
    // After an opponent's turn the annotator's next rack is whole; after the annotator's, the
    // opponent shows what they will play, or nothing (an exchange).
    for (n, v) in viewers.iter().enumerate() {
        match r.turns[n].player {
            1 => assert_eq!(*v, Viewer::Logged, "turn {}", n + 1),
            _ if r.turns.get(n + 1).is_some_and(|t| t.rack_complete()) => assert_eq!(*v, Viewer::Logged),
            _ => assert!(matches!(v, Viewer::Partial { holds: 7, .. } | Viewer::Unknown), "turn {}: {v:?}", n + 1),
        }
    }
    // A rack given for the viewer replaces what the log shows.
    let at = game_at(&r, 1, Some(dist().parse_rack("AEINRST").unwrap()), ctx(lex)).unwrap();
    assert_eq!(at.viewer, Viewer::Given);
    let err = game_at(&r, 1, Some(dist().parse_rack("ZZ").unwrap()), ctx(lex)).unwrap_err();
    assert!(err.contains("more `Z` than are off the board"), "{err}");
}

#[test]
fn plays_in_another_lexicon_stand_with_a_warning_naming_their_words() {
    let lex = enable();
    let (text, name) = fixture("other-lexicon.gcg");
    let r = read(&text, ctx(lex), &name);
    assert!(r.refused.is_none(), "{:?}", r.refused);
    let warnings: Vec<String> = r.warnings.iter().map(|w| w.to_string()).collect();
    assert_eq!(
        warnings,
        [
            "other-lexicon.gcg:6: `8G QI` forms QI, which the lexicon lacks; the play stands as logged",
            "other-lexicon.gcg:9: `8G ..S` forms QIS, which the lexicon lacks; the play stands as logged",
        ]
    );
    assert_eq!(r.lexicon.as_deref(), Some("CSW21"));
    // A fragment: the challenge bonus counts, and nothing ends the game.
    assert_eq!(r.scores, [27, 12]);
    assert!(!r.ended);
}

#[test]
fn a_refused_line_keeps_the_turns_before_it_and_names_the_play_and_the_rule() {
    let lex = enable();
    let (text, name) = fixture("annotated-partial.gcg");
    let cases = [
        // (line to replace, its replacement, what the refusal says)
        (
            ">opp: IDIM C3 IDI.M +22 61",
            ">opp: IDIM C3 IDI.M +23 62",
            "`C3 IDI.M` scores 22 by the rules; the log says +23",
        ),
        (
            ">opp: IDIM C3 IDI.M +22 61",
            ">opp: IDIM C3 IDI.M +22 60",
            "the total 60 is not what the log's scores add up to (61)",
        ),
        (">opp: IDIM C3 IDI.M +22 61", ">opp: IDIM O1 MID +22 61", "`O1 MID` is not a legal play: it touches no tile"),
        (
            ">opp: IDIM C3 IDI.M +22 61",
            ">opp: IDIM C3 IDI +22 61",
            "`C3 IDI` is not a legal play: the word goes on through the tile at 6C",
        ),
        (
            ">łukasz: ?ANNQSW 12A QA.S +46 126",
            ">łukasz: ?ANNQSW 12A QA.S. +46 126",
            "`12A QA.S.`: `.` at an empty square",
        ),
        (
            ">łukasz: ?ANNQSW 12A QA.S +46 126",
            ">łukasz: ?ANNPSW 12A QA.S +46 126",
            "`12A QA.S` uses `Q`, which is not on the rack ?ANNPSW",
        ),
        (">opp: ZEO 15A ZE.O +50 111", ">opp: ZEO 15A ZE.O +50 111 extra", "`extra` is not a score"),
        (">opp: ZEO 15A ZE.O +50 111", ">them: ZEO 15A ZE.O +50 111", "`them` is no player"),
        (
            ">opp: ZEO 15A ZE.O +50 111",
            ">opp: ZEO -- -50 11",
            "`--` takes back a play, but the last turn is not a play by this player",
        ),
    ];
    for (old, new, says) in cases {
        assert!(text.contains(old), "{old}");
        let bad = text.replacen(old, new, 1);
        let line = bad.lines().position(|l| l == new).unwrap() + 1;
        let r = read(&bad, ctx(lex), &name);
        let e = r.refused.as_ref().unwrap_or_else(|| panic!("{new}: not refused"));
        assert_eq!(e.place, format!("annotated-partial.gcg:{line}"), "{e}");
        assert!(e.message.contains(says), "{new}: {e}");
        // The turns before the refused line read as before; a turn after it says why not.
        let kept = r.turns.len();
        assert!(kept > 0 && r.turns.iter().all(|t| t.line < line), "{new}: {kept} turns kept");
        every_turn_reads(&r, lex);
        let later = game_at(&r, kept + 1, None, ctx(lex)).unwrap_err();
        assert!(later.contains(&e.to_string()), "{later}");
    }
}

#[test]
fn encodings_are_read_as_declared() {
    let ascii = "#player1 a A\n#player2 b B\n";
    // Undeclared: UTF-8 when it is, else ISO-8859-1; CRLF and a byte-order mark read alike.
    assert_eq!(decode("#player1 é É\n".as_bytes(), "f").unwrap(), "#player1 é É\n");
    assert_eq!(decode(b"#player1 \xe9 \xc9\n", "f").unwrap(), "#player1 é É\n");
    assert_eq!(decode(b"\xEF\xBB\xBF#player1 a A\r\n", "f").unwrap(), "#player1 a A\r\n");
    let latin = [b"#character-encoding ISO-8859-1\n".as_slice(), b"#player1 \xc3\xa9 x\n"].concat();
    assert_eq!(decode(&latin, "f").unwrap(), "#character-encoding ISO-8859-1\n#player1 Ã© x\n");
    let bad = [b"#character-encoding UTF-8\n".as_slice(), ascii.as_bytes(), b">a: \xe9 8H AA +2 2\n"].concat();
    let e = decode(&bad, "f.gcg").unwrap_err();
    assert_eq!(e.place, "f.gcg:4", "{e}");
    let e = decode(b"#character-encoding ISO-8859-6\n", "f.gcg").unwrap_err();
    assert!(e.to_string().starts_with("f.gcg:1: `#character-encoding iso-8859-6`: only UTF-8 and ISO-8859-1"), "{e}");
}

/// The rules' own check of a placement (`check_placement`, no lexicon) against the move
/// generator: every generated play passes with the generator's score and words the lexicon
/// has; and a play near one (shifted, a letter changed) that passes with every word known and
/// its tiles on the rack is one the generator makes.
#[test]
fn the_placement_rules_agree_with_the_move_generator() {
    let lex = enable();
    let ctx = ctx(lex);
    let mut mg = Generator::new();
    let mut rng = Rng::new(59);
    let (mut checked, mut near) = (0, 0);
    for (board, rack) in positions(lex, 160, 59) {
        let leaves = engine::leaves::RackLeaves::new(&rack, |_| 0);
        let req =
            Request { board: &board, rack: &rack, leaves: &leaves, can_exchange: false, opening_vowel_penalty: 0 };
        let all: Vec<_> = mg.generate(ctx, &req, Mode::All).iter().filter(|m| m.kind == Kind::Place).copied().collect();
        let key = |m: &engine::moves::Move| (m.dir, m.lane, m.start, m.tiles().to_vec());
        let made: HashSet<_> = all.iter().map(key).collect();
        for m in &all {
            let p = check_placement(&board, m, ctx).unwrap_or_else(|e| panic!("{}: {e}", m.coord()));
            assert_eq!(p.score, m.score, "{}", m.coord());
            assert!(p.words.iter().all(|w| lex.kwg.contains(w)));
            checked += 1;
            // A neighbour of the play, written as a log would write it.
            let word = m.word(dist(), |r, c| board.at(r, c));
            let coord = m.coord();
            let mut letters: Vec<char> = word.chars().collect();
            let k = rng.below(letters.len() as u64) as usize;
            if letters[k] != '.' {
                letters[k] = (b'A' + rng.below(26) as u8) as char;
            }
            let changed: String = letters.into_iter().collect();
            let Ok(other) = parse_placement(&coord, &changed, &board, dist()) else { continue };
            let Ok(p) = check_placement(&board, &other, ctx) else { continue };
            let mut left = rack.clone();
            let on_rack =
                other.rack_tiles().all(|t| left.iter().position(|&x| x == t).map(|i| left.swap_remove(i)).is_some());
            if on_rack && p.words.iter().all(|w| lex.kwg.contains(w)) && key(&other) != key(m) {
                assert!(made.contains(&key(&other)), "{coord} {changed} passes the rules but was not generated");
                near += 1;
            }
        }
    }
    println!("{checked} plays, {near} neighbours");
    assert!(checked > 10_000 && near > 1_000, "{checked} plays, {near} neighbours");
}
