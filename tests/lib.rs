//! Harness for the end-to-end tests: a fresh Postgres database per test, and real
//! `coordinator` and `worker` processes built by this workspace.
//!
//! Postgres: `$LEXHIVE_TEST_PG` (default `postgres://postgres@127.0.0.1:5432`), a server where
//! that role may create databases. Each test gets its own database and drops it at the end.

use anyhow::{Context, Result, bail, ensure};
use engine::board::Layout;
use engine::lexicon::Kwg;
use engine::movegen::Ctx;
use engine::tiles::Distribution;
use serde_json::{Value, json};
use shared::stats::MatchTally;
use std::io::Read;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use uuid::Uuid;

pub fn pg_base() -> String {
    std::env::var("LEXHIVE_TEST_PG").unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432".into())
}

/// A database of its own for one test.
pub struct TestDb {
    pub name: String,
    pub url: String,
}

impl TestDb {
    pub async fn create() -> Result<Self> {
        let name = format!("lexhive_t_{}", uuid::Uuid::new_v4().simple());
        let admin = format!("{}/postgres", pg_base());
        let mut c = admin_connection(&admin).await?;
        sqlx::Executor::execute(&mut c, sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
            .await
            .with_context(|| format!("creating a test database on {admin}"))?;
        Ok(Self { url: format!("{}/{name}", pg_base()), name })
    }

    pub async fn pool(&self) -> Result<sqlx::PgPool> {
        Ok(sqlx::PgPool::connect(&self.url).await?)
    }

    pub async fn drop_db(self) -> Result<()> {
        let _ = std::fs::remove_dir_all(log_store(&self.url));
        let mut c = admin_connection(&format!("{}/postgres", pg_base())).await?;
        sqlx::Executor::execute(
            &mut c,
            sqlx::AssertSqlSafe(format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name)),
        )
        .await?;
        Ok(())
    }
}

/// The log store of the coordinators of test database `db_url`: a folder of its own.
pub fn log_store(db_url: &str) -> PathBuf {
    let db = db_url.rsplit('/').next().unwrap_or("lexhive");
    std::env::temp_dir().join(format!("lexhive-e2e-logs-{db}"))
}

async fn admin_connection(url: &str) -> Result<sqlx::PgConnection> {
    use sqlx::Connection;
    sqlx::PgConnection::connect(url)
        .await
        .with_context(|| format!("cannot reach Postgres at {url}; start one (see README) or set LEXHIVE_TEST_PG"))
}

/// A binary of this workspace, next to the test executable's folder (target/<profile>/).
pub fn bin(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    let dir = exe.parent().and_then(|d| d.parent()).expect("target/<profile>/deps");
    let path = dir.join(name);
    assert!(path.exists(), "{} not built; run the tests with `cargo test --workspace`", path.display());
    path
}

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A running `coordinator serve`; killed when dropped.
pub struct Coordinator {
    pub child: Child,
    pub url: String,
    pub port: u16,
    db_url: String,
    args: Vec<String>,
    /// Environment beyond the harness's own (`start_env`).
    envs: Vec<(String, String)>,
    /// Its log (warnings and errors; restarts append): a file, not the terminal, so that the
    /// warnings a passing test provokes on purpose (a liar caught) stay out of the way.
    log: PathBuf,
}

impl Coordinator {
    /// Start on a free port with extra `serve` flags. Unless they say `--earn-trust-batches`,
    /// every owner is trusted from the start and never spot-checked (most tests have one
    /// volunteer, who could not replicate its own batches): the tests of trust say so. Unless
    /// they say `--registration-work`, registrations need no proof of work.
    pub fn start(db_url: &str, args: &[&str]) -> Result<Self> {
        Self::start_env(db_url, args, &[])
    }

    /// [`Coordinator::start`] with more environment variables (they win over the harness's).
    pub fn start_env(db_url: &str, args: &[&str], envs: &[(&str, &str)]) -> Result<Self> {
        let envs: Vec<(String, String)> = envs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let mut args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        if !args.iter().any(|a| a == "--earn-trust-batches") {
            args.extend(["--trust-every-owner", "--spot-check", "0"].map(String::from));
        }
        if !args.iter().any(|a| a == "--registration-work") {
            args.extend(["--registration-work", "0"].map(String::from));
        }
        static STARTED: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = STARTED.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let log = std::env::temp_dir().join(format!("lexhive-e2e-{}-coordinator-{n}.log", std::process::id()));
        // Printed through the test harness: shown with a failing test's output only.
        eprintln!("coordinator log: {}", log.display());
        Self::start_on(db_url, 0, args, envs, log)
    }

