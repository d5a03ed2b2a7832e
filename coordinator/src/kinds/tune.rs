//! `tune`: each cell is a match of a perturbed bot (SPSA) or a drawn point (CMA-ES) against
//! the reference (`super::matches`: its job, checks and verification, on its iteration's
//! deals), judged against replicas. When every cell of an iteration is counted, the transaction
//! that counted the last takes the step (`shared::kinds::tune`), records it in `generations`
//! (CMA-ES's state with it), and starts the next iteration's cells with the bots the new
//! parameters give, so a run resumes exactly after a restart.

use super::{Batch, Headline, Served, Tx, Upload, matches};
use crate::dashboard::{batch_counts, contributors, live, page as frame, plots, progress, rate, thousands, waits};
use crate::error::{Error, Result};
use crate::experiments::{self, CellView, Detail, Tuning};
use crate::results::{Settled, settle_replicated};
use crate::state::AppState;
use crate::verify::Texts;
use axum::response::Html;
use maud::html;
use shared::experiment::ExperimentSpec;
use shared::kinds::matches::MatchJob;
use shared::kinds::tune::{Method, Step, Tune, TuneSpec};
use shared::stats::MatchTally;
use sqlx::PgConnection;
use sqlx::types::Json as Db;
use uuid::Uuid;

impl Served for Tune {
    const REPLICATED: bool = true;
    const LOGS_GAMES: bool = true;

    fn job(seed: u64, spec: &TuneSpec, b: &Batch) -> Result<MatchJob> {
        matches::job(iteration_seed(seed, spec, b), b)
    }

    async fn verify(
        st: &AppState,
        b: &Batch,
        spec: &TuneSpec,
        tally: MatchTally,
        logs: Texts,
    ) -> Result<std::result::Result<(), String>> {
        matches::verify(st, b, iteration_seed(b.spec.seed, spec, b), tally, logs, true).await
    }

    async fn check(_: &mut PgConnection, b: &Batch, tally: &MatchTally) -> Result<()> {
        matches::check(b, tally, true)
    }

    fn replicable(tally: &MatchTally) -> MatchTally {
        matches::replicable(tally)
    }

    async fn settle(tx: &mut Tx<'_>, up: &Upload<'_>, _: &TuneSpec, _: &MatchTally) -> Result<Settled> {
        settle_replicated(tx, up).await
    }

    async fn cell_finished(tx: &mut Tx<'_>, spec: &TuneSpec, experiment: Uuid, cell: Uuid) -> Result<Option<String>> {
        let (index,): (i32,) =
            sqlx::query_as("SELECT idx FROM cells WHERE id = $1").bind(cell).fetch_one(&mut **tx).await?;
        step(tx, spec, experiment, cell, spec.iteration(index as u32)).await
    }

    async fn page(st: &AppState, d: &Detail, spec: &TuneSpec) -> Result<Html<String>> {
        page(st, d, spec).await
    }

    /// A tuning run's result is its parameters (`tuning`), which its cells do not hold.
    fn headline(_: &TuneSpec, _: &[CellView]) -> Headline {
        Headline::default()
    }

    fn tuning(spec: &TuneSpec, history: Vec<Step>) -> Option<Tuning> {
        let now = history.last().map_or_else(|| spec.params.iter().map(|p| p.start).collect(), |s| s.next.clone());
        let params = spec.params.iter().zip(now).map(|(p, v)| (p.name.clone(), v)).collect();
        Some(Tuning { params, history })
    }
}

/// The deals of the batch's iteration.
fn iteration_seed(seed: u64, spec: &TuneSpec, b: &Batch) -> u64 {
    TuneSpec::iteration_seed(seed, spec.iteration(b.cell_index as u32))
}

/// A side's score against the reference: wins and half the draws, a fraction of its games.
fn score(t: &MatchTally) -> f64 {
    (t.wins as f64 + t.draws as f64 / 2.0) / t.games.max(1) as f64
}

