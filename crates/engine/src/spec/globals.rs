//! `[globals]`: values every stage reads, set once.

use serde::Deserialize;
use std::collections::BTreeMap;

/// The `[globals]` section.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Globals {
    /// The lane this spec belongs to: `aws` or `gcp`.
    pub cloud: String,
    /// Overrides the spec name (default: the file stem). It is the `engine:spec` ownership tag.
    pub name: Option<String>,
    /// The primary region (e.g. `eu-west-3`).
    pub region: String,
    /// A second region for replicas (e.g. the seal key's).
    pub secondary_region: Option<String>,
    /// The Kubernetes cluster name (e.g. `aws-0`).
    pub cluster_name: String,
    /// The platform's DNS domain.
    pub domain: String,
    /// Tags applied to every resource.
    #[serde(default)]
    pub tags: BTreeMap<String, String>,
    /// Versions shared by stages (`kubernetes`, `cilium`, `flux_operator`, ...).
    #[serde(default)]
    pub versions: BTreeMap<String, String>,
    /// The GitOps repository Flux syncs.
    pub flux: Option<FluxGlobals>,
}

/// `[globals.flux]`.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct FluxGlobals {
    pub repository: String,
    #[serde(default = "default_ref")]
    pub reference: String,
}

fn default_ref() -> String {
    "refs/heads/main".into()
}
