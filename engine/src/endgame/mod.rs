//! Exhaustive endgame solving: with the bag empty both racks are known, and the game is solved
//! by negamax with alpha-beta over (board, both racks, side to move, scoreless turns).
//!
//! - Iterative deepening by two plies at a time (1, 3, 5, ... or 1, 2, 4, ... to an even
//!   limit), so that every horizon falls after the same side's move; each depth is searched
//!   with an aspiration window around the last value, and the table's best move is tried
//!   first, so the previous depth orders the next.
//! - Move ordering: going out first (score + twice the opponent's rack), then by score, with
//!   more tiles favoured below the first two plies. A cut node two plies above the horizon
//!   without a table move tries a killer first (a placement that refuted a recent node at its
//!   ply, where it is still legal and scores the same), found without listing a lane.
//! - A transposition table ([`tt::Table`]) keyed by Zobrist hashes stores values *without* the
//!   spread at the node, so a position reached with different scores shares its entry.
//! - A search that never met the depth horizon is exact; entries from such searches are marked
//!   solved and used at any depth. Deepening stops once the root is solved.
//! - One ply above the horizon, a node's value is the spread after its mover's best move by
//!   worth ([`plays`]). Where a null window only asks whether that value reaches beta and the
//!   parent is an all-node, the lanes the last move left alone are asked first, from the
//!   parent's board: often one of them holds a good enough move, and the move is never made
//!   on the board. Where no move can be worth enough to reach alpha, which bounds on the
//!   lanes the memo lacks show without generating them, the node fails low at once. Below a
//!   cut node such a node is new at its depth nearly always, and the table is neither asked
//!   nor told about it: its slot would cost a miss and evict a deeper entry. The lanes
//!   that the last two moves left alone are bounded by what they were worth to the same mover
//!   two plies up, whose rack held these tiles and more, with no look into the memo.
//! - Higher up, a node below an all-node whose mover can go out, for enough, in a lane the
//!   last move left alone fails high at once, from the parent's board: the game's end is exact
//!   at any depth. Its mover's ways out, lane by lane, are found once for all its siblings.
//! - Each thread keeps one board, making each move on it on the way down and taking it back on
//!   the way up (`Board::place_with` keeping an undo list): nodes are boardless (`Node`), and
//!   no board is copied.
//! - Threads share out the root's moves (`RootJob`): an endgame root has hundreds or
//!   thousands of moves, none holding more than a few percent of the search, so each thread
//!   takes the next move not yet taken. They share the table. The best move is the first in
//!   the root's order among those of the best value, whichever thread finds it, as on one
//!   thread; an exact value never depends on the number of threads. The first move, searched
//!   with the full window, can be most of a depth's work: a thread left without moves then
//!   searches that move's later replies for the table, ahead of the thread searching it.
//!
//! Rules are the game's ([`crate::game`]): going out scores twice the opponent's rack; six
//! scoreless turns in a row end the game with each rack's value taken from its owner.
//!
//! # Design notes
//!
//! the exact endgame solver (`Solver`): negamax with alpha-beta (principal variation search,
//! fail-soft), iterative deepening two plies at a time (every horizon after the same side's move:
//! values alternate with its parity) with aspiration windows, Zobrist keys over squares x tiles,
//! each player's tile counts, side to move and scoreless turns. Invariants: a stored value excludes
//! the spread at its node (re-added on read), so it holds for any score so far; an entry is
//! *solved* only when every line under it reached the game's end, and only solved entries are used
//! at depths other than their own; a search that met no horizon is exact, which is how deepening
//! knows to stop. Frontier nodes (one ply above the horizon) are valued without building their
//! children: spread, less the rack each side keeps, and when exactly one side holds tiles no play
//! on that board places (judged there, from the memo's per-lane tile masks), those tiles once more
//! against it, since the other side is the one to go out. A frontier child of an all-node (every
//! move expected to fail; below the root's moves, null-window nodes alternate cut and all by ply)
//! is first judged from the lanes the last move left alone (`Board::touched_by` names the others
//! without placing), on the parent's board: a good enough move there, with the stuck-tile term at
//! its least, is a lower bound, and the move is never made on the board. Such bounds go into the
//! table only where they evict nothing, and without their move. Higher up, a child of an all-node
//! whose mover can go out, for enough, in a lane the last move left alone fails high the same way
//! (the game's end is exact, so the bound is solved); the mover's ways out, lane by lane, are found
//! once per parent (`Plays::outs`). A frontier value that fails low even with the stuck-tile term
//! at its most is returned as an upper bound without asking what the opponent can play; and where
//! no move can be worth enough (score plus the tiles' face value) to reach alpha, the node fails
//! low without generating the lanes the memo lacks: each is bounded first by `plays::quick_bound`
//! (one pass over the lane: all its tiles, the rack's faces on its best letter premium, all its
//! word premiums, a cross-word wherever one could be made) and, where that is over the cap, by
//! `plays::worth_bound` (windows of empty squares, cross-sets against the rack's letters, best
//! faces on best multipliers; neither looks up a word). The bound is kept in the lane's slot,
//! marked so that the calls that need the plays take it for missing; a quick bound read back over a
//! lower cap is replaced by the windows' bound. A node three plies above the horizon that lists its
//! moves keeps what its mover's plays are worth in each lane (`Plays::lane_worths`); two plies
//! down, at the frontier, the same mover holds part of that rack, so the lanes that neither move in
//! between changed are bounded by those worths, and only the changed lanes are read from the memo
//! (or bounded). Invariant: a frontier node's grandparent's worths bound its lanes only while its
//! mover's rack is part of the grandparent's and the lane's key is unchanged, which the search's
//! make/unmake order guarantees (`Search::changed` holds each ply's changed lanes). Nodes are
//! boardless (`Node`): each thread keeps one board and makes each move on it going down, taking it
//! back coming up (`Board::place_with` keeping an undo list of the squares' old states and lane
//! keys, and `unplace`); invariant: between two searches a thread's board is the root's. A child is
//! looked up in the table (its slot prefetched while the sibling before it is searched) before its
//! move is made, except a cut node's frontier child: new at its depth nearly always, it is neither
//! looked up nor stored. The table's move (its fingerprint names its lane) is tried before the
//! other moves are listed; failing one, the move the order puts first (`Plays::lead`, from each
//! lane's best by that order), so that a cut node lists nothing. A cut node two plies above the
//! horizon tries a killer before the lead: one of the last two placements that refuted a node at
//! that ply, if its lane's key is what it was then and the mover holds its tiles (then it is legal
//! and scores the same). Refuted by a killer, the node looks at no lane's plays; the killer is not
//! stored as its table move, since at the next depth the lead orders better. Killers change which
//! nodes are searched, never a value. `plays` is the per-thread play memo: a lane's plays depend
//! only on the lane's key and the rack, so each (lane, rack) is generated once and then copied,
//! with each lane's best play for frontier nodes; a frontier child's slots are prefetched before
//! its move is made (a new rack after each sibling's move puts them all out of cache), and those of
//! the lanes the move changed again, with their new keys, once it is. The calls that want only the
//! best plays (`best`, `lead`) fold each lane's summary into their answer where they read its slot,
//! and generate the lanes missing after; ties go to the lower lane, as a scan in order would have
//! it. Its direct-mapped index doubles as its plays fill it, up to about the transposition table's
//! size a thread, and then starts afresh, only ever before a call reads a lane. Invariant: a
//! position's move list is the same whatever the memo held (lanes in order, generation order within
//! a lane), so searches are repeatable. With more than one thread, each root search is a `RootJob`:
//! every thread takes the next root move not yet taken and searches it against the best value found
//! so far (one point lower for moves before the best in order, so that the first of equal moves
//! wins, as on one thread), sharing the table; the main thread does depth 1 alone, waits for the
//! others, stores the root's entry and deepens. A thread that finds no move left while the first
//! (the full-window one, often most of the work) is still searched warms the table for it
//! (`Search::warm`): that move's replies from the last back, with the null window the searching
//! thread will use. An exact solve's value never depends on the thread count; a solve cut by its
//! ply or time limit can (the threads fill the table differently), and so can any solve under a
//! time limit. `stuck` names the rack tiles no play can place (the target class of endgames is
//! without them). `tt` is the lockless table (two atomics per entry, `key ^ data` and `data`: a
//! torn read is a miss); `peg` the one-tile-in-the-bag pre-endgame; `sets` seeded endgame positions
//! from self-play. The table and the memo's index are `memory::Zeroed` arrays; a solve's table is
//! sized to its tiles, so that a small endgame touches few pages (`Solver::table_for`).

