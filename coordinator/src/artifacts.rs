//! Content-addressed data files (lexicon graph, leave table, distribution, layout, win table,
//! value nets), kept in Postgres so that any coordinator can serve them, and fetched by
//! workers by sha256.
//!
//! # Design notes
//!
//! content-addressed files in Postgres; the shipped data become the defaults. Value nets (role
//! `model`) have no default: an experiment's artifacts are its five roles plus the models its CNN
//! bots name by sha256 (`resolve_models`) and the leave tables its bots name for themselves
//! (`resolve_tables`, role `bot-leaves` in a batch).

use crate::error::{Error, Result};
use crate::state::AppState;
use anyhow::Context;
use axum::extract::{Path, State};
use axum::http::header;
use axum::response::IntoResponse;
use engine::tiles::Distribution;
use sha2::{Digest, Sha256};
use shared::protocol::{ArtifactRef, BOT_LEAVES};
use std::path::Path as FsPath;

/// Roles every match job gets, in the order batch specs list them.
pub const ROLES: [&str; 5] = ["lexicon", "leaves", "distribution", "layout", "winpct"];

pub use shared::protocol::MODEL;

pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// Store an artifact (a no-op when its bytes are already there); make it its role's default
/// when asked.
pub async fn add(db: &sqlx::PgPool, role: &str, name: &str, bytes: &[u8], default: bool) -> sqlx::Result<String> {
    let sha = sha256_hex(bytes);
    let mut tx = db.begin().await?;
    sqlx::query("INSERT INTO artifacts (sha256, role, name, size, bytes) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (sha256) DO NOTHING")
        .bind(&sha)
        .bind(role)
        .bind(name)
        .bind(bytes.len() as i64)
        .bind(bytes)
        .execute(&mut *tx)
        .await?;
    if default {
        sqlx::query("UPDATE artifacts SET is_default = false WHERE role = $1 AND is_default AND sha256 <> $2")
            .bind(role)
            .bind(&sha)
            .execute(&mut *tx)
            .await?;
        sqlx::query("UPDATE artifacts SET is_default = true WHERE sha256 = $1").bind(&sha).execute(&mut *tx).await?;
    }
    tx.commit().await?;
    Ok(sha)
}

/// Make the shipped data (ENABLE graph, leave table, English tiles, standard board) the
/// defaults, unless defaults are already set. Concurrent start-ups are harmless: the bytes are
/// identical and inserts are idempotent. Says whether anything was read from `lexica`.
pub async fn ensure_defaults(db: &sqlx::PgPool, lexica: &FsPath) -> anyhow::Result<bool> {
    let have: Vec<(String,)> = sqlx::query_as("SELECT role FROM artifacts WHERE is_default").fetch_all(db).await?;
    let missing = |r: &str| !have.iter().any(|(h,)| h == r);
    if missing("lexicon") {
        // The default lexicon's letters are those of the default distribution shipped beside it.
        let dist = Distribution::load(&lexica.join("english.dist"))?;
        let words = lexica.join("enable.txt");
        tracing::info!(path = %words.display(), "building the default lexicon graph");
        let kwg = engine::lexicon::load_lexicon(&words, &dist).with_context(|| format!("{}", words.display()))?;
        add(db, "lexicon", "enable.kwg", &kwg.to_bytes(), true).await?;
    }
    for (role, file) in [
        ("leaves", "enable.klv2"),
        ("distribution", "english.dist"),
        ("layout", "standard15.layout"),
        ("winpct", "enable.wpt"),
    ] {
        if missing(role) {
            let path = lexica.join(file);
            let bytes = std::fs::read(&path).with_context(|| format!("{}: cannot read", path.display()))?;
            add(db, role, file, &bytes, true).await?;
        }
    }
    Ok(["lexicon", "leaves", "distribution", "layout", "winpct"].into_iter().any(missing))
}

