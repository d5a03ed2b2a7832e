//! A logged placement judged by the rules of the board alone: where its tiles go, whether it
//! joins the tiles already down, what it scores and which words it forms. Whether those words
//! are in a lexicon does not decide whether a logged play stands (the log is the record of what
//! happened on the board); the reader reports the ones the lexicon lacks.

use crate::board::{ACROSS, Board, DIM, idx};
use crate::movegen::{BINGO_BONUS, Ctx};
use crate::moves::{Kind, Move};
use crate::tiles::{RACK_SIZE, letter_of};

/// What a placement does by the rules.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placed {
    pub score: i32,
    /// Every word formed, the main word first, as letters (blanks read as their letter).
    pub words: Vec<Vec<u8>>,
}

/// Checks `mv` (a placement as `parse_placement` reads it: 0 where a tile is already down) on
/// `board` and scores it; the error says which rule it breaks.
pub fn check(board: &Board, mv: &Move, ctx: Ctx) -> Result<Placed, String> {
    debug_assert_eq!(mv.kind, Kind::Place);
    let (dir, lane, start, len) = (mv.dir(), mv.lane as usize, mv.start as usize, mv.len as usize);
    let square = |pos: usize| if dir == ACROSS { (lane, pos) } else { (pos, lane) };
    let placed = mv.tiles_used();
    if placed == 0 {
        return Err("it places no tile: every square of the word is already covered".into());
    }
    if placed > RACK_SIZE {
        return Err(format!("it places {placed} tiles; a rack holds {RACK_SIZE}"));
    }
    for end in [start.checked_sub(1), Some(start + len).filter(|&p| p < DIM)].into_iter().flatten() {
        let (r, c) = square(end);
        if board.at(r, c) != 0 {
            return Err(format!(
                "the word goes on through the tile at {}: a play is written as the whole word it makes",
                coord(r, c)
            ));
        }
    }
    let perpendicular = |pos: usize| -> (Vec<u8>, i32, i32) {
        // The tiles above and below (or left and right of) the square, as one word with the
        // placed tile in it: its letters, and the score of the tiles already down.
        let (r, c) = square(pos);
        let at = |k: isize| -> Option<u8> {
            let (rr, cc) = if dir == ACROSS { (r as isize + k, c as isize) } else { (r as isize, c as isize + k) };
            ((0..DIM as isize).contains(&rr) && (0..DIM as isize).contains(&cc))
                .then(|| board.at(rr as usize, cc as usize))
                .filter(|&t| t != 0)
        };
        let (mut lo, mut hi) = (0isize, 0isize);
        while at(lo - 1).is_some() {
            lo -= 1;
        }
        while at(hi + 1).is_some() {
            hi += 1;
        }
        let mut word = Vec::new();
        let mut existing = 0;
        for k in lo..=hi {
            match at(k) {
                Some(t) if k != 0 => {
                    word.push(letter_of(t));
                    existing += ctx.dist.score(t);
                }
                _ => word.push(letter_of(mv.tiles[pos])),
            }
        }
        let neighbours = (hi - lo) as i32;
        (word, existing, neighbours)
    };
    let touches = (start..start + len).any(|pos| mv.tiles[pos] == 0 || perpendicular(pos).2 > 0);
    if board.is_empty() {
        let (r, c) = ctx.layout.start;
        if !(start..start + len).any(|pos| square(pos) == (r, c)) {
            return Err(format!("the first play must cover the start square {}", coord(r, c)));
        }
    } else if !touches {
        return Err("it touches no tile already on the board".into());
    }
    let mut main = Vec::with_capacity(len);
    let (mut main_sum, mut main_mult, mut cross_total) = (0, 1, 0);
    for pos in start..start + len {
        let (r, c) = square(pos);
        let t = mv.tiles[pos];
        if t == 0 {
            let on = board.at(r, c);
            main.push(letter_of(on));
            main_sum += ctx.dist.score(on);
            continue;
        }
        let (lm, wm) =
            (ctx.layout.letter_mult[ACROSS][idx(r, c)] as i32, ctx.layout.word_mult[ACROSS][idx(r, c)] as i32);
        let value = ctx.dist.score(t) * lm;
        main.push(letter_of(t));
        main_sum += value;
        main_mult *= wm;
        let (_, existing, neighbours) = perpendicular(pos);
        if neighbours > 0 {
            cross_total += (existing + value) * wm;
        }
    }
    let mut words = vec![main];
    words.extend((start..start + len).filter(|&p| mv.tiles[p] != 0).filter_map(|p| {
        let (word, _, neighbours) = perpendicular(p);
        (neighbours > 0).then_some(word)
    }));
    let bingo = if placed == RACK_SIZE { BINGO_BONUS } else { 0 };
    Ok(Placed { score: main_sum * main_mult + cross_total + bingo, words })
}

/// A square as GCG names the start of an across play: row number, then column letter.
fn coord(row: usize, col: usize) -> String {
    format!("{}{}", row + 1, (b'A' + col as u8) as char)
}
