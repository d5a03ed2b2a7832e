//! Load shedding. Every API request that reaches the database is counted while it is served;
//! once more are in flight than `--max-in-flight` (a few per pooled connection), the requests a
//! volunteer can simply repeat — claims, heartbeats, registrations — are answered at once with
//! 503 and `Retry-After` instead of queueing for a connection behind thousands of others.
//! Uploads and researchers' requests are never shed: they carry finished work or a person.
//!
//! Invariant: a shed request has touched nothing, so repeating it later is always safe.

use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// Seconds a shed volunteer is told to wait. Workers add jitter and back off further on
/// repeated refusals, so a crowd does not come back in step.
const RETRY_AFTER_SECS: u64 = 2;

pub struct Admission {
    in_flight: AtomicUsize,
    limit: usize,
    shed: AtomicU64,
}

impl Admission {
    pub fn new(limit: usize) -> Arc<Self> {
        Arc::new(Self { in_flight: AtomicUsize::new(0), limit: limit.max(1), shed: AtomicU64::new(0) })
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
    next.run(req).await
}

/// Refuse a repeatable request when too many are in flight (this one included, as [`count`]
/// runs first).
pub async fn shed(State(a): State<Arc<Admission>>, req: Request, next: Next) -> Response {
    if a.in_flight.load(Ordering::Relaxed) > a.limit {
        a.shed.fetch_add(1, Ordering::Relaxed);
        let mut r = (
            StatusCode::SERVICE_UNAVAILABLE,
            axum::Json(shared::protocol::ApiError { error: "coordinator overloaded; retry later".into() }),
        )
            .into_response();
        r.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(RETRY_AFTER_SECS));
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
        assert!(refused.to_ascii_lowercase().contains("retry-after: 2\r\n"), "{refused}");
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
}
