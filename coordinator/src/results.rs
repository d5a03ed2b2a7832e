//! Batch results: the upload (accepted once per batch and lease, with the cell's tally updated
//! in the same transaction), the logs, and recomputing cell tallies from stored results.

use crate::auth::Caller;
use crate::error::{Error, Result};
use crate::experiments::sprt_reason;
use crate::queue::{lease_error, settle_experiment};
use crate::AppState;
use axum::extract::{Path, State};
use axum::http::header;
use axum::response::IntoResponse;
use axum::Json;
use base64::Engine as _;
use shared::experiment::ExperimentSpec;
use shared::protocol::{JobResult, ResultUpload, UploadResponse};
use shared::stats::MatchTally;
use sqlx::types::Json as Db;
use std::io::Read;
use uuid::Uuid;

/// Largest uncompressed log the coordinator will inflate (guards against gzip bombs).
const MAX_LOG_BYTES: u64 = 256 << 20;

/// Decode one base64-of-gzip log and check its sha256; returns the compressed bytes.
fn check_log(field: &str, b64: &str, sha: &str) -> Result<Vec<u8>> {
    let gz = base64::engine::general_purpose::STANDARD.decode(b64).map_err(|e| Error::unprocessable(format!("logs.{field}: not base64: {e}")))?;
    let mut text = Vec::new();
    flate2::read::GzDecoder::new(&gz[..])
        .take(MAX_LOG_BYTES + 1)
        .read_to_end(&mut text)
        .map_err(|e| Error::unprocessable(format!("logs.{field}: not gzip: {e}")))?;
    if text.len() as u64 > MAX_LOG_BYTES {
        return Err(Error::unprocessable(format!("logs.{field}: more than {MAX_LOG_BYTES} bytes uncompressed")));
    }
    if crate::artifacts::sha256_hex(&text) != sha {
        return Err(Error::unprocessable(format!("logs.{field}: sha256 does not match the content")));
    }
    Ok(gz)
}

#[derive(sqlx::FromRow)]
struct BatchRow {
    state: String,
    lease_id: Option<Uuid>,
    lease_owner: Option<Uuid>,
    cell_id: Uuid,
    experiment_id: Uuid,
    pairs: i64,
}

/// `POST /api/v1/batches/{id}/result`.
pub async fn upload(State(st): State<AppState>, caller: Caller, Path(batch): Path<Uuid>, Json(u): Json<ResultUpload>) -> Result<Json<UploadResponse>> {
    let worker = caller.worker()?;
    let mut tx = st.db.begin().await?;
    let row: Option<BatchRow> =
        sqlx::query_as("SELECT state, lease_id, lease_owner, cell_id, experiment_id, pairs FROM batches WHERE id = $1 FOR NO KEY UPDATE").bind(batch).fetch_optional(&mut *tx).await?;
    let Some(BatchRow { state, lease_id: lease, lease_owner: owner, cell_id: cell, experiment_id: experiment, pairs }) = row else {
        return Err(Error::not_found(format!("no batch {batch}")));
    };
    let done: Option<(Uuid, Uuid)> = sqlx::query_as("SELECT lease_id, worker_id FROM batch_results WHERE batch_id = $1").bind(batch).fetch_optional(&mut *tx).await?;
    if let Some((done_lease, done_worker)) = done {
        if done_lease == u.lease_id && done_worker != worker {
            return Err(Error::forbidden("this lease belongs to another worker"));
        }
        if done_lease == u.lease_id {
            return Ok(Json(UploadResponse { accepted: false, message: "already recorded; nothing changed".into() }));
        }
        return Err(Error::conflict(format!("batch {batch} was already completed under another lease")));
    }
    if state != "leased" || lease != Some(u.lease_id) {
        return Err(lease_error(&mut *tx, batch, u.lease_id, worker).await);
    }
    if owner != Some(worker) {
        return Err(Error::forbidden("this lease belongs to another worker"));
    }
    let JobResult::Match(tally) = &u.result;
    if !tally.is_consistent() || tally.games != 2 * pairs as u64 {
        return Err(Error::unprocessable(format!("result: {} games with inconsistent counts; the batch has {} games", tally.games, 2 * pairs)));
    }
    let gcg = check_log("gcg_gz", &u.logs.gcg_gz, &u.logs.gcg_sha256)?;
    let csv = check_log("csv_gz", &u.logs.csv_gz, &u.logs.csv_sha256)?;
    sqlx::query(
        "INSERT INTO batch_results (batch_id, lease_id, worker_id, cell_id, experiment_id, result, games, elapsed_ms, gcg_gz, gcg_sha256, csv_gz, csv_sha256)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
    )
    .bind(batch)
    .bind(u.lease_id)
    .bind(worker)
    .bind(cell)
    .bind(experiment)
    .bind(Db(&u.result))
    .bind(tally.games as i64)
    .bind(u.elapsed_ms.min(i64::MAX as u64) as i64)
    .bind(&gcg)
    .bind(&u.logs.gcg_sha256)
    .bind(&csv)
    .bind(&u.logs.csv_sha256)
    .execute(&mut *tx)
    .await?;
    sqlx::query("UPDATE batches SET state = 'done', lease_expires = NULL, updated_at = now() WHERE id = $1").bind(batch).execute(&mut *tx).await?;
    let gps = tally.games as f64 / (u.elapsed_ms.max(1) as f64 / 1000.0);
    sqlx::query("UPDATE workers SET games = games + $2, batches = batches + 1, last_seen = now(), games_per_sec = $3 WHERE id = $1")
        .bind(worker)
        .bind(tally.games as i64)
        .bind(gps)
        .execute(&mut *tx)
        .await?;
    record_in_cell(&mut tx, cell, pairs, tally).await?;
    tx.commit().await?;
    Ok(Json(UploadResponse { accepted: true, message: format!("recorded {} games", tally.games) }))
}

