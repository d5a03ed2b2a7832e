//! Endgame experiments on the spine: a coordinator, two real volunteers and a lying worker
//! (plain HTTP). Every position is solved and cross-checked by a different worker; the liar's
//! wrong exact values are caught by the checks and solved a third time, and the value the two
//! honest workers agree on is the position's; its values "cut by the limits" are shown as
//! unverified; the dashboard in Chromium shows it all.

use anyhow::Result;
use e2e::*;
use serde_json::{Value, json};
use std::collections::{HashMap, HashSet};
use std::time::Duration;

const SET: &str = r#"
name = "small endgames"
kind = "endgame"
seed = 4
[endgame]
generate = { count = 10, extra = 4 }
time = 30
cross_check = 1.0
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn endgame_sets_are_solved_cross_checked_and_liars_caught() -> Result<()> {
    let db = TestDb::create().await?;
    let coord = Coordinator::start(&db.url, &["--batch-secs", "1"])?;
    let token = researcher_token(&db.url)?;
    let dir = Scratch::new("endgames");
    let id = submit(&coord.url, &token, &experiment_file(&dir.0, "set.toml", SET))?;
    let api = format!("{}/api/v1", coord.url);
    let http = reqwest::Client::new();

    // The liar takes the first batch and reports a made-up value for each position.
    let (s, v) = post(
        &http,
        &format!("{api}/workers/register"),
        None,
        json!({ "protocol": shared::PROTOCOL_VERSION, "name": "liar", "threads": 2, "kinds": ["endgame"] }),
    )
    .await;
    assert_eq!(s, 200, "{v}");
    let liar = v["token"].as_str().unwrap().to_string();
    let (gz, sha) = gz64("");
    let logs = json!({ "gcg_gz": gz, "gcg_sha256": sha, "csv_gz": gz, "csv_sha256": sha });
    // The liar's first batch gets made-up exact values; its second, values it says were cut
    // by the limits (which are never compared, so never trusted).
    let mut batches = Vec::new();
    for exact in [true, false] {
        let (s, batch) = post(
            &http,
            &format!("{api}/claim"),
            Some(&liar),
            json!({ "protocol": shared::PROTOCOL_VERSION, "threads": 2, "kinds": ["endgame"] }),
        )
        .await;
        assert_eq!((s, batch["status"].as_str()), (200, Some("batch")), "{batch}");
        assert_eq!(batch["job"]["kind"], "endgame");
        let positions: Vec<u64> =
            batch["job"]["positions"].as_array().unwrap().iter().map(|p| p["index"].as_u64().unwrap()).collect();
        assert!(!positions.is_empty());
        let solved: Vec<Value> = positions
            .iter()
            .map(|&i| json!({ "index": i, "cgp": "made up", "skipped": false, "value": 999, "exact": exact, "best": "-", "sequence": "-", "nodes": 1, "ms": 1 }))
            .collect();
        let body = json!({ "lease_id": batch["lease_id"], "elapsed_ms": 5, "result": { "kind": "endgame", "solved": solved }, "logs": logs });
        let result = format!("{api}/batches/{}/result", batch["batch_id"].as_str().unwrap());
        // Positions that are not the batch's are refused.
        let mut wrong = body.clone();
        wrong["result"]["solved"][0]["index"] = json!(1000);
        let (s, v) = post(&http, &result, Some(&liar), wrong).await;
        assert_eq!(s, 422, "{v}");
        let (s, v) = post(&http, &result, Some(&liar), body).await;
        assert_eq!(s, 200, "{v}");
        assert!(v["message"].as_str().unwrap().contains("queued for a trusted worker"), "{v}");
        batches.push(positions);
    }
    let [lied, limited] = [batches[0].clone(), batches[1].clone()];

    // Two honest volunteers do the rest: first solves, cross-checks, and re-solves.
    let mut a = volunteer(&coord.url, "volunteer-a", &dir.0.join("a"), &[])?;
    let mut b = volunteer(&coord.url, "volunteer-b", &dir.0.join("b"), &[])?;
    let done = wait_for_status(&coord.url, id, &["finished", "failed"], Duration::from_secs(120)).await;
    let _ = (a.kill(), b.kill(), a.wait(), b.wait());
    let done = done?;
    assert_eq!(done["status"], "finished", "{done}");

    let rows = get_json(&format!("{api}/experiments/{id}/endgames")).await?;
    let rows = rows.as_array().unwrap();
    let mut by_pos: HashMap<u64, Vec<&Value>> = HashMap::new();
    for r in rows {
        by_pos.entry(r["index"].as_u64().unwrap()).or_default().push(r);
    }
    assert_eq!(by_pos.len(), 10, "every position solved");
    let mut disputed = 0;
    for (i, solves) in &by_pos {
        let first: Vec<_> = solves.iter().filter(|r| r["pass"] == "solve").collect();
        assert_eq!(first.len(), 1, "position {i} solved once first: {solves:?}");
        let checks: Vec<_> = solves.iter().filter(|r| r["pass"] == "check").collect();
        assert!(!checks.is_empty(), "position {i} cross-checked");
        let workers: HashSet<&str> = solves.iter().map(|r| r["worker"].as_str().unwrap()).collect();
        assert_eq!(workers.len(), solves.len(), "position {i}: each solve by a different worker: {solves:?}");
        if lied.contains(i) {
            // The first check contradicted the liar, a third worker agreed with the check: that
            // is the position's value, and the liar is the one marked as disagreeing.
            assert_eq!(checks.len(), 2, "re-solved once: {solves:?}");
            assert_eq!(
                (&first[0]["verdict"], &first[0]["disagrees"]),
                (&json!("disagrees"), &json!(true)),
                "{solves:?}"
            );
            for c in &checks {
                assert_eq!((&c["verdict"], &c["disagrees"]), (&json!("agrees"), &json!(false)), "{solves:?}");
            }
            assert_eq!((&checks[0]["value"], &checks[0]["skipped"]), (&checks[1]["value"], &checks[1]["skipped"]));
            disputed += 1;
        } else if limited.contains(i) {
            // A solve cut by the limits is not compared: no dispute, no re-solve, and nothing
            // agreed until a second exact solve.
            assert_eq!(checks.len(), 1, "{solves:?}");
            assert_eq!(first[0]["verdict"], "unverified", "{solves:?}");
            assert_eq!((&checks[0]["verdict"], &checks[0]["disagrees"]), (&json!("pending"), &json!(false)));
        } else {
            assert_eq!(checks.len(), 1);
            for r in [first[0], checks[0]] {
                assert_eq!((&r["verdict"], &r["disagrees"]), (&json!("agrees"), &json!(false)), "{solves:?}");
            }
            assert_eq!(checks[0]["value"], first[0]["value"], "{solves:?}");
            assert_eq!(checks[0]["skipped"], first[0]["skipped"]);
            if !first[0]["skipped"].as_bool().unwrap() {
                assert!(first[0]["exact"].as_bool().unwrap() && !first[0]["best"].as_str().unwrap().is_empty());
            }
        }
    }
    assert_eq!(disputed, lied.len());

    // The dashboard, in Chromium.
    let page = dump_dom(&format!("{}/experiments/{id}", coord.url), &dir.0.join("chromium"))?;
    // On a phone and a desktop: nothing runs off the page, tables scroll inside it, chart text
    // stays legible (the dashboards' own check, on this page).
    for width in [400u32, 1400] {
        let m = layout(&format!("{}/experiments/{id}", coord.url), width, &dir.0.join("chromium")).await?;
        let viewport = m["viewport"].as_f64().unwrap_or(0.0);
        assert!(viewport > 0.0 && m["page"].as_f64() <= Some(viewport + 1.0), "at {width}: {m}");
        for t in m["tables"].as_array().unwrap() {
            assert!(t["fits"] == true || t["scrolls"] == "auto", "at {width}: table {t}");
        }
        for c in m["charts"].as_array().unwrap() {
            assert!(c["right"].as_f64() <= Some(viewport + 1.0) && c["text"].as_f64() >= Some(11.0), "at {width}: {c}");
        }
    }
    screenshot_for_docs(&format!("{}/experiments/{id}", coord.url), &dir.0.join("chromium"), "endgame", 1500)?;
    assert!(page.contains("solved <span id=\"solved\">10</span> / 10"), "{page}");
    assert!(page.contains(&format!("disagreements <span id=\"disagreements\">{}</span>", lied.len())));
    assert_eq!(page.matches("<tr class=\"position\"").count(), 10);
    // Each row shows the agreed value and who disagreed, or why there is none.
    for (i, solves) in &by_pos {
        let start = page.find(&format!("<tr class=\"position\" data-index=\"{i}\"")).unwrap();
        let row = &page[start..start + page[start..].find("</tr>").unwrap()];
        if limited.contains(i) {
            assert!(row.contains("data-state=\"unconfirmed\"") && row.contains("unverified: liar"), "{row}");
            continue;
        }
        assert!(row.contains("data-state=\"agreed\"") && row.contains("agreed by "), "{row}");
        assert_eq!(row.contains("disagreed: liar"), lied.contains(i), "{row}");
        let agreed = solves.iter().find(|r| r["verdict"] == "agrees").unwrap();
        if agreed["skipped"] == false {
            assert!(row.contains(&format!("data-value=\"{}\"", agreed["value"])), "{row}");
        }
    }
    assert_eq!(page.matches("<tr class=\"dispute\"").count(), 3 * lied.len(), "three solves of each disputed position");
    let buckets: u64 = page
        .match_indices("<rect class=\"bucket\" data-count=\"")
        .map(|(at, m)| page[at + m.len()..].split('"').next().unwrap().parse::<u64>().unwrap())
        .sum();
    let unskipped = rows.iter().filter(|r| r["pass"] == "solve" && r["skipped"] == false).count() as u64;
    assert_eq!(buckets, unskipped, "the time histogram counts every first solve");
    assert!(!page.contains("http-equiv=\"refresh\""));
    assert!(page.contains(">time to solve a position</text>") && page.contains(">positions</text>"), "axis titles");

    for template in ["/experiments/{id}", "/experiments/{id}/endgames", "/experiments/{id}/endgames.csv"] {
        check_documented(&coord.url, template, &template.replace("{id}", &id.to_string())).await?;
    }
    // The solutions as CSV: a row per position, its agreed value where two workers agreed.
    let csv = reqwest::get(format!("{}/api/v1/experiments/{id}/endgames.csv", coord.url)).await?.text().await?;
    assert_eq!(csv.lines().count(), 11, "a header and a row per position: {csv}");
    for (i, solves) in &by_pos {
        let row = csv.lines().find(|l| l.starts_with(&format!("{i},"))).unwrap();
        let agreed = solves.iter().find(|r| r["verdict"] == "agrees");
        match agreed.filter(|_| !limited.contains(i)) {
            Some(a) if a["skipped"] == false => {
                assert!(row.starts_with(&format!("{i},{},agreed,", a["value"])), "{row}")
            }
            Some(_) => assert!(row.starts_with(&format!("{i},,skipped,")), "{row}"),
            None => assert!(row.starts_with(&format!("{i},,unconfirmed,")), "{row}"),
        }
    }
    drop(coord);
    db.drop_db().await
}

