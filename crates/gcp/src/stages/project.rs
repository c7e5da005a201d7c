//! `[gcp]`: the project and zone of the lane, and the checks of GCP names every stage shares.

use crate::labels;
use engine::spec::{FieldPath, Globals, SpecError, SpecSource};
use serde::Deserialize;
use std::collections::BTreeMap;

/// `[gcp]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GcpSection {
    /// The project id, e.g. `ogenki-435905`.
    pub project: String,
    /// The project number, e.g. `323586397743` (read by what goes into the cluster).
    pub project_number: Option<String>,
    /// The zone of zonal resources (the GKE cluster, VMs), e.g. `europe-west4-a`.
    pub zone: String,
}

/// Reads `[gcp]`; its absence is an error at the file's top.
pub fn section(spec: &SpecSource) -> Result<GcpSection, engine::spec::SpecErrors> {
    match spec.section::<GcpSection>("gcp")? {
        Some(s) => Ok(s),
        None => Err(spec.errors(vec![spec.error(
            &FieldPath::root("gcp"),
            "the gcp lane needs `[gcp]` with `project` and `zone`",
        )])),
    }
}

/// Whether `name` is a valid Compute resource name (RFC 1035: lowercase letters, digits and
/// `-`, starting with a letter, not ending with `-`, at most 63 characters).
pub fn valid_name(name: &str) -> bool {
    (1..=63).contains(&name.len())
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && !name.ends_with('-')
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

/// Whether `region` looks like a GCP region (`europe-west4`, `us-central1`).
pub fn valid_region(region: &str) -> bool {
    let mut parts = region.split('-');
    let (Some(area), Some(place), None) = (parts.next(), parts.next(), parts.next()) else {
        return false;
    };
    !area.is_empty()
        && area.chars().all(|c| c.is_ascii_lowercase())
        && place.len() >= 2
        && place.starts_with(|c: char| c.is_ascii_lowercase())
        && place.ends_with(|c: char| c.is_ascii_digit())
        && place.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
}

/// Checks `[gcp]` and the globals the GCP lane reads; every problem found.
pub fn validate(spec: &SpecSource, globals: &Globals, gcp: &GcpSection) -> Vec<SpecError> {
    let mut errors = Vec::new();
    let g = FieldPath::root("globals");
    let root = FieldPath::root("gcp");
    if globals.cloud != "gcp" {
        errors
            .push(spec.error(&g.key("cloud"), "`[gcp]` belongs to a spec with `cloud = \"gcp\"`"));
    }
    if !valid_region(&globals.region) {
        let message = format!("`{}` is not a GCP region name (like europe-west4)", globals.region);
        errors.push(spec.error(&g.key("region"), message));
    }
    let p = &gcp.project;
    let project_ok = (6..=30).contains(&p.len())
        && p.starts_with(|c: char| c.is_ascii_lowercase())
        && !p.ends_with('-')
        && p.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if !project_ok {
        let message = format!(
            "`{p}` is not a project id (6 to 30 lowercase letters, digits and `-`, starting with a letter)"
        );
        errors.push(spec.error(&root.key("project"), message));
    }
    if let Some(n) = &gcp.project_number
        && (n.is_empty() || !n.chars().all(|c| c.is_ascii_digit()))
    {
        errors.push(
            spec.error(&root.key("project_number"), format!("`{n}` is not a project number")),
        );
    }
    let in_region =
        gcp.zone.strip_prefix(globals.region.as_str()).and_then(|s| s.strip_prefix('-'));
    if !in_region.is_some_and(|s| s.len() == 1 && s.chars().all(|c| c.is_ascii_lowercase())) {
        let message = format!(
            "`{}` is not a zone of region {} (expected {}-a, {}-b, ...)",
            gcp.zone, globals.region, globals.region, globals.region
        );
        errors.push(spec.error(&root.key("zone"), message));
    }
    check_labels(spec, &g.key("tags"), &globals.tags, &mut errors);
    errors
}

/// Checks tags that become labels against GCP's label rules.
pub fn check_labels(
    spec: &SpecSource,
    path: &FieldPath,
    tags: &BTreeMap<String, String>,
    errors: &mut Vec<SpecError>,
) {
    for (k, v) in tags {
        let p = path.key(k);
        if k.starts_with("engine") {
            errors.push(spec.error(&p, "labels starting with `engine` are the engine's own"));
        } else if !labels::valid(k, true) {
            errors.push(spec.error(&p, format!(
                "`{k}` is not a GCP label key (at most {} lowercase letters, digits, `-` and `_`, starting with a letter)",
                labels::MAX_LEN
            )));
        }
        if !labels::valid(v, false) {
            errors.push(spec.error(&p, format!(
                "`{v}` is not a GCP label value (at most {} lowercase letters, digits, `-` and `_`)",
                labels::MAX_LEN
            )));
        }
    }
    if tags.len() + 4 > labels::MAX_LABELS {
        errors.push(spec.error(
            path,
            format!(
                "GCP allows {} labels per resource, the engine's 4 included",
                labels::MAX_LABELS
            ),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_regions() {
        assert!(valid_name("vpc-europe-west4-dev") && valid_name("a"));
        assert!(
            !valid_name("Vpc")
                && !valid_name("1vpc")
                && !valid_name("vpc-")
                && !valid_name(&"a".repeat(64))
        );
        assert!(valid_region("europe-west4") && valid_region("us-central1"));
        assert!(
            !valid_region("eu-west-3") && !valid_region("europe-west") && !valid_region("europe")
        );
    }
}
