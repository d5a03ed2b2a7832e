//! HTTP client for the coordinator's `/api/v1`, with errors that say whether to retry.
//!
//! # Design notes
//!
//! `Client` for `/api/v1`, with `ClientError::{Unreachable, Status}`, `is_transient` (what to
//! retry) and `is_shed`/`retry_after` (a refusal to wait out: `volunteer::shed_wait`, the told wait
//! give or take a half, with no backoff of its own on top).

use serde::Serialize;
use serde::de::DeserializeOwned;
use shared::protocol::ApiError;
use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The coordinator could not be reached or did not answer: worth retrying.
    #[error("coordinator unreachable: {0}")]
    Unreachable(String),
    /// The coordinator answered with an error.
    #[error("{message} (HTTP {status})")]
    Status { status: u16, message: String, retry_after: Option<Duration> },
}

impl ClientError {
    /// Worth trying again later: network trouble, or the server is overloaded or restarting.
    pub fn is_transient(&self) -> bool {
        match self {
            ClientError::Unreachable(_) => true,
            ClientError::Status { status, .. } => *status >= 500 || *status == 408 || *status == 429,
        }
    }

    /// How long the coordinator asked us to wait (`Retry-After` on a shed or rate-limited
    /// request).
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            ClientError::Status { retry_after, .. } => *retry_after,
            ClientError::Unreachable(_) => None,
        }
    }

    /// Refused because the coordinator is overloaded: nothing happened, try again later.
    pub fn is_shed(&self) -> bool {
        matches!(self, ClientError::Status { status: 503, retry_after: Some(_), .. })
    }
}

/// An error with its causes, "error sending request for url (...): client error (Connect):
/// tcp connect error: Connection refused": reqwest's own message names only the first, which
/// says nothing of why.
fn causes(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        let more = cause.to_string();
        if !text.contains(&more) {
            text = format!("{text}: {more}");
        }
        source = cause.source();
    }
    text
}

#[derive(Clone)]
pub struct Client {
    http: reqwest::Client,
    base: String,
    token: Option<String>,
}

impl Client {
    pub fn new(base: &str, token: Option<String>) -> anyhow::Result<Self> {
        let base = base.trim_end_matches('/').to_string();
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            anyhow::bail!("--coordinator: `{base}` is not an http:// or https:// URL");
        }
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .timeout(Duration::from_secs(120))
            // The coordinator closes a connection that sends no request for 10 s: never reuse
            // one that has been idle for nearly that long (a POST on it would fail, unsent).
            .pool_idle_timeout(Duration::from_secs(5))
            .build()?;
        Ok(Self { http, base, token })
    }

    pub fn base(&self) -> &str {
        &self.base
    }

    pub fn with_token(&self, token: String) -> Self {
        Self { token: Some(token), ..self.clone() }
    }

    fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        let r = self.http.request(method, format!("{}/api/v1{path}", self.base));
        match &self.token {
            Some(t) => r.bearer_auth(t),
            None => r,
        }
    }

    async fn send(&self, r: reqwest::RequestBuilder) -> Result<reqwest::Response, ClientError> {
        let resp = r.send().await.map_err(|e| ClientError::Unreachable(causes(&e)))?;
        let status = resp.status();
        if status.is_success() {
            return Ok(resp);
        }
        // Seconds only: the HTTP-date form is not something our coordinator sends.
        let retry_after = resp
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok()?.trim().parse::<u64>().ok())
            .map(|s| Duration::from_secs(s.min(3600)));
        let text = resp.text().await.unwrap_or_default();
        let message = serde_json::from_str::<ApiError>(&text)
            .map(|e| e.error)
            .unwrap_or_else(|_| if text.is_empty() { status.to_string() } else { text });
        Err(ClientError::Status { status: status.as_u16(), message, retry_after })
    }

    pub async fn post<B: Serialize, R: DeserializeOwned>(&self, path: &str, body: &B) -> Result<R, ClientError> {
        let resp = self.send(self.request(reqwest::Method::POST, path).json(body)).await?;
        resp.json().await.map_err(|e| ClientError::Unreachable(format!("bad response to {path}: {}", causes(&e))))
    }

    pub async fn post_text<R: DeserializeOwned>(&self, path: &str, body: String) -> Result<R, ClientError> {
        let r = self
            .request(reqwest::Method::POST, path)
            .header(reqwest::header::CONTENT_TYPE, "application/toml")
            .body(body);
        let resp = self.send(r).await?;
        resp.json().await.map_err(|e| ClientError::Unreachable(format!("bad response to {path}: {}", causes(&e))))
    }

    pub async fn get<R: DeserializeOwned>(&self, path: &str) -> Result<R, ClientError> {
        let resp = self.send(self.request(reqwest::Method::GET, path)).await?;
        resp.json().await.map_err(|e| ClientError::Unreachable(format!("bad response to {path}: {}", causes(&e))))
    }

    pub async fn get_bytes(&self, path: &str) -> Result<Vec<u8>, ClientError> {
        let resp = self.send(self.request(reqwest::Method::GET, path)).await?;
        Ok(resp.bytes().await.map_err(|e| ClientError::Unreachable(causes(&e)))?.to_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A server that answers every request with `response`.
    async fn answering(response: String) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((mut s, _)) = listener.accept().await {
                let mut buf = [0u8; 4096];
                let _ = s.read(&mut buf).await;
                let _ = s.write_all(response.as_bytes()).await;
            }
        });
        format!("http://{addr}")
    }

    #[tokio::test]
    async fn a_shed_request_carries_the_wait_it_was_told() {
        let body = r#"{"error":"coordinator overloaded; retry later"}"#;
        let shed = format!(
            "HTTP/1.1 503 Service Unavailable\r\nretry-after: 7\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
        let c = Client::new(&answering(shed).await, None).unwrap();
        let e = c.post::<_, serde_json::Value>("/claim", &serde_json::json!({})).await.unwrap_err();
        assert!(e.is_shed() && e.is_transient(), "{e:?}");
        assert_eq!(e.retry_after(), Some(Duration::from_secs(7)));
        assert_eq!(e.to_string(), "coordinator overloaded; retry later (HTTP 503)");

        // A plain 503 (a database outage) is transient but not a refusal to shed load.
        let down = "HTTP/1.1 503 Service Unavailable\r\ncontent-length: 0\r\nconnection: close\r\n\r\n".to_string();
        let c = Client::new(&answering(down).await, None).unwrap();
        let e = c.post::<_, serde_json::Value>("/claim", &serde_json::json!({})).await.unwrap_err();
        assert!(e.is_transient() && !e.is_shed() && e.retry_after().is_none(), "{e:?}");
    }

    #[tokio::test]
    async fn an_unreachable_coordinator_says_why() {
        // A port nothing listens on: the message names the refused connection, not only "error
        // sending request".
        let free = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap().local_addr().unwrap();
        let c = Client::new(&format!("http://{free}"), None).unwrap();
        let e = c.get::<serde_json::Value>("/version").await.unwrap_err();
        let text = e.to_string().to_lowercase();
        assert!(e.is_transient() && text.contains("refused"), "{e}");
    }
}
