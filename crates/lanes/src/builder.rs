//! [`LaneBuilder`]: the AWS lane's providers, configured from the spec, with the overrides a
//! test harness needs to point them at local peers.
//!
//! Configuration happens here, once, from the spec's globals and sections (the region, the
//! OpenBao snapshot bucket, how OpenBao and the cluster are reached); the providers' expansion
//! then only computes resources. A spec error met here is left for the expansion to report,
//! with every other error of the spec and before any API call.

use crate::bridges::{
    EksTokenSource, GcpSecretManager, GcsSnapshots, GkeTokenSource, S3Snapshots, SecretsManager,
    snapshot_location,
};
use crate::profiles::{eks_outputs, eks_profile, gke_outputs, gke_profile};
use engine::spec::{
    EncryptionMethod, EncryptionSection, PASSPHRASE_ENV, SpecSource, StateLocation,
};
use engine::{Backend, EngineBuilder, LocalBackend, Provider, RemoteBackend};
use engine_aws::{AwsProvider, KmsDataKeys, S3StateStore};
use engine_bootstrap::kube::{Kube, KubeConnector, OutputsConnector};
use engine_bootstrap::{BootstrapProvider, kubeconfig_connector};
use engine_gcp::GcpProvider;
use engine_gcp::{CloudKmsDataKeys, GcsStateStore};
use engine_helm::PullOptions;
use engine_openbao::{
    BaoConnector, ClusterIssuer, Escrow, NoConnector, OpenBao, OpenBaoProvider, SecretSink,
    SecretSource, SnapshotSink, SnapshotSource, StoredTokenConnector, spec_connector,
};
use engine_state::{Encryption, KeySource, Passphrase};
use engine_tailscale::{TailscaleConfig, TailscaleProvider};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// Where the AWS lane addresses OpenBao's configuration.
pub const OPENBAO_PREFIX: &str = "aws.openbao.config";
/// Where the GCP lane addresses OpenBao's configuration.
pub const GCP_OPENBAO_PREFIX: &str = "gcp.openbao.config";
/// Where the AWS lane addresses what goes inside the cluster.
pub const BOOTSTRAP_PREFIX: &str = "aws.bootstrap";
/// Where the GCP lane addresses what goes inside the cluster.
pub const GCP_BOOTSTRAP_PREFIX: &str = "gcp.bootstrap";

/// A store of secrets both ways: OpenBao writes its credentials to it, and OpenBao's token and
/// the bootstrap's Secrets are read from it (production: AWS Secrets Manager).
pub trait SecretStore: SecretSource + SecretSink {}
impl<T: SecretSource + SecretSink> SecretStore for T {}

/// Environment variable naming one endpoint for every GCP service (a local GCP such as
/// `testenv/gcp-fake-server`); requests then carry no credentials.
pub const GCP_ENDPOINT_ENV: &str = "ENGINE_GCP_ENDPOINT";

/// The providers of a spec's lane.
pub struct Lane {
    /// The AWS resources: network, OpenBao's servers, EKS.
    pub aws: Arc<AwsProvider>,
    /// The GCP resources (network), for a spec with `cloud = "gcp"`.
    pub gcp: Option<Arc<GcpProvider>>,
    /// OpenBao's configuration, through its API.
    pub openbao: Arc<OpenBaoProvider>,
    /// What goes inside the new cluster.
    pub bootstrap: Arc<BootstrapProvider>,
    /// The secret store the providers share.
    pub secrets: Arc<dyn SecretStore>,
    /// The tailnet-wide pieces, for a spec with `[tailnet]`.
    pub tailscale: Option<Arc<TailscaleProvider>>,
    /// How a state kept in a bucket is reached.
    state_access: StateAccess,
}

/// How a state backend reaches the clouds.
#[derive(Debug, Clone)]
pub struct StateAccess {
    /// AWS (credentials, endpoint): S3 buckets and AWS KMS keys.
    pub aws: aws_config::SdkConfig,
    /// One endpoint for every GCP service (a local GCP, without credentials); `None`: Google's
    /// endpoints with Application Default Credentials. Cloud Storage buckets, Cloud KMS keys.
    pub gcp_endpoint: Option<String>,
}

