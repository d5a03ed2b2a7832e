//! `worker`: lexhive's volunteer loop and submission client, and the local research commands
//! (lexicon, movegen, autoplay, leaves, bench).
//! Errors print one line naming what and where, and exit with status 2.

fn main() -> std::process::ExitCode {
    worker::cli::main()
}
