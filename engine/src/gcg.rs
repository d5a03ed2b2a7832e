//! Game logs: GCG (the standard annotated-game format) and a per-turn CSV; and a GCG reader
//! that replays a game move by move, checking every move's legality and score.
//!
//! # Design notes
//!
//! `write_gcg` and `write_csv` write a finished game (`record::GameRecord`); `replay` checks every
//! move and score of a log; `game_at` builds the position after a logged turn (for `worker infer`);
//! `replay_deal` re-plays a log on the deal it claims and requires it to write back byte for byte
//! (the coordinator's check of uploads); `summarize` reads a log's scores, turns and bingos without
//! replaying. A rules module: it imports no player (`engine/tests/layers.rs`).

use crate::board::{ACROSS, Board, DIM};
use crate::error::DataError;
use crate::game::{Game, Turn};
use crate::leaves::RackLeaves;
use crate::movegen::{Ctx, Generator, Mode, Request};
use crate::moves::{Kind, Move, parse_coord};
use crate::record::GameRecord;
use crate::tiles::{Distribution, RACK_SIZE, letter_of};
use std::fmt::Write;

/// GCG text of a game; `names[s]` names seat `s` (nicknames `p1`, `p2`).
pub fn write_gcg(game: &Game, names: [&str; 2], dist: &Distribution) -> String {
    let mut s = String::from("#character-encoding UTF-8\n");
    let nick = ["p1", "p2"];
    for p in 0..2 {
        let _ = writeln!(s, "#player{} {} {}", p + 1, nick[p], names[p]);
    }
    for t in &game.history {
        let _ = writeln!(
            s,
            ">{}: {} {} {:+} {}",
            nick[t.player],
            dist.rack_string(&t.rack),
            gcg_move(&t.mv, dist),
            t.score,
            t.total
        );
    }
    for a in &game.adjustments {
        let rack = dist.rack_string(&a.rack);
        if a.points >= 0 {
            let _ = writeln!(s, ">{}:  ({rack}) {:+} {}", nick[a.player], a.points, a.total);
        } else {
            let _ = writeln!(s, ">{}: {rack} ({rack}) {:+} {}", nick[a.player], a.points, a.total);
        }
    }
    s
}

pub const CSV_HEADER: &str = "game_id,turn,player,rack,move,score,total,tiles_played,leave,equity,bag";

/// A move as GCG writes it: `8D WORD` with played-through tiles as `.`, `-TILES`, or `-`.
pub fn gcg_move(mv: &Move, dist: &Distribution) -> String {
    match mv.kind {
        Kind::Place => {
            let word: String = mv.tiles().iter().map(|&t| if t == 0 { '.' } else { dist.board_char(t) }).collect();
            format!("{} {word}", mv.coord())
        }
        Kind::Exchange => format!("-{}", dist.rack_string(mv.tiles())),
        Kind::Pass => "-".into(),
    }
}

/// Per-turn CSV rows of one game (no header); `player` is the bot's name, quoted when it holds
/// a comma or a quote (bot specs such as `softmax:t=1,bag=60` do).
pub fn write_csv(r: &GameRecord, names: [&str; 2], dist: &Distribution) -> String {
    let mut s = String::new();
    for (i, t) in r.game.history.iter().enumerate() {
        let leave = t.mv.leave(&t.rack);
        let _ = writeln!(
            s,
            "{},{},{},{},{},{},{},{},{},{:.3},{}",
            r.id,
            i + 1,
            csv_field(names[r.seat_bot[t.player]]),
            dist.rack_string(&t.rack),
            t.mv.notation(dist, |row, col| r.game.board.at(row, col)),
            t.score,
            t.total,
            t.mv.tiles_used(),
            dist.rack_string(&leave),
            t.mv.equity as f64 / 1000.0,
            t.bag_after
        );
    }
    s
}

/// A CSV field as RFC 4180 writes it.
fn csv_field(s: &str) -> std::borrow::Cow<'_, str> {
    if s.contains([',', '"', '\n', '\r']) { format!("\"{}\"", s.replace('"', "\"\"")).into() } else { s.into() }
}

