//! Statistical outlier checks. Bots with time budgets play differently on every machine, so
//! their batches cannot be replicated: each game is re-played under the rules (`verify`), and
//! each worker's results in a cell are compared with everyone else's there. A worker many
//! standard errors away ([`shared::stats::OUTLIER_Z`], over at least
//! [`shared::stats::OUTLIER_MIN_PAIRS`] pairs on each side) is quarantined: legal games of the
//! wrong bots, or games picked for their outcome, leave exactly this trace.
//!
//! # Design notes
//!
//! for cells whose bots have time budgets (no replicas possible), each worker's counted results
//! against the rest of the cell's (`MatchTally::outlier_z`); the furthest beyond `OUTLIER_Z` is
//! quarantined.

use crate::error::Result;
use crate::ledger::{RecordedBatch, counted_results};
use shared::stats::{MatchTally, OUTLIER_Z};
use std::collections::BTreeMap;
use uuid::Uuid;

/// Compare every worker's counted results in `cell` with the rest of the cell's; quarantine
/// the one furthest out if it is an outlier. Returns that worker.
pub async fn check(tx: &mut sqlx::Transaction<'_, sqlx::Postgres>, cell: Uuid) -> Result<Option<Uuid>> {
    let results: Vec<RecordedBatch> =
        sqlx::query_as(counted_results!("r.cell_id = $1")).bind(cell).fetch_all(&mut **tx).await?;
    let mut by_worker: BTreeMap<Uuid, MatchTally> = BTreeMap::new();
    for r in &results {
        if let Some(t) = r.result.0.tally() {
            by_worker.entry(r.worker_id).or_default().merge(t);
        }
    }
    let mut worst: Option<(Uuid, f64, f64, f64, u64)> = None;
    for (&w, mine) in &by_worker {
        let mut rest = MatchTally::default();
        for (_, t) in by_worker.iter().filter(|(o, _)| **o != w) {
            rest.merge(t);
        }
        if let Some(z) = mine.outlier_z(&rest)
            && z.abs() >= OUTLIER_Z
            && worst.is_none_or(|(_, wz, ..)| z.abs() > wz.abs())
        {
            let rate = |t: &MatchTally| 100.0 * t.win_rate().unwrap_or(0.0);
            worst = Some((w, z, rate(mine), rate(&rest), mine.pairs()));
        }
    }
    let Some((worker, z, mine, rest, pairs)) = worst else { return Ok(None) };
    let (idx, name): (i32, String) = sqlx::query_as(
        "SELECT c.idx, e.name FROM cells c JOIN experiments e ON e.id = c.experiment_id WHERE c.id = $1",
    )
    .bind(cell)
    .fetch_one(&mut **tx)
    .await?;
    let reason = format!(
        "its results in cell {idx} of `{name}` are an outlier: {mine:.1}% over {pairs} pairs against {rest:.1}% from the other workers (z = {z:.1}); time-budgeted games cannot be replicated"
    );
    tracing::warn!(%worker, %cell, z, "outlier results; worker quarantined");
    crate::quarantine::quarantine(tx, worker, &reason).await?;
    Ok(Some(worker))
}
