//! Endgame experiments as researchers see them: every solved position with its cross-checks,
//! the solve-time distribution, and disagreements between workers.

use crate::AppState;
use crate::error::Result;
use axum::Json;
use axum::extract::{Path, State};
use serde::Serialize;
use uuid::Uuid;

/// One solve of one position.
#[derive(Serialize, sqlx::FromRow)]
pub struct SolveRow {
    pub index: i64,
    pub pass: String,
    pub worker: String,
    pub cgp: String,
    pub skipped: bool,
    pub value: i32,
    pub exact: bool,
    pub best: String,
    pub sequence: String,
    pub nodes: i64,
    pub ms: i64,
    pub disagrees: bool,
}

/// Every solve of an experiment's positions, by position then arrival.
pub async fn solves(db: &sqlx::PgPool, id: Uuid) -> Result<Vec<SolveRow>> {
    Ok(sqlx::query_as(
        "SELECT s.idx AS index, s.pass, w.name AS worker, s.cgp, s.skipped, s.value, s.exact, s.best, s.sequence, s.nodes, s.ms, s.disagrees
         FROM endgame_solutions s JOIN workers w ON w.id = s.worker_id WHERE s.experiment_id = $1 ORDER BY s.idx, s.received_at, s.pass DESC",
    )
    .bind(id)
    .fetch_all(db)
    .await?)
}

/// `GET /api/v1/experiments/{id}/endgames`.
pub async fn api_solves(State(st): State<AppState>, Path(id): Path<Uuid>) -> Result<Json<Vec<SolveRow>>> {
    Ok(Json(solves(&st.db, id).await?))
}

/// Upper bounds (ms) of the solve-time histogram's buckets; the last is open.
pub const TIME_BUCKETS: [(i64, &str); 6] = [
    (10, "< 10 ms"),
    (100, "< 0.1 s"),
    (1_000, "< 1 s"),
    (10_000, "< 10 s"),
    (60_000, "< 1 min"),
    (i64::MAX, "≥ 1 min"),
];

/// How many first solves fell in each bucket of `TIME_BUCKETS`.
pub fn time_histogram(rows: &[SolveRow]) -> Vec<u64> {
    let mut counts = vec![0u64; TIME_BUCKETS.len()];
    for r in rows.iter().filter(|r| r.pass == "solve" && !r.skipped) {
        let b = TIME_BUCKETS.iter().position(|&(hi, _)| r.ms < hi).unwrap_or(TIME_BUCKETS.len() - 1);
        counts[b] += 1;
    }
    counts
}
