//! The job queue: registration, claims, heartbeats, releases, failures, and the reaper.
//!
//! Invariants (Postgres holds all of them; coordinators are stateless):
//! - A batch is `queued`, `leased` (with lease id, owner and expiry), `done`, `parked` or
//!   `cancelled`. Only the holder of the current lease id may heartbeat, release, fail or
//!   upload it.
//! - A cell's units of work (`JobKind::unit`) `0..next_unit` are covered by its batches
//!   exactly once; new batches are carved from `next_unit` at claim time, sized for the
//!   claiming worker's rate for the cell's kind.
//! - A batch goes only to workers whose owner's group (`trust`) is not in its `exclude_groups`
//!   (groups that failed it, let it expire, or uploaded it already: a replica must come from
//!   someone else), and a `trusted_only` batch (a replica wanted, an endgame re-solve) and the
//!   cells whose bots play differently on every machine only to trusted owners' workers.
//! - A batch that `max_failures` different trusted groups failed or let expire is parked, and
//!   its cell fails. Failures from one group, or from untrusted owners, never park a batch.
//! - A trusted owner's worker holds at most `max_leases` batches; an untrusted owner at most
//!   `untrusted_leases` across all its workers. A lease ends at the batch's deadline whatever
//!   the heartbeats say. A quarantined worker gets no work.
//! - A cell never waits on untrusted workers: a trusted worker with nothing else to do takes
//!   over a batch an untrusted one holds (whose upload then finds its lease gone).
//!
//! # Design notes
//!
//! register, claim, heartbeat, release, fail, reap, and settling an experiment. A claim is served
//! only from experiments of the kinds the worker named (`workers.kinds`), and a new batch is sized
//! from the coordinator's own timing of the worker's leases of that kind (`workers.measured`:
//! what a worker says of its speed sizes nothing), or is a small measuring batch
//! (`JobKind::first_batch_units`) for a kind it has not run yet. Only experiments whose `needs` are
//! among the worker's `capabilities` (said with every claim) are served to it.

use crate::auth::{self, Caller, Role};
use crate::error::{Error, Result};
use crate::kinds;
use crate::owners::{self, Peer, Registration};
use crate::state::AppState;
use crate::trust;
use axum::Json;
use axum::extract::{Path, State};
use shared::PROTOCOL_VERSION;
use shared::experiment::ExperimentSpec;
use shared::kinds::JobKind;
use shared::protocol::*;
use shared::stats::MatchTally;
use sqlx::types::Json as Db;
use sqlx::{Postgres, Transaction};
use uuid::Uuid;

/// Most units in one batch, whatever the worker's speed: 10,000 pairs are 20,000 games, about
/// 18 MB of compressed logs (~0.9 KB a game), well under the default 64 MiB upload cap.
const MAX_UNITS: i64 = 10_000;
/// How long an idle worker is told to wait before asking again.
const IDLE_RETRY_MS: u64 = 2000;
/// Seconds one unit of cell `c`'s work takes one thread, from the time its counted games'
/// bots spent choosing moves (match cells with games counted; NULL otherwise).
macro_rules! unit_secs {
    () => {
        "2e-6 * ((c.tally->'micros'->>0)::float8 + (c.tally->'micros'->>1)::float8) / nullif((c.tally->>'games')::float8, 0)"
    };
}

/// Longest a probe's deadline grows (`reap` doubles it at each miss): a day, whatever a
/// worker that claims probes and lets them expire does to the cell.
const MAX_PROBE_DEADLINE_SECS: f64 = 86_400.0;

/// A batch's deadline is at least this many times what its cell's pace says it takes (when
/// longer than `--deadline-secs`), so that a slow but honest worker is never cut off.
const DEADLINE_SLACK: f64 = 4.0;

fn check_protocol(v: u32) -> Result<()> {
    if v != PROTOCOL_VERSION {
        let advice = if v < PROTOCOL_VERSION {
            "this worker is out of date: upgrade it (build or download the current `worker`) and start it again"
        } else {
            "this coordinator is older than the worker: use a worker of the coordinator's version"
        };
        return Err(Error::new(
            axum::http::StatusCode::UPGRADE_REQUIRED,
            format!("protocol {v} is not spoken here; this coordinator speaks {PROTOCOL_VERSION}: {advice}"),
        ));
    }
    Ok(())
}

/// The names of the known kinds among a worker's, or a 422 when it names none this coordinator
/// runs.
fn check_kinds(names: &[String]) -> Result<Vec<String>> {
    let kinds = known_kinds(names);
    if kinds.is_empty() {
        return Err(Error::unprocessable(format!(
            "kinds: name at least one job kind this coordinator runs ({}); got {names:?}",
            JobKind::names(JobKind::ALL).join(", ")
        )));
    }
    Ok(JobKind::names(&kinds))
}

/// A worker's GPU as stored: its name (checked like worker names) and memory.
struct StoredGpu {
    name: Option<String>,
    memory_mb: Option<i64>,
}

