//! `leaves`: a self-play cell's upload is re-played game by game and its leave counts made
//! again with the table its games played with; a rating or gate cell's is a match's
//! (`super::matches`). All are judged against replicas. When a generation's self-play cell
//! finishes, the coordinator fits its table from every counted batch (`engine::leavegen`, the
//! fit of `worker leaves generate`), stores it as a `leaves` artifact, records the generation,
//! and starts the cells that wait for it: its ratings (against greedy with it as the match's
//! table; against the first table as a duel of two `static:leaves=SHA256` bots), and either its
//! gate (a duel with the table the run holds, under the run's SPRT) or, ungated, the next
//! generation's self-play with it (`cells.inputs`). A gate's verdict picks the table the run
//! goes on with and starts the next self-play. All of it happens in the transaction that
//! counts the last batch, so a run resumes exactly where it was after a restart.

use super::{Batch, Headline, Served, Tx, Upload, matches};
use crate::dashboard::{
    batch_counts, contributors, live, page as frame, pct, plots, progress, rate, status, thousands, waits,
};
use crate::error::{Error, Result};
use crate::experiments::{self, CellView, Detail, sprt_reason};
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
use shared::protocol::{ArtifactRef, BOT_LEAVES};
use shared::stats::{MatchTally, SprtDecision};
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
            Part::Rate(_) | Part::First(_) | Part::Gate(_) => LeavesJob::Rate(matches::job(seed, b)?),
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
            (p, LeavesResult::Rate(tally)) if is_match(p) => {
                matches::verify(st, b, b.spec.seed, tally, logs, true).await
            }
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
            (p, LeavesResult::Rate(t)) if is_match(p) => matches::check(b, t, true),
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
            Some(Part::Gate(g)) => judge_gate(tx, spec, experiment, cell, g).await.map(Some),
            Some(Part::Rate(_) | Part::First(_)) | None => Ok(None),
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

/// Whether a part's cell plays a match (ratings and gates), reported as `rate` results.
fn is_match(p: Part) -> bool {
    !matches!(p, Part::Play(_))
}

fn wrong_part(p: Part) -> String {
    let want = if is_match(p) { "rate" } else { "play" };
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
    let made = ArtifactRef { role: "leaves".into(), name: file, sha256: sha.clone(), size: bytes.len() as u64 };
    if let Some(i) = spec.index(Part::Rate(g)) {
        start(tx, experiment, i, None, vec![made.clone()]).await?;
    }
    let first = match (spec.start, g) {
        (Start::Table, _) => Some(start_table(&artifacts)?),
        (Start::None, 0) => None,
        (Start::None, _) => Some(generation_table(tx, experiment, 0, Which::Made).await?),
    };
    if let (Some(i), Some(first)) = (spec.index(Part::First(g)), first) {
        start(tx, experiment, i, Some(LeavesSpec::duel(&sha, &first.sha256)), duel_inputs(&made, &first)).await?;
    }
    let held = match g {
        0 => (spec.start == Start::Table).then(|| start_table(&artifacts)).transpose()?,
        _ => Some(generation_table(tx, experiment, g - 1, Which::Kept).await?),
    };
    let gate = spec.index(Part::Gate(g));
    let said = format!("generation {g}'s table is artifact {sha} ({observed} kept leaves from {games} games)");
    tracing::info!(%experiment, generation = g, %sha, games, observed, "leave table fitted");
    match (gate, held) {
        (Some(i), Some(held)) if held.sha256 != sha => {
            record(tx, experiment, g, Record::GateAgainst, &held.sha256).await?;
            start(tx, experiment, i, Some(LeavesSpec::duel(&sha, &held.sha256)), duel_inputs(&made, &held)).await?;
            Ok(format!("{said}; its gate against the table the run holds starts"))
        }
        (gate, _) => {
            if let Some(i) = gate {
                // Fitted byte for byte as the table it would be held against: nothing to play.
                sqlx::query("UPDATE cells SET status = 'finished', stop_reason = $3 WHERE experiment_id = $1 AND idx = $2 AND status = 'waiting'")
                    .bind(experiment)
                    .bind(i as i32)
                    .bind("the new table is the one the run holds")
                    .execute(&mut **tx)
                    .await?;
            }
            keep(tx, spec, experiment, g, &made).await?;
            Ok(said)
        }
    }
}

