//! Who is believed. Accounts are free, so trust is never counted in owners: the operator names
//! trusted owners (`coordinator owner trust NAME`: its own machines), and an owner earns trust
//! only by many batches that a trusted worker's replica matched, spread over experiments and
//! time. An owner a trusted worker finds wrong loses earned trust for good.
//!
//! Owners registered from one network (/24 for IPv4, /64 for IPv6) or in one burst of
//! registrations form one **group**, and every "different owner" rule (a replica, a re-solve,
//! the failures that park a batch) is a "different group" rule.
//!
//! Invariants:
//! - An untrusted owner's result counts only once a trusted worker of another group
//!   reproduced it; untrusted owners never validate one another and never outvote a trusted
//!   worker.
//! - An untrusted owner holds at most `untrusted_leases` leases across all its workers.

use crate::error::{Error, Result};
use sqlx::{PgConnection, Postgres, Transaction};
use std::net::IpAddr;
use uuid::Uuid;

/// How trust is given and earned (`coordinator serve`'s flags).
#[derive(Clone, Copy, Debug)]
pub struct Policy {
    /// Every owner registered is trusted by the operator from the start: a coordinator of
    /// one's own machines.
    pub every_owner: bool,
    /// Batches an owner's workers uploaded that trusted replicas matched, before it is trusted.
    pub earn_batches: u64,
    /// ... in at least this many experiments,
    pub earn_experiments: u64,
    /// ... the first and the last at least this many hours apart.
    pub earn_hours: f64,
    /// Leases an untrusted owner holds at once, across all its workers.
    pub untrusted_leases: u32,
    /// Seconds after an untrusted group's first registration during which any new owner joins
    /// it, from whatever network: a burst of registrations is one person as far as the rules go.
    pub burst_secs: f64,
}

/// How an owner is trusted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trust {
    /// Named by the operator (or registered under `--trust-every-owner`): never spot-checked.
    Operator,
    /// Earned against trusted replicas: spot-checked (`--spot-check`).
    Earned,
}

/// A worker's owner as the queue and the judges see it.
#[derive(Clone, Copy, Debug)]
pub struct Standing {
    pub owner: Uuid,
    pub group: Uuid,
    pub trust: Option<Trust>,
    /// A trusted worker found the owner wrong, and no operator trusts it: it gets no work.
    pub distrusted: bool,
}

impl Standing {
    pub fn trusted(&self) -> bool {
        self.trust.is_some()
    }
}

/// The standing of `worker`'s owner now.
pub async fn standing(db: &mut PgConnection, worker: Uuid) -> Result<Standing> {
    let (owner, group, trusted, distrusted): (Uuid, Uuid, Option<String>, bool) = sqlx::query_as(
        "SELECT o.id, o.grp, o.trusted, o.distrusted_at IS NOT NULL FROM workers w JOIN owners o ON o.id = w.owner_id WHERE w.id = $1",
    )
    .bind(worker)
    .fetch_one(db)
    .await?;
    let trust = match trusted.as_deref() {
        Some("operator") => Some(Trust::Operator),
        Some(_) => Some(Trust::Earned),
        None => None,
    };
    Ok(Standing { owner, group, trust, distrusted: distrusted && trust.is_none() })
}

/// The network an address belongs to for every "different owner" rule: its /24 (IPv4) or
/// /64 (IPv6). An IPv4-mapped IPv6 address is its IPv4 one.
pub fn network(addr: IpAddr) -> String {
    match addr {
        IpAddr::V4(a) => {
            let [x, y, z, _] = a.octets();
            format!("{x}.{y}.{z}.0/24")
        }
        IpAddr::V6(a) => match a.to_ipv4_mapped() {
            Some(v4) => network(IpAddr::V4(v4)),
            None => {
                let s = a.segments();
                format!("{:x}:{:x}:{:x}:{:x}::/64", s[0], s[1], s[2], s[3])
            }
        },
    }
}

/// The group a new untrusted owner from `network` joins: the group of an earlier untrusted
/// owner of that network, else of an untrusted group first registered less than `burst_secs`
/// ago, else a new one (`own`). Trusted owners are groups of their own: the operator vouched
/// for each (`set_by_operator`). The caller holds `REGISTRATION_LOCK`, so that two
/// registrations at once see each other.
pub async fn group_for(
    tx: &mut Transaction<'_, Postgres>,
    network: Option<&str>,
    own: Uuid,
    burst_secs: f64,
) -> Result<Uuid> {
    let row: Option<(Uuid,)> = sqlx::query_as(
        "SELECT grp FROM (
             (SELECT grp, 0 AS rank FROM owners WHERE network = $1 AND trusted IS NULL ORDER BY created_at LIMIT 1)
             UNION ALL
             (SELECT o.grp, 1 FROM owners o WHERE o.created_at > now() - make_interval(secs => $2)
                AND o.id = o.grp AND o.trusted IS NULL ORDER BY o.created_at LIMIT 1)
         ) g ORDER BY rank LIMIT 1",
    )
    .bind(network)
    .bind(burst_secs)
    .fetch_optional(&mut **tx)
    .await?;
    Ok(row.map_or(own, |r| r.0))
}