    fn start_on(db_url: &str, port: u16, args: Vec<String>, envs: Vec<(String, String)>, log: PathBuf) -> Result<Self> {
        let file = std::fs::OpenOptions::new().create(true).append(true).open(&log)?;
        let mut child = Command::new(bin("coordinator"))
            .args(["serve", "--bind", &format!("127.0.0.1:{port}")])
            .args(&args)
            .env("DATABASE_URL", db_url)
            .env("LEXHIVE_LOG_STORE", log_store(db_url))
            .env("LEXHIVE_LEXICA", repo().join("lexica"))
            .env("RUST_LOG", "warn")
            .envs(envs.iter().map(|(k, v)| (k, v)))
            .stdout(Stdio::piped())
            .stderr(file)
            .spawn()?;
        let stdout = child.stdout.take().expect("piped stdout");
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line)?;
        let Some(addr) = line.trim().strip_prefix("listening on http://") else {
            let _ = child.kill();
            bail!("coordinator did not start: {line:?}");
        };
        let port = addr.rsplit(':').next().and_then(|p| p.parse().ok()).context("port")?;
        Ok(Self { child, url: format!("http://{addr}"), port, db_url: db_url.into(), args, envs, log })
    }

    /// Kill this process (SIGKILL) and start a new one on the same port.
    pub fn restart(&mut self) -> Result<()> {
        self.child.kill()?;
        self.child.wait()?;
        let started = Instant::now();
        loop {
            match Self::start_on(&self.db_url, self.port, self.args.clone(), self.envs.clone(), self.log.clone()) {
                Ok(c) => {
                    *self = c;
                    return Ok(());
                }
                Err(e) if started.elapsed() < Duration::from_secs(10) => {
                    eprintln!("restart: {e}; retrying");
                    std::thread::sleep(Duration::from_millis(300));
                }
                Err(e) => return Err(e),
            }
        }
    }
}

impl Drop for Coordinator {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        // A test that panicked shows the end of the log with its own output.
        if std::thread::panicking() {
            let text = std::fs::read_to_string(&self.log).unwrap_or_default();
            let tail: Vec<&str> = text.lines().rev().take(40).collect();
            eprintln!("last lines of {}:", self.log.display());
            tail.iter().rev().for_each(|l| eprintln!("  {l}"));
        }
    }
}

