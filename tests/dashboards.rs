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

fn count(hay: &str, needle: &str) -> usize {
    hay.matches(needle).count()
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
    let mut w = volunteer(&coord.url, "dash-volunteer", &dir.0.join("w"), &["--exit-when-idle", "--threads", "2"])?;
    let g = wait_for_status(&coord.url, grid, &["finished"], Duration::from_secs(180)).await?;
    let s = wait_for_status(&coord.url, sprt, &["finished"], Duration::from_secs(180)).await?;
    let sg = wait_for_status(&coord.url, sim, &["finished"], Duration::from_secs(180)).await?;
    assert!(tokio::task::block_in_place(|| w.wait())?.success());

    // The SPRT stopped its cell early, and says why.
    let cell = &s["cells"][0];
    assert_eq!(cell["status"], "stopped", "{cell}");
    assert!(cell["games"].as_u64().unwrap() < 4000);
    let reason = cell["stop_reason"].as_str().unwrap().to_string();
    assert!(reason.starts_with("SPRT accepted H0"), "greedy is well under 45% against static: {reason}");

    let profile = dir.0.join("chromium");
    // Experiments list: both, finished, with links.
    let list = dump_dom(&coord.url, &profile)?;
    assert_eq!(count(&list, "class=\"experiment\""), 3, "{list}");
    assert!(list.contains("dashboard grid") && list.contains("dashboard sprt"));
    assert!(list.contains(&format!("href=\"/experiments/{grid}\"")));
    assert_eq!(count(&list, "<span class=\"status finished\">finished</span>"), 3);
    assert!(!list.contains("http-equiv=\"refresh\""), "finished pages stop reloading");

    // The grid: six cells in the table, the plot and the heatmap, with the API's numbers.
    let page = dump_dom(&format!("{}/experiments/{grid}", coord.url), &profile)?;
    assert_eq!(count(&page, "<tr class=\"cell\""), 6);
    assert_eq!(count(&page, "<g class=\"cell\""), 6, "one point per cell in the win-rate plot");
    assert_eq!(count(&page, "<g class=\"hcell\""), 6, "a 2 x 3 heatmap");
    assert!(page.contains("id=\"winrate\"") && page.contains("id=\"heatmap\""));
    assert!(page.contains("120 / 120"), "progress");
    assert_eq!(count(&page, "<polyline class=\"series\""), 6, "a convergence line per cell");
    assert!(page.contains("id=\"throughput\"") && page.contains("<rect class=\"bucket\""));
    assert!(page.contains("<tr class=\"contributor\"><td>dash-volunteer</td><td>120</td>"), "contributors");
    for c in g["cells"].as_array().unwrap() {
        let rate = format!("{:.1}%", 100.0 * c["win_rate"].as_f64().unwrap());
        let lo = format!("{:.1}%", 100.0 * c["ci_low"].as_f64().unwrap());
        let row_start = page.find(&format!("<tr class=\"cell\" data-index=\"{}\"", c["index"])).unwrap();
        let row = &page[row_start..row_start + page[row_start..].find("</tr>").unwrap()];
        assert!(row.contains(&rate) && row.contains(&lo), "cell {} shows {rate} ({lo} ..): {row}", c["index"]);
        assert!(row.contains("reached its target of 20 games"));
    }

    // The SPRT experiment says why it stopped.
    let page = dump_dom(&format!("{}/experiments/{sprt}", coord.url), &profile)?;
    assert!(page.contains("SPRT accepted H0"), "stop reason shown");
    assert!(page.contains("status stopped"));

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
    let played = 120 + 16 + cell["games"].as_u64().unwrap();
    assert!(workers.contains(&format!("<td class=\"games\">{played}</td>")), "{played} games: {workers}");

    // A running experiment's page reloads itself.
    let live =
        submit(&coord.url, &token, &experiment_file(&dir.0, "live.toml", &GRID.replace("dashboard grid", "live")))?;
    let page = dump_dom(&format!("{}/experiments/{live}", coord.url), &profile)?;
    assert!(page.contains("http-equiv=\"refresh\""));
    assert!(page.contains("status queued"));
    drop(coord);
    db.drop_db().await
}