/// Iteration `k`'s step, once all its cells are counted; the next iteration's cells started.
/// Two transactions that finish an iteration's last cells take turns (`settle_experiment`'s
/// lock, taken before this), so the last sees the others finished and steps, once.
async fn step(tx: &mut Tx<'_>, spec: &TuneSpec, experiment: Uuid, cell: Uuid, k: u32) -> Result<Option<String>> {
    let width = spec.method.width() as i32;
    let cells: Vec<(String, Db<MatchTally>)> = sqlx::query_as(
        "SELECT status, tally FROM cells WHERE experiment_id = $1 AND idx >= $2 AND idx < $2 + $3 ORDER BY idx",
    )
    .bind(experiment)
    .bind(width * k as i32)
    .bind(width)
    .fetch_all(&mut **tx)
    .await?;
    if cells.len() != width as usize {
        return Err(Error::internal(format!("iteration {k} of tuning run {experiment} has not {width} cells")));
    }
    if cells.iter().any(|(status, _)| status != "finished") {
        return Ok(None);
    }
    let scores: Vec<f64> = cells.iter().map(|(_, t)| score(t)).collect();
    let games = cells.iter().map(|(_, t)| t.games).sum();
    let (Db(e),): (Db<ExperimentSpec>,) =
        sqlx::query_as("SELECT spec FROM experiments WHERE id = $1").bind(experiment).fetch_one(&mut **tx).await?;
    let before: Option<Step> = match k {
        0 => None,
        _ => {
            let (Db(s),): (Db<Step>,) =
                sqlx::query_as("SELECT step FROM generations WHERE experiment_id = $1 AND generation = $2")
                    .bind(experiment)
                    .bind(k as i32 - 1)
                    .fetch_one(&mut **tx)
                    .await?;
            Some(s)
        }
    };
    let s = match spec.method {
        Method::Spsa => {
            let theta = before.map_or_else(|| spec.params.iter().map(|p| p.start).collect(), |b| b.next);
            spec.step(e.seed, k, &theta, scores[0], scores[1])
        }
        Method::Cmaes { population } => {
            let state = match before {
                Some(b) => b.cma.ok_or_else(|| Error::internal(format!("iteration {} kept no CMA-ES state", k - 1)))?,
                None => spec.cma_start(population),
            };
            spec.cma_step(e.seed, k, &state, &scores)
        }
    };
    let recorded = super::record_generation(tx, experiment, k, cell, super::Made::Step(&s), games).await?;
    if !recorded {
        return Ok(Some(format!("iteration {k} stepped before; its step stays")));
    }
    let spelled: Vec<String> =
        spec.params.iter().zip(&s.next).map(|(p, v)| format!("{}={}", p.name, p.spell(*v))).collect();
    if k + 1 < spec.iterations {
        let bots: Vec<String> = match &s.cma {
            None => spec.perturbed(e.seed, k + 1, &s.next).map_err(Error::internal)?.into(),
            Some(state) => spec
                .points(e.seed, k + 1, state)
                .iter()
                .map(|p| spec.bot_at(p))
                .collect::<std::result::Result<_, _>>()
                .map_err(Error::internal)?,
        };
        for (i, bot) in bots.into_iter().enumerate() {
            sqlx::query(
                "UPDATE cells SET bots = $3, status = 'running' WHERE experiment_id = $1 AND idx = $2 AND status = 'waiting'",
            )
            .bind(experiment)
            .bind(width * (k as i32 + 1) + i as i32)
            .bind(Db([bot, spec.against.clone()]))
            .execute(&mut **tx)
            .await?;
        }
    }
    tracing::info!(%experiment, iteration = k, params = %spelled.join(","), "tuning step");
    Ok(Some(format!("iteration {k} stepped to {}", spelled.join(", "))))
}

