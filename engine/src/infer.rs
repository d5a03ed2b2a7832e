//! Bayesian rack inference: after the opponent's turn, from the viewer's side of the board, a
//! weighted set of the tiles the opponent kept (their leave).
//!
//! The opponent's rack before the turn was the tiles they placed, `T`, plus a leave `L`.
//! - **Prior.** From the viewer's side the rack was `r` tiles drawn at random from the tiles
//!   the viewer had not seen (`pool`), so `P(L)` is the multivariate hypergeometric probability
//!   of the rack `T + L` (log-factorial binomials). This is the exact conditional: it is not
//!   the hypergeometric of `L` from `pool - T`, which over-weights keeping more copies of a
//!   letter just played (pool {E, E, A}, two-tile rack, one E played: the leave is E with
//!   probability 1/3, not 1/2). With `sequential`, the prior is instead the previous
//!   posterior's leave plus a hypergeometric draw of the new tiles.
//! - **Likelihood** of the observed turn given `T + L`: a mini-simulation from the opponent's
//!   side of their static top `candidates` (the observed move always among them), and a
//!   softmax with temperature `tau` over the candidates' log-odds of winning, taken at the
//!   observed move (`Likelihood::Sim`); or a softmax over their static equities in points
//!   (`Likelihood::Static`); or 1 (`Likelihood::Flat`: the posterior is the prior).
//! - **Search.** When there are at most `max_leaves` distinct leaves they are enumerated in
//!   order of prior until the prior mass left is under 1% (`cover`); otherwise `draws` leaves
//!   (default 750) are drawn from the hypergeometric of `pool - T` and weighted by likelihood times the ratio of
//!   the prior to that proposal (importance sampling).
//! - **Exchanges** of `n` tiles are as informative as a play of `n`: the leave has `r - n`
//!   tiles, and for each leave the thrown tiles are drawn once from the rest of the pool; the
//!   observed move is the exchange of those tiles, weighted by the prior of the whole rack over
//!   the probability of that draw. A pass gives no information (`observe` returns `None`).
//!
//! A leave's mini-simulation stops early, every 25 iterations, once another candidate beats the
//! observed move (at two standard errors of their paired difference) by so much that the
//! observed move's likelihood is under 1/1000: it depends only on the statistics, so it is as
//! reproducible as the rest.
//!
//! The leaves' mini-simulations run side by side, an iteration of every leave at a time, on
//! common random numbers: iteration `i` shuffles the tiles the opponent could not see once, and
//! each leave's deal takes its rack out of that order. Leaves that leave the viewer the same
//! rack then share the viewer's replies (`Inference::simulate`).
//!
//! Budgets are counts, and every random choice flows from `seed`: the posterior is the same at
//! any thread count.
//!
//! # Design notes
//!
//! Bayesian rack inference: `observe` turns a view into the opponent's last turn and the position
//! before it; `Inference::infer` weighs every leave (enumerated in order of prior when at most
//! `max_leaves`, else drawn from the prior and importance-weighted) by the exact prior of the rack
//! it makes times the likelihood of the observed move (a mini-simulation from the opponent's side
//! and a softmax over log-odds at temperature `tau`, or over static equity, or flat). The mini-sims
//! (one ply by default) run side by side, an iteration of every leave at a time: iteration `i`
//! shuffles the tiles the opponent could not see once and each leave's deal takes its rack out of
//! that order (common random numbers across leaves), so leaves that leave the viewer the same rack
//! share the viewer's replies. `Posterior::overlap` scores a read against the leave really kept
//! (`worker infer`, `scripts/infer-quality.sh`). Invariants: the prior equals brute-force
//! enumeration of racks; the posterior is the same at any thread count, and the same with the
//! replies shared or each leave searching its own (`share_replies`).

use crate::board::Board;
use crate::eval::StaticEval;
use crate::game::{Bag, Game};
use crate::leaves::Klv;
use crate::movegen::{Ctx, Generator, Mode};
use crate::moves::{Kind, Move};
use crate::rng::{Rng, derive};
use crate::sim::{Ended, Replies, Simulator};
use crate::stats::Welford;
use crate::tiles::{MAX_LETTERS, RACK_SIZE};
use crate::view::View;
use crate::winpct::WinTable;
use rayon::prelude::*;
use rustc_hash::FxHashMap;
use std::sync::Arc;

