//! Load shedding. Every API request that reaches the database is counted while it is served;
//! once more are in flight than `--max-in-flight` (a few per pooled connection), the requests a
//! volunteer can simply repeat — claims, heartbeats, uploads — are answered at once with 503
//! and `Retry-After` instead of queueing for a connection behind thousands of others.
//! Researchers' requests are never shed: they carry a person. Registrations, which anyone may
//! make without a token, have a small budget of their own (`--max-registrations-in-flight`), so
//! that strangers cannot take the workers' budget. The reaper expires no lease while this
//! coordinator sheds (`server::reaper`): a worker refused here is never charged for it.
//!
//! Invariant: a shed request has touched nothing, so repeating it later is always safe.
//!
//! # Design notes
//!
//! load shedding: API requests are counted while served (`count`); past `--max-in-flight` (four per
//! pooled connection) the repeatable ones — claims, heartbeats, uploads — get a 503 with
//! `Retry-After` before touching anything (`shed`), the wait adapting once a second to the share
//! refused; registrations within their own small budget. Researchers' requests are never shed.

use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The wait a shed volunteer is told, in seconds, adapts once a second: longer by a quarter
/// while more than a tenth as many requests are refused as served, shorter by a quarter
/// otherwise, between these bounds. Refused volunteers come back after about that long (they
/// add jitter), so the wait settles where the coordinator is busy but refuses little: a
/// fixed short wait would have it spend its time refusing, a long one leave it idle while its
/// volunteers sleep.
const MIN_RETRY_SECS: f64 = 1.0;
const MAX_RETRY_SECS: f64 = 30.0;

pub struct Admission {
    in_flight: AtomicUsize,
    limit: usize,
    shed: AtomicU64,
    window: Mutex<Window>,
}

/// Requests served and shed in the current second, and the wait to tell the refused.
struct Window {
    start: Instant,
    served: u64,
    shed: u64,
    retry_secs: f64,
}

impl Window {
    fn roll(&mut self) {
        if self.start.elapsed() >= Duration::from_secs(1) {
            let retry_secs = if 10 * self.shed > self.served {
                (self.retry_secs * 1.25).min(MAX_RETRY_SECS)
            } else {
                (self.retry_secs / 1.25).max(MIN_RETRY_SECS)
            };
            *self = Window { start: Instant::now(), served: 0, shed: 0, retry_secs };
        }
    }
}

impl Admission {
    pub fn new(limit: usize) -> Arc<Self> {
        Arc::new(Self {
            in_flight: AtomicUsize::new(0),
            limit: limit.max(1),
            shed: AtomicU64::new(0),
            window: Mutex::new(Window { start: Instant::now(), served: 0, shed: 0, retry_secs: MIN_RETRY_SECS }),
        })
    }

    fn window(&self) -> std::sync::MutexGuard<'_, Window> {
        let mut w = self.window.lock().unwrap_or_else(|p| p.into_inner());
        w.roll();
        w
    }

    /// Count a refusal; whole seconds to tell it to wait.
    fn refuse(&self) -> u64 {
        self.shed.fetch_add(1, Ordering::Relaxed);
        let mut w = self.window();
        w.shed += 1;
        w.retry_secs.ceil() as u64
    }

    /// Requests shed since start-up (logged by the reaper when it grows).
    pub fn shed_total(&self) -> u64 {
        self.shed.load(Ordering::Relaxed)
    }
}

/// Decrements the in-flight count however the request ends (finished, failed, or dropped
/// when the client went away).
struct InFlight<'a>(&'a AtomicUsize);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Count a request while it is served.
pub async fn count(State(a): State<Arc<Admission>>, req: Request, next: Next) -> Response {
    a.in_flight.fetch_add(1, Ordering::Relaxed);
    let _guard = InFlight(&a.in_flight);
    let r = next.run(req).await;
    if r.status() != StatusCode::SERVICE_UNAVAILABLE {
        a.window().served += 1;
    }
    r
}

