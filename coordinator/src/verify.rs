//! Never believe an upload. A match batch is deterministic given its seed and deals, so its
//! logs can be held to the batch exactly: every game of the batch's deals is there, once and
//! in order; each sampled game re-plays on its deal under the rules and writes back byte for
//! byte (`engine::gcg::replay_deal`); and the tally is exactly what the logs say. Only the
//! bots' thinking times cannot be checked; they are bounded. Which bot chose the moves is not
//! checked here (a replica by another worker does that).
//!
//! This runs before the upload's transaction, on the blocking pool, with the rules (lexicon,
//! distribution, layout) loaded once per coordinator and experiment artifacts.

use crate::error::{Error, Result};
use engine::autoplay::Outcome;
use engine::board::Layout;
use engine::lexicon::Kwg;
use engine::movegen::Ctx;
use engine::tiles::Distribution;
use shared::protocol::{ArtifactRef, split_gcg_bundle};
use shared::stats::MatchTally;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Longest a bot may be said to have thought, per game: an hour.
const MAX_MICROS_PER_GAME: u64 = 3_600_000_000;

/// What replaying needs.
pub struct Rules {
    kwg: Kwg,
    dist: Distribution,
    layout: Layout,
}

impl Rules {
    fn ctx(&self) -> Ctx<'_> {
        Ctx { kwg: &self.kwg, dist: &self.dist, layout: &self.layout }
    }
}

/// Rules by the sha256s of their lexicon, distribution and layout artifacts.
#[derive(Clone, Default)]
pub struct RulesCache(Arc<Mutex<HashMap<[String; 3], Arc<Rules>>>>);

impl RulesCache {
    pub async fn get(&self, db: &sqlx::PgPool, artifacts: &[ArtifactRef]) -> Result<Arc<Rules>> {
        let sha = |role: &str| {
            artifacts
                .iter()
                .find(|a| a.role == role)
                .map(|a| a.sha256.clone())
                .ok_or_else(|| Error::internal(format!("an experiment without a {role} artifact")))
        };
        let key = [sha("lexicon")?, sha("distribution")?, sha("layout")?];
        if let Some(r) = self.0.lock().expect("rules cache").get(&key) {
            return Ok(r.clone());
        }
        let mut bytes = Vec::new();
        for sha in &key {
            let (b,): (Vec<u8>,) =
                sqlx::query_as("SELECT bytes FROM artifacts WHERE sha256 = $1").bind(sha).fetch_one(db).await?;
            bytes.push(b);
        }
        let bad = |e: engine::error::DataError| Error::internal(format!("an experiment's artifact does not load: {e}"));
        let rules = tokio::task::spawn_blocking(move || -> Result<Rules> {
            Ok(Rules {
                kwg: Kwg::from_bytes(&bytes[0], "lexicon").map_err(bad)?,
                dist: Distribution::parse(&String::from_utf8_lossy(&bytes[1]), "distribution").map_err(bad)?,
                layout: Layout::parse(&String::from_utf8_lossy(&bytes[2]), "layout").map_err(bad)?,
            })
        })
        .await
        .map_err(|e| Error::internal(e.to_string()))??;
        let rules = Arc::new(rules);
        self.0.lock().expect("rules cache").insert(key, rules.clone());
        Ok(rules)
    }
}

/// The match batch an upload claims to be.
pub struct MatchBatch {
    pub batch: uuid::Uuid,
    pub seed: u64,
    pub first_pair: u64,
    pub pairs: u64,
    pub bots: [String; 2],
}

/// Whether game `id` of `batch` is re-played: a fixed choice from the batch and game, so a
/// worker cannot know it in advance of the batch and a retry is checked the same way.
fn sampled(batch: uuid::Uuid, id: u64, fraction: f64) -> bool {
    let (a, b) = batch.as_u64_pair();
    (engine::rng::derive(a ^ b, id) % 1_000_000) < (fraction * 1_000_000.0).round() as u64
}

/// Check a match upload's GCG bundle and tally against its batch; the error says what is
/// wrong, naming the game.
pub fn check_match(
    rules: &Rules,
    b: &MatchBatch,
    gcg: &str,
    tally: &MatchTally,
    fraction: f64,
) -> std::result::Result<(), String> {
    let logs = |e: String| format!("logs.gcg_gz: {e}");
    let games = split_gcg_bundle(gcg).map_err(logs)?;
    let want = 2 * b.first_pair..2 * (b.first_pair + b.pairs);
    if games.len() as u64 != want.end - want.start || games.iter().zip(want.clone()).any(|((id, _), w)| *id != w) {
        let ids: Vec<u64> = games.iter().map(|g| g.0).take(20).collect();
        return Err(logs(format!("the batch's games are {want:?}, in order; the log has {ids:?}")));
    }
    let mut outcomes = Vec::with_capacity(games.len());
    for (id, text) in games {
        let source = format!("game {id}");
        // Leg 0 of a pair seats the first bot first.
        let seat_bot = if id % 2 == 0 { [0, 1] } else { [1, 0] };
        if sampled(b.batch, id, fraction) {
            let names = [b.bots[seat_bot[0]].as_str(), b.bots[seat_bot[1]].as_str()];
            let deal = engine::autoplay::deal_seed(b.seed, id / 2);
            engine::gcg::replay_deal(text, rules.ctx(), deal, names, &source).map_err(|e| logs(e.to_string()))?;
        }
        let s = engine::gcg::summarize(text, &source).map_err(|e| logs(e.to_string()))?;
        outcomes.push(Outcome { id, seat_bot, scores: s.scores, bingos: s.bingos, turns: s.turns, micros: [0; 2] });
    }
    let mut logged = MatchTally::from_outcomes(&outcomes);
    if tally.micros.iter().any(|&m| m > logged.games.saturating_mul(MAX_MICROS_PER_GAME)) {
        return Err(format!("result.micros: {:?} is more than an hour a game", tally.micros));
    }
    logged.micros = tally.micros;
    if logged != *tally {
        return Err(format!("result: the tally is not what the logs say; the logs give {logged:?}"));
    }
    Ok(())
}
