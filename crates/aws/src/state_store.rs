//! State in AWS: the S3 [`ObjectStore`] of `[state] backend = "s3"`, and KMS data keys for
//! `[state.encryption] method = "aws_kms"`.
//!
//! Every write is conditional (`If-None-Match: *` to create, `If-Match: <etag>` to replace or
//! delete), so the engine's leases and state saves never overwrite another client's write:
//! S3 answers 412 (or 409 to a conditional write racing another) and the engine reads again.
//!
//! The engine's journal saves state synchronously, from inside the executor's async tasks and
//! from the lease's heartbeat thread; the calls run on their own runtime ([`Blocking`]).

use aws_config::SdkConfig;
use aws_sdk_s3::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};
use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::BucketVersioningStatus;
use aws_types::region::Region;
use engine::Blocking;
use engine_state::{Condition, DataKey, KeySource, ObjectStore, StoreError, StoredObject};
use std::future::Future;

/// `base` in `region`, every call bounded as the kinds' calls are.
fn in_region(base: &SdkConfig, region: &str) -> SdkConfig {
    let config = base.to_builder().region(Region::new(region.to_string()));
    config.timeout_config(crate::clients::call_timeouts()).build()
}

/// A bucket holding state objects.
pub struct S3StateStore {
    client: aws_sdk_s3::Client,
    bucket: String,
    calls: Blocking,
}

impl std::fmt::Debug for S3StateStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("S3StateStore").field("bucket", &self.bucket).finish()
    }
}

impl S3StateStore {
    /// The bucket `bucket` in `region`, reached with `base`'s credentials and endpoint.
    pub fn new(base: &SdkConfig, bucket: &str, region: &str) -> Self {
        let config = in_region(base, region);
        let client = aws_sdk_s3::Client::from_conf(
            aws_sdk_s3::config::Builder::from(&config).force_path_style(true).build(),
        );
        S3StateStore { client, bucket: bucket.to_string(), calls: Blocking::new("state-s3") }
    }

    fn run<T: Send + 'static>(
        &self,
        call: impl Future<Output = Result<T, StoreError>> + Send + 'static,
    ) -> Result<T, StoreError> {
        self.calls.run(call, StoreError::Failed("the S3 call stopped".into()))
    }
}

/// A failed call: a precondition that did not hold, a key that is gone, or anything else.
fn classify<E: ProvideErrorMetadata + std::error::Error + 'static>(
    e: SdkError<E, aws_smithy_runtime_api::http::Response>,
) -> StoreError {
    match e.raw_response().map(|r| r.status().as_u16()) {
        Some(412 | 409) => StoreError::Conflict,
        Some(404) => StoreError::Missing,
        _ => StoreError::Failed(DisplayErrorContext(&e).to_string()),
    }
}

impl ObjectStore for S3StateStore {
    fn location(&self, key: &str) -> String {
        format!("s3://{}/{key}", self.bucket)
    }

    fn get(&self, key: &str) -> Result<Option<StoredObject>, StoreError> {
        let (client, bucket, key) = (self.client.clone(), self.bucket.clone(), key.to_string());
        self.run(async move {
            let object = match client.get_object().bucket(bucket).key(key).send().await {
                Ok(object) => object,
                Err(e) => {
                    return match classify(e) {
                        StoreError::Missing => Ok(None),
                        other => Err(other),
                    };
                }
            };
            let version = object.e_tag().unwrap_or_default().to_string();
            let bytes = object
                .body
                .collect()
                .await
                .map_err(|e| StoreError::Failed(format!("reading the object: {e}")))?
                .into_bytes()
                .to_vec();
            Ok(Some(StoredObject { bytes, version }))
        })
    }

    fn put(&self, key: &str, bytes: &[u8], condition: Condition) -> Result<String, StoreError> {
        let request = self
            .client
            .put_object()
            .bucket(&self.bucket)
            .key(key)
            .content_type("application/json")
            .body(ByteStream::from(bytes.to_vec()));
        let request = match condition {
            Condition::Absent => request.if_none_match("*"),
            Condition::Version(etag) => request.if_match(etag),
        };
        self.run(async move {
            let written = request.send().await.map_err(classify)?;
            written
                .e_tag()
                .map(str::to_string)
                .ok_or_else(|| StoreError::Failed("S3 answered without an ETag".into()))
        })
    }