/// Result of replaying a GCG file.
#[derive(Debug)]
pub struct Replay {
    pub board: Board,
    pub scores: [i32; 2],
    pub moves: usize,
    /// Every move line, in file order.
    pub turns: Vec<LoggedTurn>,
    /// Whether the log has end-of-game lines (the game was finished).
    pub ended: bool,
}

/// One move line of a log: who moved (by `#player` order), the rack shown, the move.
#[derive(Clone, Debug)]
pub struct LoggedTurn {
    pub player: usize,
    pub rack: Vec<u8>,
    pub mv: Move,
    /// The line in the file (from 1).
    pub line: usize,
}

/// Replay a GCG game: every placement must be legal on the board with the listed rack, every
/// listed score and running total must be what the rules give, and no tile may appear more
/// often than the distribution holds.
pub fn replay(text: &str, ctx: Ctx, source: &str) -> Result<Replay, DataError> {
    replay_at(text, ctx, source, 1)
}

/// [`replay`] of a game whose first line is line `first_line` of `source` (a file of many
/// games), so that errors name the file's own lines.
pub fn replay_at(text: &str, ctx: Ctx, source: &str, first_line: usize) -> Result<Replay, DataError> {
    let dist = ctx.dist;
    let mut nicks: Vec<String> = Vec::new();
    let mut board = Board::new();
    let mut scores = [0i32; 2];
    let mut mg = Generator::new();
    let mut moves = 0;
    let mut turns = Vec::new();
    let mut ended = false;
    for (i, raw) in text.lines().enumerate() {
        let at = |m: String| DataError::new(format!("{source}:{}", i + first_line), m);
        let line = raw.trim_end();
        if let Some(rest) = line.strip_prefix("#player") {
            let mut f = rest.split_whitespace();
            let (Some(_), Some(nick)) = (f.next(), f.next()) else {
                return Err(at("`#player` needs a number and a nickname".into()));
            };
            nicks.push(nick.to_string());
            continue;
        }
        let Some(rest) = line.strip_prefix('>') else { continue };
        let (nick, body) = rest.split_once(':').ok_or_else(|| at("expected `>nick: ...`".into()))?;
        let p = nicks.iter().position(|n| n == nick).ok_or_else(|| at(format!("unknown player `{nick}`")))?;
        if p > 1 {
            return Err(at("more than two players".into()));
        }
        let f: Vec<&str> = body.split_whitespace().collect();
        let num = |s: &str| s.parse::<i32>().map_err(|_| at(format!("`{s}` is not a number")));
        // End-of-game lines: `(RACK) +N T` or `RACK (RACK) -N T`.
        if f.iter().any(|x| x.starts_with('(')) {
            if f.len() < 3 {
                return Err(at("expected `(RACK) +POINTS TOTAL`".into()));
            }
            let (pts, total) = (num(f[f.len() - 2].trim_start_matches('+'))?, num(f[f.len() - 1])?);
            scores[p] += pts;
            if scores[p] != total {
                return Err(at(format!("total {total} but the rules give {}", scores[p])));
            }
            ended = true;
            continue;
        }
        if f.len() < 4 {
            return Err(at("expected `RACK MOVE +SCORE TOTAL`".into()));
        }
        let rack = dist.parse_rack(f[0]).map_err(&at)?;
        if rack.len() > crate::tiles::RACK_SIZE {
            return Err(at(format!("rack `{}` has more than {} tiles", f[0], crate::tiles::RACK_SIZE)));
        }
        let (score, total) = (num(f[f.len() - 2].trim_start_matches('+'))?, num(f[f.len() - 1])?);
        let mv =
            resolve(&f[1..f.len() - 2], &rack, &board, ctx, &mut mg).map_err(|e| at(format!("{e} (rack {})", f[0])))?;
        if mv.score != score {
            return Err(at(format!("score {score} but the play scores {}", mv.score)));
        }
        scores[p] += score;
        if scores[p] != total {
            return Err(at(format!("total {total} but the rules give {}", scores[p])));
        }
        if mv.kind == Kind::Place {
            board.place(mv.dir(), mv.lane as usize, mv.start as usize, mv.tiles(), ctx.kwg, dist);
        }
        turns.push(LoggedTurn { player: p, rack, mv, line: i + first_line });
        moves += 1;
    }
    let used = crate::game::board_counts(&board);
    if let Some(t) = (0..dist.size() as u8).find(|&t| used[t as usize] > dist.count(t)) {
        return Err(DataError::new(
            source,
            format!("more `{}` on the board than the distribution holds", dist.rack_char(t)),
        ));
    }
    Ok(Replay { board, scores, moves, turns, ended })
}

