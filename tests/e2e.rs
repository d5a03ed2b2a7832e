//! End-to-end: real Postgres, real coordinator processes on free ports, real `worker
//! volunteer` processes, real HTTP. Tests run one at a time (they time leases).

use anyhow::{Result, ensure};
use e2e::*;
use std::process::Command;
use std::time::{Duration, Instant};
use uuid::Uuid;

/// These tests time leases and signals: run them one at a time.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_volunteers_survive_a_killed_worker_and_a_coordinator_restart() -> Result<()> {
    let _serial = SERIAL.lock().await;
    let db = TestDb::create().await?;
    let mut coord = Coordinator::start(&db.url, &["--lease-secs", "4", "--batch-secs", "2", "--reap-secs", "1"])?;
    let token = researcher_token(&db.url)?;
    let dir = Scratch::new("e2e");
    let id = submit(&coord.url, &token, &experiment_file(&dir.0, "match.toml", MATCH))?;
    let mut workers: Vec<_> = (1..=3)
        .map(|i| volunteer(&coord.url, &format!("w{i}"), &dir.0.join(format!("w{i}")), &["--exit-when-idle"]))
        .collect::<Result<_>>()?;

    // Kill w1 (SIGKILL) while it holds a lease, after it has measured its speed. It is frozen
    // (SIGSTOP) first, so that the lease seen is one it still holds when it dies: a batch can
    // finish uploading between a look and a kill. An upload already in the coordinator's hands
    // still lands after the freeze, so the lease is read a moment later.
    let start = Instant::now();
    let pool = db.pool().await?;
    let signal = |sig: &str, pid: u32| Command::new("kill").args([sig, &pid.to_string()]).status();
    let (w1_id, killed_batch) = loop {
        if let Some(w) = worker_named(&coord.url, "w1")
            .await?
            .filter(|w| w["leased_batches"].as_i64() > Some(0) && w["batches"].as_i64() >= Some(1))
        {
            let id: Uuid = w["id"].as_str().unwrap().parse()?;
            signal("-STOP", workers[0].id())?;
            tokio::time::sleep(Duration::from_millis(500)).await;
            let leased: Option<(Uuid,)> =
                sqlx::query_as("SELECT id FROM batches WHERE lease_owner = $1 AND state = 'leased' LIMIT 1")
                    .bind(id)
                    .fetch_optional(&pool)
                    .await?;
            if let Some((batch,)) = leased {
                break (id, batch);
            }
            signal("-CONT", workers[0].id())?;
        }
        ensure!(start.elapsed() < Duration::from_secs(120), "w1 never held a lease");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    workers[0].kill()?;
    workers[0].wait()?;

    // Restart the coordinator while the others play.
    tokio::time::sleep(Duration::from_millis(500)).await;
    coord.restart()?;

    let exp = wait_for_status(&coord.url, id, &["finished"], Duration::from_secs(300)).await?;
    let exp2 = check_totals(&coord.url, id).await?;
    assert_eq!(exp["cells"].as_array().unwrap().len(), 2);
    for c in exp2["cells"].as_array().unwrap() {
        assert_eq!(c["games"], 240, "every cell played exactly its games: {c}");
        assert_eq!(c["status"], "finished");
    }

    // The killed worker's batch expired, went back to the queue, and finished elsewhere.
    let (state, leases, failures, error): (String, i32, i32, Option<String>) =
        sqlx::query_as("SELECT state, leases, failures, last_error FROM batches WHERE id = $1")
            .bind(killed_batch)
            .fetch_one(&pool)
            .await?;
    assert_eq!(state, "done");
    assert!(leases >= 2 && failures >= 1, "leases {leases} failures {failures}");
    assert!(error.unwrap_or_default().contains("lease expired"));
    let (by,): (Uuid,) = sqlx::query_as("SELECT worker_id FROM batch_results WHERE batch_id = $1")
        .bind(killed_batch)
        .fetch_one(&pool)
        .await?;
    assert_ne!(by, w1_id);

    // Nothing counted twice: workers' games add up to the experiment's.
    let ws = get_json(&format!("{}/api/v1/workers", coord.url)).await?;
    let contributed: i64 = ws.as_array().unwrap().iter().map(|w| w["games"].as_i64().unwrap()).sum();
    assert_eq!(contributed, 480);

    // The survivors exit 0 once there is no more work.
    for w in &mut workers[1..] {
        let status = tokio::task::block_in_place(|| w.wait())?;
        assert!(status.success(), "volunteer exited with {status}");
    }
    // Every uploaded game replays under the rules and gives the uploaded result.
    assert_eq!(check_replays(&coord.url, &db.url, id).await?, 480);
    // `worker autoplay` plays the same deals for cell 0 and prints the interval the page shows.
    let out = std::process::Command::new(bin("worker"))
        .args(["autoplay", "--bot1", "static", "--bot2", "greedy", "--games", "240", "--seed", "11", "--threads", "2"])
        .output()?;
    ensure!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let cli = String::from_utf8(out.stdout)?;
    let line = cli.lines().find_map(|l| l.strip_prefix("static win rate: ")).expect("a win-rate line");
    let (rate, interval) = line.split_once(" (95%: ").expect("rate and interval");
    let interval = interval.trim_end_matches(')');
    let page = reqwest::get(format!("{}/experiments/{id}", coord.url)).await?.text().await?;
    let row = page.split("<tr class=\"cell\" data-index=\"0\" ").nth(1).expect("cell 0's row");
    let row = &row[..row.find("</tr>").unwrap()];
    ensure!(row.contains(&format!(">{rate}<")) && row.contains(interval), "CLI `{line}` vs page row {row}");
    // Recomputing from stored batch results changes nothing.
    let out = coordinator_cmd(&db.url, &["recompute"])?;
    assert!(out.contains("2 cells recomputed, 0 differed"), "{out}");
    // A cell whose stored totals went wrong is found and repaired from the batch results.
    let before = check_totals(&coord.url, id).await?;
    sqlx::query(
        "UPDATE cells SET tally = jsonb_set(tally, '{wins}', '0'), done_units = 1 WHERE experiment_id = $1 AND idx = 1",
    )
    .bind(id)
    .execute(&pool)
    .await?;
    assert!(check_totals(&coord.url, id).await.is_err(), "the corruption is visible");
    let out = coordinator_cmd(&db.url, &["recompute", "--experiment", &id.to_string()])?;
    assert!(out.contains("2 cells recomputed, 1 differed"), "{out}");
    let after = check_totals(&coord.url, id).await?;
    assert_eq!(before["cells"], after["cells"]);
    drop(coord);
    db.drop_db().await
}

