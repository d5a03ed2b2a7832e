//! `worker experiments`: a researcher's view of a coordinator from the terminal: list the
//! experiments, show one's cells (live with `--follow`), stop one, set its priority.

use crate::client::Client;
use anyhow::{Context, Result};
use serde_json::Value;
use std::time::Duration;

#[derive(clap::Subcommand)]
pub enum Cmd {
    /// List the coordinator's experiments, newest first.
    List(ListArgs),
    /// One experiment and its cells as a table.
    Show(ShowArgs),
    /// Stop an experiment: queued batches are cancelled, results so far are kept.
    Stop(StopArgs),
    /// Set an experiment's priority (higher is served first).
    Priority(PriorityArgs),
    /// Save a researcher token for a coordinator, for `submit` and these commands to use when
    /// no --token or LEXHIVE_TOKEN is given.
    Login(LoginArgs),
}

#[derive(clap::Args)]
pub struct LoginArgs {
    #[command(flatten)]
    at: Coordinator,
    /// The researcher token (`coordinator token create --role researcher`).
    #[arg(long, env = "LEXHIVE_TOKEN", hide_env_values = true)]
    token: String,
}

#[derive(clap::Args)]
struct Coordinator {
    /// Coordinator URL, e.g. http://127.0.0.1:8080.
    #[arg(long, env = "LEXHIVE_COORDINATOR")]
    coordinator: String,
}

#[derive(clap::Args)]
pub struct ListArgs {
    #[command(flatten)]
    at: Coordinator,
    /// Only experiments in this state: queued, running, finished, failed or stopped.
    #[arg(long)]
    status: Option<String>,
    /// Order: created (newest first), name, priority (highest first) or status.
    #[arg(long, default_value = "created")]
    sort: String,
    /// Print the API's JSON instead of a table.
    #[arg(long)]
    json: bool,
}

#[derive(clap::Args)]
pub struct ShowArgs {
    /// The experiment's id.
    id: uuid::Uuid,
    #[command(flatten)]
    at: Coordinator,
    /// Redraw every `--every` seconds until the experiment is over.
    #[arg(long)]
    follow: bool,
    /// Seconds between redraws with `--follow`.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..=3600))]
    every: u64,
    /// Print the API's JSON instead of a table.
    #[arg(long)]
    json: bool,
}

#[derive(clap::Args)]
pub struct StopArgs {
    /// The experiment's id.
    id: uuid::Uuid,
    #[command(flatten)]
    at: Coordinator,
    /// The researcher token the experiment was submitted with (or an admin's).
    #[command(flatten)]
    token: crate::researcher::Token,
}

#[derive(clap::Args)]
pub struct PriorityArgs {
    /// The experiment's id.
    id: uuid::Uuid,
    /// The new priority (higher is served first; the default is 0).
    #[arg(allow_negative_numbers = true)]
    priority: i32,
    #[command(flatten)]
    at: Coordinator,
    /// The researcher token the experiment was submitted with (or an admin's).
    #[command(flatten)]
    token: crate::researcher::Token,
}

pub fn run(cmd: Cmd) -> Result<()> {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    rt.block_on(async {
        match cmd {
            Cmd::List(a) => list(a).await,
            Cmd::Show(a) => show(a).await,
            Cmd::Stop(a) => {
                let client = Client::new(&a.at.coordinator, Some(a.token.resolve(&a.at.coordinator)?))?;
                let _: Value = client
                    .post(&format!("/experiments/{}/stop", a.id), &serde_json::json!({}))
                    .await
                    .with_context(|| format!("stop {}: refused by {}", a.id, client.base()))?;
                crate::emit(&format!("stopped {}\n", a.id))
            }
            Cmd::Login(a) => {
                // Only a token the coordinator knows as a researcher's (or an admin's) is saved.
                let client = Client::new(&a.at.coordinator, Some(a.token.clone()))?;
                let me: shared::protocol::Whoami = client
                    .get("/whoami")
                    .await
                    .with_context(|| format!("login: {} does not accept this token", client.base()))?;
                if !matches!(me.role.as_str(), "researcher" | "admin") {
                    anyhow::bail!(
                        "login: this is a {} token; submitting and stopping experiments needs a researcher's (`coordinator token create --role researcher`)",
                        me.role
                    );
                }
                let path = crate::researcher::login(&a.at.coordinator, &a.token)?;
                eprintln!("saved the token for {} in {}", a.at.coordinator.trim_end_matches('/'), path.display());
                Ok(())
            }
            Cmd::Priority(a) => {
                let client = Client::new(&a.at.coordinator, Some(a.token.resolve(&a.at.coordinator)?))?;
                let _: Value = client
                    .post(&format!("/experiments/{}/priority", a.id), &serde_json::json!({ "priority": a.priority }))
                    .await
                    .with_context(|| format!("priority {}: refused by {}", a.id, client.base()))?;
                crate::emit(&format!("{}: priority {}\n", a.id, a.priority))
            }
        }
    })
}

