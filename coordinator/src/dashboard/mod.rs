//! The dashboards: HTML pages rendered on the server from the same views as the JSON API, with
//! inline SVG plots. They reload themselves every few seconds while anything runs.
//!
//! Pages are maud templates: markup checked at compile time, and every spliced value escaped
//! unless wrapped in `PreEscaped` (only the stylesheet is). Maud over askama because the plots
//! are computed geometry, which reads better as Rust next to its markup than split into
//! template files.

pub mod charts;
pub mod plots;

use crate::error::Result;
use crate::experiments::{self, CellView, Detail};
use crate::state::AppState;
use axum::extract::{Path, State};
use axum::response::Html;
pub use charts::thousands;
use maud::{DOCTYPE, Markup, PreEscaped, html};
use uuid::Uuid;

/// Seconds between automatic reloads of a page.
const REFRESH_SECS: u32 = 5;

const STYLE: &str = include_str!("../../../dashboards/style.css");

pub fn page(title: &str, refresh: bool, body: Markup) -> Html<String> {
    let markup = html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                @if refresh { meta http-equiv="refresh" content=(REFRESH_SECS); }
                title { (title) " · lexhive" }
                style { (PreEscaped(STYLE)) }
            }
            body {
                nav { a href="/" { "experiments" } " " a href="/workers" { "workers" } " " span.brand { "lexhive" } }
                main { h1 { (title) } (body) }
            }
        }
    };
    Html(markup.into_string())
}

pub fn live(status: &str) -> bool {
    status == "queued" || status == "running"
}

pub fn pct(x: Option<f64>) -> String {
    x.map_or("–".into(), shared::stats::pct)
}

pub fn status(s: &str) -> Markup {
    html! { span class={ "status " (s) } { (s) } }
}

pub fn progress(done: i64, target: i64) -> Markup {
    let f = if target > 0 { done as f64 / target as f64 } else { 0.0 };
    html! {
        div.bar title={ (done) " of " (target) } { div style={ "width:" (format!("{:.1}", 100.0 * f.min(1.0))) "%" } {} }
        " " (thousands(done as f64)) " / " (thousands(target as f64))
    }
}

/// A cell's progress; one that ended short of its target (an SPRT, a researcher) shows a full
/// bar and says how far it got.
pub fn cell_progress(c: &CellView) -> Markup {
    let (done, target) = (c.games as i64, c.target_games);
    if live(&c.status) || done >= target {
        return progress(done, target);
    }
    html! { (progress(done, done)) br; small { "ended early; target " (thousands(target as f64)) } }
}

/// A rate in the unit that reads best: `12.5 games/s`, `40 games/min`, `3.0 games/hour`.
pub fn rate(per_hour: f64, counted: &str) -> String {
    let per_s = per_hour / 3600.0;
    if per_hour <= 0.0 {
        "–".into()
    } else if per_s >= 1.0 {
        format!("{} {counted}/s", if per_s >= 100.0 { thousands(per_s) } else { format!("{per_s:.1}") })
    } else if per_s * 60.0 >= 1.0 {
        format!("{:.1} {counted}/min", per_s * 60.0)
    } else {
        format!("{per_hour:.1} {counted}/hour")
    }
}

fn ago(t: chrono::DateTime<chrono::Utc>) -> String {
    let s = (chrono::Utc::now() - t).num_seconds().max(0);
    match s {
        0..60 => format!("{s} s ago"),
        60..3600 => format!("{} min ago", s / 60),
        3600..86400 => format!("{} h ago", s / 3600),
        _ => format!("{} days ago", s / 86400),
    }
}

/// `/`: every experiment with its status, progress and rate.
pub async fn experiments(State(st): State<AppState>) -> Result<Html<String>> {
    let list = experiments::list(&st.db).await?;
    let body = html! {
        table #experiments {
            tr {
                th { "experiment" } th { "kind" } th { "status" } th { "cells" } th { "done" } th { "result" }
                th title="an SPRT's log-likelihood ratio, between its lower and upper bounds" { "LLR" }
                th { "rate" } th { "submitted" }
            }
            @for e in &list {
                tr.experiment data-id=(e.id) {
                    td { a href={ "/experiments/" (e.id) } { (e.name) } }
                    td { (e.kind) }
                    td { (status(&e.status)) }
                    td { (e.cells) }
                    td { (progress(e.games, e.target_games)) " " (e.counted) }
                    td.result { (e.headline.result.as_deref().unwrap_or("–")) }
                    td.llr { (llr_text(&e.headline)) }
                    td { (rate(e.games_per_hour, e.counted)) }
                    td { (ago(e.created_at)) }
                }
            }
        }
        @if list.is_empty() {
            p { "No experiments yet. Submit one with " code { "worker submit FILE --coordinator URL --token T" } "." }
        }
    };
    Ok(page("Experiments", list.iter().any(|e| live(&e.status)), body))
}

/// An SPRT's LLR between its bounds, e.g. `1.52 (-2.94, 2.94)`; a dash without one.
pub fn llr_text(h: &crate::kinds::Headline) -> String {
    match (h.llr, h.llr_bounds) {
        (Some(l), Some((lo, hi))) => format!("{l:.2} ({lo:.2}, {hi:.2})"),
        (Some(l), None) => format!("{l:.2}"),
        _ => "–".into(),
    }
}

/// `/experiments/{id}`: the page for the experiment's kind.
pub async fn experiment(State(st): State<AppState>, Path(id): Path<Uuid>) -> Result<Html<String>> {
    let d = experiments::detail(&st.db, id).await?;
    crate::kinds::page(&st, &d).await
}

