//! The queue's rules over real HTTP against a real coordinator and Postgres: authentication,
//! validation, leases (heartbeat, expiry, release), idempotent uploads, 403/409, failures that
//! park a batch, stopping an experiment, and two coordinators claiming side by side.

use anyhow::{Result, ensure};
use e2e::*;
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use uuid::Uuid;

struct Api {
    http: reqwest::Client,
    url: String,
}

impl Api {
    fn new(url: &str) -> Self {
        Self { http: reqwest::Client::new(), url: url.into() }
    }
    /// Requests from `addr`: another network (`client_from`).
    fn from(url: &str, addr: &str) -> Self {
        Self { http: client_from(addr), url: url.into() }
    }
    async fn post(&self, path: &str, token: Option<&str>, body: Value) -> (u16, Value) {
        let mut r = self.http.post(format!("{}/api/v1{path}", self.url)).json(&body);
        if let Some(t) = token {
            r = r.bearer_auth(t);
        }
        let resp = r.send().await.expect("request");
        let status = resp.status().as_u16();
        (status, resp.json().await.unwrap_or(Value::Null))
    }
    async fn submit(&self, token: Option<&str>, toml: &str) -> (u16, Value) {
        let mut r = self.http.post(format!("{}/api/v1/experiments", self.url)).body(toml.to_string());
        if let Some(t) = token {
            r = r.bearer_auth(t);
        }
        let resp = r.send().await.expect("request");
        let status = resp.status().as_u16();
        (status, resp.json().await.unwrap_or(Value::Null))
    }
    async fn register(&self, name: &str) -> String {
        let (s, v) = self
            .post(
                "/workers/register",
                None,
                json!({ "protocol": shared::PROTOCOL_VERSION, "name": name, "threads": 2, "kinds": ALL_KINDS }),
            )
            .await;
        assert_eq!(s, 200, "{v}");
        v["token"].as_str().unwrap().to_string()
    }
    /// Claim as a worker of every kind that measured `gps` games per second at matches.
    async fn claim(&self, token: &str, gps: Option<f64>) -> Value {
        let rates = gps.map_or(json!({}), |g| json!({ "match": g / 2.0 }));
        self.claim_as(token, json!(ALL_KINDS), rates).await
    }
    async fn claim_as(&self, token: &str, kinds: Value, rates: Value) -> Value {
        let (s, v) = self
            .post(
                "/claim",
                Some(token),
                json!({ "protocol": shared::PROTOCOL_VERSION, "threads": 2, "kinds": kinds, "rates": rates }),
            )
            .await;
        assert_eq!(s, 200, "{v}");
        v
    }
}

const ALL_KINDS: [&str; 3] = ["match", "endgame", "wintable"];

/// An upload for `pairs` pairs all won twice by the first bot.
fn upload(lease: &Value, pairs: u64) -> Value {
    let (gcg_gz, gcg_sha256) = gz64("#lexhive-game 0\n");
    let (csv_gz, csv_sha256) = gz64("game_id\n");
    json!({
        "lease_id": lease,
        "elapsed_ms": 1000,
        "result": { "kind": "match", "games": 2 * pairs, "wins": 2 * pairs, "draws": 0, "losses": 0, "pair_points": [0, 0, 0, 0, pairs],
                    "score": [800 * pairs, 600 * pairs], "bingos": [0, 0], "turns": [20 * pairs, 20 * pairs], "first_wins": pairs, "first_draws": 0 },
        "logs": { "gcg_gz": gcg_gz, "gcg_sha256": gcg_sha256, "csv_gz": csv_gz, "csv_sha256": csv_sha256 }
    })
}

