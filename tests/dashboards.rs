//! The dashboards in a real browser: headless Chromium loads the pages of finished test
//! experiments (a 2-D grid, and a match stopped by its SPRT) and we check what they show.
//!
//! Needs Debian's `chromium` (`apt-get install chromium`), or `$LEXHIVE_CHROMIUM`.

use anyhow::Result;
use e2e::*;
use std::time::Duration;

const GRID: &str = r#"
name = "dashboard grid"
kind = "match"
games = 20
seed = 5
[match]
bot1 = "softmax"
bot2 = "static"
[grid]
"bot1.t" = [0.5, 4.0]
"bot1.bag" = [20, 60, 86]
"#;

/// A tiny sim-tuning grid: candidate count x plies for the simulating bot.
const SIM: &str = r#"
name = "dashboard sim grid"
kind = "match"
games = 4
seed = 6
[match]
bot1 = "sim:iterations=8"
bot2 = "static"
[grid]
"bot1.k" = [2, 4]
"bot1.plies" = [1, 2]
"#;

const SPRT: &str = r#"
name = "dashboard sprt"
kind = "match"
games = 4000
seed = 9
[match]
bot1 = "greedy"
bot2 = "static"
[sprt]
p0 = 0.45
p1 = 0.50
alpha = 0.05
beta = 0.05
"#;

/// Two identical bots: every deal is split, and no interval or SPRT may be shown for it.
const SAME: &str = r#"
name = "dashboard identical"
kind = "match"
games = 20
seed = 4
[match]
bot1 = "static"
bot2 = "static"
[sprt]
p0 = 0.45
p1 = 0.55
alpha = 0.05
beta = 0.05
"#;

fn count(hay: &str, needle: &str) -> usize {
    hay.matches(needle).count()
}

/// The `<svg id="ID" ...>...</svg>` element of a page.
fn svg<'a>(page: &'a str, id: &str) -> &'a str {
    let start = page.find(&format!("<svg class=\"plot\" id=\"{id}\"")).unwrap_or_else(|| panic!("no chart #{id}"));
    &page[start..start + page[start..].find("</svg>").unwrap()]
}

/// Every value of attribute `name` in `html` (as numbers where they are).
fn attrs(html: &str, name: &str) -> Vec<String> {
    html.split(&format!(" {name}=\"")).skip(1).map(|r| r[..r.find('"').unwrap()].to_string()).collect()
}

/// The y coordinates of every `points` attribute in `html`.
fn ys(html: &str) -> Vec<f64> {
    attrs(html, "points")
        .iter()
        .flat_map(|p| p.split(' ').map(|xy| xy.split(',').nth(1).unwrap().parse::<f64>().unwrap()).collect::<Vec<_>>())
        .collect()
}

/// A chart's plot area, from its frame: (top, bottom).
fn frame(chart: &str) -> (f64, f64) {
    let r = &chart[chart.find("<rect class=\"frame\"").unwrap()..];
    let y: f64 = attrs(r, "y")[0].parse().unwrap();
    let h: f64 = attrs(r, "height")[0].parse().unwrap();
    (y, y + h)
}