pub mod peg;
mod plays;
pub mod sets;
pub mod tt;

use crate::board::{ACROSS, Board, CrossMemo, DIM, Saved};
use crate::game::{Game, MAX_SCORELESS_TURNS};
use crate::movegen::{ALL_LANES, Ctx, Generator};
use crate::moves::{Kind, Move};
use crate::rng::{Rng, mix};
use crate::tiles::RACK_SIZE;
use crate::tiles::{BLANK_BIT, letter_of};
use plays::{LANES, Outs, Plays};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};
use thiserror::Error;
use tt::{Bound, Entry, Table};

/// Beyond any reachable spread.
const INF: i32 = 30_000;
/// Deepest iteration. Odd: a search without a depth limit deepens through odd depths (see
/// `next_depth`).
const MAX_DEPTH: u8 = 249;
/// Nodes between clock and stop-flag checks.
const CHECK_EVERY: u64 = 1024;
/// Half-width of the aspiration window around the previous depth's value, in points.
const ASPIRATION: i32 = 8;

#[derive(Clone, Debug)]
pub struct Options {
    /// Deepest iteration; `None`: until solved (or out of time).
    pub plies: Option<u8>,
    pub threads: usize,
    /// Stop deepening after this long and answer from the last complete depth.
    pub time_limit: Option<Duration>,
    /// Only decide win, draw or loss: every depth searches the window (-1, 1), so the value
    /// is exact only when it is 0, and otherwise just has the right sign.
    pub win_only: bool,
    /// Also give the exact value of this many first moves (the best ones by the search order).
    pub first_moves: usize,
}

/// The tiles of `rack` that no play on `board` can place (blanks as 0), each once: the
/// stuck tiles that make an endgame a different, harder problem (the side holding them can
/// never go out).
pub fn stuck(ctx: Ctx, board: &Board, rack: &[u8]) -> Vec<u8> {
    let leaves = crate::leaves::RackLeaves::new(rack, |_| 0);
    let req = crate::movegen::Request { board, rack, leaves: &leaves, can_exchange: false, opening_vowel_penalty: 0 };
    let mut playable = 0u64;
    for m in Generator::new().generate(ctx, &req, crate::movegen::Mode::All) {
        playable |= m.rack_tiles().fold(0, |set, t| set | 1 << t);
    }
    let mut out: Vec<u8> = rack.iter().copied().filter(|&t| playable & 1 << t == 0).collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// The face value of the tiles of `rack` that no play places (`used`: bit `t` for each tile
/// `t` some play places), or `None` when every tile can be played.
fn stuck_value(dist: &crate::tiles::Distribution, rack: &Rack, used: u64) -> Option<i32> {
    let stuck = rack.tiles().iter().filter(|&&t| used & 1 << t == 0);
    stuck.clone().next().map(|_| stuck.map(|&t| dist.score(t)).sum())
}

impl Default for Options {
    fn default() -> Self {
        Self { plies: None, threads: 1, time_limit: None, win_only: false, first_moves: 0 }
    }
}

/// One completed depth, for progress lines.
#[derive(Clone, Debug)]
pub struct Depth {
    pub depth: u8,
    pub value: i32,
    pub best: Move,
    pub nodes: u64,
    pub elapsed: Duration,
}

#[derive(Clone, Debug)]
pub struct Solution {
    /// Final spread from the view of the player on turn (their score minus the other's,
    /// scores so far included). With `win_only` a bound with the right sign.
    pub value: i32,
    /// The search reached the end of the game on every line it needed: `value` is the
    /// game-theoretic value (the sign only, with `win_only`, unless it is 0).
    pub exact: bool,
    /// The best sequence from the root; when exact it is played to the end of the game.
    pub pv: Vec<Move>,
    /// Deepest completed iteration.
    pub depth: u8,
    /// Nodes searched by all threads.
    pub nodes: u64,
    pub elapsed: Duration,
    /// (move, value) for `Options::first_moves` first moves, best first.
    pub first_moves: Vec<(Move, i32)>,
}

#[derive(Debug, Error, PartialEq)]
pub enum EndgameError {
    #[error("the bag holds {0} tiles; an endgame needs it empty")]
    BagNotEmpty(usize),
    #[error("the game is already over")]
    GameOver,
    #[error("a rack is empty: the game is already over")]
    EmptyRack,
}

/// Zobrist keys: squares x board tiles (letter, or letter as a blank), each player's count of
/// each tile kind, the side to move, the scoreless-turn count.
struct Keys {
    square: Vec<[u64; 128]>,
    rack: [[[u64; RACK_SIZE + 1]; 64]; 2],
    side: u64,
    scoreless: [u64; MAX_SCORELESS_TURNS as usize + 1],
}

impl Keys {
    fn new() -> Self {
        let mut rng = Rng::new(0x1e_7a11_5eed);
        let square = (0..DIM * DIM).map(|_| std::array::from_fn(|_| rng.next_u64())).collect();
        // Count 0 contributes nothing, so a tile kind absent from a rack needs no key.
        let rack = std::array::from_fn(|_| {
            std::array::from_fn(|_| std::array::from_fn(|c| if c == 0 { 0 } else { rng.next_u64() }))
        });
        let side = rng.next_u64();
        let scoreless = std::array::from_fn(|_| rng.next_u64());
        Self { square, rack, side, scoreless }
    }

    #[inline]
    fn tile(&self, sq: usize, tile: u8) -> u64 {
        let code = letter_of(tile) as usize | if tile & BLANK_BIT != 0 { 64 } else { 0 };
        self.square[sq][code]
    }
}

#[derive(Clone, Copy, Debug)]
struct Rack {
    tiles: [u8; RACK_SIZE],
    len: u8,
    /// Sum of the tiles' face values.
    value: i32,
}

impl Rack {
    fn tiles(&self) -> &[u8] {
        &self.tiles[..self.len as usize]
    }
    fn count(&self, t: u8) -> usize {
        self.tiles().iter().filter(|&&x| x == t).count()
    }
    /// Take one tile `t` off the rack (its face value stays counted); whether it held one.
    fn take(&mut self, t: u8) -> bool {
        let Some(i) = self.tiles().iter().position(|&x| x == t) else { return false };
        self.tiles[i] = self.tiles[self.len as usize - 1];
        self.len -= 1;
        true
    }
    /// Whether the rack holds every tile `mv` plays from a rack.
    fn holds(&self, mv: &Move) -> bool {
        let mut left = *self;
        mv.rack_tiles().all(|t| left.take(t))
    }
}

/// A placement that refuted a node at some ply, and the key its lane had there: tried first at
/// the next node of that ply whose lane is the same and whose mover holds its tiles, where it
/// is legal and scores the same. Siblings differ in a few lanes only, and one reply refutes
/// most of them: the reply is found without listing any lane's plays.
#[derive(Clone, Copy)]
struct Killer {
    mv: Move,
    lane_key: u64,
}

impl Killer {
    /// The killer, if `rack` may play it on `board`: its lane is as it was, and the rack holds
    /// its tiles.
    fn fits(&self, board: &Board, rack: &Rack) -> Option<Move> {
        (board.lane_key(self.mv.dir(), self.mv.lane as usize) == self.lane_key && rack.holds(&self.mv))
            .then_some(self.mv)
    }
}

/// A position of the search but its board, which the searching thread keeps (`Search::board`,
/// made and unmade move by move): everything else that decides the rest of the game, plus the
/// spread so far (kept out of the hash).
#[derive(Clone, Copy)]
struct Node {
    racks: [Rack; 2],
    mover: usize,
    /// The mover's score minus the other's.
    spread: i32,
    scoreless: u8,
    hash: u64,
}

/// What a move leads to.
enum Next {
    /// The game ended: the final spread from the view of the player who moved.
    Over(i32),
    /// The next position (its board not yet made: see `Search::make`).
    Go(Node),
}

/// What entering a node found.
enum Enter {
    /// Its value without a search (the table, or the clock ran out).
    Done(i32, bool),
    /// It must be searched; the table's move for it, or 0.
    Search(u32),
}

/// A 24-bit fingerprint of a move, to find the table's best move again: the low five bits are
/// its lane (`dir * DIM + lane`; 31 for a pass), the rest a hash, and it is never 0.
pub(crate) fn fingerprint(m: &Move) -> u32 {
    let lane = if m.kind == Kind::Place { m.dir as u32 * DIM as u32 + m.lane as u32 } else { 31 };
    let mut h =
        (m.kind as u64) << 40 | (m.dir as u64) << 32 | (m.lane as u64) << 24 | (m.start as u64) << 16 | m.len as u64;
    for chunk in m.tiles.chunks(8) {
        let mut w = 0u64;
        for &b in chunk {
            w = w << 8 | b as u64;
        }
        h = mix(h ^ w);
    }
    (mix(h) as u32 & 0x7F_FFE0) | 0x80_0000 | lane
}

/// The solver: its table persists across solves (entries are keyed by the whole position, so
/// what one solve learns is true in the next, e.g. the next move of the same endgame). The
/// table is sized to the endgames it meets, up to its limit: a solve of few tiles gets a small
/// one, since every page a search touches first costs the kernel a zeroing (a 2 MiB one on huge
/// pages), which decided a small solve's time in a fresh process.
pub struct Solver {
    table: Mutex<Arc<Table>>,
    max_bytes: usize,
    keys: Keys,
}

/// The table a solve of `tiles` tiles (both racks) needs: four times more per tile, 1 MiB at
/// three tiles, the limit from seven.
fn table_bytes_for(tiles: usize) -> usize {
    (16 << 10) << (2 * tiles.min(12))
}

/// What every search thread shares.
struct Shared<'s> {
    ctx: Ctx<'s>,
    table: &'s Table,
    keys: &'s Keys,
    stop: AtomicBool,
    deadline: Option<Instant>,
    nodes: AtomicU64,
    /// The root search the main thread has put out for the helpers, by number: a helper
    /// joins each new one once.
    job: Mutex<(u64, Option<Arc<RootJob>>)>,
    new_job: Condvar,
}