    fn delete(&self, key: &str, version: &str) -> Result<(), StoreError> {
        let request = self.client.delete_object().bucket(&self.bucket).key(key).if_match(version);
        self.run(async move { request.send().await.map(|_| ()).map_err(classify) })
    }

    fn keeps_old_versions(&self) -> Option<bool> {
        let request = self.client.get_bucket_versioning().bucket(&self.bucket);
        self.run(async move {
            let answer = request.send().await.map_err(classify)?;
            Ok(answer.status() == Some(&BucketVersioningStatus::Enabled))
        })
        .ok()
    }
}

/// Data keys from AWS KMS (`GenerateDataKey`, AES-256): the envelope stores the key encrypted
/// by KMS, and `Decrypt` gives it back to whoever may use the KMS key.
pub struct KmsDataKeys {
    client: aws_sdk_kms::Client,
    /// The KMS key new data keys are made under (`None`: this source only opens).
    key_id: Option<String>,
    calls: Blocking,
}

impl std::fmt::Debug for KmsDataKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KmsDataKeys").field("key_id", &self.key_id).finish()
    }
}

impl KmsDataKeys {
    /// Data keys under the KMS key `key_id` (an id, ARN or `alias/...`), or, without one, a
    /// source that only opens envelopes; KMS in `region`, reached with `base`'s credentials.
    pub fn new(base: &SdkConfig, region: &str, key_id: Option<&str>) -> Self {
        let client = aws_sdk_kms::Client::new(&in_region(base, region));
        KmsDataKeys {
            client,
            key_id: key_id.map(str::to_string),
            calls: Blocking::new("state-kms"),
        }
    }
}

fn kms_error<E: ProvideErrorMetadata + std::error::Error + 'static>(
    e: SdkError<E, aws_smithy_runtime_api::http::Response>,
) -> String {
    format!("AWS KMS: {}", DisplayErrorContext(&e))
}

/// The 32 bytes of a data key KMS answered with.
fn data_key(plaintext: Option<&aws_sdk_kms::primitives::Blob>) -> Result<[u8; 32], String> {
    plaintext
        .and_then(|p| p.as_ref().try_into().ok())
        .ok_or_else(|| "KMS answered without a 32-byte data key".to_string())
}

impl KeySource for KmsDataKeys {
    fn method(&self) -> &'static str {
        "aws_kms"
    }

    fn new_key(&self) -> Result<(DataKey, serde_json::Value), String> {
        let key_id = self.key_id.clone().ok_or("no KMS key to make data keys under")?;
        let request = self
            .client
            .generate_data_key()
            .key_id(&key_id)
            .key_spec(aws_sdk_kms::types::DataKeySpec::Aes256);
        self.calls.run(
            async move {
                let made = request.send().await.map_err(kms_error)?;
                let clear = data_key(made.plaintext())?;
                let sealed = made.ciphertext_blob().ok_or("KMS answered without the sealed key")?;
                use base64::Engine as _;
                let stored = serde_json::json!({
                    "key_id": made.key_id().unwrap_or(&key_id),
                    "encrypted_key": base64::engine::general_purpose::STANDARD.encode(sealed.as_ref()),
                });
                Ok((DataKey::new(clear), stored))
            },
            "the KMS call stopped".to_string(),
        )
    }

    fn open_key(&self, stored: &serde_json::Value) -> Result<DataKey, String> {
        use base64::Engine as _;
        let sealed = stored["encrypted_key"]
            .as_str()
            .and_then(|k| base64::engine::general_purpose::STANDARD.decode(k).ok())
            .ok_or("its KMS key settings are not valid")?;
        let mut request =
            self.client.decrypt().ciphertext_blob(aws_sdk_kms::primitives::Blob::new(sealed));
        if let Some(key_id) = stored["key_id"].as_str() {
            request = request.key_id(key_id);
        }
        self.calls.run(
            async move {
                let opened = request.send().await.map_err(kms_error)?;
                Ok(DataKey::new(data_key(opened.plaintext())?))
            },
            "the KMS call stopped".to_string(),
        )
    }
}
