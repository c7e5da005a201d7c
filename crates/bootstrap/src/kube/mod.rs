//! Everything the engine puts inside a Kubernetes cluster, as resource kinds.
//!
//! | kind | what |
//! |---|---|
//! | `k8s_object` | one object, server-side applied (namespaces, ConfigMaps, Secrets from the secret store, StorageClass, DaemonSet patches) |
//! | `k8s_manifests` | a YAML stream from a URL or file (the Gateway API CRDs), applied, pruned and checked as one set |
//! | `helm_release` | a chart pulled over OCI and rendered natively against the live cluster, applied, pruned and checked as one set |
//! | `flux_suspend` | the pre-destroy step that suspends Flux before the bootstrap is removed |
//!
//! Every write is a server-side apply under the field manager `engine`; objects are compared on
//! the fields the engine sets ([`project`]), so a no-op apply sends no write. The kinds reach a
//! cluster through a [`KubeConnector`] chosen by whoever builds them: the cluster's outputs and a
//! token source in production, an explicit kubeconfig when the spec opts in, or a test harness's
//! own connection.

mod cluster;
pub mod connect;
mod flux_suspend;
mod manifests;
mod object;
mod object_id;
mod object_set;
pub mod project;
mod readiness;
mod release;
mod set_kind;
mod shared;

pub use cluster::{Cluster, FIELD_MANAGER};
pub use connect::{
    ClusterTarget, ConnectError, KubeConnector, KubeconfigConnector, NoConnector, OutputsConnector,
    TokenSource, config_from_parts,
};
pub use manifests::parse_stream;
pub use object::identity_attrs;
pub use object_id::ObjectId;
pub use readiness::{Readiness, readiness};

use engine::{ApiCalls, Kind, Typed};
use engine_helm::PullOptions;
use engine_openbao::{NoSecrets, SecretSource};
use shared::Shared;
use std::sync::Arc;
use std::time::Duration;

/// The kube kinds, sharing one connector, one set of clients and one API call counter.
pub struct Kube {
    shared: Arc<Shared>,
}

/// Builds a [`Kube`].
pub struct KubeBuilder {
    connector: Arc<dyn KubeConnector>,
    pull: PullOptions,
    secrets: Arc<dyn SecretSource>,
    wait_timeout: Duration,
    poll_interval: Duration,
    route: Option<String>,
}

impl Kube {
    /// Kinds reaching clusters through `connector`.
    pub fn builder(connector: Arc<dyn KubeConnector>) -> KubeBuilder {
        KubeBuilder {
            connector,
            pull: PullOptions::default(),
            secrets: Arc::new(NoSecrets),
            wait_timeout: Duration::from_secs(300),
            poll_interval: Duration::from_secs(2),
            route: None,
        }
    }

    /// Every kube kind.
    pub fn kinds(&self) -> Vec<Arc<dyn Kind>> {
        let s = &self.shared;
        vec![
            Typed::arc(object::KubeObjectKind(s.clone())),
            Typed::arc(set_kind::SetKind(s.clone(), manifests::Manifests)),
            Typed::arc(set_kind::SetKind(s.clone(), release::Release)),
            Typed::arc(flux_suspend::FluxSuspendKind(s.clone())),
        ]
    }

    /// Calls made so far: `kube:<Operation>` to API servers, `oci:GetChart` to registries.
    pub fn api_calls(&self) -> ApiCalls {
        self.shared.calls.snapshot()
    }
}

impl KubeBuilder {
    /// How charts are pulled (credentials, plain HTTP, cache directory).
    pub fn pull_options(mut self, pull: PullOptions) -> Self {
        self.pull = pull;
        self
    }

    /// Where Secret values named by `secret_data` come from (AWS Secrets Manager in production).
    pub fn secret_source(mut self, secrets: Arc<dyn SecretSource>) -> Self {
        self.secrets = secrets;
        self
    }

    /// Default readiness timeout (a resource's `timeout_seconds` overrides it); default 300 s.
    pub fn wait_timeout(mut self, timeout: Duration) -> Self {
        self.wait_timeout = timeout;
        self
    }

    /// How often readiness is polled; default 2 s.
    pub fn poll_interval(mut self, interval: Duration) -> Self {
        self.poll_interval = interval;
        self
    }

    /// How the clusters' API servers are reached when they are private (e.g. through a
    /// tailnet's subnet router), said when one cannot be reached.
    pub fn route(mut self, route: Option<String>) -> Self {
        self.route = route;
        self
    }

    pub fn build(self) -> Kube {
        Kube {
            shared: Arc::new(Shared::new(
                self.connector,
                self.pull,
                self.secrets,
                self.wait_timeout,
                self.poll_interval,
                self.route,
            )),
        }
    }
}