const ONE_CELL: &str =
    "name = \"rules\"\nkind = \"match\"\ngames = 40\n[match]\nbot1 = \"static\"\nbot2 = \"greedy\"\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queue_rules() -> Result<()> {
    let db = TestDb::create().await?;
    let coord = Coordinator::start(
        &db.url,
        // Made-up uploads test the queue's rules; their logs are not games, so none are checked.
        &[
            "--lease-secs",
            "2",
            "--reap-secs",
            "1",
            "--max-failures",
            "2",
            "--max-upload-bytes",
            "100000",
            "--verify-fraction",
            "0",
        ],
    )?;
    let api = Api::new(&coord.url);
    let researcher = researcher_token(&db.url)?;
    let r = Some(researcher.as_str());

    // Who may submit, and what.
    assert_eq!(api.submit(None, ONE_CELL).await.0, 401);
    assert_eq!(api.submit(Some("not-a-token"), ONE_CELL).await.0, 401);
    let a = api.register("a").await;
    let b = api.register("b").await;
    assert_eq!(api.submit(Some(&a), ONE_CELL).await.0, 403);
    for (bad, field) in [
        (ONE_CELL.replace("greedy", "alphazero"), "match.bot2"),
        (ONE_CELL.replace("games = 40", "games = 41"), "games"),
        (ONE_CELL.replace("games = 40", "games = 2000000000"), "games"),
        (format!("{ONE_CELL}[grid]\n\"bot1.t\" = []\n"), "grid.\"bot1.t\""),
        (format!("{ONE_CELL}[grid]\n\"bot1.t\" = [1]\n"), "grid.\"bot1.t\""),
        ("kind = ".to_string(), "line 1"),
    ] {
        let (s, v) = api.submit(r, &bad).await;
        assert_eq!(s, 422, "{bad}: {v}");
        assert!(v["error"].as_str().unwrap().contains(field), "{v} should name {field}");
    }
    // Listed endgame positions are read with the experiment's own tile distribution: four
    // tiles on two racks leave English's bag with 96, and a pinned four-tile set's empty.
    let dir = Scratch::new("rules");
    let four = dir.0.join("four.dist");
    std::fs::write(&four, "? 0 0 0\nA 1 1 1\nB 1 3 0\nC 1 3 0\nD 1 2 0\n")?;
    let sha = coordinator_cmd(&db.url, &["artifact", "--role", "distribution", four.to_str().unwrap()])?;
    let sha = sha.split_whitespace().find(|w| w.len() == 64).expect("the artifact's sha256");
    let endgame = format!(
        "name = \"tiny\"\nkind = \"endgame\"\n[endgame]\npositions = [\"{} AB/CD 0/0 0\"]\n",
        ["15"; 15].join("/")
    );
    let (s, v) = api.submit(r, &endgame).await;
    assert!(s == 422 && v["error"].as_str().unwrap().contains("endgame.positions[0]: the bag holds 96"), "{s} {v}");
    let (s, v) = api.submit(r, &format!("{endgame}[artifacts]\ndistribution = \"{sha}\"\n")).await;
    assert_eq!(s, 200, "{v}");
    sqlx::query("DELETE FROM experiments").execute(&db.pool().await?).await?;

    // The server may close a connection whose body it refused: use a client of its own.
    let (s, _) = Api::new(&coord.url).submit(r, &"#".repeat(2 << 20)).await;
    assert_eq!(s, 413, "oversized body");
    let (s, v) = api.post("/workers/register", None, json!({ "protocol": 999, "name": "old", "threads": 1 })).await;
    assert_eq!(s, 426, "{v}");
    // A protocol 1 worker (no `kinds`) is told to upgrade, on registering and on claiming.
    let (s, v) = api.post("/workers/register", None, json!({ "protocol": 1, "name": "old", "threads": 1 })).await;
    assert_eq!(s, 426, "{v}");
    assert!(v["error"].as_str().unwrap().contains("upgrade"), "{v}");
    let (s, v) = api.post("/claim", Some(&a), json!({ "protocol": 1, "threads": 1, "games_per_sec": null })).await;
    assert!(s == 426 && v["error"].as_str().unwrap().contains("upgrade"), "{s} {v}");
    let (s, v) = api
        .post(
            "/workers/register",
            None,
            json!({ "protocol": shared::PROTOCOL_VERSION, "name": "x", "threads": 1, "kinds": ["cnn"] }),
        )
        .await;
    assert!(s == 422 && v["error"].as_str().unwrap().starts_with("kinds:"), "{s} {v}");
    let (s, _) = api
        .post("/workers/register", None, json!({ "protocol": shared::PROTOCOL_VERSION, "name": "", "threads": 1 }))
        .await;
    assert_eq!(s, 422);

    // `worker submit` refuses a bad file itself, naming the file and field; it relays what
    // only the coordinator can refuse (an artifact it does not hold); both exit non-zero.
    let submit = |file: &std::path::Path| {
        std::process::Command::new(bin("worker"))
            .arg("submit")
            .arg(file)
            .args(["--coordinator", &coord.url, "--token", &researcher])
            .output()
    };
    let bad = experiment_file(&dir.0, "bad.toml", &ONE_CELL.replace("greedy", "alphazero"));
    let out = submit(&bad)?;
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("bad.toml: match.bot2: unknown bot `alphazero`") && !err.contains("422"), "{err}");
    assert!(out.stdout.is_empty());
    let sha = "ab".repeat(32);
    let absent = experiment_file(&dir.0, "absent.toml", &format!("{ONE_CELL}[artifacts]\nleaves = \"{sha}\"\n"));
    let out = submit(&absent)?;
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("absent.toml")
            && err.contains("422")
            && err.contains(&format!("artifacts.leaves: no leaves artifact with sha256 {sha}")),
        "{err}"
    );

    let (s, v) = api.submit(r, ONE_CELL).await;
    assert_eq!(s, 200, "{v}");
    let exp: Uuid = v["id"].as_str().unwrap().parse()?;

    // Claims carve batches: an unmeasured worker gets a pair per thread, a measured one more.
    let ba = api.claim(&a, None).await;
    assert_eq!(ba["status"], "batch");
    assert_eq!((ba["job"]["first_pair"].as_u64(), ba["job"]["pairs"].as_u64()), (Some(0), Some(2)));
    assert_eq!(ba["artifacts"].as_array().unwrap().len(), 5);
    let bb = api.claim(&b, Some(2.0)).await;
    assert_eq!(bb["job"]["first_pair"], 2);
    assert_eq!(bb["job"]["pairs"], 2, "a probe, whatever the worker's speed, until the cell has a pace: {bb}");
    let (ida, idb) = (ba["batch_id"].as_str().unwrap(), bb["batch_id"].as_str().unwrap());

    // Heartbeats: only the lease holder.
    let (s, _) = api.post(&format!("/batches/{ida}/heartbeat"), Some(&b), json!({ "lease_id": ba["lease_id"] })).await;
    assert_eq!(s, 403);
    let (s, v) = api.post(&format!("/batches/{ida}/heartbeat"), Some(&a), json!({ "lease_id": ba["lease_id"] })).await;
    assert_eq!((s, v["keep_going"].clone()), (200, json!(true)));
    let (s, _) = api
        .post(&format!("/batches/{}/heartbeat", Uuid::new_v4()), Some(&a), json!({ "lease_id": ba["lease_id"] }))
        .await;
    assert_eq!(s, 404);

    // Uploads: 403 from another worker, 409 for a lease not held, 422 for bad content, then
    // accepted once; a repeat changes nothing and says so.
    let (s, _) = api.post(&format!("/batches/{ida}/result"), Some(&b), upload(&ba["lease_id"], 2)).await;
    assert_eq!(s, 403);
    let (s, _) = api.post(&format!("/batches/{ida}/result"), Some(&a), upload(&json!(Uuid::new_v4()), 2)).await;
    assert_eq!(s, 409);
    let (s, v) = api.post(&format!("/batches/{ida}/result"), Some(&a), upload(&ba["lease_id"], 3)).await;
    assert_eq!(s, 422, "wrong game count: {v}");
    let mut bad_sha = upload(&ba["lease_id"], 2);
    bad_sha["logs"]["gcg_sha256"] = json!("0".repeat(64));
    assert_eq!(api.post(&format!("/batches/{ida}/result"), Some(&a), bad_sha).await.0, 422);
    let (s, v) = api.post(&format!("/batches/{ida}/result"), Some(&a), upload(&ba["lease_id"], 2)).await;
    assert_eq!((s, v["accepted"].clone()), (200, json!(true)), "{v}");
    let (s, v) = api.post(&format!("/batches/{ida}/result"), Some(&a), upload(&ba["lease_id"], 2)).await;
    assert_eq!((s, v["accepted"].clone()), (200, json!(false)), "{v}");
    let cell = &get_json(&format!("{}/api/v1/experiments/{exp}", coord.url)).await?["cells"][0];
    assert_eq!((cell["games"].as_u64(), cell["wins"].as_u64()), (Some(4), Some(4)), "counted once: {cell}");
    let big = json!({ "lease_id": ba["lease_id"], "pad": "x".repeat(200_000) });
    assert_eq!(Api::new(&coord.url).post(&format!("/batches/{ida}/result"), Some(&a), big).await.0, 413, "upload cap");

    // B goes silent: its lease expires, the reaper requeues the batch, and A gets it.
    let start = std::time::Instant::now();
    while get_json(&format!("{}/api/v1/experiments/{exp}", coord.url)).await?["batches"]["queued"] != 1 {
        assert!(start.elapsed() < Duration::from_secs(20), "the expired lease was never reaped");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let again = api.claim(&a, None).await;
    assert_eq!(again["job"]["first_pair"], 2, "the expired batch comes back first: {again}");
    assert_eq!(again["batch_id"].as_str(), Some(idb));
    let (s, _) = api
        .post(
            &format!("/batches/{idb}/result"),
            Some(&b),
            upload(&bb["lease_id"], bb["job"]["pairs"].as_u64().unwrap()),
        )
        .await;
    assert_eq!(s, 409, "a stale lease cannot upload");
    assert_eq!(
        api.post(&format!("/batches/{idb}/heartbeat"), Some(&b), json!({ "lease_id": bb["lease_id"] })).await.0,
        409
    );

    // A reports a failure: that is the second (expiry was the first), so the batch is parked,
    // its cell fails, and the experiment fails and says why.
    let (s, v) = api
        .post(
            &format!("/batches/{idb}/fail"),
            Some(&a),
            json!({ "lease_id": again["lease_id"], "error": "lexicon would not load" }),
        )
        .await;
    assert_eq!((s, v["state"].clone()), (200, json!("parked")), "{v}");
    let d = get_json(&format!("{}/api/v1/experiments/{exp}", coord.url)).await?;
    assert_eq!(d["status"], "failed");
    assert_eq!(d["cells"][0]["status"], "failed");
    assert!(d["parked"][0]["error"].as_str().unwrap().contains("lexicon would not load"), "{d}");
    let page = reqwest::get(format!("{}/experiments/{exp}", coord.url)).await?.text().await?;
    assert!(page.contains("Parked batches") && page.contains("lexicon would not load"));
    assert_eq!(api.claim(&a, None).await["status"], "idle");

    // Release puts a batch back unplayed; stopping an experiment ends its claims.
    let (_, v) = api.submit(r, ONE_CELL).await;
    let exp2 = v["id"].as_str().unwrap().to_string();
    let c = api.claim(&a, None).await;
    let (s, v) = api
        .post(
            &format!("/batches/{}/release", c["batch_id"].as_str().unwrap()),
            Some(&a),
            json!({ "lease_id": c["lease_id"] }),
        )
        .await;
    assert_eq!((s, v["state"].clone()), (200, json!("queued")));
    let c2 = api.claim(&b, None).await;
    assert_eq!(c2["batch_id"], c["batch_id"], "a released batch is claimed again");
    let (s, _) = api.post(&format!("/experiments/{exp2}/stop"), Some(&a), json!({})).await;
    assert_eq!(s, 403, "workers cannot stop experiments");
    let other = researcher_token(&db.url)?;
    let (s, v) = api.post(&format!("/experiments/{exp2}/stop"), Some(&other), json!({})).await;
    assert_eq!(s, 403, "only the researcher who submitted it: {v}");
    let (s, _) = api.post(&format!("/experiments/{exp2}/stop"), r, json!({})).await;
    assert_eq!(s, 200);
    assert_eq!(api.claim(&a, None).await["status"], "idle");
    let (s, v) = api
        .post(
            &format!("/batches/{}/heartbeat", c2["batch_id"].as_str().unwrap()),
            Some(&b),
            json!({ "lease_id": c2["lease_id"] }),
        )
        .await;
    assert_eq!((s, v["keep_going"].clone()), (200, json!(false)), "a stopped cell tells its workers to let go");
    assert_eq!(get_json(&format!("{}/api/v1/experiments/{exp2}", coord.url)).await?["status"], "stopped");
    // Reprioritising and deleting are the submitter's too.
    let prio = json!({ "priority": 9 });
    assert_eq!(api.post(&format!("/experiments/{exp2}/priority"), Some(&other), prio.clone()).await.0, 403);
    let (s, v) = api.post(&format!("/experiments/{exp2}/priority"), r, json!({ "priority": i32::MAX })).await;
    assert!(s == 422 && v["error"].as_str().unwrap().starts_with("priority"), "{s} {v}");
    let (s, v) = api.post(&format!("/experiments/{exp2}/priority"), r, prio).await;
    assert_eq!((s, v["priority"].clone()), (200, json!(9)), "{v}");
    assert_eq!(get_json(&format!("{}/api/v1/experiments/{exp2}", coord.url)).await?["priority"], 9);
    let delete = |token: &str| {
        api.http.delete(format!("{}/api/v1/experiments/{exp2}", coord.url)).bearer_auth(token.to_string()).send()
    };
    assert_eq!(delete(&other).await?.status().as_u16(), 403);
    assert_eq!(delete(&researcher).await?.status().as_u16(), 200);
    assert_eq!(reqwest::get(format!("{}/api/v1/experiments/{exp2}", coord.url)).await?.status().as_u16(), 404);

    drop(coord);
    db.drop_db().await
}

