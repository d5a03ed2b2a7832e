//! Quarantine: what happens to a worker found wrong (contradicted by trusted workers) or
//! banned. It gets no more work, and everything it contributed is withdrawn, validated or not:
//! its match and win-table results leave their cells' tallies and their batches go back to
//! the queue for trusted workers of other groups (a result it confirmed is confirmed again by
//! a trusted replica; a trusted result that stood alone stands), and its endgame
//! solves are withdrawn and their positions solved again. Cells that had finished or stopped
//! on what it contributed run again, so the dashboards and `coordinator recompute` always show
//! what remains.
//!
//! # Design notes
//!
//! a worker outvoted by replicas (or banned, or quarantined by an admin) gets no more work and
//! everything it contributed is withdrawn: results leave their cells (which reopen if they had
//! finished or stopped on them), their batches are redone by a trusted worker of a third group, its endgame solves are
//! withdrawn and their positions solved again.

use crate::error::Result;
use sqlx::{Postgres, Transaction};
use uuid::Uuid;

/// Quarantine `worker` (once) and withdraw what it contributed.
pub async fn quarantine(tx: &mut Transaction<'_, Postgres>, worker: Uuid, reason: &str) -> Result<()> {
    let row: Option<(Uuid,)> = sqlx::query_as(
        "UPDATE workers w SET quarantined_at = now(), quarantine_reason = $2 FROM owners o
         WHERE w.id = $1 AND w.quarantined_at IS NULL AND o.id = w.owner_id RETURNING o.grp",
    )
    .bind(worker)
    .bind(reason)
    .fetch_optional(&mut **tx)
    .await?;
    // Its group is excluded from what it touched: exclusions are by group (`trust`).
    let Some((group,)) = row else { return Ok(()) };
    // Its batches in progress go back to the queue now rather than at their lease's end.
    sqlx::query(
        "UPDATE batches SET state = 'queued', lease_id = NULL, lease_owner = NULL, lease_expires = NULL, deadline = NULL,
                exclude_groups = CASE WHEN $2 = ANY (exclude_groups) THEN exclude_groups ELSE exclude_groups || $2 END,
                updated_at = now()
         WHERE lease_owner = $1 AND state = 'leased'",
    )
    .bind(worker)
    .bind(group)
    .execute(&mut **tx)
    .await?;
    withdraw_results(tx, worker, group).await?;
    withdraw_solves(tx, worker, group).await
}

/// Withdraw a worker's results of the kinds judged whole by replicas (matches, win tables)
/// and requeue their batches for trusted workers of other groups.
async fn withdraw_results(tx: &mut Transaction<'_, Postgres>, worker: Uuid, group: Uuid) -> Result<()> {
    let batches: Vec<(Uuid, Uuid)> = sqlx::query_as(
        "UPDATE batch_results r SET state = 'withdrawn' FROM experiments e
         WHERE e.id = r.experiment_id AND e.kind = ANY ($2) AND r.worker_id = $1 AND r.state IN ('pending', 'valid')
         RETURNING r.batch_id, r.cell_id",
    )
    .bind(worker)
    .bind(crate::kinds::names_where(|k| k.replicated))
    .fetch_all(&mut **tx)
    .await?;
    let ids: Vec<Uuid> = batches.iter().map(|b| b.0).collect();
    // What others said about those batches needs a trusted replica's confirmation now, unless
    // it stood alone (a trusted worker's result, not drawn for a spot check).
    sqlx::query(
        "UPDATE batch_results r SET state = 'pending' FROM owners o
         WHERE r.batch_id = ANY ($1) AND r.state = 'valid' AND o.id = r.owner_id AND NOT (o.trusted IS NOT NULL AND r.alone)",
    )
    .bind(&ids)
    .execute(&mut **tx)
    .await?;
    // Batches left with no valid result go to a trusted worker of a third group: not the
    // quarantined one's, nor those whose results wait.
    sqlx::query(
        "UPDATE batches b SET state = CASE WHEN b.state = 'leased' THEN b.state ELSE 'queued' END, trusted_only = true,
                exclude_groups = ARRAY(SELECT DISTINCT unnest(b.exclude_groups || $2
                    || ARRAY(SELECT o.grp FROM batch_results r JOIN owners o ON o.id = r.owner_id
                             WHERE r.batch_id = b.id AND r.state = 'pending'))),
                updated_at = now()
         WHERE b.id = ANY ($1) AND b.state IN ('done', 'queued', 'leased')
           AND NOT EXISTS (SELECT 1 FROM batch_results r WHERE r.batch_id = b.id AND r.state = 'valid')",
    )
    .bind(&ids)
    .bind(group)
    .execute(&mut **tx)
    .await?;
    let mut cells: Vec<Uuid> = batches.iter().map(|b| b.1).collect();
    cells.sort();
    cells.dedup();
    for cell in cells {
        crate::ledger::recompute_cell(tx, cell).await?;
        reopen(tx, cell).await?;
        // Queued batches exist only in running cells.
        sqlx::query(
            "UPDATE batches b SET state = 'cancelled', updated_at = now() FROM cells c
             WHERE c.id = b.cell_id AND b.cell_id = $1 AND b.state = 'queued' AND c.status <> 'running'",
        )
        .bind(cell)
        .execute(&mut **tx)
        .await?;
    }
    Ok(())
}

