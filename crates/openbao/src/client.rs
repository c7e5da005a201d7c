//! A small client for OpenBao's HTTP API (`/v1/...`), on reqwest + rustls (aws-lc-rs).
//!
//! The TLS configuration is built here with an explicit aws-lc-rs provider and only the CA
//! bundle of the connection as roots, so nothing depends on a process-wide rustls provider and
//! no public CA is trusted for a private OpenBao. Tokens travel as [`Secret`]s in the
//! `X-Vault-Token` header only; errors never carry them (server messages that would contain the
//! token are redacted as well).

use engine::Secret;
use engine::{ApiCall, ApiCallCounter, KindError};
use rustls_pki_types::CertificateDer;
use rustls_pki_types::pem::PemObject;
use serde_json::Value as Json;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// Where OpenBao is and how to authenticate to it.
#[derive(Clone)]
pub struct BaoConnection {
    /// Base address, e.g. `https://bao.priv.aws.example.com:8200`.
    pub address: String,
    /// PEM certificates trusted for the server's TLS certificate (required for `https`).
    pub ca_bundle: Option<String>,
    /// The token for authenticated calls; `None` before OpenBao is initialised.
    pub token: Option<Secret>,
    /// How a private address is reached (e.g. through a tailnet's subnet router), said when it
    /// cannot be reached.
    pub route: Option<String>,
}

impl fmt::Debug for BaoConnection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BaoConnection")
            .field("address", &self.address)
            .field("ca_bundle", &self.ca_bundle.as_ref().map(|_| "(PEM)"))
            .field("token", &self.token)
            .finish()
    }
}

/// A failed OpenBao call. Never contains a token.
#[derive(Debug, Clone, thiserror::Error)]
pub enum BaoError {
    #[error("{op}: cannot reach OpenBao at {address}: {message}")]
    Unreachable { op: String, address: String, message: String },
    #[error("{op}: HTTP {status}: {}", if errors.is_empty() { "(no message)".to_string() } else { errors.join("; ") })]
    Api { op: String, status: u16, errors: Vec<String> },
    #[error("{op}: unexpected response: {message}")]
    Decode { op: String, message: String },
    #[error("{op}: no OpenBao token available (is OpenBao initialised and its token stored?)")]
    NoToken { op: String },
    #[error("OpenBao connection: {0}")]
    Config(String),
    #[error("{0}")]
    Hook(String),
}

