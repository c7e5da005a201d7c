//! Cloud Storage through its JSON API, for what Google's Rust client does over gRPC only
//! (`StorageControl`: buckets, object listing, conditional deletes): plain HTTPS requests with
//! the same credentials and endpoint as the client's object reads and writes. The snapshot
//! bucket's kind (`bucket.rs`) and the state store (`crate::state_store`) share it.

pub(crate) mod bucket;
pub(crate) mod iam;

use google_cloud_auth::credentials::{CacheableResource, Credentials};
use std::time::Duration;

/// Google's Cloud Storage endpoint, when no other is given.
pub(crate) const STORAGE_ENDPOINT: &str = "https://storage.googleapis.com";
/// How long one call may take.
pub(crate) const CALL_TIMEOUT: Duration = Duration::from_secs(60);

/// Credentials for `endpoint`: none for a local endpoint, else Application Default
/// Credentials, as every Google tool finds them.
pub(crate) fn credentials(endpoint: Option<&str>) -> Result<Credentials, String> {
    match endpoint {
        Some(_) => Ok(google_cloud_auth::credentials::anonymous::Builder::new().build()),
        None => google_cloud_auth::credentials::Builder::default()
            .build()
            .map_err(|e| format!("Google credentials: {e}")),
    }
}

/// Requests to Cloud Storage's JSON API.
#[derive(Clone)]
pub struct JsonApi {
    http: reqwest::Client,
    endpoint: String,
    credentials: Credentials,
}

impl std::fmt::Debug for JsonApi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JsonApi").field("endpoint", &self.endpoint).finish()
    }
}

impl JsonApi {
    /// The API at `endpoint` without credentials (a local GCP), or Google's with Application
    /// Default Credentials. Makes no call.
    pub fn new(endpoint: Option<&str>) -> Result<JsonApi, String> {
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .timeout(CALL_TIMEOUT)
            .build()
            .map_err(|e| format!("making the Cloud Storage client: {e}"))?;
        Ok(JsonApi {
            http,
            endpoint: endpoint.unwrap_or(STORAGE_ENDPOINT).trim_end_matches('/').to_string(),
            credentials: credentials(endpoint)?,
        })
    }

    /// The endpoint (for Google's client, which the store makes beside this API).
    pub(crate) fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The credentials requests carry.
    pub(crate) fn credentials(&self) -> &Credentials {
        &self.credentials
    }

    /// `/storage/v1/` followed by `segments`, each percent-encoded as one segment (an object
    /// name's slashes included).
    pub(crate) fn url(&self, segments: &[&str]) -> Result<reqwest::Url, String> {
        let mut url = reqwest::Url::parse(&self.endpoint)
            .map_err(|e| format!("the endpoint {}: {e}", self.endpoint))?;
        url.path_segments_mut()
            .map_err(|_| format!("the endpoint {} takes no path", self.endpoint))?
            .pop_if_empty()
            .extend(["storage", "v1"])
            .extend(segments);
        Ok(url)
    }

    /// Sends `method` to `url` (with `body` as JSON) and the credentials' headers; the answer
    /// whatever its status, or why none came.
    pub(crate) async fn send(
        &self,
        method: reqwest::Method,
        url: reqwest::Url,
        body: Option<&serde_json::Value>,
    ) -> Result<reqwest::Response, String> {
        let headers = match self.credentials.headers(http::Extensions::new()).await {
            Ok(CacheableResource::New { data, .. }) => data,
            Ok(CacheableResource::NotModified) => http::HeaderMap::new(),
            Err(e) => return Err(format!("Google credentials: {e}")),
        };
        let mut request = self.http.request(method, url).headers(headers);
        if let Some(body) = body {
            request = request.json(body);
        }
        request.send().await.map_err(|e| format!("Cloud Storage: {e}"))
    }
}
