//! The experiment pages' plots, each from the same views as the JSON API: win rate per cell,
//! convergence with its 95% band, the SPRT's LLR against its bounds, win rate against time per
//! move with its Pareto front, the heatmap of a 2-D grid, throughput, endgame solve times and a
//! fitted win table.

use super::charts::{
    Axes, Frame, PALETTE, Scale, Timed, W, diverging, f1, ink, legend, padded, pareto_front, pct0, plain, rgb,
    thousands,
};
use crate::experiments::{CellView, History, Step};
use maud::{Markup, html};
use shared::spec::Axis;
use shared::stats::{Evidence, pct};

/// How a cell is named on a plot: `short` where room is tight, `full` in tooltips and legends.
pub struct Label {
    pub short: String,
    pub full: String,
}

/// Where a cell surely lies from 50%: its interval's end nearest 50%, or 50% when the interval
/// holds it. Colours follow this, so a wide interval never looks like a strong result.
fn surely(c: &CellView) -> Option<f64> {
    let (lo, hi) = (c.ci_low?, c.ci_high?);
    Some(if lo > 0.5 {
        lo
    } else if hi < 0.5 {
        hi
    } else {
        0.5
    })
}

/// Whether a cell's 95% interval leaves out 50%.
fn decided(c: &CellView) -> bool {
    surely(c).is_some_and(|s| s != 0.5)
}