/// The advisory lock every owner registration takes: registrations are rare, and one at a
/// time makes the per-network limit and the burst groups exact.
pub const REGISTRATION_LOCK: i64 = 0x6c65_7868_6976_6501;

/// Promote to earned trust those of `owners` whose confirmed results meet `policy` (called
/// after their results were confirmed, in the same transaction). Returns the names promoted.
pub async fn earn(tx: &mut Transaction<'_, Postgres>, owners: &[Uuid], policy: Policy) -> Result<Vec<String>> {
    if owners.is_empty() {
        return Ok(Vec::new());
    }
    let promoted: Vec<(String,)> = sqlx::query_as(
        "UPDATE owners o SET trusted = 'earned', trusted_at = now()
         FROM (SELECT r.owner_id, count(*) AS n, count(DISTINCT r.experiment_id) AS experiments,
                      extract(epoch FROM max(r.received_at) - min(r.received_at)) / 3600 AS hours
               FROM batch_results r WHERE r.owner_id = ANY ($1) AND r.state = 'valid' AND r.confirmed
               GROUP BY r.owner_id) c
         WHERE o.id = c.owner_id AND o.trusted IS NULL AND o.distrusted_at IS NULL AND o.banned_at IS NULL
           AND c.n >= $2 AND c.experiments >= $3 AND c.hours >= $4
         RETURNING o.name",
    )
    .bind(owners)
    .bind(policy.earn_batches.min(i64::MAX as u64) as i64)
    .bind(policy.earn_experiments.min(i64::MAX as u64) as i64)
    .bind(policy.earn_hours)
    .fetch_all(&mut **tx)
    .await?;
    for (name,) in &promoted {
        tracing::info!(owner = %name, "owner earned trust");
    }
    Ok(promoted.into_iter().map(|r| r.0).collect())
}

/// An owner a trusted worker found wrong: earned trust is gone and is never earned again by
/// itself, and the owner gets no more work (`standing`) nor new workers (`owners::by_token`).
/// The operator's trust stays: the operator decides about its own machines. Returns the
/// owner's other workers not yet quarantined when it was not operator-trusted: what they did
/// is no more believable than what was found wrong.
pub async fn distrust(tx: &mut Transaction<'_, Postgres>, owner: Uuid, reason: &str) -> Result<Vec<Uuid>> {
    let (operator,): (bool,) = sqlx::query_as(
        "UPDATE owners SET trusted = CASE WHEN trusted = 'operator' THEN trusted END,
                distrusted_at = coalesce(distrusted_at, now()), distrust_reason = coalesce(distrust_reason, $2)
         WHERE id = $1 RETURNING trusted IS NOT NULL",
    )
    .bind(owner)
    .bind(reason)
    .fetch_one(&mut **tx)
    .await?;
    if operator {
        return Ok(Vec::new());
    }
    let workers: Vec<(Uuid,)> =
        sqlx::query_as("SELECT id FROM workers WHERE owner_id = $1 AND quarantined_at IS NULL ORDER BY id")
            .bind(owner)
            .fetch_all(&mut **tx)
            .await?;
    Ok(workers.into_iter().map(|w| w.0).collect())
}

/// `coordinator owner trust NAME` (or `untrust`): the operator's word on an owner. Trusting
/// clears any earlier distrust and makes the owner a group of its own (the operator vouched
/// for it, whatever network it shares).
pub async fn set_by_operator(db: &sqlx::PgPool, name: &str, trusted: bool) -> Result<Uuid> {
    let row: Option<(Uuid,)> = sqlx::query_as(
        "UPDATE owners SET trusted = CASE WHEN $2 THEN 'operator' END, trusted_at = CASE WHEN $2 THEN now() END,
                grp = CASE WHEN $2 THEN id ELSE grp END,
                distrusted_at = CASE WHEN $2 THEN NULL ELSE distrusted_at END,
                distrust_reason = CASE WHEN $2 THEN NULL ELSE distrust_reason END
         WHERE lower(name) = lower($1) RETURNING id",
    )
    .bind(name)
    .bind(trusted)
    .fetch_optional(db)
    .await?;
    row.map(|r| r.0).ok_or_else(|| Error::not_found(format!("no owner named `{name}` (`coordinator owner list`)")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn networks_are_slash_24s_and_slash_64s() {
        let n = |s: &str| network(s.parse().unwrap());
        assert_eq!(n("203.0.113.7"), "203.0.113.0/24");
        assert_eq!(n("203.0.113.250"), n("203.0.113.1"));
        assert_ne!(n("203.0.114.1"), n("203.0.113.1"));
        assert_eq!(n("2001:db8:1:2:aaaa::1"), "2001:db8:1:2::/64");
        assert_eq!(n("2001:db8:1:2:ffff::9"), n("2001:db8:1:2::1"));
        assert_ne!(n("2001:db8:1:3::1"), n("2001:db8:1:2::1"));
        assert_eq!(n("::ffff:203.0.113.9"), "203.0.113.0/24");
    }
}
