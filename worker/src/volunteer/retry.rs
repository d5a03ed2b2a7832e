//! Waiting on a coordinator: backoff with jitter on transient errors, and the coordinator's own
//! `Retry-After` when it sheds load.

use crate::client::ClientError;
use rand::RngExt;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Duration;

/// Longest wait between attempts to reach the coordinator.
pub const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// How long to wait when the coordinator shed a request and said to retry after `told`: that,
/// give or take a half, so that a refused crowd comes back spread out. The coordinator already
/// lengthens `told` as the refusals grow; a backoff of our own on top would leave it idle.
pub fn shed_wait(told: Duration) -> Duration {
    told.mul_f64(rand::rng().random_range(0.5..1.5))
}

/// Sleep for `d` give or take a quarter, so that many workers don't retry in step.
async fn sleep_jittered(d: Duration) {
    let f = rand::rng().random_range(0.75..1.25);
    tokio::time::sleep(d.mul_f64(f)).await;
}

/// Run `f` until it succeeds or fails for good, backing off exponentially on transient errors.
pub async fn retry<T, F, Fut>(what: &str, quit: &AtomicU8, mut f: F) -> Result<T, ClientError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, ClientError>>,
{
    let mut wait = Duration::from_millis(500);
    let mut warned = false;
    loop {
        match f().await {
            Err(e) if e.is_transient() && quit.load(Ordering::SeqCst) < 2 => {
                let pause = match e.retry_after() {
                    Some(told) if e.is_shed() => shed_wait(told),
                    _ => wait,
                };
                // Every wait is said, with its length, except the routine sheds after the first.
                if !(warned && e.is_shed()) {
                    eprintln!("{what}: {e}; retrying in ~{:.1} s", pause.as_secs_f64());
                    warned = true;
                }
                if e.is_shed() {
                    tokio::time::sleep(pause).await;
                } else {
                    sleep_jittered(wait).await;
                    wait = (wait * 2).min(MAX_BACKOFF);
                }
            }
            other => return other,
        }
    }
}
