//! Endgame experiments as researchers see them: every solved position with its cross-checks,
//! the solve-time distribution, and disagreements between workers.
//!
//! # Design notes
//!
//! what a position's solves settle (`settle`: the first outcome two groups of owners reached
//! exactly, one of them trusted, is the position's value; every solve, earlier ones included,
//! agrees or disagrees with it; a solve cut by a limit is unverified and never compared), the endgame views (every solve
//! with its verdict, positions with their agreed value and who disagreed), the solve-time
//! histogram; `weigh` (a position's solves settled by owner, marks stored) and `resolve` (queue
//! positions for another owner in the check cell).

use crate::error::Result;
use crate::state::AppState;
use axum::Json;
use axum::extract::{Path, State};
use serde::Serialize;
use uuid::Uuid;

/// One solve of one position.
#[derive(Serialize, sqlx::FromRow)]
pub struct SolveRow {
    pub index: i64,
    pub pass: String,
    pub worker_id: Uuid,
    pub worker: String,
    /// The solver's owner's group, and whether that owner is trusted.
    #[serde(skip)]
    pub group_id: Uuid,
    pub trusted: bool,
    pub cgp: String,
    pub skipped: bool,
    pub value: i32,
    pub exact: bool,
    pub best: String,
    pub sequence: String,
    pub nodes: i64,
    pub ms: i64,
    /// Differs from the agreed value, or (before any agreement) from another group's exact
    /// solve.
    pub disagrees: bool,
    /// How this solve stands against the position's other solves.
    #[sqlx(skip)]
    pub verdict: Option<Verdict>,
}

impl SolveRow {
    /// What the solve claims, if it can be checked: skipped, or an exact value. A solve cut
    /// by the depth or time limit claims only an estimate, which another machine's search
    /// need not reproduce.
    pub fn outcome(&self) -> Option<Outcome> {
        Outcome::of(self.skipped, self.exact, self.value)
    }
}

/// Every solve of an experiment's positions, by position then arrival, with its verdict.
pub async fn solves(db: &sqlx::PgPool, id: Uuid) -> Result<Vec<SolveRow>> {
    let mut rows: Vec<SolveRow> = sqlx::query_as(
        "SELECT s.idx AS index, s.pass, s.worker_id, w.name AS worker, o.grp AS group_id,
                o.trusted IS NOT NULL AS trusted, s.cgp, s.skipped, s.value, s.exact, s.best, s.sequence, s.nodes, s.ms, s.disagrees
         FROM endgame_solutions s JOIN workers w ON w.id = s.worker_id JOIN owners o ON o.id = w.owner_id
         WHERE s.experiment_id = $1 ORDER BY s.idx, s.received_at, s.pass DESC",
    )
    .bind(id)
    .fetch_all(db)
    .await?;
    for group in rows.chunk_by_mut(|a, b| a.index == b.index) {
        let claims: Vec<_> = group.iter().map(|r| (r.group_id, r.trusted, r.outcome())).collect();
        for (r, v) in group.iter_mut().zip(settle(&claims).verdicts) {
            r.verdict = Some(v);
        }
    }
    Ok(rows)
}

/// What a checkable solve says a position is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// No position: a generated game ended before its bag emptied.
    Skipped,
    /// The exact final spread for the player on turn.
    Value(i32),
}

impl Outcome {
    /// What a stored solve claims, if it can be checked ([`SolveRow::outcome`]).
    pub fn of(skipped: bool, exact: bool, value: i32) -> Option<Outcome> {
        match (skipped, exact) {
            (true, _) => Some(Outcome::Skipped),
            (false, true) => Some(Outcome::Value(value)),
            (false, false) => None,
        }
    }
}

/// How one solve stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Claims the agreed outcome.
    Agrees,
    /// Claims another outcome than the agreed one, or than another worker's exact solve.
    Disagrees,
    /// Cut by a limit: its estimate is not compared.
    Unverified,
    /// Exact, and no other worker has confirmed or contradicted it yet.
    Pending,
}

