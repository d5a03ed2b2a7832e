//! `worker movegen`: one move per line, best first, as `<coord> <word> <score> <equity>`.

use crate::data::{DataArgs, load_leaves};
use anyhow::Result;
use engine::cgp::Position;
use engine::eval::{OPENING_VOWEL_PENALTY, StaticEval};
use engine::game::MIN_BAG_TO_EXCHANGE;
use engine::movegen::{Generator, Mode, Request};
use engine::moves::rank;
use std::path::PathBuf;
use std::sync::Arc;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    data: DataArgs,
    /// The position in CGP notation.
    #[arg(long)]
    cgp: String,
    /// List every legal move (placements, exchanges, pass).
    #[arg(long, conflicts_with = "top")]
    all: bool,
    /// List the best N moves by equity.
    #[arg(long, default_value_t = 10)]
    top: usize,
    /// Leave table (`.klv2`; default: the shipped table).
    #[arg(long)]
    leaves: Option<PathBuf>,
}

pub fn run(a: Args) -> Result<()> {
    let data = a.data.load()?;
    let klv = load_leaves(a.leaves.as_deref())?.map(Arc::new);
    let game = Position::parse(&a.cgp, &data.dist)?.into_game(&data.kwg, &data.dist, 0);
    let ctx = data.ctx();
    let leaves = StaticEval::new(klv).rack_leaves(ctx, &game);
    let req = Request {
        board: &game.board,
        rack: &game.racks[0],
        leaves: &leaves,
        can_exchange: game.bag.len() >= MIN_BAG_TO_EXCHANGE,
        opening_vowel_penalty: OPENING_VOWEL_PENALTY,
    };
    let mode = if a.all { Mode::All } else { Mode::Best(a.top) };
    let mut mg = Generator::new();
    let mut moves = mg.generate(ctx, &req, mode).to_vec();
    moves.sort_unstable_by(rank);
    let mut out = String::new();
    for m in &moves {
        let notation = m.notation(&data.dist, |r, c| game.board.at(r, c));
        out += &format!("{notation} {} {:.3}\n", m.score, m.equity as f64 / 1000.0);
    }
    crate::emit(&out)?;
    Ok(())
}
