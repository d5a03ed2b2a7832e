//! The database: connecting, and the migrations (embedded at compile time).

use crate::logstore;
use anyhow::{Context, Result};
use std::time::Duration;

pub static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("../migrations");

pub async fn connect(url: Option<&str>, pool: u32) -> Result<sqlx::PgPool> {
    let url = url.context(
        "no database: set DATABASE_URL or pass --database-url (e.g. postgres://postgres@127.0.0.1:5432/lexhive)",
    )?;
    sqlx::postgres::PgPoolOptions::new()
        .max_connections(pool)
        .acquire_timeout(Duration::from_secs(10))
        .connect(url)
        .await
        .with_context(|| format!("cannot connect to the database at {}", redact(url)))
}

/// A small pool on a database with every migration applied, for the admin commands.
pub async fn migrated(url: Option<&str>) -> Result<sqlx::PgPool> {
    let db = connect(url, 2).await?;
    MIGRATOR.run(&db).await.context("applying migrations")?;
    Ok(db)
}

/// A connection string without its password, for messages.
fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(s), Some(at)) if at > s => match url[s + 3..at].split_once(':') {
            Some((user, _)) => format!("{}{user}:***{}", &url[..s + 3], &url[at..]),
            None => url.to_string(),
        },
        _ => url.to_string(),
    }
}

/// Apply the migrations, and move any logs still in Postgres to the store.
pub async fn migrate(db: &sqlx::PgPool, logs: &logstore::LogStore) -> Result<()> {
    MIGRATOR.run(db).await.context("applying migrations")?;
    let moved = logstore::migrate(db, logs).await.context("moving logs to the log store")?;
    if moved > 0 {
        tracing::info!(results = moved, "moved logs from Postgres to the log store");
    }
    Ok(())
}
