//! The `worker` command line: every subcommand, and the exit statuses.

use crate::{
    autoplay, bench, bench_movegen, cnn, endgame, experiments, infer, leaves, lexicon, loadtest, movegen, owner, sim,
    submit, volunteer, wintable,
};
use clap::{CommandFactory, Parser, Subcommand};
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "worker",
    version,
    about = "lexhive worker: donate a machine, submit experiments, run the engine locally"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Donate this machine: claim batches from a coordinator, play them, upload the results.
    Volunteer(volunteer::Args),
    /// Create an owner account on a coordinator (for your volunteers); prints its token.
    Owner(owner::Args),
    /// Submit an experiment file to a coordinator; prints the experiment id.
    Submit(submit::Args),
    /// List, show, stop and reprioritise a coordinator's experiments.
    #[command(subcommand)]
    Experiments(experiments::Cmd),
    /// Build and query lexicon graphs.
    #[command(subcommand)]
    Lexicon(lexicon::Cmd),
    /// List the moves of a position.
    Movegen(movegen::Args),
    /// Simulate a position: the static evaluator's top candidates, rolled out.
    Sim(sim::Args),
    /// Infer the leave of the player who made a turn of a GCG game, from the other player's view.
    Infer(infer::Args),
    /// Solve an endgame (bag empty) exactly: value, best sequence, nodes.
    Endgame(endgame::Args),
    /// Print seeded endgame positions (the bag just emptied in static self-play), one CGP a line.
    EndgameSet(endgame::SetArgs),
    /// Rank the plays of a position with one tile in the bag by exact endgames.
    Peg(endgame::PegArgs),
    /// Time the endgame solver on a fixed set of positions at several thread counts.
    BenchEndgame(endgame::BenchArgs),
    /// Play bots against each other on paired deals.
    Autoplay(autoplay::Args),
    /// Generate and inspect leave tables.
    #[command(subcommand)]
    Leaves(leaves::Cmd),
    /// Make and query the win-probability table.
    #[command(subcommand)]
    Wintable(wintable::Cmd),
    /// Measure move generation and self-play speed.
    Bench(bench::Args),
    /// Time all-moves and best-move generation on a file of positions, by rack class.
    BenchMovegen(bench_movegen::Args),
    /// The CNN evaluator: input frames, training streams.
    #[command(subcommand)]
    Cnn(cnn::Cmd),
    /// Load-test a coordinator with many simulated volunteers.
    Loadtest(loadtest::Args),
}

/// A `--threads` value: a whole number of at least 1 (0 threads would do nothing, for ever).
pub fn threads(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(0) => Err("at least 1 thread".into()),
        Ok(n) => Ok(n),
        Err(e) => Err(format!("`{s}`: {e}")),
    }
}

/// The command line's definition: every command and flag (what `--help` prints).
pub fn command() -> clap::Command {
    Cli::command()
}

/// Run the command line; errors print one line and exit with status 2 (a volunteer's own
/// reasons to give up have their own statuses: README.md).
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Volunteer(a) => volunteer::run(a),
        Command::Submit(a) => submit::run(a),
        Command::Experiments(c) => experiments::run(c),
        Command::Owner(a) => owner::run(a),
        Command::Lexicon(c) => lexicon::run(c),
        Command::Movegen(a) => movegen::run(a),
        Command::Sim(a) => sim::run(a),
        Command::Infer(a) => infer::run(a),
        Command::Endgame(a) => endgame::run(a),
        Command::EndgameSet(a) => endgame::run_set(a),
        Command::Peg(a) => endgame::run_peg(a),
        Command::BenchEndgame(a) => endgame::run_bench(a),
        Command::Autoplay(a) => autoplay::run(a),
        Command::Leaves(c) => leaves::run(c),
        Command::Bench(a) => bench::run(a),
        Command::BenchMovegen(a) => bench_movegen::run(a),
        Command::Cnn(c) => cnn::run(c),
        Command::Wintable(c) => wintable::run(c),
        Command::Loadtest(a) => loadtest::run(a),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            // A volunteer's reasons to give up have statuses of their own (README.md).
            ExitCode::from(e.downcast_ref::<volunteer::Exit>().map_or(2, volunteer::Exit::status))
        }
    }
}
