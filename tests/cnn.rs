//! CNN bots on the volunteers: a value net registered as a `model` artifact, an experiment
//! whose bot names it by sha256, and two volunteers, one whose ONNX Runtime does not load. The
//! one that can run the net plays every game (the same games `worker autoplay` plays with the
//! model file), the other is never sent a CNN batch, and an experiment that asks for a GPU
//! waits for a worker that has one. The workers page says where each worker's nets run.
//!
//! Needs ONNX Runtime (`ORT_DYLIB_PATH`, or python3's `onnxruntime`: scripts/trainer-env.sh).

use anyhow::{Context, Result, ensure};
use e2e::*;
use std::time::Duration;

const GAMES: u64 = 40;

fn cnn_match(name: &str, model: &str, extra: &str) -> String {
    format!(
        "name = \"{name}\"\nkind = \"match\"\ngames = {GAMES}\nseed = 3\n{extra}[match]\nbot1 = \"cnn:model={model},k=5\"\nbot2 = \"static\"\n"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cnn_bots_play_on_the_volunteers_that_can_run_them() -> Result<()> {
    let db = TestDb::create().await?;
    let coord = Coordinator::start(&db.url, &["--batch-secs", "2"])?;
    let url = coord.url.clone();
    let token = researcher_token(&db.url)?;
    let dir = Scratch::new("cnn");
    let model = repo().join("models/cnn-w32b2.onnx");

    // Only files that look like a value net are models, and no model is a default.
    let klv = repo().join("lexica/enable.klv2");
    let e = coordinator_cmd(&db.url, &["artifact", "--role", "model", klv.to_str().unwrap()]).unwrap_err();
    ensure!(e.to_string().contains("enable.klv2: a model is an ONNX file"), "{e}");
    let e =
        coordinator_cmd(&db.url, &["artifact", "--role", "model", "--default", model.to_str().unwrap()]).unwrap_err();
    ensure!(e.to_string().contains("there is no default model"), "{e}");
    let sha = coordinator_cmd(&db.url, &["artifact", "--role", "model", model.to_str().unwrap()])?
        .lines()
        .last()
        .context("no sha256 printed")?
        .to_string();
    ensure!(shared::spec::is_sha256(&sha), "{sha}");
    let example = std::fs::read_to_string(repo().join("examples/cnn-vs-static.toml"))?;
    ensure!(example.contains(&sha), "examples/cnn-vs-static.toml names another model than {sha}");

    // A path is not a model volunteers can fetch; an unknown sha256 is not a model here.
    let e = submit(&url, &token, &experiment_file(&dir.0, "path.toml", &cnn_match("path", "m.onnx", ""))).unwrap_err();
    ensure!(e.to_string().contains("coordinator artifact --role model m.onnx"), "{e}");
    let unknown = "0".repeat(64);
    let e = submit(&url, &token, &experiment_file(&dir.0, "unknown.toml", &cnn_match("unknown", &unknown, "")))
        .unwrap_err();
    ensure!(e.to_string().contains("no model artifact with that sha256"), "{e}");

    let id = submit(&url, &token, &experiment_file(&dir.0, "cnn.toml", &cnn_match("cnn on volunteers", &sha, "")))?;
    let gpu =
        submit(&url, &token, &experiment_file(&dir.0, "gpu.toml", &cnn_match("cnn on a gpu", &sha, "gpu = true\n")))?;

    // A volunteer whose ONNX Runtime does not load says so, and is sent nothing.
    let bad = ["--onnxruntime", "/nonexistent/libonnxruntime.so", "--exit-when-idle"];
    let mut without = volunteer(&url, "no-runtime", &dir.0.join("no-runtime"), &bad)?;
    let status = tokio::task::block_in_place(|| without.wait())?;
    ensure!(status.success(), "the volunteer without ONNX Runtime exited with {status}");
    let log = std::fs::read_to_string(dir.0.join("no-runtime/volunteer.log"))?;
    ensure!(log.contains("CNN bots: off (ONNX Runtime library /nonexistent/libonnxruntime.so: no such file"), "{log}");
    let w = worker_named(&url, "no-runtime").await?.context("registered")?;
    ensure!(w["games"] == 0 && w["capabilities"] == serde_json::json!([]), "{w}");

    // The one that can run the net plays every game; the GPU experiment waits.
    let mut with = volunteer(&url, "with-runtime", &dir.0.join("with-runtime"), &["--exit-when-idle"])?;
    let exp = wait_for_status(&url, id, &["finished"], Duration::from_secs(300)).await?;
    let status = tokio::task::block_in_place(|| with.wait())?;
    ensure!(status.success(), "the volunteer with ONNX Runtime exited with {status}");
    ensure!(exp["needs"] == serde_json::json!(["onnx"]), "{}", exp["needs"]);
    check_totals(&url, id).await?;
    ensure!(check_replays(&url, &db.url, id).await? as u64 == GAMES);
    let cell = &exp["cells"][0];
    check_local_autoplay(cell, [&format!("cnn:model={},k=5", model.display()), "static"], GAMES, 3)?;
    let w = worker_named(&url, "with-runtime").await?.context("registered")?;
    ensure!(w["games"] == GAMES && w["capabilities"] == serde_json::json!(["onnx"]), "{w}");

    let waiting = get_json(&format!("{url}/api/v1/experiments/{gpu}")).await?;
    ensure!(waiting["status"] == "queued" && waiting["games"] == 0, "{waiting}");
    ensure!(waiting["needs"] == serde_json::json!(["onnx", "cuda"]), "{}", waiting["needs"]);

    // The pages say where the nets run and what an experiment waits for; the API is as
    // documented.
    let (_, workers) = check_documented(&url, "/workers", "/workers").await?;
    ensure!(workers.contains("\"capabilities\""), "{workers}");
    let page = reqwest::get(format!("{url}/workers")).await?.text().await?;
    ensure!(page.contains("none (CNN on the CPU)") && page.contains("none (no CNN)"), "{page}");
    check_documented(&url, "/experiments/{id}", &format!("/experiments/{gpu}")).await?;
    let page = reqwest::get(format!("{url}/experiments/{gpu}")).await?.text().await?;
    ensure!(page.contains("Runs only on workers whose CNN inference runs on a GPU"), "{page}");
    drop(coord);
    db.drop_db().await
}
