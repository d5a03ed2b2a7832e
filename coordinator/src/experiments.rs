//! Experiments: submission (parse, validate, store experiment and cells), stopping, and the
//! views the dashboards and `/api/v1/experiments` show.
//!
//! # Design notes
//!
//! submission (validate, resolve artifacts, store experiment and cells), stop, and the views
//! (`Summary`, `Detail`, `CellView`) that both the JSON API and the pages use; the list's filter
//! and order (one fixed SQL statement per order: nothing from a request is spliced into SQL), and
//! each cell's `History` (win rate, interval and LLR after each counted batch). A summary's target
//! counts what a cell that ended early did, so a finished experiment is complete. A cell's
//! `evidence` (`shared::stats::Evidence`) says whether its games can speak: identical bots get no
//! interval and no SPRT, every-pair-alike tallies conservative ones.

use crate::auth::Caller;
use crate::error::{Error, Result};
use crate::state::AppState;
use axum::Json;
use axum::extract::{Path, Query, State};
use chrono::{DateTime, Utc};
use serde::Serialize;
use shared::experiment::{self, ExperimentSpec};
use shared::kinds::{ExperimentKind, JobKind, matches};
use shared::protocol::Submitted;
use shared::stats::{Evidence, MatchTally, Sprt, SprtDecision};
use sqlx::types::Json as Db;
use std::collections::HashMap;
use uuid::Uuid;

/// `POST /api/v1/experiments` with the experiment file (TOML) as the body.
pub async fn submit(State(st): State<AppState>, caller: Caller, body: String) -> Result<Json<Submitted>> {
    caller.researcher()?;
    let spec = ExperimentSpec::parse(&body).map_err(|e| Error::unprocessable(e.to_string()))?;
    let cells = spec.cells().map_err(|e| Error::unprocessable(e.to_string()))?;
    let mut artifacts = crate::artifacts::resolve(&st.db, &spec.artifacts).await?;
    artifacts.retain(|a| !spec.kind.goes_without().contains(&a.role.as_str()));
    let dist = crate::artifacts::distribution(&st.db, &artifacts).await?;
    spec.check_positions(&dist).map_err(|e| Error::unprocessable(e.to_string()))?;
    artifacts.extend(crate::artifacts::resolve_models(&st.db, &matches::models(&cells)).await?);
    artifacts.extend(crate::artifacts::resolve_tables(&st.db, &matches::tables(&cells)).await?);
    let needs = experiment::needs(&spec, &cells);
    let id = Uuid::new_v4();
    let mut tx = st.db.begin().await?;
    sqlx::query("INSERT INTO experiments (id, name, kind, spec, artifacts, priority, owner_token, needs) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)")
        .bind(id)
        .bind(&spec.name)
        .bind(spec.kind.job_kind().as_str())
        .bind(Db(&spec))
        .bind(Db(&artifacts))
        .bind(spec.priority)
        .bind(&caller.token_hash)
        .bind(&needs)
        .execute(&mut *tx)
        .await?;
    let kind = spec.kind.job_kind();
    for c in &cells {
        // A carved cell's batches are cut from `next_unit` as workers claim; an uncarved one
        // (an endgame's cross-checks) starts with nothing to carve and gets batches queued for
        // it as first solves arrive (see `results`).
        let next = if c.carved { 0 } else { c.target };
        let (status, reason) = match (c.target, c.waits) {
            (0, _) => ("finished", Some("nothing to do")),
            (_, true) => ("waiting", None),
            (_, false) => ("running", None),
        };
        // Bots that play differently on every machine cannot be replicated: trusted workers only.
        let deterministic =
            c.bots.iter().flatten().all(|b| engine::bots::BotSpec::parse(b).is_ok_and(|s| s.deterministic()));
        sqlx::query("INSERT INTO cells (id, experiment_id, idx, params, bots, target_units, next_unit, status, stop_reason, tally, deterministic) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)")
            .bind(Uuid::new_v4())
            .bind(id)
            .bind(c.index as i32)
            .bind(Db(&c.params))
            .bind(c.bots.as_ref().map(Db))
            .bind(c.target as i64)
            .bind(next as i64)
            .bind(status)
            .bind(reason)
            .bind(Db(MatchTally::default()))
            .bind(deterministic)
            .execute(&mut *tx)
            .await?;
    }
    tx.commit().await?;
    tracing::info!(%id, name = %spec.name, cells = cells.len(), "experiment submitted");
    let units: u64 = cells.iter().map(|c| c.target).sum();
    Ok(Json(Submitted {
        id,
        cells: cells.len() as u32,
        games: units * kind.shown_per_unit(),
        counted: kind.shown().into(),
    }))
}

