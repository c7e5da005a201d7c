//! The provider of what the engine configures inside a lane's OpenBao (`[openbao]`, through its
//! API) and inside its clusters (`[bootstrap]`).
//!
//! It shares the lane of the cloud provider that makes the servers (the engine expands every
//! provider of a lane into one graph), so each resource waits on the resource it needs (OpenBao's
//! configuration on its DNS record, the bootstrap on the cluster), not on a whole stage.

use crate::kube::{ClusterTarget, ConnectError, Kube, KubeConnector, KubeconfigConnector};
use crate::openbao::{
    BaoConnection, BaoConnector, BaoError, NoSecrets, NoSnapshots, OpenBao, OpenBaoConfig,
    SecretSink, SecretSource, SnapshotSource, StoredTokenConnector,
};
use crate::platform::{self, ClusterOutputs, Inputs};
use async_trait::async_trait;
use engine::spec::{FieldPath, SpecErrors, SpecSource};
use engine::{Address, ApiCalls, Kind, Provider, ResourceSpec, Value};
use std::path::Path;
use std::sync::{Arc, Mutex};

/// How the bootstrap's kube kinds find their cluster, decided by the spec and the builder:
/// a harness's connector first, then the spec's explicit kubeconfig, then the cluster's outputs.
#[derive(Default)]
pub struct SpecConnector {
    harness: Option<Arc<dyn KubeConnector>>,
    kubeconfig: Mutex<Option<Arc<KubeconfigConnector>>>,
    outputs: Option<Arc<dyn KubeConnector>>,
}

#[async_trait]
impl KubeConnector for SpecConnector {
    async fn config(&self, target: &ClusterTarget) -> Result<kube::Config, ConnectError> {
        if let Some(h) = &self.harness {
            return h.config(target).await;
        }
        let kubeconfig = self.kubeconfig.lock().unwrap_or_else(|p| p.into_inner()).clone();
        if let Some(k) = kubeconfig {
            return k.config(target).await;
        }
        if let Some(o) = &self.outputs {
            return o.config(target).await;
        }
        crate::kube::NoConnector.config(target).await
    }
}

/// How the OpenBao kinds reach the server: a harness's connector, else the spec's address and
/// CA with the root token read from the secret store (set when the spec is expanded).
struct SpecBaoConnector {
    harness: Option<Arc<dyn BaoConnector>>,
    spec: Mutex<Option<Arc<StoredTokenConnector>>>,
}

#[async_trait]
impl BaoConnector for SpecBaoConnector {
    async fn connect(&self) -> Result<BaoConnection, BaoError> {
        if let Some(h) = &self.harness {
            return h.connect().await;
        }
        let spec = self.spec.lock().unwrap_or_else(|p| p.into_inner()).clone();
        match spec {
            Some(c) => c.connect().await,
            None => Err(BaoError::Hook("no OpenBao is configured by the spec".into())),
        }
    }
}

/// What the `[openbao]` configuration needs from outside the crate.
pub struct OpenBaoSetup {
    /// The library hook: reach OpenBao through this connector whatever the spec says.
    pub connector: Option<Arc<dyn BaoConnector>>,
    /// Where credentials made by init go, and where imported secrets come from (AWS Secrets
    /// Manager in production).
    pub sink: Arc<dyn SecretSink>,
    pub source: Arc<dyn SecretSource>,
    /// Snapshots of the lineage (the S3 snapshot bucket in production).
    pub snapshots: Arc<dyn SnapshotSource>,
    /// Resources the server needs before it can be configured (its servers and their DNS
    /// record), when the spec makes them.
    pub after: Vec<Address>,
    /// How long init waits for the server.
    pub ready_timeout: std::time::Duration,
}

impl Default for OpenBaoSetup {
    fn default() -> Self {
        OpenBaoSetup {
            connector: None,
            sink: Arc::new(NoSecrets),
            source: Arc::new(NoSecrets),
            snapshots: Arc::new(NoSnapshots),
            after: Vec::new(),
            ready_timeout: std::time::Duration::from_secs(600),
        }
    }
}

/// Expands `[openbao]` and `[bootstrap]` for one lane and supplies their kinds.
pub struct BootstrapProvider {
    lane: &'static str,
    kube: Kube,
    bao: OpenBao,
    bao_connector: Arc<SpecBaoConnector>,
    bao_source: Arc<dyn SecretSource>,
    bao_after: Vec<Address>,
    connector: Arc<SpecConnector>,
    /// References to the cluster's outputs, when a cloud provider of the lane makes it.
    cluster: Option<ClusterOutputs>,
    output_vars: Vec<(String, Value)>,
}

/// Makes the kube kinds given the connector they must use.
type MakeKube = Box<dyn FnOnce(Arc<dyn KubeConnector>) -> Kube>;

