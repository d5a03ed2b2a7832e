//! Where a volunteer keeps what outlives it: its credentials (one token per coordinator and
//! name, in a file only its owner reads), the locks that keep two processes from running as
//! one worker, and the artifact cache.

use super::Exit;
use super::retry::retry;
use crate::client::{Client, ClientError};
use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use shared::PROTOCOL_VERSION;
use shared::kinds::JobKind;
use shared::protocol::*;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU8;

/// Where the worker keeps its token: `$LEXHIVE_CONFIG_DIR`, else `$XDG_CONFIG_HOME/lexhive`,
/// else `~/.config/lexhive`.
pub(crate) fn config_dir() -> Result<PathBuf> {
    dir("LEXHIVE_CONFIG_DIR", "XDG_CONFIG_HOME", ".config")
}

/// Where downloaded artifacts are cached: `$LEXHIVE_CACHE_DIR`, else `$XDG_CACHE_HOME/lexhive`,
/// else `~/.cache/lexhive`.
pub(super) fn cache_dir() -> Result<PathBuf> {
    dir("LEXHIVE_CACHE_DIR", "XDG_CACHE_HOME", ".cache")
}

fn dir(own: &str, xdg: &str, home_sub: &str) -> Result<PathBuf> {
    if let Some(d) = std::env::var_os(own) {
        return Ok(d.into());
    }
    if let Some(d) = std::env::var_os(xdg).filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(d).join("lexhive"));
    }
    let home = std::env::var_os("HOME").context("no HOME; set LEXHIVE_CONFIG_DIR and LEXHIVE_CACHE_DIR")?;
    Ok(PathBuf::from(home).join(home_sub).join("lexhive"))
}

/// One registration: a worker identity on one coordinator.
#[derive(Clone, Serialize, Deserialize)]
struct Credential {
    coordinator: String,
    name: String,
    worker_id: uuid::Uuid,
    token: String,
}

fn credentials_path() -> Result<PathBuf> {
    Ok(config_dir()?.join("credentials.json"))
}

fn load_credentials(path: &Path) -> Result<Vec<Credential>> {
    match std::fs::read_to_string(path) {
        Ok(text) => serde_json::from_str(&text).with_context(|| {
            format!("{}: not a lexhive credentials file (move it aside to register afresh)", path.display())
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(e).with_context(|| format!("{}: cannot read", path.display())),
    }
}

/// Write the credentials file readable by its owner only, atomically.
fn save_credentials(path: &Path, creds: &[Credential]) -> Result<()> {
    write_private(path, serde_json::to_string_pretty(creds)?.as_bytes())
}

/// Write `bytes` to `path` readable by its owner only, atomically (a temporary file renamed).
pub(crate) fn write_private(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = path.parent().expect("a file in a folder");
    std::fs::create_dir_all(dir).with_context(|| format!("{}: cannot create", dir.display()))?;
    let tmp = path.with_extension(format!("{}.tmp", std::process::id()));
    {
        use std::os::unix::fs::OpenOptionsExt;
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)
            .with_context(|| format!("{}: cannot write", tmp.display()))?;
        f.write_all(bytes)?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, path).with_context(|| format!("{}: cannot write", path.display()))
}

/// Lock this volunteer's name for `coordinator` in the config folder for as long as the
/// returned file is held, so that two processes sharing a config folder never run (and
/// register) as one worker.
pub(super) fn hold_name(coordinator: &str, name: &str) -> Result<std::fs::File> {
    let dir = config_dir()?;
    let key = hex::encode(&Sha256::digest(format!("{coordinator}\n{name}").as_bytes())[..8]);
    let path = dir.join(format!("running-{key}.lock"));
    let f = lock_file(&path)?;
    match f.try_lock() {
        Ok(()) => Ok(f),
        Err(std::fs::TryLockError::WouldBlock) => Err(Exit::Busy(format!(
            "a volunteer named `{name}` for {coordinator} is already running from {} (give this one another --name, or its own LEXHIVE_CONFIG_DIR)",
            dir.display()
        ))
        .into()),
        Err(std::fs::TryLockError::Error(e)) => Err(e).with_context(|| format!("{}: cannot lock", path.display())),
    }
}

/// Lock the credentials file against other volunteers' reads and writes while held.
fn lock_credentials(path: &Path) -> Result<std::fs::File> {
    let lock = path.with_extension("lock");
    let f = lock_file(&lock)?;
    f.lock().with_context(|| format!("{}: cannot lock", lock.display()))?;
    Ok(f)
}

/// A file to take a lock on (made, with its folder, if missing; never truncated).
fn lock_file(path: &Path) -> Result<std::fs::File> {
    let dir = path.parent().expect("a file in a folder");
    std::fs::create_dir_all(dir).with_context(|| format!("{}: cannot create", dir.display()))?;
    std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .with_context(|| format!("{}: cannot open", path.display()))
}

/// A client carrying this machine's token for the coordinator, registering on first use (under
/// `owner_token`, or as an owner of its own with `work` bits of proof of work); and whether the
/// token is newly issued.
pub(super) async fn credential(
    client: &Client,
    name: &str,
    threads: usize,
    kinds: &[JobKind],
    capabilities: &Capabilities,
    (owner_token, work): (Option<&str>, u32),
    quit: &AtomicU8,
) -> Result<(Client, bool)> {
    let path = credentials_path()?;
    if let Some(c) = load_credentials(&path)?.into_iter().find(|c| c.coordinator == client.base() && c.name == name) {
        return Ok((client.with_token(c.token), false));
    }
    let req = RegisterRequest {
        protocol: PROTOCOL_VERSION,
        name: name.to_string(),
        threads: threads as u32,
        kinds: JobKind::names(kinds),
        owner_token: owner_token.map(str::to_string),
        capabilities: capabilities.clone(),
        work: owner_token.is_none().then(|| shared::work::solve("worker", name, work)),
    };
    let r: RegisterResponse = match retry("register", quit, || client.post("/workers/register", &req)).await {
        Ok(r) => r,
        Err(ClientError::Status { status: 426, message, .. }) => return Err(Exit::Protocol(message).into()),
        Err(ClientError::Status { status: status @ (401 | 403), message, .. }) => {
            return Err(Exit::Refused(format!(
                "the coordinator at {} refused to register `{name}` (HTTP {status}): {message}",
                client.base()
            ))
            .into());
        }
        Err(e) => return Err(e).context("registering with the coordinator"),
    };
    // Other volunteers of this config folder (under other names) may have written meanwhile.
    let _lock = lock_credentials(&path)?;
    let mut creds = load_credentials(&path)?;
    creds.push(Credential {
        coordinator: client.base().to_string(),
        name: name.to_string(),
        worker_id: r.worker_id,
        token: r.token.clone(),
    });
    save_credentials(&path, &creds)?;
    eprintln!("registered as worker {} (token saved in {})", r.worker_id, path.display());
    Ok((client.with_token(r.token), true))
}

pub(super) fn forget_credential(coordinator: &str, name: &str) -> Result<()> {
    let path = credentials_path()?;
    let _lock = lock_credentials(&path)?;
    let mut creds = load_credentials(&path)?;
    creds.retain(|c| !(c.coordinator == coordinator && c.name == name));
    save_credentials(&path, &creds)
}
