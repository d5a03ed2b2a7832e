//! Truncated Monte Carlo simulation: take the static evaluator's top `k` moves, and for each
//! iteration deal the unseen tiles at random (an opponent rack and a bag order), play every
//! candidate followed by `plies` static best moves, and score it by win probability (from the
//! [`WinTable`], or from a value net: [`RolloutNet`]) and by equity (spread change plus
//! leaves). A rollout that stops before the game ends counts, for each player, the leave value
//! of the tiles they kept on their last play in it (as the established engines do): a rack
//! refilled from the bag has no leave value of its own, so without this the candidates'
//! leaves would count for nothing.
//!
//! Every candidate sees the same deal in an iteration (common random numbers), and iteration
//! `i`'s deal comes from `derive(seed, i)`: results do not depend on the thread count.
//! Statistics are summed in iteration order, so they are bit-identical too.
//!
//! # Design notes
//!
//! truncated Monte Carlo: the static top `k`, each rolled out `plies` deep on the same random deal
//! per iteration (the opponent's rack dealt as `Opponent` says: unknown, partly known to an oracle,
//! or drawn from an inferred posterior) (common random numbers; deal `i` from `derive(seed, i)`),
//! scored by win probability (the `WinTable`, or a `RolloutNet`: a value net given each unfinished
//! rollout's last play, valued block by block in iteration order) and equity, each player's leave
//! from their last play in the rollout counted (a refilled rack has none); cuts candidates whose
//! win% upper bound falls below the leader's lower bound (95/98/99). Each candidate's statistics
//! are a `stats::Welford` fed in iteration order, so results are identical on any thread count.
//! `Replies`: in one iteration every candidate leaves the opponent the same rack, so their first
//! replies share one search of the iteration's board, and after each candidate only the lanes it
//! changed are searched again (tested equal to the static bot).

use crate::board::DIM;
use crate::eval::{OPENING_VOWEL_PENALTY, StaticEval, request};
use crate::features::{Before, Encoder, FRAME_LEN, Valuer};
use crate::game::{Bag, Game};
use crate::leaves::{Klv, RackLeaves};
use crate::movegen::{Ctx, Generator, Mode};
use crate::moves::{Kind, Move};
use crate::rng::{Rng, derive};
use crate::stats::{Welford, Z95, Z98, Z99};
use crate::winpct::WinTable;
use rayon::prelude::*;
use std::sync::{Arc, Mutex};

/// Iterations between statistical checks (and the unit of parallel work).
pub const BLOCK: u64 = 128;

#[derive(Clone, Debug)]
pub struct SimConfig {
    /// Candidates: the static evaluator's top `k`.
    pub candidates: usize,
    /// Static plies played after each candidate.
    pub plies: usize,
    /// Most iterations.
    pub iterations: u64,
    /// Stop early when one candidate is left: cut a candidate once its upper bound (mean +
    /// `z` standard errors of its win%) is below the leader's lower bound. `None`: run all
    /// iterations, cutting nothing.
    pub stop: Option<StopLevel>,
    pub seed: u64,
    /// Stop after this long (checked between blocks). Results then depend on the machine.
    pub time_limit: Option<std::time::Duration>,
}

/// The established engines' stopping levels.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum StopLevel {
    S95,
    S98,
    S99,
}

impl StopLevel {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "95" => Some(Self::S95),
            "98" => Some(Self::S98),
            "99" => Some(Self::S99),
            _ => None,
        }
    }
    /// Two-sided normal quantile.
    pub fn z(self) -> f64 {
        match self {
            Self::S95 => Z95,
            Self::S98 => Z98,
            Self::S99 => Z99,
        }
    }
}

#[derive(Clone, Debug)]
pub struct Candidate {
    pub mv: Move,
    /// Win probability of the player to move (0..1).
    pub win: Welford,
    /// Spread change plus leave values, in points.
    pub equity: Welford,
    /// Cut by the stopping rule (its statistics stop there).
    pub cut: bool,
}

