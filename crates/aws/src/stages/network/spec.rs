//! The `[network]` section and its validation (all before any API call).

use crate::tagging::{ENGINE_TAGS, MAX_KEY_LEN, MAX_TAGS, MAX_VALUE_LEN};
use engine::spec::cidr::ipv4_network;
use engine::spec::{FieldPath, Globals, SpecError, SpecSource, names};
use ipnet::Ipv4Net;
use serde::Deserialize;
use std::collections::BTreeMap;

/// `[network]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetworkSpec {
    /// Primary VPC CIDR, e.g. `10.0.0.0/16`.
    pub vpc_cidr: String,
    /// Secondary CIDRs associated with the VPC, e.g. `100.64.0.0/16` for pods.
    #[serde(default)]
    pub secondary_cidrs: Vec<String>,
    /// Availability zones, e.g. `eu-west-3a`; subnet CIDR lists follow this order.
    pub azs: Vec<String>,
    /// `single` NAT gateway (default), one `per-az`, or `none`.
    #[serde(default)]
    pub nat: NatMode,
    /// An S3 gateway endpoint on the private route tables.
    #[serde(default = "yes")]
    pub s3_gateway_endpoint: bool,
    pub flow_logs: Option<FlowLogsSpec>,
    pub private_zone: Option<PrivateZoneSpec>,
    pub private_access: Option<PrivateAccessSpec>,
    pub subnets: Subnets,
    /// Tags on every network resource, on top of the global tags.
    #[serde(default)]
    pub tags: BTreeMap<String, String>,
}

fn yes() -> bool {
    true
}

/// NAT gateway layout.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NatMode {
    #[default]
    Single,
    PerAz,
    None,
}

/// Subnet tiers.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Subnets {
    pub public: Option<Tier>,
    pub private: Option<Tier>,
    pub intra: Option<Tier>,
    /// Pod subnets (Cilium ENI mode), on the private route table(s).
    pub pod: Option<Tier>,
}

impl Subnets {
    /// The tiers present, with their names, in a fixed order.
    pub fn tiers(&self) -> Vec<(&'static str, &Tier)> {
        [
            ("public", &self.public),
            ("private", &self.private),
            ("intra", &self.intra),
            ("pod", &self.pod),
        ]
        .into_iter()
        .filter_map(|(n, t)| t.as_ref().map(|t| (n, t)))
        .collect()
    }
}

/// One subnet tier: a CIDR per AZ (in `azs` order) and tags.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tier {
    pub cidrs: Vec<String>,
    #[serde(default)]
    pub tags: BTreeMap<String, String>,
}

/// VPC flow logs to CloudWatch Logs.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowLogsSpec {
    #[serde(default = "yes")]
    pub enabled: bool,
    #[serde(default = "default_retention")]
    pub retention_days: i64,
    /// `ALL`, `ACCEPT` or `REJECT`.
    #[serde(default = "default_traffic")]
    pub traffic_type: String,
}

fn default_retention() -> i64 {
    7
}

fn default_traffic() -> String {
    "ALL".into()
}

/// The private Route53 zone, `priv.aws.<domain>` by default.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PrivateZoneSpec {
    pub name: Option<String>,
}

/// The security group of the private-access path (the operator's network into the VPC).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PrivateAccessSpec {
    /// CIDRs of the operator's private network allowed in.
    #[serde(default)]
    pub allowed_cidrs: Vec<String>,
}

/// CloudWatch retention values AWS accepts.
const RETENTION_DAYS: &[i64] = &[
    1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922,
    3288, 3653,
];

/// A parsed CIDR with where it came from.
struct Cidr {
    net: Ipv4Net,
    path: FieldPath,
}

/// Whether `region` looks like an AWS region name (`eu-west-3`, `us-gov-west-1`).
pub fn valid_region(region: &str) -> bool {
    let parts: Vec<&str> = region.split('-').collect();
    parts.len() >= 3
        && parts[0].len() == 2
        && parts[0].chars().all(|c| c.is_ascii_lowercase())
        && parts[1..parts.len() - 1]
            .iter()
            .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_lowercase()))
        && parts[parts.len() - 1].parse::<u8>().is_ok()
}

