//! Reading games as players and other programs write them: tournament and online logs,
//! annotated games with partial racks, withdrawn phonies, challenge bonuses, time penalties,
//! notes, `#rack1`/`#rack2`, CRLF, ISO-8859-1.
//!
//! The log is the record of what happened on the board: a play stands whether or not the
//! lexicon has its words (each such play is a warning naming them), but the board's own rules
//! hold (where tiles go, what they join, what they score, the running totals, the tiles of the
//! distribution). The first line that breaks one stops the reading there: the turns before it
//! stay readable, and the refusal names the line, the play and the rule.
//!
//! Rack sizes and the bag come from the plays, not from the racks shown: a player holds seven
//! tiles while the bag lasts, whatever an annotator wrote. A rack shown with fewer tiles than
//! the player holds is partial (annotated games show the opponent's played tiles only).

use super::parse_placement;
use super::placement;
use crate::board::Board;
use crate::error::DataError;
use crate::movegen::Ctx;
use crate::moves::{Kind, Move, parse_coord};
use crate::tiles::{Distribution, HIDDEN, RACK_SIZE};

/// A game read from a log.
#[derive(Debug)]
pub struct Replay {
    /// The board after the last turn read.
    pub board: Board,
    /// Both totals after the last line read, as logged.
    pub scores: [i32; 2],
    /// Every turn read, in order (a withdrawn phony is one turn, marked `withdrawn`).
    pub turns: Vec<LoggedTurn>,
    /// The game ran to its end: an end-of-game line came with the bag empty by the plays. A
    /// `(time)` or `(challenge)` line ends nothing.
    pub ended: bool,
    /// What stands but is worth saying (plays with words the lexicon lacks, exchanges the rules
    /// would not allow), each at its line.
    pub warnings: Vec<DataError>,
    /// The first line that could not be read as the rules allow: the reading stopped there.
    pub refused: Option<DataError>,
    /// `#rack1` / `#rack2`: the players' racks after the last turn.
    pub racks: [Option<Vec<u8>>; 2],
    /// `#lexicon`: the word list the game was played with, as the log names it.
    pub lexicon: Option<String>,
}

/// One turn of a log.
#[derive(Clone, Debug)]
pub struct LoggedTurn {
    pub player: usize,
    /// The rack as the log shows it, with the tiles played added where it did not show them;
    /// shorter than [`LoggedTurn::rack_size`] when partial.
    pub rack: Vec<u8>,
    /// The move and its logged score. An exchange of tiles the log does not name holds
    /// `HIDDEN` tiles.
    pub mv: Move,
    /// The play was challenged off (a `--` line): it left the board and scored nothing.
    pub withdrawn: bool,
    /// The words of the play that the lexicon lacks.
    pub unknown_words: Vec<String>,
    /// Both totals before the turn, as logged (bonuses and penalties included).
    pub before: [i32; 2],
    /// Both players' rack sizes and the bag before the turn.
    pub sizes: [usize; 2],
    pub bag: usize,
    /// The line in the file (from 1).
    pub line: usize,
}

impl LoggedTurn {
    /// Tiles the player held before the turn, by the rules (seven while the bag lasts).
    pub fn rack_size(&self) -> usize {
        self.sizes[self.player]
    }

    /// Whether the log shows the whole rack.
    pub fn rack_complete(&self) -> bool {
        self.rack.len() == self.rack_size()
    }

    /// Rack sizes and the bag after the turn.
    pub fn after(&self) -> ([usize; 2], usize) {
        let (mut sizes, mut bag) = (self.sizes, self.bag);
        if self.mv.kind == Kind::Place && !self.withdrawn {
            let used = self.mv.tiles_used();
            let drawn = used.min(bag);
            bag -= drawn;
            sizes[self.player] = sizes[self.player] - used + drawn;
        }
        (sizes, bag)
    }
}

impl Replay {
    /// The replay, or its refusal when a line could not be read.
    pub fn whole(self) -> Result<Self, DataError> {
        match self.refused {
            Some(e) => Err(e),
            None => Ok(self),
        }
    }
}

/// Reads a GCG game (text already decoded, see [`decode`]), stopping at the first line the
/// rules refuse (`Replay::refused`). `source` names the file in errors and warnings.
pub fn read(text: &str, ctx: Ctx, source: &str) -> Replay {
    read_at(text, ctx, source, 1)
}

