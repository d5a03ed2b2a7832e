//! The simulator: position untouched, common random numbers, thread-independence, an obvious
//! best move found and never cut, game ends scored exactly, shared replies exact.

mod common;

use engine::bots::Player;
use engine::cgp::Position;
use engine::eval::StaticEval;
use engine::game::Game;
use engine::leaves::Klv;
use engine::movegen::{Ctx, Generator, Mode, Request};
use engine::moves::{Kind, Move};
use engine::sim::{Replies, SimConfig, SimResult, Simulator, StopLevel};
use engine::winpct::WinTable;
use std::path::Path;
use std::sync::Arc;

fn data() -> (Arc<Klv>, WinTable) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../lexica");
    (Arc::new(Klv::load(&root.join("enable.klv2")).unwrap()), WinTable::load(&root.join("enable.wpt")).unwrap())
}

fn cfg(iterations: u64, seed: u64) -> SimConfig {
    SimConfig { candidates: 6, plies: 2, iterations, stop: None, seed, time_limit: None }
}

fn on(threads: usize, f: impl FnOnce() -> SimResult + Send) -> SimResult {
    rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap().install(f)
}

/// A mid-game position from seeded static self-play.
fn midgame(ctx: Ctx, klv: &Arc<Klv>, seed: u64, turns: usize) -> Game {
    let mut g = Game::new(ctx.dist, seed);
    let mut bot = StaticEval::new(Some(klv.clone()));
    let mut mg = Generator::new();
    let mut rng = engine::rng::Rng::new(seed);
    for _ in 0..turns {
        let m = bot.decide(ctx, &g, &mut mg, &mut rng);
        g.play(ctx, &m);
    }
    g
}

fn summary(r: &SimResult) -> Vec<(Move, u64, u64, u64, bool)> {
    r.candidates
        .iter()
        .map(|c| (c.mv, c.win.mean().to_bits(), c.equity.mean().to_bits(), c.win.count(), c.cut))
        .collect()
}

#[test]
fn same_seed_same_result_on_one_and_two_threads_and_the_position_is_untouched() {
    let ctx = common::ctx(common::enable());
    let dist = ctx.dist;
    let (klv, table) = data();
    let sim = Simulator { ctx, leaves: Some(klv.clone()), table: &table, net: None };
    for seed in [1, 2] {
        let g = midgame(ctx, &klv, seed, 6);
        let snapshot = |g: &Game| {
            (engine::cgp::write(g, dist), g.racks.clone(), g.scores, g.bag.tiles().to_vec(), g.history.len())
        };
        let before = snapshot(&g);
        let a = on(1, || sim.run(&g, &cfg(300, seed), &|_| {}));
        let b = on(2, || sim.run(&g, &cfg(300, seed), &|_| {}));
        assert_eq!(summary(&a), summary(&b));
        assert_eq!(a.iterations, 300);
        assert!(before == snapshot(&g), "the simulated position is unchanged");
        // Another seed gives other numbers.
        let c = on(2, || sim.run(&g, &cfg(300, seed + 100), &|_| {}));
        assert_ne!(summary(&a), summary(&c));
    }
}

#[test]
fn common_random_numbers_identical_candidates_identical_statistics() {
    let ctx = common::ctx(common::enable());
    let (klv, table) = data();
    let sim = Simulator { ctx, leaves: Some(klv.clone()), table: &table, net: None };
    let g = midgame(ctx, &klv, 5, 4);
    let mut mg = Generator::new();
    let best = StaticEval::new(Some(klv.clone())).best(ctx, &g, &mut mg, 2).to_vec();
    let r = on(2, || sim.run_moves(&g, vec![best[0], best[1], best[0]], &cfg(256, 9), &|_| {}));
    let stats: Vec<_> = r.candidates.iter().filter(|c| c.mv == best[0]).map(|c| (c.win, c.equity)).collect();
    assert_eq!(stats.len(), 2);
    assert_eq!(stats[0], stats[1], "the same move on the same deals scores the same");
}

