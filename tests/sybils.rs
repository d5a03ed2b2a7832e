//! The attacks of issue 57, each against a coordinator with its trust defaults (trust earned
//! only against trusted work, proof of work for owners, limits per network): free accounts
//! neither outvote the honest, nor decide an SPRT, nor fail or stall an experiment; an owner
//! costs work; slow strangers cannot take the workers' budget. Each ends on the local replay's
//! exact result with no honest worker quarantined. (The endgame attack is in `endgames.rs`,
//! leaked logs and memory in `trust.rs` and `queue.rs`.)

use anyhow::{Context, Result, ensure};
use e2e::*;
use serde_json::json;
use std::time::{Duration, Instant};
use tokio::io::AsyncWriteExt;

const SEED: u64 = 21;

/// Trust as a coordinator starts by default (the harness otherwise trusts every owner and
/// asks no proof of work), with short batches for a short test.
const DEFAULTS: [&str; 6] = ["--earn-trust-batches", "30", "--registration-work", "24", "--batch-secs", "1"];

/// An owner registered as `worker owner` does it (its proof of work included) from `http`'s
/// address, and one worker of it: the owner's token and the worker's.
async fn sybil(http: &reqwest::Client, url: &str, owner: &str, worker: &str) -> Result<(String, String)> {
    let bits = get_json(&format!("{url}/api/v1/version")).await?["registration_work"].as_u64().context("work")? as u32;
    let (s, v) = post(http, &format!("{url}/api/v1/owners"), None, json!({ "name": owner })).await;
    ensure!(s == 403 && v["error"].as_str().unwrap_or_default().starts_with("work:"), "no work, no owner: {s} {v}");
    let work = shared::work::solve("owner", owner, bits);
    let (s, v) = post(http, &format!("{url}/api/v1/owners"), None, json!({ "name": owner, "work": work })).await;
    ensure!(s == 200, "{owner}: {s} {v}");
    let owner_token = v["token"].as_str().context("token")?.to_string();
    let body = json!({ "protocol": shared::PROTOCOL_VERSION, "name": worker, "threads": 1, "kinds": ["match"], "owner_token": owner_token });
    let (s, v) = post(http, &format!("{url}/api/v1/workers/register"), None, body).await;
    ensure!(s == 200, "{worker}: {s} {v}");
    Ok((owner_token, v["token"].as_str().context("token")?.to_string()))
}

