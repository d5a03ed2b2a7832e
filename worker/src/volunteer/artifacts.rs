//! A batch's artifacts: fetched once into the cache (each checked against its sha256, cached
//! copies too) and loaded.

use super::heartbeat;
use super::retry::retry;
use crate::client::Client;
use crate::data::Data;
use crate::runners::Loaded;
use anyhow::{Context, Result, bail};
use engine::leaves::Klv;
use sha2::{Digest, Sha256};
use shared::protocol::{ArtifactRef, BOT_LEAVES, BatchSpec, MODEL};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

/// Fetch the artifacts not in the cache (verifying each sha256), then load them.
async fn fetch_and_load(client: &Client, cache: &Path, refs: &[ArtifactRef], quit: &AtomicU8) -> Result<Loaded> {
    std::fs::create_dir_all(cache).with_context(|| format!("{}: cannot create", cache.display()))?;
    let mut paths = std::collections::HashMap::new();
    let mut models = crate::nets::Models::new();
    let mut tables = crate::play::Tables::new();
    for r in refs {
        if r.sha256.len() != 64 || !r.sha256.bytes().all(|c| c.is_ascii_hexdigit()) {
            bail!("artifact {}: bad sha256 `{}`", r.name, r.sha256);
        }
        // Keep the extension: it tells the loaders the format (.kwg or a word list).
        let ext = Path::new(&r.name)
            .extension()
            .and_then(|e| e.to_str())
            .filter(|e| e.chars().all(|c| c.is_ascii_alphanumeric()))
            .unwrap_or("bin");
        let path = cache.join(format!("{}.{ext}", r.sha256));
        // A cached copy is checked too: a month of uptime meets the odd bad disk block.
        let cached_ok = std::fs::read(&path).is_ok_and(|b| hex::encode(Sha256::digest(&b)) == r.sha256);
        if !cached_ok {
            let url = format!("/artifacts/{}", r.sha256);
            let bytes = retry("download", quit, || client.get_bytes(&url))
                .await
                .with_context(|| format!("downloading {}", r.name))?;
            let got = hex::encode(Sha256::digest(&bytes));
            if got != r.sha256 {
                bail!("artifact {}: downloaded bytes hash to {got}, not {}", r.name, r.sha256);
            }
            crate::data::write_atomic(&path, &bytes)?;
            eprintln!("fetched {} ({} bytes)", r.name, bytes.len());
        }
        if r.role == MODEL {
            models.insert(r.sha256.clone(), path);
        } else if r.role == BOT_LEAVES {
            let klv = Klv::load(&path)?;
            tables.insert(r.sha256.clone(), Arc::new(klv));
        } else {
            paths.insert(r.role.clone(), path);
        }
    }
    let need = |role: &str| paths.get(role).with_context(|| format!("the batch names no {role} artifact"));
    let dist = engine::tiles::Distribution::load(need("distribution")?)?;
    let layout = engine::board::Layout::load(need("layout")?)?;
    let kwg = engine::lexicon::load_lexicon(need("lexicon")?, &dist)?;
    engine::movegen::prepare(&kwg);
    let leaves = match paths.get("leaves") {
        Some(p) => Some(Arc::new(Klv::load(p)?)),
        None => None,
    };
    let table = match paths.get("winpct") {
        Some(p) => Some(Arc::new(engine::winpct::WinTable::load(p)?)),
        None => None,
    };
    Ok(Loaded { data: Data { dist, layout, kwg }, leaves, table, models, tables })
}

/// Fetch and load a batch's artifacts while heartbeating it: downloading and loading a
/// lexicon can outlast a lease.
pub(super) async fn fetch_keeping_lease(
    client: &Client,
    cache: &Path,
    batch: &BatchSpec,
    quit: &Arc<AtomicU8>,
) -> Result<Loaded> {
    let (stop, lost) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicBool::new(false)));
    let heart = heartbeat(client, batch, stop.clone(), lost, quit.clone());
    let r = fetch_and_load(client, cache, &batch.artifacts, quit).await;
    stop.store(true, Ordering::SeqCst);
    let _ = heart.await;
    r
}