/// Lock an experiment that `caller` owns (the researcher token that submitted it, or an
/// admin) for `what`; returns its status.
async fn owned(
    tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
    caller: &Caller,
    id: Uuid,
    what: &str,
) -> Result<String> {
    caller.researcher()?;
    let row: Option<(Option<Vec<u8>>, String)> =
        sqlx::query_as("SELECT owner_token, status FROM experiments WHERE id = $1 FOR UPDATE")
            .bind(id)
            .fetch_optional(&mut **tx)
            .await?;
    let (owner, status) = row.ok_or_else(|| Error::not_found(format!("no experiment {id}")))?;
    if caller.role != crate::auth::Role::Admin && owner.as_ref() != Some(&caller.token_hash) {
        return Err(Error::forbidden(format!(
            "only the researcher who submitted this experiment, or an admin, may {what} it"
        )));
    }
    Ok(status)
}

#[derive(serde::Deserialize)]
pub struct PriorityRequest {
    pub priority: i32,
}

/// `POST /api/v1/experiments/{id}/priority`: its owner (or an admin) reprioritises it; its
/// queued batches follow.
pub async fn reprioritise(
    State(st): State<AppState>,
    caller: Caller,
    Path(id): Path<Uuid>,
    Json(r): Json<PriorityRequest>,
) -> Result<Json<serde_json::Value>> {
    use shared::spec::MAX_PRIORITY;
    if !(-MAX_PRIORITY..=MAX_PRIORITY).contains(&r.priority) {
        return Err(Error::unprocessable(format!("priority: from -{MAX_PRIORITY} to {MAX_PRIORITY}")));
    }
    let mut tx = st.db.begin().await?;
    owned(&mut tx, &caller, id, "reprioritise").await?;
    sqlx::query("UPDATE experiments SET priority = $2 WHERE id = $1")
        .bind(id)
        .bind(r.priority)
        .execute(&mut *tx)
        .await?;
    sqlx::query("UPDATE batches SET priority = $2 WHERE experiment_id = $1")
        .bind(id)
        .bind(r.priority)
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(Json(serde_json::json!({ "id": id, "priority": r.priority })))
}

/// `DELETE /api/v1/experiments/{id}`: its owner (or an admin) deletes it with its cells,
/// batches and results; leases in flight end with 404s.
pub async fn delete(
    State(st): State<AppState>,
    caller: Caller,
    Path(id): Path<Uuid>,
) -> Result<Json<serde_json::Value>> {
    let mut tx = st.db.begin().await?;
    owned(&mut tx, &caller, id, "delete").await?;
    sqlx::query("DELETE FROM experiments WHERE id = $1").bind(id).execute(&mut *tx).await?;
    tx.commit().await?;
    Ok(Json(serde_json::json!({ "deleted": id })))
}

/// `POST /api/v1/experiments/{id}/stop`: no more batches; results in flight still count. Only
/// the researcher whose token submitted it, or an admin, may stop an experiment.
pub async fn stop(State(st): State<AppState>, caller: Caller, Path(id): Path<Uuid>) -> Result<Json<serde_json::Value>> {
    let mut tx = st.db.begin().await?;
    let status = owned(&mut tx, &caller, id, "stop").await?;
    if status != "queued" && status != "running" {
        return Err(Error::conflict(format!("experiment {id} is not queued or running")));
    }
    sqlx::query("UPDATE experiments SET status = 'stopped', finished_at = now() WHERE id = $1")
        .bind(id)
        .execute(&mut *tx)
        .await?;
    sqlx::query("UPDATE cells SET status = 'stopped', stop_reason = 'stopped by a researcher' WHERE experiment_id = $1 AND status IN ('running', 'waiting')").bind(id).execute(&mut *tx).await?;
    sqlx::query(
        "UPDATE batches SET state = 'cancelled', updated_at = now() WHERE experiment_id = $1 AND state = 'queued'",
    )
    .bind(id)
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(Json(serde_json::json!({ "stopped": id })))
}

