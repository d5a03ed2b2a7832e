//! Where the games' logs live: an object store (a local folder by default, any S3-compatible
//! store when configured), not Postgres. A log is stored once, gzip-compressed as its volunteer
//! uploaded it, under the sha256 of its text (`gcg/ab/<sha256>.gz`, `csv/ab/<sha256>.gz`);
//! `batch_results` keeps that digest and the compressed size. So a replica's identical log is
//! one object, a retried upload rewrites nothing, and the database stays the size of its
//! results however many games are logged (about 940 bytes a game would be 7 GB of rows for a
//! 7.5 M-game training set).
//!
//! Invariants: an object is written before the row that names it, so every row's log exists;
//! an object no row names (an upload refused after its logs were stored, an experiment
//! deleted) is harmless and `coordinator logs gc` removes it once it is old enough that no
//! upload can still be about to name it.
//!
//! # Design notes
//!
//! the games' logs in an object store (`object_store`: a local folder, or S3-compatible), each kept
//! once under the sha256 of its text (`gcg/ab/SHA.gz`, `csv/ab/SHA.gz`); `batch_results` holds the
//! digests and compressed sizes. `migrate` moves logs an older coordinator kept in Postgres
//! (`gcg_gz`, `csv_gz`, now nullable and cleared); `gc` deletes what no result names once it is
//! older than the grace period.

use futures_util::stream::{BoxStream, StreamExt, TryStreamExt};
use object_store::aws::AmazonS3Builder;
use object_store::local::LocalFileSystem;
use object_store::path::Path;
use object_store::prefix::PrefixStore;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use std::sync::Arc;

/// Which of a batch's two logs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Log {
    /// Every game's GCG.
    Gcg,
    /// The per-turn CSV.
    Csv,
}

impl Log {
    pub fn as_str(self) -> &'static str {
        match self {
            Log::Gcg => "gcg",
            Log::Csv => "csv",
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("log store {store}: {source}")]
    Store { store: String, source: object_store::Error },
    #[error("--log-store `{0}`: {1}")]
    Config(String, String),
}

/// A log in the store.
#[derive(Debug)]
pub struct Stored {
    pub log: Log,
    /// Of its text: its key.
    pub sha256: String,
    pub modified: chrono::DateTime<chrono::Utc>,
}

/// A result whose logs are still in Postgres.
#[derive(sqlx::FromRow)]
struct Unmoved {
    batch_id: uuid::Uuid,
    lease_id: uuid::Uuid,
    gcg_sha256: String,
    gcg_gz: Vec<u8>,
    csv_sha256: String,
    csv_gz: Vec<u8>,
}

/// The logs' object store.
#[derive(Clone)]
pub struct LogStore {
    store: Arc<dyn ObjectStore>,
    /// What it was opened from, for messages.
    shown: String,
}

impl LogStore {
    /// Open `spec`: a folder (created if missing), or `s3://BUCKET[/PREFIX]` configured by the
    /// usual `AWS_*` variables (`AWS_ENDPOINT` and `AWS_ALLOW_HTTP=true` for a store that is
    /// not Amazon's, `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_REGION`).
    pub fn open(spec: &str) -> Result<Self, StoreError> {
        let config = |why: String| StoreError::Config(spec.to_string(), why);
        let store: Arc<dyn ObjectStore> = if let Some(rest) = spec.strip_prefix("s3://") {
            let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
            if bucket.is_empty() {
                return Err(config("names no bucket (s3://BUCKET/PREFIX)".into()));
            }
            let s3 = AmazonS3Builder::from_env().with_bucket_name(bucket).build().map_err(|e| config(e.to_string()))?;
            match prefix.trim_matches('/') {
                "" => Arc::new(s3),
                p => Arc::new(PrefixStore::new(s3, p)),
            }
        } else if spec.contains("://") {
            return Err(config("a folder or s3://BUCKET/PREFIX".into()));
        } else {
            std::fs::create_dir_all(spec).map_err(|e| config(format!("cannot create the folder: {e}")))?;
            // Synced before the row that names a log commits (Postgres syncs its commit), so
            // that a crash cannot leave a row naming a log the disk lost.
            Arc::new(LocalFileSystem::new_with_prefix(spec).map_err(|e| config(e.to_string()))?.with_fsync(true))
        };
        Ok(Self { store, shown: spec.to_string() })
    }