/// Checks tag keys and values against AWS's limits.
pub fn check_tags(
    spec: &SpecSource,
    path: &FieldPath,
    tags: &BTreeMap<String, String>,
    errors: &mut Vec<SpecError>,
) {
    for (k, v) in tags {
        let p = path.key(k);
        if k.is_empty() || k.chars().count() > MAX_KEY_LEN {
            errors.push(spec.error(&p, format!("tag keys must be 1 to {MAX_KEY_LEN} characters")));
        }
        if k.to_ascii_lowercase().starts_with("aws:") {
            errors.push(spec.error(&p, "tag keys starting with `aws:` are reserved by AWS"));
        }
        if k.starts_with("engine:") {
            errors.push(spec.error(&p, "tag keys starting with `engine:` are the engine's own"));
        }
        if v.chars().count() > MAX_VALUE_LEN {
            errors.push(
                spec.error(&p, format!("tag values must be at most {MAX_VALUE_LEN} characters")),
            );
        }
    }
}

/// Checks a section's `tags` (at `path`) and that, with the global and engine tags, they fit
/// in AWS's limit per resource.
pub fn check_section_tags(
    spec: &SpecSource,
    path: &FieldPath,
    globals: &Globals,
    tags: &BTreeMap<String, String>,
    errors: &mut Vec<SpecError>,
) {
    check_tags(spec, path, tags, errors);
    let total = globals.tags.len() + tags.len() + ENGINE_TAGS;
    if total > MAX_TAGS {
        let message = format!(
            "{total} tags per resource (with global and engine tags); AWS allows {MAX_TAGS}"
        );
        errors.push(spec.error(path, message));
    }
}