/// A Sybil worker: claims what it is given and uploads legal games of the deals played by
/// `bots` instead of the batch's, until `stop` says so or it is quarantined. Returns the games
/// it uploaded.
async fn forge(
    (http, url, token): (reqwest::Client, String, String),
    dir: std::path::PathBuf,
    bots: [&'static str; 2],
    games: u64,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> Result<u64> {
    let mut uploaded = 0;
    while !stop.load(std::sync::atomic::Ordering::SeqCst) {
        let claim = json!({ "protocol": shared::PROTOCOL_VERSION, "threads": 1, "kinds": ["match"] });
        let (s, b) = post(&http, &format!("{url}/api/v1/claim"), Some(&token), claim).await;
        if s == 403 {
            break; // quarantined
        }
        if b["status"] != "batch" {
            tokio::time::sleep(Duration::from_millis(300)).await;
            continue;
        }
        let d = dir.clone();
        let b2 = b.clone();
        let (logs, tally) = tokio::task::spawn_blocking(move || played_by(&d, &b2, bots, SEED, games)).await??;
        let (s, v) = upload_match(&http, &url, &token, &b, &logs, &tally).await;
        match s {
            200 => uploaded += 2 * b["job"]["pairs"].as_u64().unwrap_or(0),
            403 => break,
            // A trusted worker took the batch over while this one played.
            409 => {}
            _ => anyhow::bail!("a Sybil's legal games were refused: {s} {v}"),
        }
    }
    Ok(uploaded)
}

/// Attacks 1 and 2: two Sybil owners of one person (two networks, one burst) play greedy where
/// the batch says static. Their logs are legal and re-play on their deals, so they pass every
/// check but a replica's. Alone, they upload more than enough to have decided the SPRT the old
/// way: nothing counts and nothing is decided. With an honest stranger and a trusted volunteer
/// started beside them, the cell ends on exactly the local replay of its seed, the Sybils are
/// quarantined and the honest stranger is not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sybil_owners_neither_outvote_the_honest_nor_decide_an_sprt() -> Result<()> {
    const GAMES: u64 = 400;
    let db = TestDb::create().await?;
    let coord = Coordinator::start(&db.url, &DEFAULTS)?;
    let researcher = researcher_token(&db.url)?;
    let dir = Scratch::new("sybils");
    // Static wins ~66% against greedy; greedy against greedy ~50%: forged data accepts H0 in
    // a couple of hundred games, the truth decides nothing in 400.
    let toml = format!(
        "name = \"sybils\"\nkind = \"match\"\ngames = {GAMES}\nseed = {SEED}\n[match]\nbot1 = \"static\"\nbot2 = \"greedy\"\n[sprt]\np0 = 0.64\np1 = 0.66\nalpha = 0.05\nbeta = 0.05\n"
    );
    let id = submit(&coord.url, &researcher, &experiment_file(&dir.0, "sybils.toml", &toml))?;
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut sybils = Vec::new();
    for (i, addr) in ["127.0.1.1", "127.0.2.1"].iter().enumerate() {
        let http = client_from(addr);
        let (_, token) = sybil(&http, &coord.url, &format!("sybil-owner-{i}"), &format!("sybil-{i}")).await?;
        let job = (http, coord.url.clone(), token);
        sybils.push(tokio::spawn(forge(
            job,
            dir.0.join(format!("forged-{i}")),
            ["greedy", "greedy"],
            GAMES,
            stop.clone(),
        )));
    }
    // Alone, the Sybils upload 240 games (LLR about -4 the old way, past the -2.94 bound).
    let started = Instant::now();
    loop {
        let (n,): (i64,) = sqlx::query_as("SELECT coalesce(sum(games), 0)::bigint FROM batch_results")
            .fetch_one(&db.pool().await?)
            .await?;
        if n >= 240 {
            break;
        }
        ensure!(started.elapsed() < Duration::from_secs(120), "the Sybils uploaded only {n} games");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let exp = get_json(&format!("{}/api/v1/experiments/{id}", coord.url)).await?;
    let cell = &exp["cells"][0];
    assert_eq!((cell["games"].as_u64(), cell["status"].as_str()), (Some(0), Some("running")), "nothing counts: {exp}");
    assert!(
        cell["stop_reason"].is_null() && cell["sprt"]["llr"].as_f64().unwrap_or(0.0) == 0.0,
        "nothing decided: {cell}"
    );

    // An honest stranger and the operator's own volunteer join; the Sybils go on.
    let honest = volunteer(&coord.url, "stranger", &dir.0.join("stranger"), &["--exit-when-idle"])?;
    let lab = trusted_owner(&coord.url, &db.url, "lab")?;
    let trusted = volunteer(&coord.url, "lab-1", &dir.0.join("lab"), &["--exit-when-idle", "--owner-token", &lab])?;
    let done = wait_for_status(&coord.url, id, &["finished", "failed", "stopped"], Duration::from_secs(300)).await;
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    for mut w in [honest, trusted] {
        let _ = tokio::task::block_in_place(|| w.wait());
    }
    let done = done?;
    assert_eq!(done["status"], "finished", "{done}");
    for s in sybils {
        eprintln!("a Sybil uploaded {} games", s.await??);
    }
    // Exactly the local replay of the seed: every game counted was played by the batch's bots.
    let exp = check_totals(&coord.url, id).await?;
    check_local_autoplay(&exp["cells"][0], ["static", "greedy"], GAMES, SEED)?;
    assert!(coordinator_cmd(&db.url, &["recompute"])?.contains("0 differed"));
    // The Sybils are quarantined (a trusted replica contradicted them), nobody honest is.
    for name in ["sybil-0", "sybil-1"] {
        if let Some(w) = worker_named(&coord.url, name).await? {
            let uploaded = w["batches"].as_i64().unwrap_or(0);
            assert!(uploaded == 0 || w["quarantine_reason"].as_str().is_some_and(|r| r.contains("differed")), "{w}");
        }
    }
    for name in ["stranger", "lab-1"] {
        let w = worker_named(&coord.url, name).await?.context("listed")?;
        assert!(w["quarantine_reason"].is_null(), "an honest worker quarantined: {w}");
    }
    // What it cost (docs/TRUST.md, "Threat model"): results by whose and how they ended.
    let rows: Vec<(String, String, i64, i64)> = sqlx::query_as(
        "SELECT w.name, r.state, count(*), sum(r.games)::bigint FROM batch_results r JOIN workers w ON w.id = r.worker_id
         GROUP BY 1, 2 ORDER BY 1, 2",
    )
    .fetch_all(&db.pool().await?)
    .await?;
    for (who, state, n, games) in rows {
        eprintln!("cost: {who} {state}: {n} results, {games} games");
    }
    drop(coord);
    db.drop_db().await
}

/// Attacks 5, 6 and 12: three owners with four workers each fail one batch after another of
/// four experiments, then hoard every lease they can get and only heartbeat. Failures from
/// strangers never park a batch, an untrusted owner holds one lease across its workers, and
/// the operator's volunteer takes over what the hoarders hold once nothing else is left: every
/// experiment finishes on its local replay.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn strangers_can_neither_fail_nor_stall_an_experiment() -> Result<()> {
    const GAMES: u64 = 40;
    let db = TestDb::create().await?;
    let coord = Coordinator::start(&db.url, &DEFAULTS)?;
    let researcher = researcher_token(&db.url)?;
    let dir = Scratch::new("stall");
    let mut ids = Vec::new();
    for i in 0..4 {
        let toml = format!(
            "name = \"stall {i}\"\nkind = \"match\"\ngames = {GAMES}\nseed = {SEED}\n[match]\nbot1 = \"static\"\nbot2 = \"greedy\"\n"
        );
        ids.push(submit(&coord.url, &researcher, &experiment_file(&dir.0, &format!("{i}.toml"), &toml))?);
    }
    let api = format!("{}/api/v1", coord.url);
    let claim = json!({ "protocol": shared::PROTOCOL_VERSION, "threads": 1, "kinds": ["match"] });
    // Three owners, one person: a worker each to start with.
    let mut hoarders = Vec::new();
    for o in 0..3 {
        let http = client_from(&format!("127.0.{}.1", 10 + o));
        let (owner, first) = sybil(&http, &coord.url, &format!("hoarder-{o}"), &format!("hoarder-{o}-0")).await?;
        hoarders.push((http, owner, vec![first]));
    }
    // Twelve failures, four per owner: every batch goes back to the queue, none is parked.
    for round in 0..4 {
        for (http, _, tokens) in &hoarders {
            let (_, b) = post(http, &format!("{api}/claim"), Some(&tokens[0]), claim.clone()).await;
            assert_eq!(b["status"], "batch", "round {round}: {b}");
            let (s, v) = post(
                http,
                &format!("{api}/batches/{}/fail", b["batch_id"].as_str().unwrap()),
                Some(&tokens[0]),
                json!({ "lease_id": b["lease_id"], "error": "no" }),
            )
            .await;
            assert_eq!((s, v["state"].as_str()), (200, Some("queued")), "{v}");
        }
    }
    for id in &ids {
        let e = get_json(&format!("{api}/experiments/{id}")).await?;
        assert_eq!(e["status"], "running", "strangers failed an experiment: {e}");
    }
    // Then they hoard: three more workers an owner, all claiming; one lease an owner is held.
    let mut held = Vec::new();
    for (o, (http, owner, tokens)) in hoarders.iter_mut().enumerate() {
        for w in 1..4 {
            let body = json!({ "protocol": shared::PROTOCOL_VERSION, "name": format!("hoarder-{o}-{w}"), "threads": 1, "kinds": ["match"], "owner_token": owner });
            let (s, v) = post(http, &format!("{api}/workers/register"), None, body).await;
            assert_eq!(s, 200, "{v}");
            tokens.push(v["token"].as_str().unwrap().to_string());
        }
        let mut got = 0;
        for t in tokens.iter() {
            let (_, b) = post(http, &format!("{api}/claim"), Some(t), claim.clone()).await;
            if b["status"] == "batch" {
                got += 1;
                held.push((http.clone(), t.clone(), b));
            }
        }
        assert_eq!(got, 1, "one lease for each owner, across its four workers");
    }
    let beat = {
        let (api, held) = (api.clone(), held.clone());
        tokio::spawn(async move {
            loop {
                for (http, t, b) in &held {
                    let path = format!("{api}/batches/{}/heartbeat", b["batch_id"].as_str().unwrap());
                    post(http, &path, Some(t), json!({ "lease_id": b["lease_id"] })).await;
                }
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        })
    };
    // The operator's volunteer plays everything, the hoarded batches included.
    let lab = trusted_owner(&coord.url, &db.url, "lab")?;
    let mut trusted = volunteer(&coord.url, "lab-1", &dir.0.join("lab"), &["--exit-when-idle", "--owner-token", &lab])?;
    for id in &ids {
        wait_for_status(&coord.url, *id, &["finished"], Duration::from_secs(180)).await?;
    }
    beat.abort();
    assert!(tokio::task::block_in_place(|| trusted.wait())?.success());
    for id in &ids {
        let e = check_totals(&coord.url, *id).await?;
        check_local_autoplay(&e["cells"][0], ["static", "greedy"], GAMES, SEED)?;
    }
    drop(coord);
    db.drop_db().await
}

/// Attack 7: registration costs. Owners need proof of work; a network registers at most
/// `--registrations-per-hour` (30) however many requests race; owners of one network, or of
/// one burst from many, are one group; names are normalised, printable, and refused when they
/// look like a taken one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn registration_costs_and_names_read_as_they_are() -> Result<()> {
    let db = TestDb::create().await?;
    // The defaults but a cheaper proof of work (45 owners' worth is solved here): what is tested
    // is that work is asked for and bound to the name; what it costs is measured below.
    let coord = Coordinator::start(&db.url, &["--earn-trust-batches", "30", "--registration-work", "16"])?;

    let url = format!("{}/api/v1/owners", coord.url);
    // 36 registrations at once from one network, each with its work done: exactly 30 pass.
    let solving = Instant::now();
    let works: Vec<(String, u64)> = (0..36)
        .map(|i| {
            let name = format!("racer-{i}");
            let w = shared::work::solve("owner", &name, 16);
            (name, w)
        })
        .collect();
    // Hashes tried: every nonce up to the one found.
    let hashes: u64 = works.iter().map(|(_, w)| w + 1).sum();
    let rate = hashes as f64 / solving.elapsed().as_secs_f64();
    eprintln!(
        "cost: {:.1} M hashes/s; 24 bits of work (2^24 hashes on average) take {:.1} s",
        rate / 1e6,
        (1u64 << 24) as f64 / rate
    );
    let http = client_from("127.0.20.1");
    let mut set = tokio::task::JoinSet::new();
    for (name, work) in works {
        let (http, url) = (http.clone(), url.clone());
        // Past the registrations' own budget (8 at once) a registration is shed, and on a busy
        // machine one may pass its deadline (nothing is written then): retried as a client does.
        set.spawn(async move {
            loop {
                match post(&http, &url, None, json!({ "name": name, "work": work })).await.0 {
                    503 | 408 => tokio::time::sleep(Duration::from_millis(200)).await,
                    code => break code,
                }
            }
        });
    }
    let mut codes = Vec::new();
    while let Some(c) = set.join_next().await {
        codes.push(c?);
    }
    let ok = codes.iter().filter(|&&c| c == 200).count();
    assert_eq!((ok, codes.iter().filter(|&&c| c == 429).count()), (30, 6), "{codes:?}");
    // The same from the next address of that network: refused too.
    let neighbour = client_from("127.0.20.2");
    let w = shared::work::solve("owner", "neighbour", 16);
    assert_eq!(post(&neighbour, &url, None, json!({ "name": "neighbour", "work": w })).await.0, 429);
    // Without work, or with another name's: refused before anything is written.
    let other = client_from("127.0.21.1");
    assert_eq!(post(&other, &url, None, json!({ "name": "lazy" })).await.0, 403);
    if !shared::work::verify("owner", "lazy", w, 16) {
        assert_eq!(post(&other, &url, None, json!({ "name": "lazy", "work": w })).await.0, 403);
    }
    // Names: invisible, separators, fillers, tags, piles of marks; look-alikes of taken ones.
    let marks = format!("a{}", "\u{301}".repeat(63));
    for bad in ["\u{3164}", "a\u{2028}b", "a\u{2029}b", "wo\u{2060}rd", "so\u{00AD}ft", "t\u{E0041}ag", marks.as_str()]
    {
        let w = shared::work::solve("owner", bad, 16);
        let (s, v) = post(&other, &url, None, json!({ "name": bad, "work": w })).await;
        assert_eq!(s, 422, "{bad:?}: {v}");
    }
    let w = shared::work::solve("owner", "alice", 16);
    assert_eq!(post(&other, &url, None, json!({ "name": "alice", "work": w })).await.0, 200);
    let cyrillic = "\u{0430}lice";
    let w = shared::work::solve("owner", cyrillic, 16);
    let (s, v) = post(&other, &url, None, json!({ "name": cyrillic, "work": w })).await;
    assert_eq!(s, 409, "{v}");
    assert!(v["error"].as_str().unwrap_or_default().contains("looks like `alice`"), "{v}");
    // One network is one group; so is a burst from two networks.
    let pool = db.pool().await?;
    let (groups,): (i64,) = sqlx::query_as("SELECT count(DISTINCT grp) FROM owners WHERE network = '127.0.20.0/24'")
        .fetch_one(&pool)
        .await?;
    assert_eq!(groups, 1);
    let (same,): (bool,) = sqlx::query_as(
        // Any racer that got in (which six of them were refused is up to the race).
        "SELECT (SELECT grp FROM owners WHERE name = 'alice') = (SELECT grp FROM owners WHERE name LIKE 'racer-%' ORDER BY created_at LIMIT 1)",
    )
    .fetch_one(&pool)
    .await?;
    let (apart,): (f64,) = sqlx::query_as(
        "SELECT extract(epoch FROM (SELECT created_at FROM owners WHERE name = 'alice') - (SELECT min(created_at) FROM owners))::float8",
    )
    .fetch_one(&pool)
    .await?;
    assert!(
        same || apart >= 10.0,
        "registered {apart:.1} s after the first, from another network: one burst, one group"
    );
    drop(coord);
    db.drop_db().await
}

/// Attack 8: 80 strangers trickle registration bodies and 20 more trickle their headers. They
/// hold only the registrations' own small budget (and are cut off by its deadline, and the
/// headers' timeout); a volunteer's claims, heartbeats and uploads go on, and its experiment
/// finishes on the local replay.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_strangers_cannot_take_the_workers_budget() -> Result<()> {
    const GAMES: u64 = 40;
    let db = TestDb::create().await?;
    // A small budget, so that 80 slow requests would fill it many times over.
    let coord = Coordinator::start(&db.url, &["--max-in-flight", "16", "--batch-secs", "1"])?;
    let researcher = researcher_token(&db.url)?;
    let dir = Scratch::new("slowloris");
    // The volunteer registers first (registrations share the strangers' budget), then the
    // strangers come, then the work.
    let mut v = volunteer(&coord.url, "patient", &dir.0.join("v"), &[])?;
    while worker_named(&coord.url, "patient").await?.is_none() {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let addr = format!("127.0.0.1:{}", coord.port);
    let mut slow = Vec::new();
    for i in 0..100 {
        let mut s = tokio::net::TcpStream::connect(&addr).await?;
        if i < 80 {
            s.write_all(b"POST /api/v1/owners HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 400\r\n\r\n{")
                .await?;
        } else {
            s.write_all(b"POST /api/v1/owners HTTP/1.1\r\nHost: x\r\n").await?;
        }
        slow.push(s);
    }
    let trickle = tokio::spawn(async move {
        let mut closed = 0;
        for _ in 0..30 {
            closed = 0;
            for s in &mut slow {
                if s.write_all(b" ").await.is_err() {
                    closed += 1;
                }
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        closed
    });
    let toml = format!(
        "name = \"patient\"\nkind = \"match\"\ngames = {GAMES}\nseed = {SEED}\n[match]\nbot1 = \"static\"\nbot2 = \"greedy\"\n"
    );
    let id = submit(&coord.url, &researcher, &experiment_file(&dir.0, "m.toml", &toml))?;
    let started = Instant::now();
    let done = wait_for_status(&coord.url, id, &["finished"], Duration::from_secs(120)).await;
    let _ = (v.kill(), v.wait());
    let done = done?;
    eprintln!("finished in {:.1} s beside 100 slow strangers", started.elapsed().as_secs_f64());
    check_local_autoplay(&done["cells"][0], ["static", "greedy"], GAMES, SEED)?;
    let log = std::fs::read_to_string(dir.0.join("v/volunteer.log"))?;
    assert!(!log.contains("overloaded"), "the volunteer was shed:\n{log}");
    // The strangers were cut off: their connections are closed by now.
    let closed = trickle.await?;
    assert_eq!(closed, 100, "every slow connection was closed by the server");
    drop(coord);
    db.drop_db().await
}

/// Trust is earned against trusted work, and only so: an honest stranger whose batches a
/// trusted worker's replicas matched becomes trusted once it has enough of them, in enough
/// experiments; fewer experiments than asked earn nothing, however many batches.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_honest_stranger_earns_trust_against_trusted_work() -> Result<()> {
    const GAMES: u64 = 40;
    let db = TestDb::create().await?;
    // Three confirmed batches in two experiments, no wait: small numbers for a short test.
    let coord = Coordinator::start(
        &db.url,
        &[
            "--earn-trust-batches",
            "3",
            "--earn-trust-experiments",
            "2",
            "--earn-trust-hours",
            "0",
            "--registration-work",
            "24",
        ],
    )?;
    let researcher = researcher_token(&db.url)?;
    let dir = Scratch::new("earn");
    let mut ids = Vec::new();
    for i in 0..2 {
        let toml = format!(
            "name = \"earn {i}\"\nkind = \"match\"\ngames = {GAMES}\nseed = {SEED}\n[match]\nbot1 = \"static\"\nbot2 = \"greedy\"\n"
        );
        ids.push(submit(&coord.url, &researcher, &experiment_file(&dir.0, &format!("{i}.toml"), &toml))?);
    }
    let http = client_from("127.0.30.1");
    let (_, stranger) = sybil(&http, &coord.url, "newcomer", "newcomer-1").await?;
    let trust = || async {
        let w = worker_named(&coord.url, "newcomer-1").await?.context("listed")?;
        anyhow::Ok(w["trust"].clone())
    };
    // Honest games of the batch's own bots, one batch at a time (one lease for a new owner),
    // claimed in turn from the two experiments: each waits for the operator's volunteer.
    let lab = trusted_owner(&coord.url, &db.url, "lab")?;
    let mut uploaded: Vec<serde_json::Value> = Vec::new();
    let claim = json!({ "protocol": shared::PROTOCOL_VERSION, "threads": 1, "kinds": ["match"] });
    while uploaded.len() < 5 {
        let (_, b) = post(&http, &format!("{}/api/v1/claim", coord.url), Some(&stranger), claim.clone()).await;
        ensure!(b["status"] == "batch", "{b}");
        let (logs, tally) = played_by(&dir.0.join("honest"), &b, ["static", "greedy"], SEED, GAMES)?;
        let (s, v) = upload_match(&http, &coord.url, &stranger, &b, &logs, &tally).await;
        ensure!(s == 200, "{v}");
        uploaded.push(b);
    }
    assert!(trust().await?.is_null(), "nothing is earned before a trusted replica");
    let trusted = volunteer(&coord.url, "lab-1", &dir.0.join("lab"), &["--exit-when-idle", "--owner-token", &lab])?;
    for id in &ids {
        wait_for_status(&coord.url, *id, &["finished"], Duration::from_secs(120)).await?;
    }
    let mut trusted = trusted;
    assert!(tokio::task::block_in_place(|| trusted.wait())?.success());
    let experiments: std::collections::BTreeSet<&str> =
        uploaded.iter().map(|b| b["experiment_id"].as_str().unwrap_or_default()).collect();
    let w = worker_named(&coord.url, "newcomer-1").await?.context("listed")?;
    eprintln!("the newcomer's batches were in {} experiment(s); validated {}", experiments.len(), w["validated"]);
    assert!(w["validated"].as_i64() >= Some(3), "{w}");
    if experiments.len() >= 2 {
        assert_eq!(w["trust"], "earned", "{w}");
    } else {
        assert!(w["trust"].is_null(), "one experiment earns nothing: {w}");
    }
    for id in &ids {
        let e = check_totals(&coord.url, *id).await?;
        check_local_autoplay(&e["cells"][0], ["static", "greedy"], GAMES, SEED)?;
    }
    drop(coord);
    db.drop_db().await
}

/// The coordinator's peak resident memory so far, in MiB.
fn peak_mib(pid: u32) -> Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).context("VmHWM")?;
    Ok(line.split_whitespace().nth(1).context("kB")?.parse::<u64>()? / 1024)
}

