//! The `[access]` section and its validation (before any API call).

use crate::stages::network::spec::NetworkSpec;
use engine::spec::cidr::ipv4_network;
use engine::spec::{FieldPath, Globals, SpecError, SpecSource};
use serde::Deserialize;

/// `[access]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AccessSpec {
    /// The subnet router's name: its machine name in the tailnet and its AWS names.
    pub router: String,
    #[serde(default = "default_instance_type")]
    pub instance_type: String,
    /// The router's image (Ubuntu; an AMI id or a `resolve:ssm:` parameter).
    #[serde(default = "default_image")]
    pub image: String,
    #[serde(default = "default_root_volume_gib")]
    pub root_volume_gib: i64,
    /// The ranges the router advertises (default: the VPC's primary range).
    pub advertise_routes: Option<Vec<String>>,
    /// Domains the tailnet resolves through the VPC's resolver (default: the private zone and
    /// `<region>.compute.internal`).
    pub split_dns: Option<Vec<String>>,
    /// Tailscale SSH on the router.
    #[serde(default = "yes")]
    pub ssh: bool,
    /// node_exporter on the router (TCP 9100 from the VPC).
    #[serde(default = "yes")]
    pub node_exporter: bool,
    /// The Secrets Manager secret that holds the router's tailnet key.
    pub key_secret: Option<String>,
    /// ACL tags of the devices joining with the key (`tag:name`).
    #[serde(default)]
    pub key_tags: Vec<String>,
    /// How long a new key lasts (Tailscale allows 1 to 90 days); an expired key is replaced.
    #[serde(default = "default_expiry_days")]
    pub key_expiry_days: i64,
    /// The engine itself reaches OpenBao and the cluster's API through the tailnet: what talks
    /// to them waits for the router and the split DNS.
    #[serde(default)]
    pub engine_through_tailnet: bool,
}

fn yes() -> bool {
    true
}
fn default_instance_type() -> String {
    "t3.micro".into()
}
fn default_image() -> String {
    "resolve:ssm:/aws/service/canonical/ubuntu/server/24.04/stable/current/amd64/hvm/ebs-gp3/ami-id"
        .into()
}
fn default_root_volume_gib() -> i64 {
    20
}
fn default_expiry_days() -> i64 {
    90
}

impl AccessSpec {
    /// The secret that holds the router's key.
    pub fn key_secret(&self) -> String {
        self.key_secret
            .clone()
            .unwrap_or_else(|| format!("tailscale/subnet-router/{}", self.router))
    }

    /// The ranges the router advertises.
    pub fn routes(&self, net: &NetworkSpec) -> Vec<String> {
        self.advertise_routes.clone().unwrap_or_else(|| vec![net.vpc_cidr.clone()])
    }

    /// The domains the VPC's resolver answers for the tailnet.
    pub fn domains(&self, globals: &Globals, net: &NetworkSpec) -> Vec<String> {
        self.split_dns.clone().unwrap_or_else(|| {
            let zone = crate::stages::openbao::spec::zone_name(globals, net);
            zone.into_iter().chain([format!("{}.compute.internal", globals.region)]).collect()
        })
    }
}

/// The key's description: at most 50 characters, as Tailscale allows.
pub fn key_description(router: &str) -> String {
    let text = format!("subnet router {router}");
    text.chars().take(50).collect()
}

/// Validates `[access]`. Returns every problem.
pub fn validate(
    spec: &SpecSource,
    globals: &Globals,
    net: Option<&NetworkSpec>,
    access: &AccessSpec,
) -> Vec<SpecError> {
    let mut errors = Vec::new();
    let root = FieldPath::root("access");
    if globals.cloud != "aws" {
        errors.push(spec.error(
            &FieldPath::root("globals").key("cloud"),
            "`[access]` here is the AWS subnet router",
        ));
    }
    let Some(net) = net else {
        errors.push(spec.error(&root, "the subnet router needs `[network]` (its private subnets)"));
        return errors;
    };
    if net.subnets.private.is_none() {
        errors.push(spec.error(&root, "the subnet router runs in `[network.subnets.private]`"));
    }
    let name_ok = !access.router.is_empty()
        && access.router.len() <= 63
        && access.router.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
    if !name_ok {
        errors.push(spec.error(
            &root.key("router"),
            format!("`{}` is not a machine name (letters, digits, `-`; at most 63)", access.router),
        ));
    }
    if let Some(routes) = &access.advertise_routes {
        for (i, r) in routes.iter().enumerate() {
            ipv4_network(spec, &root.key("advertise_routes").index(i), r, &mut errors);
        }
    }
    if let Some(domains) = &access.split_dns {
        for (i, d) in domains.iter().enumerate().filter(|(_, d)| !domain_like(d)) {
            errors.push(
                spec.error(&root.key("split_dns").index(i), format!("`{d}` is not a domain")),
            );
        }
    } else if net.private_zone.is_none() {
        errors.push(spec.error(
            &root.key("split_dns"),
            "name the domains the VPC's resolver answers (there is no `[network] private_zone`)",
        ));
    }
    for (i, t) in access.key_tags.iter().enumerate().filter(|(_, t)| !t.starts_with("tag:")) {
        errors.push(
            spec.error(&root.key("key_tags").index(i), format!("`{t}` is not a tag (tag:name)")),
        );
    }
    if !(1..=90).contains(&access.key_expiry_days) {
        errors.push(spec.error(
            &root.key("key_expiry_days"),
            format!("{} days: Tailscale's keys last 1 to 90 days", access.key_expiry_days),
        ));
    }
    if !(8..=16384).contains(&access.root_volume_gib) {
        errors.push(spec.error(
            &root.key("root_volume_gib"),
            format!("{} GiB: a gp3 root volume is 8 to 16384 GiB", access.root_volume_gib),
        ));
    }
    errors
}

fn domain_like(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 253
        && s.split('.')
            .all(|l| !l.is_empty() && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'))
}