/// How the observed turn is weighed against each possible rack.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Likelihood {
    /// Mini-simulation of the opponent's candidates; softmax over log-odds of winning.
    Sim,
    /// Softmax over the candidates' static equities, in points.
    Static,
    /// No likelihood: the posterior is the prior.
    Flat,
}

impl Likelihood {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "sim" => Some(Self::Sim),
            "static" => Some(Self::Static),
            "flat" => Some(Self::Flat),
            _ => None,
        }
    }
    /// The temperature a read uses unless told otherwise: 0.05 on log-odds, 3 equity points.
    pub fn default_tau(self) -> f64 {
        if self == Self::Static { 3.0 } else { 0.05 }
    }
    pub fn name(self) -> &'static str {
        match self {
            Self::Sim => "sim",
            Self::Static => "static",
            Self::Flat => "flat",
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct InferConfig {
    pub likelihood: Likelihood,
    /// Softmax temperature: on log-odds of winning for `Sim`, on equity points for `Static`.
    pub tau: f64,
    /// Mini-simulation iterations per leave.
    pub iterations: u64,
    /// The opponent's candidates: their static top `candidates` (plus the observed move).
    pub candidates: usize,
    /// Static plies after each candidate in the mini-simulations.
    pub plies: usize,
    /// Enumerate when there are at most this many distinct leaves; else sample.
    pub max_leaves: usize,
    /// Enumeration evaluates leaves in order of prior until this share of the prior is
    /// covered (the rest are taken as impossible).
    pub cover: f64,
    /// Leaves drawn from the prior when sampling.
    pub draws: usize,
    pub seed: u64,
    /// Leaves that leave the viewer the same rack share the viewer's replies (the default).
    /// Off, each leave searches its own: the same posterior, slower; for checking the sharing
    /// and measuring what it saves.
    pub share_replies: bool,
}

impl Default for InferConfig {
    fn default() -> Self {
        Self {
            likelihood: Likelihood::Sim,
            tau: 0.05,
            iterations: 200,
            candidates: 8,
            // One ply reads the kept tiles as well as two, at a sixth of the cost
            // (docs/BENCHMARKS.md, "Rack inference").
            plies: 1,
            max_leaves: 750,
            cover: 0.99,
            draws: 750,
            seed: 0,
            share_replies: true,
        }
    }
}

/// Mini-simulation iterations between checks of whether a leave is hopeless.
const CHECK_EVERY: u64 = 25;
/// A leave's mini-simulation stops once another candidate beats the observed move by so much
/// (at two standard errors of their paired difference) that its likelihood is under this.
const HOPELESS: f64 = 1e-3;

/// The opponent's last turn as the viewer saw it, and the position before it.
#[derive(Clone, Debug)]
pub struct Observed {
    /// The position before the turn, the opponent on turn, their rack empty; the viewer's
    /// rack is the viewer's.
    before: Game,
    /// The tiles the viewer had not seen before the turn (the opponent's rack and the bag).
    pub pool: Vec<u8>,
    /// Tiles placed, sorted (blanks as 0); empty for an exchange.
    pub played: Vec<u8>,
    /// Tiles thrown back (0 for a placement).
    pub exchanged: usize,
    /// The opponent's rack size before the turn.
    pub rack_len: usize,
    /// The turn's index in the game (from 0).
    pub turn: usize,
    mv: Move,
}

/// One leave and its weight.
#[derive(Clone, Debug, PartialEq)]
pub struct Weighted {
    /// Sorted tiles (blank 0).
    pub leave: Vec<u8>,
    /// Posterior weight; the weights of a posterior sum to 1.
    pub weight: f64,
    /// Prior weight, normalised over the same leaves.
    pub prior: f64,
}

#[derive(Clone, Debug)]
pub struct Posterior {
    /// Leaves with weight above 0, heaviest first (ties by tiles).
    pub leaves: Vec<Weighted>,
    /// The opponent's rack size before the turn; each leave has `rack_len - played` tiles.
    pub rack_len: usize,
    /// Distinct leaves whose likelihood was computed.
    pub evaluated: usize,
    /// Leaves drawn from the prior (0 when enumerated).
    pub draws: usize,
    /// Effective sample size of the weights.
    pub ess: f64,
    /// Mini-simulation iterations run, over all leaves.
    pub iterations: u64,
}

impl Posterior {
    /// How many of `truth`'s tiles (the leave the opponent really kept, sorted) a leave holds
    /// on average: (under the posterior, under the prior). A read that helps puts the first
    /// above the second; `truth.len()` is a perfect read.
    pub fn overlap(&self, truth: &[u8]) -> (f64, f64) {
        let common = |leave: &[u8]| {
            let (mut i, mut j, mut n) = (0, 0, 0);
            while i < leave.len() && j < truth.len() {
                match leave[i].cmp(&truth[j]) {
                    std::cmp::Ordering::Less => i += 1,
                    std::cmp::Ordering::Greater => j += 1,
                    std::cmp::Ordering::Equal => (i, j, n) = (i + 1, j + 1, n + 1),
                }
            }
            n as f64
        };
        self.leaves.iter().fold((0.0, 0.0), |(post, prior), w| {
            let c = common(&w.leave);
            (post + w.weight * c, prior + w.prior * c)
        })
    }

    /// For each tile, posterior expected count on the leave over prior expected count (`None`
    /// where the prior expects none).
    pub fn tile_ratios(&self) -> Vec<(u8, Option<f64>)> {
        let mut post = [0.0; MAX_LETTERS + 1];
        let mut prior = [0.0; MAX_LETTERS + 1];
        for w in &self.leaves {
            for &t in &w.leave {
                post[t as usize] += w.weight;
                prior[t as usize] += w.prior;
            }
        }
        (0..=MAX_LETTERS as u8)
            .filter(|&t| post[t as usize] > 0.0 || prior[t as usize] > 0.0)
            .map(|t| (t, (prior[t as usize] > 0.0).then(|| post[t as usize] / prior[t as usize])))
            .collect()
    }
}

/// The share of iterations that draw the opponent's leave from a posterior of `n` distinct
/// leaves: few leaves mean a sharp read, but also one that the mini-simulations' noise may
/// have made, so it is trusted less.
pub fn gate(n: usize) -> f64 {
    0.95 / (1.0 + (-(n as f64 - 10.0) / 5.0).exp())
}

/// The opponent's last turn in `view` (the viewer on turn), or `None` when there is nothing to
/// infer from: no turn yet, or a pass.
pub fn observe(ctx: Ctx, view: &View) -> Option<Observed> {
    let last = view.turn_count().checked_sub(1)?;
    let seen = view.turn(last);
    let me = view.me();
    if seen.player == me || seen.mv.kind == Kind::Pass {
        return None;
    }
    let mut board = Board::new();
    for i in 0..last {
        let t = view.turn(i);
        if t.mv.kind == Kind::Place {
            board.place(t.mv.dir(), t.mv.lane as usize, t.mv.start as usize, t.mv.tiles(), ctx.kwg, ctx.dist);
        }
    }
    let scoreless = (0..last).rev().take_while(|&i| !scores(&view.turn(i).mv)).count() as u8;
    let mut played: Vec<u8> = seen.mv.rack_tiles().collect();
    let exchanged = if seen.mv.kind == Kind::Exchange { std::mem::take(&mut played).len() } else { 0 };
    played.sort_unstable();
    let mut pool = view.unseen();
    pool.extend_from_slice(&played);
    pool.sort_unstable();
    let now = view.game();
    let mut scores_before = now.scores;
    scores_before[seen.player] -= seen.score;
    let mut racks = [Vec::new(), Vec::new()];
    racks[me] = now.racks[me].clone();
    let before = Game {
        board,
        racks,
        scores: scores_before,
        bag: Bag::from_tiles(Vec::new(), 0),
        on_turn: seen.player,
        scoreless,
        end: None,
        history: Vec::new(),
        adjustments: Vec::new(),
    };
    Some(Observed { before, pool, played, exchanged, rack_len: seen.rack.len(), turn: last, mv: seen.mv })
}

fn scores(mv: &Move) -> bool {
    mv.kind == Kind::Place && mv.score > 0
}

/// What the inference runs on: the lexicon, the leave table and the win-probability table.
pub struct Inference<'a> {
    pub ctx: Ctx<'a>,
    pub leaves: Option<Arc<Klv>>,
    pub table: &'a WinTable,
}

