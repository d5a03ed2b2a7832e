//! Batch results: the upload (accepted once per batch and lease, with the cell's tally updated
//! in the same transaction), the logs, and recomputing cell tallies from stored results.

use crate::auth::Caller;
use crate::error::{Error, Result};
use crate::experiments::sprt_reason;
use crate::logstore::Log;
use crate::queue::{lease_error, settle_experiment};
use crate::replicas;
use crate::state::AppState;
use crate::{endgames, ledger};
use axum::Json;
use axum::extract::{Path, State};
use axum::http::header;
use axum::response::IntoResponse;
use base64::Engine as _;
use engine::winpct::WinSamples;
use shared::experiment::ExperimentSpec;
use shared::kinds::ExperimentKind;
use shared::protocol::{ArtifactRef, JobResult, ResultUpload, UploadResponse};
use shared::stats::{Evidence, MatchTally};
use sqlx::types::Json as Db;
use std::io::Read;
use uuid::Uuid;

/// Largest uncompressed log the coordinator will inflate (guards against gzip bombs).
const MAX_LOG_BYTES: u64 = 256 << 20;
/// Most a log may inflate, as a multiple of its compressed size (game logs compress about
/// 5-10x), plus a megabyte for small logs.
const MAX_INFLATION: u64 = 100;

/// Decode one base64-of-gzip log and check its sha256; returns the compressed bytes and the
/// text. Inflation stops at `MAX_LOG_BYTES` or `MAX_INFLATION` times the compressed size.
fn check_log(field: &str, b64: &str, sha: &str) -> Result<(Vec<u8>, String)> {
    let gz = base64::engine::general_purpose::STANDARD
        .decode(b64)
        .map_err(|e| Error::unprocessable(format!("logs.{field}: not base64: {e}")))?;
    let cap = MAX_LOG_BYTES.min(MAX_INFLATION * gz.len() as u64 + (1 << 20));
    let mut text = Vec::new();
    flate2::read::GzDecoder::new(&gz[..])
        .take(cap + 1)
        .read_to_end(&mut text)
        .map_err(|e| Error::unprocessable(format!("logs.{field}: not gzip: {e}")))?;
    if text.len() as u64 > cap {
        return Err(Error::unprocessable(format!(
            "logs.{field}: inflates past {cap} bytes ({MAX_INFLATION}x its compressed size, {MAX_LOG_BYTES} at most)"
        )));
    }
    if crate::artifacts::sha256_hex(&text) != sha {
        return Err(Error::unprocessable(format!("logs.{field}: sha256 does not match the content")));
    }
    let text = String::from_utf8(text).map_err(|_| Error::unprocessable(format!("logs.{field}: not UTF-8")))?;
    Ok((gz, text))
}