impl BaoError {
    /// The HTTP status of an API error.
    pub fn status(&self) -> Option<u16> {
        match self {
            BaoError::Api { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// Whether the server answered that it is sealed (503 "Vault is sealed").
    pub fn is_sealed(&self) -> bool {
        match self {
            BaoError::Api { status: 503, errors, .. } => {
                errors.iter().any(|e| e.to_ascii_lowercase().contains("sealed"))
            }
            _ => false,
        }
    }

    /// Whether trying again later may succeed (unreachable, sealed, standby, throttled).
    pub fn is_retryable(&self) -> bool {
        match self {
            BaoError::Unreachable { .. } => true,
            BaoError::Api { status, .. } => matches!(status, 412 | 429 | 502 | 503 | 504),
            _ => false,
        }
    }
}

impl From<BaoError> for KindError {
    fn from(e: BaoError) -> Self {
        let mut error = KindError::new(e.to_string());
        error.code = e.status().map(|s| format!("HTTP {s}"));
        error.retryable = e.is_retryable();
        // A server sealed under a run (restarted, its seal's key service briefly away) comes
        // back by itself with an auto-unseal seal: waited for as long as dependents draining.
        error.draining = e.is_sealed();
        error.with_source(e)
    }
}

/// A client bound to one OpenBao server (and optionally a token).
#[derive(Clone)]
pub struct BaoClient {
    http: reqwest::Client,
    address: String,
    token: Option<Secret>,
    calls: ApiCallCounter,
    route: Option<String>,
}

impl fmt::Debug for BaoClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BaoClient")
            .field("address", &self.address)
            .field("token", &self.token)
            .finish()
    }
}

/// Builds the HTTP client for `address`, trusting only the certificates of `ca_bundle`.
pub(crate) fn http_client(
    address: &str,
    ca_bundle: Option<&str>,
) -> Result<reqwest::Client, BaoError> {
    let https = address.starts_with("https://");
    if !https && !address.starts_with("http://") {
        return Err(BaoError::Config(format!(
            "address `{address}` must start with https:// or http://"
        )));
    }
    let mut builder = reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(5))
        .timeout(Duration::from_secs(60))
        .no_proxy();
    // Always a preconfigured TLS backend: reqwest would otherwise build its own with a
    // process-wide crypto provider. For plain http the (empty) root store is never used.
    let mut roots = rustls::RootCertStore::empty();
    if https {
        let pem = ca_bundle.ok_or_else(|| {
            BaoError::Config(format!("{address}: an https address needs a CA bundle"))
        })?;
        for cert in CertificateDer::pem_slice_iter(pem.as_bytes()) {
            let cert = cert.map_err(|e| BaoError::Config(format!("CA bundle: {e}")))?;
            roots.add(cert).map_err(|e| BaoError::Config(format!("CA bundle: {e}")))?;
        }
        if roots.is_empty() {
            return Err(BaoError::Config("the CA bundle holds no certificate".into()));
        }
    }
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| BaoError::Config(format!("TLS: {e}")))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    builder = builder.tls_backend_preconfigured(tls);
    builder.build().map_err(|e| BaoError::Config(format!("HTTP client: {e}")))
}

