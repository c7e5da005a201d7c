//! The GCP `[network]` section and its validation (all before any API call).

use crate::stages::project::{check_labels, valid_name};
use engine::spec::cidr::ipv4_network;
use engine::spec::{FieldPath, SpecError, SpecSource, names};
use ipnet::Ipv4Net;
use serde::Deserialize;
use std::collections::BTreeMap;

/// `[network]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetworkSpec {
    /// The VPC's name, e.g. `vpc-europe-west4-dev`; the subnetwork, its ranges, the router and
    /// NAT are named after it (`<name>-nodes`, `<name>-nodes-pods`, `router-<rest>`, ...).
    pub name: String,
    /// `REGIONAL` (default) or `GLOBAL` dynamic routing.
    #[serde(default = "regional")]
    pub routing_mode: String,
    /// The nodes' subnetwork, e.g. `10.10.0.0/16`.
    pub subnet_cidr: String,
    /// GKE's pods range (a secondary range of the subnetwork), e.g. `100.65.0.0/16`.
    pub pods_cidr: String,
    /// GKE's services range, e.g. `10.11.0.0/20`.
    pub services_cidr: String,
    pub flow_logs: Option<FlowLogsSpec>,
    /// Cloud NAT for every range of every subnetwork (absent: no router, no NAT).
    pub nat: Option<NatSpec>,
    pub private_zone: Option<PrivateZoneSpec>,
    /// A DNS server policy with inbound forwarding (resolver addresses in the subnetwork).
    #[serde(default)]
    pub dns_inbound_forwarding: bool,
    /// Firewall rules by name.
    #[serde(default)]
    pub firewalls: BTreeMap<String, FirewallSpec>,
    /// Labels on what takes them (the DNS zone), on top of the global tags.
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
}

fn regional() -> String {
    "REGIONAL".into()
}

/// The subnetwork's flow logs.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowLogsSpec {
    /// Fraction of flows sampled (0 to 1), default 0.5.
    #[serde(default = "half")]
    pub sampling: f64,
    /// `INCLUDE_ALL_METADATA` (default) or `EXCLUDE_ALL_METADATA`.
    #[serde(default = "all_metadata")]
    pub metadata: String,
}

fn half() -> f64 {
    0.5
}

fn all_metadata() -> String {
    "INCLUDE_ALL_METADATA".into()
}

/// Cloud NAT.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NatSpec {
    /// `ERRORS_ONLY`, `TRANSLATIONS_ONLY` or `ALL`; absent: no NAT logging.
    pub log_filter: Option<String>,
}

/// The private zone.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PrivateZoneSpec {
    /// The zone's domain, e.g. `priv.gcp.ogenki.io`.
    pub name: String,
}

/// One firewall rule: ingress from `source_ranges` or `source_tags`, to `target_tags` (none:
/// every instance of the network).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FirewallSpec {
    #[serde(default)]
    pub source_ranges: Vec<String>,
    #[serde(default)]
    pub source_tags: Vec<String>,
    #[serde(default)]
    pub target_tags: Vec<String>,
    #[serde(default = "default_priority")]
    pub priority: i64,
    pub allow: Vec<AllowSpec>,
}

fn default_priority() -> i64 {
    1000
}

/// A protocol and its ports.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AllowSpec {
    pub protocol: String,
    #[serde(default)]
    pub ports: Vec<String>,
}

/// Whether `port` is a port (`443`) or a range (`8000-8999`).
fn valid_port(port: &str) -> bool {
    let bounds: Vec<&str> = port.split('-').collect();
    let parsed: Vec<Option<u16>> =
        bounds.iter().map(|b| b.parse::<u16>().ok().filter(|p| *p > 0)).collect();
    match parsed.as_slice() {
        [Some(_)] => true,
        [Some(lo), Some(hi)] => lo <= hi,
        _ => false,
    }
}

