//! Bearer tokens. A token is 32 random bytes in hex; Postgres keeps only its sha256, with the
//! role it grants (and the worker or owner it belongs to, for their tokens). Deleting the row
//! revokes the token.
//!
//! # Design notes
//!
//! bearer tokens (32 random bytes, hex); Postgres stores only their sha256 with a role (`worker`,
//! `researcher`, `admin`). `Caller` is the extractor.

use crate::error::Error;
use crate::state::AppState;
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use sha2::{Digest, Sha256};
use uuid::Uuid;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    Worker,
    /// A volunteer's owner: registers workers under its name.
    Owner,
    Researcher,
    Admin,
}

impl Role {
    pub fn parse(s: &str) -> Option<Role> {
        match s {
            "worker" => Some(Role::Worker),
            "owner" => Some(Role::Owner),
            "researcher" => Some(Role::Researcher),
            "admin" => Some(Role::Admin),
            _ => None,
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Worker => "worker",
            Role::Owner => "owner",
            Role::Researcher => "researcher",
            Role::Admin => "admin",
        }
    }
}

pub fn new_token() -> String {
    let bytes: [u8; 32] = rand::random();
    hex::encode(bytes)
}

pub fn hash(token: &str) -> Vec<u8> {
    Sha256::digest(token.as_bytes()).to_vec()
}

/// Store a new token's hash and return the token.
pub async fn create(db: &sqlx::PgPool, role: Role, worker: Option<Uuid>) -> sqlx::Result<String> {
    let token = new_token();
    sqlx::query("INSERT INTO tokens (hash, role, worker_id) VALUES ($1, $2, $3)")
        .bind(hash(&token))
        .bind(role.as_str())
        .bind(worker)
        .execute(db)
        .await?;
    Ok(token)
}

/// Whoever sent the request, from its bearer token.
#[derive(Clone, Debug)]
pub struct Caller {
    pub role: Role,
    pub worker: Option<Uuid>,
    /// The sha256 of the token: who submitted an experiment, and so who may stop it.
    pub token_hash: Vec<u8>,
}

impl Caller {
    /// The worker id, or 403 for a token that is not a worker's.
    pub fn worker(&self) -> Result<Uuid, Error> {
        self.worker.ok_or_else(|| Error::forbidden("this needs a worker token (run `worker volunteer` to get one)"))
    }
    pub fn researcher(&self) -> Result<(), Error> {
        match self.role {
            Role::Researcher | Role::Admin => Ok(()),
            Role::Worker | Role::Owner => {
                Err(Error::forbidden("this needs a researcher token (`coordinator token create --role researcher`)"))
            }
        }
    }
}

impl FromRequestParts<AppState> for Caller {
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Error> {
        let header = parts
            .headers
            .get(axum::http::header::AUTHORIZATION)
            .ok_or_else(|| Error::unauthorized("missing `Authorization: Bearer <token>` header"))?;
        let token = header
            .to_str()
            .ok()
            .and_then(|h| h.strip_prefix("Bearer "))
            .map(str::trim)
            .ok_or_else(|| Error::unauthorized("Authorization header must be `Bearer <token>`"))?;
        if token.len() > 256 {
            return Err(Error::unauthorized("unknown token"));
        }
        let token_hash = hash(token);
        let row: Option<(String, Option<Uuid>)> = sqlx::query_as("SELECT role, worker_id FROM tokens WHERE hash = $1")
            .bind(&token_hash)
            .fetch_optional(&state.db)
            .await?;
        let (role, worker) = row.ok_or_else(|| Error::unauthorized("unknown token"))?;
        let role = Role::parse(&role).ok_or_else(|| Error::unauthorized("unknown token"))?;
        Ok(Caller { role, worker, token_hash })
    }
}

/// `GET /api/v1/whoami`: what the caller's token is, so that a client can check a token before
/// it saves it (`worker experiments login`).
pub async fn whoami(caller: Caller) -> axum::Json<shared::protocol::Whoami> {
    axum::Json(shared::protocol::Whoami { role: caller.role.as_str().to_string(), worker_id: caller.worker })
}