/// A match or wintable upload, checked against its batch before anything is locked
/// (`verify`). An upload whose lease, kind or size is wrong is let through here: the
/// transaction answers it.
async fn verify_upload(
    st: &AppState,
    batch: Uuid,
    worker: Uuid,
    u: &ResultUpload,
    logs: crate::verify::Texts,
) -> Result<()> {
    if matches!(u.result, JobResult::Endgame(_)) || st.cfg.verify_fraction == 0.0 {
        return Ok(());
    }
    #[derive(sqlx::FromRow)]
    struct Leased {
        state: String,
        lease_id: Option<Uuid>,
        lease_owner: Option<Uuid>,
        first_unit: i64,
        units: i64,
        spec: Db<ExperimentSpec>,
        artifacts: Db<Vec<ArtifactRef>>,
        bots: Option<Db<[String; 2]>>,
    }
    let row: Option<Leased> = sqlx::query_as(
        "SELECT b.state, b.lease_id, b.lease_owner, b.first_unit, b.units, e.spec, e.artifacts, c.bots
         FROM batches b JOIN cells c ON c.id = b.cell_id JOIN experiments e ON e.id = b.experiment_id WHERE b.id = $1",
    )
    .bind(batch)
    .fetch_optional(&st.db)
    .await?;
    let Some(b) = row else { return Ok(()) };
    let held = b.state == "leased" && b.lease_id == Some(u.lease_id) && b.lease_owner == Some(worker);
    if !held || u.result.games() != 2 * b.units as u64 {
        return Ok(());
    }
    // An upload under the lease is as good as a heartbeat: keep the lease while the games
    // are re-played, which can take longer than the worker's heartbeat interval.
    sqlx::query(
        "UPDATE batches SET lease_expires = greatest(lease_expires, now() + make_interval(secs => $3))
         WHERE id = $1 AND lease_id = $2 AND state = 'leased'",
    )
    .bind(batch)
    .bind(u.lease_id)
    .bind(st.cfg.lease_secs as f64)
    .execute(&st.db)
    .await?;
    let rules = st.rules.get(&st.db, &b.artifacts).await?;
    let (seed, first_pair, pairs, fraction) =
        (b.spec.seed, b.first_unit as u64, b.units as u64, st.cfg.verify_fraction);
    let checked = match (&b.spec.kind, b.bots, u.result.clone()) {
        (ExperimentKind::Match(_), Some(Db(bots)), JobResult::Match(tally))
        | (ExperimentKind::Selfplay(_), Some(Db(bots)), JobResult::Selfplay(tally)) => {
            let paired = matches!(b.spec.kind, ExperimentKind::Match(_));
            let m = crate::verify::MatchBatch { batch, seed, first_pair, pairs, bots, paired };
            tokio::task::spawn_blocking(move || crate::verify::check_match(&rules, &m, &logs, &tally, fraction)).await
        }
        (ExperimentKind::Wintable(_), _, JobResult::Wintable(counts)) => {
            let w = crate::verify::WintableBatch { seed, first_pair, pairs };
            tokio::task::spawn_blocking(move || crate::verify::check_wintable(&rules, &w, &logs, &counts)).await
        }
        _ => return Ok(()),
    }
    .map_err(|e| Error::internal(e.to_string()))?;
    if let Err(why) = checked {
        sqlx::query("UPDATE workers SET rejected = rejected + 1 WHERE id = $1").bind(worker).execute(&st.db).await?;
        tracing::warn!(%batch, %worker, %why, "upload refused");
        return Err(Error::unprocessable(format!("{why}; nothing was recorded")));
    }
    Ok(())
}

#[derive(sqlx::FromRow)]
struct BatchRow {
    state: String,
    lease_id: Option<Uuid>,
    lease_owner: Option<Uuid>,
    cell_id: Uuid,
    experiment_id: Uuid,
    first_unit: i64,
    units: i64,
    positions: Option<Vec<i64>>,
    exclude_owners: Vec<Uuid>,
    priority: i32,
    /// The cell's bots (match cells only).
    bots: Option<Db<[String; 2]>>,
    /// The experiment's job kind.
    kind: String,
    /// The experiment's artifacts.
    artifacts: Db<Vec<ArtifactRef>>,
}

/// Longest text field of a solved position.
const MAX_SOLVED_TEXT: usize = 4000;

