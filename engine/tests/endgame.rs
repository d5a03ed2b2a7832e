//! The endgame solver against a plain minimax (no pruning, no table) on hundreds of small
//! endgames from seeded self-play, at 1 and 2 threads; principal variations replay to the
//! value; win-only mode agrees in sign.

mod common;

use engine::bots::Player;
use engine::endgame::{Options, Solution, Solver, peg};
use engine::eval::StaticEval;
use engine::game::Bag;
use engine::game::Game;
use engine::leaves::{Klv, RackLeaves};
use engine::movegen::{Ctx, Generator, Mode, Request};
use engine::moves::Kind;
use engine::rng::{Rng, derive};
use std::path::Path;
use std::sync::Arc;

fn klv() -> Arc<Klv> {
    Arc::new(Klv::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../lexica/enable.klv2")).unwrap())
}

/// Final spread for the player on turn under best play by both sides, by trying every move
/// sequence to the end; `None` past `budget` nodes.
fn minimax(ctx: Ctx, g: &Game, mg: &mut Generator, budget: &mut u64) -> Option<i32> {
    if g.is_over() {
        return Some(g.scores[g.on_turn] - g.scores[1 - g.on_turn]);
    }
    *budget = budget.checked_sub(1)?;
    let rack = &g.racks[g.on_turn];
    let leaves = RackLeaves::new(rack, |_| 0);
    let req = Request { board: &g.board, rack, leaves: &leaves, can_exchange: false, opening_vowel_penalty: 0 };
    let moves = mg.generate(ctx, &req, Mode::All).to_vec();
    let mut best = i32::MIN;
    for mv in &moves {
        let mut child = g.clone();
        child.play(ctx, mv);
        best = best.max(-minimax(ctx, &child, mg, budget)?);
    }
    Some(best)
}

/// Exact final spread for the player on turn in `g` after they play `mv`, by minimax.
fn value_after(ctx: Ctx, g: &Game, mv: &engine::moves::Move, mg: &mut Generator) -> i32 {
    let mut after = g.clone();
    after.play(ctx, mv);
    let mut budget = 20_000;
    if after.is_over() {
        after.scores[g.on_turn] - after.scores[1 - g.on_turn]
    } else {
        -minimax(ctx, &after, mg, &mut budget).unwrap()
    }
}

/// Small endgames: seeded static self-play games past the point the bag emptied, at the first
/// turn both racks together hold at most `tiles` and the player on turn can place a tile.
fn small_endgames(ctx: Ctx, count: usize, tiles: usize, seed: u64) -> Vec<Game> {
    let mut bot = StaticEval::new(Some(klv()));
    let mut mg = Generator::new();
    let mut out = Vec::new();
    for index in 0.. {
        if out.len() == count {
            break;
        }
        let mut g = Game::new(ctx.dist, derive(seed, index));
        let mut rng = Rng::new(index);
        while !g.is_over() {
            if g.bag.is_empty() && g.racks[0].len() + g.racks[1].len() <= tiles {
                let can_place = bot.best(ctx, &g, &mut mg, 2).iter().any(|m| m.kind == Kind::Place);
                if can_place {
                    g.history.clear();
                    out.push(g);
                    break;
                }
            }
            let mv = bot.decide(ctx, &g, &mut mg, &mut rng);
            g.play(ctx, &mv);
        }
    }
    out
}

fn solve(ctx: Ctx, solver: &Solver, g: &Game, threads: usize, win_only: bool) -> Solution {
    solver.solve(ctx, g, &Options { threads, win_only, ..Options::default() }, &|_| {}).unwrap()
}

/// Play the line on the game and return the final spread for the player on turn at the start.
fn replay(ctx: Ctx, g: &Game, line: &[engine::moves::Move]) -> i32 {
    let me = g.on_turn;
    let mut g = g.clone();
    let mut mg = Generator::new();
    for mv in line {
        assert!(!g.is_over(), "the line goes on after the game ended");
        g.check(ctx, mv, &mut mg).expect("every move of the line is legal");
        g.play(ctx, mv);
    }
    assert!(g.is_over(), "the line stops before the game ends");
    g.scores[me] - g.scores[1 - me]
}

#[test]
fn the_solver_agrees_with_plain_minimax_on_hundreds_of_small_endgames() {
    let ctx = common::ctx(common::enable());
    let solver = Solver::new(16 << 20);
    let mut mg = Generator::new();
    let (mut compared, mut nonzero_moves) = (0, 0);
    for g in small_endgames(ctx, 400, 4, 77) {
        let mut budget = 8_000;
        let Some(truth) = minimax(ctx, &g, &mut mg, &mut budget) else { continue };
        compared += 1;
        // A cold table each time, so every solve is a search of its own.
        solver.clear();
        let one = solve(ctx, &solver, &g, 1, false);
        assert!(one.exact);
        assert_eq!(one.value, truth, "1 thread: {}", engine::cgp::write(&g, ctx.dist));
        assert_eq!(replay(ctx, &g, &one.pv), truth, "principal variation of {}", engine::cgp::write(&g, ctx.dist));
        solver.clear();
        let two = solve(ctx, &solver, &g, 2, false);
        assert_eq!(two.value, truth, "2 threads: {}", engine::cgp::write(&g, ctx.dist));
        assert_eq!(replay(ctx, &g, &two.pv), truth);
        solver.clear();
        let wl = solve(ctx, &solver, &g, 1, true);
        assert_eq!(wl.value.signum(), truth.signum(), "win-only: {}", engine::cgp::write(&g, ctx.dist));
        nonzero_moves += (one.pv.len() > 1) as usize;
    }
    assert!(compared >= 200, "only {compared} endgames small enough for minimax");
    assert!(nonzero_moves >= compared / 4, "too few endgames need more than one move");
}

#[test]
fn two_threads_sharing_the_root_s_moves_solve_larger_endgames_to_one_thread_s_values() {
    // Past minimax's reach: hundreds of root moves, each thread taking the next, the best
    // value's bar moving while both search.
    let ctx = common::ctx(common::enable());
    let solver = Solver::new(32 << 20);
    let mut many_moves = 0;
    for g in small_endgames(ctx, 12, 8, 2024) {
        solver.clear();
        let one = solve(ctx, &solver, &g, 1, false);
        solver.clear();
        let two = solve(ctx, &solver, &g, 2, false);
        let cgp = engine::cgp::write(&g, ctx.dist);
        assert!(one.exact && two.exact, "{cgp}");
        assert_eq!(two.value, one.value, "{cgp}");
        assert_eq!(replay(ctx, &g, &two.pv), two.value, "{cgp}");
        let leaves = RackLeaves::new(&g.racks[g.on_turn], |_| 0);
        let rack = &g.racks[g.on_turn];
        let req = Request { board: &g.board, rack, leaves: &leaves, can_exchange: false, opening_vowel_penalty: 0 };
        many_moves += (Generator::new().generate(ctx, &req, Mode::All).len() >= 50) as usize;
    }
    assert!(many_moves >= 6, "only {many_moves} endgames with 50 moves or more at the root");
}

#[test]
fn a_two_thread_solve_stopped_by_its_clock_answers_from_its_last_complete_depth() {
    let ctx = common::ctx(common::enable());
    let text = include_str!("../../docs/endgame-bench.cgp");
    // Line 40: over ten seconds to 7 plies on one thread.
    let line = text.lines().nth(39).expect("the benchmark file has forty lines");
    let g = engine::cgp::Position::parse(line, ctx.dist).expect("a valid position").into_game(ctx.kwg, ctx.dist, 0);
    let solver = Solver::new(64 << 20);
    let limit = std::time::Duration::from_millis(300);
    let opts = Options { threads: 2, time_limit: Some(limit), ..Options::default() };
    let start = std::time::Instant::now();
    let sol = solver.solve(ctx, &g, &opts, &|_| {}).unwrap();
    assert!(start.elapsed() < limit * 10, "took {:?}", start.elapsed());
    assert!(!sol.exact && sol.depth >= 1);
    let mut mg = Generator::new();
    g.check(ctx, &sol.pv[0], &mut mg).expect("the first move of the line is legal");
}

#[test]
fn the_pre_endgame_ranks_plays_as_brute_force_over_every_unseen_tile_does() {
    let ctx = common::ctx(common::enable());
    let solver = Solver::new(16 << 20);
    let mut mg = Generator::new();
    let mut checked = 0;
    for mut g in small_endgames(ctx, 60, 4, 91) {
        let (me, opp) = (g.on_turn, 1 - g.on_turn);
        if g.racks[opp].len() < 2 {
            continue;
        }
        // One of the opponent's tiles goes back in the bag: one tile left to draw.
        let t = g.racks[opp].pop().unwrap();
        g.bag = Bag::from_tiles(vec![t], 0);
        let rack = &g.racks[me];
        let leaves = RackLeaves::new(rack, |_| 0);
        let req = Request { board: &g.board, rack, leaves: &leaves, can_exchange: false, opening_vowel_penalty: 0 };
        let moves: Vec<_> =
            mg.generate(ctx, &req, Mode::All).iter().filter(|m| m.kind == Kind::Place).copied().collect();
        let ranked = peg::rank(&solver, ctx, &g, &moves, &Options::default(), &|| {}).unwrap();
        assert_eq!(ranked.len(), moves.len());

        // Brute force: every unseen tile in turn is the bag's, every endgame by plain minimax.
        let unseen: Vec<u8> = g.racks[opp].iter().chain(g.bag.tiles()).copied().collect();
        let mut budget = 200_000;
        let mut truth = Vec::new();
        'moves: for mv in &moves {
            let (mut wins2, mut spread) = (0i32, 0i32);
            for i in 0..unseen.len() {
                let mut s = g.clone();
                s.racks[opp] = unseen.iter().enumerate().filter(|&(j, _)| j != i).map(|(_, &t)| t).collect();
                s.bag = Bag::from_tiles(vec![unseen[i]], 0);
                s.play(ctx, mv);
                let Some(v) = minimax(ctx, &s, &mut mg, &mut budget) else { break 'moves };
                let v = if s.is_over() { s.scores[me] - s.scores[opp] } else { -v };
                wins2 += v.signum() + 1;
                spread += v;
            }
            truth.push((*mv, wins2, spread));
        }
        if truth.len() < moves.len() {
            continue; // too big for minimax
        }
        let n = unseen.len() as f64;
        for c in &ranked {
            let &(_, wins2, spread) = truth.iter().find(|t| t.0 == c.mv).unwrap();
            assert!((c.wins - wins2 as f64 / 2.0 / n).abs() < 1e-9, "wins of {:?}", c.mv);
            assert!((c.spread - spread as f64 / n).abs() < 1e-9, "spread of {:?}", c.mv);
        }
        assert!(ranked.windows(2).all(|w| (w[0].wins, w[0].spread) >= (w[1].wins, w[1].spread)));
        checked += 1;
    }
    assert!(checked >= 15, "only {checked} pre-endgames small enough for brute force");
}

#[test]
fn endgame_bot_specs_round_trip_and_bad_ones_are_refused() {
    use engine::bots::BotSpec;
    for s in ["static:endgame=200", "sim:k=5,plies=1,iterations=64,endgame=50"] {
        assert_eq!(BotSpec::parse(s).unwrap().to_string(), s);
    }
    let b = BotSpec::parse("sim:endgame=50,k=5").unwrap();
    assert!(matches!(b, BotSpec::Endgame { ms: 50, .. }) && b.uses_wintable());
    for bad in ["greedy:endgame=5", "static:endgame=0", "static:endgame=x", "softmax:endgame=10"] {
        let e = BotSpec::parse(bad).unwrap_err().to_string();
        assert!(e.contains("endgame"), "{bad}: {e}");
    }
}

#[test]
fn the_endgame_bot_plays_a_best_move() {
    use engine::bots::BotSpec;
    let ctx = common::ctx(common::enable());
    let mut bot = BotSpec::parse("static:endgame=2000").unwrap().build(Some(klv()), None).unwrap();
    let mut mg = Generator::new();
    let mut rng = Rng::new(1);
    let mut checked = 0;
    for g in small_endgames(ctx, 40, 4, 123) {
        let mut budget = 20_000;
        let Some(truth) = minimax(ctx, &g, &mut mg, &mut budget) else { continue };
        let mv = bot.decide(ctx, &g, &mut mg, &mut rng);
        assert_eq!(value_after(ctx, &g, &mv, &mut mg), truth, "{}", engine::cgp::write(&g, ctx.dist));
        checked += 1;
    }
    assert!(checked >= 20);
}

#[test]
fn the_first_move_list_gives_each_move_its_exact_value() {
    let ctx = common::ctx(common::enable());
    let solver = Solver::new(16 << 20);
    let mut mg = Generator::new();
    let mut checked = 0;
    for g in small_endgames(ctx, 30, 4, 321) {
        let mut budget = 20_000;
        let Some(truth) = minimax(ctx, &g, &mut mg, &mut budget) else { continue };
        let sol = solver.solve(ctx, &g, &Options { first_moves: 4, ..Options::default() }, &|_| {}).unwrap();
        assert!(!sol.first_moves.is_empty());
        assert_eq!(sol.first_moves[0].1, truth, "the best first move has the position's value");
        assert!(sol.first_moves.windows(2).all(|w| w[0].1 >= w[1].1), "ranked by value");
        for &(mv, v) in &sol.first_moves {
            assert_eq!(v, value_after(ctx, &g, &mv, &mut mg), "{mv:?} in {}", engine::cgp::write(&g, ctx.dist));
        }
        checked += 1;
    }
    assert!(checked >= 15);
}

#[test]
fn bots_with_the_endgame_player_finish_games_that_replay() {
    use engine::bots::BotSpec;
    let ctx = common::ctx(common::enable());
    let table = Arc::new(
        engine::winpct::WinTable::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../lexica/enable.wpt")).unwrap(),
    );
    let build = |s: &str| BotSpec::parse(s).unwrap().build(Some(klv()), Some(table.clone())).unwrap();
    let mut bots = [build("sim:k=3,plies=1,iterations=16,endgame=50"), build("static:endgame=50")];
    let mut mg = Generator::new();
    for game in 0..4 {
        let rec = engine::autoplay::play_leg(ctx, &mut bots, 9, game / 2, (game % 2) as usize, &mut mg);
        assert!(rec.game.is_over());
        let gcg = engine::gcg::write_gcg(&rec.game, ["sim", "static"], ctx.dist);
        let r = engine::gcg::replay(&gcg, ctx, "game.gcg").unwrap_or_else(|e| panic!("{e}\n{gcg}"));
        assert_eq!(r.scores, rec.game.scores);
    }
}

#[test]
fn stuck_tiles_are_those_no_reference_play_places() {
    let lex = common::enable();
    let ctx = common::ctx(lex);
    let (mut checked, mut seen_stuck) = (0, 0);
    // Small seeded endgames, and the benchmark set's first ten (full racks; one holds a Z it
    // cannot play).
    let bench = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/endgame-bench.cgp")).unwrap();
    let bench = bench.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()).take(10);
    let bench = bench.map(|l| engine::cgp::Position::parse(l, ctx.dist).unwrap().into_game(&lex.kwg, ctx.dist, 0));
    for g in small_endgames(ctx, 12, 7, 77).into_iter().chain(bench) {
        for rack in &g.racks {
            let placed: std::collections::HashSet<u8> = common::reference_moves(lex, &g.board, rack)
                .iter()
                .flat_map(|m| {
                    m.3.iter().filter(|&&t| t != 0).map(|&t| if t & engine::tiles::BLANK_BIT != 0 { 0 } else { t })
                })
                .collect();
            let mut want: Vec<u8> = rack.iter().copied().filter(|t| !placed.contains(t)).collect();
            want.sort_unstable();
            want.dedup();
            let got = engine::endgame::stuck(ctx, &g.board, rack);
            seen_stuck += !got.is_empty() as usize;
            assert_eq!(got, want, "{}", engine::cgp::write(&g, ctx.dist));
            checked += 1;
        }
    }
    assert_eq!(checked, 44);
    assert!(seen_stuck >= 1);
}

