//! Batch results: the upload (accepted once per batch and lease, with the cell's tally updated
//! in the same transaction), the logs, and recomputing cell tallies from stored results.

use crate::AppState;
use crate::auth::Caller;
use crate::error::{Error, Result};
use crate::experiments::sprt_reason;
use crate::queue::{lease_error, settle_experiment};
use axum::Json;
use axum::extract::{Path, State};
use axum::http::header;
use axum::response::IntoResponse;
use base64::Engine as _;
use engine::winpct::WinSamples;
use shared::experiment::{ExperimentKind, ExperimentSpec};
use shared::protocol::{ArtifactRef, JobResult, ResultUpload, UploadResponse};
use shared::stats::MatchTally;
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

/// A match upload, checked against its batch before anything is locked (`verify`). An upload
/// whose lease, kind or size is wrong is let through here: the transaction answers it.
async fn verify_match(st: &AppState, batch: Uuid, worker: Uuid, u: &ResultUpload, gcg: String) -> Result<()> {
    let JobResult::Match(tally) = &u.result else { return Ok(()) };
    if st.cfg.verify_fraction == 0.0 {
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
    let (ExperimentKind::Match(_), Some(Db(bots)), true, true) =
        (&b.spec.kind, b.bots, held, tally.games == 2 * b.units as u64)
    else {
        return Ok(());
    };
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
    let m = crate::verify::MatchBatch {
        batch,
        seed: b.spec.seed,
        first_pair: b.first_unit as u64,
        pairs: b.units as u64,
        bots,
    };
    let (tally, fraction) = (*tally, st.cfg.verify_fraction);
    let checked = tokio::task::spawn_blocking(move || crate::verify::check_match(&rules, &m, &gcg, &tally, fraction))
        .await
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
    exclude_workers: Option<Vec<Uuid>>,
    priority: i32,
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
        let (csv, _) = check_log("csv_gz", &logs.logs.csv_gz, &logs.logs.csv_sha256)?;
        Ok((gcg, text, csv))
    })
    .await
    .map_err(|e| Error::internal(e.to_string()))??;
    verify_match(&st, batch, worker, &u, gcg_text).await?;
    let mut tx = st.db.begin().await?;
    let row: Option<BatchRow> = sqlx::query_as(
        "SELECT b.state, b.lease_id, b.lease_owner, b.cell_id, b.experiment_id, b.first_unit, b.units, b.positions,
                    b.exclude_workers, b.priority, e.kind, e.artifacts
             FROM batches b JOIN experiments e ON e.id = b.experiment_id WHERE b.id = $1 FOR NO KEY UPDATE OF b",
    )
    .bind(batch)
    .fetch_optional(&mut *tx)
    .await?;
    let Some(b) = row else {
        return Err(Error::not_found(format!("no batch {batch}")));
    };
    let (state, lease, owner, cell, experiment, units) =
        (b.state.clone(), b.lease_id, b.lease_owner, b.cell_id, b.experiment_id, b.units);
    #[derive(sqlx::FromRow)]
    struct Recorded {
        lease_id: Uuid,
        worker_id: Uuid,
    }
    let done: Option<Recorded> = sqlx::query_as("SELECT lease_id, worker_id FROM batch_results WHERE batch_id = $1")
        .bind(batch)
        .fetch_optional(&mut *tx)
        .await?;
    if let Some(done) = done {
        if done.lease_id == u.lease_id && done.worker_id != worker {
            return Err(Error::forbidden("this lease belongs to another worker"));
        }
        if done.lease_id == u.lease_id {
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
    if u.result.kind().as_str() != b.kind {
        return Err(Error::unprocessable(format!(
            "result.kind: a {} result for a {} batch; nothing was recorded",
            u.result.kind().as_str(),
            b.kind
        )));
    }
    let games = match &u.result {
        JobResult::Match(tally) => {
            if !tally.is_consistent() || tally.games != 2 * units as u64 {
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
    .bind(games as i64)
    .bind(u.elapsed_ms.min(i64::MAX as u64) as i64)
    .bind(&gcg)
    .bind(&u.logs.gcg_sha256)
    .bind(&csv)
    .bind(&u.logs.csv_sha256)
    .execute(&mut *tx)
    .await?;
    sqlx::query("UPDATE batches SET state = 'done', lease_expires = NULL, updated_at = now() WHERE id = $1")
        .bind(batch)
        .execute(&mut *tx)
        .await?;
    // Games per second, for the workers page: of games only (an endgame batch's positions
    // are another unit; workers size their batches by their own rate per kind).
    let gps = u.result.kind().plays_games().then(|| games as f64 / (u.elapsed_ms.max(1) as f64 / 1000.0));
    sqlx::query(
        "UPDATE workers SET games = games + $2, batches = batches + 1, last_seen = now(),
                games_per_sec = coalesce($3, games_per_sec) WHERE id = $1",
    )
    .bind(worker)
    .bind(games as i64)
    .bind(gps)
    .execute(&mut *tx)
    .await?;
    let message = match &u.result {
        JobResult::Match(tally) => {
            record_in_cell(&mut tx, cell, units, Some(tally)).await?;
            format!("recorded {games} games")
        }
        JobResult::Endgame(report) => {
            let checks = record_endgames(&mut tx, batch, &b, worker, &report.solved).await?;
            record_in_cell(&mut tx, cell, units, None).await?;
            format!("recorded {games} positions{checks}")
        }
        JobResult::Wintable(_) => {
            if record_in_cell(&mut tx, cell, units, None).await? {
                let sha = fit_wintable(&mut tx, experiment).await?;
                format!("recorded {games} games; the experiment's table is artifact {sha}")
            } else {
                format!("recorded {games} games")
            }
        }
    };
    tx.commit().await?;
    Ok(Json(UploadResponse { accepted: true, message }))
}

/// Most solves of one position: a dispute that this many workers cannot settle stays a
/// dispute, shown as one, rather than going round the volunteers for ever.
const MAX_SOLVES: usize = 5;

/// Store a batch's solved positions. A first solve queues the cross-checked ones for another
/// worker. Each solve is then weighed with the position's others (`endgames::settle`): the
/// outcome two workers agree on is the position's value and every solve is marked against
/// it; exact solves that contradict each other with nothing agreed yet queue the position for
/// a worker that has not solved it.
async fn record_endgames(
    tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
    batch: Uuid,
    b: &BatchRow,
    worker: Uuid,
    solved: &[shared::protocol::Solved],
) -> Result<String> {
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
    let mut again = Vec::new();
    let mut exclude = b.exclude_workers.clone().unwrap_or_default();
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
            again.push(s.index as i64);
            continue;
        }
        let (settled, solvers) = weigh(tx, b.experiment_id, s.index).await?;
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
    if again.is_empty() {
        return Ok(String::new());
    }
    let (check_cell,): (Uuid,) = sqlx::query_as("SELECT id FROM cells WHERE experiment_id = $1 AND idx = 1")
        .bind(b.experiment_id)
        .fetch_one(&mut **tx)
        .await?;
    exclude.push(worker);
    exclude.sort();
    exclude.dedup();
    if !first_pass {
        // Re-solves were not in the check cell's target.
        sqlx::query("UPDATE cells SET target_units = target_units + $2, next_unit = next_unit + $2, status = 'running', stop_reason = NULL WHERE id = $1")
            .bind(check_cell)
            .bind(again.len() as i64)
            .execute(&mut **tx)
            .await?;
    }
    sqlx::query(
        "INSERT INTO batches (id, cell_id, experiment_id, first_unit, units, priority, state, positions, exclude_workers)
         VALUES ($1, $2, $3, $4, $5, $6, 'queued', $7, $8)",
    )
    .bind(Uuid::new_v4())
    .bind(check_cell)
    .bind(b.experiment_id)
    .bind(again[0])
    .bind(again.len() as i64)
    .bind(b.priority)
    .bind(&again)
    .bind(&exclude)
    .execute(&mut **tx)
    .await?;
    Ok(format!("; {} queued for another worker", again.len()))
}

/// Weigh a position's solves so far and store each one's `disagrees` mark; returns the
/// settlement and the workers that solved it.
async fn weigh(
    tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
    experiment: Uuid,
    index: u64,
) -> Result<(crate::endgames::Settlement, Vec<Uuid>)> {
    #[derive(sqlx::FromRow)]
    struct Solve {
        batch_id: Uuid,
        worker_id: Uuid,
        skipped: bool,
        exact: bool,
        value: i32,
    }
    let solves: Vec<Solve> = sqlx::query_as(
        "SELECT batch_id, worker_id, skipped, exact, value FROM endgame_solutions WHERE experiment_id = $1 AND idx = $2
         ORDER BY received_at, pass DESC",
    )
    .bind(experiment)
    .bind(index as i64)
    .fetch_all(&mut **tx)
    .await?;
    use crate::endgames::{Outcome, Verdict, settle};
    let claims: Vec<(Uuid, Option<Outcome>)> =
        solves.iter().map(|s| (s.worker_id, Outcome::of(s.skipped, s.exact, s.value))).collect();
    let settled = settle(&claims);
    for (s, v) in solves.iter().zip(&settled.verdicts) {
        sqlx::query("UPDATE endgame_solutions SET disagrees = $3 WHERE batch_id = $1 AND idx = $2")
            .bind(s.batch_id)
            .bind(index as i64)
            .bind(*v == Verdict::Disagrees)
            .execute(&mut **tx)
            .await?;
    }
    let mut solvers: Vec<Uuid> = claims.into_iter().map(|(w, _)| w).collect();
    solvers.sort();
    solvers.dedup();
    Ok((settled, solvers))
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
    let results: Vec<(Db<JobResult>,)> = sqlx::query_as("SELECT result FROM batch_results WHERE experiment_id = $1")
        .bind(experiment)
        .fetch_all(&mut **tx)
        .await?;
    let mut samples = WinSamples::new(&dist);
    for (Db(r),) in &results {
        if let JobResult::Wintable(w) = r {
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
/// it is done. True when the cell finished now.
async fn record_in_cell(
    tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
    cell: Uuid,
    units: i64,
    t: Option<&MatchTally>,
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
        if done >= c.target_units {
            next_status = Some(("finished", spec.kind.job_kind().finished(c.target_units as u64)));
        } else if let Some(reason) = spec.kind.sprt().and_then(|s| sprt_reason(s, s.decide(&sum))) {
            next_status = Some(("stopped", reason));
        }
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
        "SELECT r.batch_id, r.cell_id, r.worker_id, r.result, b.first_unit, b.units, r.elapsed_ms FROM batch_results r JOIN batches b ON b.id = r.batch_id
         WHERE r.experiment_id = $1 ORDER BY r.cell_id, b.first_unit",
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
    /// The batch's units (`JobKind::unit`): `first_unit .. first_unit + units`.
    first_unit: i64,
    units: i64,
    elapsed_ms: i64,
}

/// Recompute every cell's tally from its stored batch results; returns the cells whose stored
/// tally differed (and fixes them).
pub async fn recompute(db: &sqlx::PgPool, experiment: Option<Uuid>) -> anyhow::Result<(u64, Vec<Uuid>)> {
    let mut tx = db.begin().await?;
    let cells: Vec<(Uuid, Db<MatchTally>, i64)> =
        sqlx::query_as("SELECT id, tally, done_units FROM cells WHERE $1::uuid IS NULL OR experiment_id = $1 ORDER BY experiment_id, idx FOR UPDATE").bind(experiment).fetch_all(&mut *tx).await?;
    let mut fixed = Vec::new();
    for (cell, Db(stored), done) in &cells {
        let results: Vec<(Db<JobResult>,)> = sqlx::query_as("SELECT result FROM batch_results WHERE cell_id = $1")
            .bind(cell)
            .fetch_all(&mut *tx)
            .await?;
        let mut sum = MatchTally::default();
        let mut units = 0;
        for (Db(r),) in &results {
            if let JobResult::Match(t) = r {
                sum.merge(t);
            }
            units += r.units() as i64;
        }
        if sum != *stored || units != *done {
            sqlx::query("UPDATE cells SET tally = $2, done_units = $3 WHERE id = $1")
                .bind(cell)
                .bind(Db(&sum))
                .bind(units)
                .execute(&mut *tx)
                .await?;
            fixed.push(*cell);
        }
    }
    tx.commit().await?;
    Ok((cells.len() as u64, fixed))
}