/// A leave to evaluate: its tiles, the rack it makes with the tiles placed or thrown, the
/// observed move for that rack, and the log of (prior / chance this search produced it).
struct Item {
    leave: Vec<u8>,
    rack: Vec<u8>,
    mv: Move,
    ln_ratio: f64,
    /// Times drawn (1 when enumerated).
    count: u32,
}

impl Inference<'_> {
    /// The posterior over the opponent's leave after the turn `obs`. `previous`: the viewer's
    /// posterior after the opponent's turn before, for sequential inference.
    pub fn infer(&self, obs: &Observed, cfg: &InferConfig, previous: Option<&Posterior>) -> Posterior {
        let leave_len = obs.rack_len - obs.played.len() - obs.exchanged;
        let lf = LnFact::new(obs.pool.len() + 1);
        let pool = counts(&obs.pool);
        let prior = |rack: &[u8]| match previous {
            Some(p) => sequential_prior(&lf, &pool, rack, p),
            None => lf.ln_hyper(&pool, &counts(rack)),
        };
        // The pool the leave comes from: without the tiles placed.
        let mut rest = pool;
        for &t in &obs.played {
            rest[t as usize] -= 1;
        }
        let distinct = count_subsets(&rest, leave_len);
        let mut items = Vec::new();
        let enumerated = distinct <= cfg.max_leaves as f64;
        if enumerated {
            let mut all = Vec::new();
            subsets(&rest, leave_len, &mut Vec::new(), 0, &mut all);
            for (i, leave) in all.into_iter().enumerate() {
                items.push(self.item(obs, &lf, &pool, leave, derive(cfg.seed, i as u64), &prior, 0.0, 1));
            }
            // The most likely leaves a priori first; stop once 99% of the prior is covered.
            let ln_order =
                |it: &Item| if obs.exchanged > 0 { lf.ln_hyper(&pool, &counts(&it.leave)) } else { it.ln_ratio };
            let mut keyed: Vec<(f64, Item)> = items.into_iter().map(|it| (ln_order(&it), it)).collect();
            keyed.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.leave.cmp(&b.1.leave)));
            let top = keyed.first().map_or(0.0, |k| k.0);
            let total: f64 = keyed.iter().map(|k| (k.0 - top).exp()).sum();
            let mut covered = 0.0;
            items = Vec::new();
            for (ln, it) in keyed {
                if covered >= cfg.cover * total {
                    break;
                }
                covered += (ln - top).exp();
                items.push(it);
            }
        } else {
            let mut rng = Rng::new(derive(cfg.seed, u64::MAX));
            let mut tiles = obs.pool.clone();
            for &t in &obs.played {
                let k = tiles.iter().position(|&x| x == t).expect("played tiles are in the pool");
                tiles.remove(k);
            }
            let mut drawn: std::collections::BTreeMap<Vec<u8>, u32> = Default::default();
            for _ in 0..cfg.draws.max(1) {
                rng.shuffle(&mut tiles);
                let mut leave = tiles[..leave_len].to_vec();
                leave.sort_unstable();
                *drawn.entry(leave).or_default() += 1;
            }
            for (i, (leave, count)) in drawn.into_iter().enumerate() {
                let q = lf.ln_hyper(&rest, &counts(&leave));
                items.push(self.item(obs, &lf, &pool, leave, derive(cfg.seed, i as u64), &prior, q, count));
            }
        }
        let setups: Vec<Likely> =
            items.par_iter().map_init(Generator::new, |mg, it| self.setup(obs, it, cfg, mg)).collect();
        let to_run: Vec<&MiniSim> =
            setups.iter().filter_map(|l| if let Likely::Simulate(m) = l { Some(&**m) } else { None }).collect();
        let mut simulated = self.simulate(obs, &to_run, cfg).into_iter();
        let (liks, sims): (Vec<f64>, Vec<u64>) = setups
            .iter()
            .map(|l| match l {
                Likely::Known(p) => (*p, 0),
                Likely::Simulate(_) => simulated.next().expect("one result per mini-simulation"),
            })
            .unzip();
        let top = items.iter().map(|it| it.ln_ratio).fold(f64::NEG_INFINITY, f64::max);
        let mut prior_w: Vec<f64> = items.iter().map(|it| it.count as f64 * (it.ln_ratio - top).exp()).collect();
        let mut post_w: Vec<f64> = prior_w.iter().zip(&liks).map(|(p, l)| p * l).collect();
        // Effective sample size over the draws (a leave drawn m times is m draws of weight w/m).
        let (sum, sq) = items.iter().zip(&post_w).fold((0.0, 0.0), |(s, q), (it, w)| {
            let c = it.count as f64;
            (s + w, q + w * w / c)
        });
        let ess = if sq > 0.0 { sum * sum / sq } else { 0.0 };
        normalise(&mut prior_w);
        normalise(&mut post_w);
        let mut leaves: Vec<Weighted> = items
            .iter()
            .zip(prior_w.iter().zip(&post_w))
            .filter(|(_, (_, w))| **w > 0.0)
            .map(|(it, (&prior, &weight))| Weighted { leave: it.leave.clone(), weight, prior })
            .collect();
        leaves.sort_by(|a, b| b.weight.total_cmp(&a.weight).then_with(|| a.leave.cmp(&b.leave)));
        Posterior {
            leaves,
            rack_len: obs.rack_len,
            evaluated: items.len(),
            draws: if enumerated { 0 } else { cfg.draws.max(1) },
            ess,
            iterations: sims.iter().sum(),
        }
    }

    /// The leave `leave` as an item: for an exchange, the thrown tiles drawn from the rest of
    /// the pool with `seed`. `ln_q`: the log-probability of the search drawing this leave.
    #[allow(clippy::too_many_arguments)]
    fn item(
        &self,
        obs: &Observed,
        lf: &LnFact,
        pool: &Counts,
        leave: Vec<u8>,
        seed: u64,
        prior: &impl Fn(&[u8]) -> f64,
        ln_q: f64,
        count: u32,
    ) -> Item {
        let mut rack = leave.clone();
        let (mv, ln_thrown) = if obs.exchanged > 0 {
            let mut others = obs.pool.clone();
            for &t in &leave {
                let k = others.iter().position(|&x| x == t).expect("the leave is in the pool");
                others.remove(k);
            }
            Rng::new(seed).shuffle(&mut others);
            let mut thrown = others[..obs.exchanged].to_vec();
            thrown.sort_unstable();
            let mut left = *pool;
            for &t in &leave {
                left[t as usize] -= 1;
            }
            rack.extend_from_slice(&thrown);
            (Move::exchange(&thrown), lf.ln_hyper(&left, &counts(&thrown)))
        } else {
            rack.extend_from_slice(&obs.played);
            (obs.mv, 0.0)
        };
        rack.sort_unstable();
        let ln_ratio = prior(&rack) - ln_q - ln_thrown;
        Item { leave, rack, mv, ln_ratio, count }
    }

    /// How likely the opponent was to make the observed move holding `it.rack`, when that
    /// needs no simulation; else the mini-simulation to run.
    fn setup(&self, obs: &Observed, it: &Item, cfg: &InferConfig, mg: &mut Generator) -> Likely {
        if cfg.likelihood == Likelihood::Flat || it.ln_ratio == f64::NEG_INFINITY {
            return Likely::Known(1.0);
        }
        let mut g = obs.before.clone();
        let mut bag = obs.pool.clone();
        for &t in &it.rack {
            let k = bag.iter().position(|&x| x == t).expect("the rack is in the pool");
            bag.remove(k);
        }
        g.bag = Bag::from_tiles(bag, 0);
        g.racks[g.on_turn] = it.rack.clone();
        let eval = StaticEval::new(self.leaves.clone());
        let mut cands = eval.best(self.ctx, &g, mg, cfg.candidates.max(1)).to_vec();
        let at = match cands.iter().position(|m| same(m, &it.mv)) {
            Some(i) => i,
            None => {
                let leaves = eval.rack_leaves(self.ctx, &g);
                let req = crate::eval::request(&g, &leaves, crate::eval::OPENING_VOWEL_PENALTY);
                match mg.generate(self.ctx, &req, Mode::All).iter().find(|m| same(m, &it.mv)) {
                    Some(m) => cands.push(*m),
                    // Not a legal move with this rack: impossible.
                    None => return Likely::Known(0.0),
                }
                cands.len() - 1
            }
        };
        if cands.len() == 1 {
            return Likely::Known(1.0);
        }
        if cfg.likelihood == Likelihood::Static {
            let equities: Vec<f64> = cands.iter().map(|m| m.equity as f64 / 1000.0).collect();
            return Likely::Known(softmax_at(&equities, at, cfg.tau));
        }
        Likely::Simulate(Box::new(MiniSim { game: g, cands, at }))
    }

    /// The likelihood of each leave's observed move from its mini-simulation, and the
    /// iterations each ran.
    ///
    /// The mini-simulations run side by side, iteration by iteration. Iteration `i` shuffles
    /// the tiles the opponent could not see (the viewer's pool and rack) once, and each leave's
    /// deal takes its own rack's tiles out of that order: a uniform deal for every leave, and
    /// the same viewer rack for leaves whose tiles it does not touch. Those leaves share the
    /// viewer's replies: one search of the iteration's board per viewer rack (`Replies`) and
    /// one reply per (viewer rack, candidate), since a candidate's first reply depends on the
    /// leave only through that rack while tiles remain in the bag. Statistics are folded in
    /// iteration order, so the result is the same on any thread count.
    fn simulate(&self, obs: &Observed, sims: &[&MiniSim], cfg: &InferConfig) -> Vec<(f64, u64)> {
        let sim = Simulator { ctx: self.ctx, leaves: self.leaves.clone(), table: self.table, net: None };
        let me = obs.before.on_turn;
        let mut hidden = obs.pool.clone();
        hidden.extend_from_slice(&obs.before.racks[1 - me]);
        let mut stats: Vec<Vec<Tally>> = sims.iter().map(|m| vec![Tally::default(); m.cands.len()]).collect();
        let mut active = vec![true; sims.len()];
        let eps = 0.5 / cfg.iterations.max(1) as f64;
        let logit = |w: f64| {
            let w = w.clamp(eps, 1.0 - eps);
            (w / (1.0 - w)).ln()
        };
        // A leave stops once its observed move is out of reach: some candidate beats it by
        // enough, at two standard errors of the paired difference, that its likelihood is
        // under HOPELESS.
        let go_on = |c: &[Tally], at: usize| {
            let mine = c[at].win.mean();
            c.iter().enumerate().filter(|(i, _)| *i != at).all(|(_, o)| {
                let ahead = o.paired.mean() - 2.0 * o.paired.stderr();
                ahead <= 0.0 || 1.0 / (1.0 + ((logit(mine + ahead) - logit(mine)) / cfg.tau).exp()) >= HOPELESS
            })
        };
        let mut done = 0;
        while done < cfg.iterations && active.iter().any(|&a| a) {
            let n = CHECK_EVERY.min(cfg.iterations - done);
            let block: Vec<Vec<Option<Vec<f64>>>> = (done..done + n)
                .into_par_iter()
                .map_init(
                    || (Generator::new(), StaticEval::new(self.leaves.clone())),
                    |(mg, bot), i| self.iteration(&sim, sims, &active, &hidden, derive(cfg.seed, i), cfg, bot, mg),
                )
                .collect();
            for per_leave in &block {
                for ((cands, m), r) in stats.iter_mut().zip(sims).zip(per_leave) {
                    let Some(r) = r else { continue };
                    let reference = r[m.at];
                    for (c, &w) in cands.iter_mut().zip(r) {
                        c.win.add(w);
                        c.paired.add(w - reference);
                    }
                }
            }
            done += n;
            for ((a, cands), m) in active.iter_mut().zip(&stats).zip(sims) {
                *a = *a && go_on(cands, m.at);
            }
        }
        stats
            .iter()
            .zip(sims)
            .map(|(cands, m)| {
                let logits: Vec<f64> = cands.iter().map(|c| logit(c.win.mean())).collect();
                (softmax_at(&logits, m.at, cfg.tau), cands[0].win.count())
            })
            .collect()
    }

    /// One iteration of every active leave's mini-simulation: each candidate's win
    /// probability, for the opponent.
    #[allow(clippy::too_many_arguments)]
    fn iteration(
        &self,
        sim: &Simulator,
        sims: &[&MiniSim],
        active: &[bool],
        hidden: &[u8],
        seed: u64,
        cfg: &InferConfig,
        bot: &StaticEval,
        mg: &mut Generator,
    ) -> Vec<Option<Vec<f64>>> {
        let (plies, share) = (cfg.plies, cfg.share_replies);
        let mut order = hidden.to_vec();
        Rng::new(seed).shuffle(&mut order);
        let mut replies: FxHashMap<(usize, u64), Replies> = FxHashMap::default();
        let mut memo: FxHashMap<(usize, u64, Move), Move> = FxHashMap::default();
        sims.iter()
            .zip(active)
            .enumerate()
            .map(|(k, (m, &on))| {
                if !on {
                    return None;
                }
                // Whose replies these are: every leave's alike, or this leave's own.
                let owner = if share { 0 } else { k };
                let me = m.game.on_turn;
                let mut tiles = order.clone();
                for &t in &m.game.racks[me] {
                    let k = tiles.iter().position(|&x| x == t).expect("the rack is among the hidden tiles");
                    tiles.remove(k);
                }
                let deal = crate::sim::dealt(&m.game, &tiles, &[], tiles.len().min(RACK_SIZE), seed);
                let viewer = (owner, rack_key(&deal.racks[1 - me]));
                let out = m
                    .cands
                    .iter()
                    .map(|c| {
                        let key = (viewer.0, viewer.1, move_key(c));
                        let mut reply = |after: &Game, mg: &mut Generator| {
                            // With the bag empty the reply's values depend on the leave's rack.
                            if after.bag.is_empty() {
                                return bot.best_move(self.ctx, after, mg);
                            }
                            *memo.entry(key).or_insert_with(|| {
                                replies.entry(viewer).or_default().reply(self.ctx, bot, &deal, after, mg)
                            })
                        };
                        match sim.rollout(&deal, c, plies, me, bot, mg, &mut reply) {
                            Ended::Scored(w, _) => w,
                            Ended::Open { .. } => unreachable!("mini-simulations have no net"),
                        }
                    })
                    .collect();
                Some(out)
            })
            .collect()
    }
}

