//! The dashboards: HTML pages rendered on the server from the same views as the JSON API, with
//! inline SVG plots. They reload themselves every few seconds while anything runs.
//!
//! Pages are maud templates: markup checked at compile time, and every spliced value escaped
//! unless wrapped in `PreEscaped` (only the stylesheet is). Maud over askama because the plots
//! are computed geometry, which reads better as Rust next to its markup than split into
//! template files.

use crate::AppState;
use crate::endgames::{self, Outcome, PositionView, SolveRow, TIME_BUCKETS};
use crate::error::Result;
use crate::experiments::{self, CellView, Detail};
use axum::extract::{Path, State};
use axum::response::Html;
use maud::{DOCTYPE, Markup, PreEscaped, html};
use shared::experiment::{Axis, EndgameSpec, ExperimentKind, MatchSpec, PositionSource, WintableSpec};
use uuid::Uuid;

/// Seconds between automatic reloads of a page.
const REFRESH_SECS: u32 = 5;

const STYLE: &str = include_str!("../../dashboards/style.css");

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

/// One decimal, for SVG coordinates.
fn f1(x: f64) -> String {
    format!("{x:.1}")
}

fn status(s: &str) -> Markup {
    html! { span class={ "status " (s) } { (s) } }
}

fn progress(done: i64, target: i64) -> Markup {
    let f = if target > 0 { done as f64 / target as f64 } else { 0.0 };
    html! {
        div.bar title={ (done) " of " (target) } { div style={ "width:" (format!("{:.1}", 100.0 * f.min(1.0))) "%" } {} }
        " " (done) " / " (target)
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
            tr { th { "experiment" } th { "kind" } th { "status" } th { "cells" } th { "done" } th { "per hour" } th { "submitted" } }
            @for e in &list {
                tr.experiment data-id=(e.id) {
                    td { a href={ "/experiments/" (e.id) } { (e.name) } }
                    td { (e.kind) }
                    td { (status(&e.status)) }
                    td { (e.cells) }
                    td { (progress(e.games, e.target_games)) " " (e.counted) }
                    td { (format!("{:.0}", e.games_per_hour)) }
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
        ExperimentKind::Match(m) => match_page(&st, &d, m).await,
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

/// A match experiment: win rates with intervals per cell, a heatmap for 2-D grids, progress.
async fn match_page(st: &AppState, d: &Detail, spec: &MatchSpec) -> Result<Html<String>> {
    let id = d.summary.id;
    let h = experiments::history(&st.db, id, d.cells.len()).await?;
    let s = &d.summary;
    let body = html! {
        p.meta {
            span class={ "status " (s.status) } #status { (s.status) }
            " " (s.kind) ": " b { (spec.bots[0]) } " vs " b { (spec.bots[1]) } ", " (spec.games_per_cell) " games per cell, seed " (d.spec.seed)
            @if let Some(p) = &spec.sprt { "; SPRT H0 p=" (p.p0) " vs H1 p=" (p.p1) " (alpha " (p.alpha) ", beta " (p.beta) ")" }
        }
        @if !d.spec.description.is_empty() { p { (d.spec.description) } }
        p #progress { (progress(s.games, s.target_games)) " · " (format!("{:.0}", s.games_per_hour)) " games/hour · " (batch_counts(d)) }
        h2 { "Win rate of the first bot, with 95% intervals" }
        (winrate_plot(d))
        @if let [rows, cols] = &spec.axes[..] {
            h2 { "Heatmap" }
            (heatmap(d, rows, cols))
        }
        @if !h.games.is_empty() {
            h2 { "Convergence: each cell's win rate as its games came in" }
            (convergence_plot(d, &h))
            h2 { "Throughput" }
            (throughput_plot(&h))
        }
        h2 { "Cells" }
        table #cells {
            tr {
                th { "#" } th { "parameters" } th { "status" } th { "games" } th { "W-D-L" } th { "win rate" } th { "95% interval" }
                th { "mean score" br; small { "bot1 / bot2" } } th { "bingos/game" br; small { "bot1 / bot2" } }
                th { "points/turn" br; small { "bot1 / bot2" } } th { "ms/move" br; small { "bot1 / bot2" } }
                th { "first player wins" } th { "why it stopped" }
            }
            @for c in &d.cells {
                tr.cell data-index=(c.index) {
                    td { (c.index) }
                    td { (cell_label(d, c)) }
                    td { (status(&c.status)) }
                    td { (progress(c.games as i64, c.target_games)) }
                    td { (c.wins) "-" (c.draws) "-" (c.losses) }
                    td.winrate { (pct(c.win_rate)) }
                    td { (pct(c.ci_low)) " – " (pct(c.ci_high)) }
                    td { (format!("{:.1} / {:.1}", c.mean_score[0], c.mean_score[1])) }
                    td { (format!("{:.2} / {:.2}", c.mean_bingos[0], c.mean_bingos[1])) }
                    td { (format!("{:.1} / {:.1}", c.points_per_turn[0], c.points_per_turn[1])) }
                    td.ms { (format!("{:.1} / {:.1}", c.ms_per_move[0], c.ms_per_move[1])) }
                    td { (pct(c.first_player_rate)) }
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
        }
    };
    Ok(page(&s.name, live(&s.status), body))
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
    let top = hist.iter().copied().max().unwrap_or(0).max(1) as f64;
    let (w, h, bar) = (520.0, 160.0, 520.0 / TIME_BUCKETS.len() as f64);
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
        svg #times viewBox={ "0 0 " (w) " " (h + 20.0) } width=(w) height=(h + 20.0) {
            @for (i, (&n, (_, label))) in hist.iter().zip(TIME_BUCKETS.iter()).enumerate() {
                @let bh = (h - 20.0) * n as f64 / top;
                @let x = i as f64 * bar;
                rect.bucket data-count=(n) x=(f1(x + 6.0)) y=(f1(h - bh)) width=(f1(bar - 12.0)) height=(f1(bh)) { title { (label) ": " (n) } }
                text x=(f1(x + bar / 2.0)) y=(f1(h - bh - 4.0)) text-anchor="middle" { (n) }
                text x=(f1(x + bar / 2.0)) y=(f1(h + 14.0)) text-anchor="middle" { (label) }
            }
        }
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
    let h = experiments::history(&st.db, s.id, d.cells.len()).await?;
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
        p #progress { (progress(s.games, s.target_games)) " · " (format!("{:.0}", s.games_per_hour)) " games/hour" }
        @if !h.games.is_empty() {
            h2 { "Throughput" }
            (throughput_plot(&h))
        }
        @if let Some((sha, table)) = &table {
            h2 { "The fitted table" }
            p {
                "Artifact " a #table href={ "/api/v1/artifacts/" (sha) } { (sha) } " (role " code { "winpct" } "; pin it in an experiment's "
                code { "[artifacts]" } ", or make it the default with " code { "coordinator artifact --role winpct --default" } ")."
            }
            (wintable_plot(table))
        }
    };
    Ok(page(&s.name, live(&s.status), body))
}

/// P(win) for the player to move against spread, one line per count of unseen tiles.
fn wintable_plot(t: &engine::winpct::WinTable) -> Markup {
    let (w, ht, left, bottom) = (760.0, 300.0, 50.0, 30.0);
    let sm = t.spread_max() as f64;
    let x = |spread: f64| left + (spread + sm) / (2.0 * sm) * (w - left - 110.0);
    let y = |p: f64| 10.0 + (1.0 - p) * (ht - bottom - 10.0);
    let rows: Vec<usize> = [t.unseen_max(), 50, 20, 7].into_iter().filter(|&u| u <= t.unseen_max()).collect();
    html! {
        svg #wintable.plot viewBox={ "0 0 " (w) " " (ht) } width=(w) height=(ht) role="img" aria-label="P(win) against spread" {
            @for p in [0.0, 0.25, 0.5, 0.75, 1.0] {
                line.grid x1=(left) x2=(f1(x(sm))) y1=(f1(y(p))) y2=(f1(y(p))) {}
                text.tick x="4" y=(f1(y(p) + 4.0)) { (format!("{:.0}%", 100.0 * p)) }
            }
            @for spread in [-sm, -sm / 2.0, 0.0, sm / 2.0, sm] {
                text.tick x=(f1(x(spread))) y=(f1(ht - 8.0)) text-anchor="middle" { (format!("{spread:+.0}")) }
            }
            @for (i, unseen) in rows.iter().enumerate() {
                @let points: Vec<String> = (-t.spread_max()..=t.spread_max())
                    .step_by(5)
                    .map(|sp| format!("{:.1},{:.1}", x(sp as f64), y(t.win_prob(sp, *unseen))))
                    .collect();
                @let colour = ["#888", "#3b7dd8", "#d8893b", "#c0392b"][i % 4];
                polyline.series data-unseen=(unseen) fill="none" stroke=(colour) stroke-width="2" points=(points.join(" ")) {}
                text.tick x=(f1(w - 100.0)) y=(f1(20.0 + 16.0 * i as f64)) fill=(colour) { (unseen) " unseen" }
            }
        }
    }
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

/// A win-rate axis for a plot: the data's range rounded out to 5% steps (at least 45-55%),
/// gridlines every 5% with labels, and the dashed 50% line. The plot area starts 10 px down.
struct RateAxis {
    lo: f64,
    hi: f64,
    height: f64,
}

impl RateAxis {
    fn new(values: impl Iterator<Item = f64>, height: f64) -> Self {
        let (lo, hi) = values.fold((0.45f64, 0.55f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
        let lo = (((lo - 0.02) * 20.0).floor() / 20.0).max(0.0);
        let hi = (((hi + 0.02) * 20.0).ceil() / 20.0).min(1.0);
        Self { lo, hi, height }
    }

    /// Pixel row of a rate (clamped to the axis).
    fn y(&self, p: f64) -> f64 {
        10.0 + self.height * (1.0 - (p.clamp(self.lo, self.hi) - self.lo) / (self.hi - self.lo))
    }

    fn ticks(&self) -> impl Iterator<Item = f64> + '_ {
        (0..).map(|i| self.lo + 0.05 * i as f64).take_while(|t| *t <= self.hi + 1e-9)
    }

    fn draw(&self, left: f64, right: f64) -> Markup {
        html! {
            @for t in self.ticks() {
                line.grid x1=(left) x2=(right) y1=(f1(self.y(t))) y2=(f1(self.y(t))) {}
                text.tick x=(left - 4.0) y=(f1(self.y(t) + 4.0)) text-anchor="end" { (format!("{:.0}%", 100.0 * t)) }
            }
            line.even x1=(left) x2=(right) y1=(f1(self.y(0.5))) y2=(f1(self.y(0.5))) {}
        }
    }
}

/// Points with 95% error bars, one per cell, and the 50% line.
fn winrate_plot(d: &Detail) -> Markup {
    let n = d.cells.len().max(1);
    let (w, h, left, bottom) = ((120 + 56 * n).clamp(360, 1200) as f64, 280.0, 90.0, 70.0);
    let axis = RateAxis::new(d.cells.iter().flat_map(|c| [c.ci_low, c.ci_high]).flatten(), h - bottom - 10.0);
    let step = (w - left - 10.0) / n as f64;
    let x = |i: usize| left + step * (i as f64 + 0.5);
    let axes = d.spec.kind.axes();
    html! {
        svg #winrate.plot viewBox={ "0 0 " (w) " " (h) } width=(w) height=(h) role="img" aria-label="win rate per cell" {
            (axis.draw(left, w - 10.0))
            @for (i, c) in d.cells.iter().enumerate() {
                @let (xi, ly) = (f1(x(i)), f1(h - bottom + 14.0));
                text.tick x=(xi) y=(ly) text-anchor="end" transform={ "rotate(-35 " (xi) " " (ly) ")" } { (short_label(d, c)) }
                @if let (Some(p), Some(a), Some(b)) = (c.win_rate, c.ci_low, c.ci_high) {
                    g.cell data-index=(c.index) {
                        title { (cell_label(d, c)) ": " (pct(Some(p))) " (" (pct(Some(a))) " – " (pct(Some(b))) "), " (c.games) " games" }
                        line.ci x1=(xi) x2=(xi) y1=(f1(axis.y(a))) y2=(f1(axis.y(b))) {}
                        circle cx=(xi) cy=(f1(axis.y(p))) r="4" {}
                    }
                }
            }
            @if !axes.is_empty() {
                text.axis x=(w - 10.0) y=(h - 4.0) text-anchor="end" {
                    (axes.iter().map(|a| a.name.as_str()).collect::<Vec<_>>().join(", "))
                }
            }
        }
    }
}

/// Line colours for cells, cycling.
const PALETTE: [&str; 10] =
    ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"];

/// One line per cell: cumulative win rate against games played. The first tenth of each
/// cell's games (a handful of deals) is left out of the y-range, where it would swamp the rest.
fn convergence_plot(d: &Detail, h: &experiments::History) -> Markup {
    let (w, ht, left, bottom) = (760.0, 280.0, 60.0, 36.0);
    let max_games = h.convergence.iter().flatten().map(|p| p.0).max().unwrap_or(1).max(1) as f64;
    let settled = h.convergence.iter().flatten().filter(|p| p.0 as f64 >= max_games / 10.0).map(|p| p.1);
    let axis = RateAxis::new(settled, ht - bottom - 10.0);
    let x = |g: f64| left + (w - left - 10.0) * g / max_games;
    html! {
        svg #convergence.plot viewBox={ "0 0 " (w) " " (ht) } width=(w) height=(ht) role="img" aria-label="win rate as games came in" {
            (axis.draw(left, w - 10.0))
            text.tick x=(left) y=(ht - bottom + 14.0) { "0" }
            text.tick x=(w - 10.0) y=(ht - bottom + 14.0) text-anchor="end" { (max_games) " games" }
            @for (i, points) in h.convergence.iter().enumerate().filter(|(_, p)| !p.is_empty()) {
                @let path: Vec<String> = std::iter::once((0u64, points[0].1))
                    .chain(points.iter().copied())
                    .map(|(g, p)| format!("{:.1},{:.1}", x(g as f64), axis.y(p)))
                    .collect();
                polyline.series data-index=(i) fill="none" stroke=(PALETTE[i % PALETTE.len()]) stroke-width="1.5" points=(path.join(" ")) {
                    title { (d.cells.get(i).map_or(String::new(), |c| cell_label(d, c))) }
                }
            }
        }
    }
}

/// Games recorded per minute, in equal time buckets over the experiment's run so far.
fn throughput_plot(h: &experiments::History) -> Markup {
    let (w, ht, left, bottom) = (760.0, 160.0, 70.0, 24.0);
    let per_min: Vec<f64> = h.games.iter().map(|&g| g as f64 * 60.0 / h.bucket_secs as f64).collect();
    let top = per_min.iter().copied().fold(1.0, f64::max);
    let bw = (w - left - 10.0) / per_min.len() as f64;
    let span = h.bucket_secs * h.games.len() as i64;
    html! {
        svg #throughput.plot viewBox={ "0 0 " (w) " " (ht) } width=(w) height=(ht) role="img" aria-label="games per minute" {
            text.tick x="4" y="14" { (format!("{top:.0}")) }
            text.tick x="4" y="28" { "games" }
            text.tick x="4" y="42" { "a minute" }
            @for (i, v) in per_min.iter().enumerate() {
                @let bh = (ht - bottom - 10.0) * v / top;
                rect.bucket x=(f1(left + bw * i as f64)) y=(f1(ht - bottom - bh)) width=(f1((bw - 1.0).max(1.0))) height=(f1(bh)) fill="#3b7dd8" {
                    title { (format!("{v:.0}")) " games/min" }
                }
            }
            text.tick x=(left) y=(ht - 6.0) { (h.start.map_or(String::new(), |t| t.format("%H:%M:%S UTC").to_string())) }
            text.tick x=(w - 10.0) y=(ht - 6.0) text-anchor="end" { "+" (span) " s (" (h.bucket_secs) " s buckets)" }
        }
    }
}

/// Colour for a win rate: red below 50%, blue above, white at 50%, saturating at +-15 points.
fn colour(p: f64) -> String {
    let t = ((p - 0.5) / 0.15).clamp(-1.0, 1.0);
    let (r, g, b) = if t >= 0.0 {
        (255.0 * (1.0 - t) + 33.0 * t, 255.0 * (1.0 - t) + 102.0 * t, 255.0 * (1.0 - t) + 172.0 * t)
    } else {
        let t = -t;
        (255.0 * (1.0 - t) + 178.0 * t, 255.0 * (1.0 - t) + 24.0 * t, 255.0 * (1.0 - t) + 43.0 * t)
    };
    format!("rgb({:.0},{:.0},{:.0})", r, g, b)
}

/// First axis down, second across (cells are row-major in axis order).
fn heatmap(d: &Detail, rows: &Axis, cols: &Axis) -> Markup {
    let (cw, ch, left, top) = (110.0, 52.0, 110.0, 40.0);
    let (w, h) = (left + cw * cols.values.len() as f64 + 10.0, top + ch * rows.values.len() as f64 + 10.0);
    html! {
        svg #heatmap.plot viewBox={ "0 0 " (w) " " (h) } width=(w) height=(h) role="img" aria-label="win rate heatmap" {
            text.axis x=(left) y="14" { (cols.name) " →" }
            text.axis x="4" y=(top - 6.0) { (rows.name) " ↓" }
            @for (j, c) in cols.values.iter().enumerate() {
                text.tick x=(f1(left + cw * (j as f64 + 0.5))) y=(top - 6.0) text-anchor="middle" { (value_text(c)) }
            }
            @for (i, r) in rows.values.iter().enumerate() {
                text.tick x=(left - 6.0) y=(f1(top + ch * (i as f64 + 0.5) + 4.0)) text-anchor="end" { (value_text(r)) }
                @for j in 0..cols.values.len() {
                    @if let Some(c) = d.cells.get(i * cols.values.len() + j) {
                        @let (x, y) = (left + cw * j as f64, top + ch * i as f64);
                        @let tx = f1(x + cw / 2.0);
                        g.hcell data-index=(c.index) {
                            title {
                                (cell_label(d, c)) ": " (pct(c.win_rate)) " (" (pct(c.ci_low)) " – " (pct(c.ci_high)) ") over "
                                (c.games) " games, " (format!("{:.1}", c.ms_per_move[0])) " ms a move"
                            }
                            rect x=(x) y=(y) width=(cw) height=(ch) fill=(c.win_rate.map_or("#eee".into(), colour)) {}
                            text x=(tx) y=(f1(y + ch / 2.0 - 2.0)) text-anchor="middle" {
                                (pct(c.win_rate))
                                @if let (Some(lo), Some(hi)) = (c.ci_low, c.ci_high) { (format!(" ±{:.1}", 50.0 * (hi - lo))) }
                            }
                            text.tick x=(tx) y=(f1(y + ch / 2.0 + 14.0)) text-anchor="middle" { (format!("{:.1}", c.ms_per_move[0])) " ms/move" }
                        }
                    }
                }
            }
        }
    }
}

/// `/workers`: every volunteer, when it was last seen, what it contributed.
pub async fn workers(State(st): State<AppState>) -> Result<Html<String>> {
    let list = crate::workers::list(&st.db).await?;
    let body = html! {
        table #workers {
            tr {
                th { "name" } th { "owner" } th { "threads" } th { "last seen" } th { "games or positions" } th { "batches" } th { "games/s" }
                th title="batches whose result another owner's replica matched" { "validated" }
                th title="replicas that disagreed with this worker" { "mismatches" }
                th { "refused uploads" } th { "standing" } th { "working on" }
            }
            @for w in &list {
                tr.worker data-quarantined=(w.quarantine_reason.is_some()) {
                    td { (w.name) } td { (w.owner) } td { (w.threads) } td { (ago(w.last_seen)) } td.games { (w.games) } td { (w.batches) }
                    td { (w.games_per_sec.map_or("–".into(), |g| format!("{g:.1}"))) }
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
