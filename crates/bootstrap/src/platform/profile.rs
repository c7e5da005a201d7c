//! [`ClusterProfile`]: what the bootstrap does differently per cloud, as data. The lane's wiring
//! makes it (the AWS lane's in `crates/lanes/src/profiles.rs`); nothing in this crate knows a
//! cloud by name.

use super::spec::StorageClassSpec;
use engine_openbao::ClusterIssuer;
use serde_json::{Value as Json, json};

/// What differs from cloud to cloud in what goes inside a cluster.
#[derive(Debug, Clone)]
pub struct ClusterProfile {
    /// Name of the ConfigMap of variables Flux substitutes; `{cluster}` is replaced by the
    /// cluster's name (`eks-{cluster}-vars`).
    pub vars_config_map: String,
    /// Cilium's values, before the spec's own are merged over them; `{cluster}` in a string is
    /// the cluster's name ([`ClusterProfile::cilium_values_for`]).
    pub cilium_values: Json,
    /// An object Cilium's CNI needs before it starts (a ConfigMap of CNI configuration), applied
    /// before Cilium.
    pub cni_configuration: Option<Json>,
    /// DaemonSets parked by default (`aws-node`, `kube-proxy`): Cilium replaces them. The spec's
    /// `disable_aws_node` and `disable_kube_proxy` decide otherwise.
    pub parked_daemonsets: Vec<String>,
    /// The Flux instance's `cluster.type`.
    pub flux_cluster_type: String,
    /// The default StorageClass when the spec has no `[bootstrap.storage_class]`.
    pub storage_class: Option<StorageClassSpec>,
    /// The issuer OpenBao's JWT mounts marked `cluster_issuer` trust (references to the
    /// cluster's outputs).
    pub jwt_issuer: Option<ClusterIssuer>,
}

impl ClusterProfile {
    /// Whether DaemonSet `name` is parked unless the spec says otherwise.
    pub fn parks(&self, name: &str) -> bool {
        self.parked_daemonsets.iter().any(|d| d == name)
    }

    /// The vars ConfigMap's name for `cluster`.
    pub fn vars_name(&self, cluster: &str) -> String {
        self.vars_config_map.replace("{cluster}", cluster)
    }

    /// Cilium's values for `cluster`: `{cluster}` replaced in every string.
    pub fn cilium_values_for(&self, cluster: &str) -> Json {
        fn replace(value: &mut Json, cluster: &str) {
            match value {
                Json::String(s) if s.contains("{cluster}") => *s = s.replace("{cluster}", cluster),
                Json::Array(items) => items.iter_mut().for_each(|v| replace(v, cluster)),
                Json::Object(map) => map.values_mut().for_each(|v| replace(v, cluster)),
                _ => {}
            }
        }
        let mut values = self.cilium_values.clone();
        replace(&mut values, cluster);
        values
    }
}

/// A plain Kubernetes cluster: Cilium with Kubernetes IPAM, nothing parked, no default
/// StorageClass, no issuer for OpenBao.
impl Default for ClusterProfile {
    fn default() -> Self {
        ClusterProfile {
            vars_config_map: "{cluster}-vars".into(),
            cilium_values: json!({
                "kubeProxyReplacement": true,
                "k8sServicePort": 443,
                "ipam": {"mode": "kubernetes"},
                "routingMode": "native",
                "gatewayAPI": {"enabled": true},
                "hubble": {"enabled": true, "relay": {"enabled": true}},
            }),
            cni_configuration: None,
            parked_daemonsets: Vec::new(),
            flux_cluster_type: "kubernetes".into(),
            storage_class: None,
            jwt_issuer: None,
        }
    }
}
