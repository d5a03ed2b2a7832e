//! `leaves`: a self-play cell's upload is re-played game by game and its leave counts made
//! again with the table its games played with; a rating cell's is a match's (`super::matches`).
//! Both are judged against replicas. When a generation's self-play cell finishes, the
//! coordinator fits its table from every counted batch (`engine::leavegen`, the fit of
//! `worker leaves generate`), stores it as a `leaves` artifact, records the generation, and
//! starts the cells that wait for it: the next generation's self-play and this table's rating,
//! each playing with it (`cells.inputs`). All of it happens in the transaction that counts the
//! last batch, so a run resumes exactly where it was after a restart.

use super::{Batch, Headline, Served, Tx, Upload, matches};
use crate::dashboard::{
    batch_counts, contributors, live, page as frame, pct, plots, progress, rate, status, thousands, waits,
};
use crate::error::{Error, Result};
use crate::experiments::{self, CellView, Detail};
use crate::ledger;
use crate::results::{Settled, settle_replicated};
use crate::state::AppState;
use crate::verify::{StaticSelfPlay, Texts, check_leaves};
use axum::response::Html;
use engine::leavegen::Samples;
use engine::leaves::Klv;
use maud::{Markup, html};
use shared::kinds::leaves::{
    LeaveCounts, Leaves, LeavesJob, LeavesResult, LeavesSpec, Part, RATED, SelfPlayJob, Start,
};
use shared::kinds::{ExperimentKind, JobResult};
use shared::protocol::ArtifactRef;
use sqlx::PgConnection;
use sqlx::types::Json as Db;
use uuid::Uuid;

/// Leaves whose values by generation the page shows: the ones players talk about.
const WELL_KNOWN: [&str; 10] = ["?", "S", "Z", "X", "Q", "QU", "ERS", "?S", "V", "UU"];

impl Served for Leaves {
    const REPLICATED: bool = true;
    const LOGS_GAMES: bool = true;

    fn job(seed: u64, spec: &LeavesSpec, b: &Batch) -> Result<LeavesJob> {
        Ok(match part(spec, b)? {
            Part::Play(g) => LeavesJob::Play(SelfPlayJob {
                seed: LeavesSpec::play_seed(seed, g),
                first_pair: b.first_unit as u64,
                pairs: b.units as u64,
            }),
            Part::Rate(_) => LeavesJob::Rate(matches::job(seed, b)?),
        })
    }

    async fn verify(
        st: &AppState,
        b: &Batch,
        spec: &LeavesSpec,
        result: LeavesResult,
        logs: Texts,
    ) -> Result<std::result::Result<(), String>> {
        match (part(spec, b)?, result) {
            (Part::Play(g), LeavesResult::Play(counts)) => {
                let rules = st.rules.get(&st.db, &b.artifacts).await?;
                let table = table_of(&st.db, &b.artifacts).await?;
                let games = StaticSelfPlay {
                    seed: LeavesSpec::play_seed(b.spec.seed, g),
                    first_pair: b.first_unit as u64,
                    pairs: b.units as u64,
                };
                tokio::task::spawn_blocking(move || check_leaves(&rules, &games, table.as_ref(), &logs, &counts))
                    .await
                    .map_err(|e| Error::internal(e.to_string()))
            }
            (Part::Rate(_), LeavesResult::Rate(tally)) => matches::verify(st, b, b.spec.seed, tally, logs, true).await,
            (p, _) => Ok(Err(wrong_part(p))),
        }
    }

    async fn check(db: &mut PgConnection, b: &Batch, result: &LeavesResult) -> Result<()> {
        let ExperimentKind::Leaves(spec) = &b.spec.kind else {
            return Err(Error::internal(format!("batch {} is not of a leaves experiment", b.id)));
        };
        match (part(spec, b)?, result) {
            (Part::Play(_), LeavesResult::Play(c)) => {
                if c.games != 2 * b.units as u64 {
                    return Err(Error::unprocessable(format!(
                        "result.games: {} games; the batch has {}",
                        c.games,
                        2 * b.units
                    )));
                }
                let dist = crate::artifacts::distribution(db, &b.artifacts).await?;
                Samples::check_counts(&c.leaves, &dist).map_err(|e| Error::unprocessable(format!("result.leaves: {e}")))
            }
            (Part::Rate(_), LeavesResult::Rate(t)) => matches::check(b, t, true),
            (p, _) => Err(Error::unprocessable(wrong_part(p))),
        }
    }