/// Add a batch's tally to its cell, and finish or stop the cell when it is done.
async fn record_in_cell(tx: &mut sqlx::Transaction<'_, sqlx::Postgres>, cell: Uuid, pairs: i64, t: &MatchTally) -> Result<()> {
    let (experiment, Db(mut sum), status, done, target, Db(spec)): (Uuid, Db<MatchTally>, String, i64, i64, Db<ExperimentSpec>) = sqlx::query_as(
        "SELECT c.experiment_id, c.tally, c.status, c.done_pairs, c.target_pairs, e.spec FROM cells c JOIN experiments e ON e.id = c.experiment_id WHERE c.id = $1 FOR NO KEY UPDATE OF c",
    )
    .bind(cell)
    .fetch_one(&mut **tx)
    .await?;
    sum.merge(t);
    let done = done + pairs;
    let mut next_status = None;
    if status == "running" {
        if done >= target {
            next_status = Some(("finished", format!("reached its target of {} games", 2 * target)));
        } else if let Some(reason) = spec.sprt.as_ref().and_then(|s| sprt_reason(s, s.decide(&sum))) {
            next_status = Some(("stopped", reason));
        }
    }
    match &next_status {
        Some((s, reason)) => {
            sqlx::query("UPDATE cells SET tally = $2, done_pairs = $3, status = $4, stop_reason = $5 WHERE id = $1")
                .bind(cell)
                .bind(Db(&sum))
                .bind(done)
                .bind(s)
                .bind(reason)
                .execute(&mut **tx)
                .await?;
            sqlx::query("UPDATE batches SET state = 'cancelled', updated_at = now() WHERE cell_id = $1 AND state = 'queued'").bind(cell).execute(&mut **tx).await?;
            settle_experiment(tx, experiment).await?;
        }
        None => {
            sqlx::query("UPDATE cells SET tally = $2, done_pairs = $3 WHERE id = $1").bind(cell).bind(Db(&sum)).bind(done).execute(&mut **tx).await?;
        }
    }
    Ok(())
}

/// `GET /api/v1/batches/{id}/logs/{gcg|csv}`: a batch's logs, gzip-compressed.
pub async fn logs(State(st): State<AppState>, Path((batch, which)): Path<(Uuid, String)>) -> Result<impl IntoResponse> {
    let sql = match which.as_str() {
        "gcg" => "SELECT gcg_gz FROM batch_results WHERE batch_id = $1",
        "csv" => "SELECT csv_gz FROM batch_results WHERE batch_id = $1",
        _ => return Err(Error::not_found("logs are `gcg` or `csv`")),
    };
    let row: Option<(Vec<u8>,)> = sqlx::query_as(sql).bind(batch).fetch_optional(&st.db).await?;
    let (bytes,) = row.ok_or_else(|| Error::not_found(format!("no result for batch {batch}")))?;
    Ok(([(header::CONTENT_TYPE, "application/gzip")], bytes))
}

/// `GET /api/v1/experiments/{id}/batches`: every recorded batch result (without logs).
pub async fn list(State(st): State<AppState>, Path(experiment): Path<Uuid>) -> Result<Json<Vec<RecordedBatch>>> {
    let rows: Vec<RecordedBatch> = sqlx::query_as(
        "SELECT r.batch_id, r.cell_id, r.worker_id, r.result, b.first_pair, b.pairs, r.elapsed_ms FROM batch_results r JOIN batches b ON b.id = r.batch_id
         WHERE r.experiment_id = $1 ORDER BY r.cell_id, b.first_pair",
    )
    .bind(experiment)
    .fetch_all(&st.db)
    .await?;
    Ok(Json(rows))
}

/// One recorded batch result, without its logs.
#[derive(sqlx::FromRow, serde::Serialize)]
pub struct RecordedBatch {
    batch_id: Uuid,
    cell_id: Uuid,
    worker_id: Uuid,
    result: Db<JobResult>,
    first_pair: i64,
    pairs: i64,
    elapsed_ms: i64,
}

/// Recompute every cell's tally from its stored batch results; returns the cells whose stored
/// tally differed (and fixes them).
pub async fn recompute(db: &sqlx::PgPool, experiment: Option<Uuid>) -> anyhow::Result<(u64, Vec<Uuid>)> {
    let mut tx = db.begin().await?;
    let cells: Vec<(Uuid, Db<MatchTally>, i64)> =
        sqlx::query_as("SELECT id, tally, done_pairs FROM cells WHERE $1::uuid IS NULL OR experiment_id = $1 ORDER BY experiment_id, idx FOR UPDATE").bind(experiment).fetch_all(&mut *tx).await?;
    let mut fixed = Vec::new();
    for (cell, Db(stored), done) in &cells {
        let results: Vec<(Db<JobResult>,)> = sqlx::query_as("SELECT result FROM batch_results WHERE cell_id = $1").bind(cell).fetch_all(&mut *tx).await?;
        let mut sum = MatchTally::default();
        for (Db(JobResult::Match(t)),) in &results {
            sum.merge(t);
        }
        if sum != *stored || sum.pairs() as i64 != *done {
            sqlx::query("UPDATE cells SET tally = $2, done_pairs = $3 WHERE id = $1").bind(cell).bind(Db(&sum)).bind(sum.pairs() as i64).execute(&mut *tx).await?;
            fixed.push(*cell);
        }
    }
    tx.commit().await?;
    Ok((cells.len() as u64, fixed))
}