/// Builds a [`BootstrapProvider`].
pub struct BootstrapProviderBuilder {
    lane: &'static str,
    harness: Option<Arc<dyn KubeConnector>>,
    outputs: Option<Arc<dyn KubeConnector>>,
    cluster: Option<ClusterOutputs>,
    output_vars: Vec<(String, Value)>,
    kube: Option<MakeKube>,
    openbao: OpenBaoSetup,
}

impl BootstrapProvider {
    /// A provider for `lane` (`aws`, `gcp`).
    pub fn builder(lane: &'static str) -> BootstrapProviderBuilder {
        BootstrapProviderBuilder {
            lane,
            harness: None,
            outputs: None,
            cluster: None,
            output_vars: Vec::new(),
            kube: None,
            openbao: OpenBaoSetup::default(),
        }
    }
}

impl BootstrapProviderBuilder {
    /// The library hook: every cluster is reached through `connector` (a test harness's own
    /// API server), whatever the spec says.
    pub fn connector(mut self, connector: Arc<dyn KubeConnector>) -> Self {
        self.harness = Some(connector);
        self
    }

    /// The production path: the cluster made by the lane's cloud provider, its outputs
    /// referenced by `cluster`, reached through `connector` (endpoint, CA, minted token).
    pub fn cluster(mut self, cluster: ClusterOutputs, connector: Arc<dyn KubeConnector>) -> Self {
        self.cluster = Some(cluster);
        self.outputs = Some(connector);
        self
    }

    /// Keys of the vars ConfigMap whose values are other resources' outputs.
    pub fn output_var(mut self, key: &str, value: Value) -> Self {
        self.output_vars.push((key.to_string(), value));
        self
    }

    /// Customises the kube kinds (chart pull options, secret source, timeouts) given the
    /// connector they must use.
    pub fn kube(mut self, make: impl FnOnce(Arc<dyn KubeConnector>) -> Kube + 'static) -> Self {
        self.kube = Some(Box::new(make));
        self
    }

    /// How `[openbao]` reaches OpenBao and the world around it.
    pub fn openbao(mut self, setup: OpenBaoSetup) -> Self {
        self.openbao = setup;
        self
    }

    pub fn build(self) -> BootstrapProvider {
        let connector = Arc::new(SpecConnector {
            harness: self.harness,
            kubeconfig: Mutex::new(None),
            outputs: self.outputs,
        });
        let dyn_connector: Arc<dyn KubeConnector> = connector.clone();
        let kube = match self.kube {
            Some(make) => make(dyn_connector),
            None => Kube::builder(dyn_connector).build(),
        };
        let setup = self.openbao;
        let bao_connector =
            Arc::new(SpecBaoConnector { harness: setup.connector, spec: Mutex::new(None) });
        let bao = OpenBao::builder(bao_connector.clone())
            .secret_sink(setup.sink)
            .secret_source(setup.source.clone())
            .snapshots(setup.snapshots)
            .ready_timeout(setup.ready_timeout)
            .build();
        BootstrapProvider {
            lane: self.lane,
            kube,
            bao,
            bao_connector,
            bao_source: setup.source,
            bao_after: setup.after,
            connector,
            cluster: self.cluster,
            output_vars: self.output_vars,
        }
    }
}

impl Provider for BootstrapProvider {
    fn lane(&self) -> &'static str {
        self.lane
    }

    fn sections(&self) -> &'static [&'static str] {
        &["openbao", "bootstrap"]
    }

    fn expand(&self, spec: &SpecSource) -> Result<Vec<ResourceSpec>, SpecErrors> {
        let mut out = self.expand_openbao(spec)?;
        out.extend(self.expand_bootstrap(spec)?);
        Ok(out)
    }

    fn kinds(&self) -> Vec<Arc<dyn Kind>> {
        let mut kinds = self.kube.kinds();
        kinds.extend(self.bao.kinds());
        kinds
    }

    fn api_calls(&self) -> ApiCalls {
        let mut calls = self.kube.api_calls();
        calls.add(&self.bao.api_calls());
        calls
    }
}

/// Whether the spec has a top-level section `name`.
fn spec_has_section(spec: &SpecSource, name: &str) -> bool {
    matches!(spec.section::<toml::Value>(name), Ok(Some(_)))
}

impl BootstrapProvider {
    /// Whether the cluster's outputs can be used: the spec makes the cluster, a harness
    /// connects, or the outputs are given as values.
    fn cluster_given(&self, spec: &SpecSource, c: &ClusterOutputs) -> bool {
        self.connector.harness.is_some() || c.is_given() || spec_has_section(spec, c.section)
    }

