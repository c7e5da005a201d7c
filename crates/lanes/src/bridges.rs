//! The AWS services the other providers lean on: Secrets Manager as a secret store, the S3
//! snapshot bucket as OpenBao's snapshot source, and EKS bearer tokens for the cluster.

use engine::Secret;
use engine::spec::SpecSource;
use engine_aws::AwsProvider;
use engine_bootstrap::kube::{ConnectError, TokenSource};
use engine_openbao::{HookError, SecretSink, SecretSource, Snapshot, SnapshotSource};
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
