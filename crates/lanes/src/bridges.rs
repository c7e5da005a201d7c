//! The cloud services the other providers lean on: Secrets Manager (AWS) or Secret Manager
//! (GCP) as the secret store, the S3 or Cloud Storage snapshot bucket as OpenBao's snapshot
//! source, and EKS or GKE bearer tokens for the cluster.

use engine::Secret;
use engine::spec::SpecSource;
use engine_aws::AwsProvider;
use engine_bootstrap::kube::{ConnectError, TokenSource};
use engine_openbao::{HookError, SecretSink, SecretSource, Snapshot, SnapshotSink, SnapshotSource};
use std::sync::Arc;

/// AWS Secrets Manager as the secret store of OpenBao's credentials and the bootstrap's Secrets.
pub struct SecretsManager(pub Arc<AwsProvider>);

#[async_trait::async_trait]
impl SecretSource for SecretsManager {
    async fn get(&self, name: &str) -> Result<Option<Secret>, HookError> {
        let clients = self.0.clients();
        engine_aws::secretsmanager::get_secret_string(clients, name)
            .await
            .map(|v| v.map(|v| Secret::new(v.expose())))
            .map_err(|e| HookError(e.message))
    }
}

#[async_trait::async_trait]
impl SecretSink for SecretsManager {
    async fn put(&self, name: &str, value: &Secret) -> Result<(), HookError> {
        let clients = self.0.clients();
        let value = engine_aws::secretsmanager::SecretValue::new(value.expose());
        engine_aws::secretsmanager::put_secret_string(clients, name, &value)
            .await
            .map(|_| ())
            .map_err(|e| HookError(e.message))
    }
}

#[async_trait::async_trait]
impl engine_tailscale::KeyStore for SecretsManager {
    async fn get(&self, name: &str) -> Result<Option<Secret>, String> {
        SecretSource::get(self, name).await.map_err(|e| e.0)
    }

    async fn put(&self, name: &str, value: &Secret) -> Result<(), String> {
        SecretSink::put(self, name, value).await.map_err(|e| e.0)
    }

    async fn delete(&self, name: &str) -> Result<(), String> {
        engine_aws::secretsmanager::delete_secret(self.0.clients(), name)
            .await
            .map_err(|e| e.message)
    }
}

/// The OpenBao snapshot bucket and key prefix of `source`, if it makes the server.
pub(crate) fn snapshot_location(source: &SpecSource) -> Option<(String, String)> {
    let globals = source.globals().ok()?;
    let section =
        source.section::<engine_aws::stages::openbao::spec::OpenBaoSection>("openbao").ok()??;
    let server = section.server?;
    Some((
        engine_aws::stages::openbao::spec::bucket_name(&globals, &server),
        server.snapshots.prefix.clone(),
    ))
}

/// The newest raft snapshot in the lineage's S3 bucket: what `openbao_init` restores instead of
/// initialising a new server.
pub(crate) struct S3Snapshots {
    pub aws: Arc<AwsProvider>,
    pub location: Option<(String, String)>,
}

#[async_trait::async_trait]
impl SnapshotSource for S3Snapshots {
    async fn newest(&self) -> Result<Option<Snapshot>, HookError> {
        let Some((bucket, prefix)) = &self.location else {
            return Ok(None);
        };
        let clients = self.aws.clients();
        let found = engine_aws::s3::snapshots::download_newest(clients, bucket, prefix)
            .await
            .map_err(|e| HookError(e.message))?;
        Ok(found.map(|(snapshot, data)| Snapshot {
            name: format!("s3://{bucket}/{}", snapshot.key),
            data,
        }))
    }
}

#[async_trait::async_trait]
impl SnapshotSink for S3Snapshots {
    async fn put(&self, name: &str, data: Vec<u8>) -> Result<String, HookError> {
        let Some((bucket, prefix)) = &self.location else {
            return Err(HookError("the spec names no snapshot bucket".into()));
        };
        let key = format!("{prefix}{name}");
        engine_aws::s3::snapshots::upload(self.aws.clients(), bucket, &key, data)
            .await
            .map_err(|e| HookError(e.message))?;
        Ok(format!("s3://{bucket}/{key}"))
    }
}

/// EKS bearer tokens from the AWS credential chain.
pub(crate) struct EksTokenSource {
    pub sdk: aws_config::SdkConfig,
    pub region: String,
}

#[async_trait::async_trait]
impl TokenSource for EksTokenSource {
    async fn token(&self, cluster: &str) -> Result<Secret, ConnectError> {
        let credentials = self
            .sdk
            .credentials_provider()
            .ok_or_else(|| ConnectError("no AWS credentials to sign an EKS token".into()))?;
        engine_aws::eks::token::EksTokens::new(credentials, &self.region)
            .token(cluster)
            .await
            .map(Secret::new)
            .map_err(ConnectError)
    }
}

/// GKE bearer tokens: an OAuth2 access token of the environment's Google credentials.
pub(crate) struct GkeTokenSource;

