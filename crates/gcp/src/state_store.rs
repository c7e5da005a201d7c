//! State in GCP: the Cloud Storage [`ObjectStore`] of `[state] backend = "gcs"`, and Cloud KMS
//! data keys for `[state.encryption] method = "gcp_kms"`.
//!
//! Every write is conditional on the object's generation (`ifGenerationMatch=0` to create, the
//! generation read or written last to replace or delete), so the engine's leases and state
//! saves never overwrite another client's write: Cloud Storage answers 412 and the engine
//! reads again. The bucket's object versioning keeps the generations a save replaces.
//!
//! Objects are read and written with Google's `google-cloud-storage` client (JSON API media
//! downloads and multipart uploads, checksummed both ways). Its delete and bucket reads go
//! over gRPC only (`StorageControl`); the two calls the store needs besides (a conditional
//! object delete, the bucket's versioning) are plain JSON API requests made here with the same
//! credentials, so one transport and one endpoint serve the whole store.

use crate::storage::{CALL_TIMEOUT, JsonApi, credentials};
use engine::Blocking;
use engine_state::{Condition, DataKey, KeySource, ObjectStore, StoreError, StoredObject};
use google_cloud_auth::credentials::Credentials;
use google_cloud_storage::client::Storage;
use std::future::Future;

/// Cloud KMS's endpoint, when no other is given.
const KMS_ENDPOINT: &str = "https://cloudkms.googleapis.com";

/// A failed call of Google's clients: a precondition that did not hold, an object that is
/// gone, or anything else.
fn classify(e: &google_cloud_storage::Error) -> StoreError {
    by_status(e.http_status_code(), || e.to_string())
}

/// What an HTTP status means to the store: a precondition that did not hold, an object that is
/// gone, or a failure described by `message`.
fn by_status(status: Option<u16>, message: impl FnOnce() -> String) -> StoreError {
    match status {
        Some(412 | 409) => StoreError::Conflict,
        Some(404) => StoreError::Missing,
        _ => StoreError::Failed(message()),
    }
}

/// Runs `call` bounded by [`CALL_TIMEOUT`].
async fn bounded<T>(
    what: &str,
    call: impl Future<Output = Result<T, StoreError>>,
) -> Result<T, StoreError> {
    tokio::time::timeout(CALL_TIMEOUT, call).await.unwrap_or_else(|_| {
        Err(StoreError::Failed(format!("{what}: no answer in {CALL_TIMEOUT:?}")))
    })
}

/// A bucket holding state objects.
pub struct GcsStateStore {
    bucket: String,
    api: JsonApi,
    /// Google's client, made on the store's runtime at the first call.
    objects: std::sync::Arc<tokio::sync::OnceCell<Storage>>,
    calls: Blocking,
}

impl std::fmt::Debug for GcsStateStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GcsStateStore").field("bucket", &self.bucket).finish()
    }
}

impl GcsStateStore {
    /// The bucket `bucket`, at `endpoint` without credentials (a local GCP) or at Google with
    /// Application Default Credentials. Makes no call.
    pub fn new(bucket: &str, endpoint: Option<&str>) -> Result<Self, String> {
        Ok(GcsStateStore {
            bucket: bucket.to_string(),
            api: JsonApi::new(endpoint)?,
            objects: Default::default(),
            calls: Blocking::new("state-gcs"),
        })
    }