/// One line of the experiments list.
#[derive(Serialize)]
pub struct Summary {
    pub id: Uuid,
    pub name: String,
    pub kind: String,
    pub status: String,
    pub priority: i32,
    pub created_at: DateTime<Utc>,
    pub finished_at: Option<DateTime<Utc>>,
    pub cells: i64,
    /// Done so far, in `counted` (games, or positions for endgames).
    pub games: i64,
    /// What the experiment asks for: a cell that ended early on its own verdict (an SPRT
    /// decided, its bots played alike) counts what it did; one a researcher stopped keeps its
    /// target, so that a stopped experiment shows done against what it asked.
    pub target_games: i64,
    /// What `games` and `target_games` count.
    pub counted: &'static str,
    /// Games (or positions) per hour: while running, over the last 15 minutes (or since it started); once
    /// over, from start to finish.
    pub games_per_hour: f64,
    /// Its result in a line and its SPRT's LLR (`result`, `llr`, `llr_bounds`).
    #[serde(flatten)]
    pub headline: crate::kinds::Headline,
}

macro_rules! summary_sql {
    () => {
        "
SELECT e.id, e.name, e.kind, e.status, e.priority, e.created_at, e.finished_at,
       (SELECT count(*) FROM cells c WHERE c.experiment_id = e.id) AS cells,
       (SELECT coalesce(sum(c.done_units), 0)::bigint FROM cells c WHERE c.experiment_id = e.id) AS done_units,
       (SELECT coalesce(sum(CASE WHEN c.status IN ('queued', 'running', 'waiting') OR c.stop_reason = 'stopped by a researcher' THEN c.target_units ELSE least(c.done_units, c.target_units) END), 0)::bigint
          FROM cells c WHERE c.experiment_id = e.id) AS target_units,
       CASE WHEN e.started_at IS NULL THEN 0
            WHEN e.finished_at IS NOT NULL THEN
              (SELECT coalesce(sum(r.games), 0) FROM batch_results r WHERE r.experiment_id = e.id)::float8
              / greatest(extract(epoch FROM e.finished_at - e.started_at), 1)::float8 * 3600
            ELSE
              (SELECT coalesce(sum(r.games), 0) FROM batch_results r
                WHERE r.experiment_id = e.id AND r.received_at > now() - interval '15 minutes')::float8
              / greatest(extract(epoch FROM least(now() - e.started_at, interval '15 minutes')), 1)::float8 * 3600
       END AS games_per_hour
FROM experiments e"
    };
}

#[derive(sqlx::FromRow)]
struct SummaryRow {
    id: Uuid,
    name: String,
    kind: String,
    status: String,
    priority: i32,
    created_at: DateTime<Utc>,
    finished_at: Option<DateTime<Utc>>,
    cells: i64,
    done_units: i64,
    target_units: i64,
    games_per_hour: f64,
}

impl SummaryRow {
    fn summary(self) -> Result<Summary> {
        let kind = JobKind::parse(&self.kind)
            .ok_or_else(|| Error::internal(format!("experiment {} of unknown kind `{}`", self.id, self.kind)))?;
        let per = kind.shown_per_unit() as i64;
        Ok(Summary {
            id: self.id,
            name: self.name,
            kind: self.kind,
            counted: kind.shown(),
            status: self.status,
            priority: self.priority,
            created_at: self.created_at,
            finished_at: self.finished_at,
            cells: self.cells,
            games: per * self.done_units,
            target_games: per * self.target_units,
            games_per_hour: self.games_per_hour,
            headline: crate::kinds::Headline::default(),
        })
    }
}

pub async fn list(db: &sqlx::PgPool) -> Result<Vec<Summary>> {
    list_where(db, &ListQuery::default()).await
}