/// Two coordinator processes on one database: concurrent claims through both hand out every
/// deal exactly once, and volunteers on either finish one experiment together.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_coordinators_side_by_side() -> Result<()> {
    let db = TestDb::create().await?;
    // Each claimer here holds every batch it gets, and all register from one address.
    let c1 =
        Coordinator::start(&db.url, &["--batch-secs", "1", "--max-leases", "1000", "--registrations-per-hour", "0"])?;
    let c2 =
        Coordinator::start(&db.url, &["--batch-secs", "1", "--max-leases", "1000", "--registrations-per-hour", "0"])?;
    let researcher = researcher_token(&db.url)?;
    let (a1, a2) = (Api::new(&c1.url), Api::new(&c2.url));
    let games = 2000;
    let (s, v) = a1.submit(Some(&researcher), &ONE_CELL.replace("games = 40", &format!("games = {games}"))).await;
    assert_eq!(s, 200, "{v}");
    let exp: Uuid = v["id"].as_str().unwrap().parse()?;

    // 16 workers claim concurrently, half through each coordinator, until the queue is dry.
    let mut tasks = Vec::new();
    for i in 0..16 {
        let api = if i % 2 == 0 { Api::new(&c1.url) } else { Api::new(&c2.url) };
        tasks.push(tokio::spawn(async move {
            let token = api.register(&format!("claimer{i}")).await;
            let mut got = Vec::new();
            loop {
                let b = api.claim(&token, Some(1.0 + (i % 5) as f64)).await;
                if b["status"] == "idle" {
                    return got;
                }
                got.push((b["job"]["first_pair"].as_u64().unwrap(), b["job"]["pairs"].as_u64().unwrap()));
            }
        }));
    }
    let mut ranges = Vec::new();
    for t in tasks {
        ranges.extend(t.await?);
    }
    ranges.sort();
    let mut next = 0;
    for (first, pairs) in &ranges {
        assert_eq!(*first, next, "every deal handed out exactly once: {ranges:?}");
        next = first + pairs;
    }
    assert_eq!(2 * next, games);
    assert_eq!(a2.claim(&a2.register("late").await, None).await["status"], "idle");
    let d = get_json(&format!("{}/api/v1/experiments/{exp}", c2.url)).await?;
    assert_eq!(d["batches"]["leased"].as_u64(), Some(ranges.len() as u64), "{d}");

    // Real volunteers on each coordinator finish a second experiment together. Both register
    // before it is submitted, so that neither finds the work gone.
    let dir = Scratch::new("two");
    let mut w1 = volunteer(&c1.url, "v1", &dir.0.join("v1"), &["--exit-when-idle"])?;
    let mut w2 = volunteer(&c2.url, "v2", &dir.0.join("v2"), &["--exit-when-idle"])?;
    while worker_named(&c1.url, "v1").await?.is_none() || worker_named(&c1.url, "v2").await?.is_none() {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let id = submit(
        &c2.url,
        &researcher,
        &experiment_file(&dir.0, "m.toml", &ONE_CELL.replace("games = 40", "games = 600")),
    )?;
    wait_for_status(&c1.url, id, &["finished"], Duration::from_secs(120)).await?;
    check_totals(&c2.url, id).await?;
    for w in [&mut w1, &mut w2] {
        assert!(tokio::task::block_in_place(|| w.wait())?.success());
    }
    for name in ["v1", "v2"] {
        let w = worker_named(&c1.url, name).await?.expect("worker listed");
        assert!(w["games"].as_i64().unwrap() > 0, "both coordinators' volunteers contributed: {w}");
    }
    drop((c1, c2));
    db.drop_db().await
}