    fn run<T: Send + 'static>(
        &self,
        call: impl Future<Output = Result<T, StoreError>> + Send + 'static,
    ) -> Result<T, StoreError> {
        self.calls.run(call, StoreError::Failed("the Cloud Storage call stopped".into()))
    }

    /// Google's client and the bucket's name as it wants it, for a call on the runtime.
    fn client(
        &self,
    ) -> (impl Future<Output = Result<Storage, StoreError>> + Send + 'static, String) {
        let (cell, credentials, endpoint) =
            (self.objects.clone(), self.api.credentials().clone(), self.api.endpoint().to_string());
        let made = async move {
            cell.get_or_try_init(|| async move {
                Storage::builder()
                    .with_endpoint(endpoint)
                    .with_credentials(credentials)
                    .build()
                    .await
                    .map_err(|e| {
                        StoreError::Failed(format!("making the Cloud Storage client: {e}"))
                    })
            })
            .await
            .cloned()
        };
        (made, format!("projects/_/buckets/{}", self.bucket))
    }

    /// A JSON API request to `url` with the store's credentials; an answer that is not a
    /// success is the error its status says.
    fn json_request(
        &self,
        method: reqwest::Method,
        url: reqwest::Url,
    ) -> impl Future<Output = Result<reqwest::Response, StoreError>> + Send + 'static {
        let api = self.api.clone();
        async move {
            let answer = api.send(method, url, None).await.map_err(StoreError::Failed)?;
            if answer.status().is_success() {
                return Ok(answer);
            }
            let status = answer.status().as_u16();
            let body = answer.text().await.unwrap_or_default();
            Err(by_status(Some(status), || format!("Cloud Storage answered {status}: {body}")))
        }
    }

    /// `/storage/v1/b/<bucket>` followed by `segments`.
    fn json_url(&self, segments: &[&str]) -> Result<reqwest::Url, StoreError> {
        let mut all = vec!["b", self.bucket.as_str()];
        all.extend(segments);
        self.api.url(&all).map_err(StoreError::Failed)
    }

    /// The newest object under `prefix` (latest update, then greatest name) and its bytes, or
    /// `None` when there is none: OpenBao's raft snapshots in the lineage's bucket. Listing is
    /// a JSON API request (Google's client lists over gRPC only), reading is Google's client.
    pub fn newest(&self, prefix: &str) -> Result<Option<(String, Vec<u8>)>, StoreError> {
        let mut newest: Option<(String, String)> = None;
        let mut page: Option<String> = None;
        loop {
            let mut url = self.json_url(&["o"])?;
            url.query_pairs_mut()
                .append_pair("prefix", prefix)
                .append_pair("fields", "items(name,updated),nextPageToken");
            if let Some(token) = &page {
                url.query_pairs_mut().append_pair("pageToken", token);
            }
            let request = self.json_request(reqwest::Method::GET, url);
            let listed: serde_json::Value = self.run(bounded("listing objects", async move {
                request
                    .await?
                    .json()
                    .await
                    .map_err(|e| StoreError::Failed(format!("listing objects: {e}")))
            }))?;
            for item in listed["items"].as_array().into_iter().flatten() {
                let name = item["name"].as_str().unwrap_or_default();
                // RFC 3339 times in one format compare as text.
                let updated = item["updated"].as_str().unwrap_or_default();
                let newer =
                    newest.as_ref().is_none_or(|(n, u)| (updated, name) > (u.as_str(), n.as_str()));
                if !name.ends_with('/') && newer {
                    newest = Some((name.to_string(), updated.to_string()));
                }
            }
            match listed["nextPageToken"].as_str() {
                Some(token) if !token.is_empty() => page = Some(token.to_string()),
                _ => break,
            }
        }
        let Some((name, _)) = newest else { return Ok(None) };
        Ok(self.get(&name)?.map(|object| (name, object.bytes)))
    }
}

/// A generation as the engine stores versions, and back.
fn generation(version: &str) -> Result<i64, StoreError> {
    version.parse().map_err(|_| StoreError::Failed(format!("{version:?} is not a generation")))
}

impl ObjectStore for GcsStateStore {
    fn location(&self, key: &str) -> String {
        format!("gs://{}/{key}", self.bucket)
    }

    fn get(&self, key: &str) -> Result<Option<StoredObject>, StoreError> {
        let (client, bucket) = self.client();
        let key = key.to_string();
        self.run(bounded("reading the object", async move {
            let client = client.await?;
            let mut read = match client.read_object(bucket, key).send().await {
                Ok(read) => read,
                Err(e) => {
                    return match classify(&e) {
                        StoreError::Missing => Ok(None),
                        other => Err(other),
                    };
                }
            };
            let version = read.object().generation.to_string();
            let mut bytes = Vec::new();
            while let Some(chunk) = read.next().await {
                bytes.extend_from_slice(&chunk.map_err(|e| classify(&e))?);
            }
            Ok(Some(StoredObject { bytes, version }))
        }))
    }

    fn put(&self, key: &str, bytes: &[u8], condition: Condition) -> Result<String, StoreError> {
        let required = match condition {
            Condition::Absent => 0,
            Condition::Version(version) => generation(&version)?,
        };
        let (client, bucket) = self.client();
        let (key, payload) = (key.to_string(), bytes::Bytes::copy_from_slice(bytes));
        self.run(bounded("writing the object", async move {
            let client = client.await?;
            let written = client
                .write_object(bucket, key, payload)
                .set_content_type("application/json")
                .set_if_generation_match(required)
                .send_buffered()
                .await
                .map_err(|e| classify(&e))?;
            Ok(written.generation.to_string())
        }))
    }

    fn delete(&self, key: &str, version: &str) -> Result<(), StoreError> {
        let mut url = self.json_url(&["o", key])?;
        url.query_pairs_mut().append_pair("ifGenerationMatch", &generation(version)?.to_string());
        let request = self.json_request(reqwest::Method::DELETE, url);
        self.run(bounded("deleting the object", async move { request.await.map(|_| ()) }))
    }

    fn keeps_old_versions(&self) -> Option<bool> {
        let mut url = self.json_url(&[]).ok()?;
        url.query_pairs_mut().append_pair("fields", "versioning");
        let request = self.json_request(reqwest::Method::GET, url);
        self.run(bounded("reading the bucket", async move {
            let bucket: serde_json::Value = request
                .await?
                .json()
                .await
                .map_err(|e| StoreError::Failed(format!("reading the bucket: {e}")))?;
            Ok(bucket["versioning"]["enabled"].as_bool().unwrap_or(false))
        }))
        .ok()
    }
}

