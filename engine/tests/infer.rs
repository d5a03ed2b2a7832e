//! Rack inference and the player's view: the prior against brute-force enumeration of racks,
//! flat likelihood = prior, enumeration against importance sampling, a read that finds the
//! leaves that make the observed play the best one, thread-independence, and bots that cannot
//! see hidden tiles.

mod common;

use engine::bots::{BotSpec, Player};
use engine::eval::StaticEval;
use engine::game::Game;
use engine::infer::{InferConfig, Inference, Likelihood, Posterior, observe};
use engine::leaves::Klv;
use engine::movegen::{Ctx, Generator};
use engine::moves::Kind;
use engine::rng::{Rng, derive};
use engine::view::{Knows, View};
use engine::winpct::WinTable;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

fn data() -> (Arc<Klv>, Arc<WinTable>) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../lexica");
    (
        Arc::new(Klv::load(&root.join("enable.klv2")).unwrap()),
        Arc::new(WinTable::load(&root.join("enable.wpt")).unwrap()),
    )
}

/// Static self-play on deal `seed` until `stop` says so after a move; the game then, if it did.
fn play_until(ctx: Ctx, klv: &Arc<Klv>, seed: u64, stop: impl Fn(&Game) -> bool) -> Option<Game> {
    let mut g = Game::new(ctx.dist, seed);
    let mut bot = StaticEval::new(Some(klv.clone()));
    let (mut mg, mut rng) = (Generator::new(), Rng::new(seed));
    while !g.is_over() {
        let m = bot.decide(ctx, &g, &mut mg, &mut rng);
        g.play(ctx, &m);
        if stop(&g) {
            return Some(g);
        }
    }
    None
}

fn cfg(likelihood: Likelihood) -> InferConfig {
    InferConfig { likelihood, cover: 1.0, max_leaves: 1_000_000, ..InferConfig::default() }
}

fn weights(p: &Posterior) -> BTreeMap<Vec<u8>, f64> {
    p.leaves.iter().map(|w| (w.leave.clone(), w.weight)).collect()
}

fn total_variation(a: &BTreeMap<Vec<u8>, f64>, b: &BTreeMap<Vec<u8>, f64>) -> f64 {
    let keys: std::collections::BTreeSet<&Vec<u8>> = a.keys().chain(b.keys()).collect();
    keys.into_iter().map(|k| (a.get(k).unwrap_or(&0.0) - b.get(k).unwrap_or(&0.0)).abs()).sum::<f64>() / 2.0
}

/// The leave distribution by brute force: every set of `rack_len` physical tiles of the pool
/// that holds the played tiles, equally likely, grouped by what is left after them.
fn brute_force_prior(pool: &[u8], played: &[u8], rack_len: usize) -> BTreeMap<Vec<u8>, f64> {
    let n = pool.len();
    let mut out: BTreeMap<Vec<u8>, f64> = BTreeMap::new();
    let mut total = 0.0;
    for mask in 0u32..1 << n {
        if mask.count_ones() as usize != rack_len {
            continue;
        }
        let mut rack: Vec<u8> = (0..n).filter(|i| mask >> i & 1 == 1).map(|i| pool[i]).collect();
        let mut ok = true;
        for t in played {
            match rack.iter().position(|x| x == t) {
                Some(k) => {
                    rack.remove(k);
                }
                None => ok = false,
            }
        }
        if ok {
            rack.sort_unstable();
            *out.entry(rack).or_default() += 1.0;
            total += 1.0;
        }
    }
    out.values_mut().for_each(|v| *v /= total);
    out
}

#[test]
fn the_prior_is_brute_force_enumeration_of_racks_and_a_flat_likelihood_leaves_it_alone() {
    let ctx = common::ctx(common::enable());
    let (klv, table) = data();
    let inf = Inference { ctx, leaves: Some(klv.clone()), table: &table };
    let mut checked = 0;
    for seed in 0..40 {
        // Late positions, where the pool is small enough to enumerate by hand: after a
        // placement, with at most 16 tiles unseen before it.
        let Some(g) = play_until(ctx, &klv, seed, |g| {
            let t = g.history.last().unwrap();
            t.mv.kind == Kind::Place && g.bag.len() + g.racks[t.player].len() + t.mv.tiles_used() <= 16
        }) else {
            continue;
        };
        if g.is_over() {
            continue;
        }
        let view = View::new(&g, Knows::Nothing);
        let obs = observe(ctx, &view).expect("the opponent placed tiles");
        let want = brute_force_prior(&obs.pool, &obs.played, obs.rack_len);
        let post = inf.infer(&obs, &cfg(Likelihood::Flat), None);
        for w in &post.leaves {
            assert_eq!(w.weight, w.prior, "flat likelihood: posterior = prior");
        }
        let tv = total_variation(&weights(&post), &want);
        assert!(tv < 1e-9, "seed {seed}: prior differs from brute force by {tv}");
        // The true leave is among them.
        let t = g.history.last().unwrap();
        assert!(want.contains_key(&t.mv.leave(&t.rack)));
        checked += 1;
    }
    assert!(checked >= 10, "only {checked} positions");
}