/// Claims serve the highest priority first, then take turns between experiments (not cells:
/// an experiment with many cells gets no bigger share).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claims_follow_priority_then_fairness() -> Result<()> {
    let db = TestDb::create().await?;
    let coord = Coordinator::start(&db.url, &[])?;
    let api = Api::new(&coord.url);
    let researcher = researcher_token(&db.url)?;
    let r = Some(researcher.as_str());
    let submit = async |name: &str, games: u32, priority: i32, grid: &str| -> Uuid {
        let text = format!(
            "name = \"{name}\"\nkind = \"match\"\ngames = {games}\npriority = {priority}\n[match]\nbot1 = \"static\"\nbot2 = \"greedy\"\n{grid}"
        );
        let (s, v) = api.submit(r, &text).await;
        assert_eq!(s, 200, "{v}");
        v["id"].as_str().unwrap().parse().unwrap()
    };
    let wide = submit("wide", 40, 0, "[grid]\n\"bot2\" = [\"greedy\", \"static\"]\n").await;
    let narrow = submit("narrow", 40, 0, "").await;
    let urgent = submit("urgent", 8, 5, "").await;
    let mut order = Vec::new();
    for i in 0..14 {
        let b = api.claim(&api.register(&format!("w{i}")).await, None).await;
        order.push((b["experiment_id"].as_str().unwrap().parse::<Uuid>()?, b["job"]["pairs"].as_u64().unwrap()));
    }
    // The urgent experiment's 4 pairs go first; then the others take turns.
    let first_other = order.iter().position(|o| o.0 != urgent).unwrap();
    assert_eq!(order[..first_other].iter().map(|o| o.1).sum::<u64>(), 4, "{order:?}");
    let rest: Vec<Uuid> = order[first_other..].iter().map(|o| o.0).collect();
    assert!(!rest.contains(&urgent));
    for pair in rest.chunks_exact(2) {
        assert!(pair.contains(&wide) && pair.contains(&narrow), "turns between experiments: {rest:?}");
    }
    drop(coord);
    db.drop_db().await
}

/// One experiment of every kind, queued side by side.
async fn one_of_each(api: &Api, token: &str) -> [Uuid; 3] {
    let files = [
        ONE_CELL.replace("games = 40", "games = 4"),
        "name = \"eg\"\nkind = \"endgame\"\nseed = 2\n[endgame]\ngenerate = { count = 2, extra = 6 }\ntime = 10\ncross_check = 0\n"
            .to_string(),
        "name = \"wt\"\nkind = \"wintable\"\ngames = 4\nseed = 3\n".to_string(),
    ];
    let mut ids = [Uuid::nil(); 3];
    for (id, text) in ids.iter_mut().zip(files) {
        let (s, v) = api.submit(Some(token), &text).await;
        assert_eq!(s, 200, "{v}");
        *id = v["id"].as_str().unwrap().parse().unwrap();
    }
    ids
}

/// An upload whose kind or size does not match its batch is refused with a 422 naming the
/// field, and nothing changes: the lease is still held and the cell still empty.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn results_must_match_their_batch() -> Result<()> {
    let db = TestDb::create().await?;
    let coord = Coordinator::start(&db.url, &["--verify-fraction", "0"])?;
    let api = Api::new(&coord.url);
    let researcher = researcher_token(&db.url)?;
    let [m, e, w] = one_of_each(&api, &researcher).await;
    let token = api.register("mismatch").await;
    let (gz, sha) = gz64("");
    let logs = json!({ "gcg_gz": gz, "gcg_sha256": sha, "csv_gz": gz, "csv_sha256": sha });
    let endgame = |index: u64| {
        json!({ "kind": "endgame", "solved": [{ "index": index, "cgp": "", "skipped": true, "value": 0, "exact": true,
                "best": "", "sequence": "", "nodes": 0, "ms": 0 }] })
    };
    let wintable = |games: u64| json!({ "kind": "wintable", "games": games, "counts": [] });
    let pool = db.pool().await?;
    for (kind, exp) in [("match", m), ("endgame", e), ("wintable", w)] {
        // A worker that runs only this kind gets this kind's batch, whatever else is queued.
        let b = api.claim_as(&token, json!([kind]), json!({})).await;
        assert_eq!((b["job"]["kind"].as_str(), b["experiment_id"].as_str()), (Some(kind), Some(&*exp.to_string())));
        let right_size = match kind {
            "match" => upload(&b["lease_id"], b["job"]["pairs"].as_u64().unwrap())["result"].clone(),
            "endgame" => endgame(b["job"]["positions"][0]["index"].as_u64().unwrap()),
            _ => wintable(2 * b["job"]["pairs"].as_u64().unwrap()),
        };
        let mut wrong: Vec<(Value, &str)> = [
            ("match", upload(&b["lease_id"], 1)["result"].clone()),
            ("endgame", endgame(0)),
            ("wintable", wintable(2)),
        ]
        .into_iter()
        .filter(|(k, _)| *k != kind)
        .map(|(_, r)| (r, "result.kind"))
        .collect();
        // The right kind with the wrong size or range.
        wrong.push(match kind {
            "match" => (upload(&b["lease_id"], 99)["result"].clone(), "result.games"),
            "endgame" => (endgame(77), "result.solved"),
            _ => (wintable(98), "result.games"),
        });
        let path = format!("/batches/{}/result", b["batch_id"].as_str().unwrap());
        for (result, field) in wrong {
            let body = json!({ "lease_id": b["lease_id"], "elapsed_ms": 10, "result": result, "logs": logs });
            let (s, v) = api.post(&path, Some(&token), body).await;
            assert_eq!(s, 422, "{kind} batch, {result}: {v}");
            assert!(v["error"].as_str().unwrap().starts_with(field), "{kind} batch: {v} should name {field}");
        }
        let (state, done): (String, i64) = sqlx::query_as(
            "SELECT b.state, c.done_units FROM batches b JOIN cells c ON c.id = b.cell_id WHERE b.id = $1::text::uuid",
        )
        .bind(b["batch_id"].as_str().unwrap())
        .fetch_one(&pool)
        .await?;
        assert_eq!((state.as_str(), done), ("leased", 0), "{kind}: nothing changed");
        // The right result is then accepted.
        let body = json!({ "lease_id": b["lease_id"], "elapsed_ms": 10, "result": right_size, "logs": logs });
        let (s, v) = api.post(&path, Some(&token), body).await;
        assert_eq!(s, 200, "{kind}: {v}");
    }
    let out = coordinator_cmd(&db.url, &["recompute"])?;
    assert!(out.contains("0 differed"), "{out}");
    drop(coord);
    db.drop_db().await
}

