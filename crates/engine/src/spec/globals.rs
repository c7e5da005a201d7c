//! `[globals]`: values every stage reads, set once.

use super::{FieldPath, SpecError, SpecSource, names};
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
    /// Addresses (or address prefixes) of resources the engine shares with a controller that
    /// legitimately changes them (e.g. `aws.eks.security_group.node`, to which a load balancer
    /// controller adds rules): what is attached to them out of band is neither drift nor
    /// removed. Every other resource the engine makes is watched whole.
    #[serde(default)]
    pub shared: Vec<String>,
    /// The lane a run selects this spec by, when it is not its cloud's: `shared` for what serves
    /// every lane (e.g. the AWS–GCP federation), which runs whatever lanes are selected.
    pub lane: Option<String>,
    /// Ordering against other specs run in the same invocation: spec name → address prefixes
    /// of this spec that start only once that spec's apply has finished (and, on destroy, that
    /// spec's destroy waits for them). A spec not in the invocation orders nothing.
    #[serde(default)]
    pub after: BTreeMap<String, Vec<String>>,
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

impl Globals {
    /// What every lane needs of `[globals]`: non-empty names, a DNS domain, a spec name fit for a
    /// file name, non-empty versions and a Flux source with a URL. Stages check the rest (the
    /// region's form, the cluster name's, which versions they need).
    pub(crate) fn validate(&self, spec: &SpecSource) -> Vec<SpecError> {
        let g = FieldPath::root("globals");
        let mut errors = Vec::new();
        for (field, value) in [("region", &self.region), ("cluster_name", &self.cluster_name)] {
            if value.trim().is_empty() {
                errors.push(spec.error(&g.key(field), format!("`{field}` must not be empty")));
            }
        }
        if !names::dns_name(&self.domain) {
            errors.push(spec.error(
                &g.key("domain"),
                format!("`{}` is not a DNS name (like example.org)", self.domain),
            ));
        }
        if let Some(name) = &self.name
            && !valid_spec_name(name)
        {
            errors.push(spec.error(
                &g.key("name"),
                format!(
                    "`{name}` is not a spec name (1 to 64 letters, digits, `-`, `_` and `.`, not \
                     starting with `.`): it names the state file"
                ),
            ));
        }
        for (key, version) in &self.versions {
            if version.trim().is_empty() {
                errors.push(
                    spec.error(
                        &g.key("versions").key(key),
                        format!("the `{key}` version is empty"),
                    ),
                );
            }
        }
        if let Some(lane) = &self.lane
            && lane != "shared"
            && lane != &self.cloud
        {
            errors.push(spec.error(
                &g.key("lane"),
                format!(
                    "unknown lane `{lane}` (expected `shared`, or leave it out for the cloud's)"
                ),
            ));
        }
        for (other, prefixes) in &self.after {
            if !valid_spec_name(other) {
                errors.push(
                    spec.error(&g.key("after").key(other), format!("`{other}` is not a spec name")),
                );
            }
            if prefixes.is_empty() || prefixes.iter().any(|p| p.trim().is_empty()) {
                errors.push(spec.error(
                    &g.key("after").key(other),
                    "name the address prefixes that wait (like [\"gcp.gke\", \"bootstrap\"])",
                ));
            }
        }
        if let Some(flux) = &self.flux {
            let url_ok = flux.repository.split_once("://").is_some_and(|(scheme, rest)| {
                !scheme.is_empty() && !rest.is_empty() && !rest.contains(char::is_whitespace)
            });
            if !url_ok {
                errors.push(spec.error(
                    &g.key("flux").key("repository"),
                    format!(
                        "`{}` is not a repository URL (like https://github.com/org/repo.git)",
                        flux.repository
                    ),
                ));
            }
            if flux.reference.trim().is_empty() {
                errors.push(spec.error(
                    &g.key("flux").key("reference"),
                    "the reference must not be empty (like refs/heads/main)",
                ));
            }
        }
        errors
    }
}

/// A spec name: the `engine:spec` tag and the state file's name.
fn valid_spec_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && !name.starts_with('.')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
}