impl StateAccess {
    /// AWS from the environment's credential chain in `region`, GCP at `$ENGINE_GCP_ENDPOINT`
    /// or Google's.
    pub async fn from_env(region: Option<&str>) -> Self {
        StateAccess {
            aws: engine_aws::sdk_config_from_env(region).await,
            gcp_endpoint: std::env::var(GCP_ENDPOINT_ENV).ok().filter(|e| !e.is_empty()),
        }
    }
}

impl Lane {
    /// Every provider of the lane, in the order the engine is given them.
    pub fn providers(&self) -> Vec<Arc<dyn Provider>> {
        let mut providers: Vec<Arc<dyn Provider>> =
            vec![self.aws.clone(), self.openbao.clone(), self.bootstrap.clone()];
        if let Some(gcp) = &self.gcp {
            providers.push(gcp.clone());
        }
        if let Some(tailscale) = &self.tailscale {
            providers.push(tailscale.clone());
        }
        providers
    }

    /// `builder` with every provider of the lane.
    pub fn add_to(&self, builder: EngineBuilder) -> EngineBuilder {
        self.providers().into_iter().fold(builder, |b, p| b.provider(p))
    }

    /// The state backend at `location` (`SpecSource::state_location`), sealed as `encryption`
    /// says (`SpecSource::state_encryption`), reaching the clouds as the lane does. No call is
    /// made.
    pub fn state_backend(
        &self,
        location: &StateLocation,
        encryption: Option<&EncryptionSection>,
    ) -> Result<Arc<dyn Backend>, String> {
        state_backend(location, encryption, &self.state_access)
    }
}

/// The state backend at `location`, sealed as `encryption` says: a local file, an S3 object
/// (reached with `access.aws`'s credentials and endpoint, in the location's region) or a Cloud
/// Storage object (at `access.gcp_endpoint`, else Google's). AWS KMS data keys are made in
/// `access.aws`'s region. No call is made; a passphrase the method needs must be in the
/// environment.
pub fn state_backend(
    location: &StateLocation,
    encryption: Option<&EncryptionSection>,
    access: &StateAccess,
) -> Result<Arc<dyn Backend>, String> {
    let sealing = Arc::new(state_encryption(encryption, access)?);
    let remote = |store: Arc<dyn engine_state::ObjectStore>, key: &str, lease: Duration| {
        Arc::new(RemoteBackend::new(store, key, lease).encrypted(sealing.clone()))
    };
    Ok(match location {
        StateLocation::Local { path } => {
            Arc::new(LocalBackend::new(path).encrypted(sealing.clone()))
        }
        StateLocation::S3 { bucket, key, region, lease } => {
            remote(Arc::new(S3StateStore::new(&access.aws, bucket, region)), key, *lease)
        }
        StateLocation::Gcs { bucket, key, lease } => {
            let store = GcsStateStore::new(bucket, access.gcp_endpoint.as_deref())?;
            remote(Arc::new(store), key, *lease)
        }
    })
}

/// How state is sealed: with the spec's method, or in clear. Either way, envelopes sealed with
/// AWS KMS or Cloud KMS data keys, or with the passphrase in `$ENGINE_STATE_PASSPHRASE`, can be
/// read (a state changing method, or turned back to clear).
fn state_encryption(
    section: Option<&EncryptionSection>,
    access: &StateAccess,
) -> Result<Encryption, String> {
    let aws = &access.aws;
    let gcp = access.gcp_endpoint.as_deref();
    let region = aws.region().map(|r| r.to_string()).unwrap_or_default();
    let passphrase_in = |variable: &str| -> Result<Option<Arc<dyn KeySource>>, String> {
        match std::env::var(variable).ok().filter(|p| !p.is_empty()) {
            Some(p) => Passphrase::new(p)
                .map(|p| Some(Arc::new(p) as Arc<dyn KeySource>))
                .map_err(|e| format!("${variable}: {e}")),
            None => Ok(None),
        }
    };
    let write: Option<Arc<dyn KeySource>> = match section {
        None => None,
        Some(section) => Some(match section.method {
            EncryptionMethod::Passphrase => {
                let variable = section.passphrase_variable();
                passphrase_in(variable)?.ok_or_else(|| {
                    format!("[state.encryption] seals the state with a passphrase: set ${variable}")
                })?
            }
            EncryptionMethod::AwsKms => {
                Arc::new(KmsDataKeys::new(aws, &region, section.kms_key_id.as_deref()))
            }
            EncryptionMethod::GcpKms => {
                Arc::new(CloudKmsDataKeys::new(section.kms_key_id.as_deref(), gcp)?)
            }
        }),
    };
    // The other methods open what they sealed. Opening Cloud KMS envelopes needs Google
    // credentials; without them such a state says it cannot be opened, and every other state
    // still can.
    let writes =
        |method: EncryptionMethod| write.as_ref().is_some_and(|w| w.method() == method.name());
    let mut read: Vec<Arc<dyn KeySource>> = Vec::new();
    if !writes(EncryptionMethod::AwsKms) {
        read.push(Arc::new(KmsDataKeys::new(aws, &region, None)));
    }
    if !writes(EncryptionMethod::GcpKms) {
        read.extend(
            CloudKmsDataKeys::new(None, gcp).ok().map(|s| Arc::new(s) as Arc<dyn KeySource>),
        );
    }
    if !writes(EncryptionMethod::Passphrase) {
        read.extend(passphrase_in(PASSPHRASE_ENV)?);
    }
    Ok(match write {
        Some(write) => Encryption::sealed_with(write, read),
        None => Encryption::clear(read),
    })
}