/// `POST /api/v1/batches/{id}/result`.
pub async fn upload(
    State(st): State<AppState>,
    caller: Caller,
    Path(batch): Path<Uuid>,
    Json(u): Json<ResultUpload>,
) -> Result<Json<UploadResponse>> {
    let worker = caller.worker()?;
    // Logs are inflated and checked before any transaction: bounded work, and no row locked
    // or connection held meanwhile.
    let u = std::sync::Arc::new(u);
    let logs = u.clone();
    let (gcg, gcg_text, csv) = tokio::task::spawn_blocking(move || -> Result<_> {
        let (gcg, text) = check_log("gcg_gz", &logs.logs.gcg_gz, &logs.logs.gcg_sha256)?;
        let (csv, csv_text) = check_log("csv_gz", &logs.logs.csv_gz, &logs.logs.csv_sha256)?;
        Ok((gcg, crate::verify::Texts { gcg: text, csv: csv_text }, csv))
    })
    .await
    .map_err(|e| Error::internal(e.to_string()))??;
    verify_upload(&st, batch, worker, &u, gcg_text).await?;
    // The logs are stored before the row that names them (logstore's invariant); a repeat
    // upload finds them there.
    let sizes = (gcg.len() as i64, csv.len() as i64);
    st.logs.put(Log::Gcg, &u.logs.gcg_sha256, gcg).await?;
    st.logs.put(Log::Csv, &u.logs.csv_sha256, csv).await?;
    let mut tx = st.db.begin().await?;
    let row: Option<BatchRow> = sqlx::query_as(
        "SELECT b.state, b.lease_id, b.lease_owner, b.cell_id, b.experiment_id, b.first_unit, b.units, b.positions,
                    b.exclude_owners, b.priority, e.kind, e.artifacts, c.bots
             FROM batches b JOIN experiments e ON e.id = b.experiment_id JOIN cells c ON c.id = b.cell_id
             WHERE b.id = $1 FOR NO KEY UPDATE OF b",
    )
    .bind(batch)
    .fetch_optional(&mut *tx)
    .await?;
    let Some(b) = row else {
        return Err(Error::not_found(format!("no batch {batch}")));
    };
    let (state, lease, owner, cell, experiment, units) =
        (b.state.clone(), b.lease_id, b.lease_owner, b.cell_id, b.experiment_id, b.units);
    // A batch holds one result per lease (the first and its replicas): a repeat under the
    // same lease changes nothing.
    let done: Option<(Uuid,)> =
        sqlx::query_as("SELECT worker_id FROM batch_results WHERE batch_id = $1 AND lease_id = $2")
            .bind(batch)
            .bind(u.lease_id)
            .fetch_optional(&mut *tx)
            .await?;
    if let Some((by,)) = done {
        if by != worker {
            return Err(Error::forbidden("this lease belongs to another worker"));
        }
        return Ok(Json(UploadResponse { accepted: false, message: "already recorded; nothing changed".into() }));
    }
    if state != "leased" || lease != Some(u.lease_id) {
        return Err(lease_error(&mut *tx, batch, u.lease_id, worker).await);
    }
    if owner != Some(worker) {
        return Err(Error::forbidden("this lease belongs to another worker"));
    }
    if u.result.kind().as_str() != b.kind {
        return Err(Error::unprocessable(format!(
            "result.kind: a {} result for a {} batch; nothing was recorded",
            u.result.kind().as_str(),
            b.kind
        )));
    }
    let games = match &u.result {
        JobResult::Match(tally) | JobResult::Selfplay(tally) => {
            let paired = matches!(u.result, JobResult::Match(_));
            if !tally.is_consistent(paired) || tally.games != 2 * units as u64 {
                return Err(Error::unprocessable(format!(
                    "result.games: {} games with inconsistent counts; the batch has {} games",
                    tally.games,
                    2 * units
                )));
            }
            tally.games
        }
        JobResult::Endgame(report) => {
            let want = crate::queue::batch_positions(b.first_unit, b.units, b.positions.clone());
            let got: Vec<u64> = report.solved.iter().map(|s| s.index).collect();
            if got != want {
                return Err(Error::unprocessable(format!("result.solved: positions {got:?}; the batch has {want:?}")));
            }
            if let Some(s) =
                report.solved.iter().find(|s| [&s.cgp, &s.best, &s.sequence].iter().any(|t| t.len() > MAX_SOLVED_TEXT))
            {
                return Err(Error::unprocessable(format!(
                    "result.solved: position {}: a text field is longer than {MAX_SOLVED_TEXT} bytes",
                    s.index
                )));
            }
            report.solved.len() as u64
        }
        JobResult::Wintable(w) => {
            if w.games != 2 * units as u64 {
                return Err(Error::unprocessable(format!(
                    "result.games: {} games; the batch has {}",
                    w.games,
                    2 * units
                )));
            }
            let dist = crate::artifacts::distribution(&mut *tx, &b.artifacts).await?;
            WinSamples::new(&dist)
                .add_counts(&w.counts)
                .map_err(|e| Error::unprocessable(format!("result.counts: {e}")))?;
            w.games
        }
    };
    let (owner, validated): (Uuid, i64) = sqlx::query_as("SELECT owner_id, validated FROM workers WHERE id = $1")
        .bind(worker)
        .fetch_one(&mut *tx)
        .await?;
    let digest = replicas::digest(&u.result, &u.logs.gcg_sha256, &u.logs.csv_sha256);
    // Endgame batches are checked position by position (`record_endgames`), not replicated whole.
    let state = if matches!(u.result, JobResult::Endgame(_)) { "valid" } else { "pending" };
    sqlx::query(
        "INSERT INTO batch_results (batch_id, lease_id, worker_id, owner_id, cell_id, experiment_id, result, games, elapsed_ms,
                                    gcg_bytes, gcg_sha256, csv_bytes, csv_sha256, state, digest)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)",
    )
    .bind(batch)
    .bind(u.lease_id)
    .bind(worker)
    .bind(owner)
    .bind(cell)
    .bind(experiment)
    .bind(Db(&u.result))
    .bind(games as i64)
    .bind(u.elapsed_ms.min(i64::MAX as u64) as i64)
    .bind(sizes.0)
    .bind(&u.logs.gcg_sha256)
    .bind(sizes.1)
    .bind(&u.logs.csv_sha256)
    .bind(state)
    .bind(&digest)
    .execute(&mut *tx)
    .await?;
    // Games per second, for the workers page: of games only (an endgame batch's positions
    // are another unit; workers size their batches by their own rate per kind).
    let gps = u.result.kind().plays_games().then(|| games as f64 / (u.elapsed_ms.max(1) as f64 / 1000.0));
    sqlx::query(
        "UPDATE workers SET games = games + $2, positions = positions + $3, batches = batches + 1, last_seen = now(),
                games_per_sec = coalesce($4, games_per_sec) WHERE id = $1",
    )
    .bind(worker)
    .bind(if gps.is_some() { games as i64 } else { 0 })
    .bind(if gps.is_some() { 0 } else { games as i64 })
    .bind(gps)
    .execute(&mut *tx)
    .await?;
    let trusted = validated >= st.cfg.replicate_until as i64;
    let policy = Policy::of(&st.cfg);
    let message = match &u.result {
        JobResult::Endgame(report) => {
            let checks = record_endgames(&mut tx, batch, &b, owner, trusted, &report.solved).await?;
            mark_done(&mut tx, batch).await?;
            record_in_cell(&mut tx, cell, units, None, policy).await?;
            format!("recorded {games} positions{checks}")
        }
        JobResult::Match(_) | JobResult::Selfplay(_) | JobResult::Wintable(_) => {
            // Bots with time budgets play differently on every machine: their batches are
            // validated by re-playing their games only (`verify`).
            let deterministic = b.bots.as_ref().is_none_or(|Db(bots)| {
                bots.iter().all(|b| engine::bots::BotSpec::parse(b).is_ok_and(|s| s.deterministic()))
            });
            let alone =
                !deterministic || !replicas::wants_replica(validated, st.cfg.replicate_until, st.cfg.spot_check);
            let message = settle_batch(&mut tx, batch, owner, alone, policy).await?;
            // ... and by comparing each worker's results with the rest of the cell's.
            if !deterministic && crate::outliers::check(&mut tx, cell).await? == Some(worker) {
                tx.commit().await?;
                return Err(Error::forbidden(
                    "this worker's results are a statistical outlier in their cell; it is quarantined and its results withdrawn",
                ));
            }
            message
        }
    };
    tx.commit().await?;
    Ok(Json(UploadResponse { accepted: true, message }))
}

