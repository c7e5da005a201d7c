//! The GCP `[access]` section and its validation (before any API call).

use crate::stages::network::spec::NetworkSpec;
use engine::spec::cidr::ipv4_network;
use engine::spec::{FieldPath, SpecError, SpecSource};
use serde::Deserialize;

/// `[access]` (GCP).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AccessSpec {
    /// The subnet router's name: its machine name in the tailnet and its group's name.
    pub router: String,
    #[serde(default = "default_machine_type")]
    pub machine_type: String,
    #[serde(default = "default_image")]
    pub image: String,
    #[serde(default = "default_boot_disk_gb")]
    pub boot_disk_gb: i64,
    /// The router's service account id.
    #[serde(default = "default_service_account")]
    pub service_account: String,
    /// The ranges it advertises (default: the nodes', pods', services' and, with `[gke]`, the
    /// control plane's).
    pub advertise_routes: Option<Vec<String>>,
    #[serde(default = "yes")]
    pub ssh: bool,
    /// The private zone resolves from the tailnet through the network's inbound DNS forwarder.
    #[serde(default = "yes")]
    pub split_dns: bool,
    /// The Secret Manager secret that holds the router's tailnet key.
    pub key_secret: Option<String>,
    #[serde(default)]
    pub key_tags: Vec<String>,
    #[serde(default = "default_expiry_days")]
    pub key_expiry_days: i64,
    /// The key's description (the reference's "GCP subnet router - dev").
    pub key_description: Option<String>,
}

fn yes() -> bool {
    true
}
fn default_machine_type() -> String {
    "e2-micro".into()
}
fn default_image() -> String {
    "projects/debian-cloud/global/images/family/debian-12".into()
}
fn default_boot_disk_gb() -> i64 {
    10
}
fn default_service_account() -> String {
    "tailscale-subnet-router".into()
}
fn default_expiry_days() -> i64 {
    90
}

impl AccessSpec {
    pub fn key_secret(&self) -> String {
        self.key_secret
            .clone()
            .unwrap_or_else(|| format!("tailscale-subnet-router-{}", self.router))
    }

    pub fn key_description(&self) -> String {
        let text = self
            .key_description
            .clone()
            .unwrap_or_else(|| format!("subnet router {}", self.router));
        text.chars().take(50).collect()
    }
}

/// Validates `[access]`. Returns every problem.
pub fn validate(
    spec: &SpecSource,
    net: Option<&NetworkSpec>,
    access: &AccessSpec,
) -> Vec<SpecError> {
    let mut errors = Vec::new();
    let root = FieldPath::root("access");
    match net {
        None => {
            errors.push(spec.error(&root, "the subnet router needs `[network]` (its subnetwork)"))
        }
        Some(net)
            if access.split_dns && (net.private_zone.is_none() || !net.dns_inbound_forwarding) =>
        {
            errors.push(spec.error(
                &root.key("split_dns"),
                "split DNS needs `[network] private_zone` and `dns_inbound_forwarding = true` \
                 (the forwarder the tailnet's queries go to); or set `split_dns = false`",
            ))
        }
        Some(_) => {}
    }
    if !crate::stages::project::valid_name(&access.router) {
        errors.push(spec.error(
            &root.key("router"),
            format!("`{}` is not a GCP name (lowercase letters, digits, `-`)", access.router),
        ));
    }
    let secret_ok = {
        let s = access.key_secret();
        !s.is_empty()
            && s.len() <= 255
            && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    };
    if !secret_ok {
        errors.push(spec.error(
            &root.key("key_secret"),
            "a Secret Manager secret id is letters, digits, `-` and `_`",
        ));
    }
    if let Some(routes) = &access.advertise_routes {
        for (i, r) in routes.iter().enumerate() {
            ipv4_network(spec, &root.key("advertise_routes").index(i), r, &mut errors);
        }
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
    errors
}