/// A win-rate scale that fits `values` in 5% steps, at least 45% to 55%.
fn rate_scale(values: impl Iterator<Item = f64>) -> impl Fn(f64, f64) -> Scale {
    let (lo, hi) = values.fold((0.45f64, 0.55f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let (lo, hi) = padded(lo - 0.005, hi + 0.005, 0.05, 0.0, 1.0);
    move |from, to| Scale::linear(lo, hi, from, to)
}

fn even_line(f: &Frame) -> Markup {
    let y = f1(f.y.px(0.5));
    html! { line.even x1=(f.left) x2=(f.right) y1=(y) y2=(y) {} }
}

/// Points with 95% error bars, one per cell; filled where the interval leaves out 50%.
pub fn winrate(cells: &[CellView], labels: &[Label], x_title: &str, bot1: &str) -> Markup {
    let n = cells.len().max(1);
    let y = rate_scale(cells.iter().flat_map(|c| [c.ci_low, c.ci_high]).flatten());
    let f = Frame::with_room(440.0, 110.0, |a, b| Scale::linear(-0.5, n as f64 - 0.5, a, b), y);
    let y_title = format!("win rate of {bot1}");
    let axes = Axes { x_ticks: false, ..Axes::new(x_title, &y_title, &plain, &pct0) };
    let marks = html! {
        (even_line(&f))
        @for (i, c) in cells.iter().enumerate() {
            @let x = f.x.px(i as f64);
            @let (xi, ly) = (f1(x), f1(f.bottom + 14.0));
            text.tick x=(xi) y=(ly) text-anchor="end" transform={ "rotate(-35 " (xi) " " (ly) ")" } { (labels[i].short) }
            @match (c.win_rate, c.ci_low, c.ci_high) {
                (Some(p), Some(a), Some(b)) => {
                    g.cell data-index=(c.index) data-decided=(decided(c)) {
                        title { (labels[i].full) ": " (pct(p)) " (95%: " (pct(a)) " – " (pct(b)) "), " (thousands(c.games as f64)) " games" }
                        line.ci x1=(xi) x2=(xi) y1=(f1(f.y.px(a))) y2=(f1(f.y.px(b))) {}
                        line.ci x1=(f1(x - 5.0)) x2=(f1(x + 5.0)) y1=(f1(f.y.px(a))) y2=(f1(f.y.px(a))) {}
                        line.ci x1=(f1(x - 5.0)) x2=(f1(x + 5.0)) y1=(f1(f.y.px(b))) y2=(f1(f.y.px(b))) {}
                        circle class=(if decided(c) { "point sig" } else { "point" }) cx=(xi) cy=(f1(f.y.px(p))) r="5" {}
                    }
                }
                _ => {
                    @if let Some(caveat) = c.caveat {
                        g.cell.caveat data-index=(c.index) {
                            title { (labels[i].full) ": " (caveat) }
                            text.caveat x=(xi) y=(f1(f.y.px(0.5) - 8.0)) text-anchor="middle" {
                                @if c.evidence == Evidence::Identical { "=" } @else { "?" }
                            }
                        }
                    }
                }
            }
        }
    };
    html! {
        (f.svg("winrate", "win rate per cell with 95% intervals", &axes, marks))
        ul.legend {
            li { span.mark.sig {} "95% interval leaves out 50%" }
            li { span.mark {} "interval holds 50%" }
            li { b { "=" } " bots identical on these deals (no interval)" }
            li { b { "?" } " no information yet" }
        }
    }
}

/// Cells past which convergence is drawn as small multiples, one panel a cell on the same
/// scales: more lines than this on one chart blend their bands into one.
const OVERLAID: usize = 6;

/// Each cell's win rate as its batches came in, with the 95% band around it: one chart for a
/// few cells, one panel a cell for more.
pub fn convergence(h: &History, labels: &[Label], bot1: &str) -> Markup {
    let max_games = h.convergence.iter().flatten().map(|s| s.games).max().unwrap_or(1).max(1) as f64;
    // The scale holds every line and band from a tenth of the games on: the first probes (a
    // few games, anywhere from 0 to 100%) would flatten the rest; what they reach beyond the
    // scale is clipped at the frame.
    let y = || {
        rate_scale(
            h.convergence
                .iter()
                .flatten()
                .filter(|s| s.games as f64 >= max_games / 10.0)
                .flat_map(|s| [Some(s.win_rate), s.ci_low, s.ci_high].into_iter().flatten()),
        )
    };
    let y_title = format!("win rate of {bot1}");
    let cells: Vec<(usize, &Vec<Step>)> = h.convergence.iter().enumerate().filter(|(_, s)| !s.is_empty()).collect();
    if cells.len() > OVERLAID {
        return html! {
            div.multiples #convergence {
                @for (i, steps) in &cells {
                    @let f = Frame::panel(400.0, 230.0, |a, b| Scale::linear(0.0, max_games, a, b), y());
                    @let clip = format!("convergence-clip-{i}");
                    @let name = labels.get(*i).map_or(String::new(), |l| l.full.clone());
                    @let axes = Axes { x_tick_count: 4, y_tick_count: 4, ..Axes::new("games", "", &thousands, &pct0) };
                    (f.svg(&format!("convergence-{i}"), &name, &axes, html! {
                        defs { (f.clip(&clip)) }
                        text.panel-title x=(f.left) y="16" { (name) }
                        (even_line(&f))
                        (cell_marks(&f, *i, steps, PALETTE[0], &clip, labels))
                    }))
                }
            }
            p.meta {
                "One panel a cell, all on the same scales: the win rate of " (bot1) " as games came in, "
                "its 95% band, a dot for each batch counted."
            }
        };
    }
    let f = Frame::new(440.0, |a, b| Scale::linear(0.0, max_games, a, b), y());
    let axes = Axes::new("games played in the cell", &y_title, &thousands, &pct0);
    let marks = html! {
        defs { (f.clip("convergence-clip")) }
        (even_line(&f))
        @for (i, steps) in &cells {
            (cell_marks(&f, *i, steps, PALETTE[i % PALETTE.len()], "convergence-clip", labels))
        }
    };
    html! {
        (f.svg("convergence", "win rate as games came in, with 95% bands", &axes, marks))
        @if labels.len() > 1 { (cell_legend("convergence-legend", labels)) }
        p.meta { "A dot for each batch counted: the lines between them are straight, whatever the games between." }
    }
}

/// One cell's band, line and a dot per step.
fn cell_marks(f: &Frame, i: usize, steps: &[Step], colour: &str, clip: &str, labels: &[Label]) -> Markup {
    let banded: Vec<_> = steps.iter().filter_map(|s| Some((s.games, s.ci_low?, s.ci_high?))).collect();
    let xy = |g: u64, v: f64| format!("{},{}", f1(f.x.px(g as f64)), f1(f.y.px(v)));
    html! {
        @if banded.len() > 1 {
            @let pts: Vec<String> = banded.iter().map(|&(g, _, hi)| (g, hi)).chain(banded.iter().rev().map(|&(g, lo, _)| (g, lo)))
                .map(|(g, v)| xy(g, v)).collect();
            polygon.band data-index=(i) clip-path={ "url(#" (clip) ")" } fill=(colour) points=(pts.join(" ")) {}
        }
        @let pts: Vec<String> = steps.iter().map(|s| xy(s.games, s.win_rate)).collect();
        g clip-path={ "url(#" (clip) ")" } {
            polyline.series data-index=(i) fill="none" stroke=(colour) stroke-width="2" points=(pts.join(" ")) {
                title { (labels.get(i).map_or("", |l| l.full.as_str())) }
            }
            @for s in steps {
                circle.step cx=(f1(f.x.px(s.games as f64))) cy=(f1(f.y.px(s.win_rate))) r="2.5" fill=(colour) {}
            }
        }
    }
}

/// Each cell's colour and name, as its line is drawn.
fn cell_legend(id: &str, labels: &[Label]) -> Markup {
    let items: Vec<(String, &str)> =
        labels.iter().enumerate().map(|(i, l)| (l.full.clone(), PALETTE[i % PALETTE.len()])).collect();
    legend(id, &items)
}

/// The SPRT's log-likelihood ratio of each cell as its games came in, between the bounds that
/// stop it (fishtest's view).
pub fn sprt(h: &History, labels: &[Label], bounds: (f64, f64), p0: f64, p1: f64) -> Markup {
    let max_games = h.convergence.iter().flatten().map(|s| s.games).max().unwrap_or(1).max(1) as f64;
    let llrs = h.convergence.iter().flatten().filter_map(|s| s.llr);
    let (lo, hi) = llrs.fold(bounds, |(lo, hi), v| (lo.min(v), hi.max(v)));
    let (lo, hi) = padded(lo - 0.3, hi + 0.3, 0.5, f64::MIN, f64::MAX);
    let f = Frame::new(380.0, |a, b| Scale::linear(0.0, max_games, a, b), |a, b| Scale::linear(lo, hi, a, b));
    let axes = Axes::new("games played in the cell", "log-likelihood ratio (LLR)", &thousands, &plain);
    let bound = |v: f64, class: &str, text: String| {
        let y = f1(f.y.px(v));
        html! {
            line class=(class) x1=(f.left) x2=(f.right) y1=(y) y2=(y) {}
            text class={ "bound-label " (class) } x=(f1(f.right - 6.0)) y=(f1(f.y.px(v) - 6.0)) text-anchor="end" { (text) }
        }
    };
    let marks = html! {
        (bound(bounds.1, "upper", format!("{:.2}: accept H1 (win rate ≥ {p1})", bounds.1)))
        (bound(bounds.0, "lower", format!("{:.2}: accept H0 (win rate ≤ {p0})", bounds.0)))
        @for (i, steps) in h.convergence.iter().enumerate() {
            @let pts: Vec<String> = steps.iter().filter_map(|s| Some(format!("{},{}", f1(f.x.px(s.games as f64)), f1(f.y.px(s.llr?))))).collect();
            @if !pts.is_empty() {
                polyline.llr data-index=(i) fill="none" stroke=(PALETTE[i % PALETTE.len()]) stroke-width="2" points=(pts.join(" ")) {
                    title { (labels.get(i).map_or("", |l| l.full.as_str())) }
                }
                // Each line named at its end: colours repeat past ten cells, names do not.
                @if let (Some(s), Some(l)) = (steps.iter().rev().find(|s| s.llr.is_some()), labels.get(i)) {
                    text.tick.line-end x=(f1(f.x.px(s.games as f64) + 4.0)) y=(f1(f.y.px(s.llr.unwrap_or_default()) + 4.0)) { (l.short) }
                }
            }
        }
    };
    html! {
        (f.svg("sprt", "SPRT log-likelihood ratio against its bounds", &axes, marks))
        @if labels.len() > 1 { (cell_legend("sprt-legend", labels)) }
    }
}

/// A cell's LLR between its bounds, as a bar for the cells table.
pub fn llr_bar(llr: Option<f64>, (lo, hi): (f64, f64)) -> Markup {
    match llr {
        None => html! { "–" },
        Some(v) => {
            let at = ((v - lo) / (hi - lo)).clamp(0.0, 1.0);
            html! {
                span.llrbar title={ "LLR " (format!("{v:.2}")) " between " (format!("{lo:.2}")) " and " (format!("{hi:.2}")) } {
                    span.llrmark style={ "left:" (format!("{:.1}", 100.0 * at)) "%" } {}
                }
                " " (format!("{v:.2}")) " " small { "[" (format!("{lo:.2}, {hi:.2}")) "]" }
            }
        }
    }
}

/// Win rate against the first bot's time per move, every cell with an interval, and the
/// Pareto front: the cells no other cell beats while taking less time.
pub fn pareto(cells: &[CellView], labels: &[Label], bot1: &str, timing: &[Option<(f64, f64, f64)>]) -> Option<Markup> {
    // (cell, ms, rate, rate low, rate high, ms low, ms high)
    let pts: Vec<(usize, f64, f64, f64, f64, f64, f64)> = cells
        .iter()
        .enumerate()
        .filter_map(|(i, c)| {
            let (ms, lo, hi) = timing.get(c.index as usize).copied().flatten()?;
            Some((i, ms, c.win_rate?, c.ci_low?, c.ci_high?, lo, hi))
        })
        .filter(|p| p.1 > 0.0)
        .collect();
    if pts.len() < 2 {
        return None;
    }
    let (tmin, tmax) = pts.iter().fold((f64::MAX, 0f64), |(a, b), p| (a.min(p.5.max(p.1 / 2.0)), b.max(p.6)));
    let log = tmax / tmin > 8.0;
    let x = move |a, b| {
        if log { Scale::log(tmin / 1.5, tmax * 1.5, a, b) } else { Scale::linear(0.0, tmax * 1.1, a, b) }
    };
    let f = Frame::new(440.0, x, rate_scale(pts.iter().flat_map(|p| [p.3, p.4])));
    let x_title = format!(
        "milliseconds per move of {bot1}, with 95% intervals over its batches{}",
        if log { " (log scale)" } else { "" }
    );
    let y_title = format!("win rate of {bot1}");
    let axes = Axes::new(&x_title, &y_title, &plain, &pct0);
    // A front drawn on timing noise would rank cells by the machines that played them.
    let front = pareto_front(&pts.iter().map(|p| Timed { ms: p.1, lo: p.5, hi: p.6, rate: p.2 }).collect::<Vec<_>>());
    let drawn = front.len() < pts.len();
    let line: Vec<String> =
        front.iter().map(|&k| format!("{},{}", f1(f.x.px(pts[k].1)), f1(f.y.px(pts[k].2)))).collect();
    let marks = html! {
        (even_line(&f))
        @if drawn { polyline.front fill="none" points=(line.join(" ")) {} }
        @for (k, &(i, ms, p, lo, hi, tlo, thi)) in pts.iter().enumerate() {
            @let (x, on_front) = (f.x.px(ms), front.contains(&k));
            g.tradeoff data-index=(cells[i].index) data-front=(on_front) {
                title { (labels[i].full) ": " (pct(p)) " (95%: " (pct(lo)) " – " (pct(hi)) ") at " (format!("{ms:.2}")) " ms a move (95%: " (format!("{tlo:.2} – {thi:.2}")) ")" }
                line.ci x1=(f1(x)) x2=(f1(x)) y1=(f1(f.y.px(lo))) y2=(f1(f.y.px(hi))) {}
                line.ci.time x1=(f1(f.x.px(tlo))) x2=(f1(f.x.px(thi))) y1=(f1(f.y.px(p))) y2=(f1(f.y.px(p))) {}
                circle class=(if on_front && drawn { "point sig" } else { "point" }) cx=(f1(x)) cy=(f1(f.y.px(p))) r="5" {}
                text.tick x=(f1(x + 8.0)) y=(f1(f.y.px(p) - 6.0)) { (labels[i].short) }
            }
        }
    };
    Some(html! {
        (f.svg("pareto", "win rate against time per move", &axes, marks))
        ul.legend {
            @if drawn {
                li { span.mark.sig {} "on the front: no other cell is surely faster (its times' interval wholly below) and as strong, nor as fast (intervals overlapping) and stronger" }
                li { span.mark {} "dominated" }
            } @else {
                li #no-front { "no front: no cell is surely faster than another and at least as strong, so the times here are within their noise" }
            }
            li { "bars: 95% intervals of the win rate (up) and of the time a move over the cell's batches (across)" }
        }
    })
}

/// A 2-D grid: first axis down, second across (cells are row-major in axis order). Colour is
/// where the cell surely lies (its interval's end nearest 50%); cells whose interval leaves out
/// 50% are outlined and starred.
pub fn heatmap(cells: &[CellView], labels: &[Label], rows: &Axis, cols: &Axis) -> Markup {
    let (left, top, scale_w) = (150.0, 48.0, 130.0);
    let cw = (W - left - scale_w - 20.0) / cols.values.len().max(1) as f64;
    let ch = 64.0;
    let h = top + ch * rows.values.len() as f64 + 16.0;
    let value = |v: &serde_json::Value| v.as_str().map_or_else(|| v.to_string(), str::to_string);
    let (sx, steps) = (W - scale_w + 20.0, 13);
    let step_h = (h - top - 16.0).min(260.0) / steps as f64;
    html! {
        div.chart {
        svg.plot #heatmap viewBox={ "0 0 " (W) " " (f1(h)) } role="img" aria-label="win rate heatmap" {
            text.axis x=(f1(left + (W - left - scale_w - 20.0) / 2.0)) y="16" text-anchor="middle" { (cols.name) " →" }
            text.axis transform={ "translate(18 " (f1(top + (h - top) / 2.0)) ") rotate(-90)" } text-anchor="middle" { (rows.name) " ↓" }
            @for (j, c) in cols.values.iter().enumerate() {
                text.tick x=(f1(left + cw * (j as f64 + 0.5))) y=(f1(top - 8.0)) text-anchor="middle" { (value(c)) }
            }
            @for (i, r) in rows.values.iter().enumerate() {
                text.tick x=(f1(left - 8.0)) y=(f1(top + ch * (i as f64 + 0.5) + 4.0)) text-anchor="end" { (value(r)) }
                @for j in 0..cols.values.len() {
                    @if let Some(c) = cells.get(i * cols.values.len() + j) {
                        @let (x, y) = (left + cw * j as f64, top + ch * i as f64);
                        @let bg = surely(c).map(diverging);
                        @let fg = bg.map_or("#111", ink);
                        @let tx = f1(x + cw / 2.0);
                        g.hcell data-index=(c.index) data-decided=(decided(c)) {
                            title {
                                (labels.get(c.index as usize).map_or("", |l| l.full.as_str())) ": "
                                @match c.caveat { Some(w) => { (w) }, None => { (super::pct(c.win_rate)) " (95%: " (super::pct(c.ci_low)) " – " (super::pct(c.ci_high)) ")" } }
                                " over " (thousands(c.games as f64)) " games, " (format!("{:.1}", c.ms_per_move[0])) " ms a move"
                            }
                            rect class=(if decided(c) { "sig" } else { "" }) x=(f1(x + 1.0)) y=(f1(y + 1.0)) width=(f1(cw - 2.0)) height=(f1(ch - 2.0)) fill=(bg.map_or("#eee".to_string(), rgb)) {}
                            text.rate x=(tx) y=(f1(y + ch / 2.0 - 4.0)) text-anchor="middle" fill=(fg) {
                                @match (c.caveat, c.win_rate, c.ci_low, c.ci_high) {
                                    // A symbol, explained under the chart: a caveat's words overflow a cell.
                                    (Some(_), ..) => { @if c.evidence == Evidence::Identical { "=" } @else { "?" } }
                                    (None, Some(p), Some(lo), Some(hi)) => {
                                        (pct(p)) (format!(" ±{:.1}", 50.0 * (hi - lo))) @if decided(c) { " *" }
                                    }
                                    _ => { "–" }
                                }
                            }
                            text.ms x=(tx) y=(f1(y + ch / 2.0 + 16.0)) text-anchor="middle" fill=(fg) { (format!("{:.1}", c.ms_per_move[0])) " ms/move" }
                        }
                    }
                }
            }
            g #colour-scale {
                text.tick x=(f1(sx)) y=(f1(top - 8.0)) { "surely at least" }
                @for k in 0..steps {
                    @let p = 0.65 - 0.3 * k as f64 / (steps - 1) as f64;
                    @let y = top + step_h * k as f64;
                    rect x=(f1(sx)) y=(f1(y)) width="22" height=(f1(step_h + 0.5)) fill=(rgb(diverging(p))) {}
                    @if k % 2 == 0 { text.tick x=(f1(sx + 28.0)) y=(f1(y + step_h / 2.0 + 4.0)) { (pct0(p)) } }
                }
            }
        }
        }
        p.meta {
            "Colour: the end of the cell's 95% interval nearest 50% (how far from even the cell surely is), so a wide "
            "interval stays pale. Outlined, with *: the interval leaves out 50%. =: the bots played alike on these deals "
            "(no interval); ?: no information yet. Second line: the first bot's time a move."
        }
    }
}

