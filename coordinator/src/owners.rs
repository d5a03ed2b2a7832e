//! Owners: the people behind volunteers. Replicas, endgame cross-checks and the failures that
//! park a batch count only across different owners, so that one person running many workers
//! (a Sybil) cannot agree with themselves. Registration is open or by invitation, rate-limited
//! per address; names are unique and printable; an admin lists, bans and revokes.
//!
//! # Design notes
//!
//! owner accounts (`POST /api/v1/owners`), open or invitation-only registration, per-address rate
//! limits, names with no control or bidi characters, and the admin side (`coordinator owner
//! list|invite|ban`, `coordinator worker list|revoke|quarantine`).

use crate::auth::{self, Role};
use crate::error::{Error, Result};
use crate::state::AppState;
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

/// Characters that reorder or hide text: a name holding one can pass for another.
fn deceptive(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{061C}' | '\u{FEFF}')
}

/// A display name, trimmed: 1 to `MAX_NAME` characters with no control, bidirectional or
/// invisible formatting characters.
pub fn check_name<'a>(field: &str, name: &'a str) -> Result<&'a str> {
    let name = name.trim();
    let n = name.chars().count();
    if n == 0 || n > MAX_NAME {
        return Err(Error::unprocessable(format!("{field}: must be 1 to {MAX_NAME} characters")));
    }
    if let Some(c) = name.chars().find(|&c| deceptive(c)) {
        return Err(Error::unprocessable(format!(
            "{field}: U+{:04X} is a control or text-direction character; names must read as they are",
            c as u32
        )));
    }
    Ok(name)
}

/// The address a request came from, when the server knows it.
pub struct Peer(pub Option<IpAddr>);

impl<S: Send + Sync> FromRequestParts<S> for Peer {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> std::result::Result<Self, Self::Rejection> {
        Ok(Peer(parts.extensions.get::<axum::extract::ConnectInfo<SocketAddr>>().map(|c| c.0.ip())))
    }
}

/// Refuse a registration from an address that made `limit` in the last hour (0: no limit).
pub async fn check_rate(db: &sqlx::PgPool, peer: &Peer, limit: u32) -> Result<()> {
    let Some(addr) = peer.0.filter(|_| limit > 0) else { return Ok(()) };
    let (n,): (i64,) = sqlx::query_as(
        "SELECT (SELECT count(*) FROM owners WHERE created_from = $1 AND created_at > now() - interval '1 hour')
              + (SELECT count(*) FROM workers WHERE created_from = $1 AND created_at > now() - interval '1 hour')",
    )
    .bind(addr.to_string())
    .fetch_one(db)
    .await?;
    if n >= limit as i64 {
        return Err(Error::new(
            axum::http::StatusCode::TOO_MANY_REQUESTS,
            format!("{n} registrations from {addr} in the last hour; at most {limit} are accepted: try again later"),
        ));
    }
    Ok(())
}

/// Create an owner; the name must be free (case-insensitively).
pub async fn create(tx: &mut sqlx::Transaction<'_, sqlx::Postgres>, name: &str, from: Option<IpAddr>) -> Result<Uuid> {
    let id = Uuid::new_v4();
    let inserted = sqlx::query(
        "INSERT INTO owners (id, name, created_from) VALUES ($1, $2, $3) ON CONFLICT (lower(name)) DO NOTHING",
    )
    .bind(id)
    .bind(name)
    .bind(from.map(|a| a.to_string()))
    .execute(&mut **tx)
    .await?;
    if inserted.rows_affected() == 0 {
        return Err(Error::conflict(format!("name: `{name}` is taken; choose another")));
    }
    Ok(id)
}

/// `POST /api/v1/owners`: create an owner account.
pub async fn register(
    State(st): State<AppState>,
    peer: Peer,
    Json(r): Json<OwnerRequest>,
) -> Result<Json<OwnerResponse>> {
    let name = check_name("name", &r.name)?;
    check_rate(&st.db, &peer, st.cfg.registrations_per_hour).await?;
    let mut tx = st.db.begin().await?;
    let id = create(&mut tx, name, peer.0).await?;
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

/// The owner an owner token belongs to, if it is one and the owner is not banned.
pub async fn by_token(db: impl sqlx::PgExecutor<'_>, token: &str) -> Result<Uuid> {
    let row: Option<(Uuid,)> = sqlx::query_as(
        "SELECT o.id FROM tokens t JOIN owners o ON o.id = t.owner_id WHERE t.hash = $1 AND t.role = 'owner' AND o.banned_at IS NULL",
    )
    .bind(auth::hash(token))
    .fetch_optional(db)
    .await?;
    row.map(|r| r.0).ok_or_else(|| Error::unauthorized("owner_token: unknown, revoked or banned"))
}

/// An owner as the admin command lists it.
#[derive(sqlx::FromRow, Serialize)]
pub struct OwnerRow {
    pub id: Uuid,
    pub name: String,
    pub workers: i64,
    pub validated: i64,
    pub mismatches: i64,
    pub rejected: i64,
    pub quarantined: i64,
    pub banned: bool,
}

pub async fn list(db: &sqlx::PgPool) -> sqlx::Result<Vec<OwnerRow>> {
    sqlx::query_as(
        "SELECT o.id, o.name, count(w.id) AS workers, coalesce(sum(w.validated), 0)::bigint AS validated,
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
        assert_eq!(check_name("name", "  Ada's laptop ").ok(), Some("Ada's laptop"));
        assert!(check_name("name", "Zoë 東京").is_ok());
        for bad in ["", "   ", "evil\u{202E}gnp.exe", "tab\there", "zero\u{200B}width", "\u{2067}x"] {
            assert!(check_name("name", bad).is_err(), "{bad:?}");
        }
        assert!(check_name("name", &"x".repeat(MAX_NAME)).is_ok());
        assert!(check_name("name", &"x".repeat(MAX_NAME + 1)).is_err());
    }
}
