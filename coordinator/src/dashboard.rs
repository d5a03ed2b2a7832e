//! The dashboards: HTML pages rendered on the server from the same views as the JSON API, with
//! inline SVG plots. They reload themselves every few seconds while anything runs.

use crate::AppState;
use crate::endgames::{self, SolveRow, TIME_BUCKETS};
use crate::error::Result;
use crate::experiments::{self, CellView, Detail};
use axum::extract::{Path, State};
use axum::response::Html;
use std::fmt::Write;
use uuid::Uuid;

/// Seconds between automatic reloads of a page.
const REFRESH_SECS: u32 = 5;

const STYLE: &str = include_str!("../../dashboards/style.css");

fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;").replace('\'', "&#39;")
}

fn page(title: &str, refresh: bool, body: &str) -> Html<String> {
    let meta =
        if refresh { format!("<meta http-equiv=\"refresh\" content=\"{REFRESH_SECS}\">") } else { String::new() };
    Html(format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">{meta}<title>{t} · lexhive</title><style>{STYLE}</style></head>\
         <body><nav><a href=\"/\">experiments</a> <a href=\"/workers\">workers</a> <span class=\"brand\">lexhive</span></nav><main><h1>{t}</h1>{body}</main></body></html>",
        t = esc(title)
    ))
}

fn pct(x: Option<f64>) -> String {
    x.map_or("–".into(), shared::stats::pct)
}

fn progress(done: i64, target: i64) -> String {
    let f = if target > 0 { done as f64 / target as f64 } else { 0.0 };
    format!(
        "<div class=\"bar\" title=\"{done} of {target}\"><div style=\"width:{:.1}%\"></div></div> {done} / {target}",
        100.0 * f.min(1.0)
    )
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
    let mut b = String::from(
        "<table id=\"experiments\"><tr><th>experiment</th><th>kind</th><th>status</th><th>cells</th><th>games</th><th>games/hour</th><th>submitted</th></tr>",
    );
    for e in &list {
        let _ = write!(
            b,
            "<tr class=\"experiment\" data-id=\"{id}\"><td><a href=\"/experiments/{id}\">{name}</a></td><td>{kind}</td><td><span class=\"status {s}\">{s}</span></td><td>{cells}</td><td>{prog}</td><td>{gph:.0}</td><td>{ago}</td></tr>",
            id = e.id,
            name = esc(&e.name),
            kind = esc(&e.kind),
            s = esc(&e.status),
            cells = e.cells,
            prog = progress(e.games, e.target_games),
            gph = e.games_per_hour,
            ago = ago(e.created_at),
        );
    }
    b.push_str("</table>");
    if list.is_empty() {
        b.push_str(
            "<p>No experiments yet. Submit one with <code>worker submit FILE --coordinator URL --token T</code>.</p>",
        );
    }
    let live = list.iter().any(|e| e.status == "queued" || e.status == "running");
    Ok(page("Experiments", live, &b))
}