/// One candidate's statistics in a leave's mini-simulation: its win probability, and that minus
/// the observed move's in the same iteration (on common random numbers, far tighter than the
/// difference of two means).
#[derive(Clone, Default)]
struct Tally {
    win: Welford,
    paired: Welford,
}

/// A leave's likelihood, or the mini-simulation that will give it.
enum Likely {
    Known(f64),
    Simulate(Box<MiniSim>),
}

/// The opponent's position holding one leave's rack, their candidates, and the observed
/// move's place among them.
struct MiniSim {
    game: Game,
    cands: Vec<Move>,
    at: usize,
}

/// The softmax with temperature `tau` of `scores`, taken at `at`.
fn softmax_at(scores: &[f64], at: usize, tau: f64) -> f64 {
    let top = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let e: Vec<f64> = scores.iter().map(|s| ((s - top) / tau).exp()).collect();
    e[at] / e.iter().sum::<f64>()
}

/// A rack as a map key: its sorted tiles, seven bits each.
fn rack_key(rack: &[u8]) -> u64 {
    let mut r = [0u8; RACK_SIZE];
    let r = &mut r[..rack.len()];
    r.copy_from_slice(rack);
    r.sort_unstable();
    r.iter().fold(r.len() as u64, |k, &t| k << 7 | t as u64)
}

