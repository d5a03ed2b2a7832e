//! Helpers shared by the engine's integration tests: lexica, self-play positions, and a
//! deliberately simple reference move generator that shares no code with the fast one.
#![allow(dead_code)]

use engine::board::{ACROSS, Board, DIM, DOWN, Layout};
use engine::bots::BotSpec;
use engine::game::Game;
use engine::lexicon::{Kwg, parse_word_list};
use engine::movegen::{Ctx, Generator};
use engine::rng::{Rng, derive};
use engine::tiles::{BLANK_BIT, Distribution};
use std::collections::HashSet;
use std::sync::OnceLock;

pub struct Lex {
    pub words: Vec<Vec<u8>>,
    pub set: HashSet<Vec<u8>>,
    /// Distinct words by length.
    pub by_len: Vec<Vec<Vec<u8>>>,
    pub kwg: Kwg,
}

impl Lex {
    pub fn new(words: Vec<Vec<u8>>) -> Self {
        let kwg = Kwg::build(&words).expect("builds");
        let set: HashSet<Vec<u8>> = words.iter().cloned().collect();
        let mut by_len = vec![Vec::new(); DIM + 1];
        for w in &set {
            by_len[w.len()].push(w.clone());
        }
        Self { words, set, by_len, kwg }
    }
}

pub fn dist() -> &'static Distribution {
    static D: OnceLock<Distribution> = OnceLock::new();
    D.get_or_init(Distribution::english)
}

pub fn layout() -> &'static Layout {
    static L: OnceLock<Layout> = OnceLock::new();
    L.get_or_init(Layout::standard)
}

pub fn enable() -> &'static Lex {
    static L: OnceLock<Lex> = OnceLock::new();
    L.get_or_init(|| {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../lexica/enable.txt");
        let text = std::fs::read_to_string(path).expect("lexica/enable.txt");
        Lex::new(parse_word_list(&text, dist(), path).expect("parses"))
    })
}

/// A second, very different list: every third ENABLE word plus random letter strings, so the
/// graph's shape has nothing to do with English.
pub fn scrambled() -> &'static Lex {
    static L: OnceLock<Lex> = OnceLock::new();
    L.get_or_init(|| {
        let mut rng = Rng::new(99);
        let mut words: Vec<Vec<u8>> = enable().words.iter().step_by(3).cloned().collect();
        for _ in 0..20_000 {
            let len = 2 + rng.below(7) as usize;
            words.push((0..len).map(|_| 1 + rng.below(26) as u8).collect());
        }
        Lex::new(words)
    })
}

pub fn ctx(lex: &Lex) -> Ctx<'_> {
    Ctx { kwg: &lex.kwg, dist: dist(), layout: layout() }
}

/// Positions from seeded self-play (softmax bot for variety), at every stage of the game, with
/// racks re-dealt from the unseen tiles and, in some, blanks forced in.
pub fn positions(lex: &Lex, count: usize, seed: u64) -> Vec<(Board, Vec<u8>)> {
    let ctx = ctx(lex);
    let mut out = Vec::new();
    let mut mg = Generator::new();
    let mut g = 0;
    while out.len() < count {
        let deal = derive(seed, g);
        g += 1;
        let mut game = Game::new(dist(), deal);
        let mut bots = [
            BotSpec::parse("softmax:t=4,bag=0").unwrap().build(None, None).unwrap(),
            BotSpec::parse("greedy").unwrap().build(None, None).unwrap(),
        ];
        let mut rng = Rng::new(deal);
        while !game.is_over() && out.len() < count {
            let mut rack = game.racks[game.on_turn].clone();
            let r = rng.below(10);
            if r < 3 && !rack.is_empty() {
                rack[0] = 0;
            }
            if r < 1 && rack.len() > 1 {
                rack[1] = 0;
            }
            out.push((game.board.clone(), rack));
            let s = game.on_turn;
            let mv = bots[s].decide(ctx, &game, &mut mg, &mut rng);
            game.play(ctx, &mv);
        }
    }
    out
}

/// A placement as the reference sees it: (dir, lane, start, tiles with 0 = through, score).
pub type RefMove = (usize, usize, usize, Vec<u8>, i32);