#[test]
fn enumeration_and_importance_sampling_agree() {
    let ctx = common::ctx(common::enable());
    let (klv, table) = data();
    let inf = Inference { ctx, leaves: Some(klv.clone()), table: &table };
    let mut checked = 0;
    for seed in 0..60 {
        // A placement of five or six tiles mid-game leaves one or two tiles: a few hundred
        // distinct leaves at most.
        let Some(g) = play_until(ctx, &klv, seed, |g| {
            let t = g.history.last().unwrap();
            t.mv.kind == Kind::Place && t.mv.tiles_used() == 5 && g.bag.len() > 20
        }) else {
            continue;
        };
        let obs = observe(ctx, &View::new(&g, Knows::Nothing)).unwrap();
        let exact = inf.infer(&obs, &InferConfig { tau: 2.0, ..cfg(Likelihood::Static) }, None);
        assert!(exact.draws == 0 && exact.evaluated > 50, "{} leaves", exact.evaluated);
        let sampled = inf.infer(
            &obs,
            &InferConfig { tau: 2.0, max_leaves: 1, draws: 100_000, seed: 7, ..cfg(Likelihood::Static) },
            None,
        );
        assert!(sampled.draws == 100_000);
        let tv = total_variation(&weights(&exact), &weights(&sampled));
        assert!(tv < 0.05, "seed {seed}: total variation {tv}");
        checked += 1;
        if checked == 3 {
            break;
        }
    }
    assert_eq!(checked, 3);
}

#[test]
fn at_small_tau_the_weight_goes_to_leaves_that_make_the_play_the_best() {
    let ctx = common::ctx(common::enable());
    let (klv, table) = data();
    let inf = Inference { ctx, leaves: Some(klv.clone()), table: &table };
    let eval = StaticEval::new(Some(klv.clone()));
    let mut mg = Generator::new();
    let mut checked = 0;
    for seed in 0..40 {
        // The static bot's two-tile plays mid-game: five-tile leaves, many of which would have
        // made another play better.
        let Some(g) = play_until(ctx, &klv, seed, |g| {
            let t = g.history.last().unwrap();
            t.mv.kind == Kind::Place && t.mv.tiles_used() == 2 && g.bag.len() > 30
        }) else {
            continue;
        };
        let obs = observe(ctx, &View::new(&g, Knows::Nothing)).unwrap();
        let observed = g.history.last().unwrap().mv;
        let post = inf.infer(&obs, &InferConfig { tau: 0.1, max_leaves: 30_000, ..cfg(Likelihood::Static) }, None);
        // Which leaves make the observed play the static best, asked of the static bot itself.
        let mut best_mass = (0.0, 0.0);
        for w in &post.leaves {
            let mut rack = w.leave.clone();
            rack.extend_from_slice(&obs.played);
            let pos = position_before(ctx, &g, &rack);
            let best = eval.best_move(ctx, &pos, &mut mg);
            if (best.kind, best.dir, best.lane, best.start, best.tiles())
                == (observed.kind, observed.dir, observed.lane, observed.start, observed.tiles())
            {
                best_mass.0 += w.weight;
                best_mass.1 += w.prior;
            }
        }
        // Leaves with zero posterior weight were dropped; their prior share is what is left.
        assert!(best_mass.1 < 0.6, "seed {seed}: the play is best for most leaves ({}); not a test", best_mass.1);
        assert!(best_mass.0 > 0.9, "seed {seed}: {} of the weight on leaves that make it best", best_mass.0);
        checked += 1;
        if checked == 2 {
            break;
        }
    }
    assert_eq!(checked, 2);
}

/// The game before its last move, the mover holding `rack`.
fn position_before(ctx: Ctx, g: &Game, rack: &[u8]) -> Game {
    let mut replay = Game::new(ctx.dist, 0);
    let n = g.history.len() - 1;
    for t in &g.history[..n] {
        replay.racks[t.player] = t.rack.clone();
        replay.on_turn = t.player;
        replay.play(ctx, &t.mv);
    }
    replay.on_turn = g.history[n].player;
    replay.racks[replay.on_turn] = rack.to_vec();
    replay.scores = g.scores;
    replay.scores[replay.on_turn] -= g.history[n].score;
    replay
}

#[test]
fn same_seed_same_posterior_on_one_and_two_threads() {
    let ctx = common::ctx(common::enable());
    let (klv, table) = data();
    let inf = Inference { ctx, leaves: Some(klv.clone()), table: &table };
    let g = play_until(ctx, &klv, 3, |g| {
        let t = g.history.last().unwrap();
        g.history.len() >= 7 && t.mv.kind == Kind::Place && t.mv.tiles_used() <= 4
    })
    .unwrap();
    let obs = observe(ctx, &View::new(&g, Knows::Nothing)).unwrap();
    let c = InferConfig {
        iterations: 16,
        candidates: 4,
        plies: 1,
        max_leaves: 40,
        draws: 40,
        seed: 5,
        ..InferConfig::default()
    };
    let run = |threads: usize| {
        let p =
            rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap().install(|| inf.infer(&obs, &c, None));
        p.leaves.iter().map(|w| (w.leave.clone(), w.weight.to_bits())).collect::<Vec<_>>()
    };
    let one = run(1);
    assert!(one.len() > 1);
    assert_eq!(one, run(2));
}

