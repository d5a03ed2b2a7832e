//! CGP position notation:
//! `<15 rows joined by '/'> <rack on turn>/<other rack> <score on turn>/<other score>
//! <consecutive scoreless turns> [op args;]...` — digits are runs of empty squares, lowercase
//! letters are blanks on the board, `?` is a blank on a rack.

use crate::board::{Board, DIM};
use crate::error::DataError;
use crate::game::{Bag, Game, board_counts};
use crate::lexicon::Kwg;
use crate::tiles::Distribution;

#[derive(Clone, Debug)]
pub struct Position {
    pub board: Board,
    /// `racks[0]` is the player on turn's.
    pub racks: [Vec<u8>; 2],
    pub scores: [i32; 2],
    pub scoreless: u8,
    /// Operations such as `lex NWL20;`, kept as (opcode, arguments).
    pub ops: Vec<(String, String)>,
}

fn err(field: &str, message: impl Into<String>) -> DataError {
    DataError::new(format!("CGP {field}"), message)
}

impl Position {
    /// Parse a CGP string. Cross-sets are not computed (see `into_game`).
    pub fn parse(cgp: &str, dist: &Distribution) -> Result<Self, DataError> {
        let mut fields = cgp.trim().splitn(5, char::is_whitespace).filter(|s| !s.is_empty());
        let rows = fields.next().ok_or_else(|| err("board", "empty position"))?;
        let racks = fields.next().ok_or_else(|| err("racks", "missing (expected `RACK/RACK`)"))?;
        let scores = fields.next().ok_or_else(|| err("scores", "missing (expected `N/N`)"))?;
        let zeros = fields.next().ok_or_else(|| err("scoreless turns", "missing"))?;
        let rest = fields.next().unwrap_or("");

        let mut board = Board::new();
        let row_strs: Vec<&str> = rows.split('/').collect();
        if row_strs.len() != DIM {
            return Err(err("board", format!("{} rows, expected {DIM}", row_strs.len())));
        }
        for (r, row) in row_strs.iter().enumerate() {
            let mut col = 0;
            let mut chars = row.chars().peekable();
            while let Some(c) = chars.next() {
                if let Some(d) = c.to_digit(10) {
                    let mut n = d as usize;
                    while let Some(d2) = chars.peek().and_then(|c| c.to_digit(10)) {
                        n = (n * 10 + d2 as usize).min(DIM + 1);
                        chars.next();
                    }
                    if n == 0 {
                        return Err(err(&format!("row {}", r + 1), "empty run of 0 squares"));
                    }
                    col += n;
                } else {
                    let t = dist
                        .board_tile(c)
                        .ok_or_else(|| err(&format!("row {}", r + 1), format!("`{c}` is not a tile")))?;
                    if col < DIM {
                        board.set(r, col, t);
                    }
                    col += 1;
                }
                if col > DIM {
                    return Err(err(&format!("row {}", r + 1), format!("more than {DIM} squares")));
                }
            }
            if col != DIM {
                return Err(err(&format!("row {}", r + 1), format!("{col} squares, expected {DIM}")));
            }
        }

        let (r0, r1) = racks.split_once('/').ok_or_else(|| err("racks", format!("`{racks}`: expected `RACK/RACK`")))?;
        let parse_rack = |s: &str, which: &str| -> Result<Vec<u8>, DataError> {
            let rack = dist.parse_rack(s).map_err(|m| err(which, m))?;
            if rack.len() > crate::tiles::RACK_SIZE {
                return Err(err(which, format!("{} tiles; a rack holds at most 7", rack.len())));
            }
            Ok(rack)
        };
        let racks = [parse_rack(r0, "rack on turn")?, parse_rack(r1, "other rack")?];

        let (s0, s1) = scores.split_once('/').ok_or_else(|| err("scores", format!("`{scores}`: expected `N/N`")))?;
        let score = |s: &str| s.parse::<i32>().map_err(|_| err("scores", format!("`{s}` is not a number")));
        let scores = [score(s0)?, score(s1)?];
        let scoreless =
            zeros.parse::<u8>().map_err(|_| err("scoreless turns", format!("`{zeros}` is not a number")))?;

        let mut ops = Vec::new();
        for op in rest.split(';').map(str::trim).filter(|s| !s.is_empty()) {
            let (code, args) = op.split_once(char::is_whitespace).unwrap_or((op, ""));
            ops.push((code.to_string(), args.trim().to_string()));
        }

        let pos = Self { board, racks, scores, scoreless, ops };
        pos.check_counts(dist)?;
        Ok(pos)
    }

    /// More tiles of a kind on the board and racks than the distribution holds is an error.
    fn check_counts(&self, dist: &Distribution) -> Result<(), DataError> {
        let mut used = board_counts(&self.board);
        for &t in self.racks.iter().flatten() {
            used[t as usize] += 1;
        }
        for t in 0..dist.size() as u8 {
            if used[t as usize] > dist.count(t) {
                return Err(err(
                    "tiles",
                    format!(
                        "{} `{}` on board and racks, but the distribution has {}",
                        used[t as usize],
                        dist.rack_char(t),
                        dist.count(t)
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Tiles in neither rack nor on the board.
    pub fn bag_tiles(&self, dist: &Distribution) -> Vec<u8> {
        let mut used = board_counts(&self.board);
        for &t in self.racks.iter().flatten() {
            used[t as usize] += 1;
        }
        (0..dist.size() as u8)
            .flat_map(|t| std::iter::repeat_n(t, (dist.count(t) - used[t as usize]) as usize))
            .collect()
    }

    /// A game at this position with the player on turn as player 0; the bag's order comes
    /// from `seed`.
    pub fn into_game(mut self, kwg: &Kwg, dist: &Distribution, seed: u64) -> Game {
        self.board.recompute_all(kwg, dist);
        let bag = Bag::from_tiles(self.bag_tiles(dist), seed);
        let mut g = Game::new(dist, seed);
        g.board = self.board;
        g.racks = self.racks;
        g.scores = self.scores;
        g.bag = bag;
        g.scoreless = self.scoreless;
        g
    }
}

/// Write the position of `game` from the view of the player on turn.
pub fn write(game: &Game, dist: &Distribution) -> String {
    let mut rows = Vec::with_capacity(DIM);
    for row in game.board.rows() {
        let mut s = String::new();
        let mut run = 0;
        for &t in row {
            if t == 0 {
                run += 1;
                continue;
            }
            if run > 0 {
                s += &run.to_string();
                run = 0;
            }
            s.push(dist.board_char(t));
        }
        if run > 0 {
            s += &run.to_string();
        }
        rows.push(s);
    }
    let p = game.on_turn;
    format!(
        "{} {}/{} {}/{} {}",
        rows.join("/"),
        dist.rack_string(&game.racks[p]),
        dist.rack_string(&game.racks[1 - p]),
        game.scores[p],
        game.scores[1 - p],
        game.scoreless
    )
}