/// How the engine reaches OpenBao, when not as the spec says.
enum OpenBaoAccess {
    /// At another address (and CA), with the token the spec's store holds.
    Address { address: String, ca_bundle: Option<String> },
    /// Through another connector altogether.
    Connector(Arc<dyn BaoConnector>),
}

/// Assembles the AWS lane of a spec. Without overrides it is what the `engine` binary runs:
/// AWS from the environment's credential chain in the spec's region, OpenBao at the spec's
/// address with its root token from Secrets Manager, the cluster through the spec's kubeconfig
/// or else the EKS cluster's outputs with a token minted from the credential chain.
pub struct LaneBuilder<'a> {
    spec: &'a SpecSource,
    aws_config: Option<aws_config::SdkConfig>,
    secrets: Option<Arc<dyn SecretStore>>,
    openbao: Option<OpenBaoAccess>,
    kube: Option<Arc<dyn KubeConnector>>,
    /// The issuer OpenBao's cluster JWT mounts trust, instead of the cluster's.
    jwt_issuer: Option<ClusterIssuer>,
    openbao_ready_timeout: Duration,
    kube_poll_interval: Option<Duration>,
    pull: PullOptions,
    escrow: Option<PathBuf>,
    gcp_endpoint: Option<String>,
    snapshot_before_destroy: bool,
    tailscale: TailscaleConfig,
}

impl<'a> LaneBuilder<'a> {
    /// The lane of `spec`, as production wires it.
    pub fn new(spec: &'a SpecSource) -> Self {
        LaneBuilder {
            spec,
            aws_config: None,
            secrets: None,
            openbao: None,
            kube: None,
            jwt_issuer: None,
            openbao_ready_timeout: Duration::from_secs(600),
            kube_poll_interval: None,
            pull: PullOptions { cache_dir: chart_cache(), ..PullOptions::default() },
            escrow: None,
            gcp_endpoint: std::env::var(GCP_ENDPOINT_ENV).ok().filter(|e| !e.is_empty()),
            tailscale: tailscale_from_env(),
            snapshot_before_destroy: true,
        }
    }

    /// Every GCP service at `endpoint` (a local GCP), without credentials, instead of Google's
    /// endpoints with Application Default Credentials (default: `$ENGINE_GCP_ENDPOINT`).
    pub fn gcp_endpoint(mut self, endpoint: &str) -> Self {
        self.gcp_endpoint = Some(endpoint.to_string());
        self
    }

    /// Tailscale's API at `api_url` (a local fake) with `api_key`, instead of
    /// `$ENGINE_TAILSCALE_ENDPOINT` (else api.tailscale.com) and the key in the environment.
    pub fn tailscale(mut self, api_url: &str, api_key: Option<engine::Secret>) -> Self {
        self.tailscale.api_url = api_url.to_string();
        self.tailscale.api_key = api_key;
        self
    }