/// A worker that runs fewer kinds (as an older build would) is handed only those: with every
/// kind queued it plays its matches and leaves, and nothing it cannot run is leased, expires
/// or fails. A worker of every kind then finishes the rest.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_is_handed_only_the_kinds_it_runs() -> Result<()> {
    let db = TestDb::create().await?;
    let coord = Coordinator::start(&db.url, &["--lease-secs", "3", "--reap-secs", "1"])?;
    let api = Api::new(&coord.url);
    let researcher = researcher_token(&db.url)?;
    let dir = Scratch::new("kinds");
    let [m, e, w] = one_of_each(&api, &researcher).await;
    let mut old = volunteer(&coord.url, "matches-only", &dir.0.join("old"), &["--kinds", "match", "--exit-when-idle"])?;
    wait_for_status(&coord.url, m, &["finished"], Duration::from_secs(60)).await?;
    assert!(tokio::task::block_in_place(|| old.wait())?.success());
    // Longer than a lease: anything wrongly leased to it would have expired by now.
    tokio::time::sleep(Duration::from_secs(4)).await;
    let pool = db.pool().await?;
    for other in [e, w] {
        let d = get_json(&format!("{}/api/v1/experiments/{other}", coord.url)).await?;
        assert_eq!(d["status"], "queued", "{d}");
        let (batches,): (i64,) = sqlx::query_as("SELECT count(*) FROM batches WHERE experiment_id = $1")
            .bind(other)
            .fetch_one(&pool)
            .await?;
        assert_eq!(batches, 0, "nothing of a kind it does not run was leased to it");
    }
    let mut all = volunteer(&coord.url, "every-kind", &dir.0.join("all"), &["--exit-when-idle"])?;
    for id in [e, w] {
        wait_for_status(&coord.url, id, &["finished"], Duration::from_secs(120)).await?;
    }
    assert!(tokio::task::block_in_place(|| all.wait())?.success());
    let (failures,): (i64,) =
        sqlx::query_as("SELECT coalesce(sum(failures), 0)::bigint FROM batches").fetch_one(&pool).await?;
    assert_eq!(failures, 0, "no batch failed or expired");
    // Each worker reported its rate for the kinds it ran, per kind.
    let (rates,): (Value,) =
        sqlx::query_as("SELECT rates FROM workers WHERE name = 'every-kind'").fetch_one(&pool).await?;
    let has = |k: &str| rates.get(k).and_then(Value::as_f64).is_some_and(|r| r > 0.0);
    assert!(!has("match") && has("endgame") && has("wintable"), "{rates}");
    drop(coord);
    db.drop_db().await
}

/// A cell whose bots take minutes a game gets small batches with deadlines that fit them,
/// whatever the worker measured on faster bots; a fast cell gets batches sized by the worker's
/// speed; a cell with no pace yet gets a probe.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_cells_get_batches_and_deadlines_at_their_own_pace() -> Result<()> {
    let db = TestDb::create().await?;
    let coord = Coordinator::start(&db.url, &["--verify-fraction", "0", "--max-leases", "3"])?;
    let api = Api::new(&coord.url);
    let researcher = researcher_token(&db.url)?;
    let big = ONE_CELL.replace("games = 40", "games = 40000");
    let pool = db.pool().await?;
    // As if 10 games were counted, at 10 minutes of thinking each (slow: 1,200 s a pair) or
    // at 0.2 ms (fast).
    for (name, micros) in [("slow", 3_000_000_000u64), ("fast", 1_000), ("fresh", 0)] {
        let (s, v) = api.submit(Some(&researcher), &big.replace("rules", name)).await;
        assert_eq!(s, 200, "{v}");
        if micros > 0 {
            sqlx::query(
                "UPDATE cells SET tally = jsonb_set(jsonb_set(tally, '{games}', '10'), '{micros}', jsonb_build_array($2::bigint, $2::bigint))
                 WHERE experiment_id = (SELECT id FROM experiments WHERE name = $1)",
            )
            .bind(name)
            .bind(micros as i64)
            .execute(&pool)
            .await?;
        }
    }
    // What a worker says of its speed sizes nothing (a boaster gets first batches), what the
    // coordinator timed does: 10 pairs a second.
    let boaster = api.register("boaster").await;
    for _ in 0..3 {
        let b = api.claim(&boaster, Some(1e9)).await;
        assert!(b["job"]["pairs"].as_u64().is_some_and(|p| p <= 2), "{b}");
    }
    let a = api.register("a").await;
    sqlx::query("UPDATE workers SET measured = '{\"match\": 10.0}' WHERE name = 'a'").execute(&pool).await?;
    let mut seen = Vec::new();
    for _ in 0..3 {
        // 20 games a second: 1,200 pairs in two minutes of fast games, 0.2 of a slow pair.
        let b = api.claim(&a, Some(0.001)).await;
        assert_eq!(b["status"], "batch", "{b}");
        let (secs,): (f64,) =
            sqlx::query_as("SELECT extract(epoch FROM deadline - now())::float8 FROM batches WHERE id = $1::uuid")
                .bind(b["batch_id"].as_str().unwrap())
                .fetch_one(&pool)
                .await?;
        seen.push((b["experiment_name"].as_str().unwrap().to_string(), b["job"]["pairs"].as_u64().unwrap(), secs));
    }
    seen.sort_by(|x, y| x.0.cmp(&y.0));
    let near = |x: f64, want: f64| (x - want).abs() < 60.0;
    let [(fast, fast_pairs, fast_secs), (fresh, fresh_pairs, fresh_secs), (slow, slow_pairs, slow_secs)] = &seen[..]
    else {
        panic!("{seen:?}")
    };
    assert!((fast.as_str(), fresh.as_str(), slow.as_str()) == ("fast", "fresh", "slow"), "{seen:?}");
    assert!(*fast_pairs == 1200 && near(*fast_secs, 1800.0), "{seen:?}");
    // A probe: the worker's first-batch size (its threads), the usual deadline.
    assert!(*fresh_pairs == 2 && near(*fresh_secs, 1800.0), "{seen:?}");
    // One pair: 1,200 s on one thread, 600 on two; four times that is the deadline.
    assert!(*slow_pairs == 1 && near(*slow_secs, 2400.0), "{seen:?}");
    drop(coord);
    db.drop_db().await
}