/// Start a waiting cell with what it plays with: its bots where they name the tables, and its
/// own artifacts.
async fn start(
    tx: &mut Tx<'_>,
    experiment: Uuid,
    index: u32,
    bots: Option<[String; 2]>,
    inputs: Vec<ArtifactRef>,
) -> Result<()> {
    sqlx::query(
        "UPDATE cells SET inputs = $3, bots = coalesce($4, bots), status = 'running'
         WHERE experiment_id = $1 AND idx = $2 AND status = 'waiting'",
    )
    .bind(experiment)
    .bind(index as i32)
    .bind(Db(inputs))
    .bind(bots.map(Db))
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// A duel's two tables, as the batches carry them: each a bot's own.
fn duel_inputs(new: &ArtifactRef, old: &ArtifactRef) -> Vec<ArtifactRef> {
    [new, old].map(|a| ArtifactRef { role: BOT_LEAVES.into(), ..a.clone() }).into()
}

/// The table a run started from (`start = "table"`): the experiment's leaves artifact.
fn start_table(artifacts: &[ArtifactRef]) -> Result<ArtifactRef> {
    artifacts
        .iter()
        .find(|a| a.role == "leaves")
        .cloned()
        .ok_or_else(|| Error::internal("a leaves run from a table has no leaves artifact"))
}

/// Which of a generation's tables.
#[derive(Clone, Copy, Debug)]
enum Which {
    /// The one it fitted.
    Made,
    /// The one the run held after it.
    Kept,
}

/// Generation `g`'s table, made or kept.
async fn generation_table(tx: &mut Tx<'_>, experiment: Uuid, g: u32, which: Which) -> Result<ArtifactRef> {
    let sql = match which {
        Which::Made => "SELECT artifact FROM generations WHERE experiment_id = $1 AND generation = $2",
        Which::Kept => "SELECT kept FROM generations WHERE experiment_id = $1 AND generation = $2",
    };
    let (sha,): (Option<String>,) = sqlx::query_as(sql).bind(experiment).bind(g as i32).fetch_one(&mut **tx).await?;
    let sha = sha.ok_or_else(|| Error::internal(format!("generation {g} of a leaves run has no {which:?} table")))?;
    table_ref(tx, sha).await
}

/// A stored leave table, as batches name it.
async fn table_ref(tx: &mut Tx<'_>, sha256: String) -> Result<ArtifactRef> {
    let (name, size): (String, i64) =
        sqlx::query_as("SELECT name, size FROM artifacts WHERE sha256 = $1").bind(&sha256).fetch_one(&mut **tx).await?;
    Ok(ArtifactRef { role: "leaves".into(), name, sha256, size: size as u64 })
}

/// What a generation's gate and its outcome add to its row.
enum Record {
    GateAgainst,
    GateVerdict,
    Kept,
}

/// Record `value` in generation `g`'s row (one fixed statement per column).
async fn record(tx: &mut Tx<'_>, experiment: Uuid, g: u32, what: Record, value: &str) -> Result<()> {
    let sql = match what {
        Record::GateAgainst => "UPDATE generations SET gate_against = $3 WHERE experiment_id = $1 AND generation = $2",
        Record::GateVerdict => "UPDATE generations SET gate_verdict = $3 WHERE experiment_id = $1 AND generation = $2",
        Record::Kept => "UPDATE generations SET kept = $3 WHERE experiment_id = $1 AND generation = $2",
    };
    sqlx::query(sql).bind(experiment).bind(g as i32).bind(value).execute(&mut **tx).await?;
    Ok(())
}

/// Generation `g` ends holding `kept`: the next generation's self-play plays with it, and the
/// last generation's is the run's result.
async fn keep(tx: &mut Tx<'_>, spec: &LeavesSpec, experiment: Uuid, g: u32, kept: &ArtifactRef) -> Result<()> {
    record(tx, experiment, g, Record::Kept, &kept.sha256).await?;
    match spec.index(Part::Play(g + 1)) {
        Some(i) => start(tx, experiment, i, None, vec![ArtifactRef { role: "leaves".into(), ..kept.clone() }]).await,
        None => {
            sqlx::query("UPDATE experiments SET output_sha256 = $2 WHERE id = $1")
                .bind(experiment)
                .bind(&kept.sha256)
                .execute(&mut **tx)
                .await?;
            Ok(())
        }
    }
}

/// Generation `g`'s gate ended (a verdict, or its games ran out): the run keeps the new table
/// if the test says it is better, or, without a verdict, if it won more than half.
async fn judge_gate(tx: &mut Tx<'_>, spec: &LeavesSpec, experiment: Uuid, cell: Uuid, g: u32) -> Result<String> {
    let gate = spec.gate.ok_or_else(|| Error::internal("a gate cell of an ungated run"))?;
    let (Db(tally),): (Db<MatchTally>,) =
        sqlx::query_as("SELECT tally FROM cells WHERE id = $1").bind(cell).fetch_one(&mut **tx).await?;
    let (kept, against): (Option<String>, Option<String>) =
        sqlx::query_as("SELECT kept, gate_against FROM generations WHERE experiment_id = $1 AND generation = $2")
            .bind(experiment)
            .bind(g as i32)
            .fetch_one(&mut **tx)
            .await?;
    if kept.is_some() {
        return Ok(format!("generation {g}'s gate was judged before; its verdict stays"));
    }
    let against = against.ok_or_else(|| Error::internal(format!("generation {g}'s gate names no table")))?;
    let decision = gate.sprt.decide(&tally);
    let rate = tally.win_rate().unwrap_or(0.5);
    let (keep_new, why) = match decision {
        SprtDecision::AcceptH1 { .. } => (true, sprt_reason(&gate.sprt, decision).unwrap_or_default()),
        SprtDecision::AcceptH0 { .. } => (false, sprt_reason(&gate.sprt, decision).unwrap_or_default()),
        SprtDecision::Continue { llr } => (
            rate > 0.5,
            format!("no verdict in {} games (LLR {llr:.2}); the new table won {:.1}%", tally.games, 100.0 * rate),
        ),
    };
    let verdict =
        format!("{why}: the run {}", if keep_new { "goes on with the new table" } else { "keeps the table it held" });
    record(tx, experiment, g, Record::GateVerdict, &verdict).await?;
    let kept = match keep_new {
        true => generation_table(tx, experiment, g, Which::Made).await?,
        false => table_ref(tx, against).await?,
    };
    keep(tx, spec, experiment, g, &kept).await?;
    tracing::info!(%experiment, generation = g, kept = %kept.sha256, %verdict, "gate judged");
    Ok(format!("generation {g}'s gate: {verdict}"))
}

/// A generation as the page shows it: its table, its ratings and its gate.
struct Row<'a> {
    generation: u32,
    play: Option<&'a CellView>,
    rate: Option<&'a CellView>,
    first: Option<&'a CellView>,
    gate: Option<&'a CellView>,
    made: Option<&'a experiments::Generation>,
}