/// A move as a map key, equal for the same move whatever its equity (which depends on the
/// leave): a placement by where it goes and what it places, an exchange by its sorted tiles.
fn move_key(m: &Move) -> Move {
    match m.kind {
        Kind::Place => {
            let mut k = Move { kind: Kind::Place, dir: m.dir, lane: m.lane, start: m.start, len: m.len, ..Move::PASS };
            let start = m.start as usize;
            k.tiles[start..start + m.len as usize].copy_from_slice(m.tiles());
            k
        }
        Kind::Exchange => {
            let mut thrown = m.tiles().to_vec();
            thrown.sort_unstable();
            Move::exchange(&thrown)
        }
        Kind::Pass => Move::PASS,
    }
}

/// The same move, whatever its equity.
fn same(a: &Move, b: &Move) -> bool {
    move_key(a) == move_key(b)
}

fn normalise(w: &mut [f64]) {
    let s: f64 = w.iter().sum();
    if s > 0.0 {
        w.iter_mut().for_each(|x| *x /= s);
    }
}

type Counts = [u16; MAX_LETTERS + 1];

fn counts(tiles: &[u8]) -> Counts {
    let mut c = [0; MAX_LETTERS + 1];
    for &t in tiles {
        c[t as usize] += 1;
    }
    c
}

