//! `worker experiments` against a real coordinator: list (filtered and sorted, table and
//! JSON), show, priority and stop, with the owner's token and a stranger's; and the cells CSV.

use anyhow::{Result, ensure};
use e2e::*;
use std::process::Command;

fn grid(name: &str) -> String {
    MATCH.replace("e2e match", name).replace("games = 240", "games = 40")
}

/// `worker experiments ARGS...`: (exit success, stdout, stderr).
fn experiments(args: &[&str]) -> Result<(bool, String, String)> {
    let out = Command::new(bin("worker")).arg("experiments").args(args).output()?;
    Ok((out.status.success(), String::from_utf8(out.stdout)?, String::from_utf8(out.stderr)?))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn researchers_list_show_reprioritise_and_stop_from_the_terminal() -> Result<()> {
    let db = TestDb::create().await?;
    let coord = Coordinator::start(&db.url, &[])?;
    let url = coord.url.as_str();
    let token = researcher_token(&db.url)?;
    let dir = Scratch::new("experiments-cli");
    let first = submit(url, &token, &experiment_file(&dir.0, "a.toml", &grid("cli grid")))?;
    let second = submit(url, &token, &experiment_file(&dir.0, "b.toml", &grid("another")))?;
    let (first_s, second_s) = (first.to_string(), second.to_string());

    // The table names both, newest first; `--sort name` puts "another" first too, `--status`
    // filters, and a bad filter is refused with the field named.
    let (ok, out, _) = experiments(&["list", "--coordinator", url])?;
    ensure!(ok && out.contains("cli grid") && out.contains("another"), "{out}");
    ensure!(out.find(&second_s) < out.find(&first_s), "newest first:\n{out}");
    let (ok, out, _) = experiments(&["list", "--coordinator", url, "--status", "finished"])?;
    ensure!(ok && out.contains("(none)") && !out.contains(&first_s), "{out}");
    let (ok, out, _) = experiments(&["list", "--coordinator", url, "--status", "queued", "--json"])?;
    let listed: serde_json::Value = serde_json::from_str(&out)?;
    ensure!(ok && listed.as_array().map(Vec::len) == Some(2), "{out}");
    let (ok, _, err) = experiments(&["list", "--coordinator", url, "--status", "bogus"])?;
    ensure!(!ok && err.contains("status") && err.contains("bogus"), "{err}");
    let r = reqwest::get(format!("{url}/api/v1/experiments?sort=drop%20table")).await?;
    ensure!(r.status() == 400, "{}", r.status());

    // Priority: the owner may; a stranger may not; `list --sort priority` follows it.
    let (ok, out, err) = experiments(&["priority", &first_s, "7", "--coordinator", url, "--token", &token])?;
    ensure!(ok && out.contains("priority 7"), "{out}{err}");
    let stranger = researcher_token(&db.url)?;
    let (ok, _, err) = experiments(&["priority", &first_s, "-3", "--coordinator", url, "--token", &stranger])?;
    ensure!(!ok && err.contains("refused"), "{err}");
    let (_, out, _) = experiments(&["list", "--coordinator", url, "--sort", "priority"])?;
    ensure!(out.find(&first_s) < out.find(&second_s), "highest priority first:\n{out}");

    // Show: one line per cell with its parameters.
    let (ok, out, _) = experiments(&["show", &first_s, "--coordinator", url])?;
    ensure!(ok && out.contains("bot2=greedy") && out.contains("bot2=softmax:t=2,bag=30"), "{out}");
    ensure!(out.contains("0/40") && out.contains("priority 7"), "{out}");

    // The cells CSV: the contract's columns first, one row per cell.
    let csv = reqwest::get(format!("{url}/api/v1/experiments/{first}/cells.csv")).await?;
    ensure!(csv.headers()["content-type"].to_str()?.starts_with("text/csv"));
    let csv = csv.text().await?;
    let lines: Vec<&str> = csv.lines().collect();
    ensure!(lines[0].starts_with("cell,games,wins,draws,losses,win_rate,ci_low,ci_high,"), "{csv}");
    ensure!(lines.len() == 3 && lines[1].starts_with("0,0,0,0,0,,,,running,"), "{csv}");
    ensure!(lines[2].contains("\"bot2=softmax:t=2,bag=30\""), "a field with commas is quoted: {csv}");
    // And a column of its own for each grid axis.
    ensure!(lines[0].ends_with(",target_games,cell_id,axis.bot2"), "{csv}");
    // Progress as the pages and the CLI count it: done (`games`) against `target_games`.
    let target = |line: &str| line.rsplit(',').nth(2).map(str::to_string);
    ensure!(target(lines[1]).as_deref() == Some("40"), "{csv}");
    ensure!(lines[1].ends_with(",greedy") && lines[2].ends_with(",\"softmax:t=2,bag=30\""), "{csv}");

    // Stop: the stranger is refused, the owner stops it, a second stop says why it cannot.
    let (ok, _, err) = experiments(&["stop", &first_s, "--coordinator", url, "--token", &stranger])?;
    ensure!(!ok && err.contains("refused"), "{err}");
    let (ok, out, _) = experiments(&["stop", &first_s, "--coordinator", url, "--token", &token])?;
    ensure!(ok && out.contains("stopped"), "{out}");
    let (ok, _, err) = experiments(&["stop", &first_s, "--coordinator", url, "--token", &token])?;
    ensure!(!ok && err.contains("not queued or running"), "{err}");
    let (_, out, _) = experiments(&["list", "--coordinator", url, "--status", "stopped", "--json"])?;
    let stopped: serde_json::Value = serde_json::from_str(&out)?;
    ensure!(stopped.as_array().map(Vec::len) == Some(1) && stopped[0]["id"] == first_s, "{out}");
    // Stopped before its end: done against the target it had, not a full bar.
    let listed_before = listed.as_array().unwrap().iter().find(|e| e["id"] == first_s).unwrap()["target_games"].clone();
    ensure!(stopped[0]["target_games"] == listed_before && stopped[0]["games"] == 0, "{out}");
    // A token saved with `login` serves `priority`, `stop` and `submit` without --token.
    let home = dir.0.join("researcher");
    let worker_at_home = |args: &[&str]| {
        Command::new(bin("worker")).args(args).env("LEXHIVE_CONFIG_DIR", &home).env_remove("LEXHIVE_TOKEN").output()
    };
    let out = worker_at_home(&["experiments", "priority", &second_s, "2", "--coordinator", url])?;
    let err = String::from_utf8_lossy(&out.stderr);
    ensure!(
        !out.status.success() && err.contains("no researcher token for") && err.contains("experiments login"),
        "{err}"
    );
    // A token the coordinator does not know, or one that is not a researcher's, is not saved.
    let out = worker_at_home(&["experiments", "login", "--coordinator", url, "--token", "deadbeef"])?;
    let err = String::from_utf8_lossy(&out.stderr);
    ensure!(
        !out.status.success() && err.contains("does not accept this token") && err.contains("unknown token"),
        "{err}"
    );
    let (_, worker) = post(
        &reqwest::Client::new(),
        &format!("{url}/api/v1/workers/register"),
        None,
        serde_json::json!({ "protocol": shared::PROTOCOL_VERSION, "name": "w", "threads": 1, "kinds": ["match"] }),
    )
    .await;
    let out =
        worker_at_home(&["experiments", "login", "--coordinator", url, "--token", worker["token"].as_str().unwrap()])?;
    let err = String::from_utf8_lossy(&out.stderr);
    ensure!(!out.status.success() && err.contains("this is a worker token"), "{err}");
    ensure!(!home.join("researcher.json").exists(), "nothing saved");
    let out = worker_at_home(&["experiments", "login", "--coordinator", &format!("{url}/"), "--token", &token])?;
    ensure!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(home.join("researcher.json"))?.permissions().mode();
    ensure!(mode & 0o077 == 0, "the saved token is readable by its owner only: {mode:o}");
    let out = worker_at_home(&["experiments", "priority", &second_s, "2", "--coordinator", url])?;
    ensure!(out.status.success() && String::from_utf8_lossy(&out.stdout).contains("priority 2"), "{out:?}");
    let file = experiment_file(&dir.0, "c.toml", &grid("saved token"));
    let out = worker_at_home(&["submit", file.to_str().unwrap(), "--coordinator", url])?;
    ensure!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // A thread count of 0 would do nothing for ever: refused with the flag named.
    let out = Command::new(bin("worker")).args(["autoplay", "--games", "2", "--threads", "0"]).output()?;
    let err = String::from_utf8_lossy(&out.stderr);
    ensure!(out.status.code() == Some(2) && err.contains("--threads") && err.contains("at least 1 thread"), "{err}");
    // `show --follow` of an experiment that is over prints once and exits.
    let (ok, out, _) = experiments(&["show", &first_s, "--coordinator", url, "--follow", "--every", "1"])?;
    ensure!(ok && out.contains("stopped"), "{out}");
    drop(coord);
    db.drop_db().await
}