/// Run `coordinator` with arguments and return its stdout.
pub fn coordinator_cmd(db_url: &str, args: &[&str]) -> Result<String> {
    let out = Command::new(bin("coordinator"))
        .args(args)
        .env("DATABASE_URL", db_url)
        .env("LEXHIVE_LOG_STORE", log_store(db_url))
        .env("RUST_LOG", "warn")
        .output()?;
    if !out.status.success() {
        bail!("coordinator {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(String::from_utf8(out.stdout)?)
}

pub fn researcher_token(db_url: &str) -> Result<String> {
    let out = coordinator_cmd(db_url, &["token", "create", "--role", "researcher"])?;
    Ok(out.lines().last().context("no token printed")?.to_string())
}

/// `worker submit`; returns the experiment id.
pub fn submit(url: &str, token: &str, file: &std::path::Path) -> Result<uuid::Uuid> {
    let out =
        Command::new(bin("worker")).arg("submit").arg(file).args(["--coordinator", url, "--token", token]).output()?;
    if !out.status.success() {
        bail!("submit failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(String::from_utf8(out.stdout)?.lines().last().context("no id")?.parse()?)
}

/// A `worker volunteer` process with its own config and cache folders (one thread unless
/// `extra` says `--threads`); its output goes to `home/volunteer.log`.
pub fn volunteer(url: &str, name: &str, home: &std::path::Path, extra: &[&str]) -> Result<Child> {
    std::fs::create_dir_all(home)?;
    let log = std::fs::File::create(home.join("volunteer.log"))?;
    let threads: &[&str] = if extra.contains(&"--threads") { &[] } else { &["--threads", "1"] };
    Ok(Command::new(bin("worker"))
        .args(["volunteer", "--coordinator", url, "--name", name])
        .args(threads)
        .args(extra)
        .env("LEXHIVE_CONFIG_DIR", home.join("config"))
        .env("LEXHIVE_CACHE_DIR", home.join("cache"))
        .stdout(log.try_clone()?)
        .stderr(log)
        .spawn()?)
}

pub async fn get_json(url: &str) -> Result<serde_json::Value> {
    let r = reqwest::get(url).await?;
    let status = r.status();
    let v = r.json().await?;
    if !status.is_success() {
        bail!("GET {url}: {status} {v}");
    }
    Ok(v)
}

/// Poll `GET /api/v1/experiments/{id}` until its status is one of `done`, or time out.
pub async fn wait_for_status(url: &str, id: uuid::Uuid, done: &[&str], timeout: Duration) -> Result<serde_json::Value> {
    let start = Instant::now();
    loop {
        let v = get_json(&format!("{url}/api/v1/experiments/{id}")).await?;
        if done.contains(&v["status"].as_str().unwrap_or("")) {
            return Ok(v);
        }
        if start.elapsed() > timeout {
            bail!("experiment {id} still {} after {timeout:?}: {v}", v["status"]);
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Wait for experiment `id` to end and its volunteer to exit; the experiment's JSON, which
/// must say it finished.
pub async fn finished(
    url: &str,
    id: uuid::Uuid,
    volunteer: &mut Child,
    timeout: Duration,
) -> Result<serde_json::Value> {
    let done = wait_for_status(url, id, &["finished", "failed"], timeout).await;
    let _ = volunteer.wait();
    let done = done?;
    if done["status"] != "finished" {
        bail!("experiment {id} ended {}: {done}", done["status"]);
    }
    Ok(done)
}

/// Write a small experiment file into `dir` and return its path.
pub fn experiment_file(dir: &std::path::Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).expect("write experiment file");
    p
}

/// A scratch folder removed when dropped.
pub struct Scratch(pub PathBuf);

impl Scratch {
    pub fn new(tag: &str) -> Self {
        let p = std::env::temp_dir().join(format!("lexhive-{tag}-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(&p).expect("scratch dir");
        Scratch(p)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Every recorded batch of an experiment, with its tally.
pub async fn batches(url: &str, id: Uuid) -> Result<Vec<Value>> {
    Ok(get_json(&format!("{url}/api/v1/experiments/{id}/batches")).await?.as_array().context("array")?.clone())
}

pub fn tally(v: &Value) -> MatchTally {
    serde_json::from_value(v.clone()).expect("tally")
}

/// Totals equal the sum of batch results; batches tile each cell's deals exactly once.
pub async fn check_totals(url: &str, id: Uuid) -> Result<Value> {
    let exp = get_json(&format!("{url}/api/v1/experiments/{id}")).await?;
    let all = batches(url, id).await?;
    for cell in exp["cells"].as_array().context("cells")? {
        let mut sum = MatchTally::default();
        let mut ranges: Vec<(u64, u64)> = Vec::new();
        for b in all.iter().filter(|b| b["cell_id"] == cell["id"]) {
            sum.merge(&tally(&b["result"]));
            ranges.push((b["first_unit"].as_u64().unwrap(), b["units"].as_u64().unwrap()));
        }
        ensure!(
            sum == tally(&cell["tally"]),
            "cell {}: stored {} != sum of batches {sum:?}",
            cell["index"],
            cell["tally"]
        );
        ensure!(cell["games"] == json!(sum.games), "cell games");
        ensure!(
            cell["wins"].as_u64().unwrap() + cell["draws"].as_u64().unwrap() + cell["losses"].as_u64().unwrap()
                == sum.games,
            "W+D+L"
        );
        ranges.sort();
        let mut next = 0;
        for (first, pairs) in ranges {
            ensure!(
                first == next,
                "cell {}: deals {next}.. missing or counted twice (batch starts at {first})",
                cell["index"]
            );
            next = first + pairs;
        }
        if cell["status"] == "finished" {
            ensure!(2 * next == cell["target_games"].as_u64().unwrap(), "finished cell covers its target");
        }
    }
    Ok(exp)
}

/// Download every batch's GCG log and replay every game with the engine's rules; the replayed
/// results must give the same wins, draws and losses as the uploaded tally.
pub async fn check_replays(url: &str, db_url: &str, id: Uuid) -> Result<usize> {
    let exp = get_json(&format!("{url}/api/v1/experiments/{id}")).await?;
    let dist = Distribution::english();
    let layout = Layout::standard();
    // The lexicon graph the workers used, fetched by its sha256.
    let sha = lexicon_sha(db_url, id).await?;
    let kwg = Kwg::from_bytes(&reqwest::get(format!("{url}/api/v1/artifacts/{sha}")).await?.bytes().await?, "lexicon")?;
    let ctx = Ctx { kwg: &kwg, dist: &dist, layout: &layout };
    let (http, token) = (reqwest::Client::new(), researcher_token(db_url)?);
    let mut replayed = 0;
    for b in batches(url, id).await? {
        let bid = b["batch_id"].as_str().unwrap();
        let gz = http.get(format!("{url}/api/v1/batches/{bid}/logs/gcg")).bearer_auth(&token).send().await?;
        ensure!(gz.status().is_success(), "batch {bid}'s logs: {}", gz.status());
        let gz = gz.bytes().await?;
        let mut text = String::new();
        flate2::read::GzDecoder::new(&gz[..]).read_to_string(&mut text)?;
        let games = shared::protocol::split_gcg_bundle(&text).map_err(anyhow::Error::msg)?;
        let (first, pairs) = (b["first_unit"].as_u64().unwrap(), b["units"].as_u64().unwrap());
        ensure!(games.len() as u64 == 2 * pairs, "batch {bid}: {} games logged for {pairs} pairs", games.len());
        let (mut w, mut d, mut l) = (0, 0, 0);
        for (gid, gcg) in games {
            ensure!((2 * first..2 * (first + pairs)).contains(&gid), "game {gid} outside batch {bid}");
            let r = engine::gcg::replay(gcg, ctx, &format!("batch {bid} game {gid}"))?;
            // Leg 0: the first bot sat in seat 0.
            let (me, them) = if gid % 2 == 0 { (r.scores[0], r.scores[1]) } else { (r.scores[1], r.scores[0]) };
            match me.cmp(&them) {
                std::cmp::Ordering::Greater => w += 1,
                std::cmp::Ordering::Equal => d += 1,
                std::cmp::Ordering::Less => l += 1,
            }
            replayed += 1;
        }
        let t = tally(&b["result"]);
        ensure!((t.wins, t.draws, t.losses) == (w, d, l), "batch {bid}: replayed W-D-L {w}-{d}-{l} != uploaded {t:?}");
    }
    ensure!(
        replayed as u64 == exp["cells"].as_array().unwrap().iter().map(|c| c["games"].as_u64().unwrap()).sum::<u64>()
    );
    Ok(replayed)
}

/// The sha256 of the lexicon an experiment's batches name, from the database.
async fn lexicon_sha(db_url: &str, id: Uuid) -> Result<String> {
    let pool = sqlx::PgPool::connect(db_url).await?;
    let (sha,): (String,) = sqlx::query_as("SELECT a->>'sha256' FROM experiments e, jsonb_array_elements(e.artifacts) a WHERE e.id = $1 AND a->>'role' = 'lexicon'").bind(id).fetch_one(&pool).await?;
    Ok(sha)
}

pub async fn worker_named(url: &str, name: &str) -> Result<Option<Value>> {
    let ws = get_json(&format!("{url}/api/v1/workers")).await?;
    Ok(ws.as_array().unwrap().iter().find(|w| w["name"] == name).cloned())
}

/// The Chromium the dashboard tests drive: `$LEXHIVE_CHROMIUM`, else Debian's.
pub fn chromium() -> String {
    std::env::var("LEXHIVE_CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into())
}

/// Headless Chromium with a fresh profile and no background traffic (this machine's network
/// is closed), given `args` and `url`.
fn chromium_run(url: &str, profile: &std::path::Path, args: &[&str]) -> std::io::Result<std::process::Output> {
    Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
        ])
        .args(args)
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(url)
        .output()
}

/// How a page lays out in Chromium `width` CSS pixels wide: the page's HTML (fetched here) in
/// a frame of that width (headless windows are at least 500 pixels wide), measured by a
/// script of the frame's parent. The page is not changed for the test: the script reads what
/// the browser laid out.
pub async fn layout(url: &str, width: u32, profile: &std::path::Path) -> Result<Value> {
    const MEASURE: &str = r#"
const f = document.getElementById('page');
f.onload = () => {
  const d = f.contentDocument, w = f.contentWindow, px = el => el.getBoundingClientRect();
  const r = {
    viewport: w.innerWidth,
    page: d.documentElement.scrollWidth,
    tables: [...d.querySelectorAll('table')].map(t => ({
      id: t.id, fits: t.scrollWidth <= t.clientWidth + 1, scrolls: w.getComputedStyle(t).overflowX,
      right: px(t).right })),
    charts: [...d.querySelectorAll('svg.plot')].map(s => ({
      id: s.id, right: px(s.parentElement).right,
      text: Math.min(...[...s.querySelectorAll('text.tick, text.axis')].map(t => px(t).height).filter(h => h > 0)) })),
  };
  const out = document.createElement('pre');
  out.id = 'measured';
  out.textContent = JSON.stringify(r);
  document.body.appendChild(out);
};
f.srcdoc = PAGE;
"#;
    let html = reqwest::get(url).await?.text().await?;
    let origin = url.split('/').take(3).collect::<Vec<_>>().join("/");
    let html = html.replacen("<head>", &format!("<head><base href=\"{origin}/\">"), 1);
    // The page as a string of the script: `</` escaped so that it cannot end the script.
    let page = serde_json::to_string(&html)?.replace("</", "<\\/");
    let doc = format!(
        "<!DOCTYPE html><html><body style=\"margin:0\"><iframe id=\"page\" style=\"width:{width}px;height:900px;border:0\"></iframe><script>const PAGE = {page};{MEASURE}</script></body></html>"
    );
    std::fs::create_dir_all(profile)?;
    let file = profile.join(format!("layout-{width}.html"));
    std::fs::write(&file, doc)?;
    let out = chromium_run(
        &format!("file://{}", file.display()),
        profile,
        &["--dump-dom", "--window-size=1500,1000", "--virtual-time-budget=10000", "--hide-scrollbars"],
    )?;
    ensure!(out.status.success(), "chromium: {}", String::from_utf8_lossy(&out.stderr));
    let dom = String::from_utf8(out.stdout)?;
    let json = dom.split("<pre id=\"measured\">").nth(1).and_then(|s| s.split("</pre>").next());
    let json = json.with_context(|| format!("{url} at {width} px: nothing measured"))?;
    Ok(serde_json::from_str(
        &json.replace("&quot;", "\"").replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">"),
    )?)
}

/// A PNG of the page's top `height` pixels in a 1,400-pixel-wide window.
pub fn screenshot(url: &str, profile: &std::path::Path, png: &std::path::Path, height: u32) -> Result<()> {
    let shot = format!("--screenshot={}", png.display());
    let size = format!("--window-size=1400,{height}");
    let out = chromium_run(url, profile, &[&shot, &size, "--hide-scrollbars"])?;
    if !out.status.success() || !png.exists() {
        bail!("chromium could not take a screenshot of {url}: {}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(())
}

/// With `LEXHIVE_SCREENSHOTS=DIR` (e.g. `docs/img`), a screenshot of the page as
/// `DIR/dashboard-NAME.png`; otherwise nothing.
pub fn screenshot_for_docs(url: &str, profile: &std::path::Path, name: &str, height: u32) -> Result<()> {
    match std::env::var_os("LEXHIVE_SCREENSHOTS") {
        Some(dir) => {
            screenshot(url, profile, &std::path::Path::new(&dir).join(format!("dashboard-{name}.png")), height)
        }
        None => Ok(()),
    }
}

/// The page's DOM after it loaded, as Chromium rendered it.
pub fn dump_dom(url: &str, profile: &std::path::Path) -> Result<String> {
    let out = chromium_run(url, profile, &["--dump-dom"]);
    let out = match out {
        Ok(o) => o,
        Err(e) => bail!(
            "cannot run {} ({e}): install Debian's chromium package (`apt-get install chromium`) or set LEXHIVE_CHROMIUM",
            chromium()
        ),
    };
    if !out.status.success() {
        bail!("chromium failed on {url}: {}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(String::from_utf8(out.stdout)?)
}

/// A TCP proxy in front of the test Postgres, on its own thread and runtime, that can cut the
/// database off: every open connection is dropped and new ones are closed on arrival until
/// [`PgProxy::recover`]. To a coordinator this is exactly a Postgres restart (its connections
/// die, and nothing answers for a while), without restarting the server other tests share.
pub struct PgProxy {
    pub port: u16,
    /// `pg_base()` up to its host: `postgres://user@`.
    prefix: String,
    down: std::sync::Arc<std::sync::atomic::AtomicBool>,
    conns: std::sync::Arc<std::sync::Mutex<Vec<tokio::task::AbortHandle>>>,
}

impl PgProxy {
    pub fn start() -> Result<Self> {
        use std::sync::atomic::Ordering;
        let base = pg_base();
        let at = base.rfind('@').map(|i| i + 1).or_else(|| base.find("://").map(|i| i + 3));
        let at = at.context("LEXHIVE_TEST_PG: not a postgres:// URL")?;
        let (prefix, target) = (base[..at].to_string(), base[at..].trim_end_matches('/').to_string());
        let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        listener.set_nonblocking(true)?;
        let port = listener.local_addr()?.port();
        let down = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let conns = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let (d, c) = (down.clone(), conns.clone());
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("proxy runtime");
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).expect("proxy listener");
                while let Ok((mut client, _)) = listener.accept().await {
                    if d.load(Ordering::SeqCst) {
                        continue; // dropped: closed on arrival
                    }
                    let target = target.clone();
                    let task = tokio::spawn(async move {
                        if let Ok(mut server) = tokio::net::TcpStream::connect(&target).await {
                            let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                        }
                    });
                    c.lock().expect("conns").push(task.abort_handle());
                }
            })
        });
        Ok(Self { port, prefix, down, conns })
    }

    /// `db`'s URL through this proxy.
    pub fn url(&self, db: &TestDb) -> String {
        format!("{}127.0.0.1:{}/{}", self.prefix, self.port, db.name)
    }

    /// Cut every connection and refuse new ones.
    pub fn outage(&self) {
        self.down.store(true, std::sync::atomic::Ordering::SeqCst);
        for c in self.conns.lock().expect("conns").drain(..) {
            c.abort();
        }
    }

    pub fn recover(&self) {
        self.down.store(false, std::sync::atomic::Ordering::SeqCst);
    }
}

/// A finished match cell's totals are exactly what `worker autoplay` of the same bots, games
/// and seed prints: the same wins, draws and losses, and the same mean score.
pub fn check_local_autoplay(cell: &Value, bots: [&str; 2], games: u64, seed: u64) -> Result<()> {
    let out = Command::new(bin("worker"))
        .args(["autoplay", "--bot1", bots[0], "--bot2", bots[1], "--games", &games.to_string()])
        .args(["--seed", &seed.to_string(), "--threads", "2"])
        .output()?;
    ensure!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let local = String::from_utf8(out.stdout)?;
    let wdl = format!("{} wins: {}  draws: {}  losses: {}", bots[0], cell["wins"], cell["draws"], cell["losses"]);
    ensure!(local.contains(&wdl), "coordinator `{wdl}`; local run:\n{local}");
    let mean = format!("{} Mean Score: {:.2}", bots[0], cell["mean_score"][0].as_f64().context("mean score")?);
    ensure!(local.contains(&mean), "coordinator `{mean}`; local run:\n{local}");
    Ok(())
}

/// A batch's GCG bundle and per-turn CSV.
pub struct Logged {
    pub gcg: String,
    pub csv: String,
}

/// A match batch's games as a liar makes them: played locally by `bots` (`worker autoplay` on
/// the experiment's `seed` and the batch's deals, at least `games` of them, kept in `dir` for
/// later batches) but labelled as the batch's own bots, so that every move is legal on its
/// deal; and the tally those logs give.
pub fn played_by(
    dir: &std::path::Path,
    batch: &Value,
    bots: [&str; 2],
    seed: u64,
    games: u64,
) -> Result<(Logged, Value)> {
    let (first, pairs) = (batch["job"]["first_pair"].as_u64().unwrap(), batch["job"]["pairs"].as_u64().unwrap());
    let names = [batch["job"]["bot1"].as_str().unwrap(), batch["job"]["bot2"].as_str().unwrap()];
    let logs = dir.join(format!("{}-{}", bots[0], bots[1]));
    // Deals are by game number, so games played once serve every later batch.
    if !logs.join(format!("game-{:06}.gcg", 2 * (first + pairs) - 1)).exists() {
        std::fs::create_dir_all(&logs)?;
        let out = std::process::Command::new(bin("worker"))
            .args(["autoplay", "--bot1", bots[0], "--bot2", bots[1], "--seed", &seed.to_string(), "--threads", "2"])
            .args(["--games", &(2 * (first + pairs)).max(games).to_string(), "--log-dir"])
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

/// Upload a match batch's `logs` and `tally` as `token`'s result for `batch` (a claim's
/// answer): the status and the body.
pub async fn upload_match(
    http: &reqwest::Client,
    url: &str,
    token: &str,
    batch: &Value,
    logs: &Logged,
    tally: &Value,
) -> (u16, Value) {
    let (gcg_gz, gcg_sha256) = gz64(&logs.gcg);
    let (csv_gz, csv_sha256) = gz64(&logs.csv);
    let mut result = tally.clone();
    result["kind"] = json!("match");
    let body = json!({
        "lease_id": batch["lease_id"], "elapsed_ms": 1000, "result": result,
        "logs": { "gcg_gz": gcg_gz, "gcg_sha256": gcg_sha256, "csv_gz": csv_gz, "csv_sha256": csv_sha256 },
    });
    post(
        http,
        &format!("{url}/api/v1/batches/{}/result", batch["batch_id"].as_str().unwrap_or_default()),
        Some(token),
        body,
    )
    .await
}

/// Start one `--exit-when-idle` volunteer per name (each its own owner), wait until the
/// experiment finishes, and see each exit 0.
pub async fn finish_with_volunteers(url: &str, id: Uuid, names: &[&str], home: &std::path::Path) -> Result<()> {
    finish_under(url, id, names, home, &[]).await
}

/// An owner made as a person would (`worker owner`, its token printed last) and trusted by the
/// operator (`coordinator owner trust NAME`); returns its token.
pub fn trusted_owner(url: &str, db_url: &str, name: &str) -> Result<String> {
    let out = Command::new(bin("worker")).args(["owner", "--coordinator", url, "--name", name]).output()?;
    ensure!(out.status.success(), "worker owner: {}", String::from_utf8_lossy(&out.stderr));
    let token = String::from_utf8(out.stdout)?.lines().last().context("no token printed")?.to_string();
    coordinator_cmd(db_url, &["owner", "trust", name])?;
    Ok(token)
}

/// A client whose requests come from `addr` (any 127.x.y.z is this machine): another network,
/// as far as a coordinator can tell. It never reuses a connection idle long enough for the
/// coordinator to have closed it.
pub fn client_from(addr: &str) -> reqwest::Client {
    reqwest::Client::builder()
        .local_address(addr.parse::<std::net::IpAddr>().expect("an IP address"))
        .pool_idle_timeout(Duration::from_secs(5))
        .build()
        .expect("a client")
}

/// [`finish_with_volunteers`], the volunteers under an owner the operator trusts (`name`).
pub async fn finish_with_trusted(
    url: &str,
    db_url: &str,
    id: Uuid,
    (owner, names): (&str, &[&str]),
    home: &std::path::Path,
) -> Result<()> {
    let token = trusted_owner(url, db_url, owner)?;
    finish_under(url, id, names, home, &["--owner-token", &token]).await
}

async fn finish_under(url: &str, id: Uuid, names: &[&str], home: &std::path::Path, extra: &[&str]) -> Result<()> {
    let args: Vec<&str> = ["--exit-when-idle"].iter().chain(extra).copied().collect();
    let mut honest: Vec<_> = names.iter().map(|n| volunteer(url, n, &home.join(n), &args)).collect::<Result<_>>()?;
    wait_for_status(url, id, &["finished"], Duration::from_secs(300)).await?;
    for w in &mut honest {
        let status = tokio::task::block_in_place(|| w.wait())?;
        ensure!(status.success(), "a volunteer exited with {status}");
    }
    Ok(())
}

/// A two-cell match grid (static against greedy and against a softmax bot), 240 games a cell:
/// tests change its name and `games = 240` as they need.
pub const MATCH: &str = r#"
name = "e2e match"
kind = "match"
games = 240
seed = 11
[match]
bot1 = "static"
bot2 = "greedy"
[grid]
"bot2" = ["greedy", "softmax:t=2,bag=30"]
"#;

/// `GET /api/v1{path}`, checked against the coordinator's own OpenAPI description
/// (`/api/v1/openapi.json`) of `template` for the status it answered with: a JSON body must
/// match the documented schema, a CSV's header row the documented columns. Returns the status
/// and the body.
pub async fn check_documented(url: &str, template: &str, path: &str) -> Result<(u16, String)> {
    let doc: Value = reqwest::get(format!("{url}/api/v1/openapi.json")).await?.error_for_status()?.json().await?;
    let r = reqwest::get(format!("{url}/api/v1{path}")).await?;
    let status = r.status().as_u16();
    let kind = r.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
    let body = r.text().await?;
    let documented = &doc["paths"][template]["get"]["responses"][status.to_string()];
    ensure!(documented.is_object(), "GET {template} answered {status}, which its description does not list");
    let media =
        ["text/csv", "application/gzip"].into_iter().find(|m| kind.starts_with(m)).unwrap_or("application/json");
    let content = &documented["content"][media];
    ensure!(content.is_object(), "GET {template} answered {status} as {kind}, not documented");
    if media == "application/gzip" {
        ensure!(content["schema"]["format"] == "binary", "GET {template}: documented as {content}");
        return Ok((status, body));
    }
    if media == "text/csv" {
        let cols = documented["description"].as_str().unwrap_or("").rsplit(": ").next().unwrap_or("");
        // `[,axis.NAME...]`: then a column per grid axis, each named `axis.` something.
        let (fixed, axes) = cols.strip_suffix("[,axis.NAME...]").map_or((cols, false), |f| (f, true));
        let header = body.lines().next().unwrap_or("");
        let extra = header.strip_prefix(fixed).filter(|rest| rest.is_empty() || axes);
        let extra_ok = extra.is_some_and(|rest| {
            rest.is_empty()
                || rest
                    .strip_prefix(',')
                    .is_some_and(|r| r.split(',').all(|c| c.trim_matches('"').starts_with("axis.")))
        });
        ensure!(extra_ok, "GET {path}: header {header:?}, documented {cols:?}");
        return Ok((status, body));
    }
    let schema = json!({ "components": doc["components"], "allOf": [content["schema"]] });
    let v = jsonschema::validator_for(&schema).map_err(|e| anyhow::anyhow!("the description's schema: {e}"))?;
    let value: Value = serde_json::from_str(&body).with_context(|| format!("GET {path}: not JSON"))?;
    let errors: Vec<String> = v.iter_errors(&value).map(|e| format!("{} at {}", e, e.instance_path())).collect();
    ensure!(errors.is_empty(), "GET {path} does not match its description:\n{}", errors.join("\n"));
    Ok((status, body))
}

/// A log as uploads carry it: base64 of gzip, and the sha256 of the text.
pub fn gz64(text: &str) -> (String, String) {
    use base64::Engine as _;
    use sha2::Digest;
    use std::io::Write;
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(text.as_bytes()).expect("gzip into memory");
    let sha = hex::encode(sha2::Sha256::digest(text.as_bytes()));
    (base64::engine::general_purpose::STANDARD.encode(e.finish().expect("gzip into memory")), sha)
}

/// POST `body` as JSON (with a bearer token, if any): the status and the JSON answer.
pub async fn post(http: &reqwest::Client, url: &str, token: Option<&str>, body: Value) -> (u16, Value) {
    let mut r = http.post(url).json(&body);
    if let Some(t) = token {
        r = r.bearer_auth(t);
    }
    let resp = r.send().await.expect("request");
    (resp.status().as_u16(), resp.json().await.unwrap_or(Value::Null))
}