/// A position's solves weighed against each other.
#[derive(Debug, PartialEq)]
pub struct Settlement {
    /// The first outcome two groups of owners claimed, at least one of them trusted: the
    /// position's value. Every other solve is compared with it, earlier ones included.
    pub agreed: Option<Outcome>,
    /// One per solve, in the order given.
    pub verdicts: Vec<Verdict>,
    /// A trusted worker's solve is among them (exact, or cut by a limit).
    pub trusted_solved: bool,
}

impl Settlement {
    /// Nothing is agreed yet, and a trusted worker of another group should solve the
    /// position: checkable solves contradict each other, or no trusted worker solved it.
    pub fn wants_trusted(&self) -> bool {
        self.agreed.is_none() && (self.verdicts.contains(&Verdict::Disagrees) || !self.trusted_solved)
    }
}

/// Weigh a position's solves, in arrival order: (group, trusted, what it claims if
/// checkable). Untrusted groups never agree a value among themselves, however many, and
/// never outvote a trusted solve.
pub fn settle<W: PartialEq>(solves: &[(W, bool, Option<Outcome>)]) -> Settlement {
    let agreed = solves.iter().enumerate().find_map(|(j, (wj, tj, oj))| {
        let o = (*oj)?;
        solves[..j].iter().any(|(wi, ti, oi)| wi != wj && (*ti || *tj) && *oi == Some(o)).then_some(o)
    });
    // Short of that, trusted solves that all say one thing decide against untrusted ones that
    // say another (as a trusted replica decides a match batch).
    let trusted: Vec<Outcome> = solves.iter().filter(|(_, t, _)| *t).filter_map(|(_, _, o)| *o).collect();
    let agreed = agreed.or_else(|| {
        let first = *trusted.first()?;
        let contradicted = solves.iter().any(|(_, t, o)| !*t && o.is_some_and(|o| o != first));
        (trusted.iter().all(|&o| o == first) && contradicted).then_some(first)
    });
    let trusted_solved = solves.iter().any(|(_, t, _)| *t);
    let verdicts = solves
        .iter()
        .map(|(w, _, o)| match (*o, agreed) {
            (None, _) => Verdict::Unverified,
            (Some(o), Some(a)) if o == a => Verdict::Agrees,
            (Some(_), Some(_)) => Verdict::Disagrees,
            (Some(o), None) => {
                if solves.iter().any(|(w2, _, o2)| w2 != w && o2.is_some_and(|o2| o2 != o)) {
                    Verdict::Disagrees
                } else {
                    Verdict::Pending
                }
            }
        })
        .collect();
    Settlement { agreed, verdicts, trusted_solved }
}

/// A position as the page shows it: the agreed outcome (or what is known short of one) and
/// who disagreed.
pub struct PositionView<'a> {
    pub index: i64,
    /// The solve whose line is shown: an agreeing one, else the first checkable one, else
    /// the first.
    pub shown: &'a SolveRow,
    pub agreed: Option<Outcome>,
    pub agreed_by: Vec<&'a str>,
    pub disagreed: Vec<&'a str>,
    pub unverified: Vec<&'a str>,
    pub solves: usize,
}

/// Group solves (as `solves` returns them, with their verdicts) by position.
pub fn positions(rows: &[SolveRow]) -> Vec<PositionView<'_>> {
    rows.chunk_by(|a, b| a.index == b.index)
        .map(|group| {
            let with = |v: Verdict| group.iter().filter(move |r| r.verdict == Some(v));
            let who = |v: Verdict| with(v).map(|r| r.worker.as_str()).collect();
            let agreeing = with(Verdict::Agrees).next();
            let shown =
                agreeing.or_else(|| group.iter().find(|r| r.verdict != Some(Verdict::Unverified))).unwrap_or(&group[0]);
            PositionView {
                index: group[0].index,
                shown,
                agreed: agreeing.and_then(SolveRow::outcome),
                agreed_by: who(Verdict::Agrees),
                disagreed: who(Verdict::Disagrees),
                unverified: who(Verdict::Unverified),
                solves: group.len(),
            }
        })
        .collect()
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

