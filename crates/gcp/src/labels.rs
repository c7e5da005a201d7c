//! Labels: GCP's tags. The engine's ownership tags (`engine:managed-by`, `engine:spec`,
//! `engine:address`, `engine:lineage`) become labels under GCP's rules (keys and values of at
//! most 63 lowercase letters, digits, `-` and `_`; keys start with a letter): `engine-managed-by`,
//! `engine-spec`, `engine-lineage` as they are, and `engine-address` as a readable, unique
//! label value made from the address (see [`address_label`]).
//!
//! Attributes keep the engine's tag names, so ownership works as on AWS
//! (`engine::ownership::adoptable`): [`to_labels`] writes them as labels, [`from_labels`]
//! reads them back for the request that looks for them.

use engine::{Address, TAG_ADDRESS, TAG_LINEAGE, TAG_MANAGED_BY, TAG_SPEC, Tags, Value};
use sha2::{Digest, Sha256};
use std::collections::HashMap;

/// GCP's limit on label keys and values.
pub const MAX_LEN: usize = 63;
/// GCP's limit on labels per resource.
pub const MAX_LABELS: usize = 64;

const OWNERSHIP: [(&str, &str); 4] = [
    (TAG_MANAGED_BY, "engine-managed-by"),
    (TAG_SPEC, "engine-spec"),
    (TAG_ADDRESS, "engine-address"),
    (TAG_LINEAGE, "engine-lineage"),
];

/// The `engine-address` label of `address`: its characters GCP allows (lowercased, others as
/// `_`), cut to fit, then `-` and 8 hex digits of its SHA-256, so two addresses never share one.
/// `gcp.network.subnetwork.nodes` → `gcp_network_subnetwork_nodes-1f2e3d4c`.
pub fn address_label(address: &str) -> String {
    let readable: String = address
        .chars()
        .map(|c| match c.to_ascii_lowercase() {
            c @ ('a'..='z' | '0'..='9' | '-' | '_') => c,
            _ => '_',
        })
        .collect();
    let digest = Sha256::digest(address.as_bytes());
    let hash: String = digest.iter().take(4).map(|b| format!("{b:02x}")).collect();
    let room = MAX_LEN - hash.len() - 1;
    let readable: String = readable.chars().take(room).collect();
    format!("{readable}-{hash}")
}

/// The desired labels of the resource at `address` in spec `spec`: the layers in order (the
/// global tags, then the section's labels), then the ownership tags.
pub fn desired(spec: &str, address: &Address, layers: &[&Tags]) -> Value {
    let mut labels = Tags::new();
    for layer in layers {
        labels.extend(layer.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
    labels.extend(engine::ownership::tags(spec, address));
    Value::string_map(labels.iter())
}

/// Whether `text` is a valid label key (`key`) or value under GCP's rules.
pub fn valid(text: &str, key: bool) -> bool {
    text.len() <= MAX_LEN
        && text.chars().all(|c| matches!(c, 'a'..='z' | '0'..='9' | '-' | '_'))
        && (!key || text.chars().next().is_some_and(|c| c.is_ascii_lowercase()))
}

/// The labels to write for the desired tag map `tags`.
pub fn to_labels(tags: &Tags) -> HashMap<String, String> {
    tags.iter()
        .map(|(k, v)| match OWNERSHIP.iter().find(|(tag, _)| tag == k) {
            Some((tag, label)) if *tag == TAG_ADDRESS => (label.to_string(), address_label(v)),
            Some((_, label)) => (label.to_string(), v.clone()),
            None => (k.clone(), v.clone()),
        })
        .collect()
}

/// The tag map of a resource's `labels`, read for the resource at `address`: an
/// `engine-address` label that is `address`'s reads as `address`; any other stays as it is (a
/// resource of another address, which then never matches).
pub fn from_labels<'a>(
    labels: impl IntoIterator<Item = (&'a String, &'a String)>,
    address: Option<&Address>,
) -> Tags {
    labels
        .into_iter()
        .map(|(k, v)| match OWNERSHIP.iter().find(|(_, label)| label == k) {
            Some((tag, _)) if *tag == TAG_ADDRESS => {
                let ours = address.filter(|a| address_label(a.as_str()) == *v);
                (tag.to_string(), ours.map_or_else(|| v.clone(), |a| a.to_string()))
            }
            Some((tag, _)) => (tag.to_string(), v.clone()),
            None => (k.clone(), v.clone()),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn address_labels_are_valid_unique_and_read_back() {
        let a = Address::new("gcp.network.subnetwork[\"nodes\"]");
        let label = address_label(a.as_str());
        assert!(valid(&label, false), "{label}");
        assert!(label.starts_with("gcp_network_subnetwork__nodes__-"), "{label}");
        assert_ne!(label, address_label("gcp.network.subnetwork[\"nodes_\"]"));
        let long = "gcp.".to_string() + &"x".repeat(200);
        assert_eq!(address_label(&long).len(), MAX_LEN);

        let mut tags = engine::ownership::tags("gcp", &a);
        tags.insert("environment".into(), "dev".into());
        let labels = to_labels(&tags);
        assert!(labels.iter().all(|(k, v)| valid(k, true) && valid(v, false)), "{labels:?}");
        assert_eq!(from_labels(&labels, Some(&a)), tags);
        // Read for another address, the label stays as written: not this resource's.
        let other = from_labels(&labels, Some(&Address::new("gcp.network.router.main")));
        assert_eq!(other[TAG_ADDRESS], label);
    }
}