/// Results recorded per minute, in equal time buckets over the experiment's run so far, with
/// their moving average over about a minute: uploads arrive in lumps (a batch's games at
/// once), so single buckets swing between full and empty, and the average is the rate.
pub fn throughput(h: &History, counted: &str) -> Markup {
    let per_min: Vec<f64> = h.games.iter().map(|&g| g as f64 * 60.0 / h.bucket_secs as f64).collect();
    let n = per_min.len();
    let w = ((60 / h.bucket_secs.max(1)) as usize).max(3) | 1;
    let smooth: Vec<f64> = (0..n)
        .map(|i| {
            let window = &per_min[i.saturating_sub(w / 2)..(i + w / 2 + 1).min(n)];
            window.iter().sum::<f64>() / window.len() as f64
        })
        .collect();
    let top = per_min.iter().copied().fold(1.0, f64::max);
    // Seconds for a short run, so that the ticks fall on whole numbers.
    let secs = (h.bucket_secs * n as i64) as f64;
    let (unit, per) = if secs < 180.0 { ("seconds", 1.0) } else { ("minutes", 60.0) };
    let span = secs / per;
    let f = Frame::new(280.0, |a, b| Scale::linear(0.0, span, a, b), |a, b| Scale::linear(0.0, top * 1.1, a, b));
    let start = h.start.map_or(String::new(), |t| t.format("%H:%M:%S UTC").to_string());
    let x_title = format!("{unit} since the first result ({start}; {} s buckets)", h.bucket_secs);
    let y_title = format!("{counted} a minute");
    let axes = Axes::new(&x_title, &y_title, &plain, &plain);
    let bw = h.bucket_secs as f64 / per;
    let line: Vec<String> = smooth
        .iter()
        .enumerate()
        .map(|(i, v)| format!("{},{}", f1(f.x.px(bw * (i as f64 + 0.5))), f1(f.y.px(*v))))
        .collect();
    let marks = html! {
        @for (i, v) in per_min.iter().enumerate() {
            @let (x0, x1) = (f.x.px(bw * i as f64), f.x.px(bw * (i + 1) as f64));
            rect.bucket x=(f1(x0)) y=(f1(f.y.px(*v))) width=(f1((x1 - x0 - 1.0).max(1.0))) height=(f1(f.bottom - f.y.px(*v))) {
                title { (format!("{v:.0}")) " " (counted) " a minute" }
            }
        }
        polyline.smoothed fill="none" points=(line.join(" ")) {}
    };
    html! {
        (f.svg("throughput", "results a minute", &axes, marks))
        ul.legend {
            li { span.swatch.bucket-key {} (h.bucket_secs) " s buckets (as the uploads came)" }
            li { span.swatch.smooth-key {} "the rate: their average over " (w) " buckets" }
        }
    }
}