impl StoredGpu {
    fn of(c: &Capabilities) -> Result<StoredGpu> {
        Ok(match &c.gpu {
            Some(g) => StoredGpu {
                name: Some(owners::check_name("capabilities.gpu.name", &g.name)?),
                memory_mb: Some(g.memory_mb.min(1 << 40) as i64),
            },
            None => StoredGpu { name: None, memory_mb: None },
        })
    }
}

/// `POST /api/v1/workers/register`: returns a worker token. With an owner token the worker
/// joins that owner; without one (open registration only) it gets an owner of its own.
pub async fn register(
    State(st): State<AppState>,
    peer: Peer,
    Json(r): Json<RegisterRequest>,
) -> Result<Json<RegisterResponse>> {
    check_protocol(r.protocol)?;
    let name = owners::check_name("name", &r.name)?;
    let name = name.as_str();
    let threads = r.threads.clamp(1, 4096) as i32;
    let kinds = check_kinds(&r.kinds)?;
    if r.owner_token.is_none() {
        owners::check_work(&st, "worker", &r.name, r.work)?;
    }
    let id = Uuid::new_v4();
    let network = peer.0.map(trust::network);
    let mut tx = st.db.begin().await?;
    owners::admit(&mut tx, network.as_deref(), st.cfg.registrations_per_hour).await?;
    let owner = match (&r.owner_token, st.cfg.registration) {
        (Some(t), _) => owners::by_token(&mut *tx, t).await?,
        (None, Registration::Open) => {
            let anonymous = format!("anonymous-{}", &id.simple().to_string()[..12]);
            owners::create(&mut tx, &anonymous, peer.0, st.cfg.trust).await?
        }
        (None, Registration::Invite) => {
            return Err(Error::unauthorized(
                "owner_token: registration here is by invitation; register an owner with its invitation code, then its workers with the owner's token",
            ));
        }
    };
    let gpu = StoredGpu::of(&r.capabilities)?;
    let inserted = sqlx::query(
        "INSERT INTO workers (id, name, threads, kinds, owner_id, created_from, capabilities, gpu_name, gpu_memory_mb, network)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
         ON CONFLICT (owner_id, lower(name)) DO NOTHING",
    )
    .bind(id)
    .bind(name)
    .bind(threads)
    .bind(&kinds)
    .bind(owner)
    .bind(peer.0.map(|a| a.to_string()))
    .bind(r.capabilities.names())
    .bind(gpu.name)
    .bind(gpu.memory_mb)
    .bind(&network)
    .execute(&mut *tx)
    .await?;
    if inserted.rows_affected() == 0 {
        return Err(Error::conflict(format!(
            "name: this owner already has a worker named `{name}`; give this one another name (--name)"
        )));
    }
    let token = auth::new_token();
    sqlx::query("INSERT INTO tokens (hash, role, worker_id) VALUES ($1, $2, $3)")
        .bind(auth::hash(&token))
        .bind(Role::Worker.as_str())
        .bind(id)
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    tracing::info!(worker = %id, %owner, name, threads, "worker registered");
    Ok(Json(RegisterResponse { worker_id: id, token }))
}