/// Weigh a position's solves so far (withdrawn ones aside) and store each one's `disagrees`
/// mark; returns the settlement and the groups of owners whose workers solved it.
pub async fn weigh(
    tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
    experiment: Uuid,
    index: u64,
) -> Result<(Settlement, Vec<Uuid>)> {
    #[derive(sqlx::FromRow)]
    struct Solve {
        batch_id: Uuid,
        grp: Uuid,
        trusted: bool,
        skipped: bool,
        exact: bool,
        value: i32,
    }
    let solves: Vec<Solve> = sqlx::query_as(
        "SELECT s.batch_id, o.grp, o.trusted IS NOT NULL AS trusted, s.skipped, s.exact, s.value
         FROM endgame_solutions s JOIN workers w ON w.id = s.worker_id JOIN owners o ON o.id = w.owner_id
         WHERE s.experiment_id = $1 AND s.idx = $2 AND NOT s.withdrawn ORDER BY s.received_at, s.pass DESC",
    )
    .bind(experiment)
    .bind(index as i64)
    .fetch_all(&mut **tx)
    .await?;
    let claims: Vec<(Uuid, bool, Option<Outcome>)> =
        solves.iter().map(|s| (s.grp, s.trusted, Outcome::of(s.skipped, s.exact, s.value))).collect();
    let settled = settle(&claims);
    for (s, v) in solves.iter().zip(&settled.verdicts) {
        sqlx::query("UPDATE endgame_solutions SET disagrees = $3 WHERE batch_id = $1 AND idx = $2")
            .bind(s.batch_id)
            .bind(index as i64)
            .bind(*v == Verdict::Disagrees)
            .execute(&mut **tx)
            .await?;
    }
    let mut solvers: Vec<Uuid> = claims.into_iter().map(|(g, _, _)| g).collect();
    solvers.sort();
    solvers.dedup();
    Ok((settled, solvers))
}