#[test]
fn a_candidates_leave_counts_in_its_rollouts() {
    // With no plies after the candidate, a rollout is the candidate alone: its equity is its
    // score plus the value of the tiles it keeps (the rack is refilled, which must not hide
    // them), whatever the deal, and its win% is the table's at that adjusted spread.
    let ctx = common::ctx(common::enable());
    let (klv, table) = data();
    let sim = Simulator { ctx, leaves: Some(klv.clone()), table: &table, net: None };
    for seed in [3, 5] {
        let g = midgame(ctx, &klv, seed, 4);
        let mut mg = Generator::new();
        let best = StaticEval::new(Some(klv.clone())).best(ctx, &g, &mut mg, 6).to_vec();
        let c = SimConfig { candidates: 6, plies: 0, iterations: 40, stop: None, seed, time_limit: None };
        let r = on(2, || sim.run_moves(&g, best.clone(), &c, &|_| {}));
        let me = g.on_turn;
        let spread0 = g.scores[me] - g.scores[1 - me];
        let mut leaves_differ = false;
        for cand in &r.candidates {
            let m = cand.mv;
            let kept = klv.value(&m.leave(&g.racks[me])) as f64;
            leaves_differ |= kept != klv.value(&best[0].leave(&g.racks[me])) as f64;
            let eq = m.score as f64 + kept;
            assert!((cand.equity.mean() - eq).abs() < 1e-9, "{m:?}: {} vs {eq}", cand.equity.mean());
            assert_eq!(cand.equity.count(), 40);
            // Unseen by the opponent, on turn after the candidate: the bag and the refilled rack.
            let unseen = g.bag.len() + g.racks[me].len() - m.tiles_used();
            let s = (spread0 as f64 + eq).round() as i32;
            let want = 1.0 - table.win_prob(-s, unseen);
            assert!((cand.win.mean() - want).abs() < 1e-12, "{m:?}: {} vs {want}", cand.win.mean());
        }
        assert!(leaves_differ, "seed {seed}: the candidates keep tiles of different values");
    }
}

/// Every legal placement of the position's rack, by score (ties by tiles, so that the ends do
/// not depend on the generation order).
fn placements(ctx: Ctx, g: &Game) -> Vec<Move> {
    let leaves = engine::leaves::RackLeaves::new(&g.racks[g.on_turn], |_| 0);
    let req = Request {
        board: &g.board,
        rack: &g.racks[g.on_turn],
        leaves: &leaves,
        can_exchange: false,
        opening_vowel_penalty: 0,
    };
    let mut v: Vec<Move> =
        Generator::new().generate(ctx, &req, Mode::All).iter().copied().filter(|m| m.kind == Kind::Place).collect();
    v.sort_by_key(|m| (m.score, m.tiles));
    v
}

#[test]
fn an_obvious_best_move_wins_and_is_never_cut() {
    let ctx = common::ctx(common::enable());
    let (kwg, dist) = (ctx.kwg, ctx.dist);
    let (klv, table) = data();
    let sim = Simulator { ctx, leaves: Some(klv.clone()), table: &table, net: None };
    let g = Position::parse("15/15/15/15/15/15/15/15/15/15/15/15/15/15/15 AEINRST/ 0/0 0", dist)
        .unwrap()
        .into_game(kwg, dist, 1);
    let moves = placements(ctx, &g);
    let (small, bingo) = (moves[0], *moves.last().unwrap());
    assert!(bingo.score >= 60 && small.score <= 6, "{} vs {}", bingo.score, small.score);
    for seed in 0..5 {
        let c =
            SimConfig { candidates: 2, plies: 2, iterations: 2000, stop: Some(StopLevel::S99), seed, time_limit: None };
        let r = on(2, || sim.run_moves(&g, vec![small, bingo], &c, &|_| {}));
        assert_eq!(r.candidates[0].mv, bingo, "seed {seed}");
        assert!(!r.candidates[0].cut);
        assert!(r.candidates[1].cut, "the 6-point play is cut");
        assert!(r.iterations < 2000, "and the sim stops early");
        assert!(
            r.candidates[0].win.mean() > r.candidates[1].win.mean() + 0.1,
            "{:?} {:?}",
            r.candidates[0],
            r.candidates[1]
        );
    }
}