/// Data stored before job kinds became types (specs of one shape with an `endgame` section,
/// placeholder bots, `*_pairs` columns) reads the same after the migration: every kind's spec,
/// targets in games or positions, and recorded batches.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn data_from_before_kinds_as_types_survives_the_migration() -> Result<()> {
    let db = TestDb::create().await?;
    let pool = db.pool().await?;
    let mut before = sqlx::migrate::Migrator::new(repo().join("migrations")).await?;
    before.migrations =
        before.migrations.iter().filter(|m| m.version < 20261123000002).cloned().collect::<Vec<_>>().into();
    before.run(&pool).await?;
    let old = |kind: &str, games: u64, bots: &str, endgame: Value| {
        json!({ "name": format!("old {kind}"), "description": "", "kind": kind, "priority": 0, "seed": 7,
                "games_per_cell": games, "bots": [bots, bots], "axes": [], "sprt": null,
                "artifacts": { "lexicon": null, "leaves": null, "winpct": null }, "endgame": endgame })
    };
    let eg = json!({ "source": { "generated": { "count": 5, "extra": 1 } }, "plies": 4, "time_ms": 2000, "cross_check": 0.5 });
    let mut m_spec = old("match", 20, "static", Value::Null);
    m_spec["bots"] = json!(["static", "greedy"]);
    let specs = [
        ("match", m_spec, 10),
        ("endgame", old("endgame", 5, "endgame", eg), 5),
        ("wintable", old("wintable", 40, "static", Value::Null), 20),
    ];
    let mut ids = Vec::new();
    let worker = Uuid::new_v4();
    sqlx::query("INSERT INTO workers (id, name, threads) VALUES ($1, 'old', 1)").bind(worker).execute(&pool).await?;
    for (kind, spec, target) in &specs {
        let (id, cell, batch) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
        let result = match *kind {
            "match" => upload(&json!(Uuid::nil()), 1)["result"].clone(),
            "endgame" => {
                json!({ "kind": "endgame", "solved": [{ "index": 0, "cgp": "", "skipped": true, "value": 0, "exact": true,
                                                            "best": "-", "sequence": "", "nodes": 0, "ms": 0 }] })
            }
            _ => json!({ "kind": "wintable", "games": 2, "counts": [] }),
        };
        let mut tally = serde_json::to_value(shared::stats::MatchTally::default())?;
        if *kind == "match" {
            tally = result.clone();
            tally.as_object_mut().unwrap().remove("kind");
        }
        sqlx::query("INSERT INTO experiments (id, name, kind, spec, artifacts, status) VALUES ($1, $2, $3, $4, '[]', 'running')")
            .bind(id)
            .bind(spec["name"].as_str())
            .bind(kind)
            .bind(spec)
            .execute(&pool)
            .await?;
        sqlx::query("INSERT INTO cells (id, experiment_id, idx, params, bots, target_pairs, next_pair, done_pairs, tally) VALUES ($1, $2, 0, '{}', $3, $4, 1, 1, $5)")
            .bind(cell)
            .bind(id)
            .bind(&spec["bots"])
            .bind(*target as i64)
            .bind(&tally)
            .execute(&pool)
            .await?;
        sqlx::query("INSERT INTO batches (id, cell_id, experiment_id, first_pair, pairs, priority, state) VALUES ($1, $2, $3, 0, 1, 0, 'done')")
            .bind(batch)
            .bind(cell)
            .bind(id)
            .execute(&pool)
            .await?;
        sqlx::query("INSERT INTO batch_results (batch_id, lease_id, worker_id, cell_id, experiment_id, result, games, elapsed_ms, gcg_gz, gcg_sha256, csv_gz, csv_sha256)
                     VALUES ($1, $2, $3, $4, $5, $6, 2, 1, '', '', '', '')")
            .bind(batch)
            .bind(Uuid::new_v4())
            .bind(worker)
            .bind(cell)
            .bind(id)
            .bind(result)
            .execute(&pool)
            .await?;
        ids.push(id);
    }
    // Starting the coordinator applies the rest.
    let coord = Coordinator::start(&db.url, &[])?;
    let urls: Vec<String> = ids.iter().map(|id| format!("{}/api/v1/experiments/{id}", coord.url)).collect();
    let detail = |i: usize| get_json(&urls[i]);
    let m = detail(0).await?;
    assert_eq!(
        (&m["spec"]["kind"], &m["spec"]["games_per_cell"], &m["spec"]["bots"][1]),
        (&json!("match"), &json!(20), &json!("greedy")),
        "{m}"
    );
    assert_eq!(
        (&m["cells"][0]["target_games"], &m["cells"][0]["bots"][0], &m["games"]),
        (&json!(20), &json!("static"), &json!(2)),
        "{m}"
    );
    let e = detail(1).await?;
    assert_eq!(
        (&e["spec"]["kind"], &e["spec"]["source"]["generated"]["count"], &e["spec"]["time_ms"]),
        (&json!("endgame"), &json!(5), &json!(2000)),
        "{e}"
    );
    assert_eq!(
        (&e["cells"][0]["target_games"], &e["cells"][0]["bots"], &e["games"], &e["counted"]),
        (&json!(5), &Value::Null, &json!(1), &json!("positions")),
        "{e}"
    );
    assert!(e["spec"].get("endgame").is_none() && e["spec"].get("bots").is_none(), "{e}");
    let w = detail(2).await?;
    assert_eq!(
        (&w["spec"]["kind"], &w["spec"]["games"], &w["cells"][0]["target_games"]),
        (&json!("wintable"), &json!(40), &json!(40)),
        "{w}"
    );
    for id in &ids {
        let b = batches(&coord.url, *id).await?;
        assert_eq!((&b[0]["first_unit"], &b[0]["units"]), (&json!(0), &json!(1)), "{b:?}");
        let page = reqwest::get(format!("{}/experiments/{id}", coord.url)).await?;
        assert_eq!(page.status(), 200);
    }
    let out = coordinator_cmd(&db.url, &["recompute"])?;
    assert!(out.contains("0 differed"), "{out}");
    drop(coord);
    db.drop_db().await
}