async fn list(a: ListArgs) -> Result<()> {
    let client = Client::new(&a.at.coordinator, None)?;
    // The url crate's form encoding (what reqwest itself uses) for the query string.
    let mut query = reqwest::Url::parse("http://query/").expect("a valid URL");
    query.query_pairs_mut().append_pair("sort", &a.sort).extend_pairs(a.status.as_ref().map(|s| ("status", s)));
    let path = format!("/experiments?{}", query.query().unwrap_or_default());
    let list: Vec<Value> =
        client.get(&path).await.with_context(|| format!("{}: cannot list experiments", client.base()))?;
    if a.json {
        return crate::emit(&format!("{}\n", serde_json::to_string_pretty(&list)?));
    }
    let mut out = format!(
        "{:<36}  {:<8}  {:>4}  {:<24}  {:<40}  {:<22}  {}\n",
        "id", "status", "prio", "done", "result", "LLR (bounds)", "name"
    );
    for e in &list {
        out += &format!(
            "{:<36}  {:<8}  {:>4}  {:<24}  {:<40}  {:<22}  {}\n",
            text(&e["id"]),
            text(&e["status"]),
            text(&e["priority"]),
            progress(e),
            text(&e["result"]),
            llr(e),
            text(&e["name"])
        );
    }
    if list.is_empty() {
        out += "(none)\n";
    }
    crate::emit(&out)
}

async fn show(a: ShowArgs) -> Result<()> {
    let client = Client::new(&a.at.coordinator, None)?;
    let path = format!("/experiments/{}", a.id);
    loop {
        let e: Value = client.get(&path).await.with_context(|| format!("{}: cannot show {}", client.base(), a.id))?;
        let over = !matches!(text(&e["status"]).as_str(), "queued" | "running");
        let page = if a.json { format!("{}\n", serde_json::to_string_pretty(&e)?) } else { table(&e) };
        if a.follow && std::io::IsTerminal::is_terminal(&std::io::stdout()) {
            // Redraw in place: clear the screen, cursor home.
            crate::emit(&format!("\x1b[2J\x1b[H{page}"))?;
        } else {
            crate::emit(&page)?;
        }
        if !a.follow || over {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_secs(a.every)).await;
    }
}

/// The experiment's header and one line per cell.
fn table(e: &Value) -> String {
    let mut out = format!(
        "{}  {}\n{} experiment, {}; {}; priority {}\n",
        text(&e["name"]),
        text(&e["id"]),
        text(&e["kind"]),
        text(&e["status"]),
        progress(e),
        e["priority"]
    );
    if e["result"].is_string() || e["llr"].is_number() {
        out += &format!("result: {}; LLR (bounds): {}\n", text(&e["result"]), llr(e));
    }
    if let Some(n) = e["waiting_for_others"].as_i64().filter(|&n| n > 0) {
        out += &format!("{n} queued batches wait for a worker of another owner (replicas, cross-checks)\n");
    }
    out += "\n";
    let cells = e["cells"].as_array().map(Vec::as_slice).unwrap_or_default();
    // Only matches (and the runs made of them) have games won and lost; the other kinds' cells
    // show what they did against what they were asked.
    if !matches!(text(&e["kind"]).as_str(), "match" | "tune" | "leaves") {
        out += &format!("{:>4}  {:<32}  {:>17}  {}\n", "cell", "params", text(&e["counted"]), "status");
        for c in cells {
            let status = match c["stop_reason"].as_str() {
                Some(why) => format!("{}: {why}", text(&c["status"])),
                None => text(&c["status"]),
            };
            out += &format!(
                "{:>4}  {:<32}  {:>17}  {}\n",
                text(&c["index"]),
                params(c),
                format!("{}/{}", c["games"], c["target_games"]),
                status
            );
        }
        return out + &generations(e) + &tuning(e);
    }
    // An SPRT's cells show their LLR, as fishtest's tests do.
    let sprt = cells.iter().any(|c| c["sprt_llr"].is_number());
    out += &format!(
        "{:>4}  {:<32}  {:>13}  {:<17}  {:<19}  {}{}\n",
        "cell",
        "params",
        "games",
        "W-D-L",
        "win rate",
        if sprt { format!("{:<22}  ", "LLR (bounds)") } else { String::new() },
        "status"
    );
    for c in cells {
        let rate = match (c["win_rate"].as_f64(), c["ci_low"].as_f64(), c["ci_high"].as_f64()) {
            _ if c["caveat"].is_string() => text(&c["caveat"]),
            (Some(r), Some(lo), Some(hi)) => format!("{:.1}% [{:.1}, {:.1}]", 100.0 * r, 100.0 * lo, 100.0 * hi),
            (Some(r), _, _) => format!("{:.1}%", 100.0 * r),
            _ => "-".to_string(),
        };
        let status = match c["stop_reason"].as_str() {
            Some(why) => format!("{}: {why}", text(&c["status"])),
            None => text(&c["status"]),
        };
        let cell_llr = |c: &Value| {
            let v = serde_json::json!({ "llr": c["sprt_llr"], "llr_bounds": c["sprt_bounds"] });
            format!("{:<22}  ", llr(&v))
        };
        out += &format!(
            "{:>4}  {:<32}  {:>13}  {:<17}  {:<19}  {}{}\n",
            text(&c["index"]),
            params(c),
            format!("{}/{}", c["games"], c["target_games"]),
            format!("{}-{}-{}", c["wins"], c["draws"], c["losses"]),
            rate,
            if sprt { cell_llr(c) } else { String::new() },
            status
        );
    }
    out += &generations(e);
    out += &tuning(e);
    out
}

