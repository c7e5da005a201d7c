//! The `[gke]` section and its validation (all before any API call).

use crate::stages::network::spec::NetworkSpec;
use crate::stages::project::{check_labels, valid_name};
use engine::spec::{FieldPath, Globals, SpecError, SpecSource, names};
use ipnet::Ipv4Net;
use serde::Deserialize;
use std::collections::BTreeMap;

/// `[gke]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GkeSpec {
    /// The cluster's name (default: `[globals] cluster_name`).
    pub name: Option<String>,
    /// `RAPID`, `REGULAR` (default), `STABLE` or `EXTENDED`.
    #[serde(default = "regular")]
    pub release_channel: String,
    /// The Kubernetes version of the control plane and the node pools (`1.34`, or a full
    /// `1.34.5-gke.1200`); absent or `latest`: the release channel's. A new value upgrades the
    /// control plane, then the pools.
    pub version: Option<String>,
    /// The control plane's private range, a /28 outside the network's ranges.
    pub master_cidr: String,
    /// Only a private endpoint (reached through the tailnet's subnet router).
    #[serde(default = "yes")]
    pub private_endpoint: bool,
    /// Networks allowed to reach the control plane.
    #[serde(default)]
    pub authorized_networks: Vec<AuthorizedNetworkSpec>,
    /// `legacy` (default: Cilium owns the datapath) or `dataplane-v2`.
    #[serde(default = "legacy")]
    pub datapath: String,
    /// GKE's own network policy enforcement (off: Cilium's).
    #[serde(default)]
    pub network_policy: bool,
    /// `none` (default) or `default` (Cloud Logging / Monitoring for system and workloads).
    #[serde(default = "none")]
    pub logging: String,
    #[serde(default = "none")]
    pub monitoring: String,
    #[serde(default)]
    pub node_pools: BTreeMap<String, NodePoolSpec>,
    /// Labels on the cluster, on top of the global tags.
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
}

fn regular() -> String {
    "REGULAR".into()
}
fn legacy() -> String {
    "legacy".into()
}
fn none() -> String {
    "none".into()
}
fn yes() -> bool {
    true
}

/// A network allowed to reach the control plane.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuthorizedNetworkSpec {
    pub cidr: String,
    pub name: String,
}

/// One node pool.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodePoolSpec {
    /// e.g. `e2-standard-4`.
    pub machine_type: String,
    #[serde(default = "cos")]
    pub image_type: String,
    #[serde(default)]
    pub spot: bool,
    pub min_nodes: i64,
    pub max_nodes: i64,
    /// Nodes at creation (default: `min_nodes`).
    pub initial_nodes: Option<i64>,
    #[serde(default = "disk_size")]
    pub disk_size_gb: i64,
    #[serde(default = "disk_type")]
    pub disk_type: String,
    #[serde(default)]
    pub taints: Vec<TaintSpec>,
    /// Kubernetes labels of the nodes.
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    #[serde(default = "yes")]
    pub auto_repair: bool,
    #[serde(default = "yes")]
    pub auto_upgrade: bool,
}

fn cos() -> String {
    "COS_CONTAINERD".into()
}
fn disk_size() -> i64 {
    100
}
fn disk_type() -> String {
    "pd-balanced".into()
}

/// A node taint.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaintSpec {
    pub key: String,
    #[serde(default)]
    pub value: String,
    /// `NO_SCHEDULE`, `PREFER_NO_SCHEDULE` or `NO_EXECUTE`.
    pub effect: String,
}

/// Whether `text` reads as a Compute machine type: a family and a shape, e.g. `e2-standard-4`,
/// `e2-micro`, `n2-highmem-8`, `n2-custom-4-16384`.
pub fn valid_machine_type(text: &str) -> bool {
    let parts: Vec<&str> = text.split('-').collect();
    parts.len() >= 2
        && parts[0].len() >= 2
        && parts[0].starts_with(|c: char| c.is_ascii_lowercase())
        && parts.iter().all(|p| {
            !p.is_empty() && p.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        })
}

/// Whether `v` reads as a GKE version: `1.34`, `1.34.5` or `1.34.5-gke.1200`.
pub fn valid_version(v: &str) -> bool {
    let (numbers, suffix) = v.split_once("-gke.").map_or((v, None), |(n, s)| (n, Some(s)));
    let parts: Vec<&str> = numbers.split('.').collect();
    (2..=3).contains(&parts.len())
        && parts.iter().all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()))
        && suffix.is_none_or(|s| {
            parts.len() == 3 && !s.is_empty() && s.chars().all(|c| c.is_ascii_digit())
        })
}