#[test]
fn game_ends_inside_rollouts_are_scored_exactly() {
    let ctx = common::ctx(common::enable());
    let dist = ctx.dist;
    let (klv, table) = data();
    let sim = Simulator { ctx, leaves: Some(klv.clone()), table: &table, net: None };
    // Play until the bag is empty; then rollouts of 20 plies always reach the end.
    let mut found = 0;
    for seed in 0..20 {
        let mut g = Game::new(dist, seed);
        let mut bots = [StaticEval::new(Some(klv.clone())), StaticEval::new(Some(klv.clone()))];
        let mut mg = Generator::new();
        let mut rng = engine::rng::Rng::new(seed);
        while !g.is_over() && !g.bag.is_empty() {
            let m = bots[g.on_turn].decide(ctx, &g, &mut mg, &mut rng);
            g.play(ctx, &m);
        }
        if g.is_over() {
            continue;
        }
        let c = SimConfig { candidates: 4, plies: 20, iterations: 64, stop: None, seed, time_limit: None };
        let r = on(2, || sim.run(&g, &c, &|_| {}));
        for cand in &r.candidates {
            let twice = cand.win.mean() * 2.0 * cand.win.count() as f64;
            assert!((twice - twice.round()).abs() < 1e-6, "win values are 0, 1/2 or 1: {}", cand.win.mean());
        }
        found += 1;
    }
    assert!(found >= 10);
}

#[test]
fn sim_bot_specs() {
    use engine::bots::BotSpec;
    let b = BotSpec::parse("sim:k=5,plies=1,iterations=64,stop=99").unwrap();
    assert_eq!(
        b,
        BotSpec::Sim {
            k: 5,
            plies: 1,
            iterations: 64,
            stop: Some(99),
            ms: None,
            infer: None,
            oracle: engine::view::Knows::Nothing,
            model: None
        }
    );
    assert_eq!(BotSpec::parse(&b.to_string()).unwrap(), b);
    assert!(b.deterministic() && b.model().is_none());
    assert_eq!(BotSpec::parse("sim").unwrap().to_string(), "sim:k=15,plies=2,iterations=300");
    // A value net for the rollouts: named like a CNN bot's, and not reproducible across machines.
    let net = BotSpec::parse("sim:k=5,model=net.onnx").unwrap();
    assert_eq!(net.to_string(), "sim:k=5,plies=2,iterations=300,model=net.onnx");
    assert_eq!((net.model(), net.deterministic()), (Some("net.onnx"), false));
    assert_eq!(BotSpec::parse("sim:model=m.onnx,endgame=500").unwrap().model(), Some("m.onnx"));
    for (bad, word) in [
        ("sim:k=0", "k must"),
        ("sim:stop=97", "stop must"),
        ("sim:depth=3", "unknown parameter"),
        ("sim:plies=99", "plies must"),
    ] {
        let e = BotSpec::parse(bad).unwrap_err();
        assert!(e.message.contains(word), "{bad}: {e}");
    }
    assert!(b.build(None, None).is_err(), "a simulating bot needs a win-probability table");
}