/// A strength plot of one kind of rating cell across the generations that have games.
fn strength<'a>(rows: &[Row<'a>], cell: impl Fn(&Row<'a>) -> Option<&'a CellView>, against: &str) -> Markup {
    let rated: Vec<(u32, CellView)> =
        rows.iter().filter_map(|r| cell(r).filter(|c| c.games > 0).map(|c| (r.generation, c.clone()))).collect();
    if rated.is_empty() {
        return html! {};
    }
    let labels: Vec<plots::Label> = rated
        .iter()
        .map(|(g, _)| plots::Label { short: g.to_string(), full: format!("generation {g} against {against}") })
        .collect();
    let cells: Vec<CellView> = rated.into_iter().map(|(_, c)| c).collect();
    html! {
        h2 { "Strength by generation: win rate of " (RATED[0]) " with the generation's table against " (against) ", with 95% intervals" }
        (plots::winrate(&cells, &labels, "generation", RATED[0]))
    }
}

/// A rating's cells: games, win rate, interval.
fn rating(c: Option<&CellView>) -> Markup {
    html! {
        @match c {
            Some(c) => {
                td { (thousands(c.games as f64)) " / " (thousands(c.target_games as f64)) " " (status(&c.status)) }
                td.winrate { (pct(c.win_rate)) }
                td { (pct(c.ci_low)) " – " (pct(c.ci_high)) }
            }
            None => { td {} td {} td {} }
        }
    }
}