#[derive(Clone, Debug)]
pub struct SimResult {
    /// Best first: by win probability, then equity; cut candidates after the rest.
    pub candidates: Vec<Candidate>,
    pub iterations: u64,
}

pub struct Simulator<'a> {
    pub ctx: Ctx<'a>,
    pub leaves: Option<Arc<Klv>>,
    pub table: &'a WinTable,
    /// Scores the rollouts that end before the game does, instead of `table`.
    pub net: Option<RolloutNet<'a>>,
}

/// A value net that scores each rollout that stops before the game ends: the frame of the
/// rollout's last play (`features`, from its mover's view, as the CNN bot values its
/// candidates), whose value `v` is that mover's expected outcome, so a win probability of
/// `(v + 1) / 2`. A block's open rollouts are valued together after it is played, in
/// iteration order and batches of [`NET_BATCH`], so the values (and the results) do not
/// depend on the thread count.
pub struct RolloutNet<'a> {
    pub valuer: Mutex<&'a mut dyn Valuer>,
    pub encoder: &'a Encoder,
}

/// Most frames sent to a rollout net at once (77 KB each).
pub const NET_BATCH: usize = 256;

/// How a rollout ended, for the simulating player.
pub(crate) enum Ended {
    /// Win probability and equity.
    Scored(f64, f64),
    /// Stopped before the game ended, for the net: the position before the last play, the
    /// play, the play before it, and the equity.
    Open { before: Box<Game>, last: Move, previous: Option<Move>, equity: f64 },
}