/// A tuning run: each step (the parameters before and after, the two perturbed bots' scores)
/// and the parameters now.
fn tuning(e: &Value) -> String {
    let Some(t) = e["tuning"].as_object() else { return String::new() };
    let names: Vec<&String> = t["params"].as_object().map(|p| p.keys().collect()).unwrap_or_default();
    let spell = |v: &Value| -> String {
        let vals = v.as_array().map(Vec::as_slice).unwrap_or_default();
        names
            .iter()
            .zip(vals)
            .map(|(n, x)| format!("{n}={}", x.as_f64().map_or("-".into(), |x| format!("{x:.4}"))))
            .collect::<Vec<_>>()
            .join(",")
    };
    // SPSA's two scores are its perturbed bots'; CMA-ES's, its best and worst point's.
    let cma = t["history"]
        .as_array()
        .and_then(|h| h.first())
        .is_some_and(|st| st["delta"].as_array().is_some_and(Vec::is_empty));
    let (plus, minus) = if cma { ("best", "worst") } else { ("score+", "score-") };
    let mut out = format!("\n{:>9}  {:<28}  {:>7}  {:>7}  {}\n", "iteration", "before", plus, minus, "after");
    for st in t["history"].as_array().map(Vec::as_slice).unwrap_or_default() {
        let pct = |v: &Value| v.as_f64().map_or("-".into(), |x| format!("{:.1}%", 100.0 * x));
        out += &format!(
            "{:>9}  {:<28}  {:>7}  {:>7}  {}\n",
            text(&st["iteration"]),
            spell(&st["theta"]),
            pct(&st["score_plus"]),
            pct(&st["score_minus"]),
            spell(&st["next"])
        );
    }
    let now: Vec<String> = t["params"].as_object().into_iter().flatten().map(|(k, v)| format!("{k}={v}")).collect();
    out + &format!("parameters now: {}\n", now.join(", "))
}

/// A run that improves itself: what each generation made, from how many games (the last is
/// the run's result).
fn generations(e: &Value) -> String {
    let made = e["generations"].as_array().map(Vec::as_slice).unwrap_or_default();
    if made.is_empty() {
        return String::new();
    }
    let mut out = format!("\n{:>10}  {:>9}  {}\n", "generation", "games", "artifact (sha256)");
    for g in made {
        out += &format!("{:>10}  {:>9}  {}\n", text(&g["generation"]), text(&g["games"]), text(&g["artifact"]));
        // A gated generation says what its gate decided and which table the run holds.
        if let Some(against) = g["gate"]["against"].as_str() {
            let verdict = g["gate"]["verdict"].as_str().unwrap_or("the gate is playing");
            out += &format!("{:>10}  gate against {}: {verdict}\n", "", &against[..12.min(against.len())]);
            if let Some(kept) = g["kept"].as_str().filter(|k| Some(*k) != g["artifact"].as_str()) {
                out += &format!("{:>10}  the run holds {kept}\n", "");
            }
        }
    }
    out + "download one with GET /api/v1/artifacts/SHA256\n"
}

/// A cell's grid point as `name=value` pairs.
fn params(c: &Value) -> String {
    let pairs: Vec<String> = c["params"]
        .as_object()
        .map(|m| m.iter().map(|(k, v)| format!("{k}={}", text(v))).collect())
        .unwrap_or_default();
    pairs.join(" ")
}

/// An SPRT's LLR and bounds, `1.52 (-2.94, 2.94)`, or `-`.
fn llr(e: &Value) -> String {
    match (e["llr"].as_f64(), e["llr_bounds"].as_array()) {
        (Some(l), Some(b)) if b.len() == 2 => {
            format!("{l:.2} ({:.2}, {:.2})", b[0].as_f64().unwrap_or_default(), b[1].as_f64().unwrap_or_default())
        }
        (Some(l), _) => format!("{l:.2}"),
        _ => "-".into(),
    }
}

/// "done/target unit" from a summary or detail.
fn progress(e: &Value) -> String {
    format!("{}/{} {}", e["games"], e["target_games"], text(&e["counted"]))
}

/// A JSON value as plain text (strings without quotes).
fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "-".to_string(),
        other => other.to_string(),
    }
}
