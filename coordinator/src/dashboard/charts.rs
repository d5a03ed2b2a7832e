//! The dashboards' charts: SVG drawn on the server, as wide as the page.
//!
//! Why not a JavaScript plotting library: the pages must read with JavaScript off, the tests
//! read the plotted numbers straight from the DOM, and a plot is a few hundred lines of
//! geometry here against a bundle to vet, pin and serve. Every chart has axis titles and tick
//! labels from [`Frame`], a legend where it has more than one series, and `<title>` tooltips.

use maud::{Markup, html};

/// Width of every chart's coordinate system; CSS stretches it to the page.
pub const W: f64 = 1200.0;

/// One decimal, for SVG coordinates.
pub fn f1(x: f64) -> String {
    format!("{x:.1}")
}

/// Line colours for series, cycling (the "tab10" palette: distinct, and readable on white).
pub const PALETTE: [&str; 10] =
    ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"];

/// A mapping from data values to a span of pixels, linear or logarithmic.
#[derive(Clone, Copy, Debug)]
pub struct Scale {
    lo: f64,
    hi: f64,
    log: bool,
    from: f64,
    to: f64,
}

impl Scale {
    /// `lo..hi` onto pixels `from..to` (`to < from` for a y axis, which grows upwards).
    pub fn linear(lo: f64, hi: f64, from: f64, to: f64) -> Self {
        let hi = if hi > lo { hi } else { lo + 1.0 };
        Self { lo, hi, log: false, from, to }
    }

    /// Logarithmic; `lo` must be positive.
    pub fn log(lo: f64, hi: f64, from: f64, to: f64) -> Self {
        let hi = if hi > lo { hi } else { lo * 10.0 };
        Self { lo, hi, log: true, from, to }
    }

    pub fn px(&self, v: f64) -> f64 {
        let f = if self.log {
            (v.max(self.lo * 1e-3).ln() - self.lo.ln()) / (self.hi.ln() - self.lo.ln())
        } else {
            (v - self.lo) / (self.hi - self.lo)
        };
        self.from + f * (self.to - self.from)
    }

    /// Round values for tick marks inside the range: about `n` of them, at 1, 2 or 5 times a
    /// power of ten (or at such multiples of each power of ten on a log scale).
    pub fn ticks(&self, n: usize) -> Vec<f64> {
        let inside = |t: &f64| *t >= self.lo - 1e-9 * self.lo.abs().max(1.0) && *t <= self.hi * (1.0 + 1e-9) + 1e-12;
        if self.log {
            let mut out = Vec::new();
            let mut p = 10f64.powi(self.lo.log10().floor() as i32);
            while p <= self.hi {
                for m in [1.0, 2.0, 5.0] {
                    out.push(m * p);
                }
                p *= 10.0;
            }
            out.retain(inside);
            // Dense decades: keep the powers of ten only.
            if out.len() > n {
                out.retain(|t| (t.log10() - t.log10().round()).abs() < 1e-9);
            }
            return out;
        }
        let step = nice_step((self.hi - self.lo) / n.max(1) as f64);
        let first = (self.lo / step).ceil() as i64;
        (first..).map(|i| i as f64 * step).take_while(|t| inside(t)).take(50).collect()
    }
}

/// 1, 2 or 5 times a power of ten, near `raw`.
fn nice_step(raw: f64) -> f64 {
    if raw <= 0.0 || !raw.is_finite() {
        return 1.0;
    }
    let mag = 10f64.powf(raw.log10().floor());
    let f = raw / mag;
    mag * if f < 1.5 {
        1.0
    } else if f < 3.0 {
        2.0
    } else if f < 7.0 {
        5.0
    } else {
        10.0
    }
}

/// A round range around `lo..hi` in steps of `step`, at least `min` wide around its middle,
/// within `floor..ceil`.
pub fn padded(lo: f64, hi: f64, step: f64, floor: f64, ceil: f64) -> (f64, f64) {
    // Rounded to a billionth, so that 12 x 0.05 is 0.6 and not 0.6000000000000001.
    let round = |x: f64| (x * 1e9).round() / 1e9;
    let lo = round((lo / step).floor() * step).max(floor);
    let hi = round((hi / step).ceil() * step).min(ceil);
    if hi > lo { (lo, hi) } else { ((lo - step).max(floor), (hi + step).min(ceil)) }
}