#[async_trait::async_trait]
impl engine_bootstrap::kube::TokenSource for GkeTokenSource {
    async fn token(
        &self,
        _cluster: &str,
    ) -> Result<engine::Secret, engine_bootstrap::kube::ConnectError> {
        engine_gcp::access_token().await.map_err(engine_bootstrap::kube::ConnectError)
    }
}

/// GCP Secret Manager as the secret store of the GCP lane: OpenBao's credentials, the
/// intermediate bundle, the bootstrap's Secrets. A client that could not be made (no Google
/// credentials) fails each call with why.
pub struct GcpSecretManager(Result<engine_gcp::SecretManager, String>);

impl GcpSecretManager {
    /// Secret Manager in `config`'s project, reached as `config` says. Makes no call.
    pub async fn for_config(config: &engine_gcp::GcpConfig) -> Self {
        let made = engine_gcp::SecretManager::new(&config.project, config.endpoint.as_deref());
        GcpSecretManager(made.await.map_err(|e| e.to_string()))
    }

    fn store(&self) -> Result<&engine_gcp::SecretManager, HookError> {
        self.0.as_ref().map_err(|e| HookError(e.clone()))
    }
}

#[async_trait::async_trait]
impl SecretSource for GcpSecretManager {
    async fn get(&self, name: &str) -> Result<Option<Secret>, HookError> {
        self.store()?.get(name).await.map_err(|e| HookError(e.message))
    }
}

#[async_trait::async_trait]
impl SecretSink for GcpSecretManager {
    async fn put(&self, name: &str, value: &Secret) -> Result<(), HookError> {
        self.store()?.put(name, value).await.map_err(|e| HookError(e.message))
    }
}

#[async_trait::async_trait]
impl engine_tailscale::KeyStore for GcpSecretManager {
    async fn get(&self, name: &str) -> Result<Option<Secret>, String> {
        SecretSource::get(self, name).await.map_err(|e| e.0)
    }

    async fn put(&self, name: &str, value: &Secret) -> Result<(), String> {
        SecretSink::put(self, name, value).await.map_err(|e| e.0)
    }

    async fn delete(&self, name: &str) -> Result<(), String> {
        self.store().map_err(|e| e.0)?.delete(name).await.map_err(|e| e.message)
    }
}

/// The newest raft snapshot in the GCP lineage's bucket.
pub(crate) struct GcsSnapshots {
    location: Option<(String, String)>,
    endpoint: Option<String>,
}

impl GcsSnapshots {
    /// The snapshots of `spec`'s `[openbao.server]`, at `endpoint` (a local GCP) or Google's.
    pub fn for_spec(spec: &SpecSource, endpoint: Option<&str>) -> Self {
        GcsSnapshots {
            location: engine_gcp::stages::openbao::snapshot_location(spec),
            endpoint: endpoint.map(str::to_string),
        }
    }
}

#[async_trait::async_trait]
impl SnapshotSource for GcsSnapshots {
    async fn newest(&self) -> Result<Option<Snapshot>, HookError> {
        let Some((bucket, prefix)) = self.location.clone() else {
            return Ok(None);
        };
        let store =
            engine_gcp::GcsStateStore::new(&bucket, self.endpoint.as_deref()).map_err(HookError)?;
        // The store's calls are blocking (it is the state's store too).
        let found = tokio::task::spawn_blocking(move || store.newest(&prefix))
            .await
            .map_err(|e| HookError(format!("listing snapshots: {e}")))?
            .map_err(|e| HookError(format!("listing snapshots in gs://{bucket}: {e}")))?;
        Ok(found.map(|(name, data)| Snapshot { name: format!("gs://{bucket}/{name}"), data }))
    }
}

#[async_trait::async_trait]
impl SnapshotSink for GcsSnapshots {
    async fn put(&self, name: &str, data: Vec<u8>) -> Result<String, HookError> {
        let Some((bucket, prefix)) = self.location.clone() else {
            return Err(HookError("the spec names no snapshot bucket".into()));
        };
        let store =
            engine_gcp::GcsStateStore::new(&bucket, self.endpoint.as_deref()).map_err(HookError)?;
        let key = format!("{prefix}{name}");
        let object = key.clone();
        // A new object: a name already taken is refused, never overwritten.
        let condition = engine_state::Condition::Absent;
        tokio::task::spawn_blocking(move || {
            engine_state::ObjectStore::put(&store, &object, &data, condition)
        })
        .await
        .map_err(|e| HookError(format!("keeping the snapshot: {e}")))?
        .map_err(|e| HookError(format!("keeping the snapshot in gs://{bucket}/{key}: {e}")))?;
        Ok(format!("gs://{bucket}/{key}"))
    }
}

impl S3Snapshots {
    /// Whether the spec names a snapshot bucket.
    pub fn has_bucket(&self) -> bool {
        self.location.is_some()
    }
}

impl GcsSnapshots {
    /// Whether the spec names a snapshot bucket.
    pub fn has_bucket(&self) -> bool {
        self.location.is_some()
    }
}
