//! `match`: the job is a range of the cell's deal pairs; an upload's logs are re-played on
//! their deals and its tally must be what they say; a result is judged against replicas; the
//! page shows win rates with intervals, convergence, the SPRT, and the cells. Selfplay
//! (`super::selfplay`) shares all of it but the pairing.

use super::{Batch, Served, Tx, Upload};
use crate::dashboard::{
    batch_counts, cell_label, cell_progress, contributors, live, needs_text, page as frame, pct, plots, progress, rate,
    short_label, status, thousands, waits,
};
use crate::error::{Error, Result};
use crate::experiments::{self, Detail};
use crate::results::{Settled, settle_replicated};
use crate::state::AppState;
use crate::verify::{MatchBatch, Texts, check_match};
use axum::response::Html;
use maud::{Markup, html};
use shared::kinds::matches::{Match, MatchJob, MatchSpec};
use shared::stats::MatchTally;
use sqlx::PgConnection;
use uuid::Uuid;

impl Served for Match {
    const REPLICATED: bool = true;
    const LOGS_GAMES: bool = true;

    fn job(seed: u64, _: &MatchSpec, batch: &Batch) -> Result<MatchJob> {
        job(seed, batch)
    }

    async fn verify(
        st: &AppState,
        batch: &Batch,
        _: &MatchSpec,
        tally: MatchTally,
        logs: Texts,
    ) -> Result<std::result::Result<(), String>> {
        verify(st, batch, batch.spec.seed, tally, logs, true).await
    }

    async fn check(_: &mut PgConnection, batch: &Batch, tally: &MatchTally) -> Result<()> {
        check(batch, tally, true)
    }

    fn replicable(tally: &MatchTally) -> MatchTally {
        replicable(tally)
    }

    async fn settle(tx: &mut Tx<'_>, up: &Upload<'_>, _: &MatchSpec, _: &MatchTally) -> Result<Settled> {
        settle_replicated(tx, up).await
    }

    async fn cell_finished(_: &mut Tx<'_>, _: &Self::Spec, _: Uuid, _: Uuid) -> Result<Option<String>> {
        Ok(None)
    }

    async fn page(st: &AppState, d: &Detail, spec: &MatchSpec) -> Result<Html<String>> {
        page(st, d, spec, false).await
    }
}

/// A batch's pairs of the cell's deals, played by its bots (every cell plays the same deals,
/// so cells differ only by their bots).
pub fn job(seed: u64, b: &Batch) -> Result<MatchJob> {
    let [bot1, bot2] = b.bots()?;
    Ok(MatchJob { bot1, bot2, seed, first_pair: b.first_unit as u64, pairs: b.units as u64 })
}

/// Re-play the sampled games on their deals (those of the run seeded `seed`) and check the
/// tally against every game's log.
pub async fn verify(
    st: &AppState,
    b: &Batch,
    seed: u64,
    tally: MatchTally,
    logs: Texts,
    paired: bool,
) -> Result<std::result::Result<(), String>> {
    let rules = st.rules.get(&st.db, &b.artifacts).await?;
    let m = MatchBatch {
        batch: b.id,
        seed,
        first_pair: b.first_unit as u64,
        pairs: b.units as u64,
        bots: b.bots()?,
        paired,
    };
    let fraction = st.cfg.verify_fraction;
    tokio::task::spawn_blocking(move || check_match(&rules, &m, &logs, &tally, fraction))
        .await
        .map_err(|e| Error::internal(e.to_string()))
}

/// The tally's counts add up, and are of the batch's games.
pub fn check(b: &Batch, tally: &MatchTally, paired: bool) -> Result<()> {
    if !tally.is_consistent(paired) || tally.games != 2 * b.units as u64 {
        return Err(Error::unprocessable(format!(
            "result.games: {} games with inconsistent counts; the batch has {} games",
            tally.games,
            2 * b.units
        )));
    }
    Ok(())
}

/// All of a tally but the thinking times, which differ from machine to machine.
pub fn replicable(tally: &MatchTally) -> MatchTally {
    MatchTally { micros: [0; 2], ..*tally }
}

