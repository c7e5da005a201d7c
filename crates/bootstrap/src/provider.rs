//! The provider of what goes inside a lane's clusters: the `[bootstrap]` section.
//!
//! It shares the lane of the cloud provider that makes the cluster (the engine expands every
//! provider of a lane into one graph), so the bootstrap waits on the cluster resource, not on a
//! whole stage.

use crate::kube::{ClusterTarget, ConnectError, Kube, KubeConnector, KubeconfigConnector};
use crate::platform::{self, ClusterOutputs, Inputs};
use async_trait::async_trait;
use engine::spec::{SpecErrors, SpecSource};
use engine::{ApiCalls, Kind, Provider, ResourceSpec, Value};
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
        let kubeconfig = self
            .kubeconfig
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        if let Some(k) = kubeconfig {
            return k.config(target).await;
        }
        if let Some(o) = &self.outputs {
            return o.config(target).await;
        }
        crate::kube::NoConnector.config(target).await
    }
}

/// Expands `[bootstrap]` for one lane and supplies the kube kinds.
pub struct BootstrapProvider {
    lane: &'static str,
    kube: Kube,
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
        BootstrapProvider {
            lane: self.lane,
            kube,
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
        &["bootstrap"]
    }

    fn expand(&self, spec: &SpecSource) -> Result<Vec<ResourceSpec>, SpecErrors> {
        let Some(b) = platform::load(spec)? else {
            return Ok(vec![]);
        };
        let globals = spec.globals()?;
        let mut api_server_host = b.api_server_host.clone();
        if let Some(path) = &b.kubeconfig {
            let path = platform::kubeconfig_path(spec, path);
            if api_server_host.is_none() {
                let host = platform::kubeconfig_host(&path, b.context.as_deref()).map_err(|e| {
                    spec.errors(vec![spec.error(
                        &engine::spec::FieldPath::root("bootstrap").key("kubeconfig"),
                        e,
                    )])
                })?;
                api_server_host = Some(host);
            }
            *self
                .connector
                .kubeconfig
                .lock()
                .unwrap_or_else(|p| p.into_inner()) = Some(Arc::new(KubeconfigConnector {
                path,
                context: b.context.clone(),
            }));
        }
        let name = spec.name();
        Ok(platform::resources(
            &b,
            &Inputs {
                globals: &globals,
                spec_name: &name,
                cluster: if b.kubeconfig.is_some() {
                    None
                } else {
                    self.cluster.clone()
                },
                api_server_host,
                output_vars: self.output_vars.clone(),
            },
        ))
    }

    fn kinds(&self) -> Vec<Arc<dyn Kind>> {
        self.kube.kinds()
    }

    fn api_calls(&self) -> ApiCalls {
        self.kube.api_calls()
    }
}