/// One search of the root (a depth and a window), its moves shared out between threads.
struct RootJob {
    depth: u8,
    /// The window.
    alpha: i32,
    beta: i32,
    /// In search order: the table's move first.
    moves: Vec<Move>,
    /// The value the window is centred on (the last iteration's), if it is a narrow one.
    guess: Option<i32>,
    state: Mutex<RootState>,
    finished: Condvar,
}

/// How a root search stands.
struct RootState {
    /// Moves taken so far, and being searched now.
    next: usize,
    busy: usize,
    /// Highest value found (fail-soft) and the first move in order giving it; the window's
    /// lower edge raised to the best exact value, and the move of that value (the first in
    /// order among equals) with its line.
    best: i32,
    highest_at: usize,
    alpha: i32,
    best_at: Option<usize>,
    pv: Vec<Move>,
    horizon: bool,
    /// A move reached beta: no more moves are taken.
    cut: bool,
    /// The first move, searched in full, is being searched.
    first_busy: bool,
}

impl RootJob {
    fn done(st: &RootState, n: usize) -> bool {
        (st.next >= n || st.cut) && st.busy == 0
    }

    fn state(&self) -> std::sync::MutexGuard<'_, RootState> {
        // A thread that panicked holding it leaves counts, not broken invariants: the solve
        // panics once the threads are joined anyway.
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Ends the helpers' wait for root searches when the main thread is done, or unwinds.
struct Dismiss<'a, 's>(&'a Shared<'s>);

impl Drop for Dismiss<'_, '_> {
    fn drop(&mut self) {
        self.0.stop.store(true, Relaxed);
        self.0.job.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).0 += 1;
        self.0.new_job.notify_all();
    }
}

/// A root move a thread has taken: if the thread unwinds before handing its value in, the
/// root search is cut short, so that no thread waits for the move forever.
struct Taken<'a>(&'a RootJob);

impl Drop for Taken<'_> {
    fn drop(&mut self) {
        let mut st = self.0.state();
        st.busy -= 1;
        st.cut = true;
        self.0.finished.notify_all();
    }
}

impl Solver {
    /// A solver whose transposition table takes at most `table_bytes`.
    pub fn new(table_bytes: usize) -> Self {
        let first = Table::with_bytes(table_bytes_for(0).min(table_bytes));
        Self { table: Mutex::new(Arc::new(first)), max_bytes: table_bytes, keys: Keys::new() }
    }

    /// The table's size now.
    pub fn table_bytes(&self) -> usize {
        self.table().bytes()
    }

    fn table(&self) -> Arc<Table> {
        self.table.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).clone()
    }

    /// The table for a solve of `tiles` tiles: the one there is, or a bigger one (empty) when
    /// the position needs more than it holds.
    fn table_for(&self, tiles: usize) -> Arc<Table> {
        let want = table_bytes_for(tiles).min(self.max_bytes);
        let mut table = self.table.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if Table::entries_in(want) > table.entries() {
            *table = Arc::new(Table::with_bytes(want));
        }
        table.clone()
    }

    /// Forget every stored result.
    pub fn clear(&self) {
        self.table().clear();
    }

    fn root(&self, ctx: Ctx, game: &Game) -> Result<Node, EndgameError> {
        if !game.bag.is_empty() {
            return Err(EndgameError::BagNotEmpty(game.bag.len()));
        }
        if game.is_over() || game.scoreless >= MAX_SCORELESS_TURNS {
            return Err(EndgameError::GameOver);
        }
        if game.racks.iter().any(|r| r.is_empty()) {
            return Err(EndgameError::EmptyRack);
        }
        let me = game.on_turn;
        let rack = |p: usize| {
            let r = &game.racks[p];
            let mut tiles = [0u8; RACK_SIZE];
            tiles[..r.len()].copy_from_slice(r);
            Rack { tiles, len: r.len() as u8, value: Game::rack_value(ctx.dist, r) }
        };
        let racks = [rack(me), rack(1 - me)];
        let mut hash = self.keys.scoreless[game.scoreless as usize];
        for (row, tiles) in game.board.rows().enumerate() {
            for (col, &t) in tiles.iter().enumerate() {
                if t != 0 {
                    hash ^= self.keys.tile(row * DIM + col, t);
                }
            }
        }
        for (p, r) in racks.iter().enumerate() {
            for t in 0..64u8 {
                hash ^= self.keys.rack[p][t as usize][r.count(t)];
            }
        }
        let spread = game.scores[me] - game.scores[1 - me];
        Ok(Node { racks, mover: 0, spread, scoreless: game.scoreless, hash })
    }

    /// Solve the endgame of `game` (the bag must be empty) for the player on turn. `progress`
    /// hears each completed depth of the main thread.
    pub fn solve(
        &self,
        ctx: Ctx,
        game: &Game,
        opts: &Options,
        progress: &(dyn Fn(&Depth) + Sync),
    ) -> Result<Solution, EndgameError> {
        let root = self.root(ctx, game)?;
        let start = Instant::now();
        let threads = opts.threads.max(1);
        let table = self.table_for(game.racks[0].len() + game.racks[1].len());
        let shared = Shared {
            ctx,
            table: &table,
            keys: &self.keys,
            stop: AtomicBool::new(false),
            deadline: opts.time_limit.map(|t| start + t),
            nodes: AtomicU64::new(0),
            job: Mutex::new((0, None)),
            new_job: Condvar::new(),
        };
        let max_depth = opts.plies.unwrap_or(MAX_DEPTH).clamp(1, MAX_DEPTH);
        let (mut sol, mut main) = std::thread::scope(|s| {
            for _ in 1..threads {
                let (shared, root) = (&shared, &root);
                s.spawn(move || {
                    let mut helper = Search::new(shared, &game.board);
                    helper.help(root);
                    helper.flush_nodes();
                });
            }
            let dismiss = Dismiss(&shared);
            let mut main = Search::new(&shared, &game.board);
            main.split = threads > 1;
            let sol = main.deepen(&root, max_depth, opts.win_only, &|d| progress(d));
            main.split = false;
            drop(dismiss);
            (sol, main)
        });
        shared.stop.store(false, Relaxed);
        let mut iteration = sol.take().expect("depth 1 always completes");
        if iteration.exact && !opts.win_only {
            main.complete_pv(&root, &mut iteration.pv);
        }
        // Under a time limit that has run out, these come from depth-limited searches.
        main.stopped = false;
        let first_moves =
            if opts.first_moves > 0 { main.first_moves(&root, opts.first_moves, max_depth) } else { Vec::new() };
        main.flush_nodes();
        Ok(Solution {
            value: iteration.value,
            exact: iteration.exact,
            pv: iteration.pv,
            depth: iteration.depth,
            nodes: shared.nodes.load(Relaxed),
            elapsed: start.elapsed(),
            first_moves,
        })
    }
}

/// The iteration after `depth` on the way to `max_depth`: two plies deeper, after a first step
/// of one where the limit's parity asks for it. A horizon value favours the side that moves
/// last (the other has no reply), so values alternate with the parity of the depth, and the
/// best moves with them: an iteration orders the one two plies deeper far better than the one
/// next to it. At 7 plies, deepening 1, 3, 5, 7 searches 24% fewer nodes on the benchmark set
/// than 1, 2, ..., 7 (38% fewer on line 35, its slowest) for the same values.
fn next_depth(depth: u8, max_depth: u8) -> u8 {
    if (max_depth - depth) % 2 == 1 { depth + 1 } else { depth + 2 }
}

