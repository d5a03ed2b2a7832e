//! The fast move generator against the reference, move for move and score for score, on
//! positions from seeded self-play, on two very different lexicons.

mod common;
use common::*;
use engine::board::{Board, CrossMemo};
use engine::leaves::RackLeaves;
use engine::movegen::{Generator, Mode, Request};
use engine::moves::{Kind, rank};
use engine::rng::mix;

fn fast_moves(lex: &Lex, board: &Board, rack: &[u8], mg: &mut Generator) -> Vec<RefMove> {
    let leaves = RackLeaves::new(rack, |_| 0);
    let req = Request { board, rack, leaves: &leaves, can_exchange: false, opening_vowel_penalty: 0 };
    let mut v: Vec<RefMove> = mg
        .generate(ctx(lex), &req, Mode::All)
        .iter()
        .filter(|m| m.kind == Kind::Place)
        .map(|m| (m.dir(), m.lane as usize, m.start as usize, m.tiles().to_vec(), m.score))
        .collect();
    v.sort();
    v
}

/// Panic unless the sorted lists are equal, showing what differs (a move listed twice counts).
fn assert_same(fast: &[RefMove], slow: &[RefMove], what: &str) {
    if fast != slow {
        let count = |v: &[RefMove], m: &RefMove| v.iter().filter(|x| *x == m).count();
        let only_fast: Vec<_> = fast.iter().filter(|m| count(fast, m) > count(slow, m)).take(5).collect();
        let only_slow: Vec<_> = slow.iter().filter(|m| count(slow, m) > count(fast, m)).take(5).collect();
        panic!("{what}\nonly fast (or more often): {only_fast:?}\nonly reference: {only_slow:?}");
    }
}

fn compare(lex: &Lex, count: usize, seed: u64) {
    let mut mg = Generator::new();
    let mut total = 0;
    for (i, (board, rack)) in positions(lex, count, seed).iter().enumerate() {
        let fast = fast_moves(lex, board, rack, &mut mg);
        assert_same(&fast, &reference_moves(lex, board, rack), &format!("position {i}: rack {rack:?}"));
        total += fast.len();
    }
    assert!(total > count * 20, "positions should have many moves (got {total})");
}

/// Racks drawn from the likeliest bingo letters, blanks included, so that most positions
/// have plays of all seven tiles (found by anagram lookup, not by the graph search): every one
/// must match the reference, through-letter bingos included.
#[test]
fn bingo_racks_match_reference() {
    let lex = enable();
    let mut mg = Generator::new();
    let (mut bingos, mut through, mut with_blank) = (0, 0, 0);
    let letters = dist().parse_rack("AEINRSTLDOAEI??").unwrap();
    for (i, (board, _)) in positions(lex, 60, 11).iter().enumerate() {
        let mut rng = engine::rng::Rng::new(mix(i as u64));
        let mut pool = letters.clone();
        rng.shuffle(&mut pool);
        let rack = &pool[..7];
        let fast = fast_moves(lex, board, rack, &mut mg);
        assert_eq!(fast, reference_moves(lex, board, rack), "position {i}, rack {rack:?}");
        for m in fast.iter().filter(|m| m.3.iter().filter(|&&t| t != 0).count() == 7) {
            bingos += 1;
            through += (m.3.len() > 7) as usize;
            with_blank += m.3.iter().any(|&t| t & engine::tiles::BLANK_BIT != 0) as usize;
        }
    }
    assert!(
        bingos > 1000 && through > 100 && with_blank > 500,
        "bingos {bingos}, through {through}, with a blank {with_blank}"
    );
}

