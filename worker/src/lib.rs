//! `worker`, as a library: the volunteer (`volunteer`: its loop, and the runners of each job
//! kind in `runners`), the submission client, and the local research commands, one module
//! each, dispatched by `cli`. Games, nets and data that the commands and the runners share
//! live in `play`, `nets` and `data`. `docs/ARCHITECTURE.md` has the map.

mod autoplay;
mod bench;
mod bench_movegen;
pub mod cli;
mod client;
mod cnn;
mod data;
mod endgame;
mod experiments;
mod infer;
mod leaves;
mod lexicon;
mod loadtest;
mod movegen;
mod nets;
mod owner;
mod play;
mod researcher;
mod runners;
mod sim;
mod submit;
mod volunteer;
mod wintable;

/// Print to stdout; a closed pipe (`worker movegen ... | head`) ends output quietly instead of
/// panicking.
pub fn emit(text: &str) -> anyhow::Result<()> {
    use std::io::Write;
    match std::io::stdout().lock().write_all(text.as_bytes()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => std::process::exit(0),
        other => Ok(other?),
    }
}