/// The lanes of `board` whose plays `mv` may change (`Board::touched_by`), without making it.
fn touched_by(board: &Board, mv: &Move) -> u32 {
    match mv.kind {
        Kind::Place => board.touched_by(mv.dir(), mv.lane as usize, mv.start as usize, mv.tiles()),
        _ => 0,
    }
}

/// The result of one completed iteration.
struct Iteration {
    value: i32,
    exact: bool,
    pv: Vec<Move>,
    depth: u8,
}

/// One thread's search state.
struct Search<'s> {
    sh: &'s Shared<'s>,
    mg: Generator,
    plays: Plays,
    cross: CrossMemo<'s>,
    /// Move lists by ply: (ordering estimate, move).
    moves: Vec<Vec<(i32, Move)>>,
    /// Triangular principal variation: `pv[ply]` is the best line found from that ply.
    pv: Vec<Vec<Move>>,
    nodes: u64,
    /// Helpers are waiting for the root's moves (the main thread, while `solve` runs them).
    split: bool,
    /// The clock ran out or the main thread finished: results from now on are discarded.
    stopped: bool,
    /// The main thread ignores the clock until depth 1 is done.
    must_finish: bool,
    /// The board of the node being searched: moves are made on it going down the tree and
    /// taken back coming up, which costs far less than a 5 KB copy per node.
    board: Board,
    /// What the moves made on `board` overwrote (`Board::place_with`).
    undo: Vec<Saved>,
    /// By ply: the lanes the move into the node searched there changed.
    changed: [u32; MAX_DEPTH as usize + 2],
    /// By ply, at a node three plies above the horizon: how much its mover's plays are worth
    /// in each lane, as far as the memo knows (`Plays::lane_worths`). Two plies down the
    /// same mover holds part of that rack, and the lanes neither move between changed still
    /// bound its plays, with no look into the memo.
    worths: Vec<Option<[i32; LANES]>>,
    /// By ply: the next mover's best way out in each lane of the board there, found for the
    /// first child that asks (`goes_out_high`) and forgotten when the ply's next node starts.
    outs: Vec<Option<Outs>>,
    /// By ply: the last two placements that refuted a node there two plies above the horizon,
    /// latest first.
    killers: Vec<[Option<Killer>; 2]>,
}

impl<'s> Search<'s> {
    /// A thread's search from a position whose board is `board`.
    fn new(sh: &'s Shared<'s>, board: &Board) -> Self {
        Self {
            sh,
            mg: Generator::new(),
            plays: Plays::new(sh.table.bytes()),
            cross: CrossMemo::new(sh.ctx.kwg),
            moves: Vec::new(),
            pv: Vec::new(),
            nodes: 0,
            split: false,
            stopped: false,
            must_finish: false,
            board: board.clone(),
            undo: Vec::new(),
            changed: [0; MAX_DEPTH as usize + 2],
            worths: Vec::new(),
            outs: Vec::new(),
            killers: Vec::new(),
        }
    }

    fn flush_nodes(&mut self) {
        self.sh.nodes.fetch_add(self.nodes % CHECK_EVERY, Relaxed);
        self.nodes -= self.nodes % CHECK_EVERY;
    }

    /// Iterative deepening from `root` until it is solved, `max_depth` or the stop flag; the
    /// last completed iteration.
    fn deepen(&mut self, root: &Node, max_depth: u8, win_only: bool, progress: &dyn Fn(&Depth)) -> Option<Iteration> {
        let start = Instant::now();
        let mut last: Option<Iteration> = None;
        let mut depth = 1;
        while depth <= max_depth {
            self.must_finish = last.is_none();
            let (mut alpha, mut beta) = match &last {
                _ if win_only => (-1, 1),
                Some(it) => (it.value - ASPIRATION, it.value + ASPIRATION),
                None => (-INF, INF),
            };
            let (value, horizon) = loop {
                // Depth 1 is the main thread's alone: it must finish whatever the clock says.
                let (v, h) = if self.split && !self.must_finish {
                    self.split_root(root, depth, alpha, beta)
                } else {
                    self.search(root, depth, 0, alpha, beta)
                };
                if self.stopped {
                    return last;
                }
                if !win_only && v <= alpha && alpha > -INF {
                    alpha = -INF;
                } else if !win_only && v >= beta && beta < INF {
                    beta = INF;
                } else {
                    break (v, h);
                }
            };
            let pv = self.pv.first().cloned().unwrap_or_default();
            let best = pv.first().copied().unwrap_or(Move::PASS);
            progress(&Depth {
                depth,
                value,
                best,
                nodes: self.sh.nodes.load(Relaxed) + self.nodes % CHECK_EVERY,
                elapsed: start.elapsed(),
            });
            last = Some(Iteration { value, exact: !horizon, pv, depth });
            if !horizon {
                break;
            }
            depth = next_depth(depth, max_depth);
        }
        last
    }

    /// The main thread's `search` of the root with the helpers: the root's moves in order,
    /// put out as a job that every thread takes moves from.
    fn split_root(&mut self, root: &Node, depth: u8, alpha: i32, beta: i32) -> (i32, bool) {
        self.count_node();
        let state = RootState {
            next: 0,
            busy: 0,
            best: -INF,
            highest_at: 0,
            alpha,
            best_at: None,
            pv: Vec::new(),
            horizon: false,
            cut: false,
            first_busy: false,
        };
        let moves = self.root_moves(root).into_iter().map(|(_, m)| m).collect();
        let guess = (alpha > -INF && beta < INF).then(|| (alpha + beta) / 2);
        let job =
            Arc::new(RootJob { depth, alpha, beta, moves, guess, state: Mutex::new(state), finished: Condvar::new() });
        {
            let mut slot = self.sh.job.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            *slot = (slot.0 + 1, Some(job.clone()));
        }
        self.sh.new_job.notify_all();
        self.work(root, &job);
        let mut st = job.state();
        while !RootJob::done(&st, job.moves.len()) {
            st = job.finished.wait(st).unwrap_or_else(|poisoned| poisoned.into_inner());
        }
        // A helper stopped by the clock left its move unsearched.
        if self.sh.stop.load(Relaxed) {
            self.stopped = true;
            return (0, true);
        }
        self.pv.resize_with(self.pv.len().max(2), Vec::new);
        self.pv[0] = std::mem::take(&mut st.pv);
        // As on one thread: the best move, or failing low the one that came closest.
        let best_fp = job.moves.get(st.best_at.unwrap_or(st.highest_at)).map_or(0, fingerprint);
        self.store(root, depth, (alpha, beta), st.best, st.horizon, best_fp);
        (st.best, st.horizon)
    }

    /// A helper thread: take moves from each root search the main thread puts out, until it
    /// says the search is over.
    fn help(&mut self, root: &Node) {
        let mut seen = 0;
        loop {
            let job = {
                let mut slot = self.sh.job.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
                while slot.0 == seen {
                    slot = self.sh.new_job.wait(slot).unwrap_or_else(|poisoned| poisoned.into_inner());
                }
                seen = slot.0;
                slot.1.clone()
            };
            if self.sh.stop.load(Relaxed) {
                return;
            }
            if let Some(job) = job {
                self.work(root, &job);
            }
        }
    }