/// A Sybil pair — workers of two untrusted owners of one person — agrees on a made-up value
/// for every position it solves (attack 3 of issue 57). Untrusted owners never agree
/// a value among themselves: every position they solved goes to a trusted worker, whose solve
/// decides; every agreed value is what a local `worker endgame` of the position gives.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sybil_pair_cannot_agree_a_wrong_value() -> Result<()> {
    let db = TestDb::create().await?;
    // Nobody earns trust: the Sybils' positions all go to the operator's trusted owner.
    let coord =
        Coordinator::start(&db.url, &["--batch-secs", "1", "--earn-trust-batches", "1000", "--spot-check", "0"])?;
    let token = researcher_token(&db.url)?;
    let dir = Scratch::new("sybil");
    let set =
        SET.replace("count = 10, extra = 4", "count = 6, extra = 2").replace("cross_check = 1.0", "cross_check = 0.0");
    let id = submit(&coord.url, &token, &experiment_file(&dir.0, "set.toml", &set))?;
    let api = format!("{}/api/v1", coord.url);
    let http = reqwest::Client::new();
    // Two owners, a worker each.
    let mut sybils = Vec::new();
    for (owner, name) in [("mallory", "sybil-a"), ("mallory-2", "sybil-b")] {
        let (s, v) = post(&http, &format!("{api}/owners"), None, json!({ "name": owner })).await;
        assert_eq!(s, 200, "{v}");
        let owner = v["token"].as_str().unwrap().to_string();
        let body = json!({ "protocol": shared::PROTOCOL_VERSION, "name": name, "threads": 1, "kinds": ["endgame"], "owner_token": owner });
        let (s, v) = post(&http, &format!("{api}/workers/register"), None, body).await;
        assert_eq!(s, 200, "{v}");
        sybils.push(v["token"].as_str().unwrap().to_string());
    }
    let (gz, sha) = gz64("");
    let logs = json!({ "gcg_gz": gz, "gcg_sha256": sha, "csv_gz": gz, "csv_sha256": sha });
    // Each Sybil takes what it is given and reports the same made-up exact value for it.
    let mut lied: HashMap<String, HashSet<u64>> = HashMap::new();
    for (name, t) in ["sybil-a", "sybil-b"].iter().zip(&sybils) {
        let claim = json!({ "protocol": shared::PROTOCOL_VERSION, "threads": 1, "kinds": ["endgame"] });
        let (s, batch) = post(&http, &format!("{api}/claim"), Some(t), claim).await;
        assert_eq!((s, batch["status"].as_str()), (200, Some("batch")), "{batch}");
        let positions: Vec<u64> =
            batch["job"]["positions"].as_array().unwrap().iter().map(|p| p["index"].as_u64().unwrap()).collect();
        let solved: Vec<Value> = positions
            .iter()
            .map(|&i| json!({ "index": i, "cgp": "made up", "skipped": false, "value": 999, "exact": true, "best": "-", "sequence": "-", "nodes": 1, "ms": 1 }))
            .collect();
        let body = json!({ "lease_id": batch["lease_id"], "elapsed_ms": 5, "result": { "kind": "endgame", "solved": solved }, "logs": logs });
        let (s, v) =
            post(&http, &format!("{api}/batches/{}/result", batch["batch_id"].as_str().unwrap()), Some(t), body).await;
        assert_eq!(s, 200, "{v}");
        lied.insert(name.to_string(), positions.into_iter().collect());
    }
    assert!(
        lied["sybil-a"].is_disjoint(&lied["sybil-b"]),
        "an untrusted owner is never handed another's positions to check: {lied:?}"
    );

    let lab = trusted_owner(&coord.url, &db.url, "lab")?;
    let mut a = volunteer(&coord.url, "honest-a", &dir.0.join("a"), &["--owner-token", &lab])?;
    let mut b = volunteer(&coord.url, "honest-b", &dir.0.join("b"), &["--owner-token", &lab])?;
    let done = wait_for_status(&coord.url, id, &["finished", "failed"], Duration::from_secs(180)).await;
    let _ = (a.kill(), b.kill(), a.wait(), b.wait());
    assert_eq!(done?["status"], "finished");

    let rows = get_json(&format!("{api}/experiments/{id}/endgames")).await?;
    let mut by_pos: HashMap<u64, Vec<&Value>> = HashMap::new();
    for r in rows.as_array().unwrap() {
        by_pos.entry(r["index"].as_u64().unwrap()).or_default().push(r);
    }
    assert_eq!(by_pos.len(), 6, "every position solved");
    let sybils: HashSet<u64> = lied.values().flatten().copied().collect();
    for (i, solves) in &by_pos {
        if !sybils.contains(i) {
            // The trusted owner's own first solves stand (cross_check = 0 asks no second).
            assert!(solves.iter().all(|r| r["trusted"] == true && r["verdict"] != "disagrees"), "{solves:?}");
            continue;
        }
        let agreed: Vec<_> = solves.iter().filter(|r| r["verdict"] == "agrees").collect();
        assert!(!agreed.is_empty(), "position {i}: a trusted solve decided: {solves:?}");
        for r in &agreed {
            assert!(r["worker"].as_str().unwrap().starts_with("honest-"), "position {i}: {solves:?}");
            assert_eq!(r["trusted"], true, "{r}");
        }
        for r in solves.iter().filter(|r| r["worker"].as_str().unwrap().starts_with("sybil-")) {
            assert_eq!(
                (&r["verdict"], &r["disagrees"]),
                (&json!("disagrees"), &json!(true)),
                "position {i}: {solves:?}"
            );
        }
        // The agreed value is the local solver's.
        let agreed = agreed[0];
        if agreed["skipped"] == true {
            continue;
        }
        let out = std::process::Command::new(bin("worker"))
            .args(["endgame", "--cgp", agreed["cgp"].as_str().unwrap()])
            .output()?;
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let local = String::from_utf8(out.stdout)?;
        assert!(local.contains(&format!("value: {}\n", agreed["value"])), "position {i}: {agreed}\nlocal:\n{local}");
    }
    drop(coord);
    db.drop_db().await
}