/// All-moves generation looks bingos up in the bingo index until the word map is built, and
/// in the word map after: the same moves, in the same order (an endgame's search order, and so
/// the best move among equals, rests on it), whichever a process happens to hold.
#[test]
fn bingos_are_listed_alike_before_and_after_the_word_map_is_built() {
    let lex = enable();
    let fresh = engine::lexicon::Kwg::from_bytes(&lex.kwg.to_bytes(), "enable").unwrap();
    let ctx = engine::movegen::Ctx { kwg: &fresh, dist: dist(), layout: layout() };
    let letters = dist().parse_rack("AEINRSTLDOAEI??").unwrap();
    let cases: Vec<(Board, Vec<u8>)> = positions(lex, 40, 12)
        .into_iter()
        .enumerate()
        .map(|(i, (board, _))| {
            let mut pool = letters.clone();
            engine::rng::Rng::new(mix(i as u64)).shuffle(&mut pool);
            (board, pool[..7].to_vec())
        })
        .collect();
    let list = |mg: &mut Generator| -> Vec<Vec<engine::moves::Move>> {
        cases
            .iter()
            .map(|(board, rack)| {
                let leaves = RackLeaves::new(rack, |_| 0);
                let req = Request { board, rack, leaves: &leaves, can_exchange: false, opening_vowel_penalty: 0 };
                mg.generate(ctx, &req, Mode::All).to_vec()
            })
            .collect()
    };
    let before = list(&mut Generator::new());
    assert!(!fresh.has_word_map(), "all-moves generation built the word map");
    fresh.word_map();
    let after = list(&mut Generator::new());
    let bingos = after.iter().flatten().filter(|m| m.tiles_used() == 7).count();
    assert!(bingos > 500, "{bingos} bingos");
    assert!(before == after, "the lists differ");
}

#[test]
fn matches_reference_on_enable() {
    compare(enable(), 240, 1);
}

#[test]
fn matches_reference_on_a_second_lexicon() {
    compare(scrambled(), 80, 2);
}

#[test]
fn empty_board_zymurgy_scores_120() {
    let lex = enable();
    let rack = dist().parse_rack("ZYMURGY").unwrap();
    let leaves = RackLeaves::new(&rack, |_| 0);
    let board = Board::new();
    let req = Request { board: &board, rack: &rack, leaves: &leaves, can_exchange: true, opening_vowel_penalty: 0 };
    let best = Generator::new().generate(ctx(lex), &req, Mode::Best(1))[0];
    assert_eq!(best.notation(dist(), |r, c| board.at(r, c)), "8D ZYMURGY");
    assert_eq!(best.score, 120);
}

/// The pruned best-move search must return exactly the head of the full sorted list, for any
/// leave values (here pseudo-random ones, which stress the bound). Every play's equity must be
/// its score and the value of the tiles it leaves, whichever of them are blanks.
#[test]
fn best_moves_equal_head_of_all_moves() {
    let lex = enable();
    let mut mg = Generator::new();
    for (i, (board, rack)) in positions(lex, 300, 3).iter().enumerate() {
        let value = |kept: &[u8]| {
            let h = kept.iter().fold(i as u64, |h, &t| mix(h ^ t as u64));
            (h % 60_000) as i32 - 30_000
        };
        let leaves = RackLeaves::new(rack, value);
        let req = Request { board, rack, leaves: &leaves, can_exchange: i % 2 == 0, opening_vowel_penalty: 700 };
        let mut all = mg.generate(ctx(lex), &req, Mode::All).to_vec();
        for m in all.iter().filter(|m| m.kind == Kind::Place && !board.is_empty()) {
            let mut kept = rack.clone();
            for t in m.rack_tiles() {
                kept.remove(kept.iter().position(|&x| x == t).expect("tiles from the rack"));
            }
            kept.sort_unstable();
            assert_eq!(m.equity, m.score * 1000 + value(&kept), "position {i}, rack {rack:?}, {m:?}");
        }
        all.sort_unstable_by(rank);
        assert!(all.windows(2).all(|w| rank(&w[0], &w[1]).is_lt()), "rank is a strict total order");
        for n in [1, 5] {
            let best = mg.generate(ctx(lex), &req, Mode::Best(n)).to_vec();
            assert_eq!(best.as_slice(), &all[..n.min(all.len())], "position {i}, top {n}");
        }
    }
}

/// The graph search reads the graph's steps packed (alphabets of up to 40 letters) or wide
/// (larger ones): both must find the same moves in the same order, and the same best moves.
#[test]
fn both_step_layouts_generate_the_same_moves() {
    let lex = enable();
    let wide = lex.kwg.clone().with_wide_steps();
    let wide_ctx = engine::movegen::Ctx { kwg: &wide, ..ctx(lex) };
    let (mut narrow_mg, mut wide_mg) = (Generator::new(), Generator::new());
    narrow_mg.use_word_map(false);
    wide_mg.use_word_map(false);
    let mut total = 0;
    for (i, (board, rack)) in positions(lex, 120, 31).iter().enumerate() {
        let leaves =
            RackLeaves::new(rack, |kept| (kept.iter().fold(i as u64, |h, &t| mix(h ^ t as u64)) % 20_000) as i32);
        let req = Request { board, rack, leaves: &leaves, can_exchange: false, opening_vowel_penalty: 0 };
        for mode in [Mode::All, Mode::Best(3)] {
            let narrow = narrow_mg.generate(ctx(lex), &req, mode).to_vec();
            assert_eq!(narrow, wide_mg.generate(wide_ctx, &req, mode), "position {i}, rack {rack:?}, {mode:?}");
            total += narrow.len();
        }
    }
    assert!(total > 120 * 20, "{total} moves");
}