    /// Search root moves of `job` until none is left: each with a null window at the best
    /// value found so far (one point lower for moves before the best in order, so that the
    /// first of equal moves wins), searched again in full when it does better.
    fn work(&mut self, root: &Node, job: &RootJob) {
        let n = job.moves.len();
        if let Some(outs) = self.outs.first_mut() {
            *outs = None;
        }
        loop {
            let (i, alpha, best_at) = {
                let mut st = job.state();
                if st.cut {
                    return;
                }
                if st.next >= n {
                    let warm = st.first_busy;
                    drop(st);
                    if warm {
                        self.warm(root, job);
                    }
                    return;
                }
                st.next += 1;
                st.busy += 1;
                st.first_busy |= st.next == 1;
                (st.next - 1, st.alpha, st.best_at)
            };
            let taken = Taken(job);
            let mv = job.moves[i];
            let before_best = |at: Option<usize>| at.is_some_and(|b| i < b);
            let floor = |alpha: i32, at| if before_best(at) { alpha - 1 } else { alpha };
            let (v, h) = match self.step(root, &mv) {
                Next::Over(v) => {
                    self.pv.resize_with(self.pv.len().max(2), Vec::new);
                    self.pv[1].clear();
                    (v, false)
                }
                Next::Go(head) => {
                    let made = &mut None;
                    let a = floor(alpha, best_at);
                    // The first move in full, as on one thread; the others with a null window.
                    let top = if i == 0 { job.beta } else { a + 1 };
                    let (v, mut h) = self.visit(&mv, head, made, job.depth - 1, 1, -top, -a, true);
                    let mut v = -v;
                    if i > 0 && v > a && v < job.beta && !self.stopped {
                        // The window may have moved while this move was searched.
                        let (alpha, best_at) = {
                            let st = job.state();
                            (st.alpha, st.best_at)
                        };
                        let a = floor(alpha, best_at);
                        let (v2, h2) = self.visit(&mv, head, made, job.depth - 1, 1, -job.beta, -a, true);
                        (v, h) = (-v2, h || h2);
                    }
                    self.unmake(made.take());
                    (v, h)
                }
            };
            std::mem::forget(taken);
            let mut st = job.state();
            st.busy -= 1;
            st.first_busy &= i != 0;
            if !self.stopped {
                st.horizon |= h;
                if v > st.best || (v == st.best && i < st.highest_at) {
                    (st.best, st.highest_at) = (v, i);
                }
                // Exact (above the window's edge as it stood) and better, or as good and first.
                let better = v > st.alpha || (v == st.alpha && before_best(st.best_at));
                if better && v > job.alpha {
                    st.alpha = v.min(job.beta);
                    st.best_at = Some(i);
                    st.pv.clear();
                    st.pv.push(mv);
                    st.pv.extend_from_slice(&self.pv[1]);
                }
                st.cut |= v >= job.beta;
            }
            if RootJob::done(&st, n) {
                job.finished.notify_all();
            }
        }
    }

    /// A thread that finds no root move left while another thread still searches the first
    /// (the best so far, in full, and often most of the work): search the first move's replies
    /// the way that thread will after its first reply, from the last back, with a null window at
    /// the last iteration's value, for the table. Its values are thrown away; the other
    /// thread finds the replies' subtrees in the table. Ends when that thread is done with the
    /// move.
    fn warm(&mut self, root: &Node, job: &RootJob) {
        let Some(guess) = job.guess.filter(|_| job.depth >= 3) else { return };
        let Next::Go(head) = self.step(root, &job.moves[0]) else { return };
        let mark = self.make(&job.moves[0], &head, 1);
        if !self.arrive(1) {
            // As `expand` sets up a node at ply 1 for its children.
            self.outs[1] = None;
            let mut replies = std::mem::take(&mut self.moves[1]);
            replies.clear();
            self.order(&head, 1, None, &mut replies);
            self.note_worths(&head, job.depth - 1, 1);
            for &(_, reply) in replies.iter().skip(1).rev() {
                if self.stopped || !job.state().first_busy {
                    break;
                }
                if let Next::Go(next) = self.step(&head, &reply) {
                    let made = &mut None;
                    self.visit(&reply, next, made, job.depth - 2, 2, guess - 1, guess, true);
                    self.unmake(made.take());
                }
            }
            self.moves[1] = replies;
            self.worths[1] = None;
        }
        self.unmake(Some(mark));
    }

    #[inline]
    fn count_node(&mut self) {
        self.nodes += 1;
        if self.nodes.is_multiple_of(CHECK_EVERY) {
            self.sh.nodes.fetch_add(CHECK_EVERY, Relaxed);
            let late = self.sh.deadline.is_some_and(|d| Instant::now() >= d);
            if (self.sh.stop.load(Relaxed) || late) && !self.must_finish {
                self.sh.stop.store(true, Relaxed);
                self.stopped = true;
            }
        }
    }

    /// Negamax with alpha-beta (principal variation search, fail-soft): the final spread from
    /// the mover's view, and whether any line was cut by the horizon.
    fn search(&mut self, node: &Node, depth: u8, ply: usize, alpha: i32, beta: i32) -> (i32, bool) {
        match self.enter(node.hash, node.spread, depth, ply, alpha, beta) {
            Enter::Done(v, h) => (v, h),
            Enter::Search(tt_move) => self.expand(node, depth, ply, alpha, beta, tt_move),
        }
    }

    /// Search `head`, the position `mv` leads to from the board's, from its mover's view; `mv`
    /// is made on the board only when the table does not already answer. `made` is where the
    /// undo list stood before `mv` was made, if it has been: the caller takes it back.
    #[allow(clippy::too_many_arguments)]
    fn visit(
        &mut self,
        mv: &Move,
        head: Node,
        made: &mut Option<usize>,
        depth: u8,
        ply: usize,
        alpha: i32,
        beta: i32,
        shortcut: bool,
    ) -> (i32, bool) {
        if depth == 1 && !shortcut && made.is_none() {
            // A frontier node that will be valued on its board. The table is neither asked nor
            // told: it rarely knows the node (new at this depth, 97% of the time on the
            // benchmark's longest line), and its slot would cost a miss and evict an entry
            // that saves more. The memo's slots of the lanes the move leaves as they were are
            // fetched while the move is made (the others' once it is): the child's mover has a
            // new rack after each sibling's move, which puts the slots of every lane out of
            // cache. Where its grandparent's worths bound the lanes that neither its parent's
            // move nor this one changed, only the lanes the parent's move changed are read.
            let lanes = if self.grand_worths(ply).is_some() { self.changed[ply - 1] } else { ALL_LANES };
            self.plays.prefetch(&self.board, head.racks[0].tiles(), lanes);
            *made = Some(self.make(mv, &head, ply));
            if self.arrive(ply) {
                return (0, true);
            }
            return self.frontier(&head, ply, alpha, beta, false);
        }
        match self.enter(head.hash, head.spread, depth, ply, alpha, beta) {
            Enter::Done(v, h) => (v, h),
            Enter::Search(_)
                if depth == 1
                    && shortcut
                    && made.is_none()
                    && let Some(v) = self.fails_high(mv, head, ply, beta) =>
            {
                v
            }
            Enter::Search(_)
                if depth >= 2
                    && shortcut
                    && made.is_none()
                    && let Some(v) = self.goes_out_high(mv, head, depth, ply, beta) =>
            {
                v
            }
            Enter::Search(tt_move) => {
                if made.is_none() {
                    *made = Some(self.make(mv, &head, ply));
                }
                self.expand(&head, depth, ply, alpha, beta, tt_move)
            }
        }
    }

    /// Count a node at `ply`, with room for its line; whether the search has stopped.
    fn arrive(&mut self, ply: usize) -> bool {
        if self.pv.len() <= ply + 1 {
            self.pv.resize_with(ply + 2, Vec::new);
            self.moves.resize_with(ply + 2, Vec::new);
            self.worths.resize(ply + 2, None);
            self.outs.resize(ply + 2, None);
            self.killers.resize(ply + 2, [None; 2]);
        }
        self.pv[ply].clear();
        self.count_node();
        self.stopped
    }

    /// Count a node at `ply` and look it up in the table.
    fn enter(&mut self, hash: u64, spread: i32, depth: u8, ply: usize, alpha: i32, beta: i32) -> Enter {
        if self.arrive(ply) {
            return Enter::Done(0, true);
        }
        let Some(e) = self.sh.table.get(hash) else { return Enter::Search(0) };
        // PV nodes search on, so that the principal variation is built move by move.
        if (e.solved || e.depth >= depth) && beta - alpha == 1 {
            let v = e.value as i32 + spread;
            let usable = match e.bound {
                Bound::Exact => true,
                Bound::Lower => v >= beta,
                Bound::Upper => v <= alpha,
            };
            if usable {
                return Enter::Done(v, !e.solved);
            }
        }
        Enter::Search(e.mv)
    }