/// A method with its body.
enum Body<'a> {
    None,
    Json(&'a Json),
    MergePatch(&'a Json),
    Bytes(Vec<u8>),
}

impl BaoClient {
    /// A client for `connection` with its own HTTP connection pool.
    pub fn new(connection: &BaoConnection) -> Result<Self, BaoError> {
        let http = http_client(&connection.address, connection.ca_bundle.as_deref())?;
        Ok(Self::from_parts(http, connection, ApiCallCounter::default()))
    }

    pub(crate) fn from_parts(
        http: reqwest::Client,
        connection: &BaoConnection,
        calls: ApiCallCounter,
    ) -> Self {
        BaoClient {
            http,
            address: connection.address.trim_end_matches('/').to_string(),
            token: connection.token.clone(),
            calls,
            route: connection.route.clone(),
        }
    }

    /// The same client with another token.
    pub fn with_token(&self, token: Secret) -> Self {
        let mut c = self.clone();
        c.token = Some(token);
        c
    }

    /// The server's address.
    pub fn address(&self) -> &str {
        &self.address
    }

    /// Whether the client carries a token.
    pub fn has_token(&self) -> bool {
        self.token.is_some()
    }

    /// Fails with [`BaoError::NoToken`] when there is no token.
    pub fn require_token(&self, op: &str) -> Result<(), BaoError> {
        match &self.token {
            Some(_) => Ok(()),
            None => Err(BaoError::NoToken { op: op.to_string() }),
        }
    }

    fn redact(&self, text: String) -> String {
        match &self.token {
            Some(t) if !t.is_empty() && text.contains(t.expose()) => {
                text.replace(t.expose(), "(sensitive)")
            }
            _ => text,
        }
    }

    async fn send(
        &self,
        op: &str,
        method: reqwest::Method,
        path: &str,
        body: Body<'_>,
    ) -> Result<reqwest::Response, BaoError> {
        self.calls.record(&ApiCall { service: "openbao".into(), operation: op.to_string() });
        let url = format!("{}/v1/{}", self.address, path.trim_start_matches('/'));
        let mut req = self.http.request(method, &url);
        if let Some(t) = &self.token {
            req = req.header("X-Vault-Token", t.expose());
        }
        req = match body {
            Body::None => req,
            Body::Json(j) => req.json(j),
            Body::MergePatch(j) => {
                req.header("Content-Type", "application/merge-patch+json").body(j.to_string())
            }
            Body::Bytes(b) => req.header("Content-Type", "application/octet-stream").body(b),
        };
        req.send().await.map_err(|e| {
            let mut message = self.redact(error_chain(&e));
            if let Some(route) = &self.route {
                message = format!("{message}; {route}");
            }
            BaoError::Unreachable { op: op.to_string(), address: self.address.clone(), message }
        })
    }

    async fn api_error(&self, op: &str, resp: reqwest::Response) -> BaoError {
        let status = resp.status().as_u16();
        let errors = match resp.json::<Json>().await {
            Ok(j) => j
                .get("errors")
                .and_then(Json::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Json::as_str)
                        .map(|s| self.redact(s.trim().to_string()))
                        .collect()
                })
                .unwrap_or_default(),
            Err(_) => vec![],
        };
        BaoError::Api { op: op.to_string(), status, errors }
    }

    async fn json_or_none(
        &self,
        op: &str,
        resp: reqwest::Response,
    ) -> Result<Option<Json>, BaoError> {
        if resp.status() == reqwest::StatusCode::NO_CONTENT {
            return Ok(None);
        }
        let bytes = resp.bytes().await.map_err(|e| BaoError::Decode {
            op: op.to_string(),
            message: self.redact(error_chain(&e)),
        })?;
        if bytes.is_empty() {
            return Ok(None);
        }
        // The body may hold credentials (init, login): the error says what failed, not what
        // was received.
        serde_json::from_slice(&bytes).map(Some).map_err(|e| BaoError::Decode {
            op: op.to_string(),
            message: format!(
                "invalid JSON ({} bytes, {:?} error at line {} column {})",
                bytes.len(),
                e.classify(),
                e.line(),
                e.column()
            ),
        })
    }

    async fn call(
        &self,
        op: &str,
        method: reqwest::Method,
        path: &str,
        body: Body<'_>,
        not_found_is_none: bool,
    ) -> Result<Option<Json>, BaoError> {
        let resp = self.send(op, method, path, body).await?;
        let status = resp.status();
        if status == reqwest::StatusCode::NOT_FOUND && not_found_is_none {
            return Ok(None);
        }
        if !status.is_success() {
            return Err(self.api_error(op, resp).await);
        }
        self.json_or_none(op, resp).await
    }

    /// GET `path`; `None` when it does not exist (404) or has no content.
    pub async fn read(&self, op: &str, path: &str) -> Result<Option<Json>, BaoError> {
        self.call(op, reqwest::Method::GET, path, Body::None, true).await
    }

    /// The `data` object of a GET, `None` when absent.
    pub async fn read_data(&self, op: &str, path: &str) -> Result<Option<Json>, BaoError> {
        Ok(self
            .read(op, path)
            .await?
            .and_then(|mut j| j.get_mut("data").map(Json::take))
            .filter(|d| !d.is_null()))
    }

    /// LIST `path`: the keys, empty when nothing is there.
    pub async fn list(&self, op: &str, path: &str) -> Result<Vec<String>, BaoError> {
        let method = reqwest::Method::from_bytes(b"LIST").expect("LIST is a valid method token");
        let body = self.call(op, method, path, Body::None, true).await?;
        Ok(body
            .as_ref()
            .and_then(|b| b.pointer("/data/keys"))
            .and_then(Json::as_array)
            .map(|a| a.iter().filter_map(Json::as_str).map(String::from).collect())
            .unwrap_or_default())
    }

    /// POST `body` to `path`; the response, if any.
    pub async fn write(&self, op: &str, path: &str, body: &Json) -> Result<Option<Json>, BaoError> {
        self.call(op, reqwest::Method::POST, path, Body::Json(body), false).await
    }

    /// PUT `body` to `path`; the response, if any.
    pub async fn put(&self, op: &str, path: &str, body: &Json) -> Result<Option<Json>, BaoError> {
        self.call(op, reqwest::Method::PUT, path, Body::Json(body), false).await
    }

    /// PATCH `path` with a JSON merge patch.
    pub async fn patch(&self, op: &str, path: &str, body: &Json) -> Result<Option<Json>, BaoError> {
        self.call(op, reqwest::Method::PATCH, path, Body::MergePatch(body), false).await
    }

    /// DELETE `path`; already absent is fine.
    pub async fn delete(&self, op: &str, path: &str) -> Result<(), BaoError> {
        self.call(op, reqwest::Method::DELETE, path, Body::None, true).await.map(|_| ())
    }

    /// The HTTP status of a GET (for `sys/health`, whose status is the answer).
    pub async fn status(&self, op: &str, path: &str) -> Result<u16, BaoError> {
        let resp = self.send(op, reqwest::Method::GET, path, Body::None).await?;
        Ok(resp.status().as_u16())
    }

    /// GET `path` as raw bytes (e.g. a raft snapshot).
    pub async fn read_bytes(&self, op: &str, path: &str) -> Result<Vec<u8>, BaoError> {
        let resp = self.send(op, reqwest::Method::GET, path, Body::None).await?;
        if !resp.status().is_success() {
            return Err(self.api_error(op, resp).await);
        }
        resp.bytes().await.map(|b| b.to_vec()).map_err(|e| BaoError::Decode {
            op: op.to_string(),
            message: self.redact(error_chain(&e)),
        })
    }

    /// POST raw bytes to `path` (e.g. a raft snapshot restore).
    pub async fn write_bytes(&self, op: &str, path: &str, bytes: Vec<u8>) -> Result<(), BaoError> {
        self.call(op, reqwest::Method::POST, path, Body::Bytes(bytes), false).await.map(|_| ())
    }
}

