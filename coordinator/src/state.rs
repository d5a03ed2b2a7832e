//! What every handler shares: the database, the configuration, the rules cache, admission
//! control and the log store.

use crate::config::Config;
use crate::{logstore, shed, verify};
use std::sync::Arc;

#[derive(Clone)]
pub struct AppState {
    pub db: sqlx::PgPool,
    pub cfg: Arc<Config>,
    pub rules: verify::RulesCache,
    pub admission: Arc<shed::Admission>,
    pub logs: logstore::LogStore,
}