/// `GET /api/v1/experiments?status=running&sort=name`: a filter and an order for the list.
#[derive(Debug, Default, serde::Deserialize)]
pub struct ListQuery {
    /// queued, running, finished, failed or stopped.
    pub status: Option<String>,
    /// created (newest first, the default), name, priority (highest first) or status.
    pub sort: Option<String>,
}

const STATUSES: [&str; 5] = ["queued", "running", "finished", "failed", "stopped"];

async fn list_where(db: &sqlx::PgPool, q: &ListQuery) -> Result<Vec<Summary>> {
    if let Some(s) = q.status.as_deref().filter(|s| !STATUSES.contains(s)) {
        return Err(Error::new(
            axum::http::StatusCode::BAD_REQUEST,
            format!("status: `{}` is not one of {}", s.escape_debug(), STATUSES.join(", ")),
        ));
    }
    // One fixed statement per order: nothing from the request is spliced into SQL.
    macro_rules! listed {
        ($order:literal) => {
            concat!(summary_sql!(), " WHERE ($1::text IS NULL OR e.status = $1) ORDER BY ", $order, " LIMIT 500")
        };
    }
    let sql = match q.sort.as_deref().unwrap_or("created") {
        "created" => listed!("e.created_at DESC"),
        "name" => listed!("e.name, e.created_at DESC"),
        "priority" => listed!("e.priority DESC, e.created_at DESC"),
        "status" => listed!("e.status, e.created_at DESC"),
        other => {
            return Err(Error::new(
                axum::http::StatusCode::BAD_REQUEST,
                format!("sort: `{}` is not one of created, name, priority, status", other.escape_debug()),
            ));
        }
    };
    let rows: Vec<SummaryRow> = sqlx::query_as(sql).bind(q.status.as_deref()).fetch_all(db).await?;
    let mut list: Vec<Summary> = rows.into_iter().map(SummaryRow::summary).collect::<Result<_>>()?;
    // Each experiment's result in a line, from its cells: two queries for the whole list.
    let ids: Vec<Uuid> = list.iter().map(|e| e.id).collect();
    let specs: Vec<(Uuid, Db<ExperimentSpec>)> =
        sqlx::query_as("SELECT id, spec FROM experiments WHERE id = ANY ($1)").bind(&ids).fetch_all(db).await?;
    let specs: HashMap<Uuid, ExperimentSpec> = specs.into_iter().map(|(id, s)| (id, s.0)).collect();
    let rows: Vec<ListedCell> = sqlx::query_as(
        "SELECT experiment_id, id, idx, params, bots, status, stop_reason, target_units, done_units, tally FROM cells
         WHERE experiment_id = ANY ($1) ORDER BY experiment_id, idx",
    )
    .bind(&ids)
    .fetch_all(db)
    .await?;
    let mut cells: HashMap<Uuid, Vec<CellView>> = HashMap::new();
    for r in rows {
        if let Some(spec) = specs.get(&r.experiment_id) {
            cells.entry(r.experiment_id).or_default().push(r.cell.view(&spec.kind));
        }
    }
    for e in &mut list {
        if let Some(spec) = specs.get(&e.id) {
            e.headline = crate::kinds::headline(&spec.kind, cells.get(&e.id).map_or(&[], Vec::as_slice));
        }
    }
    Ok(list)
}

/// A cell of a listed experiment.
#[derive(sqlx::FromRow)]
struct ListedCell {
    experiment_id: Uuid,
    #[sqlx(flatten)]
    cell: CellRow,
}

/// A cell as the dashboards show it. Win counts are the first bot's, whatever seat it sat in.
#[derive(Clone, Serialize)]
pub struct CellView {
    pub id: Uuid,
    pub index: i32,
    pub params: serde_json::Map<String, serde_json::Value>,
    /// A match cell's bots.
    pub bots: Option<[String; 2]>,
    pub status: String,
    pub stop_reason: Option<String>,
    pub games: u64,
    pub target_games: i64,
    pub wins: u64,
    pub draws: u64,
    pub losses: u64,
    pub pairs: u64,
    pub win_rate: Option<f64>,
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
    pub mean_score: [f64; 2],
    pub mean_bingos: [f64; 2],
    pub points_per_turn: [f64; 2],
    /// Milliseconds per move, first bot / second bot.
    pub ms_per_move: [f64; 2],
    pub first_player_rate: Option<f64>,
    /// What the games can say: `nothing`, `identical` (the bots played alike: no interval, no
    /// SPRT), `uniform` (every pair alike: conservative statistics) or `varied`.
    pub evidence: Evidence,
    /// Said instead of a win rate when there is none to give ("no information yet", "bots are
    /// identical on these deals").
    pub caveat: Option<&'static str>,
    pub sprt_llr: Option<f64>,
    /// The SPRT's lower and upper LLR bounds, where the experiment has one.
    pub sprt_bounds: Option<(f64, f64)>,
    pub tally: MatchTally,
}