fn short(sha: &str) -> Markup {
    html! { a href={ "/api/v1/artifacts/" (sha) } { code { (&sha[..12.min(sha.len())]) } } }
}

/// A leaves run: each generation's table with its strength against greedy and against the
/// first table, its gate, the values of well-known leaves as the generations went, and the
/// downloads.
async fn page(st: &AppState, d: &Detail, spec: &LeavesSpec) -> Result<Html<String>> {
    let s = &d.summary;
    let h = experiments::history(&st.db, s.id, &d.spec.kind).await?;
    let cell = |p: Part| spec.index(p).and_then(|i| d.cells.iter().find(|c| c.index as u32 == i));
    let rows: Vec<Row> = (0..spec.generations)
        .map(|g| Row {
            generation: g,
            play: cell(Part::Play(g)),
            rate: cell(Part::Rate(g)),
            first: cell(Part::First(g)),
            gate: cell(Part::Gate(g)),
            made: d.generations.iter().find(|m| m.generation == g),
        })
        .collect();
    let first_name = match spec.start {
        Start::Table => "the table it started from",
        Start::None => "generation 0's table",
    };
    let values = leave_values(&st.db, s.id, &d.generations).await?;
    let body = html! {
        p.meta {
            span class={ "status " (s.status) } #status { (s.status) }
            " leaves: " (spec.generations) " generations of " (thousands(spec.games as f64)) " static self-play games, "
            @match spec.start { Start::None => "from no table", Start::Table => "from the experiment's leave table" }
            @if spec.rate_games > 0 { "; each table rated in " (thousands(spec.rate_games as f64)) " games of its static bot against greedy and as many against " (first_name) " (paired deals, the same for every generation)" }
            @if let Some(gate) = &spec.gate {
                "; each new table gated: at most " (thousands(gate.games as f64)) " games against the table the run holds, SPRT p0 " (gate.sprt.p0) ", p1 " (gate.sprt.p1)
                " (alpha " (gate.sprt.alpha) ", beta " (gate.sprt.beta) "), and the run goes on with the better"
            }
            "; seed " (d.spec.seed)
        }
        @if !d.spec.description.is_empty() { p { (d.spec.description) } }
        p #progress { (progress(s.games, s.target_games)) " games · " (rate(s.games_per_hour, "games")) " · " (batch_counts(d)) }
        (waits(d))
        (strength(&rows, |r| r.rate, RATED[1]))
        (strength(&rows, |r| r.first, first_name))
        h2 { "Generations" }
        table #generations {
            tr {
                th { "generation" } th { "self-play" } th { "table" }
                @if spec.rate_games > 0 {
                    th { "against greedy" } th { "win rate" } th { "95% interval" }
                    th { "against the first" } th { "win rate" } th { "95% interval" }
                }
                @if spec.gate.is_some() { th { "gate" } th { "the run holds" } }
            }
            @for r in &rows {
                tr.generation data-generation=(r.generation) {
                    td { (r.generation) }
                    td { @if let Some(c) = r.play { (thousands(c.games as f64)) " / " (thousands(c.target_games as f64)) " " (status(&c.status)) } }
                    td.table { @match r.made {
                        Some(m) => { (short(&m.artifact)) }
                        None => { "not yet fitted" }
                    } }
                    @if spec.rate_games > 0 { (rating(r.rate)) (rating(r.first)) }
                    @if spec.gate.is_some() {
                        td.gate {
                            @match (r.gate, r.made.and_then(|m| m.gate.verdict.as_deref())) {
                                (_, Some(verdict)) => { (verdict) }
                                (Some(c), None) => { (thousands(c.games as f64)) " / " (thousands(c.target_games as f64)) " " (status(&c.status)) }
                                (None, None) => { "none" }
                            }
                        }
                        td.kept { @if let Some(k) = r.made.and_then(|m| m.kept.as_deref()) { (short(k)) } }
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
                code { "[artifacts]" } ", name it in a bot as " code { "static:leaves=" (sha) } ", or make it the default with "
                code { "coordinator artifact --role leaves --default" } ")."
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