    fn replicable(result: &LeavesResult) -> LeavesResult {
        match result {
            LeavesResult::Play(c) => LeavesResult::Play(c.clone()),
            LeavesResult::Rate(t) => LeavesResult::Rate(matches::replicable(t)),
        }
    }

    async fn settle(tx: &mut Tx<'_>, up: &Upload<'_>, _: &LeavesSpec, _: &LeavesResult) -> Result<Settled> {
        settle_replicated(tx, up).await
    }

    async fn cell_finished(tx: &mut Tx<'_>, spec: &LeavesSpec, experiment: Uuid, cell: Uuid) -> Result<Option<String>> {
        let (index,): (i32,) =
            sqlx::query_as("SELECT idx FROM cells WHERE id = $1").bind(cell).fetch_one(&mut **tx).await?;
        match spec.part(index as u32) {
            Some(Part::Play(g)) => fit(tx, spec, experiment, cell, g).await.map(Some),
            Some(Part::Rate(_)) | None => Ok(None),
        }
    }

    async fn page(st: &AppState, d: &Detail, spec: &LeavesSpec) -> Result<Html<String>> {
        page(st, d, spec).await
    }

    /// The latest rated generation's strength against greedy.
    fn headline(spec: &LeavesSpec, cells: &[CellView]) -> Headline {
        let rated = cells
            .iter()
            .filter(|c| c.win_rate.is_some() && c.caveat.is_none())
            .filter_map(|c| match spec.part(c.index as u32) {
                Some(Part::Rate(g)) => Some((g, c)),
                _ => None,
            })
            .max_by_key(|(g, _)| *g);
        let result = rated.map(|(g, c)| format!("generation {g}: {} against greedy", Headline::rate_text(c)));
        Headline { result, ..Headline::default() }
    }
}

/// Which part of its generation a batch's cell is.
fn part(spec: &LeavesSpec, b: &Batch) -> Result<Part> {
    spec.part(b.cell_index as u32)
        .ok_or_else(|| Error::internal(format!("cell {} of a leaves run has no part", b.cell_index)))
}

fn wrong_part(p: Part) -> String {
    let want = match p {
        Part::Play(_) => "play",
        Part::Rate(_) => "rate",
    };
    format!("result.part: this batch's cell is a `{want}` cell; nothing was recorded")
}

/// The leave table a batch plays with, if it has one.
async fn table_of(db: &sqlx::PgPool, artifacts: &[ArtifactRef]) -> Result<Option<Klv>> {
    let Some(a) = artifacts.iter().find(|a| a.role == "leaves") else { return Ok(None) };
    let (bytes,): (Vec<u8>,) =
        sqlx::query_as("SELECT bytes FROM artifacts WHERE sha256 = $1").bind(&a.sha256).fetch_one(db).await?;
    let name = a.name.clone();
    let klv = tokio::task::spawn_blocking(move || Klv::from_bytes(&bytes, &name))
        .await
        .map_err(|e| Error::internal(e.to_string()))?
        .map_err(|e| Error::internal(format!("a run's leave table does not load: {e}")))?;
    Ok(Some(klv))
}