#[derive(Serialize, sqlx::FromRow)]
pub struct ParkedBatch {
    pub batch_id: Uuid,
    pub cell_index: i32,
    pub failures: i32,
    pub error: Option<String>,
}

#[derive(Serialize)]
pub struct Detail {
    #[serde(flatten)]
    pub summary: Summary,
    pub spec: ExperimentSpec,
    pub cells: Vec<CellView>,
    /// Batches by state: queued, leased, done, parked, cancelled.
    pub batches: serde_json::Map<String, serde_json::Value>,
    pub parked: Vec<ParkedBatch>,
    /// Queued batches that only a worker of another owner may take: replicas and cross-checks
    /// are never played by the group whose work they check, so a pool of one owner cannot
    /// finish them.
    pub waiting_for_others: i64,
    /// Workers that recorded results for this experiment, most games first.
    pub contributors: Vec<Contributor>,
    /// The artifact the experiment made (a wintable experiment's fitted table), by sha256.
    pub output_sha256: Option<String>,
    /// What a worker must be able to run to be given its batches (`onnx`, `cuda`).
    pub needs: Vec<String>,
    /// The counted games' logs (GCG and CSV), gzip-compressed, in the log store.
    pub log_bytes: i64,
    /// What each generation of a run that improves itself made (a leave table), in order; the
    /// last is the run's result. Empty for other experiments and before the first.
    pub generations: Vec<Generation>,
    /// A tuning run's parameters as they stand and every step that moved them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tuning: Option<Tuning>,
}

/// A tuning run's parameters (name -> value: the start, then each step's result) and its steps.
#[derive(Clone, Serialize)]
pub struct Tuning {
    pub params: std::collections::BTreeMap<String, f64>,
    pub history: Vec<shared::kinds::tune::Step>,
}

/// One generation of a run that improves itself: what it made and the games behind it.
#[derive(Clone, Serialize, sqlx::FromRow)]
pub struct Generation {
    #[sqlx(try_from = "i32")]
    pub generation: u32,
    /// The artifact it made, by sha256 (`GET /api/v1/artifacts/{sha256}`).
    pub artifact: String,
    #[sqlx(try_from = "i64")]
    pub games: u64,
    pub made_at: DateTime<Utc>,
    /// The artifact the run holds after it: its own, or the one its gate kept; `None` while
    /// the gate plays. The last generation's is the run's result.
    pub kept: Option<String>,
    /// The gate's, where the generation was gated: the table it was held against, and why
    /// the run kept what it kept (`None` while it plays).
    #[sqlx(flatten)]
    pub gate: GateView,
}

/// A generation's gate, as [`Generation`] shows it.
#[derive(Clone, Serialize, sqlx::FromRow)]
pub struct GateView {
    #[sqlx(rename = "gate_against")]
    pub against: Option<String>,
    #[sqlx(rename = "gate_verdict")]
    pub verdict: Option<String>,
}

#[derive(Serialize, sqlx::FromRow)]
pub struct Contributor {
    pub worker_id: Uuid,
    pub name: String,
    pub games: i64,
    pub batches: i64,
}

/// How an experiment got where it is: each cell's win rate after each recorded batch, and
/// games recorded over time.
#[derive(Serialize)]
pub struct History {
    /// Per cell (by index): where it stood after each of its batches.
    pub convergence: Vec<Vec<Step>>,
    /// Games recorded in consecutive buckets of `bucket_secs`, from `start`.
    pub start: Option<DateTime<Utc>>,
    pub bucket_secs: i64,
    pub games: Vec<u64>,
    /// Per cell (by index): the first bot's milliseconds a move and a 95% interval from its
    /// batches (each batch's time a move, on whatever machine played it), once three batches
    /// have been counted: the noise a time difference must beat to mean anything.
    pub ms_per_move: Vec<Option<(f64, f64, f64)>>,
}