/// The game after the first `n` turns of a replayed log, for the player who moves next: the
/// board, scores and history as logged, that player's rack `rack` (else the rack the log
/// shows on their next turn), and the other tiles split between the opponent's rack (as many
/// as they hold) and the bag in no particular order; a player's view (`engine::view`) hides that split.
pub fn game_at(replay: &Replay, n: usize, rack: Option<Vec<u8>>, ctx: Ctx) -> Result<Game, String> {
    let dist = ctx.dist;
    if n == 0 || n > replay.turns.len() {
        return Err(format!("turn {n}: the log has turns 1 to {}", replay.turns.len()));
    }
    let total: usize = (0..dist.size() as u8).map(|t| dist.count(t) as usize).sum();
    let mut game = Game::new(dist, 0);
    game.racks = [Vec::new(), Vec::new()];
    let mut sizes = [RACK_SIZE; 2];
    let mut bag = total - 2 * RACK_SIZE;
    for t in &replay.turns[..n] {
        let p = t.player;
        sizes[p] = t.rack.len();
        let mut after = t.rack.clone();
        for u in t.mv.rack_tiles() {
            let k = after.iter().position(|&x| x == u).ok_or("a move's tiles are not on its rack")?;
            after.swap_remove(k);
        }
        if t.mv.kind == Kind::Place {
            game.board.place(t.mv.dir(), t.mv.lane as usize, t.mv.start as usize, t.mv.tiles(), ctx.kwg, dist);
            game.scores[p] += t.mv.score;
            let drawn = t.mv.tiles_used().min(bag);
            bag -= drawn;
            sizes[p] = sizes[p] - t.mv.tiles_used() + drawn;
        }
        game.scoreless = if t.mv.kind == Kind::Place && t.mv.score > 0 { 0 } else { game.scoreless + 1 };
        game.history.push(Turn {
            player: p,
            rack: t.rack.clone(),
            mv: t.mv,
            score: t.mv.score,
            total: game.scores[p],
            bag_after: bag,
        });
    }
    let me = 1 - replay.turns[n - 1].player;
    let mine = match rack {
        Some(r) => r,
        None => match replay.turns.get(n) {
            Some(next) if next.player == me => next.rack.clone(),
            _ => return Err(format!("turn {n}: the log shows no rack for the player who moves next; give one")),
        },
    };
    let mut unseen: Vec<u8> =
        (0..dist.size() as u8).flat_map(|t| std::iter::repeat_n(t, dist.count(t) as usize)).collect();
    let on_board = crate::game::board_counts(&game.board);
    for t in 0..dist.size() as u8 {
        for _ in 0..on_board[t as usize] {
            unseen.remove(unseen.iter().position(|&x| x == t).expect("the log's tiles fit the distribution"));
        }
    }
    for &t in &mine {
        let k = unseen
            .iter()
            .position(|&x| x == t)
            .ok_or_else(|| format!("rack {}: more `{}` than are unseen", dist.rack_string(&mine), dist.rack_char(t)))?;
        unseen.remove(k);
    }
    let opp = 1 - me;
    if unseen.len() != sizes[opp] + bag {
        return Err(format!(
            "after turn {n}: {} tiles unseen, but the opponent holds {} and the bag {bag}",
            unseen.len(),
            sizes[opp]
        ));
    }
    game.racks[me] = mine;
    game.racks[opp] = unseen[..sizes[opp]].to_vec();
    game.bag = crate::game::Bag::from_tiles(unseen[sizes[opp]..].to_vec(), 0);
    game.on_turn = me;
    Ok(game)
}