    /// AWS through `config` (e.g. an emulator's endpoint) instead of the environment's.
    pub fn aws_config(mut self, config: aws_config::SdkConfig) -> Self {
        self.aws_config = Some(config);
        self
    }

    /// `store` instead of Secrets Manager, for OpenBao's credentials and the bootstrap's
    /// Secrets.
    pub fn secret_store(mut self, store: Arc<dyn SecretStore>) -> Self {
        self.secrets = Some(store);
        self
    }

    /// OpenBao at `address` (trusting `ca_bundle`) instead of the spec's address; the root
    /// token is still read from the secret store under the spec's name.
    pub fn openbao_address(mut self, address: &str, ca_bundle: Option<String>) -> Self {
        self.openbao = Some(OpenBaoAccess::Address { address: address.into(), ca_bundle });
        self
    }

    /// OpenBao through `connector` instead of the spec's address and stored token.
    pub fn openbao_connector(mut self, connector: Arc<dyn BaoConnector>) -> Self {
        self.openbao = Some(OpenBaoAccess::Connector(connector));
        self
    }

    /// How long OpenBao may take to answer before its configuration fails (default 600 s).
    pub fn openbao_ready_timeout(mut self, timeout: Duration) -> Self {
        self.openbao_ready_timeout = timeout;
        self
    }

    /// The cluster through `connector` instead of the spec's kubeconfig or EKS outputs. When
    /// the spec makes no cluster, the connector's cluster is the one the bootstrap fills.
    pub fn kube_connector(mut self, connector: Arc<dyn KubeConnector>) -> Self {
        self.kube = Some(connector);
        self
    }

    /// How often the bootstrap polls the cluster while it waits (default: the bootstrap's).
    pub fn kube_poll_interval(mut self, interval: Duration) -> Self {
        self.kube_poll_interval = Some(interval);
        self
    }

    /// The issuer OpenBao's cluster JWT mounts trust, instead of the EKS cluster's.
    pub fn cluster_issuer(mut self, issuer: ClusterIssuer) -> Self {
        self.jwt_issuer = Some(issuer);
        self
    }

    /// The state file the lane's runs keep (default: the engine's, beside the spec). A new
    /// OpenBao's credentials wait beside it, in `<name>.openbao-escrow.json`, until the secret
    /// store has them.
    pub fn state_path(mut self, state: &Path) -> Self {
        self.escrow = Some(escrow_beside(state));
        self
    }

    /// Whether a destroy keeps a snapshot of OpenBao in the lineage's bucket before it takes
    /// anything away (default true; `engine destroy --skip-snapshot` turns it off).
    pub fn snapshot_before_destroy(mut self, yes: bool) -> Self {
        self.snapshot_before_destroy = yes;
        self
    }

    /// How charts are pulled (default: cached under `~/.cache/engine/charts`).
    pub fn pull_options(mut self, pull: PullOptions) -> Self {
        self.pull = pull;
        self
    }

