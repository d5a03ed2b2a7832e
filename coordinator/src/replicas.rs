//! Validation by deterministic replication. A match or win-table batch is a pure function of
//! its seed, deals, bots and artifacts, so two honest workers upload byte-identical logs: a
//! replica by another owner proves a result, and a third settles a disagreement by majority.
//!
//! This module holds the rules as pure functions; `results.rs` applies them in the upload's
//! transaction and `quarantine.rs` undoes what a worker found wrong contributed.
//!
//! # Design notes
//!
//! validation by deterministic replication as pure rules: a result's `digest` (logs and every
//! deterministic field), `judge` (two owners agreeing validate; a trusted worker's lone result
//! stands; five without agreement park), `wants_replica` (`--replicate-until`, `--spot-check`).

use shared::protocol::JobResult;
use uuid::Uuid;

/// Most results one batch may collect without two owners agreeing; then it is parked for an
/// operator to look at.
pub const MAX_RESULTS: usize = 5;

/// What a replica must reproduce: the logs (the GCG and the per-turn CSV, whose equity column
/// the coordinator cannot re-play) and every deterministic field of the result (not the
/// thinking times, which differ from machine to machine).
/// `result` is what of it a replica must reproduce (`kinds::replicable`).
pub fn digest(result: &JobResult, gcg_sha256: &str, csv_sha256: &str) -> String {
    let canonical = serde_json::to_string(result).expect("results serialise");
    crate::artifacts::sha256_hex(format!("{gcg_sha256}\n{csv_sha256}\n{canonical}").as_bytes())
}

/// One result of a batch, as the judge sees it.
#[derive(Clone, Debug)]
pub struct Claim<'a> {
    pub owner: Uuid,
    pub digest: &'a str,
}

/// What a batch's results, weighed together, say.
#[derive(Debug, PartialEq, Eq)]
pub enum Judgement<'a> {
    /// This digest is the batch's result: two owners reached it, or a trusted worker's single
    /// result is taken without a replica. Results with any other digest are wrong.
    Valid(&'a str),
    /// Another owner's replica is needed (none yet, or no majority).
    Wanted,
    /// `MAX_RESULTS` results and no two owners agree.
    Unsettled,
}

/// Weigh a batch's live results (pending or valid, in arrival order). `alone` says whether a
/// single result may stand without a replica (a trusted worker not drawn for a spot check).
pub fn judge<'a>(claims: &[Claim<'a>], alone: bool) -> Judgement<'a> {
    let agreed = claims.iter().find(|c| claims.iter().any(|o| o.owner != c.owner && o.digest == c.digest));
    if let Some(c) = agreed {
        return Judgement::Valid(c.digest);
    }
    match claims {
        [only] if alone => Judgement::Valid(only.digest),
        _ if claims.len() >= MAX_RESULTS => Judgement::Unsettled,
        _ => Judgement::Wanted,
    }
}

/// Whether a worker's batch is replicated: always until it has `validated` batches confirmed
/// by other owners (`replicate_until` of them), then a `spot_check` share drawn at random.
pub fn wants_replica(validated: i64, replicate_until: u64, spot_check: f64) -> bool {
    validated < replicate_until as i64 || rand::random::<f64>() < spot_check
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claims<'a>(v: &[(u128, &'a str)]) -> Vec<Claim<'a>> {
        v.iter().map(|&(o, d)| Claim { owner: Uuid::from_u128(o), digest: d }).collect()
    }

    #[test]
    fn two_owners_agreeing_validate_and_a_third_settles_a_disagreement() {
        assert_eq!(judge(&claims(&[(1, "x")]), false), Judgement::Wanted);
        assert_eq!(judge(&claims(&[(1, "x")]), true), Judgement::Valid("x"));
        assert_eq!(judge(&claims(&[(1, "x"), (2, "x")]), false), Judgement::Valid("x"));
        // A liar first: the replica disagrees, a third owner sides with the replica.
        assert_eq!(judge(&claims(&[(1, "lie"), (2, "x")]), true), Judgement::Wanted);
        assert_eq!(judge(&claims(&[(1, "lie"), (2, "x"), (3, "x")]), false), Judgement::Valid("x"));
        // The liar's side can win too when it is the majority: the rule is agreement.
        assert_eq!(judge(&claims(&[(1, "x"), (2, "lie"), (3, "x")]), false), Judgement::Valid("x"));
    }

    #[test]
    fn one_owner_cannot_validate_itself_and_disputes_end() {
        // Two workers of one owner agreeing prove nothing.
        assert_eq!(judge(&claims(&[(1, "lie"), (1, "lie")]), false), Judgement::Wanted);
        assert_eq!(judge(&claims(&[(1, "lie"), (1, "lie"), (2, "x")]), false), Judgement::Wanted);
        let five = claims(&[(1, "a"), (2, "b"), (3, "c"), (4, "d"), (5, "e")]);
        assert_eq!(judge(&five, false), Judgement::Unsettled);
    }

    #[test]
    fn replicas_until_trusted_then_spot_checks() {
        assert!(wants_replica(0, 10, 0.0));
        assert!(wants_replica(9, 10, 0.0));
        assert!(!wants_replica(10, 10, 0.0));
        assert!(wants_replica(10, 10, 1.0));
        assert!(!wants_replica(0, 0, 0.0), "replicate_until 0 trusts every worker");
    }

    #[test]
    fn digests_ignore_thinking_time_and_nothing_else() {
        let t = shared::stats::MatchTally { games: 2, wins: 1, losses: 1, ..Default::default() };
        let mut slow = t;
        slow.micros = [5, 7];
        let mut other = t;
        other.wins = 2;
        other.losses = 0;
        let replicable = |t| crate::kinds::replicable(&JobResult::Match(t));
        let d = |t| digest(&replicable(t), "abc", "csv");
        assert_eq!(d(t), d(slow));
        assert_ne!(d(t), d(other));
        assert_ne!(d(t), digest(&replicable(t), "abd", "csv"));
        assert_ne!(d(t), digest(&replicable(t), "abc", "csw"));
    }
}
