//! Never believe an upload. A match batch is deterministic given its seed and deals, so its
//! logs can be held to the batch exactly: every game of the batch's deals is there, once and
//! in order; each sampled game re-plays on its deal under the rules and writes back byte for
//! byte (`engine::gcg::replay_deal`), and its per-turn CSV rows are what the game gives; and
//! the tally is exactly what the logs say. Only the bots' thinking times cannot be checked;
//! they are bounded. Which bot chose the moves is not checked here (a replica by another
//! worker does that). A wintable batch's counts and a leave-table generation's leave counts
//! are made from its games, so all of its games are re-played and the counts made again.
//!
//! This runs before the upload's transaction, on the blocking pool, with the rules (lexicon,
//! distribution, layout) loaded once per coordinator and experiment artifacts.
//!
//! # Design notes
//!
//! a match upload held to its batch before its transaction: the logs are exactly the batch's games,
//! the sampled ones (`--verify-fraction`) re-play on their seeded deals and write back byte for
//! byte (`engine::gcg::replay_deal`), and the tally is what the logs say
//! (`engine::gcg::summarize`); the rules are loaded once per artifact set (`RulesCache`).

use crate::error::{Error, Result};
use engine::board::Layout;
use engine::game::Game;
use engine::gcg::CSV_HEADER;
use engine::leavegen::Samples;
use engine::leaves::Klv;
use engine::lexicon::Kwg;
use engine::movegen::Ctx;
use engine::record::{GameRecord, Outcome};
use engine::tiles::Distribution;
use engine::winpct::WinSamples;
use shared::kinds::leaves::LeaveCounts;
use shared::kinds::wintable::{WINTABLE_BOT, WinCounts};
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

/// The match batch an upload claims to be, or a selfplay batch (`paired` false: game `i` on
/// deal `i`, the first bot moving first in even games).
pub struct MatchBatch {
    pub batch: uuid::Uuid,
    pub seed: u64,
    pub first_pair: u64,
    pub pairs: u64,
    pub bots: [String; 2],
    pub paired: bool,
}

/// Whether game `id` of `batch` is re-played: a fixed choice from the batch and game, so a
/// worker cannot know it in advance of the batch and a retry is checked the same way.
fn sampled(batch: uuid::Uuid, id: u64, fraction: f64) -> bool {
    let (a, b) = batch.as_u64_pair();
    (engine::rng::derive(a ^ b, id) % 1_000_000) < (fraction * 1_000_000.0).round() as u64
}

/// Check a match upload's logs and tally against its batch; the error says what is wrong,
/// naming the game.
pub fn check_match(
    rules: &Rules,
    b: &MatchBatch,
    logs: &Texts,
    tally: &MatchTally,
    fraction: f64,
) -> std::result::Result<(), String> {
    let games = games_of(logs, b.first_pair, b.pairs)?;
    let mut outcomes = Vec::with_capacity(games.len());
    let mut rows = Vec::with_capacity(games.len());
    for (id, text) in games {
        let source = format!("game {id}");
        // Leg 0 of a pair (an even game, unpaired) seats the first bot first.
        let seat_bot = if id % 2 == 0 { [0, 1] } else { [1, 0] };
        let names = [b.bots[0].as_str(), b.bots[1].as_str()];
        let replayed = if sampled(b.batch, id, fraction) {
            let seats = [names[seat_bot[0]], names[seat_bot[1]]];
            let deal = engine::autoplay::deal_seed(b.seed, if b.paired { id / 2 } else { id });
            Some(replay(rules, text, deal, seats, &source)?)
        } else {
            None
        };
        let s = engine::gcg::summarize(text, &source).map_err(|e| gcg_err(e.to_string()))?;
        let turns = (s.turns[0] + s.turns[1]) as usize;
        rows.push(Rows { id, turns, want: replayed.map(|g| csv_of(rules, id, seat_bot, g, names)) });
        outcomes.push(Outcome { id, seat_bot, scores: s.scores, bingos: s.bingos, turns: s.turns, micros: [0; 2] });
    }
    check_csv(&logs.csv, &rows)?;
    let mut logged = MatchTally::from_games(&outcomes, b.paired);
    if tally.micros.iter().any(|&m| m > logged.games.saturating_mul(MAX_MICROS_PER_GAME)) {
        return Err(format!("result.micros: {:?} is more than an hour a game", tally.micros));
    }
    logged.micros = tally.micros;
    if logged != *tally {
        // Not what the logs give: a forger is not told the answer to copy.
        return Err("result: the tally is not what the logs say".into());
    }
    Ok(())
}