    /// The lane's providers, configured; no API call is made.
    pub async fn build(self) -> Lane {
        let region = self.spec.globals().ok().map(|g| g.region).unwrap_or_default();
        let sdk = match self.aws_config {
            Some(config) => config,
            None => engine_aws::sdk_config_from_env(Some(&region)).await,
        };
        let aws = Arc::new(AwsProvider::for_spec(&sdk, self.spec));
        let state_access =
            StateAccess { aws: sdk.clone(), gcp_endpoint: self.gcp_endpoint.clone() };
        let on_gcp = self.spec.globals().is_ok_and(|g| g.cloud == "gcp");
        let gcp_config = GcpProvider::config_for(self.spec, self.gcp_endpoint.clone());
        // The cloud's secret store: Secrets Manager on AWS, Secret Manager on GCP.
        let secrets: Arc<dyn SecretStore> = match self.secrets {
            Some(store) => store,
            None if on_gcp => Arc::new(GcpSecretManager::for_config(&gcp_config).await),
            None => Arc::new(SecretsManager(aws.clone())),
        };

        // The engine's path to private endpoints, when it goes through the tailnet: what talks
        // to OpenBao or the cluster's API waits for it.
        let private_path =
            if on_gcp { vec![] } else { engine_aws::stages::access::engine_path(self.spec) };
        let route = if on_gcp { None } else { engine_aws::stages::access::route(self.spec) };
        let connector = openbao_connector(self.spec, self.openbao, secrets.clone(), route.clone());
        // The lineage's snapshot bucket: where a new server restores from, and where a destroy
        // keeps a snapshot first.
        let (snapshots, snapshot_sink): (Arc<dyn SnapshotSource>, Option<Arc<dyn SnapshotSink>>) =
            if on_gcp {
                let gcs = Arc::new(GcsSnapshots::for_spec(self.spec, self.gcp_endpoint.as_deref()));
                let sink = gcs.has_bucket().then(|| gcs.clone() as Arc<dyn SnapshotSink>);
                (gcs, sink)
            } else {
                let location = snapshot_location(self.spec);
                let s3 = Arc::new(S3Snapshots { aws: aws.clone(), location });
                let sink = s3.has_bucket().then(|| s3.clone() as Arc<dyn SnapshotSink>);
                (s3, sink)
            };
        let state = engine::state_path_of(self.spec);
        let escrow = self.escrow.unwrap_or_else(|| escrow_beside(&state));
        let mut bao = OpenBao::builder(connector)
            .escrow(Escrow::new(escrow))
            .secret_sink(secrets.clone())
            .secret_source(secrets.clone())
            .snapshots(snapshots)
            .snapshot_before_destroy(self.snapshot_before_destroy)
            .ready_timeout(self.openbao_ready_timeout);
        if let Some(sink) = snapshot_sink {
            bao = bao.snapshot_sink(sink);
        }
        let bao = bao.build();
        let mut profile = if on_gcp { gke_profile() } else { eks_profile() };
        if let Some(issuer) = self.jwt_issuer {
            profile.jwt_issuer = Some(issuer);
        }
        let builder = if on_gcp {
            OpenBaoProvider::builder("gcp", GCP_OPENBAO_PREFIX, bao)
                .after(engine_gcp::stages::openbao::serving())
        } else {
            OpenBaoProvider::builder("aws", OPENBAO_PREFIX, bao)
                .after([engine_aws::stages::openbao::serving(), private_path.clone()].concat())
        };
        let openbao = match profile.jwt_issuer.clone() {
            Some(issuer) => builder.cluster_issuer(issuer).build(),
            None => builder.build(),
        };

        // The cluster the spec makes (EKS or GKE), its outputs referenced by the bootstrap; a
        // harness's connector stands for the cluster when the spec makes none.
        let (cluster_section, outputs) =
            if on_gcp { ("gke", gke_outputs()) } else { ("eks", eks_outputs()) };
        let outputs =
            (self.kube.is_none() || self.spec.has_section(cluster_section)).then_some(outputs);
        let cluster: Arc<dyn KubeConnector> = match (self.kube, kubeconfig_connector(self.spec)) {
            (Some(connector), _) => connector,
            (None, Ok(Some(kubeconfig))) => Arc::new(kubeconfig),
            (None, Ok(None) | Err(_)) if on_gcp => Arc::new(OutputsConnector(GkeTokenSource)),
            (None, Ok(None) | Err(_)) => Arc::new(OutputsConnector(EksTokenSource { sdk, region })),
        };
        let mut kube = Kube::builder(cluster)
            .secret_source(secrets.clone())
            .pull_options(self.pull)
            .route(route.clone());
        if let Some(interval) = self.kube_poll_interval {
            kube = kube.poll_interval(interval);
        }
        let (lane, prefix) =
            if on_gcp { ("gcp", GCP_BOOTSTRAP_PREFIX) } else { ("aws", BOOTSTRAP_PREFIX) };
        let mut bootstrap = BootstrapProvider::builder(lane, prefix, kube.build())
            .profile(profile)
            .after(private_path);
        if let Some(outputs) = outputs {
            bootstrap = bootstrap.cluster(outputs);
        }
        let vars = if on_gcp {
            engine_gcp::stages::flux_vars(self.spec)
        } else {
            engine_aws::stages::flux_vars(self.spec)
        };
        for (key, value) in vars {
            bootstrap = bootstrap.output_var(&key, value);
        }

        let gcp = if on_gcp { Some(Arc::new(GcpProvider::new(&gcp_config).await)) } else { None };
        let lane_name = if on_gcp { "gcp" } else { "aws" };
        // The tailnet-wide pieces, or a subnet router's key and split DNS. A client that cannot
        // be made (no TLS roots) leaves the section to fail as unknown.
        let tailscale = match self.spec.has_section("tailnet") || self.spec.has_section("access") {
            false => None,
            true => {
                let keys: Arc<dyn engine_tailscale::KeyStore> = match on_gcp {
                    true => Arc::new(GcpSecretManager::for_config(&gcp_config).await),
                    false => Arc::new(SecretsManager(aws.clone())),
                };
                Some(
                    TailscaleProvider::new(lane_name, self.tailscale.clone())
                        .map(|p| Arc::new(p.key_store(keys))),
                )
            }
        };
        let tailscale = match tailscale {
            Some(Ok(provider)) => Some(provider),
            Some(Err(e)) => {
                tracing::error!(error = %e, "the Tailscale API client");
                None
            }
            None => None,
        };
        Lane {
            aws,
            gcp,
            tailscale,
            openbao: Arc::new(openbao),
            bootstrap: Arc::new(bootstrap.build()),
            secrets,
            state_access,
        }
    }
}