/// Attack 9: gzip bombs at the inflation cap (2.6 MB that would inflate to 2.7 GB; the cap
/// stops each at 256 MiB). Ten under a lease that is not the uploader's are refused before
/// anything is inflated; ten at once under the uploader's own lease inflate within the 1 GiB
/// budget, each refused with a 422, none stored, every one counted against the worker.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gzip_bombs_inflate_only_for_their_lease_and_within_a_budget() -> Result<()> {
    use std::io::Write;
    let db = TestDb::create().await?;
    let coord = Coordinator::start(&db.url, &["--batch-secs", "1"])?;
    let researcher = researcher_token(&db.url)?;
    let dir = Scratch::new("bombs");
    let toml = format!(
        "name = \"bombs\"\nkind = \"match\"\ngames = 40\nseed = {SEED}\n[match]\nbot1 = \"static\"\nbot2 = \"greedy\"\n"
    );
    submit(&coord.url, &researcher, &experiment_file(&dir.0, "m.toml", &toml))?;
    let http = reqwest::Client::new();
    let register_url = format!("{}/api/v1/workers/register", coord.url);
    let mut tokens = Vec::new();
    for name in ["bomber", "stranger"] {
        let body = json!({ "protocol": shared::PROTOCOL_VERSION, "name": name, "threads": 1, "kinds": ["match"] });
        let (_, v) = post(&http, &register_url, None, body).await;
        tokens.push(v["token"].as_str().context("token")?.to_string());
    }
    let [bomber, stranger] = [tokens[0].clone(), tokens[1].clone()];
    let claim = json!({ "protocol": shared::PROTOCOL_VERSION, "threads": 1, "kinds": ["match"] });
    let (_, b) = post(&http, &format!("{}/api/v1/claim", coord.url), Some(&bomber), claim).await;
    assert_eq!(b["status"], "batch", "{b}");
    // A tally of the batch's shape, so that only the logs are wrong.
    let (_, tally) = played_by(&dir.0.join("games"), &b, ["static", "greedy"], SEED, 40)?;
    let bomb = {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        let zeros = vec![0u8; 1 << 20];
        for _ in 0..2700 {
            e.write_all(&zeros)?;
        }
        base64::Engine::encode(&base64::engine::general_purpose::STANDARD, e.finish()?)
    };
    let (csv_gz, csv_sha256) = gz64(engine::gcg::CSV_HEADER);
    let mut result = tally.clone();
    result["kind"] = json!("match");
    let body = |lease: &serde_json::Value| {
        json!({ "lease_id": lease, "elapsed_ms": 1000, "result": result,
                "logs": { "gcg_gz": bomb, "gcg_sha256": "0".repeat(64), "csv_gz": csv_gz, "csv_sha256": csv_sha256 } })
    };
    let url = format!("{}/api/v1/batches/{}/result", coord.url, b["batch_id"].as_str().unwrap());
    let pid = coord.child.id();
    let volley = |token: String, lease: serde_json::Value| {
        let mut set = tokio::task::JoinSet::new();
        for _ in 0..10 {
            let (http, url, body, token) = (http.clone(), url.clone(), body(&lease), token.clone());
            set.spawn(async move { post(&http, &url, Some(&token), body).await });
        }
        set.join_all()
    };
    let before = peak_mib(pid)?;
    // Another worker's token, or a made-up lease: refused before inflating anything.
    for (s, v) in volley(stranger.clone(), b["lease_id"].clone()).await {
        assert_eq!(s, 403, "{v}");
    }
    for (s, v) in volley(bomber.clone(), json!(uuid::Uuid::new_v4())).await {
        assert_eq!(s, 409, "{v}");
    }
    let strangers = peak_mib(pid)?;
    // The lease's own holder: every bomb inflated up to its cap and refused, within the budget.
    for (s, v) in volley(bomber.clone(), b["lease_id"].clone()).await {
        assert_eq!(s, 422, "{v}");
        assert!(v["error"].as_str().unwrap_or_default().contains("inflates past"), "{v}");
    }
    let holder = peak_mib(pid)?;
    eprintln!(
        "cost: peak memory {before} MiB; after 20 refused without a lease {strangers} MiB; after 10 bombs at once {holder} MiB"
    );
    // Twenty bodies of 3.6 MB are read and parsed (what a stranger can make the coordinator
    // hold); twenty inflated bombs would be 5 GiB, ten at once past the budget 2.5 GiB.
    assert!(strangers <= before + 1024, "nothing inflated for a stranger: {before} -> {strangers} MiB");
    assert!(holder <= before + 2048, "ten bombs at once stay within the budget: {before} -> {holder} MiB");
    let w = worker_named(&coord.url, "bomber").await?.context("listed")?;
    assert_eq!(w["rejected"], 10, "{w}");
    drop(coord);
    db.drop_db().await
}