impl Simulator<'_> {
    /// Simulate the position of `game` for the player on turn, on the current rayon pool.
    /// `progress` is told the iterations done after each block.
    pub fn run(&self, game: &Game, cfg: &SimConfig, progress: &(dyn Fn(u64) + Sync)) -> SimResult {
        let mut mg = Generator::new();
        let moves = StaticEval::new(self.leaves.clone()).best(self.ctx, game, &mut mg, cfg.candidates.max(1)).to_vec();
        self.run_moves(game, moves, cfg, progress)
    }

    /// Simulate the given candidate moves (legal for the player on turn).
    pub fn run_moves(
        &self,
        game: &Game,
        moves: Vec<Move>,
        cfg: &SimConfig,
        progress: &(dyn Fn(u64) + Sync),
    ) -> SimResult {
        self.run_against(game, moves, cfg, &Opponent::Unknown, progress)
    }

    /// Simulate the given candidate moves, dealing the opponent's rack as `opponent` says.
    pub fn run_against(
        &self,
        game: &Game,
        moves: Vec<Move>,
        cfg: &SimConfig,
        opponent: &Opponent,
        progress: &(dyn Fn(u64) + Sync),
    ) -> SimResult {
        let me = game.on_turn;
        let mut base = game.clone();
        base.history.clear();
        base.adjustments.clear();
        let mut cands: Vec<Candidate> = moves
            .into_iter()
            .map(|mv| Candidate { mv, win: Welford::default(), equity: Welford::default(), cut: false })
            .collect();
        // The unseen tiles from the mover's seat: the bag and the opponent's rack.
        let mut unseen: Vec<u8> = base.bag.tiles().to_vec();
        unseen.extend_from_slice(&base.racks[1 - me]);
        unseen.sort_unstable();
        // A position may not say what the opponent holds (CGP gives only the mover's rack):
        // they hold seven tiles, or all that is unseen when fewer remain.
        let opp_len = unseen.len().min(crate::tiles::RACK_SIZE);
        let mut done = 0;
        let deadline = cfg.time_limit.map(|t| std::time::Instant::now() + t);
        while done < cfg.iterations
            && (cands.iter().filter(|c| !c.cut).count() > 1 || cfg.stop.is_none())
            && deadline.is_none_or(|d| std::time::Instant::now() < d)
        {
            let n = BLOCK.min(cfg.iterations - done);
            let active: Vec<bool> = cands.iter().map(|c| !c.cut).collect();
            let mut ended: Vec<Vec<Option<Ended>>> = (done..done + n)
                .into_par_iter()
                .map_init(
                    || (Generator::new(), StaticEval::new(self.leaves.clone())),
                    |(mg, bot), i| {
                        let deal = deal(&base, &unseen, opp_len, derive(cfg.seed, i), opponent);
                        let mut replies = Replies::default();
                        let mut reply =
                            |after: &Game, mg: &mut Generator| replies.reply(self.ctx, bot, &deal, after, mg);
                        cands
                            .iter()
                            .zip(&active)
                            .map(|(c, &on)| on.then(|| self.rollout(&deal, &c.mv, cfg.plies, me, bot, mg, &mut reply)))
                            .collect()
                    },
                )
                .collect();
            let results = self.score(&mut ended, me);
            for r in &results {
                for (c, x) in cands.iter_mut().zip(r) {
                    if let Some((w, e)) = *x {
                        c.win.add(w);
                        c.equity.add(e);
                    }
                }
            }
            done += n;
            progress(done);
            if let Some(level) = cfg.stop {
                cut(&mut cands, level.z());
            }
        }
        cands.sort_by(|a, b| {
            a.cut
                .cmp(&b.cut)
                .then(b.win.mean().total_cmp(&a.win.mean()))
                .then(b.equity.mean().total_cmp(&a.equity.mean()))
        });
        SimResult { candidates: cands, iterations: done }
    }

    /// The block's (win probability, equity) for player `me`: open rollouts valued by the net.
    fn score(&self, ended: &mut [Vec<Option<Ended>>], me: usize) -> Vec<Vec<Option<(f64, f64)>>> {
        if let Some(net) = &self.net {
            let mut open: Vec<&mut Ended> =
                ended.iter_mut().flatten().flatten().filter(|e| matches!(e, Ended::Open { .. })).collect();
            let mut frames = Vec::new();
            let mut unseen = Vec::new();
            for chunk in open.chunks_mut(NET_BATCH) {
                frames.clear();
                frames.resize(chunk.len() * FRAME_LEN, 0.0);
                for (e, frame) in chunk.iter().zip(frames.chunks_exact_mut(FRAME_LEN)) {
                    let Ended::Open { before, last, previous, .. } = &**e else { unreachable!("open rollouts only") };
                    let b = Before::of_game(before, &mut unseen, previous.as_ref());
                    let leave = self.leaves.as_deref().map_or(0.0, |k| k.value(&last.leave(b.rack)));
                    net.encoder.encode(self.ctx, &b, last, leave, frame);
                }
                // A net that loaded has the checked shapes; failing now is the machine (out of
                // memory, a lost GPU), which no move can answer.
                let values = net.valuer.lock().expect("rollout net").values(&frames);
                let values = values.unwrap_or_else(|e| panic!("the rollout net failed: {e}"));
                for (e, v) in chunk.iter_mut().zip(values) {
                    let Ended::Open { before, equity, .. } = &**e else { unreachable!("open rollouts only") };
                    let p = ((v as f64 + 1.0) / 2.0).clamp(0.0, 1.0);
                    **e = Ended::Scored(if before.on_turn == me { p } else { 1.0 - p }, *equity);
                }
            }
        }
        ended
            .iter()
            .map(|r| {
                r.iter()
                    .map(|e| match e {
                        Some(Ended::Scored(w, eq)) => Some((*w, *eq)),
                        Some(Ended::Open { .. }) => unreachable!("valued above"),
                        None => None,
                    })
                    .collect()
            })
            .collect()
    }

    /// Play `mv` and `plies` static replies on a copy of `deal`; (win probability, equity) for
    /// player `me`, or the open end for the net. `first_reply` answers the first ply (the
    /// position after `mv`): the static reply, found as cheaply as the caller can (`Replies`).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn rollout(
        &self,
        deal: &Game,
        mv: &Move,
        plies: usize,
        me: usize,
        bot: &StaticEval,
        mg: &mut Generator,
        first_reply: &mut dyn FnMut(&Game, &mut Generator) -> Move,
    ) -> Ended {
        let ctx = self.ctx;
        let mut g = deal.clone();
        let spread0 = g.scores[me] - g.scores[1 - me];
        // The net needs the position before the last play only: copied once, before it.
        let netted = self.net.is_some();
        let mut before = (netted && plies == 0).then(|| Box::new(g.clone()));
        let (mut last, mut previous) = (*mv, None);
        // The value of the tiles each player kept on their last play of the rollout: its
        // leave, before the draw refills the rack (a refilled rack has no leave value).
        let mut kept = [0.0; 2];
        let mut play = |g: &mut Game, m: &Move| {
            if let Some(k) = self.leaves.as_deref() {
                kept[g.on_turn] = k.value(&m.leave(&g.racks[g.on_turn])) as f64;
            }
            g.play(ctx, m);
        };
        play(&mut g, mv);
        for ply in 0..plies {
            if g.is_over() {
                break;
            }
            let m = if ply == 0 { first_reply(&g, mg) } else { bot.best_move(ctx, &g, mg) };
            if netted && ply + 1 == plies {
                before = Some(Box::new(g.clone()));
            }
            (previous, last) = (Some(last), m);
            play(&mut g, &m);
        }
        let spread = g.scores[me] - g.scores[1 - me];
        if g.is_over() {
            let win = match spread.cmp(&0) {
                std::cmp::Ordering::Greater => 1.0,
                std::cmp::Ordering::Equal => 0.5,
                std::cmp::Ordering::Less => 0.0,
            };
            return Ended::Scored(win, (spread - spread0) as f64);
        }
        let adjusted = spread as f64 + kept[me] - kept[1 - me];
        if let Some(before) = before {
            return Ended::Open { before, last, previous, equity: adjusted - spread0 as f64 };
        }
        // Unseen from the seat of whoever is to move: the bag and the other rack.
        let to_move = g.on_turn;
        let unseen = g.bag.len() + g.racks[1 - to_move].len();
        let s = adjusted.round() as i32;
        let win = if to_move == me { self.table.win_prob(s, unseen) } else { 1.0 - self.table.win_prob(-s, unseen) };
        Ended::Scored(win, adjusted - spread0 as f64)
    }
}

