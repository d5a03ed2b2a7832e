//! Owners: the people behind volunteers, and registration. An owner costs a proof of work
//! (`--registration-work`), a network (/24, /64) registers at most `--registrations-per-hour`
//! owners and workers (counted under one lock, so parallel requests cannot pass it together),
//! and names are normalised (NFKC), printable, and refused when they look like a name already
//! taken (Unicode's confusable skeleton). Trust is not here: `trust` says who is believed.
//!
//! # Design notes
//!
//! owner accounts (`POST /api/v1/owners`), open or invitation-only registration, per-network
//! limits and proof of work, names that read as they are, and the admin side (`coordinator owner
//! list|invite|ban|trust|untrust`, `coordinator worker list|revoke|quarantine`).

use crate::auth::{self, Role};
use crate::error::{Error, Result};
use crate::state::AppState;
use crate::trust;
use axum::Json;
use axum::extract::{FromRequestParts, State};
use axum::http::request::Parts;
use serde::Serialize;
use shared::protocol::{OwnerRequest, OwnerResponse};
use std::net::{IpAddr, SocketAddr};
use uuid::Uuid;

/// Longest owner or worker name, in characters.
pub const MAX_NAME: usize = 64;

/// Who may register.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Registration {
    /// Anyone (rate-limited per address).
    Open,
    /// Owners need an invitation code (`coordinator owner invite`); their workers register with
    /// the owner's token.
    Invite,
}

/// Whether a character may appear in a name: a space, ASCII, what Unicode allows in
/// identifiers (letters, digits, marks of living scripts: UTS 39), or punctuation. Refused:
/// controls, format characters (bidirectional overrides, zero widths, soft hyphens, tags),
/// other separators (U+2028, U+2029), fillers (U+3164) and other default-ignorables, private
/// use and unassigned code points, and symbols beyond ASCII.
fn printable(c: char) -> bool {
    use unicode_general_category::{GeneralCategory as G, get_general_category};
    use unicode_security::GeneralSecurityProfile;
    c == ' '
        || c.is_ascii_graphic()
        || GeneralSecurityProfile::identifier_allowed(c)
        || matches!(
            get_general_category(c),
            G::ConnectorPunctuation
                | G::DashPunctuation
                | G::OpenPunctuation
                | G::ClosePunctuation
                | G::InitialPunctuation
                | G::FinalPunctuation
                | G::OtherPunctuation
        )
}

fn is_mark(c: char) -> bool {
    use unicode_general_category::{GeneralCategory as G, get_general_category};
    matches!(get_general_category(c), G::NonspacingMark | G::SpacingMark | G::EnclosingMark)
}

/// Most combining marks on one letter.
const MAX_MARKS: usize = 3;

/// A display name as stored: NFKC-normalised and trimmed, 1 to `MAX_NAME` characters of
/// [`printable`] ones, no run of spaces, at most `MAX_MARKS` combining marks on a letter.
pub fn check_name(field: &str, name: &str) -> Result<String> {
    use unicode_normalization::UnicodeNormalization;
    let name: String = name.nfkc().collect::<String>().trim().to_string();
    let n = name.chars().count();
    if n == 0 || n > MAX_NAME {
        return Err(Error::unprocessable(format!("{field}: must be 1 to {MAX_NAME} characters")));
    }
    if let Some(c) = name.chars().find(|&c| !printable(c)) {
        return Err(Error::unprocessable(format!(
            "{field}: U+{:04X} is not a printable character (controls, formatting, separators, fillers and symbols beyond ASCII are refused); names must read as they are",
            c as u32
        )));
    }
    let mut marks = 0;
    for (i, c) in name.chars().enumerate() {
        marks = if is_mark(c) { marks + 1 } else { 0 };
        if marks > MAX_MARKS || (i == 0 && marks > 0) {
            return Err(Error::unprocessable(format!(
                "{field}: more than {MAX_MARKS} combining marks on one letter, or a mark with no letter"
            )));
        }
    }
    if name.contains("  ") {
        return Err(Error::unprocessable(format!("{field}: two spaces in a row")));
    }
    Ok(name)
}