    /// `[openbao]` without its `server` table: OpenBao's configuration through its API.
    fn expand_openbao(&self, spec: &SpecSource) -> Result<Vec<ResourceSpec>, SpecErrors> {
        let Some(mut config) = spec.section::<OpenBaoConfig>("openbao")? else {
            return Ok(vec![]);
        };
        if !config.configures_openbao() {
            return Ok(vec![]);
        }
        let base = Path::new(spec.file()).parent().unwrap_or(Path::new("."));
        config
            .load_files(base)
            .map_err(|e| spec.errors(e.0.iter().map(|m| config_error(spec, m)).collect()))?;
        let globals = spec.globals()?;
        let address = config.address.clone().unwrap_or_else(|| {
            format!("https://bao.priv.{}.{}:8200", globals.cloud, globals.domain)
        });
        if !(address.starts_with("https://") || address.starts_with("http://")) {
            return Err(spec.errors(vec![spec.error(
                &FieldPath::root("openbao").key("address"),
                format!("`{address}` is not an http(s) URL"),
            )]));
        }
        if let Some(tls) = &mut config.tls
            && tls.dns_names.is_empty()
            && let Some(host) =
                address.parse::<http::Uri>().ok().and_then(|u| u.host().map(str::to_string))
        {
            tls.dns_names.push(host);
        }
        let prefix = config
            .init
            .as_ref()
            .map(|i| i.secret_prefix.clone())
            .unwrap_or_else(|| "openbao".into());
        *self.bao_connector.spec.lock().unwrap_or_else(|p| p.into_inner()) =
            Some(Arc::new(StoredTokenConnector {
                address,
                ca_bundle: config.ca_bundle().cloned(),
                source: self.bao_source.clone(),
                token_secret: format!("{prefix}/root-token"),
            }));
        let stage = format!("{}.openbao.config", self.lane);
        let issuer = self.cluster.as_ref().filter(|c| self.cluster_given(spec, c)).map(|c| {
            crate::openbao::ClusterIssuer {
                url: c.oidc_issuer.clone(),
                ca_pem: c.oidc_ca_pem.clone(),
            }
        });
        if issuer.is_none()
            && let Some((mount, _)) = config.jwt.iter().find(|(_, j)| j.cluster_issuer)
        {
            return Err(spec.errors(vec![spec.error(
                &FieldPath::root("openbao").key("jwt").key(mount).key("cluster_issuer"),
                "the spec makes no cluster whose issuer this mount could trust",
            )]));
        }
        Ok(crate::openbao::expand_with_cluster(&config, &stage, issuer.as_ref())
            .into_iter()
            // The TLS certificate goes to the secret store, where the servers read it at
            // boot: it is made before them, not after.
            .map(|r| match r.kind.as_str() {
                "openbao_server_tls" => r,
                _ => self.bao_after.iter().fold(r, |r, a| r.after_if_present(a)),
            })
            .collect())
    }

    /// `[bootstrap]`: what goes inside the cluster.
    fn expand_bootstrap(&self, spec: &SpecSource) -> Result<Vec<ResourceSpec>, SpecErrors> {
        let Some(b) = platform::load(spec)? else {
            return Ok(vec![]);
        };
        let globals = spec.globals()?;
        let mut api_server_host = b.api_server_host.clone();
        if let Some(path) = &b.kubeconfig {
            let path = platform::kubeconfig_path(spec, path);
            if api_server_host.is_none() {
                let host =
                    platform::kubeconfig_host(&path, b.context.as_deref()).map_err(|e| {
                        spec.errors(vec![spec.error(
                            &engine::spec::FieldPath::root("bootstrap").key("kubeconfig"),
                            e,
                        )])
                    })?;
                api_server_host = Some(host);
            }
            *self.connector.kubeconfig.lock().unwrap_or_else(|p| p.into_inner()) =
                Some(Arc::new(KubeconfigConnector { path, context: b.context.clone() }));
        }
        // The cluster: the one the spec names with `kubeconfig`, else the one it makes.
        let cluster = match (&b.kubeconfig, &self.cluster) {
            (Some(_), _) => None,
            (None, Some(c)) if self.cluster_given(spec, c) => Some(c.clone()),
            (None, Some(c)) => {
                return Err(spec.errors(vec![spec.error(
                    &FieldPath::root("bootstrap"),
                    format!(
                        "[bootstrap] needs a cluster: add [{}] to make one, or name an existing \
                         one with `kubeconfig`",
                        c.section
                    ),
                )]));
            }
            (None, None) => None,
        };
        let name = spec.name();
        Ok(platform::resources(
            &b,
            &Inputs {
                globals: &globals,
                spec_name: &name,
                cluster,
                api_server_host,
                output_vars: self.output_vars.clone(),
            },
        ))
    }
}

/// A `[openbao]` configuration error (`openbao.ca_file: message`) pointed at its field when the
/// spec holds it, else at the spec as a whole.
fn config_error(spec: &SpecSource, message: &str) -> engine::spec::SpecError {
    let Some((field, rest)) = message.split_once(": ") else {
        return spec.general_error(message);
    };
    let mut keys = field.split('.');
    let (Some("openbao"), Some(first)) = (keys.next(), keys.next()) else {
        return spec.general_error(message);
    };
    let path = keys.fold(FieldPath::root("openbao").key(first), |p, k| p.key(k));
    let mut error = spec.error(&path, rest);
    if field == "openbao.ca_file" {
        error.help =
            Some("the offline root's certificate: create it with `engine pki init-root`".into());
    }
    error
}