/// How many of the opponent's best moves on the iteration's board are kept for `Replies`.
const SHARED: usize = 8;

/// The opponent's static reply to each candidate of one iteration. Every candidate leaves the
/// opponent the same rack on a board that differs from the iteration's only in the lanes the
/// candidate changed (`Board::changed_lanes`), so one search of the iteration's board serves
/// them all: the best of its moves outside those lanes is still legal and scores the same,
/// and only the changed lanes are searched again, against it. The reply is exactly the static
/// bot's.
#[derive(Default)]
pub struct Replies {
    /// The opponent's leave values and best `SHARED` moves on the iteration's board, by
    /// whether exchanges are legal after the candidate.
    base: [Option<(RackLeaves, Vec<Move>)>; 2],
}

impl Replies {
    /// The static reply in `after`, which is `before` with one move of the other player made.
    pub fn reply(&mut self, ctx: Ctx, bot: &StaticEval, before: &Game, after: &Game, mg: &mut Generator) -> Move {
        let rack = &after.racks[after.on_turn];
        // The opening's adjustments, and the endgame's leave values, change with the move made.
        if before.board.is_empty()
            || after.bag.is_empty()
            || after.on_turn == before.on_turn
            || *rack != before.racks[after.on_turn]
        {
            return bot.best_move(ctx, after, mg);
        }
        let exchange = after.bag.len() >= crate::game::MIN_BAG_TO_EXCHANGE;
        let (leaves, best) = self.base[exchange as usize].get_or_insert_with(|| {
            let leaves = bot.rack_leaves(ctx, after);
            let req =
                crate::movegen::Request { board: &before.board, ..request(after, &leaves, OPENING_VOWEL_PENALTY) };
            let best = mg.generate(ctx, &req, Mode::Best(SHARED)).to_vec();
            (leaves, best)
        });
        let lanes = after.board.changed_lanes(&before.board);
        let known = match best
            .iter()
            .find(|m| m.kind != Kind::Place || lanes >> (m.dir as usize * DIM + m.lane as usize) & 1 == 0)
        {
            Some(m) => (m.kind == Kind::Place).then_some(*m),
            // Every kept move is in a changed lane: the best elsewhere is unknown, unless the
            // list was complete.
            None if best.len() == SHARED => return bot.best_move(ctx, after, mg),
            None => None,
        };
        mg.generate_lanes(ctx, &request(after, leaves, OPENING_VOWEL_PENALTY), Mode::Best(1), lanes, known)[0]
    }
}