/// `/experiments/{id}`: win rates with intervals per cell, a heatmap for 2-D grids, progress.
pub async fn experiment(State(st): State<AppState>, Path(id): Path<Uuid>) -> Result<Html<String>> {
    let d = experiments::detail(&st.db, id).await?;
    if d.spec.endgame.is_some() {
        let rows = endgames::solves(&st.db, id).await?;
        return Ok(endgame_page(&d, &rows));
    }
    if d.spec.kind == shared::experiment::JobKind::Wintable {
        return wintable_page(&st, &d).await;
    }
    let h = experiments::history(&st.db, id, d.cells.len()).await?;
    let s = &d.summary;
    let mut b = String::new();
    let spec = &d.spec;
    let _ = write!(
        b,
        "<p class=\"meta\"><span class=\"status {st}\" id=\"status\">{st}</span> {kind}: <b>{b1}</b> vs <b>{b2}</b>, {g} games per cell, seed {seed}{sprt}</p>",
        st = esc(&s.status),
        kind = esc(&s.kind),
        b1 = esc(&spec.bots[0]),
        b2 = esc(&spec.bots[1]),
        g = spec.games_per_cell,
        seed = spec.seed,
        sprt = spec.sprt.map_or(String::new(), |p| format!(
            "; SPRT H0 p={} vs H1 p={} (alpha {}, beta {})",
            p.p0, p.p1, p.alpha, p.beta
        )),
    );
    if !spec.description.is_empty() {
        let _ = write!(b, "<p>{}</p>", esc(&spec.description));
    }
    let batches = |k: &str| d.batches.get(k).and_then(|v| v.as_i64()).unwrap_or(0);
    let _ = write!(
        b,
        "<p id=\"progress\">{} · {:.0} games/hour · batches: {} done, {} leased, {} queued, {} parked</p>",
        progress(s.games, s.target_games),
        s.games_per_hour,
        batches("done"),
        batches("leased"),
        batches("queued"),
        batches("parked")
    );
    b.push_str("<h2>Win rate of the first bot, with 95% intervals</h2>");
    b.push_str(&winrate_plot(&d));
    if spec.axes.len() == 2 {
        b.push_str("<h2>Heatmap</h2>");
        b.push_str(&heatmap(&d));
    }
    if !h.games.is_empty() {
        b.push_str("<h2>Convergence: each cell's win rate as its games came in</h2>");
        b.push_str(&convergence_plot(&d, &h));
        b.push_str("<h2>Throughput</h2>");
        b.push_str(&throughput_plot(&h));
    }
    b.push_str("<h2>Cells</h2><table id=\"cells\"><tr><th>#</th><th>parameters</th><th>status</th><th>games</th><th>W-D-L</th><th>win rate</th><th>95% interval</th><th>mean score<br><small>bot1 / bot2</small></th><th>bingos/game<br><small>bot1 / bot2</small></th><th>points/turn<br><small>bot1 / bot2</small></th><th>ms/move<br><small>bot1 / bot2</small></th><th>first player wins</th><th>why it stopped</th></tr>");
    for c in &d.cells {
        let _ = write!(
            b,
            "<tr class=\"cell\" data-index=\"{i}\"><td>{i}</td><td>{params}</td><td><span class=\"status {st}\">{st}</span></td><td>{prog}</td><td>{w}-{dr}-{l}</td><td class=\"winrate\">{wr}</td><td>{lo} – {hi}</td><td>{s0:.1} / {s1:.1}</td><td>{b0:.2} / {b1:.2}</td><td>{p0:.1} / {p1:.1}</td><td class=\"ms\">{m0:.1} / {m1:.1}</td><td>{fp}</td><td class=\"reason\">{why}</td></tr>",
            i = c.index,
            params = esc(&cell_label(&d, c)),
            st = esc(&c.status),
            prog = progress(c.games as i64, c.target_games),
            w = c.wins,
            dr = c.draws,
            l = c.losses,
            wr = pct(c.win_rate),
            lo = pct(c.ci_low),
            hi = pct(c.ci_high),
            s0 = c.mean_score[0],
            s1 = c.mean_score[1],
            b0 = c.mean_bingos[0],
            b1 = c.mean_bingos[1],
            p0 = c.points_per_turn[0],
            p1 = c.points_per_turn[1],
            m0 = c.ms_per_move[0],
            m1 = c.ms_per_move[1],
            fp = pct(c.first_player_rate),
            why = esc(c.stop_reason.as_deref().unwrap_or("")),
        );
    }
    b.push_str("</table>");
    if !d.parked.is_empty() {
        b.push_str("<h2>Parked batches</h2><table id=\"parked\"><tr><th>batch</th><th>cell</th><th>failures</th><th>last error</th></tr>");
        for p in &d.parked {
            let _ = write!(
                b,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                p.batch_id,
                p.cell_index,
                p.failures,
                esc(p.error.as_deref().unwrap_or(""))
            );
        }
        b.push_str("</table>");
    }
    if !d.contributors.is_empty() {
        b.push_str(
            "<h2>Contributors</h2><table id=\"contributors\"><tr><th>worker</th><th>games</th><th>batches</th></tr>",
        );
        for c in &d.contributors {
            let _ = write!(
                b,
                "<tr class=\"contributor\"><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&c.name),
                c.games,
                c.batches
            );
        }
        b.push_str("</table>");
    }
    let _ = write!(
        b,
        "<p class=\"meta\">JSON: <a href=\"/api/v1/experiments/{id}\">/api/v1/experiments/{id}</a>, <a href=\"/api/v1/experiments/{id}/history\">history</a>, <a href=\"/api/v1/experiments/{id}/batches\">batches</a></p>"
    );
    let live = s.status == "queued" || s.status == "running";
    Ok(page(&s.name, live, &b))
}

