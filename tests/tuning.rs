//! Parameter tuning on the volunteers: an SPSA run of `static:leave_scale` from 0 against
//! `static:leave_scale=0` goes through a coordinator restart, each iteration's bots are the
//! perturbations its step's parameters give, each step is SPSA's from the counted scores
//! (recomputed here from the cells' tallies), and the run reports its parameters and history.

use anyhow::{Context, Result, ensure};
use e2e::*;
use shared::experiment::ExperimentSpec;
use shared::kinds::ExperimentKind;
use shared::kinds::tune::Step;
use std::time::{Duration, Instant};

const ITERATIONS: usize = 3;
const GAMES: u64 = 40;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_spsa_run_steps_as_its_scores_say_through_a_restart() -> Result<()> {
    let db = TestDb::create().await?;
    let mut coord = Coordinator::start(&db.url, &["--batch-secs", "1"])?;
    let token = researcher_token(&db.url)?;
    let dir = Scratch::new("tuning");
    let text = format!(
        "name = \"tune leave_scale\"\nkind = \"tune\"\nseed = 8\n[tune]\nbot = \"static:leave_scale=0\"\nagainst = \"static:leave_scale=0\"\niterations = {ITERATIONS}\ngames = {GAMES}\n[tune.params.leave_scale]\nstart = 0.0\nmin = 0.0\nmax = 2.0\nc = 0.4\n"
    );
    let id = submit(&coord.url, &token, &experiment_file(&dir.0, "tune.toml", &text))?;
    let exp = format!("{}/api/v1/experiments/{id}", coord.url);
    let planned = get_json(&exp).await?;
    assert_eq!(planned["tuning"]["params"]["leave_scale"], 0.0, "{planned}");
    assert_eq!(planned["tuning"]["history"], serde_json::json!([]));

    let mut v = volunteer(&coord.url, "tuning-volunteer", &dir.0.join("v"), &["--exit-when-idle"])?;
    let start = Instant::now();
    loop {
        let now = get_json(&exp).await?;
        if now["tuning"]["history"].as_array().is_some_and(|h| !h.is_empty()) {
            break;
        }
        ensure!(start.elapsed() < Duration::from_secs(180), "no step in 3 minutes: {now}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    coord.restart()?;
    let done = finished(&coord.url, id, &mut v, Duration::from_secs(300)).await?;

    // Every step is SPSA's, from the parameters the step before left and the scores counted.
    let spec: ExperimentSpec = serde_json::from_value(done["spec"].clone())?;
    let ExperimentKind::Tune(t) = &spec.kind else { panic!("{spec:?}") };
    let steps: Vec<Step> = serde_json::from_value(done["tuning"]["history"].clone())?;
    assert_eq!(steps.len(), ITERATIONS, "{done}");
    let cells = done["cells"].as_array().context("cells")?;
    let mut theta = vec![0.0];
    for (k, step) in steps.iter().enumerate() {
        let (plus, minus) = (&cells[2 * k], &cells[2 * k + 1]);
        let bots = t.perturbed(spec.seed, k as u32, &theta).map_err(anyhow::Error::msg)?;
        assert_eq!(
            [plus["bots"][0].as_str().unwrap(), minus["bots"][0].as_str().unwrap()],
            [bots[0].as_str(), bots[1].as_str()]
        );
        let score = |c: &serde_json::Value| {
            (c["wins"].as_f64().unwrap() + c["draws"].as_f64().unwrap() / 2.0) / c["games"].as_f64().unwrap()
        };
        assert_eq!((plus["games"].as_u64(), minus["games"].as_u64()), (Some(GAMES), Some(GAMES)));
        let want = t.step(spec.seed, k as u32, &theta, score(plus), score(minus));
        assert_eq!(step, &want, "iteration {k}");
        theta = want.next;
    }
    assert_eq!(done["tuning"]["params"]["leave_scale"].as_f64(), Some(theta[0]), "{done}");
    // From 0, whichever way the first perturbation points, the first step leaves 0 (on this
    // seed's deals: some leave weight beat none).
    assert!(steps[0].next[0] > 0.0, "{:?}", steps[0]);

    // The run's JSON is what the API's description says it is.
    check_documented(&coord.url, "/experiments/{id}", &format!("/experiments/{id}")).await?;
    let show = std::process::Command::new(bin("worker"))
        .args(["experiments", "show", &id.to_string(), "--coordinator", &coord.url])
        .output()?;
    let show = String::from_utf8(show.stdout)?;
    assert!(show.contains(&format!("parameters now: leave_scale={}", theta[0])), "{show}");
    assert_eq!(show.lines().filter(|l| l.contains("leave_scale=") && l.contains('%')).count(), ITERATIONS, "{show}");
    let page = dump_dom(&format!("{}/experiments/{id}", coord.url), &dir.0.join("chromium"))?;
    assert!(page.contains("id=\"param-0\"") && page.contains("id=\"objective\""), "{page}");
    assert_eq!(page.matches("class=\"step\"").count(), ITERATIONS, "{page}");
    drop(coord);
    db.drop_db().await
}

/// A CMA-ES run: each iteration plays its population's points (drawn from the state the step
/// before left, the same on any machine), and each step is CMA-ES's from the counted scores.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cmaes_run_plays_its_points_and_steps_as_their_scores_say() -> Result<()> {
    let db = TestDb::create().await?;
    let coord = Coordinator::start(&db.url, &["--batch-secs", "1"])?;
    let token = researcher_token(&db.url)?;
    let dir = Scratch::new("cmaes");
    let text = "name = \"cma leave_scale\"\nkind = \"tune\"\nseed = 8\n[tune]\nbot = \"static:leave_scale=0\"\nagainst = \"static:leave_scale=0\"\niterations = 2\ngames = 20\nmethod = \"cmaes\"\npopulation = 4\n[tune.params.leave_scale]\nstart = 0.2\nmin = 0.0\nmax = 2.0\nc = 0.4\n";
    let id = submit(&coord.url, &token, &experiment_file(&dir.0, "cma.toml", text))?;
    let mut v = volunteer(&coord.url, "cma-volunteer", &dir.0.join("v"), &["--exit-when-idle", "--threads", "2"])?;
    let done = finished(&coord.url, id, &mut v, Duration::from_secs(300)).await?;
    let spec: ExperimentSpec = serde_json::from_value(done["spec"].clone())?;
    let ExperimentKind::Tune(t) = &spec.kind else { panic!("{spec:?}") };
    let steps: Vec<Step> = serde_json::from_value(done["tuning"]["history"].clone())?;
    let cells = done["cells"].as_array().context("cells")?;
    assert_eq!((steps.len(), cells.len()), (2, 8), "{done}");
    let mut state = t.cma_start(4);
    for (k, step) in steps.iter().enumerate() {
        let mine = &cells[4 * k..4 * k + 4];
        let points = t.points(spec.seed, k as u32, &state);
        for (c, p) in mine.iter().zip(&points) {
            assert_eq!(c["bots"][0].as_str(), Some(t.bot_at(p).map_err(anyhow::Error::msg)?.as_str()), "{c}");
            assert_eq!(c["games"], 20, "{c}");
        }
        let scores: Vec<f64> = mine
            .iter()
            .map(|c| (c["wins"].as_f64().unwrap() + c["draws"].as_f64().unwrap() / 2.0) / c["games"].as_f64().unwrap())
            .collect();
        let want = t.cma_step(spec.seed, k as u32, &state, &scores);
        assert_eq!(step, &want, "iteration {k}");
        state = want.cma.clone().context("state")?;
    }
    assert_eq!(done["tuning"]["params"]["leave_scale"].as_f64(), Some(steps[1].next[0]), "{done}");
    check_documented(&coord.url, "/experiments/{id}", &format!("/experiments/{id}")).await?;
    let page = dump_dom(&format!("{}/experiments/{id}", coord.url), &dir.0.join("chromium"))?;
    assert!(page.contains("tune (CMA-ES)") && page.contains("best score"), "{page}");
    drop(coord);
    db.drop_db().await
}