/// A chart's plot area inside its SVG, with its two scales.
pub struct Frame {
    /// The SVG's width and height (its viewBox).
    pub w: f64,
    pub h: f64,
    pub left: f64,
    pub right: f64,
    pub top: f64,
    pub bottom: f64,
    pub x: Scale,
    pub y: Scale,
}

/// Room around the plot area for tick labels and axis titles.
const LEFT: f64 = 84.0;
const RIGHT: f64 = 24.0;
const TOP: f64 = 16.0;
const BOTTOM: f64 = 56.0;

impl Frame {
    /// A `W` x `h` chart; `x` and `y` make its scales from the plot area's pixel span.
    pub fn new(h: f64, x: impl Fn(f64, f64) -> Scale, y: impl Fn(f64, f64) -> Scale) -> Self {
        Self::with_room(h, BOTTOM, x, y)
    }

    /// As [`Frame::new`], with `room` pixels under the plot area (for slanted labels).
    pub fn with_room(h: f64, room: f64, x: impl Fn(f64, f64) -> Scale, y: impl Fn(f64, f64) -> Scale) -> Self {
        let (left, right, top, bottom) = (LEFT, W - RIGHT, TOP, h - room);
        Self { w: W, h, left, right, top, bottom, x: x(left, right), y: y(bottom, top) }
    }

    /// A small `w` x `h` panel of a set of small multiples, with room above the plot area
    /// for its title.
    pub fn panel(w: f64, h: f64, x: impl Fn(f64, f64) -> Scale, y: impl Fn(f64, f64) -> Scale) -> Self {
        let (left, right, top, bottom) = (56.0, w - 14.0, 26.0, h - 40.0);
        Self { w, h, left, right, top, bottom, x: x(left, right), y: y(bottom, top) }
    }

    /// The SVG element around a chart's marks, with its axes, gridlines and titles.
    /// The chart, in a box that scrolls sideways where the screen is narrower than the chart
    /// can be and stay legible (`dashboards/style.css`).
    pub fn svg(&self, id: &str, label: &str, axes: &Axes, marks: Markup) -> Markup {
        html! {
            div.chart {
                svg.plot #(id) viewBox={ "0 0 " (self.w) " " (self.h) } preserveAspectRatio="xMidYMid meet" role="img" aria-label=(label) {
                    (self.axes(axes))
                    (marks)
                }
            }
        }
    }

    fn axes(&self, a: &Axes) -> Markup {
        let (l, r, t, b) = (self.left, self.right, self.top, self.bottom);
        html! {
            g.axes {
                @if a.x_ticks {
                    @for v in self.x.ticks(a.x_tick_count) {
                        @let x = f1(self.x.px(v));
                        line.grid x1=(x) x2=(x) y1=(t) y2=(b) {}
                        text.tick x=(x) y=(f1(b + 18.0)) text-anchor="middle" { ((a.x_fmt)(v)) }
                    }
                }
                @for v in self.y.ticks(a.y_tick_count) {
                    @let y = f1(self.y.px(v));
                    line.grid x1=(l) x2=(r) y1=(y) y2=(y) {}
                    text.tick x=(f1(l - 8.0)) y=(f1(self.y.px(v) + 4.0)) text-anchor="end" { ((a.y_fmt)(v)) }
                }
                rect.frame x=(l) y=(t) width=(f1(r - l)) height=(f1(b - t)) {}
                text.axis.x-title x=(f1((l + r) / 2.0)) y=(f1(self.h - 8.0)) text-anchor="middle" { (a.x_title) }
                text.axis.y-title transform={ "translate(18 " (f1((t + b) / 2.0)) ") rotate(-90)" } text-anchor="middle" { (a.y_title) }
            }
        }
    }

    /// A clip path that keeps marks inside the plot area (bands that run off the scale).
    pub fn clip(&self, id: &str) -> Markup {
        html! {
            clipPath #(id) { rect x=(self.left) y=(self.top) width=(f1(self.right - self.left)) height=(f1(self.bottom - self.top)) {} }
        }
    }
}