/// [`read`] of a game whose first line is line `first_line` of `source` (a file of many games).
pub fn read_at(text: &str, ctx: Ctx, source: &str, first_line: usize) -> Replay {
    let mut r = Reader::new(ctx);
    for (i, raw) in text.lines().enumerate() {
        let line = i + first_line;
        if let Err(message) = r.line(raw.trim_end(), line) {
            r.refused = Some(DataError::new(format!("{source}:{line}"), message));
            break;
        }
    }
    let total: usize = (0..ctx.dist.size() as u8).map(|t| ctx.dist.count(t) as usize).sum();
    let bag = r.turns.last().map_or(total.saturating_sub(2 * RACK_SIZE), |t| t.after().1);
    if let Some(line) = r.end_line.filter(|_| bag > 0 && r.refused.is_none()) {
        r.warnings.push((line, format!("an end-of-game line with {bag} tiles still in the bag by the plays logged: the game is not read as finished")));
    }
    Replay {
        board: r.board,
        scores: r.totals,
        ended: r.end_line.is_some() && bag == 0 && r.refused.is_none(),
        turns: r.turns,
        warnings: r.warnings.into_iter().map(|(l, m)| DataError::new(format!("{source}:{l}"), m)).collect(),
        refused: r.refused,
        racks: r.racks,
        lexicon: r.lexicon,
    }
}

/// [`read`], refusing the whole game at its first refused line (for logs that must be whole:
/// training data, tests of the writer).
pub fn replay(text: &str, ctx: Ctx, source: &str) -> Result<Replay, DataError> {
    read(text, ctx, source).whole()
}

/// [`replay`] of a game whose first line is line `first_line` of `source`.
pub fn replay_at(text: &str, ctx: Ctx, source: &str, first_line: usize) -> Result<Replay, DataError> {
    read_at(text, ctx, source, first_line).whole()
}

/// The text of a GCG file: as its `#character-encoding` line says (UTF-8 or ISO-8859-1, GCG's
/// historical default); without one, UTF-8 if the bytes are UTF-8, else ISO-8859-1.
pub fn decode(bytes: &[u8], source: &str) -> Result<String, DataError> {
    decode_at(bytes, source, 1)
}

/// [`decode`] of a game whose first line is line `first_line` of `source`.
pub fn decode_at(bytes: &[u8], source: &str, first_line: usize) -> Result<String, DataError> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let declared = bytes.split(|&b| b == b'\n').take_while(|l| !l.starts_with(b">")).enumerate().find_map(|(i, l)| {
        l.strip_prefix(b"#character-encoding")
            .map(|v| (i + first_line, String::from_utf8_lossy(v).trim().to_ascii_lowercase()))
    });
    let latin1 = || bytes.iter().map(|&b| b as char).collect::<String>();
    match declared {
        Some((_, e)) if matches!(e.as_str(), "utf-8" | "utf8") => String::from_utf8(bytes.to_vec()).map_err(|e| {
            let line = bytes[..e.utf8_error().valid_up_to()].iter().filter(|&&b| b == b'\n').count() + first_line;
            DataError::new(format!("{source}:{line}"), "not UTF-8, though the file's `#character-encoding` says it is")
        }),
        Some((_, e)) if matches!(e.as_str(), "iso-8859-1" | "iso8859-1" | "latin1" | "latin-1") => Ok(latin1()),
        Some((line, e)) => Err(DataError::new(
            format!("{source}:{line}"),
            format!("`#character-encoding {e}`: only UTF-8 and ISO-8859-1 are read"),
        )),
        None => Ok(String::from_utf8(bytes.to_vec()).unwrap_or_else(|_| latin1())),
    }
}

/// The state of a game being read.
struct Reader<'a> {
    ctx: Ctx<'a>,
    nicks: [Option<String>; 2],
    board: Board,
    totals: [i32; 2],
    sizes: [usize; 2],
    bag: usize,
    turns: Vec<LoggedTurn>,
    warnings: Vec<(usize, String)>,
    refused: Option<DataError>,
    racks: [Option<Vec<u8>>; 2],
    /// The line of the last end-of-game line.
    end_line: Option<usize>,
    lexicon: Option<String>,
    /// The words of the play being recorded that the lexicon lacks.
    unknown_words: Vec<String>,
}