/// Best-move search by the word map (racks holding a blank) and by the graph alone must agree
/// with each other and with the head of the full list, on racks given one or two blanks, on
/// both lexicons, with pseudo-random leave values that stress the bounds.
#[test]
fn word_map_best_moves_equal_graph_search() {
    let mut graph = Generator::new();
    graph.use_word_map(false);
    let mut map = Generator::new();
    map.use_word_map(true);
    let mut spent = 0;
    for (lex, seed) in [(enable(), 21), (scrambled(), 22)] {
        for (i, (board, rack)) in positions(lex, 150, seed).iter().enumerate() {
            let mut rack = rack.clone();
            for b in 0..(1 + i % 2).min(rack.len()) {
                rack[b] = 0;
            }
            rack.sort_unstable();
            let leaves = RackLeaves::new(&rack, |kept| {
                let h = kept.iter().fold(seed ^ i as u64, |h, &t| mix(h ^ t as u64));
                (h % 60_000) as i32 - 30_000 + 25_000 * kept.iter().filter(|&&t| t == 0).count() as i32
            });
            let req =
                Request { board, rack: &rack, leaves: &leaves, can_exchange: i % 3 == 0, opening_vowel_penalty: 700 };
            let mut all = graph.generate(ctx(lex), &req, Mode::All).to_vec();
            all.sort_unstable_by(rank);
            for n in [1, 4, 15] {
                let by_map = map.generate(ctx(lex), &req, Mode::Best(n)).to_vec();
                let by_graph = graph.generate(ctx(lex), &req, Mode::Best(n)).to_vec();
                assert_eq!(by_map, by_graph, "seed {seed}, position {i}, rack {rack:?}, top {n}");
                assert_eq!(by_map.as_slice(), &all[..n.min(all.len())], "seed {seed}, position {i}, top {n}");
                spent += by_map.iter().filter(|m| m.tiles().iter().any(|&t| t & engine::tiles::BLANK_BIT != 0)).count();
            }
        }
    }
    assert!(spent > 100, "plays spending a blank should be among the best ({spent})");
}

/// `Board::changed_lanes` is what the shared replies of the simulator rest on, and lane keys
/// what the endgame's play cache rests on: after any move, the plays in every lane it does not
/// name are the same, with the same scores, as before; `place` names at least those lanes,
/// `touched_by` foresees the same lanes, and a lane's key changes exactly when the lane does
/// (and is the key of the same board laid out afresh); a play placed undoably and taken back
/// leaves the board as it was.
#[test]
fn plays_outside_the_changed_lanes_are_unchanged() {
    let lex = enable();
    let mut mg = Generator::new();
    let mut checked = 0;
    let mut memo = CrossMemo::new(&lex.kwg);
    let all = positions(lex, 40, 5);
    for (i, (board, rack)) in all.iter().enumerate().filter(|(_, (b, _))| !b.is_empty()) {
        let leaves = RackLeaves::new(rack, |_| 0);
        let req = Request { board, rack, leaves: &leaves, can_exchange: false, opening_vowel_penalty: 0 };
        let mut played: Vec<_> =
            mg.generate(ctx(lex), &req, Mode::All).iter().copied().filter(|m| m.kind == Kind::Place).collect();
        played.sort_unstable_by(rank);
        // Another rack for the replies: the tiles of a later position.
        let (_, other) = &all[(i + 7) % all.len()];
        for m in played.iter().take(6) {
            let mut after = board.clone();
            let tiles = &m.tiles[m.start as usize..(m.start + m.len) as usize];
            let foreseen = board.touched_by(m.dir(), m.lane as usize, m.start as usize, tiles);
            let touched = after.place(m.dir(), m.lane as usize, m.start as usize, tiles, &lex.kwg, dist());
            assert_eq!(foreseen, touched, "touched_by foresees what place touches, after {m:?}");
            let changed = after.changed_lanes(board);
            assert_ne!(changed, 0);
            assert_eq!(changed & !touched, 0, "place names every lane it changed");
            let mut remembered = board.clone();
            remembered.place_with(m.dir(), m.lane as usize, m.start as usize, tiles, &mut memo, dist(), &mut ());
            assert!(remembered == after, "cross-sets from the memo differ after {m:?}");
            // The lane keys `place` kept are those of the same tiles laid out afresh.
            let mut fresh = Board::new();
            for (row, tiles) in after.rows().enumerate() {
                tiles.iter().enumerate().filter(|&(_, &t)| t != 0).for_each(|(col, &t)| fresh.set(row, col, t));
            }
            fresh.recompute_all(&lex.kwg, dist());
            assert!(fresh == after, "the board after {m:?} differs from the same tiles laid out afresh");
            // Placed undoably it is the same board, and taken back the board before.
            let (mut undone, mut undo) = (board.clone(), Vec::new());
            undone.place_with(m.dir(), m.lane as usize, m.start as usize, tiles, &mut memo, dist(), &mut undo);
            assert!(undone == after, "placed undoably, {m:?} gives another board");
            undone.unplace(&mut undo, 0);
            assert!(undone == *board && undo.is_empty(), "{m:?} taken back leaves another board");
            for bit in 0..30 {
                let (dir, lane) = (bit / 15, bit % 15);
                let same = after.lane_key(dir, lane) == board.lane_key(dir, lane);
                assert_eq!(same, changed >> bit & 1 == 0, "lane key of {dir}/{lane} after {m:?}");
            }
            let outside = |b: &Board| {
                let mut v: Vec<RefMove> = fast_moves(lex, b, other, &mut Generator::new());
                v.retain(|&(dir, lane, ..)| changed >> (dir * 15 + lane) & 1 == 0);
                v
            };
            assert_eq!(outside(board), outside(&after), "position {i}, after {m:?}");
            checked += 1;
        }
    }
    assert!(checked > 100, "{checked}");
}