/// An endgame experiment: positions solved and cross-checked, the solve-time distribution,
/// disagreements between workers, and every position's value and best sequence.
fn endgame_page(d: &Detail, rows: &[SolveRow]) -> Html<String> {
    use shared::experiment::PositionSource;
    let s = &d.summary;
    let spec = &d.spec;
    let e = spec.endgame.as_ref().expect("an endgame experiment");
    let mut b = String::new();
    let source = match &e.source {
        PositionSource::Listed(p) => format!("{} listed positions", p.len()),
        PositionSource::Generated { count, extra } => format!(
            "{count} positions where the bag just emptied in static self-play (seed {}, {extra} moves later)",
            spec.seed
        ),
    };
    let _ = write!(
        b,
        "<p class=\"meta\"><span class=\"status {st}\" id=\"status\">{st}</span> endgame: {source}; {t:.1} s per position{plies}; {cc:.0}% solved twice by different workers</p>",
        st = esc(&s.status),
        source = esc(&source),
        t = e.time_ms as f64 / 1000.0,
        plies = e.plies.map_or(String::new(), |p| format!(", {p} plies at most")),
        cc = 100.0 * e.cross_check,
    );
    let target = |i: usize| d.cells.get(i).map_or(0, |c| c.target_games);
    let firsts: Vec<&SolveRow> = rows.iter().filter(|r| r.pass == "solve").collect();
    let checks = rows.iter().filter(|r| r.pass == "check").count();
    let disputed: Vec<i64> = {
        let mut v: Vec<i64> = rows.iter().filter(|r| r.disagrees).map(|r| r.index).collect();
        v.dedup();
        v
    };
    let _ = write!(
        b,
        "<p id=\"progress\">solved <span id=\"solved\">{}</span> / {} · cross-checked <span id=\"checked\">{checks}</span> / {} · disagreements <span id=\"disagreements\">{}</span> · {} exact</p>",
        firsts.len(),
        target(0),
        target(1),
        disputed.len(),
        firsts.iter().filter(|r| r.exact && !r.skipped).count()
    );
    b.push_str("<h2>Time to solve (first solves)</h2>");
    let hist = endgames::time_histogram(rows);
    let top = hist.iter().copied().max().unwrap_or(0).max(1) as f64;
    let (w, h, bar) = (520.0, 160.0, 520.0 / TIME_BUCKETS.len() as f64);
    let _ = write!(b, "<svg id=\"times\" viewBox=\"0 0 {w} {}\" width=\"{w}\" height=\"{}\">", h + 20.0, h + 20.0);
    for (i, (&n, (_, label))) in hist.iter().zip(TIME_BUCKETS.iter()).enumerate() {
        let bh = (h - 20.0) * n as f64 / top;
        let x = i as f64 * bar;
        let _ = write!(
            b,
            "<rect class=\"bucket\" data-count=\"{n}\" x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{bh:.1}\"><title>{label}: {n}</title></rect><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{n}</text><text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{label}</text>",
            x + 6.0,
            h - bh,
            bar - 12.0,
            x + bar / 2.0,
            h - bh - 4.0,
            x + bar / 2.0,
            h + 14.0
        );
    }
    b.push_str("</svg>");
    if !disputed.is_empty() {
        b.push_str("<h2>Disagreements</h2><table id=\"disputes\"><tr><th>position</th><th>worker</th><th>pass</th><th>value</th><th>exact</th></tr>");
        for r in rows.iter().filter(|r| disputed.contains(&r.index)) {
            let _ = write!(
                b,
                "<tr class=\"dispute\" data-index=\"{}\"><td>{}</td><td>{}</td><td>{}</td><td>{:+}</td><td>{}</td></tr>",
                r.index,
                r.index,
                esc(&r.worker),
                r.pass,
                r.value,
                r.exact
            );
        }
        b.push_str("</table>");
    }
    b.push_str("<h2>Positions</h2><table id=\"positions\"><tr><th>#</th><th>value</th><th>best</th><th>sequence</th><th>nodes</th><th>time</th><th>worker</th><th>cross-check</th></tr>");
    for r in firsts.iter().take(1000) {
        let others: Vec<&SolveRow> = rows.iter().filter(|o| o.index == r.index && o.pass == "check").collect();
        let check = if others.is_empty() {
            "–".to_string()
        } else if others.iter().any(|o| o.disagrees) {
            "<span class=\"status failed\">disagrees</span>".to_string()
        } else {
            format!("agrees ({})", others.iter().map(|o| esc(&o.worker)).collect::<Vec<_>>().join(", "))
        };
        if r.skipped {
            let _ = write!(
                b,
                "<tr class=\"position\" data-index=\"{i}\"><td>{i}</td><td colspan=\"5\">skipped: that game ended before its bag emptied</td><td>{}</td><td>{check}</td></tr>",
                esc(&r.worker),
                i = r.index
            );
            continue;
        }
        let _ = write!(
            b,
            "<tr class=\"position\" data-index=\"{i}\" data-value=\"{v}\"><td title=\"{cgp}\">{i}</td><td>{v:+}{ex}</td><td>{best}</td><td><small>{seq}</small></td><td>{n}</td><td>{t:.3} s</td><td>{wk}</td><td>{check}</td></tr>",
            i = r.index,
            v = r.value,
            ex = if r.exact { "" } else { " ~" },
            cgp = esc(&r.cgp),
            best = esc(&r.best),
            seq = esc(&r.sequence),
            n = r.nodes,
            t = r.ms as f64 / 1000.0,
            wk = esc(&r.worker),
        );
    }
    b.push_str("</table><p class=\"meta\">~: not solved to the end within the limits. Hover a position's number for its CGP.</p>");
    if !d.contributors.is_empty() {
        b.push_str("<h2>Contributors</h2><table id=\"contributors\"><tr><th>worker</th><th>positions</th><th>batches</th></tr>");
        for c in &d.contributors {
            let _ = write!(
                b,
                "<tr class=\"contributor\"><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&c.name),
                c.games,
                c.batches
            );
        }
        b.push_str("</table>");
    }
    let id = s.id;
    let _ = write!(
        b,
        "<p class=\"meta\">JSON: <a href=\"/api/v1/experiments/{id}\">/api/v1/experiments/{id}</a>, <a href=\"/api/v1/experiments/{id}/endgames\">endgames</a></p>"
    );
    let live = s.status == "queued" || s.status == "running";
    page(&s.name, live, &b)
}

