//! Expansion of `[openbao.server]` into OpenBao's lineage on GCP.

use super::spec::{ServerSpec, bucket_name, seal_location};
use crate::labels;
use crate::stages::project::GcpSection;
use engine::spec::Globals;
use engine::{Address, ResourceSpec, Value};
use serde_json::json;

/// Stage prefix of every OpenBao resource on GCP.
pub const STAGE: &str = "gcp.openbao";

fn addr(rest: &str) -> Address {
    Address::new(format!("{STAGE}.{rest}"))
}

/// What OpenBao's configuration waits for when the spec makes it: the snapshot bucket a new
/// server restores from.
pub fn serving() -> Vec<Address> {
    vec![addr("storage_bucket.snapshots")]
}

/// Builds the resources of a validated `[openbao.server]`.
pub fn resources(
    spec_name: &str,
    globals: &Globals,
    gcp: &GcpSection,
    server: &ServerSpec,
) -> Vec<ResourceSpec> {
    let mut out = Vec::new();
    let ring = addr("kms_key_ring.seal");
    let mut r = ResourceSpec::new(ring.clone(), "gcp_kms_key_ring")
        .attr("name", server.seal.key_ring.as_str())
        .attr("location", seal_location(globals, server));
    r.protected = true;
    out.push(r);

    let key = addr("kms_crypto_key.seal");
    let rotation = server.seal.rotation_days.map_or(Value::Null, |d| Value::from(d * 86_400));
    let mut k = ResourceSpec::new(key.clone(), "gcp_kms_crypto_key")
        .attr("name", server.seal.key.as_str())
        .attr("key_ring", Value::reference(&ring, "id"))
        .attr("purpose", "ENCRYPT_DECRYPT")
        .attr("rotation_seconds", rotation)
        .attr("labels", labels::desired(spec_name, &key, &[&globals.tags]));
    k.protected = true;
    out.push(k);

    let bucket = addr("storage_bucket.snapshots");
    let snaps = &server.snapshots;
    let lifecycle = json!([
        {"action": {"type": "Delete"}, "condition": {"age": snaps.retention_days}},
        {
            "action": {"type": "Delete"},
            "condition": {"daysSinceNoncurrentTime": snaps.noncurrent_retention_days},
        },
    ]);
    let mut b = ResourceSpec::new(bucket.clone(), "gcp_storage_bucket")
        .attr("name", bucket_name(&gcp.project, globals, server))
        .attr("location", globals.region.to_uppercase())
        .attr("uniform_access", true)
        .attr("public_access_prevention", "enforced")
        .attr("versioning", true)
        .attr("lifecycle", Value::Json(lifecycle))
        .attr("labels", labels::desired(spec_name, &bucket, &[&globals.tags]));
    b.protected = true;
    out.push(b);
    out
}

#[cfg(test)]
mod tests {
    use crate::stages::openbao::expand as expand_stage;
    use crate::stages::project;
    use engine::spec::SpecSource;

    const SPEC: &str = r#"
[globals]
cloud = "gcp"
region = "europe-west4"
cluster_name = "gcp-0"
domain = "ogenki.io"

[gcp]
project = "ogenki-435905"
zone = "europe-west4-a"

[openbao.server.snapshots]
bucket = "ogenki-435905-ogenki-openbao-snapshot"

[openbao.server.seal]
key_ring = "openbao-dev"
key = "openbao-unseal"
"#;

    fn expand(text: &str) -> Result<Vec<engine::ResourceSpec>, String> {
        let spec = SpecSource::from_text("specs/gcp.toml", "gcp", text);
        let globals = spec.globals().unwrap();
        let gcp = project::section(&spec).unwrap();
        expand_stage(&spec, &globals, &gcp).map_err(|e| {
            e.errors
                .iter()
                .map(|e| format!("{}:{} {}: {}", e.file, e.line, e.field, e.message))
                .collect::<Vec<_>>()
                .join("\n")
        })
    }

    #[test]
    fn the_lineage_is_protected_and_named_as_the_reference_names_it() {
        let out = expand(SPEC).unwrap();
        let names: Vec<(&str, bool)> =
            out.iter().map(|r| (r.address.as_str(), r.protected)).collect();
        assert_eq!(
            names,
            [
                ("gcp.openbao.kms_key_ring.seal", true),
                ("gcp.openbao.kms_crypto_key.seal", true),
                ("gcp.openbao.storage_bucket.snapshots", true),
            ]
        );
        let bucket = &out[2].attributes;
        assert_eq!(bucket["name"], engine::Value::from("ogenki-435905-ogenki-openbao-snapshot"));
        assert_eq!(bucket["location"], engine::Value::from("EUROPE-WEST4"));
        assert_eq!(out[0].attributes["location"], engine::Value::from("europe-west4"));
    }

    #[test]
    fn bad_names_are_refused_with_their_line() {
        let bad = SPEC
            .replace("ogenki-435905-ogenki-openbao-snapshot", "Bad.Bucket")
            .replace("key = \"openbao-unseal\"", "key = \"no spaces allowed\"\nrotation_days = 0");
        let errors = expand(&bad).unwrap_err();
        for expected in [
            "openbao.server.snapshots.bucket: `Bad.Bucket` is not a bucket name",
            "openbao.server.seal.key: `no spaces allowed` is not a Cloud KMS name",
            "openbao.server.seal.rotation_days: rotate at most once a day",
        ] {
            assert!(errors.contains(expected), "{expected} not in\n{errors}");
        }
    }
}