/// What a chart's axes say.
pub struct Axes<'a> {
    pub x_title: &'a str,
    pub y_title: &'a str,
    pub x_fmt: &'a dyn Fn(f64) -> String,
    pub y_fmt: &'a dyn Fn(f64) -> String,
    /// Whether the x axis gets numeric ticks (category axes label their own).
    pub x_ticks: bool,
    pub x_tick_count: usize,
    pub y_tick_count: usize,
}

impl<'a> Axes<'a> {
    pub fn new(
        x_title: &'a str,
        y_title: &'a str,
        x_fmt: &'a dyn Fn(f64) -> String,
        y_fmt: &'a dyn Fn(f64) -> String,
    ) -> Self {
        Self { x_title, y_title, x_fmt, y_fmt, x_ticks: true, x_tick_count: 8, y_tick_count: 6 }
    }
}

/// Percent with no decimals, for rate ticks.
pub fn pct0(v: f64) -> String {
    format!("{:.0}%", 100.0 * v)
}

/// A count with thousands separators: 12,345.
pub fn thousands(n: f64) -> String {
    let n = n.round() as i64;
    let digits: Vec<u8> = n.unsigned_abs().to_string().into_bytes();
    // Groups of three from the right: the first group takes what is left over.
    let head = match digits.len() % 3 {
        0 => 3.min(digits.len()),
        r => r,
    };
    let mut groups = vec![&digits[..head]];
    groups.extend(digits[head..].chunks(3));
    let out = groups.iter().map(|g| String::from_utf8_lossy(g)).collect::<Vec<_>>().join(",");
    if n < 0 { format!("-{out}") } else { out }
}

/// A tick value without trailing zeros: 0.5, 2, 1,000.
pub fn plain(v: f64) -> String {
    if v.abs() >= 1000.0 || v.fract() == 0.0 {
        thousands(v)
    } else {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// A legend as HTML under a chart: a swatch and a label per series (wraps, stays readable with
/// a dozen series).
pub fn legend(id: &str, items: &[(String, &str)]) -> Markup {
    html! {
        ul.legend #(id) {
            @for (label, colour) in items {
                li { span.swatch style={ "background:" (colour) } {} (label) }
            }
        }
    }
}

/// Colour for a win rate: red below 50%, blue above, white at 50%, saturating at +-15 points.
pub fn diverging(p: f64) -> (f64, f64, f64) {
    let t = ((p - 0.5) / 0.15).clamp(-1.0, 1.0);
    let mix = |a: f64, b: f64, t: f64| a * (1.0 - t) + b * t;
    if t >= 0.0 {
        (mix(255.0, 33.0, t), mix(255.0, 102.0, t), mix(255.0, 172.0, t))
    } else {
        (mix(255.0, 178.0, -t), mix(255.0, 24.0, -t), mix(255.0, 43.0, -t))
    }
}

pub fn rgb((r, g, b): (f64, f64, f64)) -> String {
    format!("rgb({r:.0},{g:.0},{b:.0})")
}

/// Black or white, whichever reads better on `bg` (WCAG relative luminance).
pub fn ink((r, g, b): (f64, f64, f64)) -> &'static str {
    let lin = |c: f64| {
        let c = c / 255.0;
        if c <= 0.039_28 { c / 12.92 } else { ((c + 0.055) / 1.055).powf(2.4) }
    };
    let l = 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b);
    // Contrast with black (l + 0.05) / 0.05 against white 1.05 / (l + 0.05): equal at ~0.179.
    if l > 0.179 { "#111" } else { "#fff" }
}

/// A cell on the time-strength plane: its time a move with a 95% interval, and its win rate.
#[derive(Clone, Copy, Debug)]
pub struct Timed {
    pub ms: f64,
    pub lo: f64,
    pub hi: f64,
    pub rate: f64,
}