pub fn batch_counts(d: &Detail) -> Markup {
    let n = |k: &str| d.batches.get(k).and_then(|v| v.as_i64()).unwrap_or(0);
    html! { "batches: " (n("done")) " done, " (n("leased")) " leased, " (n("queued")) " queued, " (n("parked")) " parked" }
}

/// Why queued work is not being played, where it waits for a worker of another owner.
pub fn waits(d: &Detail) -> Markup {
    html! {
        @if d.waiting_for_others > 0 {
            p.waits #waits {
                (d.waiting_for_others) " of the queued batches wait for a worker of another owner: a replica or a \
                 cross-check is never played by the owner whose work it checks, so the machines of one owner cannot \
                 finish them (the volunteers say so too)."
            }
        }
    }
}

pub fn contributors(d: &Detail, counted: &str) -> Markup {
    html! {
        @if !d.contributors.is_empty() {
            h2 { "Contributors" }
            table #contributors {
                tr { th { "worker" } th { (counted) } th { "batches" } }
                @for c in &d.contributors {
                    tr.contributor { td { (c.name) } td { (c.games) } td { (c.batches) } }
                }
            }
        }
    }
}

/// A value as a label: strings bare, numbers as JSON writes them.
pub fn value_text(v: &serde_json::Value) -> String {
    v.as_str().map_or_else(|| v.to_string(), str::to_string)
}

/// A cell's grid values, or its bots when there is no grid.
pub fn cell_label(d: &Detail, c: &CellView) -> String {
    if let (true, Some([a, b])) = (c.params.is_empty(), &c.bots) {
        return format!("{a} vs {b}");
    }
    d.spec
        .kind
        .axes()
        .iter()
        .map(|a| format!("{}={}", a.name, c.params.get(&a.name).map_or(String::new(), value_text)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A cell's grid values alone (the axis names are in the legend), or its number.
pub fn short_label(d: &Detail, c: &CellView) -> String {
    let axes = d.spec.kind.axes();
    if axes.is_empty() {
        return format!("#{}", c.index);
    }
    let l = axes.iter().map(|a| c.params.get(&a.name).map_or(String::new(), value_text)).collect::<Vec<_>>().join(", ");
    if l.len() > 18 { format!("#{}", c.index) } else { l }
}

/// Which workers an experiment's batches go to, in words.
pub fn needs_text(needs: &[String]) -> &'static str {
    if needs.iter().any(|n| n == shared::protocol::CUDA) {
        "Runs only on workers whose CNN inference runs on a GPU (see the workers page)."
    } else {
        "Runs only on workers with ONNX Runtime, for its CNN bot (see the workers page)."
    }
}

/// Where a worker's CNN inference runs, in a few words.
fn gpu_text(w: &crate::workers::WorkerView) -> String {
    let has = |c: &str| w.capabilities.iter().any(|x| x == c);
    let gpu = w.gpu_name.as_ref().map(|n| match w.gpu_memory_mb {
        Some(mb) => format!("{n} ({:.0} GiB)", mb as f64 / 1024.0),
        None => n.clone(),
    });
    match (has(shared::protocol::CUDA), has(shared::protocol::ONNX), gpu) {
        (true, _, Some(g)) => format!("{g}, CUDA"),
        (true, _, None) => "CUDA".into(),
        (false, true, Some(g)) => format!("{g}, not used (CNN on the CPU)"),
        (false, true, None) => "none (CNN on the CPU)".into(),
        (false, false, _) => "none (no CNN)".into(),
    }
}

/// `/workers`: every volunteer, when it was last seen, what it contributed.
pub async fn workers(State(st): State<AppState>) -> Result<Html<String>> {
    let list = crate::workers::list(&st.db).await?;
    let body = html! {
        table #workers {
            tr {
                th { "name" } th { "owner" } th { "threads" } th { "last seen" } th { "games" } th { "positions" } th { "batches" } th { "games/s" }
                th title="where its CNN bots' nets run: a GPU through CUDA, the CPU, or nowhere (no ONNX Runtime)" { "GPU" }
                th title="how its owner is trusted: named by the operator, earned against trusted replicas, or not yet (its results wait for a trusted replica)" { "trust" }
                th title="batches whose result a replica of another group matched" { "validated" }
                th title="replicas that disagreed with this worker" { "mismatches" }
                th { "refused uploads" } th { "standing" } th { "working on" }
            }
            @for w in &list {
                tr.worker data-quarantined=(w.quarantine_reason.is_some()) {
                    td { (w.name) } td { (w.owner) } td { (w.threads) } td { (ago(w.last_seen)) } td.games { (thousands(w.games as f64)) } td.positions { (thousands(w.positions as f64)) } td { (thousands(w.batches as f64)) }
                    td { (w.games_per_sec.map_or("–".into(), |g| format!("{g:.1}"))) }
                    td.gpu { (gpu_text(w)) }
                    td.trust { (w.trust.as_deref().unwrap_or("not yet")) }
                    td.validated { (w.validated) } td.mismatches { (w.mismatches) }
                    td.rejected { (w.rejected) }
                    td.standing { @match &w.quarantine_reason { Some(r) => { "quarantined: " (r) }, None => "good" } }
                    td { @if w.leased_batches > 0 { (w.leased_batches) " batch(es)" } @else { "idle" } }
                }
            }
        }
    };
    Ok(page("Workers", list.iter().any(|w| w.seconds_since_seen < 300.0), body))
}