    /// The search of a node the table did not answer.
    fn expand(&mut self, node: &Node, depth: u8, ply: usize, mut alpha: i32, beta: i32, tt_move: u32) -> (i32, bool) {
        let pv_node = beta - alpha > 1;
        let base = node.spread;
        if depth == 0 {
            // Horizon: the spread, less what each side may be stuck with.
            return (base - node.racks[0].value + node.racks[1].value, true);
        }
        if depth == 1 {
            return self.frontier(node, ply, alpha, beta, true);
        }
        let alpha0 = alpha;
        self.outs[ply] = None;
        // Below the root's moves, null-window nodes alternate: cut nodes (the first move
        // refutes) at odd plies, all-nodes (every move fails) at even ones. A frontier child
        // of a cut node is expected to fail low, where `fails_high` is wasted; after a first
        // move that did not cut, the node is an all-node whatever its ply.
        let expect_all = !pv_node && ply.is_multiple_of(2);
        let mut moves = std::mem::take(&mut self.moves[ply]);
        moves.clear();
        // The table's move first, found in its lane alone, or failing that the move `order`
        // would put first: it usually cuts, and then the other moves are never listed. A cut
        // node whose children are frontier nodes tries a killer before the lead: where it fails
        // only a frontier node is lost, and where it cuts no lane is looked at. Higher up, a
        // worse first move than the lead costs a subtree.
        let table_move = self.table_move(node, tt_move);
        let killer = (table_move.is_none() && ply >= 2 && depth == 2 && !pv_node && !expect_all)
            .then(|| self.killer(node, ply))
            .flatten();
        let first = table_move.or(killer).or_else(|| {
            (ply >= 2).then(|| self.plays.lead(&mut self.mg, self.sh.ctx, &self.board, node.racks[0].tiles()))
        });
        match first {
            Some(mv) => moves.push((i32::MAX, mv)),
            None => self.order(node, ply, None, &mut moves),
        }
        let mut listed = first.is_none();
        self.note_worths(node, depth, ply);
        let (mut best, mut best_fp, mut horizon) = (-INF, 0, false);
        let (mut i, mut ahead) = (0, None);
        loop {
            if i == moves.len() {
                if listed {
                    break;
                }
                self.order(node, ply, first, &mut moves);
                listed = true;
                self.note_worths(node, depth, ply);
                if i == moves.len() {
                    break;
                }
            }
            let mv = moves[i].1;
            let next = ahead.take().unwrap_or_else(|| self.step(node, &mv));
            // The next sibling's table slot is fetched from memory while this one is searched.
            if let Some(&(_, after)) = moves.get(i + 1) {
                let after = self.step(node, &after);
                if let Next::Go(head) = &after {
                    self.sh.table.prefetch(head.hash);
                }
                ahead = Some(after);
            }
            let (v, h) = match next {
                Next::Over(v) => {
                    self.pv[ply + 1].clear();
                    (v, false)
                }
                Next::Go(head) => {
                    let made = &mut None;
                    let (v, h) = if i == 0 {
                        let (v, h) = self.visit(&mv, head, made, depth - 1, ply + 1, -beta, -alpha, expect_all);
                        (-v, h)
                    } else {
                        let (v, h) = self.visit(&mv, head, made, depth - 1, ply + 1, -alpha - 1, -alpha, true);
                        let v = -v;
                        if v > alpha && v < beta && pv_node && !self.stopped {
                            let (v, h2) = self.visit(&mv, head, made, depth - 1, ply + 1, -beta, -alpha, true);
                            (-v, h || h2)
                        } else {
                            (v, h)
                        }
                    };
                    self.unmake(made.take());
                    (v, h)
                }
            };
            if self.stopped {
                self.moves[ply] = moves;
                self.worths[ply] = None;
                return (0, true);
            }
            horizon |= h;
            if v > best {
                best = v;
                best_fp = fingerprint(&mv);
                if v > alpha {
                    alpha = v;
                    let (head, tail) = self.pv.split_at_mut(ply + 1);
                    head[ply].clear();
                    head[ply].push(mv);
                    head[ply].extend_from_slice(&tail[0]);
                    if v >= beta {
                        if depth == 2 && mv.kind == Kind::Place {
                            let lane_key = self.board.lane_key(mv.dir(), mv.lane as usize);
                            let k = &mut self.killers[ply];
                            if k[0].is_some_and(|k| k.mv != mv) {
                                k[1] = k[0];
                            }
                            k[0] = Some(Killer { mv, lane_key });
                        }
                        break;
                    }
                }
            }
            i += 1;
        }
        self.moves[ply] = moves;
        self.worths[ply] = None;
        // A killer that refuted is not the table's move: at the next depth the node is no
        // longer next to the horizon, where the lead orders better.
        let best_fp = if killer.is_some_and(|k| fingerprint(&k) == best_fp) { 0 } else { best_fp };
        self.store(node, depth, (alpha0, beta), best, horizon, best_fp);
        (best, horizon)
    }

    /// At a node three plies above the horizon, what its mover's plays are worth in each lane,
    /// for the frontier nodes two plies down: noted once its first move is known (finding it
    /// by `Plays::lead` put every lane in the memo) and again once its moves are listed.
    fn note_worths(&mut self, node: &Node, depth: u8, ply: usize) {
        self.worths[ply] = (depth == 3).then(|| self.plays.lane_worths(&self.board, node.racks[0].tiles()));
    }

    /// Store `node`'s searched value `best` (fail-soft, in the window `(alpha, beta)`) and its
    /// best move's fingerprint.
    fn store(&self, node: &Node, depth: u8, (alpha, beta): (i32, i32), best: i32, horizon: bool, mv: u32) {
        let bound = if best >= beta {
            Bound::Lower
        } else if best > alpha {
            Bound::Exact
        } else {
            Bound::Upper
        };
        let value = (best - node.spread).clamp(i16::MIN as i32, i16::MAX as i32) as i16;
        self.sh.table.put(node.hash, Entry { value, depth, bound, solved: !horizon, mv });
    }

    /// A node one ply above the horizon, valued without building its children: a move that
    /// ends the game is scored exactly; any other gets the horizon value of the position after
    /// it (spread, less the rack the mover keeps, plus the opponent's, and the stuck-tile term
    /// of [`Search::stuck_term`]). Returns a solved lower bound when a game-ending move alone
    /// reaches `beta`, and an upper bound when the stuck-tile term at its most cannot lift the
    /// value above `alpha`: from the best moves, or, before any lane the memo lacks is
    /// generated, from bounds on what that lane's moves are worth. The value goes to the table
    /// when `store`.
    fn frontier(&mut self, node: &Node, ply: usize, alpha: i32, beta: i32, store: bool) -> (i32, bool) {
        let (me, opp) = (&node.racks[0], &node.racks[1]);
        // A move worth w (score plus the tiles it plays) is valued base + w, going out base + w
        // + the opponent's rack.
        let base = node.spread + opp.value - me.value;
        // Any move's value is at most base + its worth + the opponent's rack (the going-out
        // bonus, or the stuck-tile term at its most): moves worth `cap` or less fail low.
        let cap = alpha - base - opp.value;
        let mut bound = Bound::Exact;
        let (value, mv, horizon) = if node.scoreless + 1 >= MAX_SCORELESS_TURNS {
            self.last_scoreless_turn(node, beta)
        } else if let Some(most) = self.none_above(node, ply, cap) {
            // No move, the pass included, is worth more than `cap`: fails low, and the lanes
            // the memo lacks are bounded, not generated.
            bound = Bound::Upper;
            (base + most + opp.value, Move::PASS, true)
        } else {
            let best = self.plays.best(&mut self.mg, self.sh.ctx, &self.board, me.tiles(), opp.value, ALL_LANES);
            match best.out {
                Some((m, w)) if base + w >= beta => (base + w, m, false),
                out => {
                    let kept = base + best.keep.1;
                    let mine = stuck_value(self.sh.ctx.dist, me, best.used);
                    // The term is at most 0 for a stuck mover, else at most the opponent's rack.
                    let most = kept + if mine.is_some() { 0 } else { opp.value };
                    let keep = if most <= alpha && out.is_none_or(|(_, w)| base + w <= alpha) {
                        // Fails low whatever the opponent can play: not worth finding out.
                        bound = Bound::Upper;
                        most
                    } else {
                        kept + self.stuck_term(node, mine)
                    };
                    match out {
                        Some((m, w)) if base + w >= keep => (base + w, m, true),
                        _ => (keep, best.keep.0, true),
                    }
                }
            }
        };
        self.pv[ply].clear();
        self.pv[ply].push(mv);
        if value >= beta {
            bound = Bound::Lower;
        }
        if store {
            let stored = (value - node.spread).clamp(i16::MIN as i32, i16::MAX as i32) as i16;
            self.sh
                .table
                .put(node.hash, Entry { value: stored, depth: 1, bound, solved: !horizon, mv: fingerprint(&mv) });
        }
        (value, horizon)
    }