/// Best-move search keeps what it learned about each lane's tiles between calls: a generator
/// used on one lexicon, then another, then the first again, on the same boards (cross-sets
/// recomputed for each), must find what a fresh generator finds each time.
#[test]
fn a_generator_reused_across_lexicons_finds_what_a_fresh_one_does() {
    let fresh = || {
        let mut g = Generator::new();
        g.use_word_map(false);
        g
    };
    let mut shared = fresh();
    for (i, (board, rack)) in positions(enable(), 60, 31).iter().enumerate() {
        let leaves = RackLeaves::new(rack, |_| 0);
        for lex in [enable(), scrambled(), enable()] {
            let mut board = board.clone();
            board.recompute_all(&lex.kwg, dist());
            let req = Request { board: &board, rack, leaves: &leaves, can_exchange: false, opening_vowel_penalty: 0 };
            let expected = fresh().generate(ctx(lex), &req, Mode::Best(3)).to_vec();
            assert_eq!(shared.generate(ctx(lex), &req, Mode::Best(3)), expected.as_slice(), "position {i}");
        }
    }
}

/// A play ending in a run of board tiles is searched from the run's last tile, not from the
/// anchor before it (`Generator::search_anchor`): OUTFAWN before FAWN, and the plays through
/// KILOJOULE's run with a tile after it, must come out as the reference has them, each once,
/// with a blank on the rack or none.
#[test]
fn plays_ending_in_a_run_of_tiles_match_reference() {
    let lex = enable();
    let board = "15/15/15/15/15/15/15/11FAWN/15/5JOULE5/15/15/15/15/15";
    let mut found_outfawn = 0;
    for rack in ["OUTKILS", "OU?KILE", "AEINRST"] {
        let cgp = format!("{board} {rack}/ 0/0 0");
        let game = engine::cgp::Position::parse(&cgp, dist()).unwrap().into_game(&lex.kwg, dist(), 0);
        let rack = dist().parse_rack(rack).unwrap();
        let fast = fast_moves(lex, &game.board, &rack, &mut Generator::new());
        assert_same(&fast, &reference_moves(lex, &game.board, &rack), &format!("rack {rack:?}"));
        let outfawn = |m: &&RefMove| m.0 == 0 && m.1 == 7 && m.2 == 8 && m.3.len() == 7 && m.3[3..] == [0; 4];
        found_outfawn += fast.iter().filter(outfawn).count();
    }
    // OUT from the rack: once with no blank, and with the blank standing for T.
    assert_eq!(found_outfawn, 2);
}
