//! `worker owner`: create an owner account, under which one person's volunteers register
//! (`worker volunteer --owner-token`). Replicas and cross-checks count only across owners.

use crate::client::Client;
use anyhow::{Context, Result};
use shared::protocol::{OwnerRequest, OwnerResponse};

#[derive(clap::Args)]
pub struct Args {
    /// Coordinator URL, e.g. http://127.0.0.1:8080.
    #[arg(long, env = "LEXHIVE_COORDINATOR")]
    coordinator: String,
    /// The name shown for you on the dashboards (unique on the coordinator).
    #[arg(long)]
    name: String,
    /// The invitation code, where registration is by invitation.
    #[arg(long)]
    invitation: Option<String>,
}

pub fn run(a: Args) -> Result<()> {
    let client = Client::new(&a.coordinator, None)?;
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let req = OwnerRequest { name: a.name.clone(), invitation: a.invitation };
    let r: OwnerResponse = rt
        .block_on(client.post("/owners", &req))
        .with_context(|| format!("creating owner `{}` at {}", a.name, client.base()))?;
    eprintln!(
        "owner `{}` created ({}); register your machines with `worker volunteer --owner-token <token>` (or LEXHIVE_OWNER_TOKEN); this is the only copy of the token:",
        a.name, r.owner_id
    );
    crate::emit(&format!("{}\n", r.token))
}