/// What a name looks like, whatever its case: the UTS 39 skeleton of its skeleton's
/// lowercase (the first maps a capital I to l before lowercasing would make it an i). Names
/// with one skeleton are confusable ("аlice" in Cyrillic and "alice", "paypaI" and "paypal").
pub fn skeleton(name: &str) -> String {
    let first: String = unicode_security::skeleton(name).collect();
    unicode_security::skeleton(&first.to_lowercase()).collect()
}

/// The address a request came from, when the server knows it.
pub struct Peer(pub Option<IpAddr>);

impl<S: Send + Sync> FromRequestParts<S> for Peer {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> std::result::Result<Self, Self::Rejection> {
        Ok(Peer(parts.extensions.get::<axum::extract::ConnectInfo<SocketAddr>>().map(|c| c.0.ip())))
    }
}

/// What a registration must pass before anything is written: its proof of work (`what` of the
/// name as sent, `--registration-work` bits). Cheap, and checked before any database work.
pub fn check_work(st: &AppState, what: &str, name: &str, work: Option<u64>) -> Result<()> {
    let bits = st.cfg.registration_work;
    if bits > 0 && !work.is_some_and(|n| shared::work::verify(what, name, n, bits)) {
        return Err(Error::forbidden(format!(
            "work: this coordinator asks for {bits} bits of proof of work for a {what} registration (`shared::work`; `worker` does it); none or not enough was sent"
        )));
    }
    Ok(())
}

/// Take the registration lock (registrations go one at a time: they are rare, and the limit
/// per network and the burst groups must see every other one), then refuse a registration
/// from a network that made `limit` in the last hour (0: no limit).
pub async fn admit(tx: &mut sqlx::Transaction<'_, sqlx::Postgres>, network: Option<&str>, limit: u32) -> Result<()> {
    sqlx::query("SELECT pg_advisory_xact_lock($1)").bind(trust::REGISTRATION_LOCK).execute(&mut **tx).await?;
    let Some(net) = network.filter(|_| limit > 0) else { return Ok(()) };
    let (n,): (i64,) = sqlx::query_as(
        "SELECT (SELECT count(*) FROM owners WHERE network = $1 AND created_at > now() - interval '1 hour')
              + (SELECT count(*) FROM workers WHERE network = $1 AND created_at > now() - interval '1 hour')",
    )
    .bind(net)
    .fetch_one(&mut **tx)
    .await?;
    if n >= limit as i64 {
        return Err(Error::new(
            axum::http::StatusCode::TOO_MANY_REQUESTS,
            format!(
                "{n} registrations from network {net} in the last hour; at most {limit} are accepted: try again later"
            ),
        ));
    }
    Ok(())
}

/// Create an owner (the caller holds the registration lock: `admit`); its name must be free
/// and must not look like a taken one. It joins its network's or its burst's group, or is
/// trusted from the start under `--trust-every-owner` (a group of its own).
pub async fn create(
    tx: &mut sqlx::Transaction<'_, sqlx::Postgres>,
    name: &str,
    from: Option<IpAddr>,
    policy: trust::Policy,
) -> Result<Uuid> {
    let id = Uuid::new_v4();
    let network = from.map(trust::network);
    let trust_it = policy.every_owner;
    let group = if trust_it { id } else { trust::group_for(tx, network.as_deref(), id, policy.burst_secs).await? };
    let look = skeleton(name);
    let taken: Option<(String,)> =
        sqlx::query_as("SELECT name FROM owners WHERE lower(name) = lower($1) OR skeleton = $2")
            .bind(name)
            .bind(&look)
            .fetch_optional(&mut **tx)
            .await?;
    if let Some((other,)) = taken {
        return Err(Error::conflict(if other.to_lowercase() == name.to_lowercase() {
            format!("name: `{name}` is taken; choose another")
        } else {
            format!("name: `{name}` looks like `{other}`, which is taken; choose another")
        }));
    }
    sqlx::query(
        "INSERT INTO owners (id, name, created_from, network, grp, skeleton, trusted, trusted_at)
         VALUES ($1, $2, $3, $4, $5, $6, CASE WHEN $7 THEN 'operator' END, CASE WHEN $7 THEN now() END)",
    )
    .bind(id)
    .bind(name)
    .bind(from.map(|a| a.to_string()))
    .bind(&network)
    .bind(group)
    .bind(&look)
    .bind(trust_it)
    .execute(&mut **tx)
    .await?;
    Ok(id)
}