/// The opponent's reply found through the shared search (`Replies`) equals the static bot's
/// own choice after every candidate, from the first turns to the bag's last tiles, exchanges
/// and passes among the candidates.
#[test]
fn shared_replies_equal_the_static_bots_choice() {
    let ctx = common::ctx(common::enable());
    let (klv, _) = data();
    let mut bot = StaticEval::new(Some(klv.clone()));
    let mut mg = Generator::new();
    let (mut compared, mut kinds) = (0, [0; 3]);
    for seed in 0..24 {
        let mut g = Game::new(ctx.dist, 7000 + seed);
        let mut rng = engine::rng::Rng::new(seed);
        let mut turn = 0;
        while !g.is_over() {
            if turn % 3 == 1 {
                let cands = bot.best(ctx, &g, &mut mg, 15).to_vec();
                let mut replies = Replies::default();
                for c in &cands {
                    let mut after = g.clone();
                    after.play(ctx, c);
                    if after.is_over() {
                        continue;
                    }
                    let want = bot.decide(ctx, &after, &mut mg, &mut rng);
                    let got = replies.reply(ctx, &bot, &g, &after, &mut mg);
                    assert_eq!(got, want, "game {seed}, turn {turn}, after {c:?}");
                    compared += 1;
                    kinds[c.kind as usize] += 1;
                }
            }
            let m = bot.decide(ctx, &g, &mut mg, &mut rng);
            g.play(ctx, &m);
            turn += 1;
        }
    }
    assert!(compared > 1500 && kinds[1] > 20, "{compared} replies compared, candidates by kind {kinds:?}");
}

/// A value net for tests: a fixed function of each frame, counting the frames it is sent.
struct FakeNet {
    /// `None`: a value made from the frame's scalars.
    constant: Option<f32>,
    frames: usize,
}

impl engine::features::Valuer for FakeNet {
    fn values(&mut self, frames: &[f32]) -> Result<Vec<f32>, String> {
        let n = frames.len() / engine::features::FRAME_LEN;
        self.frames += n;
        Ok(frames
            .chunks_exact(engine::features::FRAME_LEN)
            // The last scalars: the move's score, its leave, the bag, the spread after it.
            .map(|f| self.constant.unwrap_or_else(|| f[f.len() - 5..].iter().sum::<f32>().tanh()))
            .collect())
    }
}

#[test]
fn a_rollout_net_values_every_open_rollout_from_its_last_movers_view() {
    let ctx = common::ctx(common::enable());
    let (klv, table) = data();
    let encoder = engine::features::Encoder::new(ctx.dist).unwrap();
    let g = midgame(ctx, &klv, 3, 6);
    let run = |net: &mut FakeNet, plies: usize, threads: usize| {
        let net = engine::sim::RolloutNet { valuer: std::sync::Mutex::new(net), encoder: &encoder };
        let sim = Simulator { ctx, leaves: Some(klv.clone()), table: &table, net: Some(net) };
        on(threads, || sim.run(&g, &SimConfig { plies, ..cfg(200, 9) }, &|_| {}))
    };
    // A net sure that the last play's mover wins: after a candidate alone that is the
    // simulating player; after the opponent's reply, the opponent. No game ends this soon.
    for (plies, win) in [(0, 1.0), (1, 0.0)] {
        let mut net = FakeNet { constant: Some(1.0), frames: 0 };
        let r = run(&mut net, plies, 2);
        assert_eq!(net.frames, 6 * 200, "one frame a candidate an iteration");
        assert!(r.candidates.iter().all(|c| c.win.mean() == win && c.win.count() == 200), "{plies} plies");
    }
    // Values that depend on the position: the same on one thread as on two, and not the table's.
    let (mut one, mut two) = (FakeNet { constant: None, frames: 0 }, FakeNet { constant: None, frames: 0 });
    let a = run(&mut one, 2, 1);
    let b = run(&mut two, 2, 2);
    assert_eq!(summary(&a), summary(&b));
    let plain = Simulator { ctx, leaves: Some(klv.clone()), table: &table, net: None };
    let c = on(2, || plain.run(&g, &cfg(200, 9), &|_| {}));
    let wins = |r: &SimResult| r.candidates.iter().map(|c| c.win.mean().to_bits()).collect::<Vec<_>>();
    assert_ne!(wins(&a), wins(&c));
    // Equity does not involve the net.
    let equity = |r: &SimResult| {
        let mut e: Vec<_> = r.candidates.iter().map(|c| (c.mv, c.equity.mean().to_bits())).collect();
        e.sort_by(|x, y| engine::moves::rank(&x.0, &y.0));
        e
    };
    assert_eq!(equity(&a), equity(&c));
}
