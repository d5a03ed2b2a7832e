//! Validation by deterministic replication. A match or win-table batch is a pure function of
//! its seed, deals, bots and artifacts, so two honest workers upload byte-identical logs: one
//! trusted worker's replica settles a result exactly (`trust`).
//!
//! This module holds the rules as pure functions; `results.rs` applies them in the upload's
//! transaction and `quarantine.rs` undoes what a worker found wrong contributed.
//!
//! # Design notes
//!
//! validation by deterministic replication as pure rules: a result's `digest` (logs and every
//! deterministic field), `judge` (only trusted results decide: two trusted groups agreeing, or a
//! trusted result not drawn for a spot check; untrusted results are right or wrong by them; five
//! without a decision park), `spot_checked` (`--spot-check`).

use shared::protocol::JobResult;
use uuid::Uuid;

/// Most results one batch may collect without a decision; then it is parked for an operator
/// to look at.
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
    /// Its owner's group (`trust`): results of one group never confirm each other.
    pub group: Uuid,
    /// Its owner is trusted.
    pub trusted: bool,
    /// It stands without a replica: a trusted worker's result not drawn for a spot check.
    pub alone: bool,
    pub digest: &'a str,
}

/// What a batch's results, weighed together, say.
#[derive(Debug, PartialEq, Eq)]
pub enum Judgement<'a> {
    /// This digest is the batch's result: trusted workers of two groups reached it, or a
    /// trusted result stands alone and no trusted result contradicts it. Results with any
    /// other digest are wrong.
    Valid(&'a str),
    /// A trusted worker's replica is needed (none yet, a spot check, or trusted results that
    /// disagree with no majority).
    Wanted,
    /// `MAX_RESULTS` results and no decision.
    Unsettled,
}

/// Weigh a batch's live results (pending or valid, in arrival order). Untrusted results never
/// decide anything: however many groups agree on one, it waits for a trusted replica.
pub fn judge<'a>(claims: &[Claim<'a>]) -> Judgement<'a> {
    let trusted: Vec<&Claim> = claims.iter().filter(|c| c.trusted).collect();
    let agreed = trusted.iter().find(|c| trusted.iter().any(|o| o.group != c.group && o.digest == c.digest));
    if let Some(c) = agreed {
        return Judgement::Valid(c.digest);
    }
    let mut digests: Vec<&str> = trusted.iter().map(|c| c.digest).collect();
    digests.sort_unstable();
    digests.dedup();
    match (digests.as_slice(), trusted.iter().any(|c| c.alone)) {
        ([only], true) => Judgement::Valid(only),
        _ if claims.len() >= MAX_RESULTS => Judgement::Unsettled,
        _ => Judgement::Wanted,
    }
}

/// Whether a trusted result is drawn for a spot check (`--spot-check`), at random after the
/// upload, so that a worker cannot know which of its batches are checked. The operator's own
/// machines are not checked: only another trusted group could, and there may be none.
pub fn spot_checked(trust: crate::trust::Trust, spot_check: f64) -> bool {
    trust == crate::trust::Trust::Earned && rand::random::<f64>() < spot_check
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Claims of (group, trusted, alone, digest).
    fn claims<'a>(v: &[(u128, bool, bool, &'a str)]) -> Vec<Claim<'a>> {
        v.iter()
            .map(|&(g, trusted, alone, digest)| Claim { group: Uuid::from_u128(g), trusted, alone, digest })
            .collect()
    }

    #[test]
    fn trusted_results_decide_and_untrusted_ones_never_do() {
        use Judgement::*;
        // An untrusted result waits for a trusted replica, whatever agrees with it.
        assert_eq!(judge(&claims(&[(1, false, false, "x")])), Wanted);
        assert_eq!(judge(&claims(&[(1, false, false, "lie"), (2, false, false, "lie")])), Wanted);
        let sybils = claims(&[(1, false, false, "lie"), (2, false, false, "lie"), (3, false, false, "lie")]);
        assert_eq!(judge(&sybils), Wanted, "three untrusted groups prove nothing");
        // A trusted replica settles it either way.
        assert_eq!(judge(&claims(&[(1, false, false, "x"), (2, true, true, "x")])), Valid("x"));
        assert_eq!(
            judge(&claims(&[(1, false, false, "lie"), (2, false, false, "lie"), (3, true, true, "x")])),
            Valid("x")
        );
        // A trusted result stands alone unless drawn for a spot check.
        assert_eq!(judge(&claims(&[(1, true, true, "x")])), Valid("x"));
        assert_eq!(judge(&claims(&[(1, true, false, "x")])), Wanted);
        assert_eq!(
            judge(&claims(&[(1, true, false, "x"), (2, false, false, "x")])),
            Wanted,
            "untrusted cannot confirm"
        );
        assert_eq!(judge(&claims(&[(1, true, false, "x"), (2, true, false, "x")])), Valid("x"));
    }

    #[test]
    fn trusted_disagreements_go_to_a_third_trusted_group() {
        use Judgement::*;
        assert_eq!(judge(&claims(&[(1, true, true, "lie"), (2, true, false, "x")])), Wanted);
        assert_eq!(judge(&claims(&[(1, true, true, "lie"), (2, true, false, "x"), (3, true, false, "x")])), Valid("x"));
        // One group agreeing with itself is no majority.
        assert_eq!(judge(&claims(&[(1, true, true, "lie"), (2, true, false, "x"), (1, true, false, "lie")])), Wanted);
        let five = claims(&[
            (1, true, false, "a"),
            (2, true, false, "b"),
            (3, true, false, "c"),
            (4, true, false, "d"),
            (5, false, false, "e"),
        ]);
        assert_eq!(judge(&five), Unsettled);
    }

    #[test]
    fn only_earned_trust_is_spot_checked() {
        use crate::trust::Trust;
        assert!(spot_checked(Trust::Earned, 1.0));
        assert!(!spot_checked(Trust::Earned, 0.0));
        assert!(!spot_checked(Trust::Operator, 1.0));
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