/// `POST /api/v1/owners`: create an owner account.
pub async fn register(
    State(st): State<AppState>,
    peer: Peer,
    Json(r): Json<OwnerRequest>,
) -> Result<Json<OwnerResponse>> {
    let name = check_name("name", &r.name)?;
    check_work(&st, "owner", &r.name, r.work)?;
    let mut tx = st.db.begin().await?;
    admit(&mut tx, peer.0.map(trust::network).as_deref(), st.cfg.registrations_per_hour).await?;
    let id = create(&mut tx, &name, peer.0, st.cfg.trust).await?;
    if st.cfg.registration == Registration::Invite {
        let code = r.invitation.as_deref().ok_or_else(|| {
            Error::forbidden("registration here is by invitation: ask the operator for a code (`invitation`)")
        })?;
        let used =
            sqlx::query("UPDATE invitations SET used_by = $2, used_at = now() WHERE hash = $1 AND used_by IS NULL")
                .bind(auth::hash(code))
                .bind(id)
                .execute(&mut *tx)
                .await?;
        if used.rows_affected() == 0 {
            return Err(Error::forbidden("invitation: unknown or already used"));
        }
    }
    let token = auth::new_token();
    sqlx::query("INSERT INTO tokens (hash, role, owner_id) VALUES ($1, $2, $3)")
        .bind(auth::hash(&token))
        .bind(Role::Owner.as_str())
        .bind(id)
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    tracing::info!(owner = %id, name, "owner registered");
    Ok(Json(OwnerResponse { owner_id: id, token }))
}

/// The owner an owner token belongs to, if it is one and the owner is neither banned nor found
/// wrong by a trusted worker (`trust::distrust`).
pub async fn by_token(db: impl sqlx::PgExecutor<'_>, token: &str) -> Result<Uuid> {
    let row: Option<(Uuid,)> = sqlx::query_as(
        "SELECT o.id FROM tokens t JOIN owners o ON o.id = t.owner_id WHERE t.hash = $1 AND t.role = 'owner' AND o.banned_at IS NULL
           AND (o.distrusted_at IS NULL OR o.trusted IS NOT NULL)",
    )
    .bind(auth::hash(token))
    .fetch_optional(db)
    .await?;
    row.map(|r| r.0).ok_or_else(|| Error::unauthorized("owner_token: unknown, revoked, banned, or found wrong"))
}

/// An owner as the admin command lists it.
#[derive(sqlx::FromRow, Serialize)]
pub struct OwnerRow {
    pub id: Uuid,
    pub name: String,
    /// `operator`, `earned`, or none.
    pub trusted: Option<String>,
    pub workers: i64,
    pub validated: i64,
    pub mismatches: i64,
    pub rejected: i64,
    pub quarantined: i64,
    pub banned: bool,
}

pub async fn list(db: &sqlx::PgPool) -> sqlx::Result<Vec<OwnerRow>> {
    sqlx::query_as(
        "SELECT o.id, o.name, o.trusted, count(w.id) AS workers, coalesce(sum(w.validated), 0)::bigint AS validated,
                coalesce(sum(w.mismatches), 0)::bigint AS mismatches, coalesce(sum(w.rejected), 0)::bigint AS rejected,
                count(w.quarantined_at) AS quarantined, o.banned_at IS NOT NULL AS banned
         FROM owners o LEFT JOIN workers w ON w.owner_id = o.id GROUP BY o.id ORDER BY o.created_at",
    )
    .fetch_all(db)
    .await
}