/// How OpenBao is reached: as overridden, else at the spec's address with the stored token
/// (no connector when the spec configures no OpenBao, or the expansion will report its error).
fn openbao_connector(
    spec: &SpecSource,
    access: Option<OpenBaoAccess>,
    secrets: Arc<dyn SecretStore>,
    route: Option<String>,
) -> Arc<dyn BaoConnector> {
    let from_spec = spec_connector(spec, secrets.clone());
    match (access, from_spec) {
        (Some(OpenBaoAccess::Connector(connector)), _) => connector,
        (Some(OpenBaoAccess::Address { address, ca_bundle }), Ok(Some(c))) => {
            Arc::new(StoredTokenConnector { address, ca_bundle, route, ..c })
        }
        (Some(OpenBaoAccess::Address { address, ca_bundle }), _) => {
            Arc::new(StoredTokenConnector {
                address,
                ca_bundle,
                source: secrets,
                token_secret: engine_openbao::SecretRef::parse("openbao/root-token"),
                route,
            })
        }
        (None, Ok(Some(c))) => Arc::new(StoredTokenConnector { route, ..c }),
        (None, Ok(None) | Err(_)) => Arc::new(NoConnector),
    }
}

/// How Tailscale's API is reached from the environment: `$ENGINE_TAILSCALE_ENDPOINT` (else
/// api.tailscale.com), the tailnet `$TAILSCALE_TAILNET` (else `-`, the API key's own), the
/// key in `$TAILSCALE_API_KEY` or `$TF_VAR_tailscale_api_key`.
fn tailscale_from_env() -> TailscaleConfig {
    let get = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    TailscaleConfig {
        api_url: get("ENGINE_TAILSCALE_ENDPOINT")
            .unwrap_or_else(|| engine_tailscale::client::API_URL.to_string()),
        tailnet: get("TAILSCALE_TAILNET").unwrap_or_else(|| "-".to_string()),
        api_key: TailscaleConfig::key_from_env(&get),
    }
}

/// The escrow file beside the state file `state` (`aws.state.json`: `aws.openbao-escrow.json`).
fn escrow_beside(state: &Path) -> PathBuf {
    let name = state.file_name().and_then(|n| n.to_str()).unwrap_or("engine");
    let stem = name.strip_suffix(".json").unwrap_or(name);
    let stem = stem.strip_suffix(".state").unwrap_or(stem);
    state.with_file_name(format!("{stem}.openbao-escrow.json"))
}

/// Where pulled charts are cached (`~/.cache/engine/charts`).
fn chart_cache() -> Option<PathBuf> {
    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/engine/charts"))
}

#[cfg(test)]
mod tests {
    use super::escrow_beside;
    use std::path::Path;

    #[test]
    fn the_escrow_sits_beside_the_state() {
        let at = |s: &str| escrow_beside(Path::new(s)).display().to_string();
        assert_eq!(at("specs/.engine/aws.state.json"), "specs/.engine/aws.openbao-escrow.json");
        assert_eq!(at("/tmp/run.json"), "/tmp/run.openbao-escrow.json");
        assert_eq!(at("state"), "state.openbao-escrow.json");
    }
}