/// A cell's time a move with a 95% interval over its batches' times (`History::ms_per_move`).
fn timing(batches: &[(f64, u64)]) -> Option<(f64, f64, f64)> {
    let n = batches.len();
    let turns: u64 = batches.iter().map(|b| b.1).sum();
    if n < 3 || turns == 0 {
        return None;
    }
    let mean = batches.iter().map(|&(ms, t)| ms * t as f64).sum::<f64>() / turns as f64;
    let plain = batches.iter().map(|b| b.0).sum::<f64>() / n as f64;
    let var = batches.iter().map(|b| (b.0 - plain).powi(2)).sum::<f64>() / (n - 1) as f64;
    let half = 1.96 * (var / n as f64).sqrt();
    Some((mean, (mean - half).max(0.0), mean + half))
}

/// A cell's standing after one of its batches, as its page would have shown it then.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Step {
    pub games: u64,
    pub win_rate: f64,
    /// The 95% interval, where the games give one.
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
    /// The SPRT's log-likelihood ratio, where the experiment has an SPRT and the games give one.
    pub llr: Option<f64>,
}

/// Most buckets in the throughput series.
const BUCKETS: i64 = 60;

/// `kind`: the experiment's, whose cells' tests give each step its LLR.
pub async fn history(db: &sqlx::PgPool, id: Uuid, kind: &ExperimentKind) -> Result<History> {
    let cell_index: std::collections::HashMap<Uuid, i32> =
        sqlx::query_as("SELECT id, idx FROM cells WHERE experiment_id = $1")
            .bind(id)
            .fetch_all(db)
            .await?
            .into_iter()
            .collect();
    let mut counted: Vec<crate::ledger::RecordedBatch> =
        sqlx::query_as(crate::ledger::counted_results!("r.experiment_id = $1")).bind(id).fetch_all(db).await?;
    counted.sort_by_key(|r| (r.received_at, r.batch_id));
    let rows: Vec<(i32, Db<shared::protocol::JobResult>, DateTime<Utc>)> = counted
        .into_iter()
        .map(|r| (cell_index.get(&r.cell_id).copied().unwrap_or(-1), r.result, r.received_at))
        .collect();
    let cells = cell_index.len();
    let mut sums = vec![MatchTally::default(); cells];
    let mut convergence = vec![Vec::new(); cells];
    let mut times: Vec<Vec<(f64, u64)>> = vec![Vec::new(); cells];
    for (idx, Db(r), _) in &rows {
        let Some(t) = r.tally() else { continue };
        let Some(sum) = usize::try_from(*idx).ok().and_then(|i| sums.get_mut(i)) else { continue };
        sum.merge(t);
        if t.turns[0] > 0 {
            times[*idx as usize].push((t.ms_per_move(0), t.turns[0]));
        }
        if let Some(win_rate) = sum.win_rate() {
            let ci = sum.interval();
            convergence[*idx as usize].push(Step {
                games: sum.games,
                win_rate,
                ci_low: ci.map(|c| c.0),
                ci_high: ci.map(|c| c.1),
                llr: kind.sprt(*idx as u32).and_then(|s| s.llr(sum)),
            });
        }
    }
    let (start, end) = match (rows.first(), rows.last()) {
        (Some(a), Some(b)) => (a.2, b.2),
        _ => {
            return Ok(History {
                convergence,
                start: None,
                bucket_secs: 10,
                games: Vec::new(),
                ms_per_move: Vec::new(),
            });
        }
    };
    let span = (end - start).num_seconds().max(1);
    let bucket_secs = ((span + BUCKETS - 1) / BUCKETS).max(10);
    let mut games = vec![0u64; (span / bucket_secs + 1) as usize];
    for (_, Db(r), at) in &rows {
        games[((*at - start).num_seconds() / bucket_secs) as usize] += r.games();
    }
    let ms_per_move = times.iter().map(|t| timing(t)).collect();
    Ok(History { convergence, start: Some(start), bucket_secs, games, ms_per_move })
}