/// Validates `[gke]` with the network it runs on. Returns every problem found.
pub fn validate(
    spec: &SpecSource,
    globals: &Globals,
    gke: &GkeSpec,
    net: &NetworkSpec,
) -> Vec<SpecError> {
    let mut errors = Vec::new();
    let root = FieldPath::root("gke");
    let name = gke.name.as_deref().unwrap_or(&globals.cluster_name);
    if !valid_name(name) || name.len() > 40 {
        let path = if gke.name.is_some() {
            root.key("name")
        } else {
            FieldPath::root("globals").key("cluster_name")
        };
        errors.push(spec.error(&path, format!("`{name}` is not a GKE cluster name (lowercase letters, digits and `-`, starting with a letter, at most 40 characters)")));
    }
    if !["RAPID", "REGULAR", "STABLE", "EXTENDED"].contains(&gke.release_channel.as_str()) {
        errors.push(spec.error(
            &root.key("release_channel"),
            "expected `RAPID`, `REGULAR`, `STABLE` or `EXTENDED`",
        ));
    }
    if let Some(v) = gke.version.as_deref().filter(|v| *v != "latest")
        && !valid_version(v)
    {
        errors.push(spec.error(
            &root.key("version"),
            format!("`{v}` is not a GKE version (like 1.34 or 1.34.5-gke.1200)"),
        ));
    }
    if !["legacy", "dataplane-v2"].contains(&gke.datapath.as_str()) {
        errors.push(spec.error(&root.key("datapath"), "expected `legacy` or `dataplane-v2`"));
    }
    for (field, value) in [("logging", &gke.logging), ("monitoring", &gke.monitoring)] {
        if !["none", "default"].contains(&value.as_str()) {
            errors.push(spec.error(&root.key(field), "expected `none` or `default`"));
        }
    }
    match gke.master_cidr.parse::<Ipv4Net>() {
        Ok(n) if n.prefix_len() != 28 || n.trunc() != n => {
            errors.push(spec.error(
                &root.key("master_cidr"),
                format!(
                    "`{}`: the control plane's range is a /28 network address",
                    gke.master_cidr
                ),
            ));
        }
        Ok(n) => {
            let ranges = [
                ("network.subnet_cidr", &net.subnet_cidr),
                ("network.pods_cidr", &net.pods_cidr),
                ("network.services_cidr", &net.services_cidr),
            ];
            for (field, text) in ranges {
                if let Ok(other) = text.parse::<Ipv4Net>()
                    && (other.contains(&n) || n.contains(&other))
                {
                    errors.push(spec.error(
                        &root.key("master_cidr"),
                        format!("`{}` overlaps `{field}`", gke.master_cidr),
                    ));
                }
            }
        }
        Err(_) => {
            errors.push(spec.error(
                &root.key("master_cidr"),
                format!("`{}` is not an IPv4 CIDR", gke.master_cidr),
            ))
        }
    }
    for (i, a) in gke.authorized_networks.iter().enumerate() {
        let path = root.key("authorized_networks").index(i);
        if a.cidr.parse::<Ipv4Net>().is_err() {
            errors.push(spec.error(&path.key("cidr"), format!("`{}` is not an IPv4 CIDR", a.cidr)));
        }
        if a.name.is_empty() {
            errors.push(spec.error(&path.key("name"), "an authorised network needs a name"));
        }
    }
    for (pool, p) in &gke.node_pools {
        let path = root.key("node_pools").key(pool);
        if !valid_name(pool) || pool.len() > 40 {
            errors.push(spec.error(&path, format!("`{pool}` is not a node pool name (lowercase letters, digits and `-`, at most 40)")));
        }
        if !valid_machine_type(&p.machine_type) {
            errors.push(spec.error(
                &path.key("machine_type"),
                format!("`{}` is not a machine type (like e2-standard-4)", p.machine_type),
            ));
        }
        if p.min_nodes < 0 || p.max_nodes < p.min_nodes || p.max_nodes > 1000 {
            errors.push(spec.error(
                &path.key("max_nodes"),
                format!(
                    "expected 0 <= min_nodes ({}) <= max_nodes ({}) <= 1000",
                    p.min_nodes, p.max_nodes
                ),
            ));
        }
        if let Some(n) = p.initial_nodes
            && (n < p.min_nodes || n > p.max_nodes)
        {
            errors.push(
                spec.error(
                    &path.key("initial_nodes"),
                    format!("{n} is outside min_nodes..max_nodes"),
                ),
            );
        }
        if !(10..=65536).contains(&p.disk_size_gb) {
            errors.push(spec.error(&path.key("disk_size_gb"), "a boot disk is 10 to 65536 GB"));
        }
        for (i, t) in p.taints.iter().enumerate() {
            let tp = path.key("taints").index(i);
            if !names::k8s_label_key(&t.key) {
                errors.push(spec.error(&tp.key("key"), format!("`{}` is not a taint key", t.key)));
            }
            if !["NO_SCHEDULE", "PREFER_NO_SCHEDULE", "NO_EXECUTE"].contains(&t.effect.as_str()) {
                errors.push(spec.error(
                    &tp.key("effect"),
                    "expected `NO_SCHEDULE`, `PREFER_NO_SCHEDULE` or `NO_EXECUTE`",
                ));
            }
        }
        for k in p.labels.keys() {
            if !names::k8s_label_key(k) {
                errors.push(spec.error(
                    &path.key("labels").key(k),
                    format!("`{k}` is not a Kubernetes label key"),
                ));
            }
        }
    }
    check_labels(spec, &root.key("labels"), &gke.labels, &mut errors);
    errors
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn machine_types() {
        for ok in
            ["e2-standard-4", "e2-micro", "n2-highmem-8", "n2-custom-4-16384", "g2-standard-8"]
        {
            assert!(valid_machine_type(ok), "{ok}");
        }
        for bad in ["e2", "E2-standard-4", "e2--4", "standard 4", "e2-standard-4 ", ""] {
            assert!(!valid_machine_type(bad), "{bad}");
        }
        assert!(
            valid_version("1.34") && valid_version("1.34.5") && valid_version("1.34.5-gke.1200")
        );
        assert!(!valid_version("1") && !valid_version("1.34-gke.1") && !valid_version("v1.34"));
    }
}