/// A batch of static-vs-static self-play an upload claims to be (a wintable's, or a leave-table
/// generation's): games `2 * first_pair .. 2 * (first_pair + pairs)`, game `i` on deal `i`
/// (each deal played once), both seats named `static`.
pub struct StaticSelfPlay {
    pub seed: u64,
    pub first_pair: u64,
    pub pairs: u64,
}

impl StaticSelfPlay {
    /// Re-play every game of the batch from its log (whatever the sampled fraction: what is
    /// counted from the games must be made again), check the CSV rows against them, and hand
    /// each game to `count`. Returns the number of games.
    fn replay_all(
        &self,
        rules: &Rules,
        logs: &Texts,
        mut count: impl FnMut(&Game),
    ) -> std::result::Result<u64, String> {
        let games = games_of(logs, self.first_pair, self.pairs)?;
        let mut rows = Vec::with_capacity(games.len());
        for (id, text) in games {
            let names = [WINTABLE_BOT; 2];
            let deal = engine::autoplay::deal_seed(self.seed, id);
            let game = replay(rules, text, deal, names, &format!("game {id}"))?;
            count(&game);
            rows.push(Rows { id, turns: game.history.len(), want: Some(csv_of(rules, id, [0, 1], game, names)) });
        }
        check_csv(&logs.csv, &rows)?;
        Ok(rows.len() as u64)
    }
}

/// Check a wintable upload: its counts must be exactly what its games' positions give.
pub fn check_wintable(
    rules: &Rules,
    b: &StaticSelfPlay,
    logs: &Texts,
    counts: &WinCounts,
) -> std::result::Result<(), String> {
    let mut samples = WinSamples::new(&rules.dist);
    let games = b.replay_all(rules, logs, |game| samples.add_game(game))?;
    if counts.games != games || counts.counts != samples.to_counts() {
        return Err("result.counts: not the counts of the logged games' positions".into());
    }
    Ok(())
}

/// Check a leave-table generation's upload: its leave counts must be exactly what its games'
/// kept leaves give, valued with `table` (the one the games were played with) as the fit's
/// one-step target takes them.
pub fn check_leaves(
    rules: &Rules,
    b: &StaticSelfPlay,
    table: Option<&Klv>,
    logs: &Texts,
    counts: &LeaveCounts,
) -> std::result::Result<(), String> {
    let mut samples = Samples::new(&rules.dist);
    let games = b.replay_all(rules, logs, |game| {
        let rec = GameRecord { id: 0, deal_seed: 0, seat_bot: [0, 1], game: game.clone(), micros: [0; 2] };
        samples.add_game(&rec, table, &rules.dist)
    })?;
    if counts.games != games || counts.leaves != samples.to_counts() {
        return Err("result.leaves: not the counts of the logged games' kept leaves".into());
    }
    Ok(())
}

/// An upload's logs, inflated.
pub struct Texts {
    pub gcg: String,
    pub csv: String,
}

fn gcg_err(e: String) -> String {
    format!("logs.gcg_gz: {e}")
}

/// The logged games, which must be exactly the batch's, once each and in order.
fn games_of(logs: &Texts, first_pair: u64, pairs: u64) -> std::result::Result<Vec<(u64, &str)>, String> {
    let games = split_gcg_bundle(&logs.gcg).map_err(gcg_err)?;
    let want = 2 * first_pair..2 * (first_pair + pairs);
    if games.len() as u64 != want.end - want.start || games.iter().zip(want.clone()).any(|((id, _), w)| *id != w) {
        let ids: Vec<u64> = games.iter().map(|g| g.0).take(20).collect();
        return Err(gcg_err(format!("the batch's games are {want:?}, in order; the log has {ids:?}")));
    }
    Ok(games)
}

