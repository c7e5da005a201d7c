//! What the kube kinds share: the connector, connected clusters, the call counter, chart pulling
//! and the secret source.

use super::cluster::Cluster;
use super::connect::{ClusterTarget, KubeConnector};
use engine::{ApiCallCounter, KindError};
use engine_helm::PullOptions;
use engine_openbao::SecretSource;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Clients older than this are rebuilt, so short-lived tokens (EKS: 15 minutes) are minted anew.
const CLIENT_LIFETIME: Duration = Duration::from_secs(10 * 60);

/// How long a call to the API server may go without an answer.
const READ_TIMEOUT: Duration = Duration::from_secs(60);

pub(crate) struct Shared {
    pub connector: Arc<dyn KubeConnector>,
    pub calls: ApiCallCounter,
    pub pull: PullOptions,
    pub secrets: Arc<dyn SecretSource>,
    pub wait_timeout: Duration,
    pub poll_interval: Duration,
    /// How a private API server is reached, said when it cannot be reached.
    pub route: Option<String>,
    clusters: tokio::sync::Mutex<HashMap<ClusterTarget, (Arc<Cluster>, Instant)>>,
    /// The last full target seen per cluster name: lets a resource removed from the spec (whose
    /// desired attributes are gone) still reach its cluster.
    targets: Mutex<HashMap<String, ClusterTarget>>,
}

impl Shared {
    pub fn new(
        connector: Arc<dyn KubeConnector>,
        pull: PullOptions,
        secrets: Arc<dyn SecretSource>,
        wait_timeout: Duration,
        poll_interval: Duration,
        route: Option<String>,
    ) -> Shared {
        Shared {
            connector,
            calls: ApiCallCounter::default(),
            pull,
            secrets,
            wait_timeout,
            poll_interval,
            route,
            clusters: Default::default(),
            targets: Default::default(),
        }
    }

    /// The cluster `name`, at `endpoint` trusting `ca_pem` when the cluster is made by the same
    /// spec. A resource removed from the spec (known by name only) reaches the cluster at the
    /// last endpoint seen for that name.
    pub fn target(
        &self,
        name: &str,
        endpoint: Option<&str>,
        ca_pem: Option<&str>,
    ) -> ClusterTarget {
        let target = ClusterTarget {
            name: name.to_string(),
            endpoint: endpoint.map(String::from),
            ca_pem: ca_pem.map(String::from),
        };
        let mut known = self.targets.lock().unwrap_or_else(|p| p.into_inner());
        if target.endpoint.is_some() {
            known.insert(name.to_string(), target.clone());
            target
        } else {
            known.get(name).cloned().unwrap_or(target)
        }
    }

    /// A client for `target`, made once and remade when old.
    pub async fn cluster(&self, target: &ClusterTarget) -> Result<Arc<Cluster>, KindError> {
        let mut clusters = self.clusters.lock().await;
        if let Some((c, made)) = clusters.get(target)
            && made.elapsed() < CLIENT_LIFETIME
        {
            return Ok(c.clone());
        }
        engine_helm::oci::install_crypto_provider();
        let mut config = self.connector.config(target).await.map_err(|e| KindError::new(e.0))?;
        // A call that hangs fails after a minute without an answer (the engine polls; it never
        // keeps a watch open).
        config.read_timeout = config.read_timeout.or(Some(READ_TIMEOUT));
        let client = kube::Client::try_from(config)
            .map_err(|e| KindError::new(format!("cluster `{}`: client: {e}", target.name)))?;
        let cluster = Cluster::new(&target.name, client, self.calls.clone());
        let cluster = Arc::new(cluster.with_route(self.route.clone()));
        clusters.insert(target.clone(), (cluster.clone(), Instant::now()));
        Ok(cluster)
    }
}
