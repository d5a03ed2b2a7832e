//! lexhive's wire protocol: what a researcher submits ([`experiment`]), what the coordinator
//! hands a worker and what comes back ([`protocol`]), and the statistics both sides compute the
//! same way ([`stats`]).
//!
//! Every type here is serialised as JSON on the wire and in Postgres; a change that breaks old
//! peers bumps [`PROTOCOL_VERSION`] (the rules are in [`protocol`]'s documentation).

pub mod cmaes;
pub mod experiment;
pub mod kinds;
pub mod protocol;
pub mod spec;
pub mod stats;
pub mod work;

/// Version of the coordinator-worker protocol. A worker sends it when it registers and claims;
/// the coordinator refuses other versions with a message telling the volunteer to upgrade.
///
/// 2: workers name the job kinds they run and their measured rate for each; win-table jobs and
/// endgame jobs are part of the protocol.
pub const PROTOCOL_VERSION: u32 = 2;