/// The value one ply deep, by brute force: every move of the player on turn, a move going out
/// valued exactly, any other by the horizon rule (spread, less the rack kept, plus the
/// opponent's; and when exactly one side holds tiles no play places, those tiles' face value
/// once more against it); and that stuck-tile term.
fn one_ply_reference(ctx: Ctx, g: &Game, mg: &mut Generator) -> (i32, i32) {
    let (me, opp) = (&g.racks[g.on_turn], &g.racks[1 - g.on_turn]);
    let face = |tiles: &mut dyn Iterator<Item = u8>| tiles.map(|t| ctx.dist.score(t)).sum::<i32>();
    let stuck = |rack: &[u8]| {
        let stuck = engine::endgame::stuck(ctx, &g.board, rack);
        (!stuck.is_empty()).then(|| face(&mut rack.iter().copied().filter(|t| stuck.contains(t))))
    };
    let term = match (stuck(me), stuck(opp)) {
        (Some(mine), None) => -mine,
        (None, Some(theirs)) => theirs,
        _ => 0,
    };
    let (mine, theirs) = (face(&mut me.iter().copied()), face(&mut opp.iter().copied()));
    let spread = g.scores[g.on_turn] - g.scores[1 - g.on_turn];
    let leaves = RackLeaves::new(me, |_| 0);
    let req = Request { board: &g.board, rack: me, leaves: &leaves, can_exchange: false, opening_vowel_penalty: 0 };
    let best = mg.generate(ctx, &req, Mode::All).iter().map(|m| {
        let kept = mine - face(&mut m.rack_tiles());
        if m.tiles_used() == me.len() { spread + m.score + 2 * theirs } else { spread + m.score - kept + theirs + term }
    });
    (best.max().unwrap(), term)
}