/// `POST /api/v1/claim`: lease the next batch for this worker, or say there is none.
pub async fn claim(
    State(st): State<AppState>,
    caller: Caller,
    Json(r): Json<ClaimRequest>,
) -> Result<Json<ClaimResponse>> {
    check_protocol(r.protocol)?;
    let worker = caller.worker()?;
    let threads = r.threads.clamp(1, 4096) as i32;
    let kinds = check_kinds(&r.kinds)?;
    // Only known kinds' finite rates are kept (and shown on the workers page).
    let rates: std::collections::BTreeMap<String, f64> = r
        .rates
        .iter()
        .filter(|(k, v)| JobKind::parse(k).is_some() && v.is_finite() && **v > 0.0)
        .map(|(k, v)| (k.clone(), *v))
        .collect();
    let lease_secs = st.cfg.lease_secs as f64;
    let deadline_secs = st.cfg.deadline_secs.max(st.cfg.lease_secs) as f64;
    let mut tx = st.db.begin().await?;
    #[derive(sqlx::FromRow)]
    struct Me {
        quarantine_reason: Option<String>,
        quarantined: bool,
        leased: i64,
        measured: Db<Rates>,
    }
    let caps = r.capabilities.names();
    let gpu = StoredGpu::of(&r.capabilities)?;
    // One claim of a worker at a time, so that two at once cannot both pass `max_leases` (and
    // of an untrusted owner, whose cap holds across its workers); the worker's row is read here
    // and written last, after the batch and cell rows (the lock order uploads keep too:
    // `results`).
    sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended($1::text, 1))").bind(worker).execute(&mut *tx).await?;
    let standing = trust::standing(&mut tx, worker).await?;
    let trusted = standing.trusted();
    if !trusted {
        sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended($1::text, 2))")
            .bind(standing.owner)
            .execute(&mut *tx)
            .await?;
    }
    // Leases held: the worker's own when its owner is trusted, all its owner's otherwise.
    let me: Me = sqlx::query_as(
        "SELECT quarantine_reason, quarantined_at IS NOT NULL AS quarantined, measured,
                CASE WHEN $3 THEN (SELECT count(*) FROM batches WHERE lease_owner = $1 AND state = 'leased')
                     ELSE (SELECT count(*) FROM batches b JOIN workers w ON w.id = b.lease_owner
                           WHERE b.state = 'leased' AND w.owner_id = $2) END AS leased
         FROM workers WHERE id = $1",
    )
    .bind(worker)
    .bind(standing.owner)
    .bind(trusted)
    .fetch_one(&mut *tx)
    .await?;
    let seen = Seen { worker, threads, kinds: &kinds, rates: &rates, caps: &caps, gpu };
    if me.quarantined {
        return Err(Error::forbidden(format!(
            "this worker is quarantined ({}); its results were withdrawn. Ask the coordinator's operator",
            me.quarantine_reason.unwrap_or_default()
        )));
    }
    if standing.distrusted {
        return Err(Error::forbidden(
            "this worker's owner was found wrong by a trusted worker; its workers get no more work. Ask the coordinator's operator",
        ));
    }
    let cap = if trusted { st.cfg.max_leases } else { st.cfg.trust.untrusted_leases };
    if me.leased >= cap as i64 {
        seen.record(&mut tx).await?;
        tx.commit().await?;
        // An untrusted owner at its cap: its other lease will end, and work may be left then.
        return Ok(Json(ClaimResponse::Idle {
            retry_after_ms: IDLE_RETRY_MS,
            unfinished: !trusted,
            waiting_for_others: 0,
        }));
    }
    let lease = Uuid::new_v4();
    // Batches put back in the queue (expired, released, awaiting a replica) go first: they are
    // oldest work. Never to a group that failed one or already uploaded it; replicas, re-solves
    // and cells of bots that play differently on every machine to trusted owners only, and a
    // replica drawn at random among those wanted, so that no worker can time its claims to be
    // handed a batch it chose.
    let requeued: Option<(Uuid,)> = sqlx::query_as(
        concat!("UPDATE batches SET state = 'leased', lease_id = $1, lease_owner = $2, lease_expires = now() + make_interval(secs => $3),
                deadline = now() + make_interval(secs => greatest($6,
                    (SELECT coalesce($7 * units * ", unit_secs!(), " / $8, c.probe_deadline_secs, 0) FROM cells c WHERE c.id = batches.cell_id))),
                leases = leases + 1, leased_at = now(), updated_at = now()
         WHERE id = (SELECT b.id FROM batches b JOIN cells c ON c.id = b.cell_id
                     WHERE b.state = 'queued' AND NOT ($5 = ANY (b.exclude_groups)) AND ($10 OR NOT b.trusted_only AND c.deterministic)
                       AND b.experiment_id IN (SELECT id FROM experiments WHERE kind = ANY ($4) AND needs <@ $9)
                     ORDER BY b.priority DESC, b.trusted_only DESC, CASE WHEN b.trusted_only THEN random() END, b.created_at
                     FOR NO KEY UPDATE OF b SKIP LOCKED LIMIT 1)
         RETURNING id"),
    )
    .bind(lease)
    .bind(worker)
    .bind(lease_secs)
    .bind(&kinds)
    .bind(standing.group)
    .bind(deadline_secs)
    .bind(DEADLINE_SLACK)
    .bind(threads.max(1) as f64)
    .bind(&caps)
    .bind(trusted)
    .fetch_optional(&mut *tx)
    .await?;
    let claimer = Claimer { id: worker, threads, kinds: &kinds, caps: &caps, trusted, measured: &me.measured.0 };
    let mut batch = match requeued {
        Some((id,)) => Some(id),
        None => carve(&mut tx, &claimer, lease, [lease_secs, deadline_secs], st.cfg.batch_secs).await?,
    };
    if batch.is_none() && trusted {
        batch = take_over(&mut tx, &claimer, standing.group, lease, lease_secs).await?;
    }
    let Some(batch) = batch else {
        let unfinished = leased_to_others(&mut tx, worker, standing.group, &kinds, &caps).await?;
        let waiting_for_others = waiting_for_others(&mut tx, standing.group, trusted, &kinds, &caps).await?;
        seen.record(&mut tx).await?;
        tx.commit().await?;
        return Ok(Json(ClaimResponse::Idle { retry_after_ms: IDLE_RETRY_MS, unfinished, waiting_for_others }));
    };
    let spec = batch_spec(&mut tx, batch, st.cfg.lease_secs).await?;
    seen.record(&mut tx).await?;
    tx.commit().await?;
    Ok(Json(ClaimResponse::Batch(Box::new(spec))))
}

