//! What every handler shares: the database, the configuration, the rules cache, admission
//! control, the log store and the uploads' inflation budget.

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
    /// The uploads' inflation budget, in MiB (`results::INFLATION_BUDGET_MIB`).
    pub inflating: Arc<tokio::sync::Semaphore>,
}
