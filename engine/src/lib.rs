//! lexhive's game engine: everything needed to play and analyse crossword-board games, with
//! no I/O beyond reading the files it is given. See `docs/ARCHITECTURE.md` for the codemap.

pub mod autoplay;
pub mod board;
pub mod bots;
pub mod cgp;
pub mod endgame;
pub mod error;
pub mod eval;
pub mod features;
pub mod game;
pub mod gcg;
pub mod infer;
pub mod leavegen;
pub mod leaves;
pub mod lexicon;
mod memory;
pub mod movegen;
pub mod moves;
pub mod record;
pub mod rng;
pub mod sim;
pub mod stats;
pub mod tiles;
pub mod view;
pub mod winpct;

pub use error::DataError;