/// Data keys sealed by Cloud KMS: a new data key comes from the system's secure random source
/// (Cloud KMS has no data-key call) and is stored encrypted by the crypto key; `Decrypt` gives
/// it back to whoever may use that key.
pub struct CloudKmsDataKeys {
    /// The crypto key new data keys are sealed with
    /// (`projects/P/locations/L/keyRings/R/cryptoKeys/K`; `None`: this source only opens).
    key_name: Option<String>,
    endpoint: String,
    credentials: Credentials,
    client:
        std::sync::Arc<tokio::sync::OnceCell<google_cloud_kms_v1::client::KeyManagementService>>,
    calls: Blocking,
}

impl std::fmt::Debug for CloudKmsDataKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CloudKmsDataKeys").field("key_name", &self.key_name).finish()
    }
}

impl CloudKmsDataKeys {
    /// Data keys sealed with the crypto key `key_name`, or, without one, a source that only
    /// opens envelopes; Cloud KMS at `endpoint` without credentials (a local GCP) or at Google
    /// with Application Default Credentials. Makes no call.
    pub fn new(key_name: Option<&str>, endpoint: Option<&str>) -> Result<Self, String> {
        Ok(CloudKmsDataKeys {
            key_name: key_name.map(str::to_string),
            endpoint: endpoint.unwrap_or(KMS_ENDPOINT).trim_end_matches('/').to_string(),
            credentials: credentials(endpoint)?,
            client: Default::default(),
            calls: Blocking::new("state-cloudkms"),
        })
    }

    fn client(
        &self,
    ) -> impl Future<Output = Result<google_cloud_kms_v1::client::KeyManagementService, String>>
    + Send
    + 'static {
        let (cell, credentials, endpoint) =
            (self.client.clone(), self.credentials.clone(), self.endpoint.clone());
        async move {
            cell.get_or_try_init(|| async move {
                google_cloud_kms_v1::client::KeyManagementService::builder()
                    .with_endpoint(endpoint)
                    .with_credentials(credentials)
                    .build()
                    .await
                    .map_err(|e| format!("making the Cloud KMS client: {e}"))
            })
            .await
            .cloned()
        }
    }
}

/// The base64 form data keys are stored in.
fn b64() -> base64::engine::GeneralPurpose {
    base64::engine::general_purpose::STANDARD
}

impl KeySource for CloudKmsDataKeys {
    fn method(&self) -> &'static str {
        "gcp_kms"
    }

    fn new_key(&self) -> Result<(DataKey, serde_json::Value), String> {
        use base64::Engine as _;
        let key_name = self.key_name.clone().ok_or("no Cloud KMS key to seal data keys with")?;
        let key = DataKey::random()?;
        let clear = bytes::Bytes::copy_from_slice(key.expose());
        let client = self.client();
        let sealed = self.calls.run(
            async move {
                let call = client.await?.encrypt().set_name(&key_name).set_plaintext(clear).send();
                let sealed = tokio::time::timeout(CALL_TIMEOUT, call)
                    .await
                    .map_err(|_| format!("Cloud KMS: no answer in {CALL_TIMEOUT:?}"))?
                    .map_err(|e| format!("Cloud KMS: {e}"))?;
                Ok(serde_json::json!({
                    "key_name": key_name,
                    "encrypted_key": b64().encode(&sealed.ciphertext),
                }))
            },
            "the Cloud KMS call stopped".to_string(),
        )?;
        Ok((key, sealed))
    }

    fn open_key(&self, stored: &serde_json::Value) -> Result<DataKey, String> {
        use base64::Engine as _;
        let (Some(key_name), Some(sealed)) = (
            stored["key_name"].as_str().map(str::to_string),
            stored["encrypted_key"].as_str().and_then(|k| b64().decode(k).ok()),
        ) else {
            return Err("its Cloud KMS key settings are not valid".into());
        };
        let client = self.client();
        self.calls.run(
            async move {
                let call = client
                    .await?
                    .decrypt()
                    .set_name(&key_name)
                    .set_ciphertext(bytes::Bytes::from(sealed))
                    .send();
                let opened = tokio::time::timeout(CALL_TIMEOUT, call)
                    .await
                    .map_err(|_| format!("Cloud KMS: no answer in {CALL_TIMEOUT:?}"))?
                    .map_err(|e| format!("Cloud KMS: {e}"))?;
                let clear: [u8; 32] = opened
                    .plaintext
                    .as_ref()
                    .try_into()
                    .map_err(|_| "Cloud KMS answered without a 32-byte data key".to_string())?;
                Ok(DataKey::new(clear))
            },
            "the Cloud KMS call stopped".to_string(),
        )
    }
}