/// The artifacts an experiment runs with: its pinned ones, the defaults for the rest.
pub async fn resolve(db: &sqlx::PgPool, pinned: &shared::spec::Artifacts) -> Result<Vec<ArtifactRef>> {
    let mut out = Vec::new();
    for role in ROLES {
        let pin = pinned.pinned(role);
        let row: Option<(String, String, i64)> = match pin {
            Some(sha) => {
                sqlx::query_as("SELECT sha256, name, size FROM artifacts WHERE sha256 = $1 AND role = $2")
                    .bind(sha)
                    .bind(role)
                    .fetch_optional(db)
                    .await?
            }
            None => {
                sqlx::query_as("SELECT sha256, name, size FROM artifacts WHERE role = $1 AND is_default")
                    .bind(role)
                    .fetch_optional(db)
                    .await?
            }
        };
        let (sha256, name, size) = row.ok_or_else(|| match pin {
            Some(sha) => Error::unprocessable(format!(
                "artifacts.{role}: no {role} artifact with sha256 {sha} on this coordinator"
            )),
            None => Error::unprocessable(format!("artifacts.{role}: this coordinator has no default {role}")),
        })?;
        out.push(ArtifactRef { role: role.into(), name, sha256, size: size as u64 });
    }
    Ok(out)
}

/// The value nets `models` (sha256s from CNN bots' specs), each a `model` artifact here.
pub async fn resolve_models(db: &sqlx::PgPool, models: &[String]) -> Result<Vec<ArtifactRef>> {
    resolve_named(db, models, MODEL, MODEL, |sha| {
        format!(
            "match: a CNN bot names model={sha}, and this coordinator has no model artifact with that sha256 (add one with `coordinator artifact --role model FILE.onnx`)"
        )
    })
    .await
}

/// The leave tables bots name for themselves (`leaves=SHA256`), each a `leaves` artifact
/// here, given to batches as [`BOT_LEAVES`].
pub async fn resolve_tables(db: &sqlx::PgPool, tables: &[String]) -> Result<Vec<ArtifactRef>> {
    resolve_named(db, tables, "leaves", BOT_LEAVES, |sha| {
        format!(
            "match: a bot names leaves={sha}, and this coordinator has no leaves artifact with that sha256 (add one with `coordinator artifact --role leaves FILE.klv2`)"
        )
    })
    .await
}

async fn resolve_named(
    db: &sqlx::PgPool,
    shas: &[String],
    stored_as: &str,
    role: &str,
    missing: impl Fn(&str) -> String,
) -> Result<Vec<ArtifactRef>> {
    let mut out = Vec::new();
    for sha in shas {
        let row: Option<(String, i64)> =
            sqlx::query_as("SELECT name, size FROM artifacts WHERE sha256 = $1 AND role = $2")
                .bind(sha)
                .bind(stored_as)
                .fetch_optional(db)
                .await?;
        let (name, size) = row.ok_or_else(|| Error::unprocessable(missing(sha)))?;
        out.push(ArtifactRef { role: role.into(), name, sha256: sha.clone(), size: size as u64 });
    }
    Ok(out)
}

/// The tile distribution among an experiment's resolved artifacts.
pub async fn distribution(db: impl sqlx::PgExecutor<'_>, artifacts: &[ArtifactRef]) -> Result<Distribution> {
    let a = artifacts
        .iter()
        .find(|a| a.role == "distribution")
        .ok_or_else(|| Error::internal("an experiment without a distribution artifact"))?;
    let (bytes,): (Vec<u8>,) =
        sqlx::query_as("SELECT bytes FROM artifacts WHERE sha256 = $1").bind(&a.sha256).fetch_one(db).await?;
    Distribution::parse(&String::from_utf8_lossy(&bytes), &format!("artifact {} ({})", a.sha256, a.name))
        .map_err(|e| Error::unprocessable(format!("artifacts.distribution: {e}")))
}

/// `GET /api/v1/artifacts/{sha256}`: the bytes, immutable forever.
pub async fn get(State(st): State<AppState>, Path(sha): Path<String>) -> Result<impl IntoResponse> {
    let row: Option<(Vec<u8>,)> =
        sqlx::query_as("SELECT bytes FROM artifacts WHERE sha256 = $1").bind(&sha).fetch_optional(&st.db).await?;
    let (bytes,) = row.ok_or_else(|| Error::not_found(format!("no artifact {sha}")))?;
    Ok((
        [
            (header::CONTENT_TYPE, "application/octet-stream"),
            (header::CACHE_CONTROL, "public, max-age=31536000, immutable"),
        ],
        bytes,
    ))
}