/// ln n! for n up to a bound, and the multivariate hypergeometric from it.
struct LnFact(Vec<f64>);

impl LnFact {
    fn new(n: usize) -> Self {
        let mut v = vec![0.0; n + 1];
        for i in 1..=n {
            v[i] = v[i - 1] + (i as f64).ln();
        }
        Self(v)
    }
    fn ln_choose(&self, n: u16, k: u16) -> f64 {
        if k > n { f64::NEG_INFINITY } else { self.0[n as usize] - self.0[k as usize] - self.0[(n - k) as usize] }
    }
    /// ln of the probability that drawing `draw.sum()` tiles from `pool` gives exactly `draw`.
    fn ln_hyper(&self, pool: &Counts, draw: &Counts) -> f64 {
        let (mut n, mut k, mut ln) = (0u16, 0u16, 0.0);
        for (&p, &d) in pool.iter().zip(draw) {
            if d > p {
                return f64::NEG_INFINITY;
            }
            ln += self.ln_choose(p, d);
            n += p;
            k += d;
        }
        ln - self.ln_choose(n, k)
    }
}

/// ln of the sequential prior of `rack`: the previous posterior's leaves, each plus a draw of
/// the rest of the rack from the pool without that leave.
fn sequential_prior(lf: &LnFact, pool: &Counts, rack: &[u8], previous: &Posterior) -> f64 {
    let r = counts(rack);
    let mut p = 0.0;
    for w in &previous.leaves {
        let l = counts(&w.leave);
        if l.iter().zip(&r).any(|(a, b)| a > b) || l.iter().zip(pool).any(|(a, b)| a > b) {
            continue;
        }
        let mut left = *pool;
        let mut drawn = r;
        for t in 0..=MAX_LETTERS {
            left[t] -= l[t];
            drawn[t] -= l[t];
        }
        p += w.weight * lf.ln_hyper(&left, &drawn).exp();
    }
    p.ln()
}