    /// `Plays::none_above` for the mover at frontier node `node`: the lanes that neither move
    /// since its grandparent changed are bounded by what they were worth there, and only the
    /// others are read.
    fn none_above(&mut self, node: &Node, ply: usize, cap: i32) -> Option<i32> {
        let (ctx, rack) = (self.sh.ctx, node.racks[0].tiles());
        let Some(worths) = self.grand_worths(ply) else {
            return self.plays.none_above(ctx, &self.board, rack, cap, ALL_LANES);
        };
        let changed = self.changed[ply] | self.changed[ply - 1];
        let far = (0..LANES).filter(|&bit| changed >> bit & 1 == 0).map(|bit| worths[bit]).max().unwrap_or(i32::MIN);
        if far > cap {
            // Too loose: the rack has lost tiles since.
            return self.plays.none_above(ctx, &self.board, rack, cap, ALL_LANES);
        }
        self.plays.none_above(ctx, &self.board, rack, cap, changed).map(|most| most.max(far))
    }

    /// Whether the frontier node `head` (reached by `mv` from `node`) fails high, judged from
    /// the lanes `mv` leaves as they were, without building its board or generating the lanes
    /// it changes. Most frontier nodes are children of nodes where every move fails, and a
    /// good enough reply away from the new tiles proves it: any of the mover's moves, with the
    /// stuck-tile term at its least, bounds the frontier value from below. The bound, and
    /// whether the horizon cut it, when it reaches `beta`.
    ///
    /// The bound is stored only where it evicts nothing, and without its move: a merely
    /// good-enough move kept in the table orders the next depth worse than no entry at all,
    /// and evicting deeper entries for it costs more than it saves (8-35% more nodes each,
    /// measured). Other threads still see the bound.
    fn fails_high(&mut self, mv: &Move, head: Node, ply: usize, beta: i32) -> Option<(i32, bool)> {
        if head.scoreless + 1 >= MAX_SCORELESS_TURNS {
            return None;
        }
        let (me, opp) = (&head.racks[0], &head.racks[1]);
        let base = head.spread + opp.value - me.value;
        let touched = touched_by(&self.board, mv);
        // The lanes the move leaves as they were are the same on `node`'s board.
        let (ctx, board) = (self.sh.ctx, &self.board);
        let best = self.plays.best(&mut self.mg, ctx, board, me.tiles(), opp.value, ALL_LANES & !touched);
        // Tiles stuck so far may prove playable in the lanes not looked at, and the
        // opponent's rack is not looked at: the term is at least minus the mover's.
        let stuck = stuck_value(ctx.dist, me, best.used).map_or(0, |v| -v);
        let (value, reply, horizon) = match best.out {
            // Going out ends the game: as in `frontier`, a solved bound.
            Some((m, w)) if base + w >= beta => (base + w, m, false),
            Some((m, w)) if w >= best.keep.1 + stuck => (base + w, m, true),
            _ => (base + best.keep.1 + stuck, best.keep.0, true),
        };
        if value < beta {
            return None;
        }
        self.pv[ply].clear();
        self.pv[ply].push(reply);
        let value16 = (value - head.spread).clamp(i16::MIN as i32, i16::MAX as i32) as i16;
        let e = Entry { value: value16, depth: 1, bound: Bound::Lower, solved: !horizon, mv: 0 };
        self.sh.table.put_if_vacant(head.hash, e);
        Some((value, horizon))
    }

    /// Whether the node `head` (reached by `mv` from `node`), more than one ply above the
    /// horizon, fails high by its mover going out in a lane `mv` leaves as they were: the
    /// game's end is exact at any depth, and it is found from `node`'s board, as in
    /// `fails_high`, without building `head`'s. Where the opponent of a searching side can go
    /// out, most of its moves are refuted that way, and the lanes they change rarely hold the
    /// only way out. The bound, stored as `fails_high` stores its own.
    fn goes_out_high(&mut self, mv: &Move, head: Node, depth: u8, ply: usize, beta: i32) -> Option<(i32, bool)> {
        let (me, opp) = (&head.racks[0], &head.racks[1]);
        let (ctx, board) = (self.sh.ctx, &self.board);
        let outs = self.outs[ply - 1].get_or_insert_with(|| self.plays.outs(&mut self.mg, ctx, board, me.tiles()));
        if outs.iter().all(Option::is_none) {
            return None;
        }
        let touched = touched_by(board, mv);
        // The first best, as `Plays::best` would find it.
        let mut best: Option<(Move, i32)> = None;
        for (bit, out) in outs.iter().enumerate() {
            if let Some((m, w)) = *out
                && touched >> bit & 1 == 0
                && best.is_none_or(|(_, b)| w > b)
            {
                best = Some((m, w));
            }
        }
        let (reply, worth) = best?;
        // As in `frontier`: the score, the rack's face value and the opponent's rack, twice.
        let value = head.spread + 2 * opp.value - me.value + worth;
        if value < beta {
            return None;
        }
        self.pv[ply].clear();
        self.pv[ply].push(reply);
        let value16 = (value - head.spread).clamp(i16::MIN as i32, i16::MAX as i32) as i16;
        let e = Entry { value: value16, depth, bound: Bound::Lower, solved: true, mv: 0 };
        self.sh.table.put_if_vacant(head.hash, e);
        Some((value, false))
    }

    /// What stuck tiles add to a horizon value, from the mover's view: when one side holds
    /// tiles no play on this board can place (`mine`: the face value of the mover's, if any)
    /// and the other does not, the other side is the one that goes out, so the stuck side's
    /// stuck tiles count against it a second time. Judged here, one ply above the horizon,
    /// not at the root: tiles get stuck as the board fills (the second U once the first is
    /// played) and come free as it opens.
    fn stuck_term(&mut self, node: &Node, mine: Option<i32>) -> i32 {
        let opp = &node.racks[1];
        let theirs = self.plays.used(&mut self.mg, self.sh.ctx, &self.board, opp.tiles());
        match (mine, stuck_value(self.sh.ctx.dist, opp, theirs)) {
            (Some(mine), None) => -mine,
            (None, Some(theirs)) => theirs,
            _ => 0,
        }
    }

    /// `frontier` when a scoreless move would end the game (five scoreless turns in a row):
    /// every move is looked at.
    fn last_scoreless_turn(&mut self, node: &Node, beta: i32) -> (i32, Move, bool) {
        let (me, opp) = (&node.racks[0], &node.racks[1]);
        let dist = self.sh.ctx.dist;
        let (mut best, mut best_end, mut horizon) = ((-INF, Move::PASS), (-INF, Move::PASS), false);
        for m in self.plays.all(&mut self.mg, self.sh.ctx, &self.board, me.tiles()) {
            let kept = me.value - m.rack_tiles().map(|t| dist.score(t)).sum::<i32>();
            let out = m.tiles_used() == me.len as usize;
            let scoreless = m.kind != Kind::Place || m.score == 0;
            let v = node.spread + m.score + opp.value - kept + if out { opp.value } else { 0 };
            let ends = out || scoreless;
            if ends && v > best_end.0 {
                best_end = (v, *m);
            }
            horizon |= !ends;
            if v > best.0 {
                best = (v, *m);
            }
        }
        if best_end.0 >= beta { (best_end.0, best_end.1, false) } else { (best.0, best.1, horizon) }
    }

    /// The killer at `ply`, if it is a move of `node`'s mover here.
    fn killer(&self, node: &Node, ply: usize) -> Option<Move> {
        self.killers[ply].iter().flatten().find_map(|k| k.fits(&self.board, &node.racks[0]))
    }

    /// The mover's move whose fingerprint the table holds (`fp`, 0 for none), found in its
    /// lane alone.
    fn table_move(&mut self, node: &Node, fp: u32) -> Option<Move> {
        if fp == 0 {
            return None;
        }
        self.plays.find(&mut self.mg, self.sh.ctx, &self.board, node.racks[0].tiles(), fp)
    }

    /// Append all moves of the mover but `skip` (already tried), best guess first: going out
    /// (score + twice the opponent's rack), then by score, favouring more tiles below the
    /// first two plies; the pass last.
    fn order(&mut self, node: &Node, ply: usize, skip: Option<Move>, out: &mut Vec<(i32, Move)>) {
        let (me, opp) = (&node.racks[0], &node.racks[1]);
        let from = out.len();
        for m in self.plays.all(&mut self.mg, self.sh.ctx, &self.board, me.tiles()) {
            if skip == Some(*m) {
                continue;
            }
            let used = m.tiles_used() as i32;
            let est = match m.kind {
                Kind::Place if used == me.len as i32 => 1_000 + m.score + 2 * opp.value,
                Kind::Place if ply >= 2 => plays::deep_estimate(m),
                Kind::Place => m.score,
                Kind::Exchange | Kind::Pass => -1_000,
            };
            out.push((est, *m));
        }
        // Stable: equal estimates keep generation order, so a thread's search is repeatable.
        out[from..].sort_by_key(|e| std::cmp::Reverse(e.0));
    }