/// What a move line does.
enum Event<'t> {
    Place {
        coord: &'t str,
        word: &'t str,
    },
    Withdraw,
    Pass,
    Exchange(&'t str),
    Challenge,
    Time,
    /// `(RACK) +N`: the opponent's rack, counted to the player who went out.
    EndPoints(&'t str),
    /// `RACK (RACK) -N`: the player's own rack, counted against them.
    EndPenalty,
}

impl<'a> Reader<'a> {
    fn new(ctx: Ctx<'a>) -> Self {
        let total: usize = (0..ctx.dist.size() as u8).map(|t| ctx.dist.count(t) as usize).sum();
        Self {
            ctx,
            nicks: [None, None],
            board: Board::new(),
            totals: [0; 2],
            sizes: [RACK_SIZE; 2],
            bag: total.saturating_sub(2 * RACK_SIZE),
            turns: Vec::new(),
            warnings: Vec::new(),
            refused: None,
            racks: [None, None],
            end_line: None,
            lexicon: None,
            unknown_words: Vec::new(),
        }
    }

    fn dist(&self) -> &'a Distribution {
        self.ctx.dist
    }

    /// Reads one line; an error is the refusal of that line.
    fn line(&mut self, line: &str, at: usize) -> Result<(), String> {
        if let Some(rest) = line.strip_prefix("#player") {
            let mut f = rest.split_whitespace();
            let (Some(n), Some(nick)) = (f.next(), f.next()) else {
                return Err("`#player` needs a number and a nickname: `#player1 nick Full Name`".into());
            };
            let seat = match n {
                "1" => 0,
                "2" => 1,
                _ => return Err(format!("`#player{n}`: a game has players 1 and 2")),
            };
            if self.nicks[1 - seat].as_deref() == Some(nick) {
                return Err(format!("both players are `{nick}`: nicknames must differ"));
            }
            self.nicks[seat] = Some(nick.to_string());
            return Ok(());
        }
        if let Some(name) = line.strip_prefix("#lexicon") {
            self.lexicon = Some(name.trim().to_string()).filter(|n| !n.is_empty());
            return Ok(());
        }
        for (p, pragma) in ["#rack1", "#rack2"].iter().enumerate() {
            if let Some(rest) = line.strip_prefix(pragma) {
                let rack = self.rack(rest.trim())?;
                self.racks[p] = Some(rack);
                return Ok(());
            }
        }
        // Notes, titles, descriptions and their continuation lines say nothing of the board.
        let Some(rest) = line.strip_prefix('>') else { return Ok(()) };
        let (nick, body) = rest.split_once(':').ok_or("expected `>nick: ...`")?;
        let p = self
            .nicks
            .iter()
            .position(|n| n.as_deref() == Some(nick.trim()))
            .ok_or_else(|| format!("`{nick}` is no player: the `#player1` and `#player2` lines name them"))?;
        let f: Vec<&str> = body.split_whitespace().collect();
        if f.len() < 3 {
            return Err(format!("`{}`: expected `RACK MOVE +SCORE TOTAL`", body.trim()));
        }
        let (points, total) = (number(f[f.len() - 2])?, number(f[f.len() - 1])?);
        let mid = &f[..f.len() - 2];
        let (rack, event) = event(mid)?;
        let rack = rack.map(|r| self.rack(r)).transpose()?;
        if self.totals[p] + points != total {
            return Err(format!(
                "the total {total} is not what the log's scores add up to ({})",
                self.totals[p] + points
            ));
        }
        if matches!(event, Event::Pass | Event::Exchange(_)) && points != 0 {
            return Err(format!("a pass or an exchange scores nothing; the log says {points:+}"));
        }
        match event {
            Event::Place { coord, word } => self.place(p, rack, coord, word, points, at)?,
            Event::Withdraw => self.withdraw(p, points)?,
            Event::Pass => {
                let rack = self.known_rack(p, rack, &[], "-")?;
                self.turn(p, rack, Move::PASS, at)?
            }
            Event::Exchange(tiles) => self.exchange(p, rack, tiles, at)?,
            Event::Challenge | Event::Time => {}
            Event::EndPoints(tiles) => {
                let tiles = self.rack(tiles)?;
                let value: i32 = tiles.iter().map(|&t| self.dist().score(t)).sum();
                if points != 2 * value {
                    self.warnings.push((
                        at,
                        format!("the rack {} is worth {} at the end, the log says {points:+}", mid[0], 2 * value),
                    ));
                }
                self.end_line = Some(at);
            }
            Event::EndPenalty => {
                let value: i32 = rack.iter().flatten().map(|&t| self.dist().score(t)).sum();
                if rack.is_some() && points != -value {
                    self.warnings.push((
                        at,
                        format!("the rack {} is worth {} at the end, the log says {points:+}", mid[0], -value),
                    ));
                }
                self.end_line = Some(at)
            }
        }
        self.totals[p] += points;
        Ok(())
    }

    fn rack(&self, text: &str) -> Result<Vec<u8>, String> {
        let rack = self.dist().parse_rack(text).map_err(|e| format!("rack `{text}`: {e}"))?;
        if rack.len() > RACK_SIZE {
            return Err(format!("rack `{text}` has {} tiles; a rack holds {RACK_SIZE}", rack.len()));
        }
        Ok(rack)
    }

    /// The rack a turn shows, checked against what the player holds by the rules, with the
    /// tiles `used` added where a partial rack did not show them.
    fn known_rack(&self, p: usize, rack: Option<Vec<u8>>, used: &[u8], shown: &str) -> Result<Vec<u8>, String> {
        let size = self.sizes[p];
        let mut rack = rack.unwrap_or_default();
        if rack.len() > size {
            return Err(format!(
                "the rack shows {} tiles, but by the plays logged the player holds {size} (the bag has {})",
                rack.len(),
                self.bag
            ));
        }
        let mut left = rack.clone();
        for &t in used {
            match left.iter().position(|&x| x == t) {
                Some(k) => {
                    left.swap_remove(k);
                }
                None if rack.len() < size => rack.push(t),
                None => {
                    return Err(format!(
                        "`{shown}` uses `{}`, which is not on the rack {}",
                        self.dist().rack_char(t),
                        self.dist().rack_string(&rack)
                    ));
                }
            }
        }
        if rack.len() > size {
            return Err(format!("`{shown}` needs more tiles than the {size} the player holds"));
        }
        Ok(rack)
    }

    fn place(
        &mut self,
        p: usize,
        rack: Option<Vec<u8>>,
        coord: &str,
        word: &str,
        points: i32,
        at: usize,
    ) -> Result<(), String> {
        let play = format!("{coord} {word}");
        let mut mv = parse_placement(coord, word, &self.board, self.dist()).map_err(|e| format!("`{play}`: {e}"))?;
        let placed =
            placement::check(&self.board, &mv, self.ctx).map_err(|e| format!("`{play}` is not a legal play: {e}"))?;
        let used: Vec<u8> = mv.rack_tiles().collect();
        let rack = self.known_rack(p, rack, &used, &play)?;
        if placed.score != points {
            return Err(format!("`{play}` scores {} by the rules; the log says {points:+}", placed.score));
        }
        let unknown: Vec<String> = placed
            .words
            .iter()
            .filter(|w| !self.ctx.kwg.contains(w))
            .map(|w| w.iter().map(|&t| self.dist().rack_char(t)).collect())
            .collect();
        if !unknown.is_empty() {
            let unknown = unknown.clone();
            self.warnings.push((
                at,
                format!("`{play}` forms {}, which the lexicon lacks; the play stands as logged", unknown.join(", ")),
            ));
        }
        mv.score = points;
        self.unknown_words = unknown;
        let mut board = self.board.clone();
        board.place(mv.dir(), mv.lane as usize, mv.start as usize, mv.tiles(), self.ctx.kwg, self.dist());
        let on_board = crate::game::board_counts(&board);
        if let Some(t) = (0..self.dist().size() as u8).find(|&t| on_board[t as usize] > self.dist().count(t)) {
            return Err(format!(
                "`{play}` puts more `{}` on the board than the distribution holds",
                self.dist().rack_char(t)
            ));
        }
        self.board = board;
        self.turn(p, rack, mv, at)
    }

    fn exchange(&mut self, p: usize, rack: Option<Vec<u8>>, tiles: &str, at: usize) -> Result<(), String> {
        let thrown = match tiles.parse::<usize>() {
            Ok(n) if (1..=RACK_SIZE).contains(&n) => vec![HIDDEN; n],
            Ok(n) => return Err(format!("an exchange of {n} tiles: a rack holds {RACK_SIZE}")),
            Err(_) => self.dist().parse_rack(tiles).map_err(|e| format!("exchange `-{tiles}`: {e}"))?,
        };
        if self.bag < RACK_SIZE {
            self.warnings.push((
                at,
                format!("an exchange with {} tiles in the bag, which the rules (at least {RACK_SIZE}) do not allow; it stands as logged", self.bag),
            ));
        }
        let known: Vec<u8> = thrown.iter().copied().filter(|&t| t != HIDDEN).collect();
        let rack = self.known_rack(p, rack, &known, &format!("-{tiles}"))?;
        if thrown.len() > self.sizes[p] {
            return Err(format!("an exchange of {} tiles, but the player holds {}", thrown.len(), self.sizes[p]));
        }
        self.turn(p, rack, Move::exchange(&thrown), at)
    }

    /// Takes back the player's last play (`--`: challenged off).
    fn withdraw(&mut self, p: usize, points: i32) -> Result<(), String> {
        let last = self.turns.last_mut().filter(|t| t.player == p && t.mv.kind == Kind::Place && !t.withdrawn);
        let Some(last) = last else {
            return Err("`--` takes back a play, but the last turn is not a play by this player".into());
        };
        if points != -last.mv.score {
            return Err(format!(
                "`--` takes back a play of {:+}, so it loses {}, not {points:+}",
                last.mv.score, -last.mv.score
            ));
        }
        last.withdrawn = true;
        let (sizes, bag) = last.after();
        (self.sizes, self.bag) = (sizes, bag);
        let mut board = Board::new();
        for t in self.turns.iter().filter(|t| t.mv.kind == Kind::Place && !t.withdrawn) {
            board.place(t.mv.dir(), t.mv.lane as usize, t.mv.start as usize, t.mv.tiles(), self.ctx.kwg, self.ctx.dist);
        }
        self.board = board;
        Ok(())
    }

    /// Records a turn; `totals` do not hold its score yet.
    fn turn(&mut self, p: usize, rack: Vec<u8>, mv: Move, at: usize) -> Result<(), String> {
        let before = self.totals;
        let t = LoggedTurn {
            player: p,
            rack,
            mv,
            withdrawn: false,
            unknown_words: std::mem::take(&mut self.unknown_words),
            before,
            sizes: self.sizes,
            bag: self.bag,
            line: at,
        };
        (self.sizes, self.bag) = t.after();
        self.turns.push(t);
        Ok(())
    }
}