#[test]
fn a_horizon_counts_a_stuck_side_s_stuck_tiles_twice() {
    let lex = common::enable();
    let ctx = common::ctx(lex);
    let solver = Solver::new(16 << 20);
    let mut mg = Generator::new();
    let bench = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/endgame-bench.cgp")).unwrap();
    let bench = bench.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty());
    let bench = bench.map(|l| engine::cgp::Position::parse(l, ctx.dist).unwrap().into_game(&lex.kwg, ctx.dist, 0));
    let (mut checked, mut mover_stuck, mut other_stuck) = (0, 0, 0);
    for g in small_endgames(ctx, 60, 9, 5).into_iter().chain(bench).filter(|g| g.scoreless < 4) {
        let (want, term) = one_ply_reference(ctx, &g, &mut mg);
        solver.clear();
        let got = solver.solve(ctx, &g, &Options { plies: Some(1), ..Options::default() }, &|_| {}).unwrap();
        assert_eq!(got.value, want, "{}", engine::cgp::write(&g, ctx.dist));
        checked += 1;
        mover_stuck += (term < 0) as usize;
        other_stuck += (term > 0) as usize;
    }
    assert!(checked >= 90, "{checked}");
    assert!(mover_stuck >= 2 && other_stuck >= 2, "one side stuck: the mover {mover_stuck}, the other {other_stuck}");
}

