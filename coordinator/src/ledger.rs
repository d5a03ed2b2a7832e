//! What counts: one valid result per done batch. A cell's tally and done units are always the
//! sum of its counted results; `recompute_cell` restores that after withdrawals (quarantine)
//! and checks it (`coordinator recompute`).
//!
//! # Design notes
//!
//! what counts: one valid result per done batch (`counted_results!`, which `recompute`, the batch
//! list, the convergence history and the win-table fit all use), and `recompute_cell`, which sets a
//! cell's tally and done units to it.

use crate::error::Result;
use shared::protocol::JobResult;
use shared::stats::MatchTally;
use sqlx::types::Json as Db;
use uuid::Uuid;

/// The result each counted batch contributes: one valid result per done batch (replicas
/// agree, so any one will do; the first is taken).
macro_rules! counted_results {
    ($where:literal) => {
        concat!(
            "SELECT DISTINCT ON (r.batch_id) r.batch_id, r.cell_id, r.worker_id, r.result, b.first_unit, b.units, r.elapsed_ms, r.received_at
             FROM batch_results r JOIN batches b ON b.id = r.batch_id
             WHERE r.state = 'valid' AND b.state = 'done' AND ",
            $where,
            " ORDER BY r.batch_id, r.received_at"
        )
    };
}
pub(crate) use counted_results;

/// One counted batch result, without its logs.
#[derive(sqlx::FromRow, serde::Serialize)]
pub struct RecordedBatch {
    pub batch_id: Uuid,
    pub cell_id: Uuid,
    pub worker_id: Uuid,
    pub result: Db<JobResult>,
    /// The batch's units (`JobKind::unit`): `first_unit .. first_unit + units`.
    pub first_unit: i64,
    pub units: i64,
    pub elapsed_ms: i64,
    pub received_at: chrono::DateTime<chrono::Utc>,
}

/// Set a cell's tally and done units to what its counted results say; true if they differed.
pub async fn recompute_cell(tx: &mut sqlx::Transaction<'_, sqlx::Postgres>, cell: Uuid) -> Result<bool> {
    let (Db(stored), done): (Db<MatchTally>, i64) =
        sqlx::query_as("SELECT tally, done_units FROM cells WHERE id = $1 FOR UPDATE")
            .bind(cell)
            .fetch_one(&mut **tx)
            .await?;
    let results: Vec<RecordedBatch> =
        sqlx::query_as(counted_results!("r.cell_id = $1")).bind(cell).fetch_all(&mut **tx).await?;
    let mut sum = MatchTally::default();
    let mut units = 0;
    for r in &results {
        if let Some(t) = r.result.0.tally() {
            sum.merge(t);
        }
        units += r.result.0.units() as i64;
    }
    if sum == stored && units == done {
        return Ok(false);
    }
    sqlx::query("UPDATE cells SET tally = $2, done_units = $3 WHERE id = $1")
        .bind(cell)
        .bind(Db(&sum))
        .bind(units)
        .execute(&mut **tx)
        .await?;
    Ok(true)
}
