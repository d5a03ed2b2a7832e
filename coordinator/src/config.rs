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
    /// Failures from different trusted groups after which a batch is parked.
    pub max_failures: u32,
    /// Largest request body accepted for a result upload, in bytes.
    pub max_upload_bytes: usize,
    /// Share of each game-playing batch's games re-played on their deals before it counts.
    pub verify_fraction: f64,
    /// Who may register owners and workers.
    pub registration: Registration,
    /// Owners and workers one network may register per hour (0: no limit).
    pub registrations_per_hour: u32,
    /// Leading zero bits of proof of work an owner registration needs (0: none).
    pub registration_work: u32,
    /// Registrations (the unauthenticated requests) in service at once; more get 503.
    pub max_registrations_in_flight: u32,
    /// Most batches one worker holds at once.
    pub max_leases: u32,
    /// Seconds after a claim when a lease ends whatever its heartbeats say.
    pub deadline_secs: u64,
    /// Who is trusted, and how trust is earned.
    pub trust: crate::trust::Policy,
    /// Share of an earned-trust worker's batches replicated anyway.
    pub spot_check: f64,
}
