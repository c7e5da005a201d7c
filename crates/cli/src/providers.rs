//! The providers of the AWS lane, and the bridges between them: AWS Secrets Manager as OpenBao's
//! secret store and the bootstrap's Secret source, the S3 snapshot bucket as OpenBao's snapshot
//! store, EKS tokens for the cluster's API server, and what the bootstrap does on EKS
//! ([`eks_profile`]). The crates do not depend on each other; this wiring joins them.
//!
//! A lane is made in two steps: configuration first (how OpenBao and the cluster are reached,
//! decided from the spec: [`engine_openbao::spec_connector`],
//! [`engine_bootstrap::kubeconfig_connector`]), then providers built with it, whose expansion
//! only computes resources. Test harnesses make the same providers with their own connectors.
//! A spec error found by the configuration step is an error of a provider's expansion too: the
//! engine reports it there, with every other error of the spec and before any API call.

use engine::Provider;
use engine::spec::SpecSource;
use engine::{Secret, Value};
use engine_aws::AwsProvider;
use engine_bootstrap::kube::{ConnectError, Kube, KubeConnector, OutputsConnector, TokenSource};
use engine_bootstrap::{BootstrapProvider, ClusterOutputs, ClusterProfile, kubeconfig_connector};
use engine_openbao::{
    BaoConnector, ClusterIssuer, HookError, NoConnector, OpenBao, OpenBaoProvider, SecretSink,
    SecretSource, Snapshot, SnapshotSource, spec_connector,
};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

/// Where the AWS lane addresses OpenBao's configuration.
pub const OPENBAO_PREFIX: &str = "aws.openbao.config";
/// Where the AWS lane addresses what goes inside the cluster.
pub const BOOTSTRAP_PREFIX: &str = "aws.bootstrap";

/// The providers of the AWS lane and the secret store they share.
pub struct Lane {
    pub providers: Vec<Arc<dyn Provider>>,
    pub aws: Arc<AwsProvider>,
    pub secrets: Arc<SecretsManager>,
}

/// Every provider the `engine` binary knows, for the AWS lane of `spec` (read here to find the
/// region, the OpenBao snapshot bucket, and how OpenBao and the cluster are reached; the engine
/// validates the spec).
pub async fn lane(spec: &SpecSource) -> Lane {
    let region = spec_region(spec);
    let sdk = engine_aws::sdk_config_from_env(Some(&region)).await;
    let aws = Arc::new(AwsProvider::for_spec(&sdk, spec));
    let secrets = Arc::new(SecretsManager(aws.clone()));

    // Configuration: OpenBao at the spec's address with the root token from Secrets Manager;
    // the cluster through the spec's kubeconfig, else the EKS cluster's outputs with a token
    // minted from the credential chain. (A spec error here is reported by the expansion.)
    let bao: Arc<dyn BaoConnector> = match spec_connector(spec, secrets.clone()) {
        Ok(Some(c)) => Arc::new(c),
        Ok(None) | Err(_) => Arc::new(NoConnector),
    };
    let cluster: Arc<dyn KubeConnector> = match kubeconfig_connector(spec) {
        Ok(Some(k)) => Arc::new(k),
        Ok(None) | Err(_) => Arc::new(OutputsConnector(EksTokenSource { sdk, region })),
    };

    let snapshots = Arc::new(S3Snapshots { aws: aws.clone(), location: snapshot_location(spec) });
    let bao = OpenBao::builder(bao)
        .secret_sink(secrets.clone())
        .secret_source(secrets.clone())
        .snapshots(snapshots)
        .ready_timeout(Duration::from_secs(600))
        .build();
    let pull = engine_helm::PullOptions { cache_dir: chart_cache(), ..Default::default() };
    let kube = Kube::builder(cluster).secret_source(secrets.clone()).pull_options(pull).build();
    let profile = eks_profile();
    let openbao = openbao_provider(bao, &profile);
    let bootstrap = bootstrap_provider(kube, profile);
    let providers: Vec<Arc<dyn Provider>> =
        vec![aws.clone(), Arc::new(openbao), Arc::new(bootstrap)];
    Lane { providers, aws, secrets }
}