/// Reference generator: every span of the board against every word of that length, the rack
/// and cross-words checked by brute force, scores computed from first principles.
pub fn reference_moves(lex: &Lex, board: &Board, rack: &[u8]) -> Vec<RefMove> {
    let dist = dist();
    let layout = layout();
    let at =
        |dir: usize, lane: usize, pos: usize| if dir == ACROSS { board.at(lane, pos) } else { board.at(pos, lane) };
    let rc = |dir: usize, lane: usize, pos: usize| if dir == ACROSS { (lane, pos) } else { (pos, lane) };
    let mut counts = [0u8; 64];
    for &t in rack {
        counts[t as usize] += 1;
    }
    let blanks = counts[0] as usize;
    let mut out = Vec::new();
    for dir in [ACROSS, DOWN] {
        for lane in 0..DIM {
            for start in 0..DIM {
                for len in 2..=DIM - start {
                    let end = start + len - 1;
                    if start > 0 && at(dir, lane, start - 1) != 0 || end + 1 < DIM && at(dir, lane, end + 1) != 0 {
                        continue;
                    }
                    let empties: Vec<usize> = (start..=end).filter(|&p| at(dir, lane, p) == 0).collect();
                    if empties.is_empty() || empties.len() > rack.len() {
                        continue;
                    }
                    let touches = (start..=end).any(|p| at(dir, lane, p) != 0)
                        || empties.iter().any(|&p| {
                            let (r, c) = rc(dir, lane, p);
                            [(0i32, 1i32), (0, -1), (1, 0), (-1, 0)].iter().any(|&(dr, dc)| {
                                let (r2, c2) = (r as i32 + dr, c as i32 + dc);
                                (0..DIM as i32).contains(&r2)
                                    && (0..DIM as i32).contains(&c2)
                                    && board.at(r2 as usize, c2 as usize) != 0
                            })
                        })
                        || (board.is_empty() && empties.iter().any(|&p| rc(dir, lane, p) == layout.start));
                    if !touches {
                        continue;
                    }
                    'words: for w in &lex.by_len[len] {
                        for p in start..=end {
                            let on = at(dir, lane, p);
                            if on != 0 && on & !BLANK_BIT != w[p - start] {
                                continue 'words;
                            }
                        }
                        let mut need = [0u8; 64];
                        for &p in &empties {
                            need[w[p - start] as usize] += 1;
                        }
                        let short: usize = (1..64).map(|t| need[t].saturating_sub(counts[t]) as usize).sum();
                        if short > blanks {
                            continue;
                        }
                        // Every way of covering the empty squares with rack tiles, blanks included.
                        for blank_set in 0u32..(1 << empties.len()) {
                            if blank_set.count_ones() as usize > blanks {
                                continue;
                            }
                            let mut need = [0u8; 64];
                            for (i, &p) in empties.iter().enumerate() {
                                if blank_set >> i & 1 == 0 {
                                    need[w[p - start] as usize] += 1;
                                }
                            }
                            if (1..64).any(|t| need[t] > counts[t]) {
                                continue;
                            }
                            let mut tiles = vec![0u8; len];
                            for (i, &p) in empties.iter().enumerate() {
                                tiles[p - start] = w[p - start] | if blank_set >> i & 1 == 1 { BLANK_BIT } else { 0 };
                            }
                            if empties.len() == 1 && dir == DOWN {
                                let (r, c) = rc(dir, lane, empties[0]);
                                let left = c > 0 && board.at(r, c - 1) != 0;
                                let right = c + 1 < DIM && board.at(r, c + 1) != 0;
                                if left || right {
                                    continue; // listed as the across play
                                }
                            }
                            if let Some(score) = ref_score(lex, board, dir, lane, start, &tiles, dist, layout) {
                                out.push((dir, lane, start, tiles, score));
                            }
                        }
                    }
                }
            }
        }
    }
    out.sort();
    out
}

/// Score a placement from first principles, or `None` if a cross-word is not a word.
#[allow(clippy::too_many_arguments)]
fn ref_score(
    lex: &Lex,
    board: &Board,
    dir: usize,
    lane: usize,
    start: usize,
    tiles: &[u8],
    dist: &Distribution,
    layout: &Layout,
) -> Option<i32> {
    let sq = |p: usize| if dir == ACROSS { (lane, p) } else { (p, lane) };
    let (mut main, mut wm, mut total, mut placed) = (0, 1, 0, 0);
    for (k, &t) in tiles.iter().enumerate() {
        let (r, c) = sq(start + k);
        if t == 0 {
            main += dist.score(board.at(r, c));
            continue;
        }
        placed += 1;
        let l = layout.letter_mult[ACROSS][r * DIM + c] as i32;
        let w = layout.word_mult[ACROSS][r * DIM + c] as i32;
        main += dist.score(t) * l;
        wm *= w;
        // The perpendicular word through (r, c).
        let (dr, dc) = if dir == ACROSS { (1i32, 0i32) } else { (0, 1) };
        let on = |r: i32, c: i32| -> u8 {
            if (0..DIM as i32).contains(&r) && (0..DIM as i32).contains(&c) {
                board.at(r as usize, c as usize)
            } else {
                0
            }
        };
        let (mut r0, mut c0) = (r as i32, c as i32);
        while on(r0 - dr, c0 - dc) != 0 {
            r0 -= dr;
            c0 -= dc;
        }
        let mut word = Vec::new();
        let mut pscore = 0;
        let (mut r1, mut c1) = (r0, c0);
        loop {
            let tile = if (r1, c1) == (r as i32, c as i32) { t } else { on(r1, c1) };
            if tile == 0 {
                break;
            }
            word.push(tile & !BLANK_BIT);
            pscore += if (r1, c1) == (r as i32, c as i32) { dist.score(t) * l } else { dist.score(tile) };
            r1 += dr;
            c1 += dc;
        }
        if word.len() > 1 {
            if !lex.set.contains(&word) {
                return None;
            }
            total += pscore * w;
        }
    }
    total += main * wm;
    if placed == 7 {
        total += 50;
    }
    Some(total)
}