/// Match uploads are held to their batch's deals: a forged tally with the real logs, made-up
/// or altered logs, wrapped counts, and games of other deals are refused with the reason and
/// counted against the worker; the real games and tally are accepted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn match_uploads_must_be_the_batchs_games() -> Result<()> {
    use engine::bots::BotSpec;
    let db = TestDb::create().await?;
    let coord = Coordinator::start(&db.url, &[])?;
    let api = Api::new(&coord.url);
    let researcher = researcher_token(&db.url)?;
    let (s, v) = api.submit(Some(&researcher), &ONE_CELL.replace("static", "greedy")).await;
    assert_eq!(s, 200, "{v}");
    let token = api.register("forger").await;
    let b = api.claim(&token, None).await;
    let (seed, first, pairs) = (
        b["job"]["seed"].as_u64().unwrap(),
        b["job"]["first_pair"].as_u64().unwrap(),
        b["job"]["pairs"].as_u64().unwrap(),
    );
    // The batch's real games, played here with the coordinator's lexicon.
    let sha = b["artifacts"].as_array().unwrap().iter().find(|a| a["role"] == "lexicon").unwrap()["sha256"]
        .as_str()
        .unwrap()
        .to_string();
    let bytes = reqwest::get(format!("{}/api/v1/artifacts/{sha}", coord.url)).await?.bytes().await?;
    let kwg = engine::lexicon::Kwg::from_bytes(&bytes, "lexicon")?;
    let (dist, layout) = (engine::tiles::Distribution::english(), engine::board::Layout::standard());
    let ctx = engine::movegen::Ctx { kwg: &kwg, dist: &dist, layout: &layout };
    let names = [b["job"]["bot1"].as_str().unwrap(), b["job"]["bot2"].as_str().unwrap()];
    let mut bots = names.map(|n| BotSpec::parse(n).unwrap().build(None, None).unwrap());
    let mut mg = engine::movegen::Generator::new();
    let (mut bundle, mut outcomes) = (String::new(), Vec::new());
    let mut csv = format!("{}\n", engine::gcg::CSV_HEADER);
    for pair in first..first + pairs {
        for leg in 0..2 {
            let rec = engine::autoplay::play_leg(ctx, &mut bots, seed, pair, leg, &mut mg);
            let seats = [names[rec.seat_bot[0]], names[rec.seat_bot[1]]];
            bundle.push_str(&format!(
                "{}{}\n{}",
                shared::protocol::GAME_MARKER,
                rec.id,
                engine::gcg::write_gcg(&rec.game, seats, &dist)
            ));
            csv.push_str(&engine::gcg::write_csv(&rec, names, &dist));
            outcomes.push(rec.outcome());
        }
    }
    let honest = serde_json::to_value(shared::stats::MatchTally::from_outcomes(&outcomes))?;
    let path = format!("/batches/{}/result", b["batch_id"].as_str().unwrap());
    let send = |gcg: &str, tally: &Value| {
        let (gz, sha) = gz64(gcg);
        let (cgz, csha) = gz64(&csv);
        let mut result = tally.clone();
        result["kind"] = json!("match");
        json!({ "lease_id": b["lease_id"], "elapsed_ms": 10, "result": result,
                "logs": { "gcg_gz": gz, "gcg_sha256": sha, "csv_gz": cgz, "csv_sha256": csha } })
    };
    let mut forged = honest.clone();
    forged["wins"] = json!(forged["games"]);
    forged["losses"] = json!(0);
    forged["draws"] = json!(0);
    let mut wrapped = honest.clone();
    wrapped["wins"] = json!(u64::MAX);
    let first_move = bundle.lines().find(|l| l.starts_with(">p1:")).unwrap();
    let (head, total) = first_move.rsplit_once(' ').unwrap();
    let altered = bundle.replacen(first_move, &format!("{head} {}", total.parse::<i32>()? + 50), 1);
    let other_deals = bundle.replace(
        &format!("{}{}\n", shared::protocol::GAME_MARKER, 2 * first),
        &format!("{}{}\n", shared::protocol::GAME_MARKER, 2 * first + 1000),
    );
    // More games than the batch has, counted consistently: refused before its logs are read.
    let mut more = honest.clone();
    more["games"] = json!(more["games"].as_u64().unwrap() + 2);
    more["wins"] = json!(more["wins"].as_u64().unwrap() + 2);
    more["pair_points"][0] = json!(more["pair_points"][0].as_u64().unwrap() + 1);
    let cases = [
        (send(&bundle, &more), "result.games"),
        (send(&bundle, &forged), "the tally is not what the logs say"),
        (send(&bundle, &wrapped), "result"),
        (send(&altered, &honest), "game "),
        (send(&other_deals, &honest), "the batch's games are"),
        (send("", &honest), "logs.gcg_gz"),
    ];
    for (body, why) in &cases {
        let (s, v) = api.post(&path, Some(&token), body.clone()).await;
        assert!(s == 422 && v["error"].as_str().unwrap().contains(why), "{why}: {s} {v}");
    }
    // Nothing refused is kept: the log store holds none of their logs.
    fn files(dir: &std::path::Path) -> usize {
        std::fs::read_dir(dir)
            .map_or(0, |entries| entries.flatten().map(|e| if e.path().is_dir() { files(&e.path()) } else { 1 }).sum())
    }
    assert_eq!(files(&log_store(&db.url)), 0, "refused uploads wrote to the log store");
    let (s, v) = api.post(&path, Some(&token), send(&bundle, &honest)).await;
    assert_eq!(s, 200, "the real games are accepted: {v}");
    assert_eq!(files(&log_store(&db.url)), 2, "the accepted upload's two logs are stored");
    let w = worker_named(&coord.url, "forger").await?.unwrap();
    assert_eq!(w["rejected"], cases.len() as u64, "{w}");
    assert_eq!(check_totals(&coord.url, experiment_of(&b)).await?["games"], 2 * pairs);
    drop(coord);
    db.drop_db().await
}

/// The experiment a claimed batch belongs to.
fn experiment_of(b: &Value) -> Uuid {
    b["experiment_id"].as_str().unwrap().parse().unwrap()
}