/// Splits a move line's fields before the score into the rack shown (if any) and the event.
fn event<'t>(mid: &[&'t str]) -> Result<(Option<&'t str>, Event<'t>), String> {
    let last = mid[mid.len() - 1];
    let placement = mid.len() >= 2 && !last.starts_with(['(', '-']) && parse_coord(mid[mid.len() - 2]).is_some();
    let (event, used) = if placement {
        (Event::Place { coord: mid[mid.len() - 2], word: last }, 2)
    } else if last == "--" {
        (Event::Withdraw, 1)
    } else if last == "-" {
        (Event::Pass, 1)
    } else if let Some(tiles) = last.strip_prefix('-') {
        (Event::Exchange(tiles), 1)
    } else if last.eq_ignore_ascii_case("(challenge)") {
        (Event::Challenge, 1)
    } else if last.eq_ignore_ascii_case("(time)") {
        (Event::Time, 1)
    } else if let Some(tiles) = last.strip_prefix('(').and_then(|l| l.strip_suffix(')')) {
        (if mid.len() == 1 { Event::EndPoints(tiles) } else { Event::EndPenalty }, 1)
    } else {
        return Err(format!(
            "cannot read `{}`: expected a play (`8D WORD`), `-` (pass), `-TILES` (exchange), `--` (withdrawn), `(challenge)`, `(time)` or `(RACK)`",
            mid.join(" ")
        ));
    };
    match &mid[..mid.len() - used] {
        [] => Ok((None, event)),
        [rack] => Ok((Some(rack), event)),
        more => Err(format!("cannot read `{}` before the move", more.join(" "))),
    }
}

/// A score or total: `+24`, `-24`, `0`.
fn number(s: &str) -> Result<i32, String> {
    s.strip_prefix('+').unwrap_or(s).parse::<i32>().map_err(|_| format!("`{s}` is not a score"))
}