/// Whether batches this worker could be given are leased to other workers now (of its kinds
/// and capabilities, in running cells, not closed to its owner): they come back to the queue
/// if those leases run out, so a volunteer that exits when idle waits for them rather than
/// leave them to nobody.
async fn leased_to_others(
    tx: &mut Transaction<'_, Postgres>,
    worker: Uuid,
    group: Uuid,
    kinds: &[String],
    caps: &[String],
) -> Result<bool> {
    let (any,): (bool,) = sqlx::query_as(
        "SELECT EXISTS (SELECT 1 FROM batches b JOIN cells c ON c.id = b.cell_id JOIN experiments e ON e.id = b.experiment_id
                        WHERE b.state = 'leased' AND b.lease_owner <> $1 AND NOT ($2 = ANY (b.exclude_groups))
                          AND c.status = 'running' AND e.kind = ANY ($3) AND e.needs <@ $4)",
    )
    .bind(worker)
    .bind(group)
    .bind(kinds)
    .bind(caps)
    .fetch_one(&mut **tx)
    .await?;
    Ok(any)
}

/// Queued batches of the kinds a worker runs that it may not take: its group played what they
/// check, or they go to trusted workers and it is not one.
async fn waiting_for_others(
    tx: &mut Transaction<'_, Postgres>,
    group: Uuid,
    trusted: bool,
    kinds: &[String],
    caps: &[String],
) -> Result<u64> {
    let (n,): (i64,) = sqlx::query_as(
        "SELECT count(*) FROM batches b JOIN experiments e ON e.id = b.experiment_id
         WHERE b.state = 'queued' AND ($1 = ANY (b.exclude_groups) OR b.trusted_only AND NOT $2)
           AND e.kind = ANY ($3) AND e.needs <@ $4",
    )
    .bind(group)
    .bind(trusted)
    .bind(kinds)
    .bind(caps)
    .fetch_one(&mut **tx)
    .await?;
    Ok(n as u64)
}

/// What a claim says of its worker, recorded on its row.
struct Seen<'a> {
    worker: Uuid,
    threads: i32,
    kinds: &'a [String],
    rates: &'a std::collections::BTreeMap<String, f64>,
    caps: &'a [String],
    gpu: StoredGpu,
}

impl Seen<'_> {
    async fn record(self, tx: &mut Transaction<'_, Postgres>) -> Result<()> {
        sqlx::query(
            "UPDATE workers SET last_seen = now(), threads = $2, kinds = $3, rates = $4, capabilities = $5,
                    gpu_name = $6, gpu_memory_mb = $7 WHERE id = $1",
        )
        .bind(self.worker)
        .bind(self.threads)
        .bind(self.kinds)
        .bind(Db(self.rates))
        .bind(self.caps)
        .bind(self.gpu.name)
        .bind(self.gpu.memory_mb)
        .execute(&mut **tx)
        .await?;
        Ok(())
    }
}

macro_rules! runnable_cell {
    () => {
        concat!(
            "SELECT c.id, c.experiment_id, c.next_unit, c.target_units, e.priority, e.kind, c.probe_deadline_secs, ",
            unit_secs!(),
            " AS unit_secs
         FROM cells c JOIN experiments e ON e.id = c.experiment_id
         WHERE c.status = 'running' AND c.next_unit < c.target_units AND e.status IN ('queued', 'running')
           AND e.kind = ANY ($1) AND e.needs <@ $2 AND (c.deterministic OR $3)
         ORDER BY e.priority DESC, e.last_claim_at NULLS FIRST, c.last_claim_at NULLS FIRST, c.idx"
        )
    };
}

/// A cell with units left to carve.
#[derive(sqlx::FromRow)]
struct RunnableCell {
    id: Uuid,
    experiment_id: Uuid,
    next_unit: i64,
    target_units: i64,
    priority: i32,
    kind: String,
    unit_secs: Option<f64>,
    probe_deadline_secs: Option<f64>,
}

/// Units per second by kind name.
type Rates = std::collections::BTreeMap<String, f64>;

/// Most threads a first batch is sized for: what a worker says of itself is not believed
/// beyond this until the coordinator has timed it.
const FIRST_BATCH_THREADS: u64 = 8;

/// The worker a batch is carved for.
struct Claimer<'a> {
    id: Uuid,
    threads: i32,
    /// Kind names it runs.
    kinds: &'a [String],
    /// What it can run beyond the engine, by name (an experiment's `needs` must be among them).
    caps: &'a [String],
    /// Its owner is trusted.
    trusted: bool,
    /// Its units per second by kind, as the coordinator timed its leases (`timed`).
    measured: &'a Rates,
}

impl Claimer<'_> {
    /// Units of `kind` that make about `secs` seconds of work for this worker: from the
    /// coordinator's timing of its leases of that kind, or a small first batch that times it.
    fn units_for(&self, kind: JobKind, secs: u64) -> i64 {
        match self.measured.get(kind.as_str()).filter(|r| r.is_finite() && **r > 0.0) {
            Some(rate) => (rate * secs as f64).round().min(i64::MAX as f64) as i64,
            None => kind.first_batch_units((self.threads as u64).min(FIRST_BATCH_THREADS)) as i64,
        }
    }
}