/// Depth-limited negamax with the solver's horizon rule at its last ply, by brute force; `None`
/// where a last ply comes five scoreless turns into a row (the solver looks at each move there).
fn limited_reference(ctx: Ctx, g: &Game, plies: u8, mg: &mut Generator) -> Option<i32> {
    if g.is_over() {
        return Some(g.scores[g.on_turn] - g.scores[1 - g.on_turn]);
    }
    if plies == 1 {
        return (g.scoreless + 1 < 6).then(|| one_ply_reference(ctx, g, mg).0);
    }
    let rack = &g.racks[g.on_turn];
    let leaves = RackLeaves::new(rack, |_| 0);
    let req = Request { board: &g.board, rack, leaves: &leaves, can_exchange: false, opening_vowel_penalty: 0 };
    let mut best = i32::MIN;
    for mv in mg.generate(ctx, &req, Mode::All).to_vec() {
        let mut child = g.clone();
        child.play(ctx, &mv);
        best = best.max(-limited_reference(ctx, &child, plies - 1, mg)?);
    }
    Some(best)
}

/// The solver's shortcuts at the horizon (frontier nodes valued without building their
/// children, from the play memo's lane bests and tile masks) give the values of a plain
/// depth-limited search.
#[test]
fn depth_limited_values_are_those_of_plain_negamax_with_the_same_horizon() {
    let ctx = common::ctx(common::enable());
    let solver = Solver::new(16 << 20);
    let mut mg = Generator::new();
    let mut checked = 0;
    for g in small_endgames(ctx, 40, 8, 11) {
        for plies in [2, 3] {
            let Some(want) = limited_reference(ctx, &g, plies, &mut mg) else { continue };
            solver.clear();
            let got = solver.solve(ctx, &g, &Options { plies: Some(plies), ..Options::default() }, &|_| {}).unwrap();
            assert_eq!(got.value, want, "{} plies: {}", plies, engine::cgp::write(&g, ctx.dist));
            checked += 1;
        }
    }
    assert!(checked >= 60, "{checked}");
}

