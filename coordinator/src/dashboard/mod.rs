//! The dashboards: HTML pages rendered on the server from the same views as the JSON API, with
//! inline SVG plots. They reload themselves every few seconds while anything runs.
//!
//! Pages are maud templates: markup checked at compile time, and every spliced value escaped
//! unless wrapped in `PreEscaped` (only the stylesheet is). Maud over askama because the plots
//! are computed geometry, which reads better as Rust next to its markup than split into
//! template files.

mod charts;
mod plots;

use crate::endgames::{self, Outcome, PositionView, SolveRow, TIME_BUCKETS};
use crate::error::Result;
use crate::experiments::{self, CellView, Detail};
use crate::state::AppState;
use axum::extract::{Path, State};
use axum::response::Html;
use charts::thousands;
use maud::{DOCTYPE, Markup, PreEscaped, html};
use shared::kinds::ExperimentKind;
use shared::kinds::endgame::{EndgameSpec, PositionSource};
use shared::kinds::matches::MatchSpec;
use shared::kinds::wintable::WintableSpec;
use uuid::Uuid;

/// Seconds between automatic reloads of a page.
const REFRESH_SECS: u32 = 5;

const STYLE: &str = include_str!("../../../dashboards/style.css");

fn page(title: &str, refresh: bool, body: Markup) -> Html<String> {
    let markup = html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
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

fn live(status: &str) -> bool {
    status == "queued" || status == "running"
}

fn pct(x: Option<f64>) -> String {
    x.map_or("–".into(), shared::stats::pct)
}

fn status(s: &str) -> Markup {
    html! { span class={ "status " (s) } { (s) } }
}

fn progress(done: i64, target: i64) -> Markup {
    let f = if target > 0 { done as f64 / target as f64 } else { 0.0 };
    html! {
        div.bar title={ (done) " of " (target) } { div style={ "width:" (format!("{:.1}", 100.0 * f.min(1.0))) "%" } {} }
        " " (thousands(done as f64)) " / " (thousands(target as f64))
    }
}

/// A cell's progress; one that ended short of its target (an SPRT, a researcher) shows a full
/// bar and says how far it got.
fn cell_progress(c: &CellView) -> Markup {
    let (done, target) = (c.games as i64, c.target_games);
    if live(&c.status) || done >= target {
        return progress(done, target);
    }
    html! { (progress(done, done)) br; small { "ended early; target " (thousands(target as f64)) } }
}

/// A rate in the unit that reads best: `12.5 games/s`, `40 games/min`, `3.0 games/hour`.
fn rate(per_hour: f64, counted: &str) -> String {
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
            tr { th { "experiment" } th { "kind" } th { "status" } th { "cells" } th { "done" } th { "rate" } th { "submitted" } }
            @for e in &list {
                tr.experiment data-id=(e.id) {
                    td { a href={ "/experiments/" (e.id) } { (e.name) } }
                    td { (e.kind) }
                    td { (status(&e.status)) }
                    td { (e.cells) }
                    td { (progress(e.games, e.target_games)) " " (e.counted) }
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

/// `/experiments/{id}`: the page for the experiment's kind.
pub async fn experiment(State(st): State<AppState>, Path(id): Path<Uuid>) -> Result<Html<String>> {
    let d = experiments::detail(&st.db, id).await?;
    match &d.spec.kind {
        ExperimentKind::Match(m) | ExperimentKind::Selfplay(m) => match_page(&st, &d, m).await,
        ExperimentKind::Endgame(e) => {
            let rows = endgames::solves(&st.db, id).await?;
            Ok(endgame_page(&d, e, &rows))
        }
        ExperimentKind::Wintable(w) => wintable_page(&st, &d, w).await,
    }
}

fn batch_counts(d: &Detail) -> Markup {
    let n = |k: &str| d.batches.get(k).and_then(|v| v.as_i64()).unwrap_or(0);
    html! { "batches: " (n("done")) " done, " (n("leased")) " leased, " (n("queued")) " queued, " (n("parked")) " parked" }
}

fn contributors(d: &Detail, counted: &str) -> Markup {
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

/// A match experiment: win rates with intervals per cell, convergence, the SPRT, win rate
/// against time, a heatmap for 2-D grids, and the cells table. A selfplay experiment's page is
/// the same (its games are a match's, each deal played once) with what its data amounts to.
async fn match_page(st: &AppState, d: &Detail, spec: &MatchSpec) -> Result<Html<String>> {
    let id = d.summary.id;
    let h = experiments::history(&st.db, id, spec.sprt.as_ref()).await?;
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
        @if matches!(d.spec.kind, ExperimentKind::Selfplay(_)) { (training_data(d)) }
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
            @if let Some(chart) = plots::pareto(&d.cells, &labels, bot1) {
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
    Ok(page(&s.name, live(&s.status), body))
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

/// An endgame experiment: positions solved and cross-checked, the solve-time distribution,
/// disagreements between workers, and every position's agreed value and best sequence.
fn endgame_page(d: &Detail, e: &EndgameSpec, rows: &[SolveRow]) -> Html<String> {
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
        table #positions {
            tr { th { "#" } th { "value" } th { "best" } th { "sequence" } th { "nodes" } th { "time" } th { "solves" } }
            @for p in positions.iter().take(1000) {
                (position_row(p))
            }
        }
        p.meta {
            "A position's value is the outcome two different workers reached exactly. ~: not solved to the end "
            "within the limits, so not verified. Hover a position's number for its CGP."
        }
        (contributors(d, "positions"))
        p.meta {
            "JSON: " a href={ "/api/v1/experiments/" (s.id) } { "/api/v1/experiments/" (s.id) } ", "
            a href={ "/api/v1/experiments/" (s.id) "/endgames" } { "endgames" }
            " · CSV: " a href={ "/api/v1/experiments/" (s.id) "/endgames.csv" } { "solutions" } ", "
            a href={ "/api/v1/experiments/" (s.id) "/contributors.csv" } { "contributors" }
        }
    };
    page(&s.name, live(&s.status), body)
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
            td title=(r.cgp) { (p.index) }
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

/// A wintable experiment: progress, throughput, and once fitted the table itself, plotted as
/// P(win) against spread for a few counts of unseen tiles, with a link to the artifact.
async fn wintable_page(st: &AppState, d: &Detail, w: &WintableSpec) -> Result<Html<String>> {
    let s = &d.summary;
    let h = experiments::history(&st.db, s.id, None).await?;
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
    Ok(page(&s.name, live(&s.status), body))
}

/// A value as a label: strings bare, numbers as JSON writes them.
fn value_text(v: &serde_json::Value) -> String {
    v.as_str().map_or_else(|| v.to_string(), str::to_string)
}

/// A cell's grid values, or its bots when there is no grid.
fn cell_label(d: &Detail, c: &CellView) -> String {
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
fn short_label(d: &Detail, c: &CellView) -> String {
    let axes = d.spec.kind.axes();
    if axes.is_empty() {
        return format!("#{}", c.index);
    }
    let l = axes.iter().map(|a| c.params.get(&a.name).map_or(String::new(), value_text)).collect::<Vec<_>>().join(", ");
    if l.len() > 18 { format!("#{}", c.index) } else { l }
}

/// Which workers an experiment's batches go to, in words.
fn needs_text(needs: &[String]) -> &'static str {
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
                th title="batches whose result another owner's replica matched" { "validated" }
                th title="replicas that disagreed with this worker" { "mismatches" }
                th { "refused uploads" } th { "standing" } th { "working on" }
            }
            @for w in &list {
                tr.worker data-quarantined=(w.quarantine_reason.is_some()) {
                    td { (w.name) } td { (w.owner) } td { (w.threads) } td { (ago(w.last_seen)) } td.games { (w.games) } td.positions { (w.positions) } td { (w.batches) }
                    td { (w.games_per_sec.map_or("–".into(), |g| format!("{g:.1}"))) }
                    td.gpu { (gpu_text(w)) }
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