/// Fit generation `g`'s table from its self-play cell's counted batches, store it, record the
/// generation, and start the cells that wait for it. Returns what to tell the worker.
async fn fit(tx: &mut Tx<'_>, spec: &LeavesSpec, experiment: Uuid, cell: Uuid, g: u32) -> Result<String> {
    let (name, Db(artifacts)): (String, Db<Vec<ArtifactRef>>) =
        sqlx::query_as("SELECT name, artifacts FROM experiments WHERE id = $1")
            .bind(experiment)
            .fetch_one(&mut **tx)
            .await?;
    let dist = crate::artifacts::distribution(&mut **tx, &artifacts).await?;
    let results: Vec<ledger::RecordedBatch> =
        sqlx::query_as(ledger::counted_results!("r.cell_id = $1")).bind(cell).fetch_all(&mut **tx).await?;
    let counts: Vec<LeaveCounts> = results
        .into_iter()
        .filter_map(|r| match r.result.0 {
            JobResult::Leaves(LeavesResult::Play(c)) => Some(c),
            _ => None,
        })
        .collect();
    let games: u64 = counts.iter().map(|c| c.games).sum();
    let fitted = tokio::task::spawn_blocking(move || -> std::result::Result<(Klv, u64), String> {
        let mut samples = Samples::new(&dist);
        for c in &counts {
            samples.add_counts(&c.leaves, &dist)?;
        }
        let klv = samples.fit(&dist).map_err(|e| e.to_string())?;
        Ok((klv, samples.count))
    })
    .await
    .map_err(|e| Error::internal(e.to_string()))?;
    let (klv, observed) = fitted.map_err(|e| Error::internal(format!("fitting generation {g}'s table: {e}")))?;
    let bytes = klv.to_bytes();
    let sha = crate::artifacts::sha256_hex(&bytes);
    let file = format!(
        "{}-generation-{g}.klv2",
        name.chars().filter(|c| c.is_ascii_alphanumeric() || *c == '-').collect::<String>()
    );
    sqlx::query("INSERT INTO artifacts (sha256, role, name, size, bytes) VALUES ($1, 'leaves', $2, $3, $4) ON CONFLICT (sha256) DO NOTHING")
        .bind(&sha)
        .bind(&file)
        .bind(bytes.len() as i64)
        .bind(&bytes)
        .execute(&mut **tx)
        .await?;
    let recorded = super::record_generation(tx, experiment, g, cell, super::Made::Artifact(&sha), games).await?;
    if !recorded {
        tracing::warn!(%experiment, generation = g, "generation already fitted; its table stays");
        return Ok(format!("generation {g} was fitted before; its table stays"));
    }
    let input = ArtifactRef { role: "leaves".into(), name: file, sha256: sha.clone(), size: bytes.len() as u64 };
    let mut next = Vec::new();
    if g + 1 < spec.generations {
        next.push(spec.play_cell(g + 1).index as i32);
    }
    if spec.rate_games > 0 {
        next.push(spec.rate_cell(g).index as i32);
    }
    sqlx::query(
        "UPDATE cells SET inputs = $3, status = 'running' WHERE experiment_id = $1 AND idx = ANY ($2) AND status = 'waiting'",
    )
    .bind(experiment)
    .bind(&next)
    .bind(Db(vec![input]))
    .execute(&mut **tx)
    .await?;
    if g + 1 == spec.generations {
        sqlx::query("UPDATE experiments SET output_sha256 = $2 WHERE id = $1")
            .bind(experiment)
            .bind(&sha)
            .execute(&mut **tx)
            .await?;
    }
    tracing::info!(%experiment, generation = g, %sha, games, observed, "leave table fitted");
    Ok(format!("generation {g}'s table is artifact {sha} ({observed} kept leaves from {games} games)"))
}

/// A generation as the page shows it: its table and its rating cell.
struct Row<'a> {
    generation: u32,
    play: Option<&'a CellView>,
    rate: Option<&'a CellView>,
    made: Option<&'a experiments::Generation>,
}