/// Ctrl-C once: the volunteer finishes its batch, uploads it and exits 0. Twice: it releases the
/// batch at once, which goes back to the queue unplayed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_finishes_or_releases_the_batch() -> Result<()> {
    let _serial = SERIAL.lock().await;
    let db = TestDb::create().await?;
    // Long batches (about 4 s of work: hundreds of pairs once the worker's rate is known) so
    // that the signals land mid-batch.
    let coord = Coordinator::start(&db.url, &["--batch-secs", "4"])?;
    let token = researcher_token(&db.url)?;
    let dir = Scratch::new("ctrlc");
    submit(&coord.url, &token, &experiment_file(&dir.0, "m.toml", &MATCH.replace("games = 240", "games = 16000")))?;
    let pool = db.pool().await?;
    let sigint = |pid: u32| std::process::Command::new("kill").args(["-INT", &pid.to_string()]).status();
    // Wait until `name` holds a lease on a long batch: at least 2 s of work at its cell's own
    // pace (CPU seconds a pair, over the worker's threads). The first few, sized while the pace
    // and the worker's rate are measured, may take milliseconds; a unit count alone is wrong on
    // machines 10x apart.
    let leased = async |name: &str| -> Result<Uuid> {
        let start = Instant::now();
        loop {
            let row: Option<(Uuid,)> = sqlx::query_as(
                "SELECT b.id FROM batches b JOIN workers w ON w.id = b.lease_owner JOIN cells c ON c.id = b.cell_id
                 WHERE w.name = $1 AND b.state = 'leased'
                   AND b.units * 2e-6 * ((c.tally->'micros'->>0)::float8 + (c.tally->'micros'->>1)::float8)
                       / nullif((c.tally->>'games')::float8, 0) >= 2.0 * greatest(w.threads, 1)",
            )
            .bind(name)
            .fetch_optional(&pool)
            .await?;
            if let Some((b,)) = row {
                return Ok(b);
            }
            ensure!(start.elapsed() < Duration::from_secs(60), "{name} never held a batch");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };

    let mut once = volunteer(&coord.url, "once", &dir.0.join("once"), &[])?;
    let batch = leased("once").await?;
    sigint(once.id())?;
    let status = tokio::task::block_in_place(|| once.wait())?;
    assert!(status.success(), "{status}");
    let (state,): (String,) =
        sqlx::query_as("SELECT state FROM batches WHERE id = $1").bind(batch).fetch_one(&pool).await?;
    assert_eq!(state, "done", "finished and uploaded before quitting");
    let (claims,): (i64,) = sqlx::query_as("SELECT count(*) FROM batches b JOIN workers w ON w.id = b.lease_owner WHERE w.name = 'once' AND b.state = 'leased'").fetch_one(&pool).await?;
    assert_eq!(claims, 0, "claimed nothing after Ctrl-C");

    let mut twice = volunteer(&coord.url, "twice", &dir.0.join("twice"), &[])?;
    let batch = leased("twice").await?;
    sigint(twice.id())?;
    tokio::time::sleep(Duration::from_millis(200)).await;
    sigint(twice.id())?;
    let status = tokio::task::block_in_place(|| twice.wait())?;
    assert!(status.success(), "{status}");
    let (state, failures): (String, i32) =
        sqlx::query_as("SELECT state, failures FROM batches WHERE id = $1").bind(batch).fetch_one(&pool).await?;
    assert_eq!((state.as_str(), failures), ("queued", 0), "released unplayed, not failed");
    let (results,): (i64,) =
        sqlx::query_as("SELECT count(*) FROM batch_results WHERE batch_id = $1").bind(batch).fetch_one(&pool).await?;
    assert_eq!(results, 0);

    // A volunteer whose token the coordinator forgot (a reset database) registers afresh.
    sqlx::query("DELETE FROM tokens WHERE worker_id IN (SELECT id FROM workers WHERE name = 'once')")
        .execute(&pool)
        .await?;
    sqlx::query("UPDATE experiments SET status = 'stopped'").execute(&pool).await?;
    let mut again = volunteer(&coord.url, "once", &dir.0.join("once"), &["--exit-when-idle"])?;
    let status = tokio::task::block_in_place(|| again.wait())?;
    assert!(status.success(), "{status}");
    let (registrations,): (i64,) =
        sqlx::query_as("SELECT count(*) FROM workers WHERE name = 'once'").fetch_one(&pool).await?;
    assert_eq!(registrations, 2);
    drop(coord);
    db.drop_db().await
}