#[test]
fn shared_replies_give_the_posterior_each_leave_gets_alone() {
    // Leaves that leave the viewer the same rack share the viewer's replies; each leave
    // searching its own must give the same posterior bit for bit (exchanges included).
    let ctx = common::ctx(common::enable());
    let (klv, table) = data();
    let inf = Inference { ctx, leaves: Some(klv.clone()), table: &table };
    let mut checked = [0; 2];
    for (seed, kind) in (0..40).flat_map(|s| [(s, Kind::Place), (s, Kind::Exchange)]) {
        let k = (kind == Kind::Exchange) as usize;
        if checked[k] >= 2 {
            continue;
        }
        let Some(g) =
            play_until(ctx, &klv, seed, |g| g.history.len() >= 5 && g.history.last().unwrap().mv.kind == kind)
        else {
            continue;
        };
        let obs = observe(ctx, &View::new(&g, Knows::Nothing)).unwrap();
        if obs.rack_len == obs.played.len() + obs.exchanged {
            continue; // nothing kept: one leave, nothing to weigh
        }
        for plies in [1, 2] {
            let c = InferConfig {
                iterations: 20,
                candidates: 10,
                plies,
                max_leaves: 60,
                draws: 60,
                seed,
                ..InferConfig::default()
            };
            let shared = inf.infer(&obs, &c, None);
            let alone = inf.infer(&obs, &InferConfig { share_replies: false, ..c }, None);
            let bits =
                |p: &Posterior| p.leaves.iter().map(|w| (w.leave.clone(), w.weight.to_bits())).collect::<Vec<_>>();
            assert!(shared.leaves.len() > 1 && shared.iterations > 0);
            assert_eq!(bits(&shared), bits(&alone), "seed {seed}, {plies} plies");
            assert_eq!(shared.iterations, alone.iterations);
        }
        checked[k] += 1;
    }
    assert_eq!(checked, [2, 2], "placements and exchanges checked");
}

#[test]
fn a_bot_cannot_see_hidden_tiles() {
    let ctx = common::ctx(common::enable());
    let (klv, table) = data();
    let specs = [
        "static",
        "softmax:t=2,bag=0",
        "sim:k=4,plies=1,iterations=24",
        "sim:k=4,plies=1,iterations=16,infer=static,tau=2,max_leaves=60",
        "sim:k=4,plies=1,iterations=16,infer=sim,infer_iters=8,infer_k=3,infer_plies=1,max_leaves=20",
    ];
    let mut mg = Generator::new();
    for seed in 0..6 {
        let g = play_until(ctx, &klv, 100 + seed, |g| g.history.len() == 5 + seed as usize).unwrap();
        // The same game with the hidden tiles dealt otherwise: the opponent's rack and the bag
        // reshuffled, their past racks' unplayed tiles and their exchanged tiles changed.
        let mut other = g.clone();
        let opp = 1 - g.on_turn;
        let mut hidden = other.bag.tiles().to_vec();
        hidden.extend_from_slice(&other.racks[opp]);
        Rng::new(derive(seed, 9)).shuffle(&mut hidden);
        let n = other.racks[opp].len();
        other.racks[opp] = hidden[..n].to_vec();
        other.bag = engine::game::Bag::from_tiles(hidden[n..].to_vec(), seed + 1000);
        for t in other.history.iter_mut().filter(|t| t.player == opp) {
            let placed = t.mv.tiles_used();
            for x in t.rack.iter_mut().skip(placed) {
                *x = 1 + (*x % 26);
            }
            if t.mv.kind == Kind::Exchange {
                let thrown: Vec<u8> = t.mv.tiles().iter().map(|x| 1 + (x % 26)).collect();
                t.mv = engine::moves::Move::exchange(&thrown);
            }
        }
        assert_ne!(g.racks[opp], other.racks[opp]);
        for spec in specs {
            let bot = || BotSpec::parse(spec).unwrap().build(Some(klv.clone()), Some(table.clone())).unwrap();
            let a = bot().decide(ctx, &g, &mut mg, &mut Rng::new(seed));
            let b = bot().decide(ctx, &other, &mut mg, &mut Rng::new(seed));
            assert_eq!(a, b, "{spec}, seed {seed}: the choice changed with tiles it cannot see");
        }
        // An oracle is told the rack, and its view shows it.
        let (va, vb) = (View::new(&g, Knows::Rack), View::new(&other, Knows::Rack));
        assert_ne!(va.revealed(), vb.revealed());
        let (va, vb) = (View::new(&g, Knows::Nothing), View::new(&other, Knows::Nothing));
        assert_eq!(va.game().racks, vb.game().racks);
        assert_eq!(va.game().bag.tiles(), vb.game().bag.tiles());
        assert!((0..g.history.len()).all(|i| va.turn(i) == vb.turn(i)));
    }
}
