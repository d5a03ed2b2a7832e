//! `endgame`: each position solved in turn on all threads (sharing the root's moves).

use super::{Kit, Logged, Played, Runner};
use anyhow::{Context, Result};
use engine::game::Game;
use engine::moves::Move;
use shared::kinds::endgame::{Endgame, EndgameJob, EndgameReport, Solved};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

impl Runner for Endgame {
    fn run(job: &EndgameJob, kit: Kit<'_>, cancel: &AtomicBool) -> Result<Played<EndgameReport>> {
        solve(kit, job, cancel)
    }

    fn summary(_: &EndgameJob, r: &EndgameReport, secs: f64) -> String {
        let n = r.solved.len();
        format!(
            "{n} endgames  {} exact  {:.2} s each",
            r.solved.iter().filter(|s| s.exact || s.skipped).count(),
            secs / n.max(1) as f64
        )
    }
}

/// Solve an endgame job's positions in order, each on `threads` threads (sharing the root's moves); `cancel`
/// stops it between positions. Endgame batches carry no logs: each solution is its own record.
fn solve(kit: Kit<'_>, job: &EndgameJob, cancel: &AtomicBool) -> Result<Played<EndgameReport>> {
    let (loaded, solver, threads) = (kit.loaded, kit.endgame.get(), kit.pool.current_num_threads());
    use engine::endgame::{Options, sets::bag_emptied};
    let ctx = loaded.data.ctx();
    let dist = &loaded.data.dist;
    let mut mg = engine::movegen::Generator::new();
    let mut solved = Vec::with_capacity(job.positions.len());
    for p in &job.positions {
        if cancel.load(Ordering::Relaxed) {
            return Ok(Played::Cancelled);
        }
        let game =
            match &p.cgp {
                Some(cgp) => Some(
                    engine::cgp::Position::parse(cgp, dist)
                        .with_context(|| format!("position {}", p.index))?
                        .into_game(&loaded.data.kwg, dist, 0),
                ),
                None => bag_emptied(ctx, loaded.leaves.clone(), job.seed, p.index, 0, job.extra, &mut mg),
            };
        let Some(game) = game else {
            solved.push(Solved {
                index: p.index,
                cgp: String::new(),
                skipped: true,
                value: 0,
                exact: true,
                best: String::new(),
                sequence: String::new(),
                nodes: 0,
                ms: 0,
            });
            continue;
        };
        let opts = Options {
            plies: job.plies,
            threads,
            time_limit: Some(Duration::from_millis(job.time_ms)),
            ..Options::default()
        };
        let sol = solver.solve(ctx, &game, &opts, &|_| {}).map_err(|e| anyhow::anyhow!("position {}: {e}", p.index))?;
        let best = sol.pv.first().map_or("-".to_string(), |m| m.notation(dist, |r, c| game.board.at(r, c)));
        solved.push(Solved {
            index: p.index,
            cgp: engine::cgp::write(&game, dist),
            skipped: false,
            value: sol.value,
            exact: sol.exact,
            best,
            sequence: line_notation(ctx, &game, &sol.pv).join("  "),
            nodes: sol.nodes,
            ms: sol.elapsed.as_millis() as u64,
        });
    }
    Ok(Played::Done(EndgameReport { solved }, Logged::None))
}

/// Notation of each move of `line`, each written on the board as it stood before it.
pub fn line_notation(ctx: engine::movegen::Ctx, game: &Game, line: &[Move]) -> Vec<String> {
    let mut g = game.clone();
    let mut out = Vec::with_capacity(line.len());
    for mv in line {
        out.push(format!("{} ({})", mv.notation(ctx.dist, |r, c| g.board.at(r, c)), mv.score));
        if g.is_over() {
            break;
        }
        g.play(ctx, mv);
    }
    out
}