/// Refuse a repeatable request when too many are in flight (this one included, as [`count`]
/// runs first).
pub async fn shed(State(a): State<Arc<Admission>>, req: Request, next: Next) -> Response {
    if a.in_flight.load(Ordering::Relaxed) > a.limit {
        let retry = a.refuse();
        let mut r = (
            StatusCode::SERVICE_UNAVAILABLE,
            axum::Json(shared::protocol::ApiError { error: "coordinator overloaded; retry later".into() }),
        )
            .into_response();
        r.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(retry));
        return r;
    }
    next.run(req).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::Router;
    use axum::routing::post;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// The wait a refusal would be told now, in whole seconds.
    fn wait(a: &Admission) -> u64 {
        a.window().retry_secs.ceil() as u64
    }

    /// One raw HTTP/1.1 POST; the whole response as text.
    async fn send(addr: std::net::SocketAddr, path: &str) -> String {
        let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
        let req = format!("POST {path} HTTP/1.1\r\nhost: x\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
        s.write_all(req.as_bytes()).await.unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).await.unwrap();
        out
    }

    #[tokio::test]
    async fn sheds_repeatable_requests_only_while_saturated() {
        let admission = Admission::new(1);
        let gate = Arc::new(tokio::sync::Semaphore::new(0));
        let g = gate.clone();
        let repeatable = Router::new()
            .route("/claim", post(|| async { "claimed" }))
            .route_layer(axum::middleware::from_fn_with_state(admission.clone(), shed));
        let app = Router::new()
            // Holds its place in flight until the test opens the gate.
            .route("/upload", post(move || async move { g.acquire().await.unwrap().forget() }))
            .merge(repeatable)
            .route_layer(axum::middleware::from_fn_with_state(admission.clone(), count));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });

        assert!(send(addr, "/claim").await.starts_with("HTTP/1.1 200"), "an idle coordinator serves claims");
        let slow = tokio::spawn(send(addr, "/upload"));
        while admission.in_flight.load(Ordering::Relaxed) == 0 {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        let refused = send(addr, "/claim").await;
        assert!(refused.starts_with("HTTP/1.1 503"), "{refused}");
        assert!(refused.to_ascii_lowercase().contains("retry-after: 1\r\n"), "{refused}");
        assert!(refused.contains("overloaded"), "{refused}");
        assert_eq!(admission.shed_total(), 1);
        // Uploads carry finished work: counted, never refused.
        let g2 = gate.clone();
        let second = tokio::spawn(send(addr, "/upload"));
        g2.add_permits(2);
        assert!(slow.await.unwrap().starts_with("HTTP/1.1 200"));
        assert!(second.await.unwrap().starts_with("HTTP/1.1 200"));
        // The refused request left nothing in flight behind it.
        assert_eq!(admission.in_flight.load(Ordering::Relaxed), 0);
        assert!(send(addr, "/claim").await.starts_with("HTTP/1.1 200"), "served again once the load is gone");
        assert_eq!(admission.shed_total(), 1);
    }

    #[test]
    fn the_wait_adapts_to_the_share_refused() {
        let a = Admission::new(1);
        assert_eq!(wait(&a), 1, "nothing refused yet");
        let second = |served, shed| {
            let mut w = a.window.lock().unwrap();
            (w.start, w.served, w.shed) = (Instant::now() - Duration::from_secs(1), served, shed);
        };
        let mut waits = Vec::new();
        for _ in 0..20 {
            second(100, 50);
            waits.push(wait(&a));
        }
        assert_eq!(&waits[..6], [2, 2, 2, 3, 4, 4], "a quarter longer each busy second");
        assert_eq!(waits[19], 30, "at most half a minute");
        second(100, 10);
        assert_eq!(wait(&a), 24, "a tenth refused: shorter again");
        for _ in 0..30 {
            second(100, 0);
            wait(&a);
        }
        assert_eq!(wait(&a), 1, "and back to a second once nothing is refused");
    }
}