/// How long first solves took, in buckets.
pub fn solve_times(hist: &[u64], buckets: &[&str]) -> Markup {
    let top = hist.iter().copied().max().unwrap_or(0).max(1) as f64;
    let n = hist.len().max(1) as f64;
    // At least 0..5, so that the ticks of small counts are whole numbers.
    let f = Frame::new(
        300.0,
        |a, b| Scale::linear(-0.5, n - 0.5, a, b),
        |a, b| Scale::linear(0.0, (top * 1.15).max(5.0), a, b),
    );
    let axes =
        Axes { x_ticks: false, y_tick_count: 5, ..Axes::new("time to solve a position", "positions", &plain, &plain) };
    let bar = (f.x.px(1.0) - f.x.px(0.0)) * 0.7;
    let marks = html! {
        @for (i, (&count, label)) in hist.iter().zip(buckets).enumerate() {
            @let (x, y) = (f.x.px(i as f64), f.y.px(count as f64));
            rect.bucket data-count=(count) x=(f1(x - bar / 2.0)) y=(f1(y)) width=(f1(bar)) height=(f1(f.bottom - y)) { title { (label) ": " (count) } }
            text.tick x=(f1(x)) y=(f1(y - 6.0)) text-anchor="middle" { (count) }
            text.tick x=(f1(x)) y=(f1(f.bottom + 18.0)) text-anchor="middle" { (label) }
        }
    };
    f.svg("times", "time to solve, first solves", &axes, marks)
}

