//! Never believe an upload: a lying worker (plain HTTP) against a real coordinator, Postgres and
//! two honest volunteers of an owner the operator trusts. It forges tallies, wraps counters,
//! uploads another batch's logs, plays legal games with the wrong bot (which only a trusted
//! replica can catch), fails a batch on purpose, hoards a lease, and runs a Sybil second
//! worker under its own owner. The experiment must finish with exactly what a local run of its
//! seed gives, and the liar must end quarantined with everything it contributed withdrawn.
//! Where bots have time budgets (no replicas possible), a worker whose results stand out from
//! the rest is quarantined too.

use anyhow::{Context, Result, ensure};
use base64::Engine as _;
use e2e::*;
use serde_json::{Value, json};
use std::io::Write;
use std::time::{Duration, Instant};

const SEED: u64 = 7;
const GAMES: u64 = 40;

fn experiment() -> String {
    format!(
        "name = \"trust\"\nkind = \"match\"\ngames = {GAMES}\nseed = {SEED}\n[match]\nbot1 = \"static\"\nbot2 = \"greedy\"\n"
    )
}

#[derive(Clone)]
struct Api {
    http: reqwest::Client,
    url: String,
}

impl Api {
    async fn post(&self, path: &str, token: Option<&str>, body: Value) -> (u16, Value) {
        let mut r = self.http.post(format!("{}/api/v1{path}", self.url)).json(&body);
        if let Some(t) = token {
            r = r.bearer_auth(t);
        }
        let resp = r.send().await.expect("request");
        (resp.status().as_u16(), resp.json().await.unwrap_or(Value::Null))
    }
    async fn register(&self, name: &str, owner_token: Option<&str>) -> (u16, Value) {
        let mut body = json!({ "protocol": shared::PROTOCOL_VERSION, "name": name, "threads": 1, "kinds": ["match"] });
        if let Some(t) = owner_token {
            body["owner_token"] = json!(t);
        }
        self.post("/workers/register", None, body).await
    }
    async fn claim(&self, token: &str) -> (u16, Value) {
        let body = json!({ "protocol": shared::PROTOCOL_VERSION, "threads": 1, "kinds": ["match"], "rates": { "match": 2.0 } });
        self.post("/claim", Some(token), body).await
    }
    async fn upload(&self, token: &str, batch: &Value, logs: &Logged, tally: &Value) -> (u16, Value) {
        let gz = |text: &str| {
            use sha2::Digest;
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            e.write_all(text.as_bytes()).unwrap();
            let sha = hex::encode(sha2::Sha256::digest(text.as_bytes()));
            (base64::engine::general_purpose::STANDARD.encode(e.finish().unwrap()), sha)
        };
        let ((gcg_gz, gcg_sha256), (csv_gz, csv_sha256)) = (gz(&logs.gcg), gz(&logs.csv));
        let mut result = tally.clone();
        result["kind"] = json!("match");
        let body = json!({
            "lease_id": batch["lease_id"], "elapsed_ms": 1000, "result": result,
            "logs": { "gcg_gz": gcg_gz, "gcg_sha256": gcg_sha256, "csv_gz": csv_gz, "csv_sha256": csv_sha256 },
        });
        self.post(&format!("/batches/{}/result", batch["batch_id"].as_str().unwrap()), Some(token), body).await
    }
}

/// A batch's games as a liar makes them (`played_by`), on this file's seed.
fn games(dir: &std::path::Path, batch: &Value, bots: [&str; 2]) -> Result<(Logged, Value)> {
    played_by(dir, batch, bots, SEED, GAMES)
}