/// What the simulating player knows of the opponent's rack.
#[derive(Clone, Debug, Default)]
pub enum Opponent {
    /// Nothing: their rack is drawn from the unseen tiles.
    #[default]
    Unknown,
    /// These tiles are on it (an oracle's knowledge); the rest is drawn.
    Holds(Vec<u8>),
    /// Inferred leaves (sorted tiles) with weights summing to 1: with probability `alpha` an
    /// iteration draws the leave by weight and the rest of the rack at random; otherwise the
    /// whole rack at random.
    Inferred { leaves: Vec<(Vec<u8>, f64)>, alpha: f64 },
}

/// The position with the unseen tiles dealt at random: an opponent rack and a bag order.
fn deal(base: &Game, unseen: &[u8], opp_len: usize, seed: u64, opponent: &Opponent) -> Game {
    let known: &[u8] = match opponent {
        Opponent::Unknown => &[],
        Opponent::Holds(tiles) => tiles,
        Opponent::Inferred { leaves, alpha } => {
            // A stream of its own, so that the draws below match `Unknown`'s when nothing is known.
            let mut rng = Rng::new(derive(seed, 2));
            if rng.unit() < *alpha {
                let mut x = rng.unit();
                leaves
                    .iter()
                    .find(|(_, w)| {
                        x -= w;
                        x < 0.0
                    })
                    .or(leaves.last())
                    .map_or(&[], |(l, _)| l)
            } else {
                &[]
            }
        }
    };
    let mut tiles = unseen.to_vec();
    for &t in known {
        match tiles.iter().position(|&x| x == t) {
            Some(k) => {
                tiles.remove(k);
            }
            // Not among the unseen tiles: the knowledge is wrong, so it is not used.
            None => return deal(base, unseen, opp_len, seed, &Opponent::Unknown),
        }
    }
    Rng::new(seed).shuffle(&mut tiles);
    dealt(base, &tiles, known, opp_len, seed)
}

/// `base` with the opponent's rack made of `known` and the first of `tiles` (shuffled
/// already) up to `opp_len`, and the rest of `tiles` as the bag, whose own draws use `seed`.
pub(crate) fn dealt(base: &Game, tiles: &[u8], known: &[u8], opp_len: usize, seed: u64) -> Game {
    let mut g = base.clone();
    let me = g.on_turn;
    let drawn = opp_len.saturating_sub(known.len());
    let mut rack = known.to_vec();
    rack.extend_from_slice(&tiles[..drawn]);
    g.racks[1 - me] = rack;
    g.bag = Bag::from_tiles(tiles[drawn..].to_vec(), derive(seed, 1));
    g
}

/// Cut every candidate whose win% upper bound is below the leader's lower bound.
fn cut(cands: &mut [Candidate], z: f64) {
    let Some(leader) = cands
        .iter()
        .filter(|c| !c.cut)
        .max_by(|a, b| a.win.mean().total_cmp(&b.win.mean()).then(a.equity.mean().total_cmp(&b.equity.mean())))
    else {
        return;
    };
    let floor = leader.win.mean() - z * leader.win.stderr();
    let leader_mv = leader.mv;
    for c in cands.iter_mut().filter(|c| !c.cut && c.mv != leader_mv) {
        if c.win.mean() + z * c.win.stderr() < floor {
            c.cut = true;
        }
    }
}