/// The points of a front, in order of time: those no other point beats. A time is only faster
/// than another beyond both intervals; times whose intervals overlap are the same speed, and
/// then the stronger wins. So no front is drawn on timing noise.
pub fn pareto_front(points: &[Timed]) -> Vec<usize> {
    let beats = |q: &Timed, k: &Timed| {
        let surely_faster = q.hi < k.lo;
        let same_speed = q.lo <= k.hi && k.lo <= q.hi;
        surely_faster && q.rate >= k.rate || same_speed && q.rate > k.rate
    };
    let mut front: Vec<usize> = (0..points.len()).filter(|&k| !points.iter().any(|q| beats(q, &points[k]))).collect();
    front.sort_by(|&a, &b| points[a].ms.total_cmp(&points[b].ms));
    front
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round_and_inside() {
        let s = Scale::linear(0.0, 437.0, 0.0, 100.0);
        assert_eq!(s.ticks(8), vec![0.0, 50.0, 100.0, 150.0, 200.0, 250.0, 300.0, 350.0, 400.0]);
        let s = Scale::linear(0.45, 0.6, 0.0, 100.0);
        let t = s.ticks(6);
        assert!(t.len() >= 4 && t.iter().all(|v| (0.45 - 1e-9..=0.6 + 1e-9).contains(v)), "{t:?}");
        let s = Scale::log(0.3, 2000.0, 0.0, 100.0);
        assert_eq!(s.ticks(8), vec![1.0, 10.0, 100.0, 1000.0]);
        let s = Scale::log(0.3, 40.0, 0.0, 100.0);
        assert_eq!(s.ticks(8), vec![0.5, 1.0, 2.0, 5.0, 10.0, 20.0]);
        // Pixels: ends map to ends, and a y scale runs upwards.
        let y = Scale::linear(0.0, 1.0, 300.0, 10.0);
        assert_eq!((y.px(0.0), y.px(1.0)), (300.0, 10.0));
    }

    #[test]
    fn labels_and_ink() {
        assert_eq!(thousands(334398.0), "334,398");
        assert_eq!(thousands(-1000.0), "-1,000");
        assert_eq!(
            (thousands(0.0), thousands(999.0), thousands(123456.0)),
            ("0".into(), "999".into(), "123,456".into())
        );
        assert_eq!(plain(0.25), "0.25");
        assert_eq!(plain(2000.0), "2,000");
        assert_eq!(ink(diverging(0.5)), "#111", "white cell, dark text");
        assert_eq!(ink(diverging(0.65)), "#fff", "dark blue cell, white text");
        assert_eq!(ink(diverging(0.35)), "#fff", "dark red cell, white text");
    }

    #[test]
    fn pareto_front_keeps_the_undominated_beyond_timing_noise() {
        let timed = |pts: &[(f64, f64)], noise: f64| -> Vec<Timed> {
            pts.iter().map(|&(ms, rate)| Timed { ms, lo: ms - noise, hi: ms + noise, rate }).collect()
        };
        // (ms, rate): the 3rd is slower and weaker than the 2nd; the 5th ties the 4th in time.
        let pts = [(1.0, 0.50), (2.0, 0.55), (3.0, 0.54), (4.0, 0.60), (4.0, 0.58), (8.0, 0.61)];
        assert_eq!(pareto_front(&timed(&pts, 0.1)), vec![0, 1, 3, 5]);
        // The same points timed on noisy machines: 0.69 against 0.71 ms decides nothing, and
        // times within each other's noise are one speed, at which the strongest wins.
        let close = [(0.69, 0.52), (0.71, 0.55), (0.70, 0.50)];
        assert_eq!(pareto_front(&timed(&close, 0.2)), vec![1]);
        assert_eq!(pareto_front(&timed(&close, 0.001)), vec![0, 1]);
        assert_eq!(padded(0.47, 0.58, 0.05, 0.0, 1.0), (0.45, 0.6));
    }
}
