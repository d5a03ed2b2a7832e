//! HTTP client for the coordinator's `/api/v1`, with errors that say whether to retry.

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
    Status { status: u16, message: String },
}

impl ClientError {
    /// Worth trying again later: network trouble, or the server is overloaded or restarting.
    pub fn is_transient(&self) -> bool {
        match self {
            ClientError::Unreachable(_) => true,
            ClientError::Status { status, .. } => *status >= 500 || *status == 408 || *status == 429,
        }
    }
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
        let resp = r.send().await.map_err(|e| ClientError::Unreachable(e.to_string()))?;
        let status = resp.status();
        if status.is_success() {
            return Ok(resp);
        }
        let text = resp.text().await.unwrap_or_default();
        let message = serde_json::from_str::<ApiError>(&text)
            .map(|e| e.error)
            .unwrap_or_else(|_| if text.is_empty() { status.to_string() } else { text });
        Err(ClientError::Status { status: status.as_u16(), message })
    }

    pub async fn post<B: Serialize, R: DeserializeOwned>(&self, path: &str, body: &B) -> Result<R, ClientError> {
        let resp = self.send(self.request(reqwest::Method::POST, path).json(body)).await?;
        resp.json().await.map_err(|e| ClientError::Unreachable(format!("bad response to {path}: {e}")))
    }

    pub async fn post_text<R: DeserializeOwned>(&self, path: &str, body: String) -> Result<R, ClientError> {
        let r = self
            .request(reqwest::Method::POST, path)
            .header(reqwest::header::CONTENT_TYPE, "application/toml")
            .body(body);
        let resp = self.send(r).await?;
        resp.json().await.map_err(|e| ClientError::Unreachable(format!("bad response to {path}: {e}")))
    }

    pub async fn get_bytes(&self, path: &str) -> Result<Vec<u8>, ClientError> {
        let resp = self.send(self.request(reqwest::Method::GET, path)).await?;
        Ok(resp.bytes().await.map_err(|e| ClientError::Unreachable(e.to_string()))?.to_vec())
    }
}