/// Heartbeats the leases of `batches` every second until aborted.
fn keep_alive(api: &Api, token: &str, batches: &[&Value]) -> tokio::task::JoinHandle<()> {
    let (api, token) = (api.clone(), token.to_string());
    let leases: Vec<(String, Value)> = batches
        .iter()
        .map(|b| (b["batch_id"].as_str().unwrap_or_default().to_string(), b["lease_id"].clone()))
        .collect();
    tokio::spawn(async move {
        loop {
            for (id, lease) in &leases {
                api.post(&format!("/batches/{id}/heartbeat"), Some(&token), json!({ "lease_id": lease })).await;
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lying_worker_changes_nothing() -> Result<()> {
    let db = TestDb::create().await?;
    let coord = Coordinator::start(
        &db.url,
        &[
            // Nobody earns trust here: every untrusted batch waits for a trusted replica.
            "--earn-trust-batches",
            "1000",
            "--spot-check",
            "0",
            "--batch-secs",
            "1",
            "--lease-secs",
            "3",
            "--deadline-secs",
            "20",
            "--reap-secs",
            "1",
        ],
    )?;
    let api = Api { http: reqwest::Client::new(), url: coord.url.clone() };
    let researcher = researcher_token(&db.url)?;
    let dir = Scratch::new("trust");
    let id = submit(&coord.url, &researcher, &experiment_file(&dir.0, "trust.toml", &experiment()))?;

    // Identity: names must read as they are, be unique, and not look like a taken one.
    let (s, v) = api.post("/owners", None, json!({ "name": "mallory\u{202E}txt.exe" })).await;
    assert_eq!(s, 422, "{v}");
    let (s, v) = api.post("/owners", None, json!({ "name": "mallory" })).await;
    assert_eq!(s, 200, "{v}");
    let owner = v["token"].as_str().unwrap().to_string();
    assert_eq!(api.post("/owners", None, json!({ "name": "MALLORY" })).await.0, 409);
    let (s, v) = api.post("/owners", None, json!({ "name": "ma\u{217C}\u{217C}ory" })).await;
    assert_eq!(s, 409, "small roman numerals fifty read as ll: {v}");
    let (s, v) = api.register("liar", Some(&owner)).await;
    assert_eq!(s, 200, "{v}");
    let liar = v["token"].as_str().unwrap().to_string();
    assert_eq!(api.register("liar", Some(&owner)).await.0, 409, "one owner's workers have distinct names");
    let (_, v) = api.register("sybil", Some(&owner)).await;
    let sybil = v["token"].as_str().unwrap().to_string();

    // An untrusted owner holds one lease across all its workers.
    let (_, a) = api.claim(&liar).await;
    assert_eq!(a["status"], "batch", "{a}");
    assert_eq!(api.claim(&liar).await.1["status"], "idle", "one lease for a new owner");
    assert_eq!(api.claim(&sybil).await.1["status"], "idle", "across all its workers");
    // The test plays the liar's games itself, in a debug build, which on a slow machine takes
    // longer than a lease: heartbeat meanwhile, as a volunteer does while it plays.
    let playing = keep_alive(&api, &liar, &[&a]);

    // Forged tallies and wrapped counters are refused, and nothing is recorded.
    let (honest_a, tally_a) = games(&dir.0, &a, ["static", "greedy"])?;
    let mut forged = tally_a.clone();
    forged["score"][0] = json!(forged["score"][0].as_i64().unwrap() + 100);
    let (s, v) = api.upload(&liar, &a, &honest_a, &forged).await;
    assert_eq!(s, 422, "a forged tally: {v}");
    let mut wrapped = tally_a.clone();
    wrapped["wins"] = json!(u64::MAX);
    assert_eq!(api.upload(&liar, &a, &honest_a, &wrapped).await.0, 422, "a wrapped counter");
    // A per-turn CSV that says other than the games: a score changed on one row.
    let lines: Vec<&str> = honest_a.csv.lines().collect();
    let f: Vec<&str> = lines[5].split(',').collect();
    let bent = format!("{},{},{}", f[..5].join(","), f[5].parse::<i32>()? + 1, f[6..].join(","));
    let bent = Logged { gcg: honest_a.gcg.clone(), csv: honest_a.csv.replace(lines[5], &bent) };
    let (s, v) = api.upload(&liar, &a, &bent, &tally_a).await;
    assert_eq!(s, 422, "a CSV row other than its game's: {v}");
    assert!(v["error"].as_str().unwrap_or_default().contains("logs.csv_gz: line 6"), "{v}");

    // An honest upload: it passes the re-play, and counts only once a trusted replica
    // matches it.
    let (s, v) = api.upload(&liar, &a, &honest_a, &tally_a).await;
    assert_eq!(s, 200, "{v}");
    assert!(v["message"].as_str().unwrap().contains("trusted worker"), "{v}");
    playing.abort();
    let (_, b) = api.claim(&liar).await;
    assert_eq!(b["status"], "batch", "{b}");
    let playing = keep_alive(&api, &liar, &[&b]);
    // The logs of another batch (an old upload replayed) are not this batch's games.
    assert_eq!(api.upload(&liar, &b, &honest_a, &tally_a).await.0, 422, "another batch's logs");
    // Legal games of the wrong bot pass the re-play too; only a trusted replica can tell.
    let (_, tally_b) = games(&dir.0, &b, ["static", "greedy"])?;
    let (wrong_b, wrong_tally) = games(&dir.0, &b, ["greedy", "greedy"])?;
    assert_ne!(wrong_tally, tally_b);
    let (s, v) = api.upload(&liar, &b, &wrong_b, &wrong_tally).await;
    assert_eq!(s, 200, "the wrong bot's games are legal games of the deal: {v}");
    playing.abort();
    let exp = get_json(&format!("{}/api/v1/experiments/{id}", coord.url)).await?;
    assert_eq!(exp["cells"][0]["games"], 0, "nothing counts before a trusted replica: {exp}");
    // Nor can a worker copy it: a pending result's logs go to admins only, and to nobody
    // without a token.
    let admin = coordinator_cmd(&db.url, &["token", "create", "--role", "admin"])?;
    let logs_url = format!("{}/api/v1/batches/{}/logs/gcg", coord.url, a["batch_id"].as_str().unwrap());
    let status = |token: Option<&str>| {
        let mut r = api.http.get(&logs_url);
        if let Some(t) = token {
            r = r.bearer_auth(t);
        }
        async move { r.send().await.map(|r| r.status().as_u16()) }
    };
    assert_eq!(status(None).await?, 401);
    assert_eq!(status(Some(&sybil)).await?, 403, "a worker cannot read a pending result's logs");
    assert_eq!(status(Some(&researcher)).await?, 404, "nor a researcher, before it is validated");
    assert_eq!(status(Some(admin.lines().last().unwrap_or_default())).await?, 200);

    // The Sybil (same owner) is never handed a replica: replicas go to trusted workers only.
    let (_, c) = api.claim(&sybil).await;
    ensure!(c["batch_id"] != a["batch_id"] && c["batch_id"] != b["batch_id"], "{c}");
    api.post(
        &format!("/batches/{}/release", c["batch_id"].as_str().unwrap()),
        Some(&sybil),
        json!({ "lease_id": c["lease_id"] }),
    )
    .await;

    // Failing a batch on purpose: it never comes back to this owner, and is not parked.
    let (_, f) = api.claim(&liar).await;
    let (s, v) = api
        .post(
            &format!("/batches/{}/fail", f["batch_id"].as_str().unwrap()),
            Some(&liar),
            json!({ "lease_id": f["lease_id"], "error": "no" }),
        )
        .await;
    assert_eq!((s, v["state"].as_str()), (200, Some("queued")), "{v}");
    for token in [&liar, &sybil] {
        let (_, h) = api.claim(token).await;
        assert_ne!(h["batch_id"], f["batch_id"], "a failed batch goes to another owner");
        if let Some(id) = h["batch_id"].as_str() {
            api.post(&format!("/batches/{id}/release"), Some(token), json!({ "lease_id": h["lease_id"] })).await;
        }
    }

    // Hoarding: the liar holds a batch and only heartbeats; the deadline ends its lease
    // whatever the heartbeats say.
    let held = Instant::now();
    let (_, h) = api.claim(&liar).await;
    loop {
        let (s, _) = api
            .post(
                &format!("/batches/{}/heartbeat", h["batch_id"].as_str().unwrap()),
                Some(&liar),
                json!({ "lease_id": h["lease_id"] }),
            )
            .await;
        if s == 409 {
            break;
        }
        ensure!(held.elapsed() < Duration::from_secs(40), "heartbeats kept a lease past its deadline");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }

    // Two honest volunteers of an owner the operator trusts play the experiment and the
    // liar's replicas.
    finish_with_trusted(&coord.url, &db.url, id, ("lab", &["h1", "h2"]), &dir.0).await?;

    // The liar was contradicted by a trusted replica on its wrong-bot batch and quarantined;
    // it gets no more work.
    let liar_row = worker_named(&coord.url, "liar").await?.context("liar listed")?;
    let why = liar_row["quarantine_reason"].as_str().unwrap_or_default();
    assert!(why.contains("differed"), "{liar_row}");
    assert!(liar_row["rejected"].as_i64() >= Some(3), "{liar_row}");
    assert_eq!(api.claim(&liar).await.0, 403);
    let pool = db.pool().await?;
    let liars: Vec<(String,)> = sqlx::query_as(
        "SELECT r.state FROM batch_results r JOIN workers w ON w.id = r.worker_id WHERE w.name = 'liar' ORDER BY r.received_at",
    )
    .fetch_all(&pool)
    .await?;
    assert_eq!(liars, [("withdrawn".to_string(),), ("wrong".to_string(),)], "its honest result withdrawn too");
    let (distrusted,): (bool,) =
        sqlx::query_as("SELECT distrusted_at IS NOT NULL FROM owners WHERE name = 'mallory'").fetch_one(&pool).await?;
    assert!(distrusted, "an owner a trusted worker found wrong never earns trust");

    // Exactly what a local run of the seed gives.
    let exp = check_totals(&coord.url, id).await?;
    assert_eq!(check_replays(&coord.url, &db.url, id).await?, GAMES as usize);
    check_local_autoplay(&exp["cells"][0], ["static", "greedy"], GAMES, SEED)?;
    let out = coordinator_cmd(&db.url, &["recompute"])?;
    assert!(out.contains("0 differed"), "{out}");

    // What trust cost: the trusted owner's batches stood alone, the liar's two were replicated.
    let (uploaded, counted): (i64, i64) = sqlx::query_as(
        "SELECT (SELECT count(*) FROM batch_results WHERE experiment_id = $1), (SELECT count(*) FROM batches WHERE experiment_id = $1 AND state = 'done')",
    )
    .bind(id)
    .fetch_one(&pool)
    .await?;
    eprintln!("replication: {uploaded} results uploaded for {counted} batches");
    assert_eq!(uploaded, counted + 2, "one result a batch, and a trusted replica of each of the liar's");

    // Registration is rate-limited per network.
    let mut refused = None;
    for i in 0..40 {
        let (s, _) = api.post("/owners", None, json!({ "name": format!("flood-{i}") })).await;
        if s != 200 {
            refused = Some(s);
            break;
        }
    }
    assert_eq!(refused, Some(429));
    drop(coord);
    db.drop_db().await
}

/// Time-budgeted bots cannot be replicated: a worker uploading legal games of the deals, but
/// played by bots of its choosing (here: the second bot made hopeless), passes every replay
/// check, and is caught by comparing its results with the other workers' in the cell.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outlier_among_time_budgeted_results_is_quarantined() -> Result<()> {
    const PAIRS: u64 = 80;
    let db = TestDb::create().await?;
    // Every owner trusted, as time-budgeted bots' batches go to trusted owners only: the cheat
    // is one that earned trust and then cheats where no replica can catch it.
    let coord = Coordinator::start(&db.url, &["--batch-secs", "1"])?;
    let api = Api { http: reqwest::Client::new(), url: coord.url.clone() };
    let researcher = researcher_token(&db.url)?;
    let dir = Scratch::new("outlier");
    let toml = format!(
        "name = \"budgeted\"\nkind = \"match\"\ngames = {}\nseed = {SEED}\n[match]\nbot1 = \"static:endgame=5\"\nbot2 = \"greedy\"\n",
        2 * PAIRS
    );
    let id = submit(&coord.url, &researcher, &experiment_file(&dir.0, "budgeted.toml", &toml))?;
    let (_, v) = api.register("cheat", None).await;
    let cheat = v["token"].as_str().unwrap().to_string();
    let rigged = ["static", "softmax:t=100,bag=0"];
    // Its games, played once for every deal of the cell.
    let all = json!({ "job": { "first_pair": 0, "pairs": PAIRS, "bot1": "static:endgame=5", "bot2": "greedy" } });
    games(&dir.0, &all, rigged)?;
    // It uploads 40 pairs first: nothing to compare them with yet, so they count.
    let mut uploaded = 0;
    while uploaded < 40 {
        let (_, batch) = api.claim(&cheat).await;
        assert_eq!(batch["status"], "batch", "{batch}");
        let (gcg, tally) = games(&dir.0, &batch, rigged)?;
        let (s, v) = api.upload(&cheat, &batch, &gcg, &tally).await;
        assert_eq!(s, 200, "legal games of the deals pass the re-play: {v}");
        uploaded += batch["job"]["pairs"].as_u64().unwrap();
    }
    let exp = get_json(&format!("{}/api/v1/experiments/{id}", coord.url)).await?;
    assert_eq!(exp["cells"][0]["games"].as_u64(), Some(2 * uploaded), "counted, as nothing contradicts them yet");

    finish_with_volunteers(&coord.url, id, &["h1", "h2"], &dir.0).await?;
    let row = worker_named(&coord.url, "cheat").await?.context("listed")?;
    let why = row["quarantine_reason"].as_str().unwrap_or_default();
    assert!(why.contains("outlier") && why.contains("z = "), "{row}");
    assert_eq!(api.claim(&cheat).await.0, 403);
    // What counts is the honest volunteers' alone, every deal once, every game replaying.
    let pool = db.pool().await?;
    let (by_cheat,): (i64,) = sqlx::query_as(
        "SELECT count(*) FROM batch_results r JOIN workers w ON w.id = r.worker_id WHERE w.name = 'cheat' AND r.state <> 'withdrawn'",
    )
    .fetch_one(&pool)
    .await?;
    assert_eq!(by_cheat, 0);
    check_totals(&coord.url, id).await?;
    assert_eq!(check_replays(&coord.url, &db.url, id).await?, 2 * PAIRS as usize);
    let out = coordinator_cmd(&db.url, &["recompute"])?;
    assert!(out.contains("0 differed"), "{out}");
    drop(coord);
    db.drop_db().await
}

/// A worker that claims batches and vanishes leaves no experiment unfinished: an honest
/// volunteer told to exit when idle waits while others' leases hold work it could do, plays
/// the batches once those leases run out, and only then exits; the totals are a local run's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_that_claims_and_vanishes_leaves_nothing_unfinished() -> Result<()> {
    let db = TestDb::create().await?;
    // Leases outlast the volunteer's idle exit (4 s), so that without waiting it would leave.
    let coord = Coordinator::start(&db.url, &["--lease-secs", "10", "--reap-secs", "1", "--batch-secs", "1"])?;
    let api = Api { http: reqwest::Client::new(), url: coord.url.clone() };
    let researcher = researcher_token(&db.url)?;
    let dir = Scratch::new("vanish");
    let id = submit(&coord.url, &researcher, &experiment_file(&dir.0, "vanish.toml", &experiment()))?;
    let (_, v) = api.register("vanisher", None).await;
    let vanisher = v["token"].as_str().unwrap().to_string();
    for _ in 0..2 {
        assert_eq!(api.claim(&vanisher).await.1["status"], "batch");
    }
    let mut honest = volunteer(&coord.url, "stayer", &dir.0.join("stayer"), &["--exit-when-idle"])?;
    let done = wait_for_status(&coord.url, id, &["finished", "failed"], Duration::from_secs(180)).await;
    let exited = honest.wait()?;
    let done = done?;
    assert_eq!((done["status"].as_str(), done["games"].as_u64()), (Some("finished"), Some(GAMES)), "{done}");
    ensure!(exited.success(), "the volunteer exited with {exited}");
    let log = std::fs::read_to_string(dir.0.join("stayer/volunteer.log"))?;
    assert!(log.contains("other workers' leases hold some"), "it waited for the vanished leases:\n{log}");
    check_local_autoplay(&done["cells"][0], ["static", "greedy"], GAMES, SEED)?;
    drop(coord);
    db.drop_db().await
}
