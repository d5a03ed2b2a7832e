//! The lexhive job server as a library: the `coordinator` binary's command line ([`cli`]),
//! its HTTP surface ([`router`]) and everything behind it. Postgres holds all state, so any
//! number of coordinators can serve one database. `docs/ARCHITECTURE.md` has the map.

mod artifacts;
mod auth;
pub mod cli;
mod config;
mod dashboard;
mod db;
mod endgames;
mod error;
mod experiments;
mod export;
mod kinds;
mod ledger;
mod logstore;
mod outliers;
mod owners;
mod quarantine;
mod queue;
mod replicas;
mod results;
mod router;
mod server;
mod shed;
mod state;
mod trust;
mod verify;
mod workers;