/// A cell that finished or stopped on withdrawn results runs again (unless its researcher
/// stopped the experiment), with the batches its stop cancelled back in the queue.
async fn reopen(tx: &mut Transaction<'_, Postgres>, cell: Uuid) -> Result<()> {
    let reopened: Option<(Uuid,)> = sqlx::query_as(
        "UPDATE cells c SET status = 'running', stop_reason = NULL FROM experiments e
         WHERE c.id = $1 AND e.id = c.experiment_id AND c.status IN ('finished', 'stopped') AND c.done_units < c.target_units
           AND e.status <> 'stopped'
         RETURNING e.id",
    )
    .bind(cell)
    .fetch_optional(&mut **tx)
    .await?;
    let Some((experiment,)) = reopened else { return Ok(()) };
    sqlx::query("UPDATE batches SET state = 'queued', updated_at = now() WHERE cell_id = $1 AND state = 'cancelled'")
        .bind(cell)
        .execute(&mut **tx)
        .await?;
    sqlx::query("UPDATE experiments SET status = 'running', finished_at = NULL WHERE id = $1")
        .bind(experiment)
        .execute(&mut **tx)
        .await?;
    tracing::warn!(%cell, %experiment, "a cell runs again: results it counted were withdrawn");
    Ok(())
}

/// Withdraw a worker's endgame solves; weigh their positions again and queue those it alone
/// solved for another owner.
async fn withdraw_solves(tx: &mut Transaction<'_, Postgres>, worker: Uuid, group: Uuid) -> Result<()> {
    let mut solved: Vec<(Uuid, i64, i32)> = sqlx::query_as(
        "UPDATE endgame_solutions s SET withdrawn = true FROM batches b
         WHERE b.id = s.batch_id AND s.worker_id = $1 AND NOT s.withdrawn RETURNING s.experiment_id, s.idx, b.priority",
    )
    .bind(worker)
    .fetch_all(&mut **tx)
    .await?;
    solved.sort();
    solved.dedup();
    for solved_group in solved.chunk_by(|a, b| a.0 == b.0) {
        let experiment = solved_group[0].0;
        let mut again = Vec::new();
        for &(_, idx, _) in solved_group {
            let (settled, solvers) = crate::endgames::weigh(tx, experiment, idx as u64).await?;
            if solvers.is_empty() || settled.wants_trusted() {
                again.push(idx);
            }
        }
        if !again.is_empty() {
            crate::endgames::resolve(tx, experiment, &again, vec![group], true, solved_group[0].2).await?;
        }
    }
    Ok(())
}
