//! The providers of a run, and the bridges between them: the bootstrap reads Secret values from
//! AWS Secrets Manager through the AWS provider's clients. (The crates do not depend on each
//! other; the binary joins them.)

use engine::Provider;
use engine::spec::SpecSource;
use engine_aws::AwsProvider;
use engine_bootstrap::kube::{ConnectError, Kube, OutputsConnector, TokenSource};
use engine_bootstrap::openbao::{HookError, SecretSink, SecretSource, Snapshot, SnapshotSource};
use engine_bootstrap::platform::ClusterOutputs;
use engine_bootstrap::{BootstrapProvider, OpenBaoSetup, Secret};
use std::sync::Arc;

/// The providers of the AWS lane and the secret store they share.
pub struct Lane {
    pub providers: Vec<Arc<dyn Provider>>,
    pub aws: Arc<AwsProvider>,
    pub secrets: Arc<SecretsManager>,
}

/// Every provider the `engine` binary knows, for the AWS lane of `spec` (read here only to find
/// the OpenBao snapshot bucket and the region; the engine validates the spec).
pub async fn lane(spec: &SpecSource) -> Lane {
    let region = spec_region(spec);
    let sdk = engine_aws::sdk_config_from_env(Some(&region)).await;
    let aws = Arc::new(AwsProvider::for_spec(&sdk, spec));
    let secrets = Arc::new(SecretsManager(aws.clone()));
    let store = secrets.clone();
    let snapshots = Arc::new(S3Snapshots { aws: aws.clone(), location: snapshot_location(spec) });
    // The EKS cluster of the spec: its outputs reach the bootstrap and OpenBao's JWT mount in the
    // same run; its API server is reached with a token minted from the credential chain.
    let cluster = engine_aws::stages::eks::cluster_address();
    let outputs = ClusterOutputs {
        section: "eks",
        endpoint: engine::Value::reference(&cluster, "endpoint"),
        ca_pem: engine::Value::reference(&cluster, "ca_pem"),
        host: engine::Value::reference(&cluster, "endpoint_host"),
        oidc_issuer: engine::Value::reference(&cluster, "oidc_issuer"),
        oidc_ca_pem: None,
        installed_by: engine_aws::stages::eks::daemonset_installers(),
    };
    let tokens = EksTokenSource { sdk, region };
    let bootstrap = BootstrapProvider::builder("aws")
        .cluster(outputs, Arc::new(OutputsConnector(tokens)))
        .openbao(OpenBaoSetup {
            sink: secrets.clone(),
            source: secrets.clone(),
            snapshots,
            // OpenBao is configured once its servers and their DNS name exist.
            after: engine_aws::stages::openbao::serving(),
            ..Default::default()
        })
        .kube(move |connector| {
            Kube::builder(connector)
                .secret_source(secrets)
                .pull_options(engine_helm::PullOptions {
                    cache_dir: chart_cache(),
                    ..Default::default()
                })
                .build()
        })
        .build();
    Lane { providers: vec![aws.clone(), Arc::new(bootstrap)], aws, secrets: store }
}

/// Where pulled charts are cached (`~/.cache/engine/charts`).
fn chart_cache() -> Option<std::path::PathBuf> {
    std::env::var_os("HOME").map(|h| std::path::PathBuf::from(h).join(".cache/engine/charts"))
}

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

/// The OpenBao snapshot bucket and key prefix of the spec at `path`, if it makes the server.
fn snapshot_location(source: &SpecSource) -> Option<(String, String)> {
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
struct S3Snapshots {
    aws: Arc<AwsProvider>,
    location: Option<(String, String)>,
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

/// The spec's `[globals] region` (empty when unreadable: the engine reports the spec's errors).
fn spec_region(source: &SpecSource) -> String {
    source.globals().ok().map(|g| g.region).unwrap_or_default()
}

/// EKS bearer tokens from the AWS credential chain.
struct EksTokenSource {
    sdk: aws_config::SdkConfig,
    region: String,
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
