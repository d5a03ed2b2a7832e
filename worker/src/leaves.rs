//! `worker leaves`: generate leave tables by self-play; inspect them.

use anyhow::Result;

#[derive(clap::Subcommand)]
pub enum Cmd {}

pub fn run(cmd: Cmd) -> Result<()> {
    match cmd {}
}