/// Record how fast a worker played a batch, as the coordinator saw it: `units` in `took`, from
/// its lease to its upload's arrival, blended with what was measured before (half each), by
/// kind. The worker's own report of its speed sizes nothing.
pub async fn timed(
    tx: &mut Transaction<'_, Postgres>,
    worker: Uuid,
    kind: JobKind,
    units: i64,
    took: chrono::TimeDelta,
) -> Result<()> {
    let secs = took.num_milliseconds().max(1) as f64 / 1000.0;
    sqlx::query(
        "UPDATE workers SET measured = jsonb_set(measured, ARRAY[$2],
                to_jsonb(coalesce(0.5 * (measured->>$2)::float8 + 0.5 * $3, $3)))
         WHERE id = $1",
    )
    .bind(worker)
    .bind(kind.as_str())
    .bind(units as f64 / secs)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// A trusted worker with nothing else to do takes over a batch an untrusted group holds in a
/// running cell (the oldest lease first): the cell never waits on untrusted hoarders, and the
/// trusted result settles the batch alone. The untrusted worker's lease is gone; it is not
/// charged a failure.
async fn take_over(
    tx: &mut Transaction<'_, Postgres>,
    worker: &Claimer<'_>,
    group: Uuid,
    lease: Uuid,
    lease_secs: f64,
) -> Result<Option<Uuid>> {
    let row: Option<(Uuid,)> = sqlx::query_as(
        "UPDATE batches SET lease_id = $1, lease_owner = $2, lease_expires = now() + make_interval(secs => $3),
                leases = leases + 1, leased_at = now(), updated_at = now()
         WHERE id = (SELECT b.id FROM batches b JOIN cells c ON c.id = b.cell_id JOIN experiments e ON e.id = b.experiment_id
                       JOIN workers w ON w.id = b.lease_owner JOIN owners o ON o.id = w.owner_id
                     WHERE b.state = 'leased' AND o.trusted IS NULL AND o.grp <> $4 AND NOT ($4 = ANY (b.exclude_groups))
                       AND c.status = 'running' AND e.kind = ANY ($5) AND e.needs <@ $6
                     ORDER BY b.priority DESC, b.leased_at NULLS FIRST FOR NO KEY UPDATE OF b SKIP LOCKED LIMIT 1)
         RETURNING id",
    )
    .bind(lease)
    .bind(worker.id)
    .bind(lease_secs)
    .bind(group)
    .bind(worker.kinds)
    .bind(worker.caps)
    .fetch_optional(&mut **tx)
    .await?;
    if let Some((batch,)) = row {
        tracing::info!(%batch, worker = %worker.id, "a trusted worker took over a batch an untrusted one held");
    }
    Ok(row.map(|r| r.0))
}

