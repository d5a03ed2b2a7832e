//! Never believe an upload: a lying worker (plain HTTP) against a real coordinator, Postgres and
//! two honest volunteers of other owners. It forges tallies, wraps counters, uploads another
//! batch's logs, plays legal games with the wrong bot (which only a replica can catch), fails
//! a batch on purpose, hoards leases, and runs a Sybil second worker under its own owner. The
//! experiment must finish with exactly what a local run of its seed gives, and the liar must
//! end quarantined with everything it contributed withdrawn. Where bots have time budgets
//! (no replicas possible), a worker whose results stand out from the rest is quarantined too.

use anyhow::{Context, Result, ensure};
use base64::Engine as _;
use e2e::*;
use serde_json::{Value, json};
use shared::stats::MatchTally;
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

/// A batch's GCG bundle and per-turn CSV.
struct Logged {
    gcg: String,
    csv: String,
}

/// A batch's games as a liar makes them: played locally by `bots` (`worker autoplay` on the
/// batch's seed and deals) but labelled as the batch's own bots, so that every move is legal
/// on its deal; and the tally those logs give.
fn games(dir: &std::path::Path, batch: &Value, bots: [&str; 2]) -> Result<(Logged, Value)> {
    let (first, pairs) = (batch["job"]["first_pair"].as_u64().unwrap(), batch["job"]["pairs"].as_u64().unwrap());
    let names = [batch["job"]["bot1"].as_str().unwrap(), batch["job"]["bot2"].as_str().unwrap()];
    let logs = dir.join(format!("{}-{}", bots[0], bots[1]));
    // Deals are by game number, so games played once serve every later batch.
    if !logs.join(format!("game-{:06}.gcg", 2 * (first + pairs) - 1)).exists() {
        std::fs::create_dir_all(&logs)?;
        let out = std::process::Command::new(bin("worker"))
            .args(["autoplay", "--bot1", bots[0], "--bot2", bots[1], "--seed", &SEED.to_string(), "--threads", "2"])
            .args(["--games", &(2 * (first + pairs)).max(GAMES).to_string(), "--log-dir"])
            .arg(&logs)
            .output()?;
        ensure!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    let (mut bundle, mut outcomes) = (String::new(), Vec::new());
    for id in 2 * first..2 * (first + pairs) {
        let seat_bot = if id % 2 == 0 { [0, 1] } else { [1, 0] };
        let text = std::fs::read_to_string(logs.join(format!("game-{id:06}.gcg")))?;
        let text: String = text
            .lines()
            .map(|l| match l.strip_prefix("#player") {
                Some(rest) => {
                    let seat = rest[..1].parse::<usize>().unwrap() - 1;
                    format!("#player{} p{} {}\n", seat + 1, seat + 1, names[seat_bot[seat]])
                }
                None => format!("{l}\n"),
            })
            .collect();
        let s = engine::gcg::summarize(&text, "liar")?;
        outcomes.push(engine::record::Outcome {
            id,
            seat_bot,
            scores: s.scores,
            bingos: s.bingos,
            turns: s.turns,
            micros: [0; 2],
        });
        bundle.push_str(&format!("{}{id}\n{text}", shared::protocol::GAME_MARKER));
    }
    // The per-turn rows of these games, the player column relabelled the same way (seats
    // alternate turns; the eight fields after the player hold no comma).
    let quote = |name: &str| if name.contains(',') { format!("\"{name}\"") } else { name.to_string() };
    // (`worker autoplay` writes games as they finish: put them in order.)
    let mut rows = std::collections::BTreeMap::<u64, String>::new();
    for row in std::fs::read_to_string(logs.join("turns.csv"))?.lines().skip(1) {
        let (id, rest) = row.split_once(',').unwrap();
        let (id, (turn, _)) = (id.parse::<u64>()?, rest.split_once(',').unwrap());
        if !(2 * first..2 * (first + pairs)).contains(&id) {
            continue;
        }
        let seat_bot = if id % 2 == 0 { [0, 1] } else { [1, 0] };
        let player = names[seat_bot[(turn.parse::<usize>()? - 1) % 2]];
        let tail: Vec<&str> = row.rsplitn(9, ',').take(8).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        rows.entry(id).or_default().push_str(&format!("{id},{turn},{},{}\n", quote(player), tail.join(",")));
    }
    let csv = format!("{}\n{}", engine::gcg::CSV_HEADER, rows.into_values().collect::<String>());
    Ok((Logged { gcg: bundle, csv }, serde_json::to_value(MatchTally::from_outcomes(&outcomes))?))
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
            // Every batch replicated by another owner, whoever uploads it.
            "--replicate-until",
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

    // Identity: names must read as they are and be unique.
    let (s, v) = api.post("/owners", None, json!({ "name": "mallory\u{202E}txt.exe" })).await;
    assert_eq!(s, 422, "{v}");
    let (s, v) = api.post("/owners", None, json!({ "name": "mallory" })).await;
    assert_eq!(s, 200, "{v}");
    let owner = v["token"].as_str().unwrap().to_string();
    assert_eq!(api.post("/owners", None, json!({ "name": "MALLORY" })).await.0, 409);
    let (s, v) = api.register("liar", Some(&owner)).await;
    assert_eq!(s, 200, "{v}");
    let liar = v["token"].as_str().unwrap().to_string();
    assert_eq!(api.register("liar", Some(&owner)).await.0, 409, "one owner's workers have distinct names");
    let (_, v) = api.register("sybil", Some(&owner)).await;
    let sybil = v["token"].as_str().unwrap().to_string();

    // The liar takes two batches; a third claim is refused while it holds them.
    let (_, a) = api.claim(&liar).await;
    let (_, b) = api.claim(&liar).await;
    assert_eq!((a["status"].as_str(), b["status"].as_str()), (Some("batch"), Some("batch")), "{a} {b}");
    assert_eq!(api.claim(&liar).await.1["status"], "idle", "leases are capped per worker");
    // The test plays the liar's games itself, in a debug build, which on a slow machine takes
    // longer than a lease: heartbeat meanwhile, as a volunteer does while it plays.
    let playing = keep_alive(&api, &liar, &[&a, &b]);

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
    // The logs of another batch (an old upload replayed) are not this batch's games.
    let (honest_b, tally_b) = games(&dir.0, &b, ["static", "greedy"])?;
    assert_eq!(api.upload(&liar, &a, &honest_b, &tally_b).await.0, 422, "another batch's logs");

    // An honest upload, then legal games of the wrong bot: both pass the re-play, neither
    // counts until another owner's replica matches it.
    let (s, v) = api.upload(&liar, &a, &honest_a, &tally_a).await;
    assert_eq!(s, 200, "{v}");
    assert!(v["message"].as_str().unwrap().contains("replicated"), "{v}");
    let (wrong_b, wrong_tally) = games(&dir.0, &b, ["greedy", "greedy"])?;
    assert_ne!(wrong_tally, tally_b);
    let (s, v) = api.upload(&liar, &b, &wrong_b, &wrong_tally).await;
    assert_eq!(s, 200, "the wrong bot's games are legal games of the deal: {v}");
    playing.abort();
    let exp = get_json(&format!("{}/api/v1/experiments/{id}", coord.url)).await?;
    assert_eq!(exp["cells"][0]["games"], 0, "nothing counts before a replica: {exp}");
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

    // The Sybil (same owner) is never handed a batch its owner already uploaded.
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
    }

    // Hoarding: the liar now holds two batches and only heartbeats; the deadline ends its
    // leases whatever the heartbeats say.
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

    // Two honest volunteers, each its own owner, play the experiment and its replicas.
    finish_with_volunteers(&coord.url, id, &["h1", "h2"], &dir.0).await?;

    // The liar was outvoted on its wrong-bot batch and quarantined; it gets no more work.
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

    // Exactly what a local run of the seed gives.
    let exp = check_totals(&coord.url, id).await?;
    assert_eq!(check_replays(&coord.url, &db.url, id).await?, GAMES as usize);
    check_local_autoplay(&exp["cells"][0], ["static", "greedy"], GAMES, SEED)?;
    let out = coordinator_cmd(&db.url, &["recompute"])?;
    assert!(out.contains("0 differed"), "{out}");

    // What replication cost: results uploaded per batch counted.
    let (uploaded, counted): (i64, i64) = sqlx::query_as(
        "SELECT (SELECT count(*) FROM batch_results WHERE experiment_id = $1), (SELECT count(*) FROM batches WHERE experiment_id = $1 AND state = 'done')",
    )
    .bind(id)
    .fetch_one(&pool)
    .await?;
    eprintln!("replication: {uploaded} results uploaded for {counted} batches");
    assert!(uploaded >= 2 * counted, "every batch was replicated");

    // Registration is rate-limited per address.
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
    let coord = Coordinator::start(&db.url, &["--batch-secs", "1", "--replicate-until", "1000", "--spot-check", "0"])?;
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
