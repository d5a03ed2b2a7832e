//! The endgame solver against a plain minimax (no pruning, no table) on hundreds of small
//! endgames from seeded self-play, at 1 and 2 threads; principal variations replay to the
//! value; win-only mode agrees in sign.

mod common;

use engine::bots::{Player, StaticBot};
use engine::endgame::{EndgameError, Options, Solution, Solver};
use engine::game::Game;
use engine::leaves::{Klv, RackLeaves};
use engine::movegen::{Ctx, Generator, Mode, Request};
use engine::moves::Kind;
use engine::rng::{derive, Rng};
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

/// Small endgames: seeded static self-play games past the point the bag emptied, at the first
/// turn both racks together hold at most `tiles` and the player on turn can place a tile.
fn small_endgames(ctx: Ctx, count: usize, tiles: usize, seed: u64) -> Vec<Game> {
    let mut bot = StaticBot::new(Some(klv()));
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
            let mv = bot.choose(ctx, &g, &mut mg, &mut rng);
            g.play(ctx, &mv);
        }
    }
    out
}

fn solve(solver: &Solver, g: &Game, threads: usize, win_only: bool) -> Solution {
    solver.solve(g, &Options { threads, win_only, ..Options::default() }, &|_| {}).unwrap()
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
    let solver = Solver::new(ctx, 16 << 20);
    let mut mg = Generator::new();
    let (mut compared, mut nonzero_moves) = (0, 0);
    for g in small_endgames(ctx, 400, 4, 77) {
        let mut budget = 8_000;
        let Some(truth) = minimax(ctx, &g, &mut mg, &mut budget) else { continue };
        compared += 1;
        // A cold table each time, so every solve is a search of its own.
        solver.clear();
        let one = solve(&solver, &g, 1, false);
        assert!(one.exact);
        assert_eq!(one.value, truth, "1 thread: {}", engine::cgp::write(&g, ctx.dist));
        assert_eq!(replay(ctx, &g, &one.pv), truth, "principal variation of {}", engine::cgp::write(&g, ctx.dist));
        solver.clear();
        let two = solve(&solver, &g, 2, false);
        assert_eq!(two.value, truth, "2 threads: {}", engine::cgp::write(&g, ctx.dist));
        assert_eq!(replay(ctx, &g, &two.pv), truth);
        solver.clear();
        let wl = solve(&solver, &g, 1, true);
        assert_eq!(wl.value.signum(), truth.signum(), "win-only: {}", engine::cgp::write(&g, ctx.dist));
        nonzero_moves += (one.pv.len() > 1) as usize;
    }
    assert!(compared >= 200, "only {compared} endgames small enough for minimax");
    assert!(nonzero_moves >= compared / 4, "too few endgames need more than one move");
}