    /// What `mv` leads to, short of the next board.
    fn step(&self, node: &Node, mv: &Move) -> Next {
        let keys = self.sh.keys;
        let (me, opp) = (node.racks[0], node.racks[1]);
        let mut rack = me;
        let mut hash = node.hash;
        for t in mv.rack_tiles() {
            let c = rack.count(t);
            // Racks are hashed by player number, not by mover.
            let p = node.mover;
            hash ^= keys.rack[p][t as usize][c] ^ keys.rack[p][t as usize][c - 1];
            assert!(rack.take(t), "move tiles are on the rack");
            rack.value -= self.sh.ctx.dist.score(t);
        }
        let score = mv.score;
        if rack.len == 0 {
            return Next::Over(node.spread + score + 2 * opp.value);
        }
        let scoreless = if mv.kind == Kind::Place && score > 0 { 0 } else { node.scoreless + 1 };
        if scoreless >= MAX_SCORELESS_TURNS {
            return Next::Over(node.spread + score - rack.value + opp.value);
        }
        if mv.kind == Kind::Place {
            let (row, col) = mv.origin();
            for (k, &t) in mv.tiles().iter().enumerate() {
                if t != 0 {
                    let sq = if mv.dir() == ACROSS { row * DIM + col + k } else { (row + k) * DIM + col };
                    hash ^= keys.tile(sq, t);
                }
            }
        }
        hash ^= keys.side ^ keys.scoreless[node.scoreless as usize] ^ keys.scoreless[scoreless as usize];
        Next::Go(Node { racks: [opp, rack], mover: 1 - node.mover, spread: -(node.spread + score), scoreless, hash })
    }

    /// Make `mv` on the board, leading to `head` (what `step` found) at `ply`; where the undo
    /// list stood before, for `unmake`.
    fn make(&mut self, mv: &Move, head: &Node, ply: usize) -> usize {
        let mark = self.undo.len();
        self.changed[ply] = 0;
        if mv.kind == Kind::Place {
            let (lane, start) = (mv.lane as usize, mv.start as usize);
            let dist = self.sh.ctx.dist;
            let touched =
                self.board.place_with(mv.dir(), lane, start, mv.tiles(), &mut self.cross, dist, &mut self.undo);
            self.plays.prefetch(&self.board, head.racks[0].tiles(), touched);
            self.changed[ply] = touched;
        }
        mark
    }

    /// The worths of the lanes that the mover at `ply` had two plies up (see `worths`).
    fn grand_worths(&self, ply: usize) -> Option<&[i32; LANES]> {
        ply.checked_sub(2).and_then(|up| self.worths.get(up)).and_then(|w| w.as_ref())
    }

    /// Take back the moves made since the undo list stood at `mark`, if any were.
    fn unmake(&mut self, mark: Option<usize>) {
        if let Some(mark) = mark {
            self.board.unplace(&mut self.undo, mark);
        }
    }

    /// Extend a principal variation cut short (by a table hit) to the end of the game, by
    /// solving where it stops.
    fn complete_pv(&mut self, root: &Node, pv: &mut Vec<Move>) {
        for _ in 0..MAX_DEPTH {
            let (mut node, mark) = (*root, self.undo.len());
            let mut over = false;
            for mv in pv.iter() {
                match self.step(&node, mv) {
                    Next::Over(_) => over = true,
                    Next::Go(head) => {
                        self.make(mv, &head, 0);
                        node = head;
                    }
                }
            }
            let rest = if over { None } else { self.deepen(&node, MAX_DEPTH, false, &|_| {}) };
            self.unmake(Some(mark));
            match rest {
                Some(rest) if !rest.pv.is_empty() => pv.extend(rest.pv),
                _ => return,
            }
        }
    }

    /// The root's moves in search order: the table's move, then the rest as `order` puts them.
    fn root_moves(&mut self, root: &Node) -> Vec<(i32, Move)> {
        let first = self.table_move(root, self.sh.table.get(root.hash).map_or(0, |e| e.mv));
        let mut moves: Vec<_> = first.iter().map(|&m| (i32::MAX, m)).collect();
        self.order(root, 0, first, &mut moves);
        moves
    }

    /// Exact values of the first `n` root moves in search order, best first.
    fn first_moves(&mut self, root: &Node, n: usize, max_depth: u8) -> Vec<(Move, i32)> {
        let moves = self.root_moves(root);
        let mut out = Vec::new();
        for &(_, mv) in moves.iter().take(n) {
            let v = match self.step(root, &mv) {
                Next::Over(v) => v,
                Next::Go(head) => {
                    let made = Some(self.make(&mv, &head, 0));
                    let value = self.deepen(&head, max_depth.saturating_sub(1).max(1), false, &|_| {});
                    self.unmake(made);
                    match value {
                        Some(it) => -it.value,
                        None => continue,
                    }
                }
            };
            out.push((mv, v));
        }
        out.sort_by_key(|e| std::cmp::Reverse(e.1));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::board::Layout;
    use crate::leaves::RackLeaves;
    use crate::lexicon::Kwg;
    use crate::movegen::{Mode, Request};
    use crate::tiles::Distribution;

    /// A killer that fits a later board and rack is one of that rack's moves there, with the
    /// same score: on random boards, after random moves, with random racks.
    #[test]
    fn a_killer_that_fits_is_a_move_with_the_same_score() {
        let words = [
            "AT", "TA", "AS", "IS", "IT", "TI", "AI", "RE", "ER", "ES", "TE", "EAT", "TEA", "ATE", "SEA", "SAT", "SIT",
            "TIE", "RAT", "ART", "TAR", "STAR", "RATE", "TEAR", "SEAT", "EAST", "REST", "STIR", "RISE", "TIRE", "ARTS",
            "RATS", "STAIR", "TEARS", "RATES", "STARE", "IRATE", "TASTE", "TREAT",
        ];
        let codes = |w: &str| w.bytes().map(|b| b - b'A' + 1).collect::<Vec<u8>>();
        let kwg = Kwg::build(&words.iter().map(|w| codes(w)).collect::<Vec<_>>()).unwrap();
        let (dist, layout) = (Distribution::english(), Layout::standard());
        let ctx = Ctx { kwg: &kwg, dist: &dist, layout: &layout };
        let letters = codes("AEIRST");
        let mut rng = Rng::new(18);
        let mut mg = Generator::new();
        let mut moves = |board: &Board, rack: &[u8]| {
            let leaves = RackLeaves::new(rack, |_| 0);
            let req = Request { board, rack, leaves: &leaves, can_exchange: false, opening_vowel_penalty: 0 };
            mg.generate(ctx, &req, Mode::All).iter().filter(|m| m.kind == Kind::Place).copied().collect::<Vec<_>>()
        };
        let rack_of = |rng: &mut Rng| {
            let tiles: Vec<u8> =
                (0..1 + rng.below(7)).map(|_| [0, 1, 5, 9, 18, 19, 20][rng.below(7) as usize]).collect();
            let mut rack = Rack { tiles: [0; RACK_SIZE], len: tiles.len() as u8, value: 0 };
            rack.tiles[..tiles.len()].copy_from_slice(&tiles);
            rack
        };
        let (mut fitted, mut unfit) = (0, 0);
        for _ in 0..60 {
            let mut board = Board::new();
            for _ in 0..6 + rng.below(20) {
                let (row, col) = (4 + rng.below(7) as usize, 4 + rng.below(7) as usize);
                board.set(row, col, letters[rng.below(6) as usize]);
            }
            board.recompute_all(&kwg, &dist);
            let rack = rack_of(&mut rng);
            let refutations = moves(&board, rack.tiles());
            let Some(&mv) = refutations.get(rng.below(refutations.len().max(1) as u64) as usize) else { continue };
            let killer = Killer { mv, lane_key: board.lane_key(mv.dir(), mv.lane as usize) };
            // A sibling: the board after another move, and another rack.
            let other = rack_of(&mut rng);
            let replies = moves(&board, other.tiles());
            let Some(&played) = replies.get(rng.below(replies.len().max(1) as u64) as usize) else { continue };
            board.place(played.dir(), played.lane as usize, played.start as usize, played.tiles(), &kwg, &dist);
            for later in [rack, rack_of(&mut rng)] {
                match killer.fits(&board, &later) {
                    Some(m) => {
                        assert!(moves(&board, later.tiles()).contains(&m), "{m:?} is a move of {:?}", later.tiles());
                        fitted += 1;
                    }
                    None => unfit += 1,
                }
            }
        }
        assert!(fitted > 20 && unfit > 20, "fitted {fitted}, unfit {unfit}");
    }
}
