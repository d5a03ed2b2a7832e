//! `worker owner`: create an owner account, under which one person's volunteers register
//! (`worker volunteer --owner-token`). An owner costs a little proof of work, as much as the
//! coordinator asks (`Version::registration_work`).

use crate::client::Client;
use anyhow::{Context, Result};
use shared::protocol::{OwnerRequest, OwnerResponse, Version};

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
    let version: Version =
        rt.block_on(client.get("/version")).with_context(|| format!("asking {} what it is", client.base()))?;
    if version.registration_work > 0 {
        eprintln!("working for the registration ({} bits of proof of work)...", version.registration_work);
    }
    let work = shared::work::solve("owner", &a.name, version.registration_work);
    let req = OwnerRequest { name: a.name.clone(), invitation: a.invitation, work: Some(work) };
    let r: OwnerResponse = rt
        .block_on(client.post("/owners", &req))
        .with_context(|| format!("creating owner `{}` at {}", a.name, client.base()))?;
    eprintln!(
        "owner `{}` created ({}); register your machines with `worker volunteer --owner-token <token>` (or LEXHIVE_OWNER_TOKEN); this is the only copy of the token:",
        a.name, r.owner_id
    );
    crate::emit(&format!("{}\n", r.token))
}
