//! The `[bootstrap]` section: what the platform installs into a new cluster.

use engine::spec::names;
use serde::de::Error as _;
use serde::{Deserialize, Deserializer};
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
    #[serde(default = "default_timeout", deserialize_with = "seconds")]
    pub timeout_seconds: u64,
    pub gateway_api: Option<GatewayApiSpec>,
    pub cilium: Option<ReleaseSpec>,
    pub flux_operator: Option<ReleaseSpec>,
    pub flux_instance: Option<FluxInstanceSpec>,
    /// Extra keys of the vars ConfigMap (`eks-<cluster>-vars` on AWS).
    #[serde(default, deserialize_with = "data_keys")]
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
    #[serde(default = "default_gateway_source", deserialize_with = "non_empty")]
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
    /// Pins the chart to its OCI manifest digest (`sha256:<64 hex>`): the pull fails unless
    /// the registry serves exactly that manifest.
    #[serde(default, deserialize_with = "some_digest")]
    pub digest: Option<String>,
    /// Values merged over the platform's own.
    #[serde(default)]
    pub values: BTreeMap<String, toml::Value>,
    /// Wait for the release's workloads to be ready.
    pub wait: Option<bool>,
    #[serde(default, deserialize_with = "some_seconds")]
    pub timeout_seconds: Option<u64>,
    /// `[bootstrap.flux_operator]` only: once the Flux Instance is ready, the engine hands the
    /// release to Flux (as the reference removes it from its state) and stops managing it.
    /// Default true; `false` keeps it, and takes back one handed over before.
    pub hand_over_to_flux: Option<bool>,
}

/// `[bootstrap.flux_instance]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FluxInstanceSpec {
    pub chart: String,
    /// As in [`ReleaseSpec::digest`].
    #[serde(default, deserialize_with = "some_digest")]
    pub digest: Option<String>,
    #[serde(default = "default_distribution")]
    pub distribution: String,
    #[serde(default = "default_components", deserialize_with = "flux_components")]
    pub components: Vec<String>,
    /// Storage class of the source-controller's volume.
    #[serde(default, deserialize_with = "some_object_name")]
    pub storage_class: Option<String>,
    /// Size of that volume.
    #[serde(default = "default_storage_size")]
    pub storage_size: String,
    /// The controller shards (`sharding.fluxcd.io/key`): Kustomizations labelled with one are
    /// reconciled by that shard's controllers (the reference's `apps`).
    #[serde(default = "default_shards")]
    pub shards: Vec<String>,
    /// Kustomize patches of the Flux components (`instance.kustomize.patches`): `[{ target =
    /// { kind, name }, patch = "..." }]`.
    #[serde(default)]
    pub patches: Vec<toml::Table>,
    #[serde(default)]
    pub values: BTreeMap<String, toml::Value>,
    pub wait: Option<bool>,
    #[serde(default, deserialize_with = "some_seconds")]
    pub timeout_seconds: Option<u64>,
}

fn default_storage_size() -> String {
    "5Gi".into()
}

fn default_shards() -> Vec<String> {
    vec!["apps".into()]
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
    #[serde(deserialize_with = "secret_data")]
    pub data: BTreeMap<String, String>,
}

/// `[bootstrap.storage_class]`: the default StorageClass.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StorageClassSpec {
    #[serde(deserialize_with = "object_name")]
    pub name: String,
    #[serde(deserialize_with = "non_empty")]
    pub provisioner: String,
    #[serde(default)]
    pub parameters: BTreeMap<String, String>,
    #[serde(default = "default_binding_mode", deserialize_with = "binding_mode")]
    pub volume_binding_mode: String,
}

fn default_binding_mode() -> String {
    "WaitForFirstConsumer".into()
}

/// The components a FluxInstance may list.
const FLUX_COMPONENTS: &[&str] = &[
    "source-controller",
    "kustomize-controller",
    "helm-controller",
    "notification-controller",
    "image-reflector-controller",
    "image-automation-controller",
    "source-watcher",
];

// Checks made while the section is read, so each error points at its value.

/// A timeout in seconds: at least 1.
fn seconds<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    match u64::deserialize(d)? {
        0 => Err(D::Error::custom("a timeout of 0 seconds: give at least 1")),
        n => Ok(n),
    }
}

fn some_seconds<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    seconds(d).map(Some)
}

/// An OCI digest: `sha256:` and 64 lower-case hexadecimal characters.
fn some_digest<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let s = String::deserialize(d)?;
    let hex = s.strip_prefix("sha256:").unwrap_or_default();
    if hex.len() != 64 || !hex.chars().all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c)) {
        return Err(D::Error::custom(format!(
            "`{s}` is not a chart digest (sha256: and 64 lower-case hexadecimal characters)"
        )));
    }
    Ok(Some(s))
}

fn non_empty<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    let s = String::deserialize(d)?;
    if s.trim().is_empty() {
        return Err(D::Error::custom("must not be empty"));
    }
    Ok(s)
}

/// The name of a Kubernetes object (a DNS-1123 subdomain).
fn object_name<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    let s = String::deserialize(d)?;
    if !names::k8s_subdomain(&s) {
        return Err(D::Error::custom(format!(
            "`{s}` is not a Kubernetes object name (lower case letters, digits, `-` and `.`)"
        )));
    }
    Ok(s)
}

fn some_object_name<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    object_name(d).map(Some)
}

fn binding_mode<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    let s = String::deserialize(d)?;
    if !matches!(s.as_str(), "Immediate" | "WaitForFirstConsumer") {
        return Err(D::Error::custom(format!(
            "`{s}`: expected `Immediate` or `WaitForFirstConsumer`"
        )));
    }
    Ok(s)
}

fn flux_components<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    let components = Vec::<String>::deserialize(d)?;
    if let Some(c) = components.iter().find(|c| !FLUX_COMPONENTS.contains(&c.as_str())) {
        return Err(D::Error::custom(format!(
            "`{c}` is not a Flux component; one of {}",
            FLUX_COMPONENTS.join(", ")
        )));
    }
    Ok(components)
}

/// Keys of a ConfigMap.
fn data_keys<'de, D: Deserializer<'de>>(d: D) -> Result<BTreeMap<String, String>, D::Error> {
    let data = BTreeMap::<String, String>::deserialize(d)?;
    if let Some(k) = data.keys().find(|k| !names::k8s_data_key(k)) {
        return Err(D::Error::custom(format!(
            "`{k}` is not a ConfigMap or Secret key (letters, digits, `-`, `_` and `.`)"
        )));
    }
    Ok(data)
}

/// Keys of a Secret, each with the name of the secret-store entry it comes from.
fn secret_data<'de, D: Deserializer<'de>>(d: D) -> Result<BTreeMap<String, String>, D::Error> {
    let data = data_keys(d)?;
    if let Some((k, _)) = data.iter().find(|(_, v)| v.trim().is_empty()) {
        return Err(D::Error::custom(format!("`{k}`: the secret-store entry name is empty")));
    }
    Ok(data)
}

/// TOML values as JSON (for chart values).
pub fn toml_to_json(values: &BTreeMap<String, toml::Value>) -> Json {
    serde_json::to_value(values).unwrap_or(Json::Null)
}
