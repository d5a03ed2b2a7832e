//! `endgame`: the job lists positions (their CGPs when the set was listed); a result's
//! solves are stored position by position and each is weighed with the position's other
//! solves (`crate::endgames`), the cross-checked ones queued for another owner; the page shows
//! the positions, their agreed values and the disputes.

use super::{Batch, Headline, Served, Tx, Upload};
use crate::dashboard::{contributors, live, page as frame, plots};
use crate::endgames::{self, Outcome, PositionView, SolveRow, TIME_BUCKETS};
use crate::error::{Error, Result};
use crate::experiments::{CellView, Detail};
use crate::results::{Settled, mark_done, record_in_cell};
use crate::state::AppState;
use crate::verify::Texts;
use axum::response::Html;
use maud::{Markup, html};
use shared::kinds::endgame::{
    Endgame, EndgameJob, EndgamePosition, EndgameReport, EndgameSpec, PositionSource, Solved,
};
use sqlx::PgConnection;
use uuid::Uuid;

/// Longest text field of a solved position.
const MAX_SOLVED_TEXT: usize = 4000;

impl Served for Endgame {
    const REPLICATED: bool = false;
    const LOGS_GAMES: bool = false;

    fn job(seed: u64, e: &EndgameSpec, batch: &Batch) -> Result<EndgameJob> {
        let (listed, extra) = match &e.source {
            PositionSource::Listed(l) => (Some(l), 0),
            PositionSource::Generated { extra, .. } => (None, *extra),
        };
        let positions = batch
            .unit_indices()
            .into_iter()
            .map(|index| EndgamePosition { index, cgp: listed.and_then(|l| l.get(index as usize).cloned()) })
            .collect();
        Ok(EndgameJob { seed, extra, positions, plies: e.plies, time_ms: e.time_ms })
    }

    /// Solves carry no logs: they are checked by solving again (cross-checks).
    async fn verify(
        _: &AppState,
        _: &Batch,
        _: &EndgameSpec,
        _: EndgameReport,
        _: Texts,
    ) -> Result<std::result::Result<(), String>> {
        Ok(Ok(()))
    }

    async fn check(_: &mut PgConnection, b: &Batch, report: &EndgameReport) -> Result<()> {
        let want = b.unit_indices();
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
        Ok(())
    }

    fn replicable(report: &EndgameReport) -> EndgameReport {
        report.clone()
    }

    async fn settle(tx: &mut Tx<'_>, up: &Upload<'_>, eg: &EndgameSpec, report: &EndgameReport) -> Result<Settled> {
        let checks = record(tx, up, eg, &report.solved).await?;
        mark_done(tx, up.batch.id).await?;
        record_in_cell(tx, up.batch.cell_id, up.batch.units, None).await?;
        Ok(Settled::Told(format!("recorded {} positions{checks}", report.solved.len())))
    }

    async fn cell_finished(_: &mut Tx<'_>, _: &Self::Spec, _: Uuid, _: Uuid) -> Result<Option<String>> {
        Ok(None)
    }

    async fn page(st: &AppState, d: &Detail, e: &EndgameSpec) -> Result<Html<String>> {
        let rows = endgames::solves(&st.db, d.summary.id).await?;
        Ok(page(d, e, &rows))
    }

    /// An endgame set's result is its table of values, not a line.
    fn headline(_: &EndgameSpec, _: &[CellView]) -> Headline {
        Headline::default()
    }
}

/// Most solves of one position: a dispute that this many workers cannot settle stays a
/// dispute, shown as one, rather than going round the volunteers for ever.
const MAX_SOLVES: usize = 5;