/// P(win) for the player to move against spread, one line per count of unseen tiles.
pub fn wintable(t: &engine::winpct::WinTable) -> Markup {
    let sm = t.spread_max() as f64;
    let f = Frame::new(420.0, |a, b| Scale::linear(-sm, sm, a, b), |a, b| Scale::linear(0.0, 1.0, a, b));
    let fmt = |v: f64| format!("{v:+.0}");
    let axes = Axes::new("spread of the player to move (points)", "P(win) of the player to move", &fmt, &pct0);
    let rows: Vec<usize> = [t.unseen_max(), 50, 20, 7].into_iter().filter(|&u| u <= t.unseen_max()).collect();
    let colour = |i: usize| PALETTE[i % PALETTE.len()];
    let marks = html! {
        @for (i, unseen) in rows.iter().enumerate() {
            @let points: Vec<String> = (-t.spread_max()..=t.spread_max())
                .step_by(5)
                .map(|sp| format!("{},{}", f1(f.x.px(sp as f64)), f1(f.y.px(t.win_prob(sp, *unseen)))))
                .collect();
            polyline.series data-unseen=(unseen) fill="none" stroke=(colour(i)) stroke-width="2" points=(points.join(" ")) {}
        }
    };
    let items: Vec<(String, &str)> =
        rows.iter().enumerate().map(|(i, u)| (format!("{u} tiles unseen"), colour(i))).collect();
    html! {
        (f.svg("wintable", "P(win) against spread", &axes, marks))
        (legend("wintable-legend", &items))
    }
}