/// Time a worker lost to the coordinator's own shedding is never charged to it: while a crowd
/// keeps the coordinator past `--max-in-flight` (refusing with 503), no lease expires, so a
/// worker whose heartbeats could not get through keeps its batch and heartbeats again after.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn time_lost_to_shedding_is_never_charged() -> Result<()> {
    let db = TestDb::create().await?;
    let coord = Coordinator::start(
        &db.url,
        &["--max-in-flight", "1", "--lease-secs", "2", "--reap-secs", "1", "--max-leases", "1000"],
    )?;
    let researcher = researcher_token(&db.url)?;
    let dir = Scratch::new("shed");
    let toml = format!(
        "name = \"shed\"\nkind = \"match\"\ngames = 40\nseed = {SEED}\n[match]\nbot1 = \"static\"\nbot2 = \"greedy\"\n"
    );
    submit(&coord.url, &researcher, &experiment_file(&dir.0, "m.toml", &toml))?;
    let api = format!("{}/api/v1", coord.url);
    let http = reqwest::Client::new();
    let register = |name: String| {
        let (http, api) = (http.clone(), api.clone());
        async move {
            let body = json!({ "protocol": shared::PROTOCOL_VERSION, "name": name, "threads": 1, "kinds": ["match"] });
            let (_, v) = post(&http, &format!("{api}/workers/register"), None, body).await;
            v["token"].as_str().unwrap_or_default().to_string()
        }
    };
    let quiet = register("quiet".into()).await;
    let claim = json!({ "protocol": shared::PROTOCOL_VERSION, "threads": 1, "kinds": ["match"] });
    let (_, b) = post(&http, &format!("{api}/claim"), Some(&quiet), claim).await;
    assert_eq!(b["status"], "batch", "{b}");
    // A crowd of heartbeats (of nothing) for 8 s, four lease periods: the coordinator sheds.
    let crowd = register("crowd".into()).await;
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut tasks = Vec::new();
    for _ in 0..16 {
        let (http, api, token, stop) = (http.clone(), api.clone(), crowd.clone(), stop.clone());
        tasks.push(tokio::spawn(async move {
            let mut shed = 0u64;
            let path = format!("{api}/batches/{}/heartbeat", uuid::Uuid::new_v4());
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                if post(&http, &path, Some(&token), json!({ "lease_id": uuid::Uuid::new_v4() })).await.0 == 503 {
                    shed += 1;
                }
            }
            shed
        }));
    }
    tokio::time::sleep(Duration::from_secs(8)).await;
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    let mut shed = 0;
    for t in tasks {
        shed += t.await?;
    }
    assert!(shed > 0, "the crowd was never shed: nothing was tested");
    // The quiet worker's lease ran out four times over, but not while the coordinator shed.
    let path = format!("{api}/batches/{}/heartbeat", b["batch_id"].as_str().unwrap());
    let (s, v) = post(&http, &path, Some(&quiet), json!({ "lease_id": b["lease_id"] })).await;
    assert_eq!((s, v["keep_going"].as_bool()), (200, Some(true)), "{v}");
    let (failures,): (i32,) = sqlx::query_as("SELECT failures FROM batches WHERE id = $1::uuid")
        .bind(b["batch_id"].as_str().unwrap())
        .fetch_one(&db.pool().await?)
        .await?;
    eprintln!("cost: {shed} requests shed in 8 s; the quiet worker's lease kept, {failures} failures");
    assert_eq!(failures, 0);
    drop(coord);
    db.drop_db().await
}