/// Carve a new batch from the next runnable cell: highest priority first, then the experiment
/// and the cell that were served longest ago (round robin across experiments, then cells).
async fn carve(
    tx: &mut Transaction<'_, Postgres>,
    worker: &Claimer<'_>,
    lease: Uuid,
    [lease_secs, deadline_secs]: [f64; 2],
    batch_secs: u64,
) -> Result<Option<Uuid>> {
    // Skip cells other claims hold; if every runnable cell is held, wait for one rather than
    // report "no work" while there is some. (`NO KEY UPDATE` leaves uploads' foreign-key checks
    // on the cell unblocked.)
    let mut cell: Option<RunnableCell> =
        sqlx::query_as(concat!(runnable_cell!(), " FOR NO KEY UPDATE OF c SKIP LOCKED LIMIT 1"))
            .bind(worker.kinds)
            .bind(worker.caps)
            .bind(worker.trusted)
            .fetch_optional(&mut **tx)
            .await?;
    if cell.is_none() {
        cell = sqlx::query_as(concat!(runnable_cell!(), " FOR NO KEY UPDATE OF c LIMIT 1"))
            .bind(worker.kinds)
            .bind(worker.caps)
            .bind(worker.trusted)
            .fetch_optional(&mut **tx)
            .await?;
    }
    let Some(RunnableCell {
        id: cell,
        experiment_id: experiment,
        next_unit: next,
        target_units: target,
        priority,
        kind,
        unit_secs,
        probe_deadline_secs,
    }) = cell
    else {
        return Ok(None);
    };
    let kind = JobKind::parse(&kind).ok_or_else(|| Error::internal(format!("experiment of unknown kind `{kind}`")))?;
    // Aim at `batch_secs` of work at the worker's measured rate for this kind, and no more at
    // this cell's own pace once it has one: bots of one kind may be a thousand times slower
    // than others (a simulating bot that reads racks takes minutes a game).
    // Until a match cell has a pace, its batches are probes of the worker's first-batch size:
    // the worker's rate may come from bots far faster than these. Their deadline is the usual
    // one, so that no lease outlives it whatever its heartbeats, until a probe of the cell
    // misses it: then twice as long at each miss (`reap`), as bots that take many minutes a
    // game need.
    let unit_secs = unit_secs.filter(|s| s.is_finite() && *s > 0.0);
    let threads = worker.threads.max(1) as f64;
    let probe = kind.plays_bots() && unit_secs.is_none();
    let mut want = if probe {
        kind.first_batch_units((threads as u64).min(FIRST_BATCH_THREADS)) as i64
    } else {
        worker.units_for(kind, batch_secs)
    };
    if let Some(s) = unit_secs {
        want = want.min((batch_secs as f64 * threads / s).floor().min(i64::MAX as f64) as i64);
    }
    // An SPRT looks again before its LLR could pass a bound by far: a cell near one gets small
    // batches (a verdict after a few hundred games, not thousands past it).
    if kind.plays_bots() {
        let (idx, Db(tally), Db(spec)): (i32, Db<MatchTally>, Db<ExperimentSpec>) = sqlx::query_as(
            "SELECT c.idx, c.tally, e.spec FROM cells c JOIN experiments e ON e.id = c.experiment_id WHERE c.id = $1",
        )
        .bind(cell)
        .fetch_one(&mut **tx)
        .await?;
        if let Some(cap) = spec.kind.sprt(idx as u32).and_then(|s| s.batch_pairs(&tally)) {
            want = want.min(cap.min(MAX_UNITS as u64) as i64);
        }
    }
    // At most an eighth of the cell per batch, so that several workers can share a cell, its
    // win rate is seen converging, and an SPRT gets the chance to stop it early.
    let units = want.clamp(1, MAX_UNITS).min((target + 7) / 8).min(target - next);
    sqlx::query("UPDATE cells SET next_unit = next_unit + $2, last_claim_at = now() WHERE id = $1")
        .bind(cell)
        .bind(units)
        .execute(&mut **tx)
        .await?;
    sqlx::query("UPDATE experiments SET last_claim_at = now(), status = CASE WHEN status = 'queued' THEN 'running' ELSE status END, started_at = coalesce(started_at, now()) WHERE id = $1")
        .bind(experiment)
        .execute(&mut **tx)
        .await?;
    let id = Uuid::new_v4();
    sqlx::query(
        "INSERT INTO batches (id, cell_id, experiment_id, first_unit, units, priority, state, leases, lease_id, lease_owner, lease_expires, deadline, leased_at)
         VALUES ($1, $2, $3, $4, $5, $6, 'leased', 1, $7, $8, now() + make_interval(secs => $9), now() + make_interval(secs => $10), now())",
    )
    .bind(id)
    .bind(cell)
    .bind(experiment)
    .bind(next)
    .bind(units)
    .bind(priority)
    .bind(lease)
    .bind(worker.id)
    .bind(lease_secs)
    .bind(
        deadline_secs
            .max(DEADLINE_SLACK * units as f64 * unit_secs.unwrap_or(0.0) / threads)
            .max(if probe { probe_deadline_secs.unwrap_or(0.0) } else { 0.0 }),
    )
    .execute(&mut **tx)
    .await?;
    Ok(Some(id))
}

/// The claim's answer: the leased batch and its job.
async fn batch_spec(tx: &mut Transaction<'_, Postgres>, batch: Uuid, lease_secs: u64) -> Result<BatchSpec> {
    let b: kinds::Batch = sqlx::query_as(kinds::BATCH).bind(batch).fetch_one(&mut **tx).await?;
    Ok(BatchSpec {
        batch_id: b.id,
        lease_id: b.lease_id.ok_or_else(|| Error::internal(format!("batch {batch} was claimed without a lease")))?,
        lease_secs,
        heartbeat_secs: (lease_secs / 4).max(1),
        experiment_id: b.experiment_id,
        experiment_name: b.experiment_name.clone(),
        cell_id: b.cell_id,
        cell_index: b.cell_index as u32,
        artifacts: b.artifacts.0.clone(),
        job: kinds::job(&b)?,
    })
}

/// Why a lease-holding request for `batch` cannot go on: 404, 403 (someone else's lease), or
/// 409 (the lease is no longer current).
pub async fn lease_error(db: impl sqlx::PgExecutor<'_>, batch: Uuid, lease: Uuid, worker: Uuid) -> Error {
    #[derive(sqlx::FromRow)]
    struct Held {
        lease_id: Option<Uuid>,
        lease_owner: Option<Uuid>,
        state: String,
    }
    let row: sqlx::Result<Option<Held>> =
        sqlx::query_as("SELECT lease_id, lease_owner, state FROM batches WHERE id = $1")
            .bind(batch)
            .fetch_optional(db)
            .await;
    match row {
        Err(e) => e.into(),
        Ok(None) => Error::not_found(format!("no batch {batch}")),
        Ok(Some(h)) if h.lease_id == Some(lease) && h.lease_owner.is_some_and(|o| o != worker) => {
            Error::forbidden("this lease belongs to another worker")
        }
        Ok(Some(h)) => {
            Error::conflict(format!("lease {lease} is no longer held (the batch is {}); drop this batch", h.state))
        }
    }
}

