//! Batch results: the upload, in stages (authenticate the lease, the kind's quick checks,
//! decode the logs, the kind's verification, record and settle), the logs, and recomputing
//! cell tallies from stored results. Nothing is inflated before the lease is known to be the
//! uploader's, and nothing is written to the log store before every check has passed.
//!
//! One transaction records an upload, and it takes its locks in one order, the queue's:
//! the batch, then its cell (and the experiment's advisory lock when a cell ends), then the
//! workers' rows. Claims (`queue`) take them in the same order.

use crate::auth::Caller;
use crate::error::{Error, Result};
use crate::experiments::sprt_reason;
use crate::kinds::{self, Batch, Tx, Upload};
use crate::ledger;
use crate::logstore::Log;
use crate::queue::{lease_error, settle_experiment};
use crate::replicas;
use crate::state::AppState;
use crate::trust;
use axum::Json;
use axum::extract::{Path, State};
use axum::http::header;
use axum::response::IntoResponse;
use base64::Engine as _;
use shared::experiment::ExperimentSpec;
use shared::protocol::{JobResult, ResultUpload, UploadResponse};
use shared::stats::{Evidence, MatchTally};
use sqlx::types::Json as Db;
use std::io::Read;
use uuid::Uuid;

/// Largest uncompressed log the coordinator will inflate (guards against gzip bombs).
const MAX_LOG_BYTES: u64 = 256 << 20;
/// Most a log may inflate, as a multiple of its compressed size (game logs compress about
/// 5-10x), plus a megabyte for small logs.
const MAX_INFLATION: u64 = 100;

/// Most bytes a log of `compressed` bytes may inflate to.
fn inflation_cap(compressed: u64) -> u64 {
    MAX_LOG_BYTES.min(MAX_INFLATION * compressed + (1 << 20))
}

/// Most bytes all the uploads being inflated at once may inflate to, in MiB: uploads past it
/// wait their turn (`decode`), so that many large uploads at once cannot exhaust memory.
pub const INFLATION_BUDGET_MIB: u32 = 1024;

/// The share of [`INFLATION_BUDGET_MIB`] an upload's logs may take: their caps, in MiB.
fn inflation_mib(u: &ResultUpload) -> u32 {
    // Base64 is four characters for every three bytes.
    let cap = |b64: &str| inflation_cap(b64.len() as u64 / 4 * 3 + 3);
    ((cap(&u.logs.gcg_gz) + cap(&u.logs.csv_gz)).div_ceil(1 << 20) as u32).min(INFLATION_BUDGET_MIB)
}

