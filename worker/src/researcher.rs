//! A researcher's token for `worker submit` and `worker experiments`: from `--token`, else
//! `LEXHIVE_TOKEN`, else the credentials file that `worker experiments login` writes
//! (`researcher.json` in the config folder, one token per coordinator, readable by its owner
//! only).

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

#[derive(clap::Args)]
pub struct Token {
    /// A researcher token (`coordinator token create --role researcher`); default: the one
    /// `worker experiments login` saved for this coordinator.
    #[arg(long, env = "LEXHIVE_TOKEN", hide_env_values = true)]
    token: Option<String>,
}

impl Token {
    /// The token to use with `coordinator`.
    pub fn resolve(self, coordinator: &str) -> Result<String> {
        if let Some(t) = self.token {
            return Ok(t);
        }
        let path = path()?;
        let base = coordinator.trim_end_matches('/');
        match load(&path)?.into_iter().find(|s| s.coordinator == base) {
            Some(s) => Ok(s.token),
            None => bail!(
                "no researcher token for {base}: pass --token, set LEXHIVE_TOKEN, or save one with `worker experiments login --coordinator {base} --token T` (it goes in {})",
                path.display()
            ),
        }
    }
}

#[derive(Serialize, Deserialize)]
struct Saved {
    coordinator: String,
    token: String,
}

fn path() -> Result<PathBuf> {
    Ok(crate::volunteer::config_dir()?.join("researcher.json"))
}

fn load(path: &Path) -> Result<Vec<Saved>> {
    match std::fs::read_to_string(path) {
        Ok(text) => serde_json::from_str(&text)
            .with_context(|| format!("{}: not a lexhive researcher credentials file", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(e).with_context(|| format!("{}: cannot read", path.display())),
    }
}

/// Save `token` for `coordinator` (replacing any earlier one); returns the file written.
pub fn login(coordinator: &str, token: &str) -> Result<PathBuf> {
    let path = path()?;
    let base = coordinator.trim_end_matches('/').to_string();
    let mut saved = load(&path)?;
    saved.retain(|s| s.coordinator != base);
    saved.push(Saved { coordinator: base, token: token.to_string() });
    crate::volunteer::write_private(&path, serde_json::to_string_pretty(&saved)?.as_bytes())?;
    Ok(path)
}
