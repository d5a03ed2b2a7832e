//! Game logs: GCG (the standard annotated-game format) and a per-turn CSV, written for our own
//! games and read as players and other programs write them.
//!
//! # Design notes
//!
//! Two readers for two kinds of log. `read` (module `read`) takes a log as people and other
//! programs write it: withdrawn phonies, challenge bonuses, time penalties, partial racks, any
//! word (the log is the record; words the lexicon lacks are warnings), checking the board's
//! rules (`placement::check`: where tiles go, what they join, what they score) and stopping at
//! the first line that breaks one, the turns before it kept; `game_at` (module `position`)
//! builds the position after a turn for `worker infer`. `replay_deal` is strict: it re-plays one
//! of our logs on the deal it claims and requires it to write back byte for byte (the
//! coordinator's check of uploads). `write_gcg` and `write_csv` write a finished game
//! (`record::GameRecord`); `summarize` reads one of our logs' scores, turns and bingos without
//! replaying. A rules module: it imports no player (`engine/tests/layers.rs`).

mod placement;
mod position;
mod read;

pub use placement::{Placed, check as check_placement};
pub use position::{At, Viewer, game_at};
pub use read::{LoggedTurn, Replay, decode, decode_at, read, read_at, replay, replay_at};

use crate::board::{ACROSS, Board, DIM};
use crate::error::DataError;
use crate::game::Game;
use crate::movegen::{Ctx, Generator};
use crate::moves::{Kind, Move, parse_coord};
use crate::record::GameRecord;
use crate::tiles::{Distribution, letter_of};
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

/// The move a GCG move field names (`8D WO.D`, `-TILES`, `-`), with its score, for `rack` on
/// `board`; a placement must be legal: its tiles on the rack, placed by the board's rules
/// (`placement::check`), every word it forms in the lexicon. No move is generated, so checking a
/// logged move costs a few lookups, not a search (the coordinator checks every uploaded game
/// this way); `engine/tests/gcg.rs` holds it to the move generator.
pub fn resolve(text: &[&str], rack: &[u8], board: &Board, ctx: Ctx) -> Result<Move, String> {
    let dist = ctx.dist;
    let take = |tiles: &mut dyn Iterator<Item = u8>| -> Result<(), String> {
        let mut left = rack.to_vec();
        for t in tiles {
            let k = left
                .iter()
                .position(|&u| u == t)
                .ok_or_else(|| format!("`{}` is not on the rack {}", dist.rack_char(t), dist.rack_string(rack)))?;
            left.swap_remove(k);
        }
        Ok(())
    };
    match text {
        ["-"] => Ok(Move::PASS),
        [x] if x.starts_with('-') => {
            let tiles = dist.parse_rack(&x[1..])?;
            take(&mut tiles.iter().copied())?;
            Ok(Move::exchange(&tiles))
        }
        [coord, word] => {
            let mut mv = parse_placement(coord, word, board, dist)?;
            let play = format!("{coord} {word}");
            let placed = placement::check(board, &mv, ctx).map_err(|e| format!("`{play}` is not a legal play: {e}"))?;
            take(&mut mv.rack_tiles()).map_err(|e| format!("`{play}`: {e}"))?;
            if let Some(w) = placed.words.iter().find(|w| !ctx.kwg.contains(w)) {
                let w: String = w.iter().map(|&t| dist.rack_char(t)).collect();
                return Err(format!("`{play}` forms {w}, which the lexicon lacks"));
            }
            mv.score = placed.score;
            Ok(mv)
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
        let mv = resolve(&f[1..f.len() - 2], &game.racks[game.on_turn], &game.board, ctx)
            .map_err(|e| at(format!("{e} with the dealt rack {}", ctx.dist.rack_string(&game.racks[game.on_turn]))))?;
        // A placement `resolve` accepts is legal for this rack on this board; exchanges and
        // passes still answer to the game's rules (the bag's size).
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
