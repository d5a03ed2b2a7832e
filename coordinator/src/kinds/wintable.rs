//! `wintable`: the job is a range of static-vs-static games; every game of an upload is
//! re-played and its counts must be exactly its positions'; a result is judged against
//! replicas; when the cell finishes, the table is fitted from every counted batch and stored
//! as a `winpct` artifact; the page plots it.

use super::{Batch, Headline, Served, Tx, Upload};
use crate::dashboard::{live, page as frame, plots, progress, rate};
use crate::error::{Error, Result};
use crate::experiments::{self, CellView, Detail};
use crate::ledger;
use crate::results::{Settled, settle_replicated};
use crate::state::AppState;
use crate::verify::{StaticSelfPlay, Texts, check_wintable};
use axum::response::Html;
use engine::winpct::WinSamples;
use maud::html;
use shared::experiment::ExperimentSpec;
use shared::kinds::wintable::{WinCounts, Wintable, WintableJob, WintableSpec};
use shared::kinds::{ExperimentKind, JobResult};
use shared::protocol::ArtifactRef;
use sqlx::PgConnection;
use sqlx::types::Json as Db;
use uuid::Uuid;

impl Served for Wintable {
    const REPLICATED: bool = true;
    const LOGS_GAMES: bool = true;

    fn job(seed: u64, _: &WintableSpec, b: &Batch) -> Result<WintableJob> {
        Ok(WintableJob { seed, first_pair: b.first_unit as u64, pairs: b.units as u64 })
    }

    async fn verify(
        st: &AppState,
        b: &Batch,
        _: &WintableSpec,
        counts: WinCounts,
        logs: Texts,
    ) -> Result<std::result::Result<(), String>> {
        let rules = st.rules.get(&st.db, &b.artifacts).await?;
        let w = StaticSelfPlay { seed: b.spec.seed, first_pair: b.first_unit as u64, pairs: b.units as u64 };
        tokio::task::spawn_blocking(move || check_wintable(&rules, &w, &logs, &counts))
            .await
            .map_err(|e| Error::internal(e.to_string()))
    }

    async fn check(db: &mut PgConnection, b: &Batch, w: &WinCounts) -> Result<()> {
        if w.games != 2 * b.units as u64 {
            return Err(Error::unprocessable(format!(
                "result.games: {} games; the batch has {}",
                w.games,
                2 * b.units
            )));
        }
        let dist = crate::artifacts::distribution(db, &b.artifacts).await?;
        WinSamples::new(&dist)
            .add_counts(&w.counts)
            .map_err(|e| Error::unprocessable(format!("result.counts: {e}")))?;
        Ok(())
    }

    fn replicable(counts: &WinCounts) -> WinCounts {
        counts.clone()
    }

    async fn settle(tx: &mut Tx<'_>, up: &Upload<'_>, _: &WintableSpec, _: &WinCounts) -> Result<Settled> {
        settle_replicated(tx, up).await
    }

    async fn cell_finished(tx: &mut Tx<'_>, _: &WintableSpec, experiment: Uuid, _: Uuid) -> Result<Option<String>> {
        let sha = fit(tx, experiment).await?;
        Ok(Some(format!("the experiment's table is artifact {sha}")))
    }

    async fn page(st: &AppState, d: &Detail, spec: &WintableSpec) -> Result<Html<String>> {
        page(st, d, spec).await
    }

    /// A win table's result is the table it fits, not a line.
    fn headline(_: &WintableSpec, _: &[CellView]) -> Headline {
        Headline::default()
    }
}

/// Sum every batch's counts of a wintable experiment, fit the table, and store it as a
/// `winpct` artifact (not the default: a researcher makes it one with `coordinator artifact`).
async fn fit(tx: &mut Tx<'_>, experiment: Uuid) -> Result<String> {
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

/// A wintable experiment: progress, throughput, and once fitted the table itself, plotted as
/// P(win) against spread for a few counts of unseen tiles, with a link to the artifact.
async fn page(st: &AppState, d: &Detail, w: &WintableSpec) -> Result<Html<String>> {
    let s = &d.summary;
    let h = experiments::history(&st.db, s.id, &d.spec.kind).await?;
    let table = match &d.output_sha256 {
        Some(sha) => {
            let (bytes,): (Vec<u8>,) =
                sqlx::query_as("SELECT bytes FROM artifacts WHERE sha256 = $1").bind(sha).fetch_one(&st.db).await?;
            let table = engine::winpct::WinTable::parse(&String::from_utf8_lossy(&bytes), sha)
                .map_err(|e| crate::error::Error::internal(e.to_string()))?;
            Some((sha, table))
        }
        None => None,
    };
    let body = html! {
        p.meta {
            span class={ "status " (s.status) } #status { (s.status) }
            " wintable: " (w.games) " static-vs-static games, seed " (d.spec.seed) ", every position counted by tiles unseen and spread"
        }
        p #progress { (progress(s.games, s.target_games)) " games · " (rate(s.games_per_hour, "games")) }
        (crate::dashboard::waits(d))
        @if !h.games.is_empty() {
            h2 { "Throughput" }
            (plots::throughput(&h, "games"))
        }
        @if let Some((sha, table)) = &table {
            h2 { "The fitted table" }
            p {
                "Artifact " a #table href={ "/api/v1/artifacts/" (sha) } { (sha) } " (role " code { "winpct" } "; pin it in an experiment's "
                code { "[artifacts]" } ", or make it the default with " code { "coordinator artifact --role winpct --default" } ")."
            }
            (plots::wintable(table))
        }
    };
    Ok(frame(&s.name, live(&s.status), body))
}