/// An endgame set that asks for cross-checks, on the machines of one owner: every first solve
/// is done, the cross-checks wait for a worker of another owner, and both the volunteer and the
/// experiment's page and JSON say so (a demo with one volunteer used to wait without a word).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cross_checks_wait_for_another_owner_and_say_so() -> Result<()> {
    let db = TestDb::create().await?;
    let coord = Coordinator::start(&db.url, &["--batch-secs", "1"])?;
    let token = researcher_token(&db.url)?;
    let dir = Scratch::new("endgames-one-owner");
    let set = SET.replace("count = 10, extra = 4", "count = 3, extra = 2");
    let id = submit(&coord.url, &token, &experiment_file(&dir.0, "set.toml", &set))?;
    let home = dir.0.join("v");
    let mut v = volunteer(&coord.url, "alone", &home, &["--exit-when-idle"])?;
    let status = tokio::task::spawn_blocking(move || v.wait()).await??;
    assert!(status.success());
    let said = std::fs::read_to_string(home.join("volunteer.log"))?;
    assert!(said.contains("3 queued batches wait for a worker of another owner"), "{said}");
    let e = get_json(&format!("{}/api/v1/experiments/{id}", coord.url)).await?;
    assert_eq!((e["status"].as_str(), e["waiting_for_others"].as_i64()), (Some("running"), Some(3)), "{e}");
    check_documented(&coord.url, "/experiments/{id}", &format!("/experiments/{id}")).await?;
    let page = reqwest::get(format!("{}/experiments/{id}", coord.url)).await?.text().await?;
    assert!(page.contains("3 of the queued batches wait for a worker of another owner"), "{page}");
    // `worker experiments show` speaks of positions, not games won and lost, and of the wait.
    let out = std::process::Command::new(bin("worker"))
        .args(["experiments", "show", &id.to_string(), "--coordinator", &coord.url])
        .output()?;
    let out = String::from_utf8_lossy(&out.stdout);
    assert!(out.contains("positions") && !out.contains("W-D-L") && !out.contains("win rate"), "{out}");
    assert!(out.contains("3 queued batches wait for a worker of another owner"), "{out}");
    drop(coord);
    db.drop_db().await
}