pub async fn api_history(State(st): State<AppState>, Path(id): Path<Uuid>) -> Result<Json<History>> {
    let (Db(spec),): (Db<ExperimentSpec>,) = sqlx::query_as("SELECT spec FROM experiments WHERE id = $1")
        .bind(id)
        .fetch_optional(&st.db)
        .await?
        .ok_or_else(|| Error::not_found(format!("no experiment {id}")))?;
    Ok(Json(history(&st.db, id, &spec.kind).await?))
}

/// A cell as stored.
#[derive(sqlx::FromRow)]
struct CellRow {
    id: Uuid,
    idx: i32,
    params: Db<serde_json::Map<String, serde_json::Value>>,
    bots: Option<Db<[String; 2]>>,
    status: String,
    stop_reason: Option<String>,
    target_units: i64,
    done_units: i64,
    tally: Db<MatchTally>,
}

impl CellRow {
    fn view(self, experiment: &ExperimentKind) -> CellView {
        let (sprt, kind) = (experiment.sprt(self.idx as u32), experiment.job_kind());
        let t = self.tally.0;
        let ci = t.interval();
        CellView {
            id: self.id,
            index: self.idx,
            params: self.params.0,
            bots: self.bots.map(|b| b.0),
            status: self.status,
            stop_reason: self.stop_reason,
            // Counted units, whether or not the cell keeps a tally (a self-play cell of a leaves
            // run does not): a match cell's tally has as many games.
            games: self.done_units as u64 * kind.shown_per_unit(),
            target_games: self.target_units * kind.shown_per_unit() as i64,
            wins: t.wins,
            draws: t.draws,
            losses: t.losses,
            pairs: t.pairs(),
            win_rate: t.win_rate(),
            ci_low: ci.map(|c| c.0),
            ci_high: ci.map(|c| c.1),
            mean_score: [t.mean_score(0), t.mean_score(1)],
            mean_bingos: [t.mean_bingos(0), t.mean_bingos(1)],
            points_per_turn: [t.points_per_turn(0), t.points_per_turn(1)],
            ms_per_move: [t.ms_per_move(0), t.ms_per_move(1)],
            first_player_rate: t.first_player_rate(),
            evidence: t.evidence(),
            caveat: t.evidence().caveat().filter(|_| kind.plays_bots()),
            sprt_llr: sprt.and_then(|s| s.llr(&t)),
            sprt_bounds: sprt.map(Sprt::bounds),
            tally: t,
        }
    }
}