/// A tuning run: each parameter's path with the perturbations tried, the score of the
/// perturbed bots against the reference by iteration, and every step.
async fn page(st: &AppState, d: &Detail, spec: &TuneSpec) -> Result<Html<String>> {
    let s = &d.summary;
    let h = experiments::history(&st.db, s.id, &d.spec.kind).await?;
    let steps = d.tuning.as_ref().map_or(&[][..], |t| &t.history[..]);
    let now = d.tuning.as_ref().map(|t| &t.params);
    let objective: Vec<(f64, f64, f64)> = steps
        .iter()
        .map(|st| {
            let n = st.tried.len().max(2);
            let p = match st.tried.is_empty() {
                true => (st.score_plus + st.score_minus) / 2.0,
                false => st.tried.iter().map(|t| t.score).sum::<f64>() / n as f64,
            };
            (st.iteration as f64, p, 1.96 * (p * (1.0 - p) / (n as u64 * spec.games) as f64).sqrt())
        })
        .collect();
    let body = html! {
        p.meta {
            span class={ "status " (s.status) } #status { (s.status) }
            @match spec.method {
                Method::Spsa => {
                    " tune (SPSA): " b { (spec.bot) } " against " b { (spec.against) } ", " (spec.iterations) " iterations of 2 x "
                    (thousands(spec.games as f64)) " games (the two perturbed bots, on the same paired deals, new ones each iteration); seed " (d.spec.seed)
                }
                Method::Cmaes { population } => {
                    " tune (CMA-ES): " b { (spec.bot) } " against " b { (spec.against) } ", " (spec.iterations) " iterations of " (population) " x "
                    (thousands(spec.games as f64)) " games (each point drawn around the mean, on the same paired deals, new ones each iteration); seed " (d.spec.seed)
                }
            }
        }
        @if !d.spec.description.is_empty() { p { (d.spec.description) } }
        p #progress { (progress(s.games, s.target_games)) " games · " (rate(s.games_per_hour, "games")) " · " (batch_counts(d)) }
        (waits(d))
        h2 { "Parameters" }
        table #params {
            tr { th { "parameter" } th { "start" } th { "bounds" } th { (if spec.method == Method::Spsa { "perturbation c" } else { "first spread c" }) } th { "now" } }
            @for p in &spec.params {
                tr {
                    td { code { (p.name) } } td { (p.spell(p.start)) } td { "[" (p.min) ", " (p.max) "]" } td { (p.c) }
                    td.value { (now.and_then(|n| n.get(&p.name)).map_or(String::new(), |v| p.spell(*v))) }
                }
            }
        }
        @for (i, p) in spec.params.iter().enumerate() {
            @if !steps.is_empty() {
                @let path: Vec<(f64, f64, f64)> = steps.iter().map(|st| (st.iteration as f64, st.theta[i], st.c[i]))
                    .chain(steps.last().map(|st| ((st.iteration + 1) as f64, st.next[i], 0.0))).collect();
                h2 { code { (p.name) } " by iteration, with " @match spec.method {
                    Method::Spsa => "the perturbations tried (the band: ± c)",
                    Method::Cmaes { .. } => "the search's spread (the band: ± one standard deviation)",
                } }
                (plots::trajectory(&format!("param-{i}"), &p.name, &path, (p.min, p.max)))
            }
        }
        @if !objective.is_empty() {
            h2 { "Score of the " (if spec.method == Method::Spsa { "perturbed bots" } else { "points" }) " against " (spec.against) " (mean of the iteration's, with 95% intervals)" }
            (plots::trajectory("objective", "score", &objective, (0.0, 1.0)))
        }
        h2 { "Steps" }
        table #steps {
            @if spec.method == Method::Spsa {
                tr { th { "iteration" } th { "before" } th { "score +" } th { "score −" } th { "after" } }
            } @else {
                tr { th { "iteration" } th { "mean before" } th { "best score" } th { "worst score" } th { "mean after" } }
            }
            @for st in steps {
                tr.step data-iteration=(st.iteration) {
                    td { (st.iteration) }
                    td { (spell(spec, &st.theta)) }
                    td { (format!("{:.1}%", 100.0 * st.score_plus)) }
                    td { (format!("{:.1}%", 100.0 * st.score_minus)) }
                    td { (spell(spec, &st.next)) }
                }
            }
        }
        @if !h.games.is_empty() {
            h2 { "Throughput" }
            (plots::throughput(&h, "games"))
        }
        (contributors(d, "games"))
        p.meta {
            "JSON: " a href={ "/api/v1/experiments/" (s.id) } { "/api/v1/experiments/" (s.id) } " (" code { "tuning" } ": the parameters and every step)"
        }
    };
    Ok(frame(&s.name, live(&s.status), body))
}

fn spell(spec: &TuneSpec, theta: &[f64]) -> String {
    spec.params.iter().zip(theta).map(|(p, v)| format!("{}={}", p.name, p.spell(*v))).collect::<Vec<_>>().join(", ")
}