/// Validates `[network]`. Returns every problem found.
pub fn validate(spec: &SpecSource, net: &NetworkSpec) -> Vec<SpecError> {
    let mut errors = Vec::new();
    let root = FieldPath::root("network");
    // The longest derived name is `<name>-nodes-services`.
    if !valid_name(&net.name) || net.name.len() + "-nodes-services".len() > 63 {
        errors.push(spec.error(
            &root.key("name"),
            format!(
                "`{}` is not a usable network name (lowercase letters, digits and `-`, starting \
                 with a letter, at most 48 characters so the names made from it fit)",
                net.name
            ),
        ));
    }
    if !["REGIONAL", "GLOBAL"].contains(&net.routing_mode.as_str()) {
        errors.push(spec.error(&root.key("routing_mode"), "expected `REGIONAL` or `GLOBAL`"));
    }
    let ranges = [
        ("subnet_cidr", &net.subnet_cidr),
        ("pods_cidr", &net.pods_cidr),
        ("services_cidr", &net.services_cidr),
    ];
    let mut parsed: Vec<(&str, Ipv4Net)> = Vec::new();
    for (field, text) in ranges {
        let path = root.key(field);
        let Some(n) = ipv4_network(spec, &path, text, &mut errors) else { continue };
        if n.prefix_len() < 8 || n.prefix_len() > 29 {
            errors.push(spec.error(&path, format!("`{text}`: GCP ranges are /8 to /29")));
        }
        if let Some((other, _)) = parsed.iter().find(|(_, o)| o.contains(&n) || n.contains(o)) {
            errors.push(spec.error(&path, format!("`{text}` overlaps `{other}`")));
        }
        parsed.push((field, n));
    }
    if let Some(logs) = &net.flow_logs {
        let path = root.key("flow_logs");
        if !(0.0..=1.0).contains(&logs.sampling) {
            errors.push(spec.error(&path.key("sampling"), "a sampling rate is between 0 and 1"));
        }
        if !["INCLUDE_ALL_METADATA", "EXCLUDE_ALL_METADATA"].contains(&logs.metadata.as_str()) {
            errors.push(spec.error(
                &path.key("metadata"),
                "expected `INCLUDE_ALL_METADATA` or `EXCLUDE_ALL_METADATA`",
            ));
        }
    }
    if let Some(filter) = net.nat.as_ref().and_then(|n| n.log_filter.as_deref())
        && !["ERRORS_ONLY", "TRANSLATIONS_ONLY", "ALL"].contains(&filter)
    {
        let path = root.key("nat").key("log_filter");
        errors.push(spec.error(&path, "expected `ERRORS_ONLY`, `TRANSLATIONS_ONLY` or `ALL`"));
    }
    if let Some(zone) = &net.private_zone
        && !names::dns_name(zone.name.trim_end_matches('.'))
    {
        let path = root.key("private_zone").key("name");
        errors.push(spec.error(&path, format!("`{}` is not a DNS name", zone.name)));
    }
    for (name, rule) in &net.firewalls {
        let path = root.key("firewalls").key(name);
        if !valid_name(name) {
            errors.push(spec.error(&path, format!("`{name}` is not a firewall name (lowercase letters, digits and `-`, starting with a letter)")));
        }
        if rule.source_ranges.is_empty() && rule.source_tags.is_empty() {
            errors
                .push(spec.error(&path, "an ingress rule needs `source_ranges` or `source_tags`"));
        }
        for (i, r) in rule.source_ranges.iter().enumerate() {
            ipv4_network(spec, &path.key("source_ranges").index(i), r, &mut errors);
        }
        if !(0..=65535).contains(&rule.priority) {
            errors.push(spec.error(&path.key("priority"), "a priority is 0 to 65535"));
        }
        if rule.allow.is_empty() {
            errors.push(spec.error(&path.key("allow"), "at least one protocol is allowed"));
        }
        for (i, a) in rule.allow.iter().enumerate() {
            let p = path.key("allow").index(i);
            if !["tcp", "udp", "icmp", "esp", "ah", "sctp", "all"].contains(&a.protocol.as_str()) {
                errors.push(spec.error(
                    &p.key("protocol"),
                    format!("`{}` is not a protocol GCP firewalls know", a.protocol),
                ));
            }
            if !a.ports.is_empty() && !["tcp", "udp", "sctp"].contains(&a.protocol.as_str()) {
                errors.push(spec.error(&p.key("ports"), "only tcp, udp and sctp rules have ports"));
            }
            for (j, port) in a.ports.iter().enumerate() {
                if !valid_port(port) {
                    errors.push(spec.error(
                        &p.key("ports").index(j),
                        format!("`{port}` is not a port or a range like `8000-8999`"),
                    ));
                }
            }
        }
    }
    check_labels(spec, &root.key("labels"), &net.labels, &mut errors);
    errors
}