pub async fn detail(db: &sqlx::PgPool, id: Uuid) -> Result<Detail> {
    let row: Option<SummaryRow> =
        sqlx::query_as(concat!(summary_sql!(), " WHERE e.id = $1")).bind(id).fetch_optional(db).await?;
    let summary = row.ok_or_else(|| Error::not_found(format!("no experiment {id}")))?.summary()?;
    let (Db(spec), output_sha256, needs): (Db<ExperimentSpec>, Option<String>, Vec<String>) =
        sqlx::query_as("SELECT spec, output_sha256, needs FROM experiments WHERE id = $1")
            .bind(id)
            .fetch_one(db)
            .await?;
    let rows: Vec<CellRow> = sqlx::query_as("SELECT id, idx, params, bots, status, stop_reason, target_units, done_units, tally FROM cells WHERE experiment_id = $1 ORDER BY idx").bind(id).fetch_all(db).await?;
    let cells: Vec<CellView> = rows.into_iter().map(|r| r.view(&spec.kind)).collect();
    let mut summary = summary;
    summary.headline = crate::kinds::headline(&spec.kind, &cells);
    let counts: Vec<(String, i64)> =
        sqlx::query_as("SELECT state, count(*) FROM batches WHERE experiment_id = $1 GROUP BY state")
            .bind(id)
            .fetch_all(db)
            .await?;
    let mut batches = serde_json::Map::new();
    for s in ["queued", "leased", "done", "parked", "cancelled"] {
        batches.insert(s.into(), counts.iter().find(|c| c.0 == s).map_or(0, |c| c.1).into());
    }
    let parked = sqlx::query_as(
        "SELECT b.id AS batch_id, c.idx AS cell_index, b.failures, b.last_error AS error FROM batches b JOIN cells c ON c.id = b.cell_id
         WHERE b.experiment_id = $1 AND b.state = 'parked' ORDER BY c.idx, b.first_unit",
    )
    .bind(id)
    .fetch_all(db)
    .await?;
    let (waiting_for_others,): (i64,) = sqlx::query_as(
        "SELECT count(*) FROM batches WHERE experiment_id = $1 AND state = 'queued' AND (trusted_only OR cardinality(exclude_groups) > 0)",
    )
    .bind(id)
    .fetch_one(db)
    .await?;
    let contributors = sqlx::query_as(
        "SELECT w.id AS worker_id, w.name, sum(r.games)::bigint AS games, count(*) AS batches FROM batch_results r JOIN workers w ON w.id = r.worker_id
         WHERE r.experiment_id = $1 GROUP BY w.id, w.name ORDER BY 3 DESC, w.name",
    )
    .bind(id)
    .fetch_all(db)
    .await?;
    let (log_bytes,): (i64,) = sqlx::query_as(
        "SELECT coalesce(sum(n), 0)::bigint FROM (SELECT DISTINCT ON (r.batch_id) r.gcg_bytes + r.csv_bytes AS n
         FROM batch_results r JOIN batches b ON b.id = r.batch_id
         WHERE r.experiment_id = $1 AND r.state = 'valid' AND b.state = 'done' ORDER BY r.batch_id, r.received_at) counted",
    )
    .bind(id)
    .fetch_one(db)
    .await?;
    let generations = sqlx::query_as(
        "SELECT generation, artifact, games, made_at, kept, gate_against, gate_verdict FROM generations WHERE experiment_id = $1 AND artifact IS NOT NULL ORDER BY generation",
    )
    .bind(id)
    .fetch_all(db)
    .await?;
    let steps: Vec<(Db<shared::kinds::tune::Step>,)> = sqlx::query_as(
        "SELECT step FROM generations WHERE experiment_id = $1 AND step IS NOT NULL ORDER BY generation",
    )
    .bind(id)
    .fetch_all(db)
    .await?;
    let tuning = crate::kinds::tuning(&spec.kind, steps.into_iter().map(|s| s.0.0).collect());
    Ok(Detail {
        summary,
        spec,
        cells,
        batches,
        parked,
        waiting_for_others,
        contributors,
        output_sha256,
        needs,
        log_bytes,
        generations,
        tuning,
    })
}

/// Why an SPRT stopped a cell, in words for the dashboard: which hypothesis the games favour
/// and the bounds that said so, never a claim about the win rate itself (a test that favours
/// H1 at p1 = 0.49 says nothing of a 48.8% cell but that 0.49 explains its games better than
/// p0 does, at the test's error rates).
pub fn sprt_reason(s: &Sprt, d: SprtDecision) -> Option<String> {
    let rates = format!("alpha {}, beta {}", s.alpha, s.beta);
    match d {
        SprtDecision::Continue { .. } => None,
        SprtDecision::AcceptH1 { llr } => Some(format!(
            "SPRT: the games favour H1 (win rate {}) over H0 ({}); LLR {llr:.2} reached the upper bound {:.2} ({rates})",
            s.p1,
            s.p0,
            s.bounds().1
        )),
        SprtDecision::AcceptH0 { llr } => Some(format!(
            "SPRT: the games favour H0 (win rate {}) over H1 ({}); LLR {llr:.2} reached the lower bound {:.2} ({rates})",
            s.p0,
            s.p1,
            s.bounds().0
        )),
    }
}

pub async fn api_list(State(st): State<AppState>, Query(q): Query<ListQuery>) -> Result<Json<Vec<Summary>>> {
    Ok(Json(list_where(&st.db, &q).await?))
}

pub async fn api_detail(State(st): State<AppState>, Path(id): Path<Uuid>) -> Result<Json<Detail>> {
    Ok(Json(detail(&st.db, id).await?))
}