/// `POST /api/v1/batches/{id}/heartbeat`: extend the lease, never past the batch's deadline.
pub async fn heartbeat(
    State(st): State<AppState>,
    caller: Caller,
    Path(batch): Path<Uuid>,
    Json(r): Json<HeartbeatRequest>,
) -> Result<Json<HeartbeatResponse>> {
    let worker = caller.worker()?;
    let row: Option<(String,)> = sqlx::query_as(
        "UPDATE batches b SET lease_expires = least(now() + make_interval(secs => $4), coalesce(b.deadline, 'infinity')), updated_at = now()
         FROM cells c WHERE b.id = $1 AND b.lease_id = $2 AND b.lease_owner = $3 AND b.state = 'leased' AND c.id = b.cell_id
         RETURNING c.status",
    )
    .bind(batch)
    .bind(r.lease_id)
    .bind(worker)
    .bind(st.cfg.lease_secs as f64)
    .fetch_optional(&st.db)
    .await?;
    let Some((cell_status,)) = row else { return Err(lease_error(&st.db, batch, r.lease_id, worker).await) };
    sqlx::query("UPDATE workers SET last_seen = now() WHERE id = $1").bind(worker).execute(&st.db).await?;
    Ok(Json(HeartbeatResponse { keep_going: cell_status == "running", lease_secs: st.cfg.lease_secs }))
}

/// `POST /api/v1/batches/{id}/release`: give the batch back unplayed (Ctrl-C, or its cell
/// stopped). Not a failure.
pub async fn release(
    State(st): State<AppState>,
    caller: Caller,
    Path(batch): Path<Uuid>,
    Json(r): Json<ReleaseRequest>,
) -> Result<Json<serde_json::Value>> {
    let worker = caller.worker()?;
    let row: Option<(String,)> = sqlx::query_as(
        "UPDATE batches b SET state = CASE WHEN c.status = 'running' THEN 'queued' ELSE 'cancelled' END,
                lease_id = NULL, lease_owner = NULL, lease_expires = NULL, updated_at = now()
         FROM cells c WHERE b.id = $1 AND b.lease_id = $2 AND b.lease_owner = $3 AND b.state = 'leased' AND c.id = b.cell_id
         RETURNING b.state",
    )
    .bind(batch)
    .bind(r.lease_id)
    .bind(worker)
    .fetch_optional(&st.db)
    .await?;
    let Some((state,)) = row else { return Err(lease_error(&st.db, batch, r.lease_id, worker).await) };
    Ok(Json(serde_json::json!({ "released": batch, "state": state })))
}

