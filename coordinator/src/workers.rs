//! The volunteers: who they are, when they were last seen, what they contributed.

use crate::error::Result;
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use chrono::{DateTime, Utc};
use serde::Serialize;
use uuid::Uuid;

#[derive(Serialize, sqlx::FromRow)]
pub struct WorkerView {
    pub id: Uuid,
    pub name: String,
    pub threads: i32,
    pub created_at: DateTime<Utc>,
    pub last_seen: DateTime<Utc>,
    pub seconds_since_seen: f64,
    /// Games played (matches and win-table games), and endgame positions solved.
    pub games: i64,
    pub positions: i64,
    pub batches: i64,
    pub games_per_sec: Option<f64>,
    pub leased_batches: i64,
    /// Uploads refused because their logs or tally were not what the batch's deals give.
    pub rejected: i64,
    pub owner: String,
    /// How its owner is trusted: `operator` (named by the operator) or `earned`; none while
    /// its results wait for trusted replicas.
    pub trust: Option<String>,
    /// Batches whose result a replica of another group matched.
    pub validated: i64,
    /// Replicas that disagreed with this worker's result.
    pub mismatches: i64,
    /// Why it was quarantined (found wrong, or its owner banned); `None` while in good standing.
    pub quarantine_reason: Option<String>,
    /// What it said it can run beyond the engine at its last claim: `onnx` (CNN bots), `cuda`.
    pub capabilities: Vec<String>,
    /// Its GPU, where one answered.
    pub gpu_name: Option<String>,
    pub gpu_memory_mb: Option<i64>,
}

pub async fn list(db: &sqlx::PgPool) -> Result<Vec<WorkerView>> {
    Ok(sqlx::query_as(
        "SELECT w.id, w.name, w.threads, w.created_at, w.last_seen,
                extract(epoch FROM now() - w.last_seen)::float8 AS seconds_since_seen, w.games, w.positions, w.batches, w.games_per_sec, w.rejected,
                (SELECT count(*) FROM batches b WHERE b.lease_owner = w.id AND b.state = 'leased') AS leased_batches,
                o.name AS owner, o.trusted AS trust, w.validated, w.mismatches, w.quarantine_reason,
                w.capabilities, w.gpu_name, w.gpu_memory_mb
         FROM workers w JOIN owners o ON o.id = w.owner_id ORDER BY w.last_seen DESC LIMIT 1000",
    )
    .fetch_all(db)
    .await?)
}

pub async fn api_list(State(st): State<AppState>) -> Result<Json<Vec<WorkerView>>> {
    Ok(Json(list(&st.db).await?))
}