fn replay(rules: &Rules, text: &str, deal: u64, seats: [&str; 2], source: &str) -> std::result::Result<Game, String> {
    engine::gcg::replay_deal(text, rules.ctx(), deal, seats, source).map_err(|e| gcg_err(e.to_string()))
}

/// The CSV rows a re-played game gives (with the equity the replay cannot know).
fn csv_of(rules: &Rules, id: u64, seat_bot: [usize; 2], game: Game, names: [&str; 2]) -> String {
    let rec = GameRecord { id, deal_seed: 0, seat_bot, game, micros: [0; 2] };
    engine::gcg::write_csv(&rec, names, &rules.dist)
}

/// One game's part of the per-turn CSV: how many rows, and for a re-played game what they are.
struct Rows {
    id: u64,
    turns: usize,
    want: Option<String>,
}

/// The per-turn CSV must be the header and then each game's rows, in the games' order. A
/// re-played game's rows must be exactly what its game gives but for the equity column (the
/// bot's own estimate: a replica checks it, since it is part of the digest); other games' rows
/// must at least carry their game and turn numbers.
fn check_csv(csv: &str, games: &[Rows]) -> std::result::Result<(), String> {
    let err = |line: usize, m: String| format!("logs.csv_gz: line {line}: {m}");
    let mut lines = csv.lines().enumerate().map(|(i, l)| (i + 1, l));
    match lines.next() {
        Some((_, h)) if h == CSV_HEADER => {}
        _ => return Err(err(1, format!("the header is `{CSV_HEADER}`"))),
    }
    // Equity and the bag size are the last two fields: a bot's name may hold commas.
    let split = |row: &str| -> Option<(String, f64)> {
        let (head, bag) = row.rsplit_once(',')?;
        let (head, equity) = head.rsplit_once(',')?;
        Some((format!("{head},{bag}"), equity.parse::<f64>().ok().filter(|e| e.is_finite())?))
    };
    for g in games {
        let mut want = g.want.as_deref().map(str::lines);
        for turn in 1..=g.turns {
            let Some((n, row)) = lines.next() else {
                return Err(err(csv.lines().count() + 1, format!("game {} has no row for turn {turn}", g.id)));
            };
            if !row.starts_with(&format!("{},{turn},", g.id)) {
                return Err(err(n, format!("expected game {}'s turn {turn}", g.id)));
            }
            let (got, _) = split(row).ok_or_else(|| err(n, "the equity is not a number".into()))?;
            if let Some(w) = want.as_mut().and_then(Iterator::next)
                && split(w).map(|(w, _)| w) != Some(got)
            {
                return Err(err(n, format!("the game gives `{w}` (equity aside)")));
            }
        }
    }
    if let Some((n, _)) = lines.next() {
        return Err(err(n, "a row after the last game's".into()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use engine::bots::BotSpec;
    use shared::protocol::GAME_MARKER;

    fn rules() -> Rules {
        let lexica = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../lexica");
        let dist = Distribution::load(&lexica.join("english.dist")).unwrap();
        Rules {
            kwg: engine::lexicon::load_lexicon(&lexica.join("enable.txt"), &dist).unwrap(),
            layout: Layout::load(&lexica.join("standard15.layout")).unwrap(),
            dist,
        }
    }

    /// Wintable batch `b`'s logs and counts as an honest volunteer makes them.
    fn honest(rules: &Rules, b: &StaticSelfPlay) -> (Texts, WinCounts) {
        let mut bots = [BotSpec::STATIC.build(None, None).unwrap(), BotSpec::STATIC.build(None, None).unwrap()];
        let mut mg = engine::movegen::Generator::new();
        let mut samples = WinSamples::new(&rules.dist);
        let mut logs = Texts { gcg: String::new(), csv: format!("{CSV_HEADER}\n") };
        for i in 2 * b.first_pair..2 * (b.first_pair + b.pairs) {
            let rec = engine::autoplay::play_leg(rules.ctx(), &mut bots, b.seed, i, (i % 2) as usize, &mut mg);
            let rec = GameRecord { id: i, seat_bot: [0, 1], ..rec };
            samples.add_game(&rec.game);
            logs.gcg +=
                &format!("{GAME_MARKER}{i}\n{}", engine::gcg::write_gcg(&rec.game, [WINTABLE_BOT; 2], &rules.dist));
            logs.csv += &engine::gcg::write_csv(&rec, [WINTABLE_BOT; 2], &rules.dist);
        }
        (logs, WinCounts { games: 2 * b.pairs, counts: samples.to_counts() })
    }

    #[test]
    fn a_leave_table_generations_upload_is_held_to_its_games_and_its_table() {
        let rules = rules();
        let b = StaticSelfPlay { seed: 11, first_pair: 0, pairs: 2 };
        let (logs, _) = honest(&rules, &b);
        let counts_with = |table: Option<&Klv>| {
            let mut samples = Samples::new(&rules.dist);
            for (id, text) in split_gcg_bundle(&logs.gcg).unwrap() {
                let deal = engine::autoplay::deal_seed(b.seed, id);
                let game = engine::gcg::replay_deal(text, rules.ctx(), deal, [WINTABLE_BOT; 2], "game").unwrap();
                let rec = GameRecord { id: 0, deal_seed: 0, seat_bot: [0, 1], game, micros: [0; 2] };
                samples.add_game(&rec, table, &rules.dist);
            }
            LeaveCounts { games: 4, leaves: samples.to_counts() }
        };
        let honest = counts_with(None);
        check_leaves(&rules, &b, None, &logs, &honest).unwrap();

        let mut more = honest.clone();
        more.leaves[0].2 += 1000;
        assert!(check_leaves(&rules, &b, None, &logs, &more).unwrap_err().starts_with("result.leaves"));
        // Counted with another table than the batch's: the carried values differ.
        let table = Klv::load(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../lexica/enable.klv2")).unwrap();
        let e = check_leaves(&rules, &b, Some(&table), &logs, &honest).unwrap_err();
        assert!(e.starts_with("result.leaves"), "{e}");
        check_leaves(&rules, &b, Some(&table), &logs, &counts_with(Some(&table))).unwrap();
        let other = StaticSelfPlay { seed: 12, ..b };
        assert!(check_leaves(&rules, &other, None, &logs, &honest).unwrap_err().starts_with("logs.gcg_gz: game 0:"));
    }

    #[test]
    fn a_wintable_upload_is_held_to_its_games() {
        let rules = rules();
        let b = StaticSelfPlay { seed: 7, first_pair: 1, pairs: 1 };
        let (logs, counts) = honest(&rules, &b);
        check_wintable(&rules, &b, &logs, &counts).unwrap();

        let mut more = counts.clone();
        more.counts[0].3 += 1;
        assert!(check_wintable(&rules, &b, &logs, &more).unwrap_err().starts_with("result.counts"));

        let other = StaticSelfPlay { seed: 8, ..b };
        let e = check_wintable(&rules, &other, &logs, &counts).unwrap_err();
        assert!(e.starts_with("logs.gcg_gz: game 2:"), "{e}");

        // A row's score changed is caught; its equity changed is not (a replica's digest is).
        let row = logs.csv.lines().nth(3).unwrap();
        let f: Vec<&str> = row.split(',').collect();
        let bent = |i: usize, v: &str| {
            let mut f = f.clone();
            f[i] = v;
            Texts { gcg: logs.gcg.clone(), csv: logs.csv.replace(row, &f.join(",")) }
        };
        let e = check_wintable(&rules, &b, &bent(5, "999"), &counts).unwrap_err();
        assert!(e.starts_with("logs.csv_gz: line 4:"), "{e}");
        check_wintable(&rules, &b, &bent(9, "12.345"), &counts).unwrap();
        let e = check_wintable(&rules, &b, &bent(9, "NaN"), &counts).unwrap_err();
        assert!(e.contains("equity"), "{e}");
        let short = Texts { gcg: logs.gcg.clone(), csv: logs.csv.replace(&format!("{row}\n"), "") };
        assert!(check_wintable(&rules, &b, &short, &counts).is_err());
    }
}