/// Artifacts are verified: a lexicon or table whose bytes don't hash to the sha256 the batch
/// names is refused by the worker, the batch fails, and after `--max-failures` owners it is parked
/// with the reason on the experiment page. Good artifacts land in the cache under their sha256,
/// and a damaged cached copy is fetched again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tampered_artifacts_are_refused() -> Result<()> {
    let _serial = SERIAL.lock().await;
    let db = TestDb::create().await?;
    let coord = Coordinator::start(&db.url, &["--max-failures", "2"])?;
    let token = researcher_token(&db.url)?;
    let dir = Scratch::new("tamper");
    let pool = db.pool().await?;
    sqlx::query("UPDATE artifacts SET bytes = convert_to('tampered', 'UTF8') WHERE role = 'layout'")
        .execute(&pool)
        .await?;
    let id =
        submit(&coord.url, &token, &experiment_file(&dir.0, "m.toml", &MATCH.replace("games = 240", "games = 20")))?;
    // Failures park a batch only when they come from different owners: two volunteers (each
    // its own owner) must fail it.
    let mut w = volunteer(&coord.url, "careful", &dir.0.join("w"), &["--exit-when-idle"])?;
    let mut w2 = volunteer(&coord.url, "careful-too", &dir.0.join("w2"), &["--exit-when-idle"])?;
    let exp = wait_for_status(&coord.url, id, &["failed"], Duration::from_secs(60)).await?;
    let error = exp["parked"][0]["error"].as_str().unwrap_or_default();
    assert!(error.contains("standard15.layout") && error.contains("hash"), "{exp}");
    assert!(tokio::task::block_in_place(|| w.wait())?.success());
    assert!(tokio::task::block_in_place(|| w2.wait())?.success());
    // What did verify is cached under its sha256, the tampered file is not.
    let cached: Vec<String> = std::fs::read_dir(dir.0.join("w/cache/artifacts"))?
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let shas: Vec<(String, String)> = sqlx::query_as("SELECT sha256, role FROM artifacts").fetch_all(&pool).await?;
    // Artifacts are fetched in role order; the one after the tampered layout never was.
    for (sha, role) in &shas {
        let want = matches!(role.as_str(), "lexicon" | "leaves" | "distribution");
        assert_eq!(cached.iter().any(|f| f.starts_with(sha)), want, "{role}: {cached:?}");
    }

    // Mend the coordinator's copy; damage the worker's cached distribution. The worker notices,
    // fetches it again, and plays.
    let layout = std::fs::read(repo().join("lexica/standard15.layout"))?;
    sqlx::query("UPDATE artifacts SET bytes = $1 WHERE role = 'layout'").bind(&layout).execute(&pool).await?;
    let dist_sha = &shas.iter().find(|s| s.1 == "distribution").unwrap().0;
    let cached_dist = dir.0.join("w/cache/artifacts").join(format!("{dist_sha}.dist"));
    std::fs::write(&cached_dist, "A 9 1\n")?;
    let id =
        submit(&coord.url, &token, &experiment_file(&dir.0, "m2.toml", &MATCH.replace("games = 240", "games = 20")))?;
    let mut w = volunteer(&coord.url, "careful", &dir.0.join("w"), &["--exit-when-idle"])?;
    wait_for_status(&coord.url, id, &["finished"], Duration::from_secs(60)).await?;
    assert!(tokio::task::block_in_place(|| w.wait())?.success());
    assert_eq!(std::fs::read(&cached_dist)?, std::fs::read(repo().join("lexica/english.dist"))?);
    drop(coord);
    db.drop_db().await
}