/// What recording needs to know of the coordinator's trust settings.
#[derive(Clone, Copy)]
pub struct Policy {
    /// Owners whose validated results a cell needs before an SPRT may stop it: 2, or 1 when
    /// every worker is trusted from the start (a coordinator of one's own machines).
    min_owners: i64,
}

impl Policy {
    pub fn of(cfg: &crate::config::Config) -> Self {
        Policy { min_owners: if cfg.replicate_until == 0 { 1 } else { 2 } }
    }
}

async fn mark_done(tx: &mut sqlx::Transaction<'_, sqlx::Postgres>, batch: Uuid) -> Result<()> {
    sqlx::query(
        "UPDATE batches SET state = 'done', lease_id = NULL, lease_owner = NULL, lease_expires = NULL, deadline = NULL, updated_at = now()
         WHERE id = $1",
    )
    .bind(batch)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// Weigh a match or win-table batch's results after a new one (`replicas::judge`): credit the
/// agreed result to its cell once, mark the others wrong and quarantine their workers; or put
/// the batch back in the queue for another owner's replica. Returns the worker's message.
async fn settle_batch(
    tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
    batch: Uuid,
    uploader: Uuid,
    alone: bool,
    policy: Policy,
) -> Result<String> {
    #[derive(sqlx::FromRow)]
    struct Live {
        lease_id: Uuid,
        worker_id: Uuid,
        owner_id: Uuid,
        digest: String,
        state: String,
        result: Db<JobResult>,
    }
    let rows: Vec<Live> = sqlx::query_as(
        "SELECT lease_id, worker_id, owner_id, digest, state, result FROM batch_results
         WHERE batch_id = $1 AND state IN ('pending', 'valid') ORDER BY received_at, lease_id",
    )
    .bind(batch)
    .fetch_all(&mut **tx)
    .await?;
    let claims: Vec<replicas::Claim> =
        rows.iter().map(|r| replicas::Claim { owner: r.owner_id, digest: &r.digest }).collect();
    let (cell, units, state): (Uuid, i64, String) =
        sqlx::query_as("SELECT cell_id, units, state FROM batches WHERE id = $1")
            .bind(batch)
            .fetch_one(&mut **tx)
            .await?;
    match replicas::judge(&claims, alone) {
        replicas::Judgement::Valid(agreed) => {
            let replicated = rows.iter().filter(|r| r.digest == agreed).count() > 1;
            let mut wrong = Vec::new();
            for r in &rows {
                let now = if r.digest == agreed { "valid" } else { "wrong" };
                if now != r.state {
                    sqlx::query("UPDATE batch_results SET state = $3 WHERE batch_id = $1 AND lease_id = $2")
                        .bind(batch)
                        .bind(r.lease_id)
                        .bind(now)
                        .execute(&mut **tx)
                        .await?;
                }
                if now == "wrong" {
                    wrong.push(r.worker_id);
                } else if replicated && r.state == "pending" {
                    sqlx::query("UPDATE workers SET validated = validated + 1 WHERE id = $1")
                        .bind(r.worker_id)
                        .execute(&mut **tx)
                        .await?;
                }
            }
            let mut message = "recorded".to_string();
            if state != "done" {
                mark_done(tx, batch).await?;
                let result = &rows.iter().find(|r| r.digest == agreed).expect("the agreed result").result.0;
                let tally = match result {
                    JobResult::Match(t) | JobResult::Selfplay(t) => Some(t),
                    _ => None,
                };
                if record_in_cell(tx, cell, units, tally, policy).await? && matches!(result, JobResult::Wintable(_)) {
                    let (experiment,): (Uuid,) = sqlx::query_as("SELECT experiment_id FROM cells WHERE id = $1")
                        .bind(cell)
                        .fetch_one(&mut **tx)
                        .await?;
                    let sha = fit_wintable(tx, experiment).await?;
                    message = format!("recorded; the experiment's table is artifact {sha}");
                }
                if replicated {
                    message = format!("{message}; validated by a replica");
                }
            }
            for w in wrong {
                let reason =
                    format!("its result for batch {batch} differed from what two other owners' workers agreed on");
                crate::quarantine::quarantine(tx, w, &reason).await?;
                tracing::warn!(%batch, worker = %w, "result outvoted by replicas; worker quarantined");
            }
            Ok(message)
        }
        replicas::Judgement::Wanted => {
            let digests: std::collections::BTreeSet<&str> = rows.iter().map(|r| r.digest.as_str()).collect();
            if digests.len() > 1 {
                // Replicas disagree: every side is replicated again from now on until a
                // majority says who was wrong.
                let workers: Vec<Uuid> = rows.iter().map(|r| r.worker_id).collect();
                sqlx::query("UPDATE workers SET mismatches = mismatches + 1, validated = 0 WHERE id = ANY ($1)")
                    .bind(&workers)
                    .execute(&mut **tx)
                    .await?;
                tracing::warn!(%batch, "replicas disagree; asking another owner");
            }
            sqlx::query(
                "UPDATE batches SET state = 'queued', lease_id = NULL, lease_owner = NULL, lease_expires = NULL, deadline = NULL,
                        exclude_owners = CASE WHEN $2 = ANY (exclude_owners) THEN exclude_owners ELSE exclude_owners || $2 END,
                        updated_at = now()
                 WHERE id = $1",
            )
            .bind(batch)
            .bind(uploader)
            .execute(&mut **tx)
            .await?;
            Ok("recorded; it counts once another owner's worker has replicated it".into())
        }
        replicas::Judgement::Unsettled => {
            sqlx::query(
                "UPDATE batches SET state = 'parked', last_error = $2, lease_id = NULL, lease_owner = NULL, lease_expires = NULL,
                        deadline = NULL, updated_at = now() WHERE id = $1",
            )
            .bind(batch)
            .bind(format!("{} results from different owners and no two agree", rows.len()))
            .execute(&mut **tx)
            .await?;
            crate::queue::park_cell(tx, cell).await?;
            Ok("recorded; no two owners' results agree, so the batch is parked for the operator".into())
        }
    }
}

/// Most solves of one position: a dispute that this many workers cannot settle stays a
/// dispute, shown as one, rather than going round the volunteers for ever.
const MAX_SOLVES: usize = 5;

/// Store a batch's solved positions. A first solve queues the cross-checked ones (all of them
/// when the worker is not yet trusted) for another owner. Each solve is then weighed with the
/// position's others (`endgames::settle`): the outcome two owners agree on is the position's
/// value and every solve is marked against it; exact solves that contradict each other with
/// nothing agreed yet queue the position for an owner that has not solved it.
async fn record_endgames(
    tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
    batch: Uuid,
    b: &BatchRow,
    owner: Uuid,
    trusted: bool,
    solved: &[shared::kinds::endgame::Solved],
) -> Result<String> {
    let worker =
        b.lease_owner.ok_or_else(|| Error::internal(format!("recording batch {batch} with no lease holder")))?;
    let (cell_index, Db(spec)): (i32, Db<ExperimentSpec>) = sqlx::query_as(
        "SELECT c.idx, e.spec FROM cells c JOIN experiments e ON e.id = c.experiment_id WHERE c.id = $1",
    )
    .bind(b.cell_id)
    .fetch_one(&mut **tx)
    .await?;
    let ExperimentKind::Endgame(eg) = &spec.kind else {
        return Err(Error::internal(format!("endgame results recorded for {}", b.experiment_id)));
    };
    let first_pass = cell_index == 0;
    // Positions for another owner: within the check cell's planned target, and beyond it.
    let (mut planned, mut again) = (Vec::new(), Vec::new());
    let mut exclude = b.exclude_owners.clone();
    for s in solved {
        sqlx::query(
            "INSERT INTO endgame_solutions (experiment_id, idx, batch_id, worker_id, pass, cgp, skipped, value, exact, best, sequence, nodes, ms)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)",
        )
        .bind(b.experiment_id)
        .bind(s.index as i64)
        .bind(batch)
        .bind(worker)
        .bind(if first_pass { "solve" } else { "check" })
        .bind(&s.cgp)
        .bind(s.skipped)
        .bind(s.value)
        .bind(s.exact)
        .bind(&s.best)
        .bind(&s.sequence)
        .bind(s.nodes.min(i64::MAX as u64) as i64)
        .bind(s.ms.min(i64::MAX as u64) as i64)
        .execute(&mut **tx)
        .await?;
        if first_pass && eg.is_checked(spec.seed, s.index) {
            planned.push(s.index as i64);
            continue;
        }
        if first_pass && !trusted {
            again.push(s.index as i64);
            continue;
        }
        let (settled, solvers) = endgames::weigh(tx, b.experiment_id, s.index).await?;
        if settled.disputed() {
            if solvers.len() < MAX_SOLVES {
                tracing::warn!(experiment = %b.experiment_id, position = s.index, %worker, "endgame solves disagree; solving it again");
                again.push(s.index as i64);
                exclude.extend(solvers);
            } else {
                tracing::warn!(experiment = %b.experiment_id, position = s.index, "endgame solves disagree after {MAX_SOLVES} solves; left disputed");
            }
        }
    }
    exclude.push(owner);
    for (positions, extra) in [(&planned, false), (&again, true)] {
        if !positions.is_empty() {
            endgames::resolve(tx, b.experiment_id, positions, exclude.clone(), extra, b.priority).await?;
        }
    }
    match planned.len() + again.len() {
        0 => Ok(String::new()),
        n => Ok(format!("; {n} queued for another owner's worker")),
    }
}

/// Sum every batch's counts of a wintable experiment, fit the table, and store it as a
/// `winpct` artifact (not the default: a researcher makes it one with `coordinator artifact`).
async fn fit_wintable(tx: &mut sqlx::Transaction<'_, sqlx::Postgres>, experiment: Uuid) -> Result<String> {
    let (Db(spec), Db(artifacts)): (Db<ExperimentSpec>, Db<Vec<ArtifactRef>>) =
        sqlx::query_as("SELECT spec, artifacts FROM experiments WHERE id = $1")
            .bind(experiment)
            .fetch_one(&mut **tx)
            .await?;
    let ExperimentKind::Wintable(w) = &spec.kind else {
        return Err(Error::internal(format!(
            "fitting a win table for {experiment}, which is not a wintable experiment"
        )));
    };
    let dist = crate::artifacts::distribution(&mut **tx, &artifacts).await?;
    let results: Vec<ledger::RecordedBatch> =
        sqlx::query_as(ledger::counted_results!("r.experiment_id = $1")).bind(experiment).fetch_all(&mut **tx).await?;
    let mut samples = WinSamples::new(&dist);
    for r in &results {
        if let JobResult::Wintable(w) = &r.result.0 {
            samples.add_counts(&w.counts).map_err(Error::unprocessable)?;
        }
    }
    let table = samples.fit();
    let comment = format!(
        "P(win) for the player to move by tiles unseen (rows) and spread (columns, -{s}..+{s}).\nMade by `worker wintable generate --games {g} --seed {seed}`: {p} positions of static-vs-static self-play.",
        s = table.spread_max(),
        g = w.games,
        seed = spec.seed,
        p = samples.positions()
    );
    let bytes = table.to_text(&comment).into_bytes();
    let sha = crate::artifacts::sha256_hex(&bytes);
    sqlx::query("INSERT INTO artifacts (sha256, role, name, size, bytes) VALUES ($1, 'winpct', $2, $3, $4) ON CONFLICT (sha256) DO NOTHING")
        .bind(&sha)
        .bind(format!("{experiment}.wpt"))
        .bind(bytes.len() as i64)
        .bind(&bytes)
        .execute(&mut **tx)
        .await?;
    sqlx::query("UPDATE experiments SET output_sha256 = $2 WHERE id = $1")
        .bind(experiment)
        .bind(&sha)
        .execute(&mut **tx)
        .await?;
    tracing::info!(%experiment, %sha, positions = samples.positions(), "win-probability table fitted");
    Ok(sha)
}

/// A cell as a result is recorded in it.
#[derive(sqlx::FromRow)]
struct CellState {
    experiment_id: Uuid,
    tally: Db<MatchTally>,
    status: String,
    done_units: i64,
    target_units: i64,
    spec: Db<ExperimentSpec>,
}

/// Add a batch's units and tally (matches only) to its cell, and finish or stop the cell when
/// it is done (an SPRT only on results from `policy.min_owners` owners). True when the cell
/// finished now.
async fn record_in_cell(
    tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
    cell: Uuid,
    units: i64,
    t: Option<&MatchTally>,
    policy: Policy,
) -> Result<bool> {
    let c: CellState = sqlx::query_as(
        "SELECT c.experiment_id, c.tally, c.status, c.done_units, c.target_units, e.spec FROM cells c JOIN experiments e ON e.id = c.experiment_id WHERE c.id = $1 FOR NO KEY UPDATE OF c",
    )
    .bind(cell)
    .fetch_one(&mut **tx)
    .await?;
    let (experiment, Db(mut sum), Db(spec)) = (c.experiment_id, c.tally, c.spec);
    if let Some(t) = t {
        sum.merge(t);
    }
    let done = c.done_units + units;
    let mut next_status = None;
    if c.status == "running" {
        let mut sprt = spec.kind.sprt().and_then(|s| sprt_reason(s, s.decide(&sum)));
        if sprt.is_some() {
            // No one owner's machines decide a test: its results must come from several.
            let (owners,): (i64,) = sqlx::query_as(
                "SELECT count(DISTINCT r.owner_id) FROM batch_results r JOIN batches b ON b.id = r.batch_id
                 WHERE r.cell_id = $1 AND r.state = 'valid' AND b.state = 'done'",
            )
            .bind(cell)
            .fetch_one(&mut **tx)
            .await?;
            sprt = sprt.filter(|_| owners >= policy.min_owners);
        }
        let kind = spec.kind.job_kind();
        next_status = match (done >= c.target_units, sprt) {
            // A test that decided on the batch that also reached the target is still its verdict.
            (true, Some(reason)) => Some((
                "finished",
                format!(
                    "{reason}, as it reached its target of {} {}",
                    c.target_units as u64 * kind.shown_per_unit(),
                    kind.shown()
                ),
            )),
            (true, None) => {
                let mut reason = kind.finished(c.target_units as u64);
                if spec.kind.sprt().is_some() && sum.evidence() == Evidence::Identical {
                    reason += "; the bots played alike on every deal, so the SPRT could not decide";
                }
                Some(("finished", reason))
            }
            (false, Some(reason)) => Some(("stopped", reason)),
            (false, None) => None,
        };
    }
    match &next_status {
        Some((s, reason)) => {
            sqlx::query("UPDATE cells SET tally = $2, done_units = $3, status = $4, stop_reason = $5 WHERE id = $1")
                .bind(cell)
                .bind(Db(&sum))
                .bind(done)
                .bind(s)
                .bind(reason)
                .execute(&mut **tx)
                .await?;
            sqlx::query(
                "UPDATE batches SET state = 'cancelled', updated_at = now() WHERE cell_id = $1 AND state = 'queued'",
            )
            .bind(cell)
            .execute(&mut **tx)
            .await?;
            settle_experiment(tx, experiment).await?;
        }
        None => {
            sqlx::query("UPDATE cells SET tally = $2, done_units = $3 WHERE id = $1")
                .bind(cell)
                .bind(Db(&sum))
                .bind(done)
                .execute(&mut **tx)
                .await?;
        }
    }
    Ok(matches!(next_status, Some(("finished", _))))
}

/// `GET /api/v1/batches/{id}/logs/{gcg|csv}`: a batch's logs, gzip-compressed: a validated
/// result's, else one awaiting its replica; never a withdrawn or outvoted one.
pub async fn logs(State(st): State<AppState>, Path((batch, which)): Path<(Uuid, String)>) -> Result<impl IntoResponse> {
    let (log, sql) = match which.as_str() {
        "gcg" => (
            Log::Gcg,
            "SELECT gcg_sha256, gcg_gz FROM batch_results WHERE batch_id = $1 AND state IN ('valid', 'pending') ORDER BY state DESC, received_at LIMIT 1",
        ),
        "csv" => (
            Log::Csv,
            "SELECT csv_sha256, csv_gz FROM batch_results WHERE batch_id = $1 AND state IN ('valid', 'pending') ORDER BY state DESC, received_at LIMIT 1",
        ),
        _ => return Err(Error::not_found("logs are `gcg` or `csv`")),
    };
    let row: Option<(String, Option<Vec<u8>>)> = sqlx::query_as(sql).bind(batch).fetch_optional(&st.db).await?;
    let (sha, inline) = row.ok_or_else(|| Error::not_found(format!("no result for batch {batch}")))?;
    let bytes = st.logs.get_or(log, &sha, inline).await?;
    Ok(([(header::CONTENT_TYPE, "application/gzip")], bytes))
}

/// `GET /api/v1/experiments/{id}/batches`: every counted batch result (without logs): one per
/// batch, validated.
pub async fn list(
    State(st): State<AppState>,
    Path(experiment): Path<Uuid>,
) -> Result<Json<Vec<ledger::RecordedBatch>>> {
    let mut rows: Vec<ledger::RecordedBatch> =
        sqlx::query_as(ledger::counted_results!("r.experiment_id = $1")).bind(experiment).fetch_all(&st.db).await?;
    rows.sort_by_key(|r| (r.cell_id, r.first_unit));
    Ok(Json(rows))
}

/// Recompute every cell's tally from its counted batch results; returns the number of cells
/// and those whose stored tally differed (and are fixed).
pub async fn recompute(db: &sqlx::PgPool, experiment: Option<Uuid>) -> anyhow::Result<(u64, Vec<Uuid>)> {
    let mut tx = db.begin().await?;
    let cells: Vec<(Uuid,)> = sqlx::query_as(
        "SELECT id FROM cells WHERE $1::uuid IS NULL OR experiment_id = $1 ORDER BY experiment_id, idx FOR UPDATE",
    )
    .bind(experiment)
    .fetch_all(&mut *tx)
    .await?;
    let mut fixed = Vec::new();
    for (cell,) in &cells {
        if ledger::recompute_cell(&mut tx, *cell).await.map_err(|e| anyhow::anyhow!(e.message))? {
            fixed.push(*cell);
        }
    }
    tx.commit().await?;
    Ok((cells.len() as u64, fixed))
}