/// The move a GCG move field names (`8D WO.D`, `-TILES`, `-`), with its score, for `rack` on
/// `board`; a placement must be one the generator finds.
pub fn resolve(text: &[&str], rack: &[u8], board: &Board, ctx: Ctx, mg: &mut Generator) -> Result<Move, String> {
    let dist = ctx.dist;
    match text {
        ["-"] => Ok(Move::PASS),
        [x] if x.starts_with('-') => {
            let tiles = dist.parse_rack(&x[1..])?;
            let mut left = rack.to_vec();
            for t in &tiles {
                let k = left
                    .iter()
                    .position(|u| u == t)
                    .ok_or_else(|| format!("exchanged `{}` not on the rack", dist.rack_char(*t)))?;
                left.swap_remove(k);
            }
            Ok(Move::exchange(&tiles))
        }
        [coord, word] => {
            let wanted = parse_placement(coord, word, board, dist)?;
            let leaves = RackLeaves::new(rack, |_| 0);
            let req = Request { board, rack, leaves: &leaves, can_exchange: true, opening_vowel_penalty: 0 };
            let all = mg.generate(ctx, &req, Mode::All);
            let one_tile = |m: &Move| {
                m.tiles_used() == 1 && wanted.tiles_used() == 1 && placed_squares(m) == placed_squares(&wanted)
            };
            all.iter()
                .find(|m| {
                    m.kind == Kind::Place
                        && m.dir == wanted.dir
                        && m.lane == wanted.lane
                        && m.start == wanted.start
                        && m.tiles() == wanted.tiles()
                })
                .or_else(|| all.iter().find(|m| one_tile(m)))
                .copied()
                .ok_or_else(|| format!("`{coord} {word}` is not a legal play"))
        }
        _ => Err("cannot read the move".into()),
    }
}

/// Re-play a logged game on the deal it says it is: each move, read from the log, must be
/// legal for the rack the seeded bag dealt, and writing the re-played game (`write_gcg` with
/// `names` by seat) must give back the log byte for byte: the same racks, scores, totals and
/// end. So a log that passes is exactly a game of that deal; which bot chose its moves is
/// not checked here.
pub fn replay_deal(text: &str, ctx: Ctx, deal_seed: u64, names: [&str; 2], source: &str) -> Result<Game, DataError> {
    let mut game = Game::new(ctx.dist, deal_seed);
    let mut mg = Generator::new();
    for (i, line) in text.lines().enumerate() {
        let Some(rest) = line.strip_prefix('>') else { continue };
        if game.is_over() {
            break;
        }
        let at = |m: String| DataError::new(format!("{source}:{}", i + 1), m);
        let f: Vec<&str> = rest.split_once(':').map_or(Vec::new(), |(_, body)| body.split_whitespace().collect());
        if f.len() < 4 {
            return Err(at("expected `>nick: RACK MOVE +SCORE TOTAL`".into()));
        }
        let mv = resolve(&f[1..f.len() - 2], &game.racks[game.on_turn], &game.board, ctx, &mut mg)
            .map_err(|e| at(format!("{e} with the dealt rack {}", ctx.dist.rack_string(&game.racks[game.on_turn]))))?;
        // A placement came out of the generator for this rack on this board, so it is legal;
        // exchanges and passes still answer to the game's rules (the bag's size).
        if mv.kind != Kind::Place {
            game.check(ctx, &mv, &mut mg).map_err(|e| at(e.to_string()))?;
        }
        game.play(ctx, &mv);
    }
    if !game.is_over() {
        return Err(DataError::new(source, "the log ends before the game does"));
    }
    let again = write_gcg(&game, names, ctx.dist);
    if again != text {
        let lines = again.lines().count().max(text.lines().count()) + 1;
        let (n, (want, got)) = again
            .lines()
            .chain(std::iter::repeat(""))
            .zip(text.lines().chain(std::iter::repeat("")))
            .take(lines)
            .enumerate()
            .find(|(_, (a, b))| a != b)
            .unwrap_or((lines - 1, ("(end of log)", "(end of log)")));
        return Err(DataError::new(
            format!("{source}:{}", n + 1),
            format!("the log says `{got}`; its deal and moves give `{want}`"),
        ));
    }
    Ok(game)
}