/// How many distinct multisets of `k` tiles `pool` holds (as f64: it can be large).
fn count_subsets(pool: &Counts, k: usize) -> f64 {
    let mut ways = vec![0.0; k + 1];
    ways[0] = 1.0;
    for &c in pool.iter().filter(|&&c| c > 0) {
        for n in (1..=k).rev() {
            let add: f64 = (1..=(c as usize).min(n)).map(|j| ways[n - j]).sum();
            ways[n] += add;
        }
    }
    ways[k]
}

/// Every distinct multiset of `k` tiles from `pool`, sorted, in lexicographic order.
fn subsets(pool: &Counts, k: usize, cur: &mut Vec<u8>, from: usize, out: &mut Vec<Vec<u8>>) {
    if cur.len() == k {
        out.push(cur.clone());
        return;
    }
    for t in from..pool.len() {
        let have = cur.iter().filter(|&&x| x as usize == t).count();
        if have < pool[t] as usize {
            cur.push(t as u8);
            subsets(pool, k, cur, t, out);
            cur.pop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlap_counts_shared_tiles_with_multiplicity() {
        let w = |leave: &[u8], weight, prior| Weighted { leave: leave.to_vec(), weight, prior };
        let post = Posterior {
            leaves: vec![w(&[1, 1, 5], 0.75, 0.25), w(&[2, 5, 9], 0.25, 0.75)],
            rack_len: 7,
            evaluated: 2,
            draws: 0,
            ess: 1.0,
            iterations: 0,
        };
        // Truth A A E: the first leave holds all three, the second only the E.
        let (read, prior) = post.overlap(&[1, 1, 5]);
        assert!((read - (0.75 * 3.0 + 0.25)).abs() < 1e-12, "{read}");
        assert!((prior - (0.25 * 3.0 + 0.75)).abs() < 1e-12, "{prior}");
        // One A of the truth matches one of the two on the leave, not both.
        assert_eq!(post.overlap(&[1]), (0.75, 0.25));
        assert_eq!(post.overlap(&[]), (0.0, 0.0));
    }

    #[test]
    fn the_gate_follows_its_formula() {
        let want = [(3, 0.188), (10, 0.475), (20, 0.837), (50, 0.950)];
        for (n, a) in want {
            assert!((gate(n) - a).abs() < 0.001, "{n}: {}", gate(n));
        }
        assert!(gate(0) < gate(1) && gate(100) < 0.95);
    }

    #[test]
    fn subsets_are_counted_and_listed_alike() {
        let mut pool = [0u16; MAX_LETTERS + 1];
        pool[1] = 3;
        pool[2] = 1;
        pool[5] = 2;
        for k in 0..=6 {
            let mut out = Vec::new();
            subsets(&pool, k, &mut Vec::new(), 0, &mut out);
            assert_eq!(out.len() as f64, count_subsets(&pool, k), "k = {k}");
            let mut sorted = out.clone();
            sorted.sort();
            sorted.dedup();
            assert_eq!(sorted, out);
        }
    }
}
