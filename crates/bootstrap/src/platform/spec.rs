//! The `[bootstrap]` section: what the platform installs into a new cluster.

use serde::Deserialize;
use serde_json::Value as Json;
use std::collections::BTreeMap;

/// `[bootstrap]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BootstrapSpec {
    /// Bootstrap an existing cluster through this kubeconfig (the only way the engine reads a
    /// kubeconfig). Without it the connection comes from the cluster the spec makes.
    pub kubeconfig: Option<String>,
    /// The kubeconfig context (default: its current context).
    pub context: Option<String>,
    /// The API server host Cilium talks to (`k8sServiceHost`), when no cluster of the spec
    /// gives it; default: the kubeconfig's server.
    pub api_server_host: Option<String>,
    /// Default readiness timeout, seconds.
    #[serde(default = "default_timeout")]
    pub timeout_seconds: u64,
    pub gateway_api: Option<GatewayApiSpec>,
    pub cilium: Option<ReleaseSpec>,
    pub flux_operator: Option<ReleaseSpec>,
    pub flux_instance: Option<FluxInstanceSpec>,
    /// Extra keys of the vars ConfigMap (`eks-<cluster>-vars` on AWS).
    #[serde(default)]
    pub vars: BTreeMap<String, String>,
    pub flux_secret: Option<FluxSecretSpec>,
    pub storage_class: Option<StorageClassSpec>,
    /// Server-side-apply patches that park the `aws-node` and `kube-proxy` DaemonSets (Cilium
    /// replaces both). Default: the cluster profile's (on for AWS).
    pub disable_aws_node: Option<bool>,
    pub disable_kube_proxy: Option<bool>,
}

fn default_timeout() -> u64 {
    600
}

/// `[bootstrap.gateway_api]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GatewayApiSpec {
    /// URL or file of the release manifest; `{version}` and `{channel}` are replaced.
    #[serde(default = "default_gateway_source")]
    pub source: String,
    /// `experimental` (default) or `standard`.
    #[serde(default = "default_channel")]
    pub channel: String,
}

fn default_gateway_source() -> String {
    "https://github.com/kubernetes-sigs/gateway-api/releases/download/{version}/{channel}-install.yaml"
        .into()
}

fn default_channel() -> String {
    "experimental".into()
}

/// A Helm release of the bootstrap (`[bootstrap.cilium]`, `[bootstrap.flux_operator]`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReleaseSpec {
    /// `oci://host/repository/chart` (the version comes from `[globals.versions]`).
    pub chart: String,
    /// Values merged over the platform's own.
    #[serde(default)]
    pub values: BTreeMap<String, toml::Value>,
    /// Wait for the release's workloads to be ready.
    pub wait: Option<bool>,
    pub timeout_seconds: Option<u64>,
}

/// `[bootstrap.flux_instance]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FluxInstanceSpec {
    pub chart: String,
    #[serde(default = "default_distribution")]
    pub distribution: String,
    #[serde(default = "default_components")]
    pub components: Vec<String>,
    /// Storage class of the source-controller's volume.
    pub storage_class: Option<String>,
    #[serde(default)]
    pub values: BTreeMap<String, toml::Value>,
    pub wait: Option<bool>,
    pub timeout_seconds: Option<u64>,
}

fn default_distribution() -> String {
    "2.x".into()
}

fn default_components() -> Vec<String> {
    [
        "source-controller",
        "kustomize-controller",
        "helm-controller",
        "notification-controller",
        "source-watcher",
    ]
    .map(String::from)
    .to_vec()
}

/// `[bootstrap.flux_secret]`: the `flux-system` Secret, read from the secret store.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FluxSecretSpec {
    /// Keys of the Secret and the secret-store entry each comes from.
    pub data: BTreeMap<String, String>,
}

/// `[bootstrap.storage_class]`: the default StorageClass.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StorageClassSpec {
    pub name: String,
    pub provisioner: String,
    #[serde(default)]
    pub parameters: BTreeMap<String, String>,
    #[serde(default = "default_binding_mode")]
    pub volume_binding_mode: String,
}

fn default_binding_mode() -> String {
    "WaitForFirstConsumer".into()
}

/// TOML values as JSON (for chart values).
pub fn toml_to_json(values: &BTreeMap<String, toml::Value>) -> Json {
    serde_json::to_value(values).unwrap_or(Json::Null)
}
