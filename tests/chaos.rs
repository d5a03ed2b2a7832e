//! Chaos: while three volunteers play an experiment through two coordinators, volunteers are
//! SIGKILLed and started again, coordinators are SIGKILLed and restarted, and Postgres goes away
//! (every connection cut, nothing answering for seconds), at random. The experiment must still
//! finish with exactly the result a local run of its seed gives: every deal counted once, every
//! game replaying to its uploaded result.
//!
//! The random choices come from `LEXHIVE_CHAOS_SEED` (default: the clock), printed first.

use anyhow::{Result, ensure};
use e2e::*;
use std::time::{Duration, Instant};

const SEED: u64 = 13;
// Enough games that the first blows land while work is in flight on a fast machine too
// (480 once finished within 4 s of the start on CI).
const GAMES: u64 = 1200;

/// splitmix64: enough randomness for choosing what to break next.
struct Dice(u64);

impl Dice {
    fn next(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        (z ^ (z >> 31)) % n
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_experiment_survives_killed_volunteers_coordinators_and_database() -> Result<()> {
    let chaos_seed = std::env::var("LEXHIVE_CHAOS_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64
    });
    eprintln!("chaos seed: {chaos_seed} (LEXHIVE_CHAOS_SEED={chaos_seed} repeats its choices)");
    let mut dice = Dice(chaos_seed);

    let db = TestDb::create().await?;
    let proxy = PgProxy::start()?;
    let db_url = proxy.url(&db);
    // Short leases and batches so that kills cost little; parking needs many owners' failures,
    // as three volunteers killed again and again may each fail one batch.
    let flags = ["--lease-secs", "4", "--batch-secs", "1", "--reap-secs", "1", "--max-failures", "50"];
    let mut coords = [Coordinator::start(&db_url, &flags)?, Coordinator::start(&db_url, &flags)?];
    let token = researcher_token(&db.url)?;
    let dir = Scratch::new("chaos");
    let toml = format!(
        "name = \"chaos\"\nkind = \"match\"\ngames = {GAMES}\nseed = {SEED}\n[match]\nbot1 = \"static\"\nbot2 = \"greedy\"\n"
    );
    let id = submit(&coords[0].url, &token, &experiment_file(&dir.0, "chaos.toml", &toml))?;
    let names = ["v0", "v1", "v2"];
    // Not `--exit-when-idle`: a volunteer told "no work" while a killed one's lease runs out
    // would leave, and the batch with it.
    let start_volunteer = |i: usize, url: &str| volunteer(url, names[i], &dir.0.join(names[i]), &[]);
    // v1 talks to the second coordinator, the others to the first.
    let url_of = |i: usize, coords: &[Coordinator; 2]| coords[i % 2].url.clone();
    let mut vols: Vec<_> = (0..3).map(|i| start_volunteer(i, &url_of(i, &coords))).collect::<Result<_>>()?;

    // Up to nine blows, each kind in turn, at random moments and on random targets, while
    // the experiment runs. The first of each kind come quickly, so that they land on a fast
    // machine too.
    let started = Instant::now();
    let mut actions = Vec::new();
    while actions.len() < 9 {
        let pause = if actions.len() < 3 { 100 + 50 * dice.next(6) } else { 500 + 250 * dice.next(8) };
        tokio::time::sleep(Duration::from_millis(pause)).await;
        let exp = get_json(&format!("{}/api/v1/experiments/{id}", coords[0].url)).await;
        if exp.as_ref().is_ok_and(|e| e["status"] == "finished") {
            // Each kind of blow landed at least once (they come in turn).
            ensure!(actions.len() >= 3, "chaos seed {chaos_seed}: finished before the chaos did: {actions:?}");
            break;
        }
        ensure!(started.elapsed() < Duration::from_secs(240), "chaos seed {chaos_seed}: too slow: {actions:?}");
        match actions.len() % 3 {
            0 => {
                let i = dice.next(3) as usize;
                let _ = vols[i].kill();
                let _ = vols[i].wait();
                vols[i] = start_volunteer(i, &url_of(i, &coords))?;
                actions.push(format!("killed {}", names[i]));
            }
            1 => {
                let j = dice.next(2) as usize;
                tokio::task::block_in_place(|| coords[j].restart())?;
                actions.push(format!("restarted coordinator {j}"));
            }
            _ => {
                let secs = if actions.len() < 3 { 1 + dice.next(3) } else { 2 + dice.next(4) };
                proxy.outage();
                tokio::time::sleep(Duration::from_secs(secs)).await;
                proxy.recover();
                actions.push(format!("database gone {secs} s"));
            }
        }
    }
    eprintln!("chaos seed {chaos_seed}: {actions:?}");

    let url = coords[0].url.clone();
    wait_for_status(&url, id, &["finished"], Duration::from_secs(300)).await?;
    for v in &mut vols {
        ensure!(v.try_wait()?.is_none(), "chaos seed {chaos_seed}: a volunteer died");
        let _ = (v.kill(), v.wait());
    }

    // Every deal counted once, every game replays to its uploaded result, and the totals are
    // exactly a local run's.
    let exp = check_totals(&url, id).await?;
    assert_eq!(check_replays(&url, &db.url, id).await?, GAMES as usize, "chaos seed {chaos_seed}");
    check_local_autoplay(&exp["cells"][0], ["static", "greedy"], GAMES, SEED)
        .map_err(|e| e.context(format!("chaos seed {chaos_seed}")))?;
    let ws = get_json(&format!("{url}/api/v1/workers")).await?;
    let contributed: i64 = ws.as_array().unwrap().iter().map(|w| w["games"].as_i64().unwrap()).sum();
    assert_eq!(contributed, GAMES as i64, "chaos seed {chaos_seed}: workers' games add up to the experiment's");
    let out = coordinator_cmd(&db.url, &["recompute"])?;
    assert!(out.contains("0 differed"), "{out}");
    drop(coords);
    db.drop_db().await
}