/// An error and its sources on one line.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = s.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connections_hide_their_token() {
        let c = BaoConnection {
            route: None,
            address: "http://127.0.0.1:8200".into(),
            ca_bundle: None,
            token: Some(Secret::new("s.topsecret")),
        };
        let shown = format!("{c:?}");
        assert!(!shown.contains("topsecret"), "{shown}");
        let client = BaoClient::new(&c).unwrap();
        assert!(!format!("{client:?}").contains("topsecret"));
        assert_eq!(client.redact("bad token s.topsecret".into()), "bad token (sensitive)");
    }

    #[test]
    fn https_needs_a_ca_bundle() {
        let err = http_client("https://bao:8200", None).unwrap_err();
        assert!(err.to_string().contains("CA bundle"), "{err}");
        assert!(http_client("ftp://bao", None).is_err());
        assert!(http_client("https://bao:8200", Some("not a pem")).is_err());
    }

    #[tokio::test]
    async fn unreachable_servers_are_retryable_errors_without_tokens() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        let c = BaoConnection {
            route: None,
            address: format!("http://127.0.0.1:{port}"),
            ca_bundle: None,
            token: Some(Secret::new("s.topsecret")),
        };
        let err = BaoClient::new(&c).unwrap().read("GetMounts", "sys/mounts").await.unwrap_err();
        assert!(err.is_retryable());
        let kind: KindError = err.into();
        assert!(kind.retryable);
        assert!(kind.message.starts_with("GetMounts: cannot reach"), "{}", kind.message);
        assert!(!kind.message.contains("topsecret"));

        // A private address says how it is reached.
        let route = "it answers only inside the VPC, reached through the subnet router `r`";
        let private = BaoConnection { route: Some(route.into()), ..c };
        let err = BaoClient::new(&private).unwrap().read("GetMounts", "sys/mounts").await;
        let shown = err.unwrap_err().to_string();
        assert!(shown.ends_with(route), "{shown}");
    }
}