/// Validates `[network]` against the globals. Returns every problem found.
pub fn validate(spec: &SpecSource, globals: &Globals, net: &NetworkSpec) -> Vec<SpecError> {
    let mut errors = Vec::new();
    let root = FieldPath::root("network");
    let g = FieldPath::root("globals");
    if !valid_region(&globals.region) {
        errors.push(spec.error(
            &g.key("region"),
            format!("`{}` is not an AWS region name (like eu-west-3)", globals.region),
        ));
    }
    check_tags(spec, &g.key("tags"), &globals.tags, &mut errors);
    check_tags(spec, &root.key("tags"), &net.tags, &mut errors);

    // CIDRs of the VPC.
    let mut vpc_nets = Vec::new();
    if let Some(n) = ipv4_network(spec, &root.key("vpc_cidr"), &net.vpc_cidr, &mut errors) {
        if !(16..=28).contains(&n.prefix_len()) {
            errors
                .push(spec.error(&root.key("vpc_cidr"), "a VPC CIDR must be between /16 and /28"));
        }
        vpc_nets.push(n);
    }
    for (i, c) in net.secondary_cidrs.iter().enumerate() {
        let p = root.key("secondary_cidrs").index(i);
        if let Some(n) = ipv4_network(spec, &p, c, &mut errors) {
            if vpc_nets.iter().any(|v| v.contains(&n) || n.contains(v)) {
                errors.push(spec.error(&p, format!("`{c}` overlaps another VPC CIDR")));
            }
            vpc_nets.push(n);
        }
    }

    // Availability zones: `<region><letter>`, distinct.
    if net.azs.is_empty() {
        errors.push(spec.error(&root.key("azs"), "at least one availability zone is needed"));
    }
    for (i, az) in net.azs.iter().enumerate() {
        let p = root.key("azs").index(i);
        let suffix = az.strip_prefix(globals.region.as_str());
        let ok = suffix.is_some_and(|s| s.len() == 1 && s.chars().all(|c| c.is_ascii_lowercase()));
        if !ok {
            errors.push(spec.error(
                &p,
                format!(
                    "`{az}` is not an availability zone of region {} (expected {}a, {}b, ...)",
                    globals.region, globals.region, globals.region
                ),
            ));
        }
        if net.azs[..i].contains(az) {
            errors.push(spec.error(&p, format!("availability zone `{az}` is listed twice")));
        }
    }

    // Subnets: one per AZ per tier, inside a VPC CIDR, no overlaps.
    let tiers = net.subnets.tiers();
    if tiers.is_empty() {
        errors.push(spec.error(&root.key("subnets"), "at least one subnet tier is needed"));
    }
    let mut all: Vec<Cidr> = Vec::new();
    for (name, tier) in &tiers {
        let tp = root.key("subnets").key(name);
        check_tags(spec, &tp.key("tags"), &tier.tags, &mut errors);
        let total = globals.tags.len() + net.tags.len() + tier.tags.len() + ENGINE_TAGS;
        if total > MAX_TAGS {
            errors.push(spec.error(
                &tp.key("tags"),
                format!("{total} tags per subnet (with global, network and engine tags); AWS allows {MAX_TAGS}"),
            ));
        }
        if tier.cidrs.len() != net.azs.len() {
            errors.push(spec.error(
                &tp.key("cidrs"),
                format!(
                    "{} CIDRs for {} availability zones: give one per zone, in `azs` order",
                    tier.cidrs.len(),
                    net.azs.len()
                ),
            ));
        }
        for (i, c) in tier.cidrs.iter().enumerate() {
            let p = tp.key("cidrs").index(i);
            let Some(n) = ipv4_network(spec, &p, c, &mut errors) else {
                continue;
            };
            if !(16..=28).contains(&n.prefix_len()) {
                errors.push(spec.error(&p, format!("`{c}`: a subnet must be between /16 and /28")));
            }
            if !vpc_nets.is_empty() && !vpc_nets.iter().any(|v| v.contains(&n)) {
                let vpcs: Vec<String> = vpc_nets.iter().map(|v| v.to_string()).collect();
                errors.push(spec.error(
                    &p,
                    format!("subnet `{c}` is not inside the VPC CIDRs ({})", vpcs.join(", ")),
                ));
            }
            if let Some(other) = all.iter().find(|o| o.net.contains(&n) || n.contains(&o.net)) {
                errors.push(
                    spec.error(
                        &p,
                        format!("subnet `{c}` overlaps `{}` ({})", other.net, other.path),
                    ),
                );
            }
            all.push(Cidr { net: n, path: p });
        }
    }
    if net.nat != NatMode::None && net.subnets.public.is_none() {
        errors.push(spec.error(&root.key("nat"), "NAT gateways need a `public` subnet tier"));
    }
    if let Some(fl) = &net.flow_logs {
        if !RETENTION_DAYS.contains(&fl.retention_days) {
            errors.push(spec.error(
                &root.key("flow_logs").key("retention_days"),
                format!(
                    "{} is not a CloudWatch retention period ({RETENTION_DAYS:?})",
                    fl.retention_days
                ),
            ));
        }
        if !["ALL", "ACCEPT", "REJECT"].contains(&fl.traffic_type.as_str()) {
            errors.push(spec.error(
                &root.key("flow_logs").key("traffic_type"),
                "traffic_type must be ALL, ACCEPT or REJECT",
            ));
        }
    }
    if let Some(name) = net.private_zone.as_ref().and_then(|z| z.name.as_ref())
        && !names::dns_name(name)
    {
        errors.push(spec.error(
            &root.key("private_zone").key("name"),
            format!("`{name}` is not a DNS name (like priv.aws.example.org)"),
        ));
    }
    if let Some(pa) = &net.private_access {
        for (i, c) in pa.allowed_cidrs.iter().enumerate() {
            ipv4_network(
                spec,
                &root.key("private_access").key("allowed_cidrs").index(i),
                c,
                &mut errors,
            );
        }
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn region_names() {
        assert!(valid_region("eu-west-3"));
        assert!(valid_region("us-gov-west-1"));
        assert!(!valid_region("eu-west"));
        assert!(!valid_region("EU-west-3"));
        assert!(!valid_region("euwest3"));
    }
}