/// A wintable experiment: progress, throughput, and once fitted the table itself, plotted as
/// P(win) against spread for a few counts of unseen tiles, with a link to the artifact.
async fn wintable_page(st: &AppState, d: &Detail) -> Result<Html<String>> {
    let s = &d.summary;
    let mut b = String::new();
    let _ = write!(
        b,
        "<p class=\"meta\"><span class=\"status {st}\" id=\"status\">{st}</span> wintable: {g} static-vs-static games, seed {seed}, every position counted by tiles unseen and spread</p>",
        st = esc(&s.status),
        g = d.spec.games_per_cell,
        seed = d.spec.seed,
    );
    let _ =
        write!(b, "<p id=\"progress\">{} · {:.0} games/hour</p>", progress(s.games, s.target_games), s.games_per_hour);
    let h = experiments::history(&st.db, s.id, d.cells.len()).await?;
    if !h.games.is_empty() {
        b.push_str("<h2>Throughput</h2>");
        b.push_str(&throughput_plot(&h));
    }
    if let Some(sha) = &d.output_sha256 {
        let (bytes,): (Vec<u8>,) =
            sqlx::query_as("SELECT bytes FROM artifacts WHERE sha256 = $1").bind(sha).fetch_one(&st.db).await?;
        let table = engine::winpct::WinTable::parse(&String::from_utf8_lossy(&bytes), sha)
            .map_err(|e| crate::error::Error::new(axum::http::StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?;
        let _ = write!(
            b,
            "<h2>The fitted table</h2><p>Artifact <a id=\"table\" href=\"/api/v1/artifacts/{sha}\">{sha}</a> (role <code>winpct</code>; pin it in an experiment's <code>[artifacts]</code>, or make it the default with <code>coordinator artifact --role winpct --default</code>).</p>"
        );
        b.push_str(&wintable_plot(&table));
    }
    let live = s.status == "queued" || s.status == "running";
    Ok(page(&s.name, live, &b))
}

/// P(win) for the player to move against spread, one line per count of unseen tiles.
fn wintable_plot(t: &engine::winpct::WinTable) -> String {
    let (w, ht, left, bottom) = (760.0, 300.0, 50.0, 30.0);
    let sm = t.spread_max() as f64;
    let x = |spread: f64| left + (spread + sm) / (2.0 * sm) * (w - left - 110.0);
    let y = |p: f64| 10.0 + (1.0 - p) * (ht - bottom - 10.0);
    let mut s = format!(
        "<svg id=\"wintable\" class=\"plot\" viewBox=\"0 0 {w} {ht}\" width=\"{w}\" height=\"{ht}\" role=\"img\" aria-label=\"P(win) against spread\">"
    );
    for p in [0.0, 0.25, 0.5, 0.75, 1.0] {
        let _ = write!(
            s,
            "<line class=\"grid\" x1=\"{left}\" x2=\"{:.1}\" y1=\"{:.1}\" y2=\"{:.1}\"/><text class=\"tick\" x=\"4\" y=\"{:.1}\">{:.0}%</text>",
            x(sm),
            y(p),
            y(p),
            y(p) + 4.0,
            100.0 * p
        );
    }
    for spread in [-sm, -sm / 2.0, 0.0, sm / 2.0, sm] {
        let _ = write!(
            s,
            "<text class=\"tick\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{spread:+.0}</text>",
            x(spread),
            ht - 8.0
        );
    }
    let rows = [t.unseen_max(), 50, 20, 7].into_iter().filter(|&u| u <= t.unseen_max());
    for (i, unseen) in rows.enumerate() {
        let points: Vec<String> = (-t.spread_max()..=t.spread_max())
            .step_by(5)
            .map(|sp| format!("{:.1},{:.1}", x(sp as f64), y(t.win_prob(sp, unseen))))
            .collect();
        let colour = ["#888", "#3b7dd8", "#d8893b", "#c0392b"][i % 4];
        let _ = write!(
            s,
            "<polyline class=\"series\" data-unseen=\"{unseen}\" fill=\"none\" stroke=\"{colour}\" stroke-width=\"2\" points=\"{}\"/><text class=\"tick\" x=\"{:.1}\" y=\"{:.1}\" fill=\"{colour}\">{unseen} unseen</text>",
            points.join(" "),
            w - 100.0,
            20.0 + 16.0 * i as f64
        );
    }
    s.push_str("</svg>");
    s
}

/// A cell's grid values, or its bots when there is no grid.
fn cell_label(d: &Detail, c: &CellView) -> String {
    if c.params.is_empty() {
        return format!("{} vs {}", c.bots[0], c.bots[1]);
    }
    d.spec
        .axes
        .iter()
        .map(|a| {
            format!(
                "{}={}",
                a.name,
                c.params
                    .get(&a.name)
                    .map_or(String::new(), |v| v.as_str().map_or_else(|| v.to_string(), str::to_string))
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// A cell's grid values alone (the axis names are in the legend), or its number.
fn short_label(d: &Detail, c: &CellView) -> String {
    if d.spec.axes.is_empty() {
        return format!("#{}", c.index);
    }
    let l = d
        .spec
        .axes
        .iter()
        .map(|a| {
            c.params.get(&a.name).map_or(String::new(), |v| v.as_str().map_or_else(|| v.to_string(), str::to_string))
        })
        .collect::<Vec<_>>()
        .join(", ");
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

    fn draw(&self, s: &mut String, left: f64, right: f64) {
        let mut t = self.lo;
        while t <= self.hi + 1e-9 {
            let _ = write!(
                s,
                "<line class=\"grid\" x1=\"{left}\" x2=\"{right}\" y1=\"{y:.1}\" y2=\"{y:.1}\"/><text x=\"{}\" y=\"{:.1}\" class=\"tick\" text-anchor=\"end\">{:.0}%</text>",
                left - 4.0,
                self.y(t) + 4.0,
                100.0 * t,
                y = self.y(t)
            );
            t += 0.05;
        }
        let _ = write!(
            s,
            "<line class=\"even\" x1=\"{left}\" x2=\"{right}\" y1=\"{y:.1}\" y2=\"{y:.1}\"/>",
            y = self.y(0.5)
        );
    }
}

/// Points with 95% error bars, one per cell, and the 50% line.
fn winrate_plot(d: &Detail) -> String {
    let n = d.cells.len().max(1);
    let (w, h, left, bottom) = ((120 + 56 * n).clamp(360, 1200) as f64, 280.0, 90.0, 70.0);
    let axis = RateAxis::new(d.cells.iter().flat_map(|c| [c.ci_low, c.ci_high]).flatten(), h - bottom - 10.0);
    let y = |p: f64| axis.y(p);
    let step = (w - left - 10.0) / n as f64;
    let x = |i: usize| left + step * (i as f64 + 0.5);
    let mut s = format!(
        "<svg id=\"winrate\" class=\"plot\" viewBox=\"0 0 {w} {h}\" width=\"{w}\" height=\"{h}\" role=\"img\" aria-label=\"win rate per cell\">"
    );
    axis.draw(&mut s, left, w - 10.0);
    for (i, c) in d.cells.iter().enumerate() {
        let label = esc(&cell_label(d, c));
        let _ = write!(
            s,
            "<text class=\"tick\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\" transform=\"rotate(-35 {:.1} {:.1})\">{}</text>",
            x(i),
            h - bottom + 14.0,
            x(i),
            h - bottom + 14.0,
            esc(&short_label(d, c))
        );
        if let (Some(p), Some(a), Some(b)) = (c.win_rate, c.ci_low, c.ci_high) {
            let _ = write!(
                s,
                "<g class=\"cell\" data-index=\"{}\"><title>{label}: {} ({} – {}), {} games</title><line class=\"ci\" x1=\"{xi:.1}\" x2=\"{xi:.1}\" y1=\"{:.1}\" y2=\"{:.1}\"/><circle cx=\"{xi:.1}\" cy=\"{:.1}\" r=\"4\"/></g>",
                c.index,
                pct(Some(p)),
                pct(Some(a)),
                pct(Some(b)),
                c.games,
                y(a),
                y(b),
                y(p),
                xi = x(i)
            );
        }
    }
    if !d.spec.axes.is_empty() {
        let names = d.spec.axes.iter().map(|a| esc(&a.name)).collect::<Vec<_>>().join(", ");
        let _ =
            write!(s, "<text class=\"axis\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{names}</text>", w - 10.0, h - 4.0);
    }
    s.push_str("</svg>");
    s
}

/// Line colours for cells, cycling.
const PALETTE: [&str; 10] =
    ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"];

/// One line per cell: cumulative win rate against games played. The first tenth of each
/// cell's games (a handful of deals) is left out of the y-range, where it would swamp the rest.
fn convergence_plot(d: &Detail, h: &experiments::History) -> String {
    let (w, ht, left, bottom) = (760.0, 280.0, 60.0, 36.0);
    let max_games = h.convergence.iter().flatten().map(|p| p.0).max().unwrap_or(1).max(1) as f64;
    let settled = || h.convergence.iter().flatten().filter(|p| p.0 as f64 >= max_games / 10.0).map(|p| p.1);
    let axis = RateAxis::new(settled(), ht - bottom - 10.0);
    let x = |g: f64| left + (w - left - 10.0) * g / max_games;
    let y = |p: f64| axis.y(p);
    let mut s = format!(
        "<svg id=\"convergence\" class=\"plot\" viewBox=\"0 0 {w} {ht}\" width=\"{w}\" height=\"{ht}\" role=\"img\" aria-label=\"win rate as games came in\">"
    );
    axis.draw(&mut s, left, w - 10.0);
    let _ = write!(
        s,
        "<text class=\"tick\" x=\"{left}\" y=\"{}\">0</text><text class=\"tick\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{max_games} games</text>",
        ht - bottom + 14.0,
        w - 10.0,
        ht - bottom + 14.0
    );
    for (i, points) in h.convergence.iter().enumerate() {
        if points.is_empty() {
            continue;
        }
        let path: Vec<String> = std::iter::once((0u64, points[0].1))
            .chain(points.iter().copied())
            .map(|(g, p)| format!("{:.1},{:.1}", x(g as f64), y(p)))
            .collect();
        let label = d.cells.get(i).map_or(String::new(), |c| esc(&cell_label(d, c)));
        let _ = write!(
            s,
            "<polyline class=\"series\" data-index=\"{i}\" fill=\"none\" stroke=\"{}\" stroke-width=\"1.5\" points=\"{}\"><title>{label}</title></polyline>",
            PALETTE[i % PALETTE.len()],
            path.join(" ")
        );
    }
    s.push_str("</svg>");
    s
}

/// Games recorded per minute, in equal time buckets over the experiment's run so far.
fn throughput_plot(h: &experiments::History) -> String {
    let (w, ht, left, bottom) = (760.0, 160.0, 70.0, 24.0);
    let per_min: Vec<f64> = h.games.iter().map(|&g| g as f64 * 60.0 / h.bucket_secs as f64).collect();
    let top = per_min.iter().copied().fold(1.0, f64::max);
    let bw = (w - left - 10.0) / per_min.len() as f64;
    let mut s = format!(
        "<svg id=\"throughput\" class=\"plot\" viewBox=\"0 0 {w} {ht}\" width=\"{w}\" height=\"{ht}\" role=\"img\" aria-label=\"games per minute\">"
    );
    let _ = write!(
        s,
        "<text class=\"tick\" x=\"4\" y=\"14\">{top:.0}</text><text class=\"tick\" x=\"4\" y=\"28\">games</text><text class=\"tick\" x=\"4\" y=\"42\">a minute</text>"
    );
    for (i, v) in per_min.iter().enumerate() {
        let bh = (ht - bottom - 10.0) * v / top;
        let _ = write!(
            s,
            "<rect class=\"bucket\" x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{bh:.1}\" fill=\"#3b7dd8\"><title>{v:.0} games/min</title></rect>",
            left + bw * i as f64,
            ht - bottom - bh,
            (bw - 1.0).max(1.0)
        );
    }
    let span = h.bucket_secs * h.games.len() as i64;
    let _ = write!(
        s,
        "<text class=\"tick\" x=\"{left}\" y=\"{}\">{}</text><text class=\"tick\" x=\"{}\" y=\"{}\" text-anchor=\"end\">+{} s ({} s buckets)</text>",
        ht - 6.0,
        h.start.map_or(String::new(), |t| t.format("%H:%M:%S UTC").to_string()),
        w - 10.0,
        ht - 6.0,
        span,
        h.bucket_secs
    );
    s.push_str("</svg>");
    s
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
fn heatmap(d: &Detail) -> String {
    let (rows, cols) = (&d.spec.axes[0], &d.spec.axes[1]);
    let (cw, ch, left, top) = (110.0, 52.0, 110.0, 40.0);
    let (w, h) = (left + cw * cols.values.len() as f64 + 10.0, top + ch * rows.values.len() as f64 + 10.0);
    let v = |x: &serde_json::Value| esc(&x.as_str().map_or_else(|| x.to_string(), str::to_string));
    let mut s = format!(
        "<svg id=\"heatmap\" class=\"plot\" viewBox=\"0 0 {w} {h}\" width=\"{w}\" height=\"{h}\" role=\"img\" aria-label=\"win rate heatmap\">"
    );
    let _ = write!(
        s,
        "<text class=\"axis\" x=\"{left}\" y=\"14\">{} →</text><text class=\"axis\" x=\"4\" y=\"{}\">{} ↓</text>",
        esc(&cols.name),
        top - 6.0,
        esc(&rows.name)
    );
    for (j, c) in cols.values.iter().enumerate() {
        let _ = write!(
            s,
            "<text class=\"tick\" x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
            left + cw * (j as f64 + 0.5),
            top - 6.0,
            v(c)
        );
    }
    for (i, r) in rows.values.iter().enumerate() {
        let _ = write!(
            s,
            "<text class=\"tick\" x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            left - 6.0,
            top + ch * (i as f64 + 0.5) + 4.0,
            v(r)
        );
        for j in 0..cols.values.len() {
            let Some(c) = d.cells.get(i * cols.values.len() + j) else { continue };
            let (x, y) = (left + cw * j as f64, top + ch * i as f64);
            let fill = c.win_rate.map_or("#eee".into(), colour);
            let _ = write!(
                s,
                "<g class=\"hcell\" data-index=\"{}\"><title>{}: {} ({} – {}) over {} games, {:.1} ms a move</title><rect x=\"{x}\" y=\"{y}\" width=\"{cw}\" height=\"{ch}\" fill=\"{fill}\"/><text x=\"{tx:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}{}</text><text class=\"tick\" x=\"{tx:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{:.1} ms/move</text></g>",
                c.index,
                esc(&cell_label(d, c)),
                pct(c.win_rate),
                pct(c.ci_low),
                pct(c.ci_high),
                c.games,
                c.ms_per_move[0],
                y + ch / 2.0 - 2.0,
                pct(c.win_rate),
                match (c.ci_low, c.ci_high) {
                    (Some(lo), Some(hi)) => format!(" ±{:.1}", 50.0 * (hi - lo)),
                    _ => String::new(),
                },
                y + ch / 2.0 + 14.0,
                c.ms_per_move[0],
                tx = x + cw / 2.0,
            );
        }
    }
    s.push_str("</svg>");
    s
}

/// `/workers`: every volunteer, when it was last seen, what it contributed.
pub async fn workers(State(st): State<AppState>) -> Result<Html<String>> {
    let list = crate::workers::list(&st.db).await?;
    let mut b = String::from(
        "<table id=\"workers\"><tr><th>name</th><th>threads</th><th>last seen</th><th>games</th><th>batches</th><th>games/s</th><th>working on</th></tr>",
    );
    for w in &list {
        let _ = write!(
            b,
            "<tr class=\"worker\"><td>{}</td><td>{}</td><td>{}</td><td class=\"games\">{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&w.name),
            w.threads,
            ago(w.last_seen),
            w.games,
            w.batches,
            w.games_per_sec.map_or("–".into(), |g| format!("{g:.1}")),
            if w.leased_batches > 0 { format!("{} batch(es)", w.leased_batches) } else { "idle".into() }
        );
    }
    b.push_str("</table>");
    let live = list.iter().any(|w| w.seconds_since_seen < 300.0);
    Ok(page("Workers", live, &b))
}