/// Queue endgame positions for another solve in the experiment's check cell, by a trusted
/// worker of any group but `exclude` (only a trusted solve agrees a value). `extra`: the
/// positions were not in the check cell's target (re-solves of disputed, untrusted or
/// withdrawn solves).
pub async fn resolve(
    tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
    experiment: Uuid,
    positions: &[i64],
    mut exclude: Vec<Uuid>,
    extra: bool,
    priority: i32,
) -> Result<()> {
    let (check_cell,): (Uuid,) = sqlx::query_as("SELECT id FROM cells WHERE experiment_id = $1 AND idx = 1")
        .bind(experiment)
        .fetch_one(&mut **tx)
        .await?;
    exclude.sort();
    exclude.dedup();
    if extra {
        sqlx::query("UPDATE cells SET target_units = target_units + $2, next_unit = next_unit + $2, status = 'running', stop_reason = NULL WHERE id = $1")
            .bind(check_cell)
            .bind(positions.len() as i64)
            .execute(&mut **tx)
            .await?;
        sqlx::query(
            "UPDATE experiments SET status = 'running', finished_at = NULL WHERE id = $1 AND status = 'finished'",
        )
        .bind(experiment)
        .execute(&mut **tx)
        .await?;
    }
    sqlx::query(
        "INSERT INTO batches (id, cell_id, experiment_id, first_unit, units, priority, state, positions, exclude_groups, trusted_only)
         VALUES ($1, $2, $3, $4, $5, $6, 'queued', $7, $8, true)",
    )
    .bind(Uuid::new_v4())
    .bind(check_cell)
    .bind(experiment)
    .bind(positions[0])
    .bind(positions.len() as i64)
    .bind(priority)
    .bind(positions)
    .bind(&exclude)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use Outcome::{Skipped, Value};
    use Verdict::*;

    #[test]
    fn two_workers_agreeing_settle_a_position_and_every_other_solve_is_compared_with_them() {
        // A liar first, then two honest workers: the liar is the one who disagrees.
        let s = settle(&[("liar", true, Some(Value(999))), ("a", true, Some(Value(12))), ("b", true, Some(Value(12)))]);
        assert_eq!(s.agreed, Some(Value(12)));
        assert_eq!(s.verdicts, [Disagrees, Agrees, Agrees]);
        assert!(!s.wants_trusted());
        // A fourth solve is compared with the agreed value, not with the first solve.
        let s = settle(&[
            ("liar", true, Some(Value(999))),
            ("a", true, Some(Value(12))),
            ("b", true, Some(Value(12))),
            ("c", true, Some(Value(999))),
        ]);
        assert_eq!((s.agreed, s.verdicts[3]), (Some(Value(12)), Disagrees));
        // Before any agreement, a contradiction disputes both sides.
        let s = settle(&[("a", true, Some(Value(3))), ("b", true, Some(Value(4)))]);
        assert_eq!((s.agreed, &s.verdicts[..], s.wants_trusted()), (None, &[Disagrees, Disagrees][..], true));
        // One solve is pending; skips agree like values do.
        assert_eq!(settle(&[("a", true, Some(Value(3)))]).verdicts, [Pending]);
        assert_eq!(settle(&[("a", true, Some(Skipped)), ("b", true, Some(Skipped))]).agreed, Some(Skipped));
        assert_eq!(settle(&[("a", true, Some(Skipped)), ("b", true, Some(Value(0)))]).verdicts, [Disagrees, Disagrees]);
    }

    #[test]
    fn limited_solves_are_unverified_and_one_worker_cannot_agree_with_itself() {
        let s = settle(&[("a", true, None), ("b", true, Some(Value(7)))]);
        assert_eq!((s.agreed, &s.verdicts[..], s.wants_trusted()), (None, &[Unverified, Pending][..], false));
        let s = settle(&[("a", true, Some(Value(7))), ("a", true, Some(Value(7)))]);
        assert_eq!((s.agreed, &s.verdicts[..]), (None, &[Pending, Pending][..]));
        let s = settle(&[("a", true, Some(Value(7))), ("b", true, None), ("c", true, Some(Value(7)))]);
        assert_eq!((s.agreed, &s.verdicts[..]), (Some(Value(7)), &[Agrees, Unverified, Agrees][..]));
    }

    #[test]
    fn untrusted_groups_never_agree_a_value_among_themselves() {
        // Two Sybil groups agree on a made-up value: nothing is agreed, and a trusted solve is
        // wanted.
        let s = settle(&[("s1", false, Some(Value(777))), ("s2", false, Some(Value(777)))]);
        assert_eq!((s.agreed, s.wants_trusted()), (None, true));
        // A trusted solve decides: the Sybils disagree with it.
        let s =
            settle(&[("s1", false, Some(Value(777))), ("s2", false, Some(Value(777))), ("t", true, Some(Value(-205)))]);
        assert_eq!((s.agreed, &s.verdicts[..]), (Some(Value(-205)), &[Disagrees, Disagrees, Agrees][..]));
        assert!(!s.wants_trusted());
        // Trusted solves that contradict each other go to a third trusted group.
        let s = settle(&[("s1", false, Some(Value(777))), ("t", true, Some(Value(-205))), ("u", true, Some(Value(3)))]);
        assert_eq!((s.agreed, s.wants_trusted()), (None, true));
        let s =
            settle(&[("s1", false, Some(Value(777))), ("t", true, Some(Value(-205))), ("u", true, Some(Value(-205)))]);
        assert_eq!((s.agreed, &s.verdicts[..]), (Some(Value(-205)), &[Disagrees, Agrees, Agrees][..]));
        // An untrusted solve that a trusted one matches is agreed.
        let s = settle(&[("h", false, Some(Value(12))), ("t", true, Some(Value(12)))]);
        assert_eq!((s.agreed, s.wants_trusted()), (Some(Value(12)), false));
        // A lone trusted solve is pending, and wants nothing more.
        let s = settle(&[("t", true, Some(Value(12)))]);
        assert_eq!((s.agreed, s.wants_trusted()), (None, false));
    }
}