/// Store a batch's solved positions. A first solve queues the cross-checked ones (all of them
/// when the owner is not trusted) for a trusted worker of another group. Each solve is then
/// weighed with the position's others (`endgames::settle`): the outcome two groups agree on,
/// one of them trusted, is the position's value and every solve is marked against it;
/// contradictions with nothing agreed yet, and solves no trusted worker has matched, queue the
/// position for a trusted group that has not solved it.
async fn record(tx: &mut Tx<'_>, up: &Upload<'_>, eg: &EndgameSpec, solved: &[Solved]) -> Result<String> {
    let (b, batch, worker, group) = (up.batch, up.batch.id, up.worker, up.standing.group);
    let trusted = up.standing.trusted();
    let first_pass = b.cell_index == 0;
    // Positions for a trusted worker of another group: within the check cell's planned
    // target, and beyond it.
    let (mut planned, mut again) = (Vec::new(), Vec::new());
    let mut exclude = b.exclude_groups.clone();
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
        if first_pass && eg.is_checked(b.spec.seed, s.index) {
            planned.push(s.index as i64);
            continue;
        }
        if first_pass && !trusted {
            again.push(s.index as i64);
            continue;
        }
        let (settled, solvers) = endgames::weigh(tx, b.experiment_id, s.index).await?;
        if settled.wants_trusted() {
            if solvers.len() < MAX_SOLVES {
                tracing::warn!(experiment = %b.experiment_id, position = s.index, %worker, "endgame solves disagree; solving it again");
                again.push(s.index as i64);
                exclude.extend(solvers);
            } else {
                tracing::warn!(experiment = %b.experiment_id, position = s.index, "endgame solves disagree after {MAX_SOLVES} solves; left disputed");
            }
        }
    }
    exclude.push(group);
    for (positions, extra) in [(&planned, false), (&again, true)] {
        if !positions.is_empty() {
            endgames::resolve(tx, b.experiment_id, positions, exclude.clone(), extra, b.priority).await?;
        }
    }
    match planned.len() + again.len() {
        0 => Ok(String::new()),
        n => Ok(format!("; {n} queued for a trusted worker of another owner")),
    }
}

/// An endgame experiment: positions solved and cross-checked, the solve-time distribution,
/// disagreements between workers, and every position's agreed value and best sequence.
fn page(d: &Detail, e: &EndgameSpec, rows: &[SolveRow]) -> Html<String> {
    let s = &d.summary;
    let source = match &e.source {
        PositionSource::Listed(p) => format!("{} listed positions", p.len()),
        PositionSource::Generated { count, extra } => format!(
            "{count} positions where the bag just emptied in static self-play (seed {}, {extra} moves later)",
            d.spec.seed
        ),
    };
    let target = |i: usize| d.cells.get(i).map_or(0, |c| c.target_games);
    let positions = endgames::positions(rows);
    let first_solves = rows.iter().filter(|r| r.pass == "solve");
    let checks = rows.iter().filter(|r| r.pass == "check").count();
    let disputed: Vec<&PositionView> = positions.iter().filter(|p| !p.disagreed.is_empty()).collect();
    let agreed = positions.iter().filter(|p| p.agreed.is_some()).count();
    let hist = endgames::time_histogram(rows);
    let bucket_labels: Vec<&str> = TIME_BUCKETS.iter().map(|b| b.1).collect();
    let body = html! {
        p.meta {
            span class={ "status " (s.status) } #status { (s.status) }
            " endgame: " (source) "; " (format!("{:.1}", e.time_ms as f64 / 1000.0)) " s per position"
            @if let Some(p) = e.plies { ", " (p) " plies at most" }
            "; " (format!("{:.0}", 100.0 * e.cross_check)) "% solved twice by different workers"
        }
        p #progress {
            "solved " span #solved { (first_solves.clone().count()) } " / " (target(0))
            " · cross-checked " span #checked { (checks) } " / " (target(1))
            " · agreed " span #agreed { (agreed) }
            " · disagreements " span #disagreements { (disputed.len()) }
            " · " (first_solves.filter(|r| r.exact && !r.skipped).count()) " exact"
        }
        (crate::dashboard::waits(d))
        h2 { "Time to solve (first solves)" }
        (plots::solve_times(&hist, &bucket_labels))
        @if !disputed.is_empty() {
            h2 { "Disagreements" }
            table #disputes {
                tr { th { "position" } th { "worker" } th { "pass" } th { "value" } th { "exact" } th { "verdict" } }
                @for r in rows.iter().filter(|r| disputed.iter().any(|p| p.index == r.index)) {
                    tr.dispute data-index=(r.index) {
                        td { (r.index) } td { (r.worker) } td { (r.pass) }
                        td { @if r.skipped { "skipped" } @else { (format!("{:+}", r.value)) } }
                        td { (r.exact) }
                        td { (r.verdict.map_or("", verdict_word)) }
                    }
                }
            }
        }
        h2 { "Positions" }
        ul.legend #values {
            li { b { "+12" } " the value two workers of different owners reached exactly (the final spread for the player on turn)" }
            li { b { "+12?" } " one exact solve, not yet confirmed by a second" }
            li { b { "+12 ~" } " not solved to the end within the depth or time limit, so never compared" }
            li { b { "skipped" } " the game the position came from ended before its bag emptied" }
        }
        table #positions {
            tr { th { "#" } th { "value" } th { "best" } th { "sequence" } th { "nodes" } th { "time" } th { "solves" } }
            @for p in positions.iter().take(1000) {
                (position_row(p))
            }
        }
        p.meta {
            "Open a position's number for its CGP, to paste into " code { "worker endgame --cgp" } "."
        }
        (contributors(d, "positions"))
        p.meta {
            "JSON: " a href={ "/api/v1/experiments/" (s.id) } { "/api/v1/experiments/" (s.id) } ", "
            a href={ "/api/v1/experiments/" (s.id) "/endgames" } { "endgames" }
            " · CSV: " a href={ "/api/v1/experiments/" (s.id) "/endgames.csv" } { "solutions" } ", "
            a href={ "/api/v1/experiments/" (s.id) "/contributors.csv" } { "contributors" }
        }
    };
    frame(&s.name, live(&s.status), body)
}