/// The `SET` list that counts a failure of the lease holder (joined as `w`, its owner as `o`)
/// against batch `b`: its group may not take the batch again, and the batch is parked once
/// `$max` different groups have failed it (one group failing it many times proves nothing
/// about the batch). Only a trusted owner's failure counts towards parking: untrusted owners'
/// failures release the batch to others, so that free accounts cannot fail an experiment.
macro_rules! count_failure {
    ($max:literal) => {
        concat!("failures = b.failures + 1,
         failed_groups = CASE WHEN o.grp = ANY (b.failed_groups) OR o.trusted IS NULL THEN b.failed_groups
                              ELSE b.failed_groups || o.grp END,
         exclude_groups = CASE WHEN o.grp = ANY (b.exclude_groups) THEN b.exclude_groups ELSE b.exclude_groups || o.grp END,
         state = CASE WHEN o.trusted IS NOT NULL
                       AND cardinality(b.failed_groups) + (NOT o.grp = ANY (b.failed_groups))::int >= ", $max, "
                      THEN 'parked' ELSE 'queued' END,
         lease_id = NULL, lease_owner = NULL, lease_expires = NULL, deadline = NULL, updated_at = now()")
    };
}

/// `POST /api/v1/batches/{id}/fail`: the worker could not play the batch. It goes to another
/// group's worker.
pub async fn fail(
    State(st): State<AppState>,
    caller: Caller,
    Path(batch): Path<Uuid>,
    Json(r): Json<FailRequest>,
) -> Result<Json<serde_json::Value>> {
    let worker = caller.worker()?;
    let error: String = r.error.chars().take(2000).collect();
    let mut tx = st.db.begin().await?;
    let row: Option<(Uuid, String)> = sqlx::query_as(concat!(
        "UPDATE batches b SET ",
        count_failure!("$5"),
        ", last_error = $4
         FROM workers w JOIN owners o ON o.id = w.owner_id
         WHERE w.id = b.lease_owner AND b.id = $1 AND b.lease_id = $2 AND b.lease_owner = $3 AND b.state = 'leased'
         RETURNING b.cell_id, b.state",
    ))
    .bind(batch)
    .bind(r.lease_id)
    .bind(worker)
    .bind(format!("worker {worker}: {error}"))
    .bind(st.cfg.max_failures as i32)
    .fetch_optional(&mut *tx)
    .await?;
    let Some((cell, state)) = row else { return Err(lease_error(&mut *tx, batch, r.lease_id, worker).await) };
    if state == "parked" {
        park_cell(&mut tx, cell).await?;
    }
    tx.commit().await?;
    tracing::warn!(%batch, %worker, %error, %state, "batch failed");
    Ok(Json(serde_json::json!({ "batch": batch, "state": state })))
}

/// A parked batch means its cell cannot reach its target: fail the cell, cancel its queued
/// batches, and settle the experiment if nothing else runs.
pub async fn park_cell(tx: &mut Transaction<'_, Postgres>, cell: Uuid) -> Result<()> {
    let experiment: Option<(Uuid,)> = sqlx::query_as(
        "UPDATE cells SET status = 'failed', stop_reason = 'a batch failed too often (see parked batches)' WHERE id = $1 AND status = 'running' RETURNING experiment_id",
    )
    .bind(cell)
    .fetch_optional(&mut **tx)
    .await?;
    sqlx::query("UPDATE batches SET state = 'cancelled', updated_at = now() WHERE cell_id = $1 AND state = 'queued'")
        .bind(cell)
        .execute(&mut **tx)
        .await?;
    if let Some((experiment,)) = experiment {
        // Cells that wait for what an earlier one makes (a generation's table) may wait for
        // this one: none of them will run.
        sqlx::query("UPDATE cells SET status = 'failed', stop_reason = 'an earlier cell of the run failed' WHERE experiment_id = $1 AND status = 'waiting'")
            .bind(experiment)
            .execute(&mut **tx)
            .await?;
        settle_experiment(tx, experiment).await?;
    }
    Ok(())
}

/// Mark an experiment finished or failed once none of its cells runs or waits to.
pub async fn settle_experiment(tx: &mut Transaction<'_, Postgres>, experiment: Uuid) -> Result<()> {
    // Two transactions ending an experiment's last two cells would each see the other's cell
    // still running (neither committed) and neither settle it: they take turns here, and the
    // second's statement below sees what the first committed. An advisory lock, not the row's:
    // other paths lock experiment rows before cells, and this one holds cells already.
    sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended($1::text, 0))")
        .bind(experiment)
        .execute(&mut **tx)
        .await?;
    sqlx::query(
        "UPDATE experiments e SET finished_at = now(),
                status = CASE WHEN EXISTS (SELECT 1 FROM cells WHERE experiment_id = e.id AND status = 'failed') THEN 'failed' ELSE 'finished' END
         WHERE e.id = $1 AND e.status IN ('queued', 'running')
           AND NOT EXISTS (SELECT 1 FROM cells WHERE experiment_id = e.id AND status IN ('running', 'waiting'))",
    )
    .bind(experiment)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// Return expired leases (and batches past their deadline) to the queue, for another group,
/// parking those that enough trusted groups let expire. Safe to run in every coordinator at
/// once; the caller holds it back after a database outage or its own shedding (`reaper`).
pub async fn reap(db: &sqlx::PgPool, max_failures: u32, deadline_secs: u64) -> Result<u64> {
    let mut tx = db.begin().await?;
    #[derive(sqlx::FromRow)]
    struct Expired {
        id: Uuid,
        cell_id: Uuid,
        state: String,
        overdue: bool,
    }
    let rows: Vec<Expired> = sqlx::query_as(concat!(
        "UPDATE batches b SET ",
        count_failure!("$1"),
        ", last_error = CASE WHEN b.deadline <= now() THEN 'deadline passed: worker ' || w.id::text || ' held the batch too long'
                           ELSE 'lease expired: worker ' || w.id::text || ' stopped heartbeating' END
         FROM workers w JOIN owners o ON o.id = w.owner_id
         WHERE w.id = b.lease_owner AND b.id IN (SELECT id FROM batches WHERE state = 'leased' AND lease_expires < now() FOR UPDATE SKIP LOCKED)
         RETURNING b.id, b.cell_id, b.state, b.last_error LIKE 'deadline passed%' AS overdue",
    ))
    .bind(max_failures as i32)
    .fetch_all(&mut *tx)
    .await?;
    for b in &rows {
        tracing::warn!(batch = %b.id, state = %b.state, "lease expired");
        if b.overdue {
            // A probe (a cell that plays bots, without a pace yet) that outlived its deadline:
            // the cell's bots are slower than it allows.
            sqlx::query(concat!(
                "UPDATE cells c SET probe_deadline_secs = least($4, 2 * greatest(coalesce(c.probe_deadline_secs, 0), $2))
                 WHERE c.id = $1 AND (",
                unit_secs!(),
                ") IS NULL AND (SELECT e.kind FROM experiments e WHERE e.id = c.experiment_id) = ANY ($3)"
            ))
            .bind(b.cell_id)
            .bind(deadline_secs as f64)
            .bind(JobKind::names_where(|k| k.plays_bots))
            .bind(MAX_PROBE_DEADLINE_SECS)
            .execute(&mut *tx)
            .await?;
        }
        if b.state == "parked" {
            park_cell(&mut tx, b.cell_id).await?;
        }
    }
    tx.commit().await?;
    Ok(rows.len() as u64)
}