/// A match experiment: win rates with intervals per cell, convergence, the SPRT, win rate
/// against time, a heatmap for 2-D grids, and the cells table. A selfplay experiment's page is
/// the same (its games are a match's, each deal played once) with what its data amounts to.
pub async fn page(st: &AppState, d: &Detail, spec: &MatchSpec, selfplay: bool) -> Result<Html<String>> {
    let id = d.summary.id;
    let h = experiments::history(&st.db, id, &d.spec.kind).await?;
    let s = &d.summary;
    let labels: Vec<plots::Label> =
        d.cells.iter().map(|c| plots::Label { short: short_label(d, c), full: cell_label(d, c) }).collect();
    let axes_title = spec.axes.iter().map(|a| a.name.as_str()).collect::<Vec<_>>().join(", ");
    let bot1 = &spec.bots[0];
    let body = html! {
        p.meta {
            span class={ "status " (s.status) } #status { (s.status) }
            " " (s.kind) ": " b { (spec.bots[0]) } " vs " b { (spec.bots[1]) } ", " (thousands(spec.games_per_cell as f64)) " games per cell, seed " (d.spec.seed)
            @if let Some(p) = &spec.sprt { "; SPRT H0 p=" (p.p0) " vs H1 p=" (p.p1) " (alpha " (p.alpha) ", beta " (p.beta) ")" }
        }
        @if !d.spec.description.is_empty() { p { (d.spec.description) } }
        @if !d.needs.is_empty() { p #needs { (needs_text(&d.needs)) } }
        p #progress { (progress(s.games, s.target_games)) " games · " (rate(s.games_per_hour, "games")) " · " (batch_counts(d)) }
        (waits(d))
        @if selfplay { (training_data(d)) }
        h2 { "Win rate of " (bot1) ", with 95% intervals" }
        (plots::winrate(&d.cells, &labels, if axes_title.is_empty() { "cell" } else { &axes_title }, bot1))
        @if !h.games.is_empty() {
            h2 { "Convergence: each cell's win rate as its games came in" }
            (plots::convergence(&h, &labels, bot1))
            @if let (Some(p), Some(bounds)) = (&spec.sprt, d.cells.first().and_then(|c| c.sprt_bounds)) {
                h2 { "SPRT: each cell's log-likelihood ratio against its bounds" }
                (plots::sprt(&h, &labels, bounds, p.p0, p.p1))
            }
        }
        @if !spec.axes.is_empty() {
            @if let Some(chart) = plots::pareto(&d.cells, &labels, bot1, &h.ms_per_move) {
                h2 { "Win rate against time per move" }
                (chart)
            }
        }
        @if let [rows, cols] = &spec.axes[..] {
            h2 { "Heatmap" }
            (plots::heatmap(&d.cells, &labels, rows, cols))
        }
        @if !h.games.is_empty() {
            h2 { "Throughput" }
            (plots::throughput(&h, "games"))
        }
        h2 { "Cells" }
        table #cells {
            tr {
                th { "#" } th { "parameters" } th { "status" } th { "games" } th { "W-D-L" } th { "win rate" } th { "95% interval" }
                th { "mean score" br; small { "bot1 / bot2" } } th { "bingos/game" br; small { "bot1 / bot2" } }
                th { "points/turn" br; small { "bot1 / bot2" } } th { "ms/move" br; small { "bot1 / bot2" } }
                th { "first player wins" }
                @if spec.sprt.is_some() { th { "SPRT LLR" br; small { "[lower, upper bound]" } } }
                th { "why it stopped" }
            }
            @for c in &d.cells {
                tr.cell data-index=(c.index) data-evidence=(format!("{:?}", c.evidence).to_lowercase()) {
                    td { (c.index) }
                    td { (cell_label(d, c)) }
                    td { (status(&c.status)) }
                    td { (cell_progress(c)) }
                    td { (c.wins) "-" (c.draws) "-" (c.losses) }
                    @match c.caveat {
                        Some(caveat) => { td.winrate.caveat colspan="2" { (caveat) } }
                        None => {
                            td.winrate { (pct(c.win_rate)) }
                            td { (pct(c.ci_low)) " – " (pct(c.ci_high)) }
                        }
                    }
                    td { (format!("{:.1} / {:.1}", c.mean_score[0], c.mean_score[1])) }
                    td { (format!("{:.2} / {:.2}", c.mean_bingos[0], c.mean_bingos[1])) }
                    td { (format!("{:.1} / {:.1}", c.points_per_turn[0], c.points_per_turn[1])) }
                    td.ms { (format!("{:.1} / {:.1}", c.ms_per_move[0], c.ms_per_move[1])) }
                    td { (pct(c.first_player_rate)) }
                    @if let Some(bounds) = c.sprt_bounds { td.llr { (plots::llr_bar(c.sprt_llr, bounds)) } }
                    td.reason { (c.stop_reason.as_deref().unwrap_or("")) }
                }
            }
        }
        @if !d.parked.is_empty() {
            h2 { "Parked batches" }
            table #parked {
                tr { th { "batch" } th { "cell" } th { "failures" } th { "last error" } }
                @for p in &d.parked {
                    tr { td { (p.batch_id) } td { (p.cell_index) } td { (p.failures) } td { (p.error.as_deref().unwrap_or("")) } }
                }
            }
        }
        (contributors(d, "games"))
        p.meta {
            "JSON: " a href={ "/api/v1/experiments/" (id) } { "/api/v1/experiments/" (id) } ", "
            a href={ "/api/v1/experiments/" (id) "/history" } { "history" } ", "
            a href={ "/api/v1/experiments/" (id) "/batches" } { "batches" }
            " · CSV: " a href={ "/api/v1/experiments/" (id) "/cells.csv" } { "cells" } ", "
            a href={ "/api/v1/experiments/" (id) "/batches.csv" } { "batches" } ", "
            a href={ "/api/v1/experiments/" (id) "/contributors.csv" } { "contributors" }
            " · games: " a href={ "/api/v1/experiments/" (id) "/games.gcg.gz" } { "GCG (gzip)" }
        }
    };
    Ok(frame(&s.name, live(&s.status), body))
}

/// What a selfplay experiment's counted games amount to as training data, and how to get it.
fn training_data(d: &Detail) -> Markup {
    let turns: u64 = d.cells.iter().map(|c| c.tally.turns[0] + c.tally.turns[1]).sum();
    let games: u64 = d.cells.iter().map(|c| c.games).sum();
    html! {
        h2 { "Training data" }
        p #data {
            (thousands(turns as f64)) " positions (a training record each) in " (thousands(games as f64)) " counted games; their logs take "
            (format!("{:.1} MB", d.log_bytes as f64 / 1e6)) " compressed in the log store. "
            a href={ "/api/v1/experiments/" (d.summary.id) "/games.gcg.gz" } { "Download the games" }
            " (or " code { "coordinator export --experiment " (d.summary.id) } "), then "
            code { "worker cnn assemble games.gcg.gz --out frames.bin" } " (docs/CNN.md)."
        }
    }
}
