//! Secret Manager as the GCP lane's secret store: OpenBao's root token and recovery keys are
//! written to it, and OpenBao's token, the intermediate CA bundle and the bootstrap's Secrets
//! are read from it (what Secrets Manager is on AWS).
//!
//! A value is the secret's newest version. Writing one that is already the newest adds no
//! version, so a rerun leaves nothing behind; a secret that does not exist yet is made with
//! automatic replication and the engine's label.

use crate::clients::ClientError;
use crate::error::kind_error;
use engine::{ApiCall, ApiCallCounter, KindError, Secret};
use google_cloud_gax::error::Error;
use google_cloud_secretmanager_v1::client::SecretManagerService;
use google_cloud_secretmanager_v1::model::{Replication, SecretPayload, replication};

/// Secret Manager in one project.
pub struct SecretManager {
    client: SecretManagerService,
    project: String,
    calls: ApiCallCounter,
}

impl SecretManager {
    /// Secrets of `project`, at `endpoint` without credentials (a local GCP) or at Google with
    /// Application Default Credentials. Makes no call.
    pub async fn new(project: &str, endpoint: Option<&str>) -> Result<Self, ClientError> {
        let mut builder = SecretManagerService::builder();
        if let Some(endpoint) = endpoint {
            let anonymous = google_cloud_auth::credentials::anonymous::Builder::new().build();
            builder = builder.with_endpoint(endpoint).with_credentials(anonymous);
        }
        let client = builder
            .build()
            .await
            .map_err(|e| ClientError { service: "secretmanager", message: e.to_string() })?;
        Ok(SecretManager { client, project: project.into(), calls: ApiCallCounter::default() })
    }

    fn record(&self, operation: &str) {
        self.calls
            .record(&ApiCall { service: "secretmanager".into(), operation: operation.into() });
    }

    /// Calls made so far.
    pub fn api_calls(&self) -> engine::ApiCalls {
        self.calls.snapshot()
    }

    /// The newest version of secret `name`, or `None` when there is no such secret (or it has
    /// no version yet).
    pub async fn get(&self, name: &str) -> Result<Option<Secret>, KindError> {
        let op = "secretmanager:AccessSecretVersion";
        self.record("AccessSecretVersion");
        let version = format!("projects/{}/secrets/{name}/versions/latest", self.project);
        match self.client.access_secret_version().set_name(version).send().await {
            Ok(answer) => {
                let data = answer.payload.map(|p| p.data).unwrap_or_default();
                let text = String::from_utf8(data.to_vec()).map_err(|_| {
                    KindError::new(format!("{op}: secret `{name}` is not UTF-8 text"))
                })?;
                Ok(Some(Secret::new(text)))
            }
            Err(e) if absent(&e) => Ok(None),
            Err(e) => Err(kind_error(op, &e)),
        }
    }

    /// Makes `value` the newest version of secret `name`, creating the secret if needed.
    pub async fn put(&self, name: &str, value: &Secret) -> Result<(), KindError> {
        if self.get(name).await?.is_some_and(|current| current.expose() == value.expose()) {
            return Ok(());
        }
        let secret = format!("projects/{}/secrets/{name}", self.project);
        self.record("CreateSecret");
        let created = self
            .client
            .create_secret()
            .set_parent(format!("projects/{}", self.project))
            .set_secret_id(name)
            .set_secret(
                google_cloud_secretmanager_v1::model::Secret::new()
                    .set_replication(
                        Replication::new().set_automatic(replication::Automatic::new()),
                    )
                    .set_labels([("engine-managed-by", engine::MANAGED_BY)]),
            )
            .send()
            .await;
        match created {
            Ok(_) => {}
            // Made earlier (by a run that died, or by hand): a new version is all it needs.
            Err(e) if e.http_status_code() == Some(409) => {}
            Err(e) => return Err(kind_error("secretmanager:CreateSecret", &e)),
        }
        self.record("AddSecretVersion");
        let data = bytes::Bytes::from(value.expose().as_bytes().to_vec());
        let checksum = crc32c::crc32c(&data) as i64;
        self.client
            .add_secret_version()
            .set_parent(secret)
            .set_payload(SecretPayload::new().set_data(data).set_data_crc32c(checksum))
            .send()
            .await
            .map_err(|e| kind_error("secretmanager:AddSecretVersion", &e))?;
        Ok(())
    }
}

impl SecretManager {
    /// Deletes secret `name` and every version of it, if it exists.
    pub async fn delete(&self, name: &str) -> Result<(), KindError> {
        self.record("DeleteSecret");
        let secret = format!("projects/{}/secrets/{name}", self.project);
        match self.client.delete_secret().set_name(secret).send().await {
            Ok(()) => Ok(()),
            Err(e) if e.http_status_code() == Some(404) => Ok(()),
            Err(e) => Err(kind_error("secretmanager:DeleteSecret", &e)),
        }
    }
}

/// No such secret, or no enabled version of it.
fn absent(e: &Error) -> bool {
    e.http_status_code() == Some(404)
        || e.status().is_some_and(|s| {
            s.code == google_cloud_gax::error::rpc::Code::FailedPrecondition
                && s.message.contains("no enabled")
        })
}