    fn err(&self, source: object_store::Error) -> StoreError {
        StoreError::Store { store: self.shown.clone(), source }
    }

    /// Where a log with text digest `sha256` is kept. Digests are checked hex before they get
    /// here (uploads) or come from the database, which holds only checked ones.
    fn path(log: Log, sha256: &str) -> Path {
        Path::from(format!("{}/{}/{sha256}.gz", log.as_str(), &sha256[..2.min(sha256.len())]))
    }

    /// Keep `gz`, the compressed log whose text has digest `sha256`; a log already there is
    /// not written again.
    pub async fn put(&self, log: Log, sha256: &str, gz: Vec<u8>) -> Result<(), StoreError> {
        let path = Self::path(log, sha256);
        match self.store.head(&path).await {
            Ok(_) => return Ok(()),
            Err(object_store::Error::NotFound { .. }) => {}
            Err(e) => return Err(self.err(e)),
        }
        self.store.put(&path, PutPayload::from(gz)).await.map_err(|e| self.err(e))?;
        Ok(())
    }

    /// A log's compressed bytes.
    pub async fn get(&self, log: Log, sha256: &str) -> Result<axum::body::Bytes, StoreError> {
        let got = self.store.get(&Self::path(log, sha256)).await.map_err(|e| self.err(e))?;
        got.bytes().await.map_err(|e| self.err(e))
    }

    /// A log's compressed bytes: `inline` where its row still holds them (before
    /// [`migrate`] has moved them), else from the store.
    pub async fn get_or(
        &self,
        log: Log,
        sha256: &str,
        inline: Option<Vec<u8>>,
    ) -> Result<axum::body::Bytes, StoreError> {
        match inline {
            Some(bytes) => Ok(bytes.into()),
            None => self.get(log, sha256).await,
        }
    }

    /// A log's compressed bytes as they arrive from the store, for downloads.
    pub async fn stream(
        &self,
        log: Log,
        sha256: &str,
    ) -> Result<BoxStream<'static, Result<axum::body::Bytes, StoreError>>, StoreError> {
        let got = self.store.get(&Self::path(log, sha256)).await.map_err(|e| self.err(e))?;
        let this = self.clone();
        Ok(got.into_stream().map_err(move |e| this.err(e)).boxed())
    }

    /// Every stored log, for garbage collection.
    pub fn list(&self) -> BoxStream<'_, Result<Stored, StoreError>> {
        self.store
            .list(None)
            .map_err(|e| self.err(e))
            .try_filter_map(|meta| async move {
                let mut parts = meta.location.parts();
                let log = match parts.next().as_ref().map(|p| p.as_ref()) {
                    Some("gcg") => Log::Gcg,
                    Some("csv") => Log::Csv,
                    _ => return Ok(None),
                };
                let name = meta.location.filename().unwrap_or_default();
                Ok(name.strip_suffix(".gz").map(|sha| Stored { log, sha256: sha.into(), modified: meta.last_modified }))
            })
            .boxed()
    }

    pub async fn delete(&self, log: Log, sha256: &str) -> Result<(), StoreError> {
        self.store.delete(&Self::path(log, sha256)).await.map_err(|e| self.err(e))
    }
}