/// A probe of a cell whose bots are slower than the deadline allows (no pace yet) misses it;
/// the cell's later probes, the same batch requeued or a new one, get twice as long at each
/// miss, so that slow bots are never lost to the deadline for ever.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn probes_that_miss_their_deadline_get_longer_ones() -> Result<()> {
    let db = TestDb::create().await?;
    let coord = Coordinator::start(
        &db.url,
        &["--lease-secs", "2", "--deadline-secs", "3", "--reap-secs", "1", "--verify-fraction", "0"],
    )?;
    let api = Api::new(&coord.url);
    let researcher = researcher_token(&db.url)?;
    let (s, v) = api.submit(Some(&researcher), ONE_CELL).await;
    assert_eq!(s, 200, "{v}");
    let pool = db.pool().await?;
    let left = |b: &Value| {
        let (pool, id) = (pool.clone(), b["batch_id"].as_str().unwrap().to_string());
        async move {
            let (secs,): (f64,) =
                sqlx::query_as("SELECT extract(epoch FROM deadline - now())::float8 FROM batches WHERE id = $1::uuid")
                    .bind(id)
                    .fetch_one(&pool)
                    .await
                    .unwrap();
            secs
        }
    };
    let a = api.register("slow-a").await;
    let probe = api.claim(&a, None).await;
    assert_eq!(probe["status"], "batch", "{probe}");
    let secs = left(&probe).await;
    assert!((2.0..=3.0).contains(&secs), "the usual deadline: {secs}");
    // Heartbeats keep the lease until the deadline ends it; the reaper then requeues it.
    let id = probe["batch_id"].as_str().unwrap().to_string();
    let start = Instant::now();
    loop {
        api.post(&format!("/batches/{id}/heartbeat"), Some(&a), json!({ "lease_id": probe["lease_id"] })).await;
        let (state, error): (String, Option<String>) =
            sqlx::query_as("SELECT state, last_error FROM batches WHERE id = $1::uuid")
                .bind(&id)
                .fetch_one(&pool)
                .await?;
        if state == "queued" {
            assert!(error.unwrap_or_default().starts_with("deadline passed"));
            break;
        }
        ensure!(start.elapsed() < Duration::from_secs(20), "the probe was never reaped");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let (doubled,): (Option<f64>,) = sqlx::query_as("SELECT probe_deadline_secs FROM cells").fetch_one(&pool).await?;
    assert_eq!(doubled, Some(6.0));
    // Another owner's worker gets the same probe with the longer deadline; a new probe of the
    // cell gets it too.
    let b = api.register("slow-b").await;
    let again = api.claim(&b, None).await;
    assert_eq!(again["batch_id"].as_str(), Some(id.as_str()), "{again}");
    let secs = left(&again).await;
    assert!((5.0..=6.0).contains(&secs), "twice the deadline: {secs}");
    let fresh = api.claim(&a, None).await;
    assert_ne!(fresh["batch_id"], again["batch_id"], "{fresh}");
    let secs = left(&fresh).await;
    assert!((5.0..=6.0).contains(&secs), "twice the deadline: {secs}");
    // However many probes miss, the deadline stops growing at a day: a probe deadline of 80,000
    // s missed once more (its deadline moved to now) becomes 86,400, not 160,000.
    sqlx::query("UPDATE cells SET probe_deadline_secs = 80000").execute(&pool).await?;
    sqlx::query("UPDATE batches SET deadline = now(), lease_expires = now() - interval '1 second' WHERE id = $1::uuid")
        .bind(again["batch_id"].as_str().unwrap())
        .execute(&pool)
        .await?;
    let start = Instant::now();
    loop {
        let (grown,): (Option<f64>,) = sqlx::query_as("SELECT probe_deadline_secs FROM cells").fetch_one(&pool).await?;
        if grown != Some(80000.0) {
            assert_eq!(grown, Some(86400.0), "a day at most");
            break;
        }
        ensure!(start.elapsed() < Duration::from_secs(20), "the probe was never reaped");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    drop(coord);
    db.drop_db().await
}

/// Strangers cannot fail an experiment: failures from untrusted owners release the batch to
/// other groups but never park it, however many owners fail it; trusted owners' failures
/// still do. Owners of one network are one group: the batch never goes back to it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn untrusted_failures_never_park_a_batch() -> Result<()> {
    let db = TestDb::create().await?;
    let coord = Coordinator::start(
        &db.url,
        &["--earn-trust-batches", "5", "--max-failures", "2", "--registration-burst-secs", "0"],
    )?;
    let api = Api::new(&coord.url);
    let researcher = researcher_token(&db.url)?;
    let (s, v) = api.submit(Some(&researcher), ONE_CELL).await;
    assert_eq!(s, 200, "{v}");
    let exp = v["id"].as_str().unwrap().to_string();
    let mut failed = None;
    // Three strangers from three networks, each an owner of its own, fail the same batch in turn.
    for (name, addr) in [("stranger-1", "127.0.1.1"), ("stranger-2", "127.0.2.1"), ("stranger-3", "127.0.3.1")] {
        let api = Api::from(&coord.url, addr);
        let token = api.register(name).await;
        let b = api.claim(&token, None).await;
        assert_eq!(b["status"], "batch", "{b}");
        let id = b["batch_id"].as_str().unwrap().to_string();
        assert!(failed.as_ref().is_none_or(|f| *f == id), "the failed batch goes first to the next group");
        let (s, v) = api
            .post(&format!("/batches/{id}/fail"), Some(&token), json!({ "lease_id": b["lease_id"], "error": "no" }))
            .await;
        assert_eq!((s, v["state"].as_str()), (200, Some("queued")), "{v}");
        failed = Some(id);
    }
    // A fourth owner from the first stranger's network is its group: never handed the batch.
    let neighbour = Api::from(&coord.url, "127.0.1.2");
    let token = neighbour.register("stranger-4").await;
    let b = neighbour.claim(&token, None).await;
    assert_ne!(b["batch_id"].as_str(), failed.as_deref(), "{b}");
    neighbour
        .post(
            &format!("/batches/{}/release", b["batch_id"].as_str().unwrap()),
            Some(&token),
            json!({ "lease_id": b["lease_id"] }),
        )
        .await;
    let d = get_json(&format!("{}/api/v1/experiments/{exp}", coord.url)).await?;
    assert_eq!((d["status"].as_str(), d["parked"].as_array().map(Vec::len)), (Some("running"), Some(0)), "{d}");
    let pool = db.pool().await?;
    let (failures, excluded): (i32, i32) =
        sqlx::query_as("SELECT failures, cardinality(exclude_groups) FROM batches WHERE id = $1::uuid")
            .bind(failed.as_deref().unwrap())
            .fetch_one(&pool)
            .await?;
    assert_eq!((failures, excluded), (3, 3), "every failure counted, and none of the three groups gets it again");
    // Trusted owners' failures park it as before: two of `--max-failures 2`.
    for (name, addr) in [("trusted-1", "127.0.4.1"), ("trusted-2", "127.0.5.1")] {
        let (s, v) = api.post("/owners", None, json!({ "name": name })).await;
        assert_eq!(s, 200, "{v}");
        coordinator_cmd(&db.url, &["owner", "trust", name])?;
        let api = Api::from(&coord.url, addr);
        let (s, v) = api
            .post(
                "/workers/register",
                None,
                json!({ "protocol": shared::PROTOCOL_VERSION, "name": name, "threads": 2, "kinds": ALL_KINDS, "owner_token": v["token"] }),
            )
            .await;
        assert_eq!(s, 200, "{v}");
        let token = v["token"].as_str().unwrap().to_string();
        let b = api.claim(&token, None).await;
        assert_eq!(b["batch_id"].as_str(), failed.as_deref(), "{b}");
        let (s, v) = api
            .post(
                &format!("/batches/{}/fail", b["batch_id"].as_str().unwrap()),
                Some(&token),
                json!({ "lease_id": b["lease_id"], "error": "no" }),
            )
            .await;
        let want = if name == "trusted-1" { "queued" } else { "parked" };
        assert_eq!((s, v["state"].as_str()), (200, Some(want)), "{name}: {v}");
    }
    assert_eq!(get_json(&format!("{}/api/v1/experiments/{exp}", coord.url)).await?["status"], "failed");
    drop(coord);
    db.drop_db().await
}
