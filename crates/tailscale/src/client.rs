//! A small client for the parts of Tailscale's public API v2 the kinds use
//! (`/api/v2/tailnet/T/...`: the policy file, DNS), on reqwest + rustls (aws-lc-rs) with the
//! system's roots. Hand-written: the published Rust clients cover users and auth keys only, and
//! these few calls are plain JSON. The API key travels as HTTP basic auth, as Tailscale's own Go
//! client sends it, and is only ever held as a [`Secret`].

use engine::{ApiCall, ApiCallCounter, KindError, Secret};
use serde_json::Value as Json;
use std::sync::Arc;
use std::time::Duration;

/// Tailscale's API.
pub const API_URL: &str = "https://api.tailscale.com";

/// Where the environment keeps the API key, in the order they are tried (the reference's
/// OpenTofu variable comes second).
pub const API_KEY_VARIABLES: [&str; 2] = ["TAILSCALE_API_KEY", "TF_VAR_tailscale_api_key"];

/// How the client reaches the API.
#[derive(Debug, Clone)]
pub struct TailscaleConfig {
    /// `https://api.tailscale.com`, or a local fake.
    pub api_url: String,
    /// The tailnet's name, or `-` for the API key's own.
    pub tailnet: String,
    /// `None` when the environment has none: every call then fails, saying where to put it.
    pub api_key: Option<Secret>,
}

impl TailscaleConfig {
    /// The API key from the environment (`get` reads a variable).
    pub fn key_from_env(get: &dyn Fn(&str) -> Option<String>) -> Option<Secret> {
        API_KEY_VARIABLES.iter().find_map(|v| get(v).filter(|k| !k.is_empty())).map(Secret::new)
    }
}

/// The client; cheap to clone.
#[derive(Clone)]
pub struct TailscaleClient {
    http: reqwest::Client,
    config: Arc<TailscaleConfig>,
    calls: ApiCallCounter,
}

/// An answer's body and `ETag`.
pub(crate) struct Answer {
    pub body: Json,
    pub etag: Option<String>,
}

impl TailscaleClient {
    /// A client for `config`, counting its calls into `calls`. Makes no call.
    pub fn new(config: TailscaleConfig, calls: ApiCallCounter) -> Result<TailscaleClient, String> {
        let mut roots = rustls::RootCertStore::empty();
        // The system's roots (an unreadable one is skipped; a plain-http fake needs none).
        for cert in rustls_native_certs::load_native_certs().certs {
            let _ = roots.add(cert);
        }
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let tls = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| format!("TLS: {e}"))?
            .with_root_certificates(roots)
            .with_no_client_auth();
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .timeout(Duration::from_secs(60))
            .tls_backend_preconfigured(tls)
            .build()
            .map_err(|e| format!("the Tailscale API client: {e}"))?;
        Ok(TailscaleClient { http, config: Arc::new(config), calls })
    }

    /// The tailnet the calls are about.
    pub fn tailnet(&self) -> &str {
        &self.config.tailnet
    }

    fn url(&self, path: &str) -> String {
        let base = self.config.api_url.trim_end_matches('/');
        format!("{base}/api/v2/tailnet/{}/{path}", self.config.tailnet)
    }

    /// `method` on the tailnet's `path` with an optional JSON body and `If-Match`; `operation`
    /// names the call in counts and errors (`tailscale:SetPolicyFile`).
    pub(crate) async fn call(
        &self,
        operation: &str,
        method: reqwest::Method,
        path: &str,
        body: Option<&Json>,
        if_match: Option<&str>,
    ) -> Result<Answer, KindError> {
        let key = self.config.api_key.as_ref().ok_or_else(|| {
            KindError::new(format!(
                "tailscale:{operation}: no Tailscale API key: set {} (or {})",
                API_KEY_VARIABLES[0], API_KEY_VARIABLES[1]
            ))
        })?;
        self.calls.record(&ApiCall { service: "tailscale".into(), operation: operation.into() });
        let mut request = self
            .http
            .request(method, self.url(path))
            .basic_auth(key.expose(), Some(""))
            .header("Accept", "application/json");
        if let Some(body) = body {
            request = request.json(body);
        }
        if let Some(etag) = if_match {
            request = request.header("If-Match", format!("\"{}\"", etag.trim_matches('"')));
        }
        let answer = request.send().await.map_err(|e| {
            // Nothing was answered: a write may or may not have happened, and reading first
            // makes every write here safe to repeat.
            KindError::retryable(format!("tailscale:{operation}: {e}"))
        })?;
        let status = answer.status();
        let etag = answer
            .headers()
            .get("etag")
            .and_then(|v| v.to_str().ok())
            .map(|v| v.trim_matches('"').to_string());
        let text = answer.text().await.unwrap_or_default();
        if status.is_success() {
            let body = if text.trim().is_empty() {
                Json::Null
            } else {
                serde_json::from_str(&text).map_err(|e| {
                    KindError::new(format!(
                        "tailscale:{operation}: an answer that is not JSON: {e}"
                    ))
                })?
            };
            return Ok(Answer { body, etag });
        }
        let message = serde_json::from_str::<Json>(&text)
            .ok()
            .and_then(|j| j.get("message").and_then(Json::as_str).map(str::to_string))
            .unwrap_or(text);
        let mut error = KindError::new(format!("tailscale:{operation}: {status}: {message}"))
            .with_code(status.as_u16().to_string());
        // Throttled or failing on its side: nothing was changed, another try may pass.
        error.retryable = matches!(status.as_u16(), 429 | 500..=599);
        Err(error)
    }
}