/// The chart has axis titles, tick labels and a frame.
fn has_axes(chart: &str, x_title: &str, y_title: &str) {
    assert!(chart.contains(&format!("text-anchor=\"middle\">{x_title}")), "x title `{x_title}`: {chart}");
    assert!(chart.contains(y_title), "y title `{y_title}`");
    assert!(count(chart, "class=\"tick\"") >= 3, "tick labels");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dashboards_show_finished_experiments_in_chromium() -> Result<()> {
    let db = TestDb::create().await?;
    let coord = Coordinator::start(&db.url, &["--batch-secs", "1"])?;
    let token = researcher_token(&db.url)?;
    let dir = Scratch::new("dash");
    let grid = submit(&coord.url, &token, &experiment_file(&dir.0, "grid.toml", GRID))?;
    let sprt = submit(&coord.url, &token, &experiment_file(&dir.0, "sprt.toml", SPRT))?;
    let sim = submit(&coord.url, &token, &experiment_file(&dir.0, "sim.toml", SIM))?;
    let same = submit(&coord.url, &token, &experiment_file(&dir.0, "same.toml", SAME))?;
    let mut w = volunteer(&coord.url, "dash-volunteer", &dir.0.join("w"), &["--exit-when-idle", "--threads", "2"])?;
    let g = wait_for_status(&coord.url, grid, &["finished"], Duration::from_secs(180)).await?;
    let s = wait_for_status(&coord.url, sprt, &["finished"], Duration::from_secs(180)).await?;
    let sg = wait_for_status(&coord.url, sim, &["finished"], Duration::from_secs(180)).await?;
    let sm = wait_for_status(&coord.url, same, &["finished"], Duration::from_secs(180)).await?;
    assert!(tokio::task::block_in_place(|| w.wait())?.success());

    // The SPRT stopped its cell early, and says why.
    let cell = &s["cells"][0];
    assert_eq!(cell["status"], "stopped", "{cell}");
    assert!(cell["games"].as_u64().unwrap() < 4000);
    let reason = cell["stop_reason"].as_str().unwrap().to_string();
    assert!(reason.starts_with("SPRT: the games favour H0"), "greedy is well under 45% against static: {reason}");

    let profile = dir.0.join("chromium");
    // Experiments list: both, finished, with links.
    let list = dump_dom(&coord.url, &profile)?;
    assert_eq!(count(&list, "class=\"experiment\""), 4, "{list}");
    assert!(list.contains("dashboard grid") && list.contains("dashboard sprt"));
    assert!(list.contains(&format!("href=\"/experiments/{grid}\"")));
    // Each experiment's result and its SPRT's LLR, in the JSON, on the index and in the CLI: the
    // SPRT run's one cell, the grid's best cell.
    let (llr, lo, hi) =
        (s["llr"].as_f64().unwrap(), s["llr_bounds"][0].as_f64().unwrap(), s["llr_bounds"][1].as_f64().unwrap());
    assert!((llr - cell["sprt_llr"].as_f64().unwrap()).abs() < 1e-9 && llr <= lo && lo < hi, "{s}");
    let rate = format!("{:.1}%", 100.0 * cell["win_rate"].as_f64().unwrap());
    assert!(s["result"].as_str().unwrap().starts_with(&rate), "{s}");
    let best = g["cells"].as_array().unwrap().iter().filter_map(|c| c["win_rate"].as_f64()).fold(0.0, f64::max);
    assert!(g["result"].as_str().unwrap().contains(&format!("{:.1}%", 100.0 * best)), "{g}");
    assert!(g["llr"].is_null() && sm["result"] == "bots are identical on these deals", "{g} {sm}");
    let row = |id: uuid::Uuid| {
        let at = list.find(&format!("data-id=\"{id}\"")).unwrap();
        list[at..at + list[at..].find("</tr>").unwrap()].to_string()
    };
    assert!(row(sprt).contains(&format!("<td class=\"llr\">{llr:.2} ({lo:.2}, {hi:.2})</td>")), "{}", row(sprt));
    assert!(row(sprt).contains(&format!("<td class=\"result\">{rate}")), "{}", row(sprt));
    let out = std::process::Command::new(bin("worker"))
        .args(["experiments", "list", "--coordinator", &coord.url])
        .output()?;
    let out = String::from_utf8_lossy(&out.stdout);
    let line = out.lines().find(|l| l.starts_with(&sprt.to_string())).unwrap();
    assert!(line.contains(&rate) && line.contains(&format!("{llr:.2} ({lo:.2}, {hi:.2})")), "{out}");
    // `show` gives each SPRT cell its LLR too.
    let out = std::process::Command::new(bin("worker"))
        .args(["experiments", "show", &sprt.to_string(), "--coordinator", &coord.url])
        .output()?;
    let out = String::from_utf8_lossy(&out.stdout);
    assert!(out.contains("LLR (bounds)") && out.matches(&format!("{llr:.2} ({lo:.2}, {hi:.2})")).count() == 2, "{out}");
    assert_eq!(count(&list, "<span class=\"status finished\">finished</span>"), 4);
    assert!(list.contains("games/s") || list.contains("games/min"), "rates in a unit that reads: {list}");
    assert!(!list.contains("http-equiv=\"refresh\""), "finished pages stop reloading");

    // The grid: six cells in the table, the plot and the heatmap, with the API's numbers.
    let page = dump_dom(&format!("{}/experiments/{grid}", coord.url), &profile)?;
    assert_eq!(count(&page, "<tr class=\"cell\""), 6);
    // At bag=86 the softmax bot never leaves the static bot's play (the bag never holds more
    // than 86 tiles): those two cells are identical bots, shown without an interval.
    let identical: Vec<&serde_json::Value> =
        g["cells"].as_array().unwrap().iter().filter(|c| c["evidence"] == "identical").collect();
    assert_eq!(identical.len(), 2, "{g}");
    assert!(identical.iter().all(|c| c["params"]["bot1.bag"] == 86 && c["ci_low"].is_null()));
    assert_eq!(count(&page, "<g class=\"cell\""), 4, "a point with its interval per other cell");
    assert_eq!(count(&page, "<g class=\"cell caveat\""), 2, "a mark for the identical ones");
    assert_eq!(count(&page, "<g class=\"hcell\""), 6, "a 2 x 3 heatmap");
    assert!(page.contains("id=\"winrate\"") && page.contains("id=\"heatmap\""));
    assert!(page.contains("120 / 120"), "progress");
    assert_eq!(count(&page, "<polyline class=\"series\""), 6, "a convergence line per cell");
    assert!(page.contains("id=\"throughput\"") && page.contains("<rect class=\"bucket\""));
    // Charts: axes with titles, legends, bands, and every plotted point inside its frame.
    let chart = svg(&page, "winrate");
    has_axes(chart, "bot1.bag, bot1.t", "win rate of softmax");
    let (top, bottom) = frame(chart);
    for cy in attrs(chart, "cy") {
        let cy: f64 = cy.parse().unwrap();
        assert!((top..=bottom).contains(&cy), "a point at {cy} outside {top}..{bottom}");
    }
    let chart = svg(&page, "convergence");
    has_axes(chart, "games played in the cell", "win rate of softmax");
    assert_eq!(count(chart, "<polygon class=\"band\""), 4, "a 95% band per cell with intervals");
    let (top, bottom) = frame(chart);
    let lines: String = chart.split("<polyline class=\"series\"").skip(1).map(|l| &l[..l.find('>').unwrap()]).collect();
    assert!(ys(&lines).iter().all(|y| (top..=bottom).contains(y)), "the scale fits every win rate");
    assert_eq!(count(&page, "<ul class=\"legend\" id=\"convergence-legend\""), 1);
    assert!(page.contains("bot1.bag=20, bot1.t=0.5"), "the legend names the cells");
    // A run of seconds is drawn in seconds (whole ticks), a longer one in minutes; the rate is
    // the buckets' moving average, drawn over them.
    let chart = svg(&page, "throughput");
    let unit = if chart.contains(">seconds since the first result") { "seconds" } else { "minutes" };
    has_axes(chart, &format!("{unit} since the first result"), "games a minute");
    assert!(chart.contains("<polyline class=\"smoothed\""), "{chart}");
    let chart = svg(&page, "pareto");
    has_axes(chart, "milliseconds per move of softmax", "win rate of softmax");
    assert!(count(chart, "data-front=\"true\"") >= 1 && chart.contains("<polyline class=\"front\""));
    let chart = svg(&page, "heatmap");
    assert!(chart.contains("id=\"colour-scale\""), "the heatmap has a colour scale");
    for c in g["cells"].as_array().unwrap() {
        // Marked exactly when the interval leaves out 50%.
        let decided =
            c["ci_low"].as_f64().is_some_and(|lo| lo > 0.5) || c["ci_high"].as_f64().is_some_and(|hi| hi < 0.5);
        assert!(chart.contains(&format!("data-index=\"{}\" data-decided=\"{decided}\"", c["index"])), "{c}");
    }
    // Colour follows where the cell surely lies: a cell whose interval holds 50% is white.
    for cell in chart.split("<g class=\"hcell\"").skip(1).filter(|c| c.contains("data-decided=\"false\"")) {
        let identical = cell.contains("bots are identical on these deals");
        assert!(cell.contains(if identical { "fill=\"#eee\"" } else { "fill=\"rgb(255,255,255)\"" }), "{cell}");
    }
    assert!(page.contains("<tr class=\"contributor\"><td>dash-volunteer</td><td>120</td>"), "contributors");
    for c in g["cells"].as_array().unwrap() {
        let row_start = page.find(&format!("<tr class=\"cell\" data-index=\"{}\"", c["index"])).unwrap();
        let row = &page[row_start..row_start + page[row_start..].find("</tr>").unwrap()];
        assert!(row.contains("reached its target of 20 games"));
        if c["evidence"] == "identical" {
            assert!(row.contains("bots are identical on these deals") && !row.contains("50.0%"), "{row}");
            continue;
        }
        let rate = format!("{:.1}%", 100.0 * c["win_rate"].as_f64().unwrap());
        let lo = format!("{:.1}%", 100.0 * c["ci_low"].as_f64().unwrap());
        assert!(row.contains(&rate) && row.contains(&lo), "cell {} shows {rate} ({lo} ..): {row}", c["index"]);
    }

    // The SPRT experiment says why it stopped, and shows its LLR against the bounds.
    let page = dump_dom(&format!("{}/experiments/{sprt}", coord.url), &profile)?;
    assert!(page.contains("SPRT: the games favour H0"), "stop reason shown");
    assert!(page.contains("status stopped"));
    let chart = svg(&page, "sprt");
    has_axes(chart, "games played in the cell", "log-likelihood ratio (LLR)");
    assert!(chart.contains("<polyline class=\"llr\"") && chart.contains("accept H1") && chart.contains("accept H0"));
    assert!(page.contains("<td class=\"llr\"><span class=\"llrbar\""), "a live LLR bar per cell");
    assert!(page.contains("ended early; target 4,000"), "a stopped cell's progress says so");
    assert!(s["target_games"] == s["games"], "a finished experiment is complete: {s}");

    // Identical bots: no interval, no SPRT, and the page says why.
    let cell = &sm["cells"][0];
    assert_eq!((cell["evidence"].as_str(), cell["ci_low"].as_f64()), (Some("identical"), None), "{cell}");
    assert!(cell["sprt_llr"].is_null() && cell["status"] == "finished", "{cell}");
    assert!(cell["stop_reason"].as_str().unwrap().ends_with("so the SPRT could not decide"), "{cell}");
    let page = dump_dom(&format!("{}/experiments/{same}", coord.url), &profile)?;
    assert!(page.contains("bots are identical on these deals"), "{page}");
    assert!(page.contains("<g class=\"cell caveat\""), "no error bar for identical bots");
    assert!(!page.contains("50.0% ±") && !page.contains("+- 0.0"));
    let csv = reqwest::get(format!("{}/api/v1/experiments/{same}/cells.csv", coord.url)).await?.text().await?;
    let row: Vec<&str> = csv.lines().nth(1).unwrap().split(',').collect();
    assert_eq!((row[6], row[7]), ("", ""), "no interval in the CSV either: {csv}");
    assert!(csv.contains(",identical,bots are identical on these deals,"), "{csv}");

    // Exports of batches and contributors, one row per counted batch and per worker.
    let url = |what: &str| format!("{}/api/v1/experiments/{grid}/{what}.csv", coord.url);
    let csv = reqwest::get(url("batches")).await?.text().await?;
    let rows: Vec<&str> = csv.lines().skip(1).collect();
    assert_eq!(rows.len(), batches(&coord.url, grid).await?.len(), "{csv}");
    let played: u64 = rows.iter().map(|r| r.split(',').nth(5).unwrap().parse::<u64>().unwrap()).sum();
    assert_eq!(played, 120);
    let csv = reqwest::get(url("contributors")).await?.text().await?;
    assert!(csv.starts_with("worker,done,counted,batches,worker_id\ndash-volunteer,120,games,"), "{csv}");

    // The sim grid, played by the volunteer: a heatmap of win rate, interval and time a move.
    let page = dump_dom(&format!("{}/experiments/{sim}", coord.url), &profile)?;
    assert_eq!(count(&page, "<g class=\"hcell\""), 4);
    for c in sg["cells"].as_array().unwrap() {
        let ms = c["ms_per_move"][0].as_f64().unwrap();
        assert!(ms > 0.0, "the simulating bot's time is measured: {c}");
        assert!(page.contains(&format!("{ms:.1} ms/move")), "heatmap shows {ms:.1} ms/move");
    }

    // Workers: the volunteer, with every game it played.
    let workers = dump_dom(&format!("{}/workers", coord.url), &profile)?;
    assert!(workers.contains("dash-volunteer"));
    let played = 120 + 16 + 20 + s["cells"][0]["games"].as_u64().unwrap();
    // Counts read as on every other page: 1,234.
    let grouped = played
        .to_string()
        .as_bytes()
        .rchunks(3)
        .rev()
        .map(|g| String::from_utf8_lossy(g))
        .collect::<Vec<_>>()
        .join(",");
    assert!(workers.contains(&format!("<td class=\"games\">{grouped}</td>")), "{grouped} games: {workers}");

    // The JSON and CSV API answers as its OpenAPI description says, errors included.
    let u = coord.url.as_str();
    for id in [grid, sprt, same, sim] {
        for template in ["/experiments/{id}", "/experiments/{id}/history", "/experiments/{id}/batches"] {
            let (status, _) = check_documented(u, template, &template.replace("{id}", &id.to_string())).await?;
            assert_eq!(status, 200, "{template}");
        }
    }
    for template in
        ["/experiments/{id}/cells.csv", "/experiments/{id}/batches.csv", "/experiments/{id}/contributors.csv"]
    {
        check_documented(u, template, &template.replace("{id}", &grid.to_string())).await?;
    }
    check_documented(u, "/experiments", "/experiments?status=finished&sort=name").await?;
    check_documented(u, "/workers", "/workers").await?;
    let (status, _) =
        check_documented(u, "/experiments/{id}", &format!("/experiments/{}", uuid::Uuid::new_v4())).await?;
    assert_eq!(status, 404);
    let (status, body) = check_documented(u, "/experiments", "/experiments?status=bogus").await?;
    assert!(status == 400 && body.contains("status"), "{body}");
    let finished = get_json(&format!("{u}/api/v1/experiments?status=finished")).await?;
    assert_eq!(finished.as_array().unwrap().len(), 4, "the filter works: {finished}");

    // The games as one download and as `coordinator export`: every counted game, in order, and
    // `worker cnn assemble` makes training records of them.
    let gz = reqwest::get(format!("{u}/api/v1/experiments/{grid}/games.gcg.gz")).await?.bytes().await?;
    let mut text = String::new();
    std::io::Read::read_to_string(&mut flate2::read::MultiGzDecoder::new(&gz[..]), &mut text)?;
    assert_eq!(text.matches("#lexhive-game ").count(), 120, "every game of the grid");
    check_documented(u, "/experiments/{id}/games.gcg.gz", &format!("/experiments/{grid}/games.gcg.gz")).await?;
    let exported = dir.0.join("games.gcg.gz");
    coordinator_cmd(&db.url, &["export", "--experiment", &grid.to_string(), "--out", exported.to_str().unwrap()])?;
    assert!(std::fs::read(&exported)? == gz[..], "the export is the download");
    let frames = dir.0.join("frames.bin");
    let out = std::process::Command::new(bin("worker"))
        .args(["cnn", "assemble", exported.to_str().unwrap(), "--out", frames.to_str().unwrap()])
        .output()?;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let record = 4 * (85 * 15 * 15 + 76 + 1);
    let size = std::fs::metadata(&frames)?.len();
    assert!(size > 0 && size % record == 0, "{size} bytes of {record}-byte records");

    // Screenshots of every page type, for docs/img (LEXHIVE_SCREENSHOTS=docs/img).
    for (name, path, height) in [
        ("experiments", String::new(), 500),
        ("grid", format!("/experiments/{grid}"), 3000),
        ("sim-grid", format!("/experiments/{sim}"), 2700),
        ("sprt", format!("/experiments/{sprt}"), 1900),
        ("identical", format!("/experiments/{same}"), 1300),
        ("workers", "/workers".into(), 400),
    ] {
        screenshot_for_docs(&format!("{}{path}", coord.url), &profile, name, height)?;
    }

    // On a phone (400 px) and a desktop (1,400 px): the page itself never scrolls sideways,
    // every table fits or scrolls inside it, and chart text is at least 11 px tall (charts keep
    // a legible width and scroll inside the page on a phone).
    for width in [400u32, 1400] {
        for path in ["/".to_string(), format!("/experiments/{grid}"), format!("/experiments/{sprt}"), "/workers".into()]
        {
            let m = layout(&format!("{}{path}", coord.url), width, &profile).await?;
            let viewport = m["viewport"].as_f64().unwrap_or(0.0);
            assert!(viewport > 0.0 && viewport <= width as f64, "{path} at {width}: {m}");
            assert!(m["page"].as_f64() <= Some(viewport + 1.0), "{path} at {width}: the page scrolls sideways: {m}");
            for t in m["tables"].as_array().unwrap() {
                assert!(t["fits"] == true || t["scrolls"] == "auto", "{path} at {width}: table {t}");
                assert!(t["right"].as_f64() <= Some(viewport + 1.0), "{path} at {width}: table {t} runs off the page");
            }
            for c in m["charts"].as_array().unwrap() {
                assert!(c["right"].as_f64() <= Some(viewport + 1.0), "{path} at {width}: chart {c} runs off the page");
                assert!(c["text"].as_f64() >= Some(11.0), "{path} at {width}: chart {c} text too small to read");
            }
        }
    }

    // A running experiment's page reloads itself.
    let live =
        submit(&coord.url, &token, &experiment_file(&dir.0, "live.toml", &GRID.replace("dashboard grid", "live")))?;
    let page = dump_dom(&format!("{}/experiments/{live}", coord.url), &profile)?;
    assert!(page.contains("http-equiv=\"refresh\""));
    assert!(page.contains("status queued"));
    drop(coord);
    db.drop_db().await
}

/// A cell whose bots play alike on 200 deals finishes there, says why, and its experiment's
/// progress counts what it played, not its target.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bots_alike_on_200_deals_finish_early_and_say_so() -> Result<()> {
    let db = TestDb::create().await?;
    let coord = Coordinator::start(&db.url, &["--batch-secs", "1"])?;
    let token = researcher_token(&db.url)?;
    let dir = Scratch::new("alike");
    let text =
        "name = \"alike\"\nkind = \"match\"\ngames = 2000\nseed = 6\n[match]\nbot1 = \"static\"\nbot2 = \"static\"\n";
    let id = submit(&coord.url, &token, &experiment_file(&dir.0, "alike.toml", text))?;
    let mut v = volunteer(&coord.url, "alike-volunteer", &dir.0.join("v"), &["--exit-when-idle"])?;
    let done = wait_for_status(&coord.url, id, &["finished", "failed"], Duration::from_secs(240)).await;
    let _ = v.wait();
    let done = done?;
    let cell = &done["cells"][0];
    let games = cell["games"].as_u64().unwrap();
    assert_eq!(cell["status"], "finished", "{done}");
    assert!((400..2000).contains(&games), "finished early, after 200 deals: {games}");
    let why = cell["stop_reason"].as_str().unwrap();
    assert!(why.starts_with(&format!("the bots played alike on all of its {} deals", games / 2)), "{why}");
    assert_eq!((done["games"].as_u64(), done["target_games"].as_u64()), (Some(games), Some(games)), "{done}");
    drop(coord);
    db.drop_db().await
}