/// Ban an owner: revoke its token and its workers', quarantine the workers (withdrawing all
/// they contributed). Returns how many workers it had.
pub async fn ban(db: &sqlx::PgPool, name: &str, reason: &str) -> Result<usize> {
    let mut tx = db.begin().await?;
    let row: Option<(Uuid,)> = sqlx::query_as(
        "UPDATE owners SET banned_at = coalesce(banned_at, now()), ban_reason = $2 WHERE lower(name) = lower($1) RETURNING id",
    )
    .bind(name)
    .bind(reason)
    .fetch_optional(&mut *tx)
    .await?;
    let (owner,) =
        row.ok_or_else(|| Error::not_found(format!("no owner named `{name}` (`coordinator owner list`)")))?;
    let workers: Vec<(Uuid,)> =
        sqlx::query_as("SELECT id FROM workers WHERE owner_id = $1").bind(owner).fetch_all(&mut *tx).await?;
    for (w,) in &workers {
        crate::quarantine::quarantine(&mut tx, *w, &format!("its owner was banned: {reason}")).await?;
    }
    sqlx::query("DELETE FROM tokens WHERE owner_id = $1 OR worker_id IN (SELECT id FROM workers WHERE owner_id = $1)")
        .bind(owner)
        .execute(&mut *tx)
        .await?;
    tx.commit().await?;
    Ok(workers.len())
}

/// Quarantine one worker by hand (withdrawing all it contributed).
pub async fn quarantine_worker(db: &sqlx::PgPool, worker: Uuid, reason: &str) -> Result<()> {
    let mut tx = db.begin().await?;
    let (exists,): (bool,) =
        sqlx::query_as("SELECT EXISTS (SELECT 1 FROM workers WHERE id = $1)").bind(worker).fetch_one(&mut *tx).await?;
    if !exists {
        return Err(Error::not_found(format!("no worker {worker}")));
    }
    crate::quarantine::quarantine(&mut tx, worker, reason).await?;
    tx.commit().await?;
    Ok(())
}

/// Revoke a worker's token: it can no longer claim or upload (it may register afresh, as
/// anyone may where registration is open).
pub async fn revoke_worker(db: &sqlx::PgPool, worker: Uuid) -> Result<u64> {
    Ok(sqlx::query("DELETE FROM tokens WHERE worker_id = $1").bind(worker).execute(db).await?.rows_affected())
}

/// Create an invitation code (only its hash is kept).
pub async fn invite(db: &sqlx::PgPool) -> sqlx::Result<String> {
    let code = auth::new_token();
    sqlx::query("INSERT INTO invitations (hash) VALUES ($1)").bind(auth::hash(&code)).execute(db).await?;
    Ok(code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_must_read_as_they_are() {
        assert_eq!(check_name("name", "  Ada's laptop ").ok().as_deref(), Some("Ada's laptop"));
        assert!(check_name("name", "Zoë 東京").is_ok());
        assert!(check_name("name", "Αθήνα — «lab»").is_ok());
        // NFKC: full-width letters and ligatures are their plain forms.
        assert_eq!(check_name("name", "ＡＤＡ ﬁle").ok().as_deref(), Some("ADA file"));
        let combining = format!("a{}", "\u{301}".repeat(63));
        for bad in [
            "",
            "   ",
            "evil\u{202E}gnp.exe",
            "tab\there",
            "zero\u{200B}width",
            "\u{2067}x",
            "\u{3164}",
            "a\u{3164}b",
            "line\u{2028}sep",
            "para\u{2029}sep",
            "word\u{2060}joiner",
            "soft\u{00AD}hyphen",
            "tag\u{E0041}\u{E0042}",
            "private\u{E000}",
            "two  spaces",
            "\u{301}mark first",
            &combining,
        ] {
            assert!(check_name("name", bad).is_err(), "{bad:?}");
        }
        assert!(check_name("name", &"x".repeat(MAX_NAME)).is_ok());
        assert!(check_name("name", &"x".repeat(MAX_NAME + 1)).is_err());
    }

    #[test]
    fn look_alike_names_share_a_skeleton() {
        // Cyrillic а (U+0430) for Latin a; capital I for l; case.
        assert_eq!(skeleton("\u{0430}lice"), skeleton("alice"));
        assert_eq!(skeleton("paypaI"), skeleton("paypal"));
        assert_eq!(skeleton("Alice"), skeleton("alice"));
        assert_ne!(skeleton("alice"), skeleton("alicia"));
    }
}