/// Decode one base64-of-gzip log and check its sha256; returns the compressed bytes and the
/// text. Inflation stops at `MAX_LOG_BYTES` or `MAX_INFLATION` times the compressed size.
fn check_log(field: &str, b64: &str, sha: &str) -> Result<(Vec<u8>, String)> {
    let gz = base64::engine::general_purpose::STANDARD
        .decode(b64)
        .map_err(|e| Error::unprocessable(format!("logs.{field}: not base64: {e}")))?;
    let cap = inflation_cap(gz.len() as u64);
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

/// An upload's logs, inflated and checked against their sha256 (stage 1).
struct Decoded {
    gcg_gz: Vec<u8>,
    csv_gz: Vec<u8>,
    texts: crate::verify::Texts,
}

/// Inflate the logs, boundedly, off the async threads and before any transaction, within the
/// coordinator's inflation budget.
async fn decode(st: &AppState, u: std::sync::Arc<ResultUpload>) -> Result<Decoded> {
    let _budget = st
        .inflating
        .acquire_many(inflation_mib(&u))
        .await
        .map_err(|e| Error::internal(format!("the inflation budget is closed: {e}")))?;
    tokio::task::spawn_blocking(move || -> Result<Decoded> {
        let (gcg_gz, gcg) = check_log("gcg_gz", &u.logs.gcg_gz, &u.logs.gcg_sha256)?;
        let (csv_gz, csv) = check_log("csv_gz", &u.logs.csv_gz, &u.logs.csv_sha256)?;
        Ok(Decoded { gcg_gz, csv_gz, texts: crate::verify::Texts { gcg, csv } })
    })
    .await
    .map_err(|e| Error::internal(e.to_string()))?
}

/// Whose lease an upload quotes.
enum Lease {
    /// The worker's, held now.
    Held,
    /// The worker's, whose result is recorded already: a repeat changes nothing.
    Recorded,
}

/// Stage 2: the upload quotes the batch's current lease and the worker holds it, or its
/// result under that lease is recorded already. Run before the checks and again under the
/// batch's lock.
async fn authenticate(db: &mut sqlx::PgConnection, b: &Batch, worker: Uuid, lease: Uuid) -> Result<Lease> {
    let done: Option<(Uuid,)> =
        sqlx::query_as("SELECT worker_id FROM batch_results WHERE batch_id = $1 AND lease_id = $2")
            .bind(b.id)
            .bind(lease)
            .fetch_optional(&mut *db)
            .await?;
    match done {
        Some((by,)) if by != worker => Err(Error::forbidden("this lease belongs to another worker")),
        Some(_) => Ok(Lease::Recorded),
        None if b.state != "leased" || b.lease_id != Some(lease) => Err(lease_error(db, b.id, lease, worker).await),
        None if b.lease_owner != Some(worker) => Err(Error::forbidden("this lease belongs to another worker")),
        None => Ok(Lease::Held),
    }
}

/// The answer to a repeat of a recorded upload.
fn repeat() -> Json<UploadResponse> {
    Json(UploadResponse { accepted: false, message: "already recorded; nothing changed".into() })
}

/// Stage 3: the kind's long checks (re-playing games), with the lease kept meanwhile. A
/// refusal is counted against the worker.
async fn verify(st: &AppState, b: &Batch, worker: Uuid, u: &ResultUpload, logs: crate::verify::Texts) -> Result<()> {
    if st.cfg.verify_fraction == 0.0 {
        return Ok(());
    }
    // An upload under the lease is as good as a heartbeat: keep the lease while the games
    // are re-played, which can take longer than the worker's heartbeat interval.
    sqlx::query(
        "UPDATE batches SET lease_expires = greatest(lease_expires, now() + make_interval(secs => $3))
         WHERE id = $1 AND lease_id = $2 AND state = 'leased'",
    )
    .bind(b.id)
    .bind(u.lease_id)
    .bind(st.cfg.lease_secs as f64)
    .execute(&st.db)
    .await?;
    if let Err(why) = kinds::verify(st, b, &u.result, logs).await? {
        return Err(refused(&st.db, b, worker, Error::unprocessable(format!("{why}; nothing was recorded"))).await);
    }
    Ok(())
}

/// Count a refused upload against its worker (the workers page shows the count) and say why.
async fn refused(db: &sqlx::PgPool, b: &Batch, worker: Uuid, why: Error) -> Error {
    tracing::warn!(batch = %b.id, %worker, why = %why.message, "upload refused");
    match sqlx::query("UPDATE workers SET rejected = rejected + 1 WHERE id = $1").bind(worker).execute(db).await {
        Ok(_) => why,
        Err(e) => e.into(),
    }
}

/// `POST /api/v1/batches/{id}/result`.
pub async fn upload(
    State(st): State<AppState>,
    caller: Caller,
    Path(batch): Path<Uuid>,
    Json(u): Json<ResultUpload>,
) -> Result<Json<UploadResponse>> {
    let worker = caller.worker()?;
    // When the result arrived: the worker's speed is timed to here, not to when the checks end.
    let arrived = chrono::Utc::now();
    let u = std::sync::Arc::new(u);
    // The batch, the lease and the result's shape first: nothing is inflated for a stranger.
    let b: Batch = {
        let mut db = st.db.acquire().await?;
        let b: Batch = sqlx::query_as(kinds::BATCH)
            .bind(batch)
            .fetch_optional(&mut *db)
            .await?
            .ok_or_else(|| Error::not_found(format!("no batch {batch}")))?;
        if let Lease::Recorded = authenticate(&mut db, &b, worker, u.lease_id).await? {
            return Ok(repeat());
        }
        match kinds::check(&mut db, &b, &u.result).await {
            Err(e) if e.status == axum::http::StatusCode::UNPROCESSABLE_ENTITY => {
                return Err(refused(&st.db, &b, worker, e).await);
            }
            checked => checked?,
        }
        b
    };
    let logs = match decode(&st, u.clone()).await {
        Err(e) if e.status == axum::http::StatusCode::UNPROCESSABLE_ENTITY => {
            return Err(refused(&st.db, &b, worker, e).await);
        }
        decoded => decoded?,
    };
    verify(&st, &b, worker, &u, logs.texts).await?;
    // The logs are stored before the row that names them (logstore's invariant); a repeat
    // upload finds them there.
    let sizes = (logs.gcg_gz.len() as i64, logs.csv_gz.len() as i64);
    st.logs.put(Log::Gcg, &u.logs.gcg_sha256, logs.gcg_gz).await?;
    st.logs.put(Log::Csv, &u.logs.csv_sha256, logs.csv_gz).await?;
    record(&st, b, worker, &u, sizes, arrived).await
}

/// Stages 4 and 5, in one transaction: lock the batch, authenticate the lease again under the
/// lock, record the result, settle it (`kinds::settle`), and count it for the worker. Only the
/// batch's fields that change while it is leased are read again (its experiment's spec, which
/// can be large, was read before the checks and does not change).
async fn record(
    st: &AppState,
    mut b: Batch,
    worker: Uuid,
    u: &ResultUpload,
    (gcg_bytes, csv_bytes): (i64, i64),
    arrived: chrono::DateTime<chrono::Utc>,
) -> Result<Json<UploadResponse>> {
    let batch = b.id;
    let mut tx = st.db.begin().await?;
    #[derive(sqlx::FromRow)]
    struct Leased {
        state: String,
        lease_id: Option<Uuid>,
        lease_owner: Option<Uuid>,
        exclude_groups: Vec<Uuid>,
        leased_at: Option<chrono::DateTime<chrono::Utc>>,
    }
    let now: Leased = sqlx::query_as(
        "SELECT state, lease_id, lease_owner, exclude_groups, leased_at FROM batches WHERE id = $1 FOR NO KEY UPDATE",
    )
    .bind(batch)
    .fetch_optional(&mut *tx)
    .await?
    .ok_or_else(|| Error::not_found(format!("no batch {batch}")))?;
    (b.state, b.lease_id, b.lease_owner, b.exclude_groups) =
        (now.state, now.lease_id, now.lease_owner, now.exclude_groups);
    let leased_at = now.leased_at;
    if let Lease::Recorded = authenticate(&mut tx, &b, worker, u.lease_id).await? {
        return Ok(repeat());
    }
    let standing = trust::standing(&mut tx, worker).await?;
    let kind = u.result.kind();
    let digest = replicas::digest(&kinds::replicable(&u.result), &u.logs.gcg_sha256, &u.logs.csv_sha256);
    let games = u.result.games();
    // A replicated kind's result waits for its replica; the others settle their own units.
    let state = if kinds::facts(kind).replicated { "pending" } else { "valid" };
    sqlx::query(
        "INSERT INTO batch_results (batch_id, lease_id, worker_id, owner_id, cell_id, experiment_id, result, games, elapsed_ms,
                                    gcg_bytes, gcg_sha256, csv_bytes, csv_sha256, state, digest)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)",
    )
    .bind(batch)
    .bind(u.lease_id)
    .bind(worker)
    .bind(standing.owner)
    .bind(b.cell_id)
    .bind(b.experiment_id)
    .bind(Db(&u.result))
    .bind(games as i64)
    .bind(u.elapsed_ms.min(i64::MAX as u64) as i64)
    .bind(gcg_bytes)
    .bind(&u.logs.gcg_sha256)
    .bind(csv_bytes)
    .bind(&u.logs.csv_sha256)
    .bind(state)
    .bind(&digest)
    .execute(&mut *tx)
    .await?;
    let up = Upload { batch: &b, worker, standing, st };
    let settled = kinds::settle(&mut tx, &up, &u.result).await?;
    // Games per second, for the workers page: of games only (other units are another
    // measure; workers size their batches by their own rate per kind).
    let gps = kind.plays_games().then(|| games as f64 / (u.elapsed_ms.max(1) as f64 / 1000.0));
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
    if let Some(since) = leased_at {
        crate::queue::timed(&mut tx, worker, kind, b.units, arrived - since).await?;
    }
    tx.commit().await?;
    match settled {
        Settled::Told(message) => Ok(Json(UploadResponse { accepted: true, message })),
        Settled::Outlier => Err(Error::forbidden(
            "this worker's results are a statistical outlier in their cell; it is quarantined and its results withdrawn",
        )),
    }
}