/// The `[openbao]` provider of the AWS lane: configured after its servers and their DNS name,
/// its cluster JWT mounts trusting the profile's issuer.
pub fn openbao_provider(bao: OpenBao, profile: &ClusterProfile) -> OpenBaoProvider {
    let builder = OpenBaoProvider::builder("aws", OPENBAO_PREFIX, bao)
        .after(engine_aws::stages::openbao::serving());
    match profile.jwt_issuer.clone() {
        Some(issuer) => builder.cluster_issuer(issuer).build(),
        None => builder.build(),
    }
}

/// The `[bootstrap]` provider of the AWS lane: inside the EKS cluster the spec makes.
pub fn bootstrap_provider(kube: Kube, profile: ClusterProfile) -> BootstrapProvider {
    BootstrapProvider::builder("aws", BOOTSTRAP_PREFIX, kube)
        .profile(profile)
        .cluster(eks_outputs())
        .build()
}

/// The EKS cluster of the spec: references to its outputs, and the addons that install the
/// DaemonSets the bootstrap parks.
pub fn eks_outputs() -> ClusterOutputs {
    let cluster = engine_aws::stages::eks::cluster_address();
    ClusterOutputs {
        section: "eks",
        endpoint: Value::reference(&cluster, "endpoint"),
        ca_pem: Value::reference(&cluster, "ca_pem"),
        host: Value::reference(&cluster, "endpoint_host"),
        installed_by: engine_aws::stages::eks::daemonset_installers(),
    }
}

/// What the bootstrap does on EKS: Cilium in ENI mode (with its CNI configuration) replacing
/// the VPC CNI and kube-proxy, `eks-<cluster>-vars`, Flux's `aws` cluster type, and OpenBao's
/// cluster JWT mounts trusting the EKS cluster's OIDC issuer.
pub fn eks_profile() -> ClusterProfile {
    let cni = json!({
        "cniVersion": "0.3.1",
        "name": "cilium",
        "plugins": [{
            "cniVersion": "0.3.1",
            "type": "cilium-cni",
            "eni": {
                "subnet-tags": {"cilium.io/pod-subnet": "true"},
                "first-interface-index": 1,
            },
            "ipam": {"pre-allocate": 8},
        }],
    });
    let cluster = engine_aws::stages::eks::cluster_address();
    ClusterProfile {
        vars_config_map: "eks-{cluster}-vars".into(),
        cilium_values: json!({
            "kubeProxyReplacement": true,
            "k8sServicePort": 443,
            "ipam": {"mode": "eni"},
            "eni": {"enabled": true, "awsEnablePrefixDelegation": true},
            "routingMode": "native",
            "egressMasqueradeInterfaces": "eth+",
            "cni": {"customConf": true, "configMap": "cilium-cni-configuration"},
            "encryption": {"enabled": true, "type": "wireguard"},
            "gatewayAPI": {"enabled": true},
            "hubble": {"enabled": true, "relay": {"enabled": true}},
            "operator": {"replicas": 1},
        }),
        cni_configuration: Some(json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "cilium-cni-configuration", "namespace": "kube-system"},
            "data": {"cni-config": serde_json::to_string_pretty(&cni).unwrap_or_default()},
        })),
        parked_daemonsets: vec!["aws-node".into(), "kube-proxy".into()],
        flux_cluster_type: "aws".into(),
        storage_class: None,
        jwt_issuer: Some(ClusterIssuer {
            section: "eks",
            url: Value::reference(&cluster, "oidc_issuer"),
            ca_pem: None,
        }),
    }
}

/// What the bootstrap does on GKE, for the GCP lane once it has a cluster: Cilium with
/// Kubernetes IPAM in GKE's CNI directory, `gke-<cluster>-vars`, Flux's `gcp` cluster type.
pub fn gke_profile() -> ClusterProfile {
    let mut profile = ClusterProfile {
        vars_config_map: "gke-{cluster}-vars".into(),
        flux_cluster_type: "gcp".into(),
        ..ClusterProfile::default()
    };
    profile.cilium_values["cni"] = json!({"binPath": "/home/kubernetes/bin", "exclusive": true});
    profile
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
