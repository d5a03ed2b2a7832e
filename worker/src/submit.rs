//! `worker submit`: post an experiment file to a coordinator and print its id.

use crate::client::Client;
use anyhow::{Context, Result};
use shared::protocol::Submitted;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// The experiment file (TOML).
    file: PathBuf,
    /// Coordinator URL, e.g. http://127.0.0.1:8080.
    #[arg(long, env = "LEXHIVE_COORDINATOR")]
    coordinator: String,
    #[command(flatten)]
    token: crate::researcher::Token,
}

pub fn run(a: Args) -> Result<()> {
    let text = std::fs::read_to_string(&a.file).with_context(|| format!("{}: cannot read", a.file.display()))?;
    // Checked here first, so that a bad file is refused with its line and field whatever the
    // coordinator's state; the coordinator checks it again.
    shared::experiment::ExperimentSpec::parse(&text)
        .and_then(|spec| spec.cells())
        .map_err(|e| anyhow::anyhow!("{}: {e}", a.file.display()))?;
    let client = Client::new(&a.coordinator, Some(a.token.resolve(&a.coordinator)?))?;
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let s: Submitted = rt
        .block_on(client.post_text("/experiments", text))
        .with_context(|| format!("{}: rejected by {}", a.file.display(), a.coordinator))?;
    eprintln!(
        "submitted: {} cells, {} {}; dashboard: {}/experiments/{}",
        s.cells,
        s.games,
        s.counted,
        client.base(),
        s.id
    );
    crate::emit(&format!("{}\n", s.id))
}
