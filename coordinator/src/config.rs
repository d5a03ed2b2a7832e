//! What a serving coordinator is set to: the queue's, the trust's and the uploads' numbers.
//! Read from `coordinator serve`'s flags and environment (`cli::ServeArgs::config`); handlers
//! read it from [`crate::state::AppState`].

use crate::owners::Registration;

#[derive(Clone, Debug)]
pub struct Config {
    /// Seconds a lease lasts without a heartbeat.
    pub lease_secs: u64,
    /// Seconds of work a batch aims at, from the worker's measured speed.
    pub batch_secs: u64,
    /// Failures from different owners after which a batch is parked.
    pub max_failures: u32,
    /// Largest request body accepted for a result upload, in bytes.
    pub max_upload_bytes: usize,
    /// Share of each game-playing batch's games re-played on their deals before it counts.
    pub verify_fraction: f64,
    /// Who may register owners and workers.
    pub registration: Registration,
    /// Owners and workers one address may register per hour (0: no limit).
    pub registrations_per_hour: u32,
    /// Most batches one worker holds at once.
    pub max_leases: u32,
    /// Seconds after a claim when a lease ends whatever its heartbeats say.
    pub deadline_secs: u64,
    /// Batches of a worker replicated by another owner before its results are taken alone.
    pub replicate_until: u64,
    /// Share of a trusted worker's batches replicated anyway.
    pub spot_check: f64,
}