/// Move logs still kept in Postgres (by coordinators before the store) into the store, a few
/// hundred rows a transaction, each row's columns cleared only once both its logs are stored.
/// Safe to run while other coordinators serve (the rows are locked and skipped by the others)
/// and to interrupt. Returns how many results' logs moved.
pub async fn migrate(db: &sqlx::PgPool, store: &LogStore) -> anyhow::Result<u64> {
    let mut moved = 0;
    loop {
        let mut tx = db.begin().await?;
        let rows: Vec<Unmoved> = sqlx::query_as(
            "SELECT batch_id, lease_id, gcg_sha256, gcg_gz, csv_sha256, csv_gz FROM batch_results
             WHERE gcg_gz IS NOT NULL LIMIT 200 FOR UPDATE SKIP LOCKED",
        )
        .fetch_all(&mut *tx)
        .await?;
        if rows.is_empty() {
            return Ok(moved);
        }
        for r in rows {
            store.put(Log::Gcg, &r.gcg_sha256, r.gcg_gz).await?;
            store.put(Log::Csv, &r.csv_sha256, r.csv_gz).await?;
            sqlx::query("UPDATE batch_results SET gcg_gz = NULL, csv_gz = NULL WHERE batch_id = $1 AND lease_id = $2")
                .bind(r.batch_id)
                .bind(r.lease_id)
                .execute(&mut *tx)
                .await?;
            moved += 1;
        }
        tx.commit().await?;
    }
}

/// Remove stored logs that no result names and that are older than `grace` (younger ones may
/// belong to an upload between storing its logs and recording its row). Returns (kept,
/// removed).
pub async fn gc(db: &sqlx::PgPool, store: &LogStore, grace: chrono::Duration) -> anyhow::Result<(u64, u64)> {
    let named: Vec<(String, String)> =
        sqlx::query_as("SELECT gcg_sha256, csv_sha256 FROM batch_results").fetch_all(db).await?;
    let gcg: std::collections::HashSet<String> = named.iter().map(|r| r.0.clone()).collect();
    let csv: std::collections::HashSet<String> = named.into_iter().map(|r| r.1).collect();
    let cutoff = chrono::Utc::now() - grace;
    let (mut kept, mut removed) = (0, 0);
    let mut listed = store.list();
    while let Some(s) = listed.try_next().await? {
        let referenced = match s.log {
            Log::Gcg => gcg.contains(&s.sha256),
            Log::Csv => csv.contains(&s.sha256),
        };
        if referenced || s.modified > cutoff {
            kept += 1;
        } else {
            store.delete(s.log, &s.sha256).await?;
            removed += 1;
        }
    }
    Ok((kept, removed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_log_is_kept_once_under_its_digest() {
        let dir = std::env::temp_dir().join(format!("lexhive-logstore-{}", uuid::Uuid::new_v4().simple()));
        let store = LogStore::open(dir.to_str().unwrap()).unwrap();
        let sha = "ab".repeat(32);
        store.put(Log::Gcg, &sha, b"first".to_vec()).await.unwrap();
        // The same digest again is the same log: nothing is rewritten.
        store.put(Log::Gcg, &sha, b"second".to_vec()).await.unwrap();
        assert_eq!(&store.get(Log::Gcg, &sha).await.unwrap()[..], b"first");
        assert!(dir.join("gcg/ab").join(format!("{sha}.gz")).is_file());
        let chunks: Vec<_> = store.stream(Log::Gcg, &sha).await.unwrap().try_collect().await.unwrap();
        assert_eq!(chunks.concat(), b"first");
        let listed: Vec<_> = store.list().try_collect().await.unwrap();
        assert_eq!(listed.iter().map(|l| (l.log, l.sha256.as_str())).collect::<Vec<_>>(), [(Log::Gcg, sha.as_str())]);
        // The CSV of the same digest is another object, and a missing one is an error naming the store.
        let e = store.get(Log::Csv, &sha).await.unwrap_err().to_string();
        assert!(e.starts_with(&format!("log store {}:", dir.display())), "{e}");
        store.delete(Log::Gcg, &sha).await.unwrap();
        assert!(store.get(Log::Gcg, &sha).await.is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_bad_spec_is_named() {
        let e = LogStore::open("gs://bucket/x").err().unwrap().to_string();
        assert!(e.starts_with("--log-store `gs://bucket/x`:"), "{e}");
        assert!(LogStore::open("s3:///x").is_err());
    }
}