/// How a recorded result settled.
pub enum Settled {
    /// Recorded; what the worker is told.
    Told(String),
    /// Recorded, and the worker's results are a statistical outlier in their cell: it is
    /// quarantined (committed), and the upload is answered with 403.
    Outlier,
}

/// Mark a batch done: its cell has its units.
pub async fn mark_done(tx: &mut Tx<'_>, batch: Uuid) -> Result<()> {
    sqlx::query(
        "UPDATE batches SET state = 'done', lease_id = NULL, lease_owner = NULL, lease_expires = NULL, deadline = NULL, updated_at = now()
         WHERE id = $1",
    )
    .bind(batch)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// Settle a result of a replicated kind: judged whole against trusted replicas
/// (`settle_batch`). Bots with time budgets play differently on every machine: their batches
/// go to trusted workers only, are validated by re-playing their games (`verify`), and each
/// worker's results are compared with the rest of the cell's (`outliers`).
pub async fn settle_replicated(tx: &mut Tx<'_>, up: &Upload<'_>) -> Result<Settled> {
    let deterministic =
        up.batch.bots.as_ref().is_none_or(|Db(bots)| {
            bots.iter().all(|b| engine::bots::BotSpec::parse(b).is_ok_and(|s| s.deterministic()))
        });
    let alone = match up.standing.trust {
        Some(t) => !deterministic || !replicas::spot_checked(t, up.st.cfg.spot_check),
        None => false,
    };
    sqlx::query("UPDATE batch_results SET alone = $3 WHERE batch_id = $1 AND lease_id = $2")
        .bind(up.batch.id)
        .bind(up.batch.lease_id)
        .bind(alone)
        .execute(&mut **tx)
        .await?;
    let message = settle_batch(tx, up.batch.id, up.standing.group, up.st.cfg.trust).await?;
    if !deterministic && crate::outliers::check(tx, up.batch.cell_id).await? == Some(up.worker) {
        return Ok(Settled::Outlier);
    }
    Ok(Settled::Told(message))
}

/// Weigh a match or win-table batch's results after a new one (`replicas::judge`): credit the
/// agreed result to its cell once, confirm the untrusted results that match it (trust is
/// earned by them), mark the others wrong and quarantine their workers; or put the batch back
/// in the queue for a trusted worker of another group. Returns the worker's message.
pub async fn settle_batch(tx: &mut Tx<'_>, batch: Uuid, group: Uuid, policy: trust::Policy) -> Result<String> {
    #[derive(sqlx::FromRow)]
    struct Live {
        lease_id: Uuid,
        worker_id: Uuid,
        owner_id: Uuid,
        grp: Uuid,
        trusted: bool,
        alone: bool,
        digest: String,
        state: String,
        result: Db<JobResult>,
    }
    let rows: Vec<Live> = sqlx::query_as(
        "SELECT r.lease_id, r.worker_id, r.owner_id, o.grp, o.trusted IS NOT NULL AS trusted, r.alone, r.digest, r.state, r.result
         FROM batch_results r JOIN owners o ON o.id = r.owner_id
         WHERE r.batch_id = $1 AND r.state IN ('pending', 'valid') ORDER BY r.received_at, r.lease_id",
    )
    .bind(batch)
    .fetch_all(&mut **tx)
    .await?;
    let claims: Vec<replicas::Claim> = rows
        .iter()
        .map(|r| replicas::Claim { group: r.grp, trusted: r.trusted, alone: r.alone, digest: &r.digest })
        .collect();
    let (cell, units, state): (Uuid, i64, String) =
        sqlx::query_as("SELECT cell_id, units, state FROM batches WHERE id = $1")
            .bind(batch)
            .fetch_one(&mut **tx)
            .await?;
    match replicas::judge(&claims) {
        replicas::Judgement::Valid(agreed) => {
            let replicated = rows.iter().filter(|r| r.digest == agreed).count() > 1;
            // Workers' and owners' rows are written after the cell's (the lock order: batch,
            // cell, workers, owners).
            let (mut wrong, mut confirmed) = (Vec::new(), Vec::new());
            for r in &rows {
                let now = if r.digest == agreed { "valid" } else { "wrong" };
                let confirms = now == "valid" && replicated && r.state == "pending";
                if now != r.state {
                    sqlx::query(
                        "UPDATE batch_results SET state = $3, confirmed = $4 WHERE batch_id = $1 AND lease_id = $2",
                    )
                    .bind(batch)
                    .bind(r.lease_id)
                    .bind(now)
                    .bind(confirms && !r.trusted)
                    .execute(&mut **tx)
                    .await?;
                }
                if now == "wrong" {
                    wrong.push((r.worker_id, r.owner_id));
                } else if confirms {
                    confirmed.push((r.worker_id, r.owner_id));
                }
            }
            let mut message = "recorded".to_string();
            if state != "done" {
                mark_done(tx, batch).await?;
                let result = &rows.iter().find(|r| r.digest == agreed).expect("the agreed result").result.0;
                if let Some(made) = record_in_cell(tx, cell, units, result.tally()).await? {
                    message = format!("recorded; {made}");
                }
                if replicated {
                    message = format!("{message}; validated by a trusted replica");
                }
            }
            confirmed.sort();
            let workers: Vec<Uuid> = confirmed.iter().map(|c| c.0).collect();
            sqlx::query("UPDATE workers SET validated = validated + 1 WHERE id = ANY ($1)")
                .bind(&workers)
                .execute(&mut **tx)
                .await?;
            for (w, owner) in wrong {
                let reason = format!("its result for batch {batch} differed from what trusted workers found");
                crate::quarantine::quarantine(tx, w, &reason).await?;
                tracing::warn!(%batch, worker = %w, "result contradicted by trusted workers; worker quarantined");
                // Its owner's other workers' results are no more believable than this one's
                // (an operator-trusted owner's are: the operator decides about its machines).
                for other in trust::distrust(tx, owner, &reason).await? {
                    let why = format!("another worker of its owner was found wrong ({reason})");
                    crate::quarantine::quarantine(tx, other, &why).await?;
                }
            }
            let mut owners: Vec<Uuid> = confirmed.iter().map(|c| c.1).collect();
            owners.sort();
            owners.dedup();
            let earned = trust::earn(tx, &owners, policy).await?;
            if !earned.is_empty() {
                message = format!("{message}; owner {} is now trusted", earned.join(", "));
            }
            Ok(message)
        }
        replicas::Judgement::Wanted => {
            let digests: std::collections::BTreeSet<&str> = rows.iter().map(|r| r.digest.as_str()).collect();
            if digests.len() > 1 {
                let workers: Vec<Uuid> = rows.iter().map(|r| r.worker_id).collect();
                sqlx::query("UPDATE workers SET mismatches = mismatches + 1 WHERE id = ANY ($1)")
                    .bind(&workers)
                    .execute(&mut **tx)
                    .await?;
                tracing::warn!(%batch, "results disagree; asking a trusted worker");
            }
            sqlx::query(
                "UPDATE batches SET state = 'queued', trusted_only = true, lease_id = NULL, lease_owner = NULL,
                        lease_expires = NULL, deadline = NULL,
                        exclude_groups = CASE WHEN $2 = ANY (exclude_groups) THEN exclude_groups ELSE exclude_groups || $2 END,
                        updated_at = now()
                 WHERE id = $1",
            )
            .bind(batch)
            .bind(group)
            .execute(&mut **tx)
            .await?;
            Ok("recorded; it counts once a trusted worker of another owner has replicated it".into())
        }
        replicas::Judgement::Unsettled => {
            sqlx::query(
                "UPDATE batches SET state = 'parked', last_error = $2, lease_id = NULL, lease_owner = NULL, lease_expires = NULL,
                        deadline = NULL, updated_at = now() WHERE id = $1",
            )
            .bind(batch)
            .bind(format!("{} results and no trusted majority", rows.len()))
            .execute(&mut **tx)
            .await?;
            crate::queue::park_cell(tx, cell).await?;
            Ok("recorded; trusted workers' results disagree, so the batch is parked for the operator".into())
        }
    }
}

/// A cell as a result is recorded in it.
#[derive(sqlx::FromRow)]
struct CellState {
    experiment_id: Uuid,
    idx: i32,
    tally: Db<MatchTally>,
    status: String,
    done_units: i64,
    target_units: i64,
    spec: Db<ExperimentSpec>,
}

/// Add a batch's units and tally (kinds that play bots) to its cell, and finish or stop the
/// cell when it is done. When the cell finished now (its target or its test's verdict), what
/// its kind made of it (`kinds::cell_finished`), if anything.
pub async fn record_in_cell(tx: &mut Tx<'_>, cell: Uuid, units: i64, t: Option<&MatchTally>) -> Result<Option<String>> {
    let c: CellState = sqlx::query_as(
        "SELECT c.experiment_id, c.idx, c.tally, c.status, c.done_units, c.target_units, e.spec FROM cells c JOIN experiments e ON e.id = c.experiment_id WHERE c.id = $1 FOR NO KEY UPDATE OF c",
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
        // Only validated results reach a cell, and only trusted workers validate (`replicas`):
        // no number of untrusted owners decides a test.
        let test = spec.kind.sprt(c.idx as u32);
        let sprt = test.and_then(|s| sprt_reason(s, s.decide(&sum)));
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
                if test.is_some() && sum.evidence() == Evidence::Identical {
                    reason += "; the bots played alike on every deal, so the SPRT could not decide";
                }
                Some(("finished", reason))
            }
            (false, Some(reason)) => Some(("stopped", reason)),
            // Finished, not stopped: what the cell was for is known (a tuning step may use it).
            (false, None) if sum.alike_long_enough() => Some((
                "finished",
                format!(
                    "the bots played alike on all of its {} deals: they differ on at most {:.1}% of deals (95%), so it finished early",
                    sum.pairs(),
                    300.0 / sum.pairs() as f64
                ),
            )),
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
    // A test's verdict also ends what the cell was for (a leaves run's gate acts on it).
    if next_status.is_some() {
        return kinds::cell_finished(tx, &spec.kind, experiment, cell).await;
    }
    Ok(None)
}

/// `GET /api/v1/batches/{id}/logs/{gcg|csv}`: a batch's logs, gzip-compressed, for
/// researchers once the batch's result is validated, and for admins while it awaits its
/// replica too; never a withdrawn or outvoted one. Nobody else: a worker that could read a
/// pending result's logs could upload them as its own replica.
pub async fn logs(
    State(st): State<AppState>,
    caller: Caller,
    Path((batch, which)): Path<(Uuid, String)>,
) -> Result<impl IntoResponse> {
    caller.researcher()?;
    let states = match caller.role {
        crate::auth::Role::Admin => vec!["valid", "pending"],
        _ => vec!["valid"],
    };
    let (log, sql) = match which.as_str() {
        "gcg" => (
            Log::Gcg,
            "SELECT gcg_sha256, gcg_gz FROM batch_results WHERE batch_id = $1 AND state = ANY ($2) ORDER BY state DESC, received_at LIMIT 1",
        ),
        "csv" => (
            Log::Csv,
            "SELECT csv_sha256, csv_gz FROM batch_results WHERE batch_id = $1 AND state = ANY ($2) ORDER BY state DESC, received_at LIMIT 1",
        ),
        _ => return Err(Error::not_found("logs are `gcg` or `csv`")),
    };
    let row: Option<(String, Option<Vec<u8>>)> =
        sqlx::query_as(sql).bind(batch).bind(&states).fetch_optional(&st.db).await?;
    let (sha, inline) =
        row.ok_or_else(|| Error::not_found(format!("no {} result for batch {batch}", states.join(" or "))))?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn gz(bytes: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        e.write_all(bytes).unwrap();
        e.finish().unwrap()
    }

    fn b64(bytes: &[u8]) -> String {
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }

    #[test]
    fn decoding_a_log_checks_its_encoding_its_digest_and_how_far_it_inflates() {
        let text = "#lexhive-game 0\n>p1: ABC 8H CAB +14 14\n";
        let sha = crate::artifacts::sha256_hex(text.as_bytes());
        let (kept, read) = check_log("gcg_gz", &b64(&gz(text.as_bytes())), &sha).unwrap();
        assert_eq!((read.as_str(), kept), (text, gz(text.as_bytes())));
        let refused = |b64: &str, sha: &str| check_log("gcg_gz", b64, sha).unwrap_err().message;
        assert!(refused("not base64!", &sha).contains("logs.gcg_gz: not base64"));
        assert!(refused(&b64(b"plain text"), &sha).contains("not gzip"));
        assert!(refused(&b64(&gz(b"other text")), &sha).contains("sha256 does not match"));
        // A bomb: 64 MB of zeros compress to ~64 KB, past 100 times that plus a megabyte.
        let zeros = vec![0u8; 64 << 20];
        let bomb = refused(&b64(&gz(&zeros)), &crate::artifacts::sha256_hex(&zeros));
        assert!(bomb.contains("inflates past"), "{bomb}");
        assert!(refused(&b64(&gz(&[0xff, 0xfe])), &crate::artifacts::sha256_hex(&[0xff, 0xfe])).contains("not UTF-8"));
    }
}