/// A value by iteration (a tuned parameter, a run's objective) as a line through its points,
/// with a band of `half` either side of each (the perturbations tried, or an interval), on a
/// y axis from `lo` to `hi`.
pub fn trajectory(id: &str, y_title: &str, points: &[(f64, f64, f64)], (lo, hi): (f64, f64)) -> Markup {
    let last = points.iter().map(|p| p.0).fold(1.0, f64::max);
    let f = Frame::new(300.0, |a, b| Scale::linear(0.0, last, a, b), |a, b| Scale::linear(lo, hi, a, b));
    let axes = Axes::new("iteration", y_title, &plain, &plain);
    let xy = |x: f64, y: f64| format!("{},{}", f1(f.x.px(x)), f1(f.y.px(y.clamp(lo, hi))));
    let clip = format!("{id}-clip");
    let marks = html! {
        defs { (f.clip(&clip)) }
        @if points.len() > 1 {
            @let band: Vec<String> = points.iter().map(|&(x, y, h)| xy(x, y + h)).chain(points.iter().rev().map(|&(x, y, h)| xy(x, y - h))).collect();
            polygon.band clip-path={ "url(#" (clip) ")" } fill=(PALETTE[0]) points=(band.join(" ")) {}
        }
        @let line: Vec<String> = points.iter().map(|&(x, y, _)| xy(x, y)).collect();
        polyline.series fill="none" stroke=(PALETTE[0]) stroke-width="2" points=(line.join(" ")) {}
        @for &(x, y, _) in points {
            circle.point cx=(f1(f.x.px(x))) cy=(f1(f.y.px(y.clamp(lo, hi)))) r="3.5" fill=(PALETTE[0]) {}
        }
    };
    f.svg(id, y_title, &axes, marks)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(games: u64, win_rate: f64, half: f64) -> Step {
        Step { games, win_rate, ci_low: Some(win_rate - half), ci_high: Some(win_rate + half), llr: None }
    }

    fn history(cells: usize) -> History {
        let convergence = (0..cells)
            .map(|c| (1..=8).map(|k| step(500 * k, 0.40 + 0.01 * c as f64, 0.4 / k as f64)).collect())
            .collect();
        History { convergence, start: None, bucket_secs: 10, games: Vec::new(), ms_per_move: Vec::new() }
    }

    fn labels(n: usize) -> Vec<Label> {
        (0..n).map(|i| Label { short: format!("#{i}"), full: format!("t={i}") }).collect()
    }

    /// Up to six cells share one chart (a colour each, a legend); twelve get a panel each,
    /// every panel on the same scales and titled with its cell.
    #[test]
    fn many_cells_are_drawn_as_small_multiples() {
        let few = convergence(&history(4), &labels(4), "softmax").into_string();
        assert_eq!(few.matches("<svg").count(), 1);
        assert_eq!(few.matches("<polyline class=\"series\"").count(), 4);
        assert!(few.contains("id=\"convergence-legend\""));
        let many = convergence(&history(12), &labels(12), "softmax").into_string();
        assert_eq!(many.matches("<svg").count(), 12);
        assert_eq!(many.matches("<polyline class=\"series\"").count(), 12);
        for i in 0..12 {
            assert!(many.contains(&format!(">t={i}</text>")), "panel {i} is titled");
        }
        // A dot for each batch, and the same y ticks in every panel.
        assert_eq!(many.matches("<circle class=\"step\"").count(), 12 * 8);
        let ticks = |panel: &str| panel.matches("class=\"tick\"").count();
        let panels: Vec<&str> = many.split("<svg").skip(1).collect();
        assert!(panels.iter().all(|p| ticks(p) == ticks(panels[0])));
    }
}