/// A leaves run: each generation's table with its strength against greedy, the values of
/// well-known leaves as the generations went, and the downloads.
async fn page(st: &AppState, d: &Detail, spec: &LeavesSpec) -> Result<Html<String>> {
    let s = &d.summary;
    let h = experiments::history(&st.db, s.id, None).await?;
    let cell = |i: u32| d.cells.iter().find(|c| c.index as u32 == i);
    let rows: Vec<Row> = (0..spec.generations)
        .map(|g| Row {
            generation: g,
            play: cell(spec.play_cell(g).index),
            rate: (spec.rate_games > 0).then(|| cell(spec.rate_cell(g).index)).flatten(),
            made: d.generations.iter().find(|m| m.generation == g),
        })
        .collect();
    let rated: Vec<&CellView> = rows.iter().filter_map(|r| r.rate.filter(|c| c.games > 0)).collect();
    let labels: Vec<plots::Label> = rows
        .iter()
        .filter(|r| r.rate.is_some_and(|c| c.games > 0))
        .map(|r| plots::Label { short: r.generation.to_string(), full: format!("generation {}", r.generation) })
        .collect();
    let values = leave_values(&st.db, s.id, &d.generations).await?;
    let body = html! {
        p.meta {
            span class={ "status " (s.status) } #status { (s.status) }
            " leaves: " (spec.generations) " generations of " (thousands(spec.games as f64)) " static self-play games, "
            @match spec.start { Start::None => "from no table", Start::Table => "from the experiment's leave table" }
            @if spec.rate_games > 0 { "; each table rated in " (thousands(spec.rate_games as f64)) " games of its static bot against greedy (paired deals, the same for every generation)" }
            "; seed " (d.spec.seed)
        }
        @if !d.spec.description.is_empty() { p { (d.spec.description) } }
        p #progress { (progress(s.games, s.target_games)) " games · " (rate(s.games_per_hour, "games")) " · " (batch_counts(d)) }
        (waits(d))
        @if !rated.is_empty() {
            h2 { "Strength by generation: win rate of " (RATED[0]) " against " (RATED[1]) ", with 95% intervals" }
            (plots::winrate(&rated.iter().map(|c| (*c).clone()).collect::<Vec<_>>(), &labels, "generation", RATED[0]))
        }
        h2 { "Generations" }
        table #generations {
            tr {
                th { "generation" } th { "self-play" } th { "table" }
                @if spec.rate_games > 0 { th { "against greedy" } th { "win rate" } th { "95% interval" } }
            }
            @for r in &rows {
                tr.generation data-generation=(r.generation) {
                    td { (r.generation) }
                    td { @if let Some(c) = r.play { (thousands(c.games as f64)) " / " (thousands(c.target_games as f64)) " " (status(&c.status)) } }
                    td.table { @match r.made {
                        Some(m) => { a href={ "/api/v1/artifacts/" (m.artifact) } { code { (&m.artifact[..12]) } } }
                        None => { "not yet fitted" }
                    } }
                    @if spec.rate_games > 0 {
                        @match r.rate {
                            Some(c) => {
                                td { (thousands(c.games as f64)) " / " (thousands(c.target_games as f64)) " " (status(&c.status)) }
                                td.winrate { (pct(c.win_rate)) }
                                td { (pct(c.ci_low)) " – " (pct(c.ci_high)) }
                            }
                            None => { td {} td {} td {} }
                        }
                    }
                }
            }
        }
        @if !values.is_empty() {
            h2 { "Values of well-known leaves, by generation (points)" }
            (leave_table(&values))
        }
        @if let Some(sha) = &d.output_sha256 {
            p #result {
                "The run's table: " a href={ "/api/v1/artifacts/" (sha) } { (sha) } " (role " code { "leaves" } "; pin it in an experiment's "
                code { "[artifacts]" } ", or make it the default with " code { "coordinator artifact --role leaves --default" } ")."
            }
        }
        @if !h.games.is_empty() {
            h2 { "Throughput" }
            (plots::throughput(&h, "games"))
        }
        (contributors(d, "games"))
        p.meta {
            "JSON: " a href={ "/api/v1/experiments/" (s.id) } { "/api/v1/experiments/" (s.id) }
            " · games: " a href={ "/api/v1/experiments/" (s.id) "/games.gcg.gz" } { "GCG (gzip)" }
        }
    };
    Ok(frame(&s.name, live(&s.status), body))
}

/// Each fitted generation's value of the well-known leaves (the last ten generations at most).
async fn leave_values(
    db: &sqlx::PgPool,
    experiment: Uuid,
    made: &[experiments::Generation],
) -> Result<Vec<(u32, Vec<f32>)>> {
    let (Db(artifacts),): (Db<Vec<ArtifactRef>>,) =
        sqlx::query_as("SELECT artifacts FROM experiments WHERE id = $1").bind(experiment).fetch_one(db).await?;
    let dist = crate::artifacts::distribution(db, &artifacts).await?;
    let mut out = Vec::new();
    for m in made.iter().rev().take(10).rev() {
        let (bytes,): (Vec<u8>,) =
            sqlx::query_as("SELECT bytes FROM artifacts WHERE sha256 = $1").bind(&m.artifact).fetch_one(db).await?;
        let Ok(klv) = Klv::from_bytes(&bytes, &m.artifact) else { continue };
        let values = WELL_KNOWN
            .iter()
            .map(|l| {
                dist.parse_rack(l).map_or(f32::NAN, |mut t| {
                    t.sort_unstable();
                    klv.value(&t)
                })
            })
            .collect();
        out.push((m.generation, values));
    }
    Ok(out)
}

fn leave_table(values: &[(u32, Vec<f32>)]) -> Markup {
    html! {
        table #leave-values {
            tr { th { "leave" } @for (g, _) in values { th { "gen " (g) } } }
            @for (i, leave) in WELL_KNOWN.iter().enumerate() {
                tr { td { code { (leave) } } @for (_, v) in values { td { (format!("{:+.1}", v[i])) } } }
            }
        }
    }
}
