//! `coordinator`: the lexhive job server. Researchers submit experiments; volunteers claim
//! batches, heartbeat, and upload results; everyone watches the dashboards. Postgres holds all
//! state, so any number of coordinators can serve one database.

use clap::Parser;

fn main() {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info,sqlx=warn".into()),
        )
        .with_writer(std::io::stderr)
        // Colour only for a person at a terminal: log files get plain text.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let cli = coordinator::cli::Cli::parse();
    let rt = tokio::runtime::Runtime::new().expect("tokio runtime");
    if let Err(e) = rt.block_on(coordinator::cli::run(cli)) {
        eprintln!("error: {e:#}");
        std::process::exit(2);
    }
}