/// What a log written by [`write_gcg`] says happened, by seat (`p1`, `p2`), read without
/// replaying it: final scores, turns, and bingos (placements of a whole rack).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    pub scores: [i32; 2],
    pub turns: [u32; 2],
    pub bingos: [u32; 2],
}

pub fn summarize(text: &str, source: &str) -> Result<Summary, DataError> {
    let mut s = Summary::default();
    for (i, line) in text.lines().enumerate() {
        let Some(rest) = line.strip_prefix('>') else { continue };
        let at = |m: &str| DataError::new(format!("{source}:{}", i + 1), m);
        let (nick, body) = rest.split_once(':').ok_or_else(|| at("expected `>nick: ...`"))?;
        let seat = match nick {
            "p1" => 0,
            "p2" => 1,
            _ => return Err(at("players are `p1` and `p2`")),
        };
        let f: Vec<&str> = body.split_whitespace().collect();
        let total = f.last().and_then(|t| t.parse::<i32>().ok()).ok_or_else(|| at("no running total"))?;
        s.scores[seat] = total;
        if f.iter().any(|x| x.starts_with('(')) {
            continue;
        }
        s.turns[seat] += 1;
        if let [_, _, word, _, _] = f[..]
            && word.chars().filter(|&c| c != '.').count() == crate::tiles::RACK_SIZE
        {
            s.bingos[seat] += 1;
        }
    }
    Ok(s)
}

fn placed_squares(m: &Move) -> Vec<(usize, usize, u8)> {
    let (row, col) = m.origin();
    m.tiles()
        .iter()
        .enumerate()
        .filter(|(_, t)| **t != 0)
        .map(|(k, &t)| if m.dir() == ACROSS { (row, col + k, t) } else { (row + k, col, t) })
        .collect()
}

/// Read `8D WO.D` / `D8 WORD` against the board: `.` or a letter matching the board is a
/// played-through tile; a letter on an empty square is placed (lowercase = blank).
pub fn parse_placement(coord: &str, word: &str, board: &Board, dist: &Distribution) -> Result<Move, String> {
    let (dir, row, col) = parse_coord(coord).ok_or_else(|| format!("bad coordinate `{coord}`"))?;
    let word = word.replace(['(', ')'], "");
    let n = word.chars().count();
    let (lane, start) = if dir == ACROSS { (row, col) } else { (col, row) };
    if n < 2 || start + n > DIM {
        return Err(format!("`{word}` does not fit at {coord}"));
    }
    let mut m =
        Move { kind: Kind::Place, dir: dir as u8, lane: lane as u8, start: start as u8, len: n as u8, ..Move::PASS };
    for (k, c) in word.chars().enumerate() {
        let (r, cc) = if dir == ACROSS { (row, col + k) } else { (row + k, col) };
        let on = board.at(r, cc);
        m.tiles[start + k] = if c == '.' {
            if on == 0 {
                return Err(format!("`.` at an empty square in `{word}`"));
            }
            0
        } else {
            let t = dist.board_tile(c).ok_or_else(|| format!("`{c}` is not a tile"))?;
            if on != 0 {
                if letter_of(on) != letter_of(t) {
                    return Err(format!("`{c}` in `{word}` is over a different tile"));
                }
                0
            } else {
                t
            }
        };
    }
    Ok(m)
}