fn verdict_word(v: endgames::Verdict) -> &'static str {
    match v {
        endgames::Verdict::Agrees => "agrees",
        endgames::Verdict::Disagrees => "disagrees",
        endgames::Verdict::Unverified => "unverified",
        endgames::Verdict::Pending => "unconfirmed",
    }
}

/// One position: its agreed value (or what is known short of one), the line, and who agreed,
/// disagreed or could not be checked.
fn position_row(p: &PositionView) -> Markup {
    let r = p.shown;
    let state = match (p.agreed, p.disagreed.is_empty()) {
        (Some(_), _) => "agreed",
        (None, false) => "disputed",
        (None, true) if p.unverified.len() == p.solves => "unverified",
        (None, true) => "unconfirmed",
    };
    let value = match p.agreed {
        Some(Outcome::Skipped) => "skipped".to_string(),
        Some(Outcome::Value(v)) => format!("{v:+}"),
        None if r.skipped => "skipped?".into(),
        None => format!("{:+}{}", r.value, if r.exact { "?" } else { " ~" }),
    };
    html! {
        tr.position data-index=(p.index) data-state=(state) data-value=[p.agreed.and_then(|a| match a { Outcome::Value(v) => Some(v), Outcome::Skipped => None })] {
            td.index { details { summary { (p.index) } code.cgp { (r.cgp) } } }
            td.value { (value) }
            @if r.skipped {
                td colspan="4" { "skipped: that game ended before its bag emptied" }
            } @else {
                td { (r.best) } td { small { (r.sequence) } } td { (r.nodes) } td { (format!("{:.3} s", r.ms as f64 / 1000.0)) }
            }
            td.solves {
                @match state {
                    "agreed" => { "agreed by " (p.agreed_by.join(", ")) }
                    "disputed" => { span.status.failed { "disputed" } }
                    "unverified" => { "unverified (depth or time limit)" }
                    _ => { @if p.solves == 1 { "one solve, not cross-checked" } @else { "unconfirmed" } }
                }
                @if !p.disagreed.is_empty() { "; " span.disagreed { "disagreed: " (p.disagreed.join(", ")) } }
                @if !p.unverified.is_empty() && state != "unverified" { "; unverified: " (p.unverified.join(", ")) }
            }
        }
    }
}