#[test]
fn the_table_is_sized_to_the_endgames_it_meets_and_keeps_what_it_learned() {
    let ctx = common::ctx(common::enable());
    let solver = Solver::new(32 << 20);
    let small = &small_endgames(ctx, 1, 3, 7)[0];
    let big = &small_endgames(ctx, 1, 8, 7)[0];
    let first = solve(ctx, &solver, small, 1, false);
    assert!(solver.table_bytes() <= 1 << 20, "{} bytes for {} tiles", solver.table_bytes(), 3);
    // The same position again: the table it was solved with still answers it.
    let again = solve(ctx, &solver, small, 1, false);
    assert_eq!((again.value, again.pv.clone()), (first.value, first.pv.clone()));
    assert!(again.nodes <= first.nodes, "{} nodes, then {}", first.nodes, again.nodes);
    let b = solve(ctx, &solver, big, 1, false);
    assert_eq!(solver.table_bytes(), 32 << 20, "eight tiles get the limit");
    // A small endgame after a big one keeps the big table; values are the same.
    assert_eq!(solve(ctx, &solver, small, 1, false).value, first.value);
    assert_eq!(solver.table_bytes(), 32 << 20);
    assert_eq!(solve(ctx, &Solver::new(32 << 20), big, 1, false).value, b.value);
}
