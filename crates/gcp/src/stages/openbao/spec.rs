//! `[openbao.server]` on GCP: OpenBao's lineage (what outlives its servers): the raft snapshot
//! bucket and the Cloud KMS key that seals the servers.

use crate::stages::project::GcpSection;
use engine::spec::{FieldPath, Globals, SpecError, SpecSource};
use serde::Deserialize;

/// The part of `[openbao]` the GCP provider reads.
#[derive(Debug, Clone, Deserialize)]
pub struct OpenBaoSection {
    pub server: Option<ServerSpec>,
}

/// `[openbao.server]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerSpec {
    pub snapshots: SnapshotsSpec,
    pub seal: SealSpec,
}

/// `[openbao.server.snapshots]`: the raft snapshot bucket.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SnapshotsSpec {
    /// Bucket name; default `<project>-<cluster_name>-openbao-snapshot`.
    pub bucket: Option<String>,
    /// Object name prefix of the snapshots.
    #[serde(default = "default_prefix")]
    pub prefix: String,
    /// Days a snapshot is kept (the bucket's lifecycle deletes older objects).
    #[serde(default = "default_retention")]
    pub retention_days: i64,
    /// Days a replaced version is kept.
    #[serde(default = "default_noncurrent")]
    pub noncurrent_retention_days: i64,
}

/// `[openbao.server.seal]`: the Cloud KMS key the servers unseal with (`gcpckms`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SealSpec {
    pub key_ring: String,
    pub key: String,
    /// The key ring's location; default the region.
    pub location: Option<String>,
    /// How often Cloud KMS makes a new primary version, in days (none when left out).
    pub rotation_days: Option<i64>,
}

fn default_prefix() -> String {
    "snapshots/".into()
}
fn default_retention() -> i64 {
    120
}
fn default_noncurrent() -> i64 {
    7
}

/// The snapshot bucket's name.
pub fn bucket_name(project: &str, globals: &Globals, server: &ServerSpec) -> String {
    server
        .snapshots
        .bucket
        .clone()
        .unwrap_or_else(|| format!("{project}-{}-openbao-snapshot", globals.cluster_name))
}

/// The key ring's location.
pub fn seal_location(globals: &Globals, server: &ServerSpec) -> String {
    server.seal.location.clone().unwrap_or_else(|| globals.region.clone())
}

/// Cloud Storage's bucket name rules (3–63 characters of lowercase letters, digits, `-`, `_`,
/// starting and ending with a letter or digit; no dots here).
fn valid_bucket(name: &str) -> bool {
    (3..=63).contains(&name.len())
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "-_".contains(c))
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(|c: char| c.is_ascii_alphanumeric())
}

/// Cloud KMS names: 1–63 letters, digits, `-` and `_`.
fn valid_kms_name(name: &str) -> bool {
    (1..=63).contains(&name.len())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || "-_".contains(c))
}

pub(crate) fn validate(
    spec: &SpecSource,
    globals: &Globals,
    gcp: &GcpSection,
    server: &ServerSpec,
) -> Vec<SpecError> {
    let root = FieldPath::root("openbao").key("server");
    let mut errors = Vec::new();
    let snaps = root.key("snapshots");
    let bucket = bucket_name(&gcp.project, globals, server);
    if !valid_bucket(&bucket) {
        errors.push(spec.error(
            &snaps.key("bucket"),
            format!(
                "`{bucket}` is not a bucket name (3 to 63 lowercase letters, digits, `-` and \
                 `_`, starting and ending with a letter or digit)"
            ),
        ));
    }
    if server.snapshots.prefix.is_empty() || server.snapshots.prefix.starts_with('/') {
        errors.push(spec.error(
            &snaps.key("prefix"),
            "the prefix must not be empty or start with `/` (like `snapshots/`)",
        ));
    }
    for (field, days) in [
        ("retention_days", server.snapshots.retention_days),
        ("noncurrent_retention_days", server.snapshots.noncurrent_retention_days),
    ] {
        if days < 1 {
            errors.push(spec.error(&snaps.key(field), "keep snapshots at least 1 day"));
        }
    }
    let seal = root.key("seal");
    for (field, name) in [("key_ring", &server.seal.key_ring), ("key", &server.seal.key)] {
        if !valid_kms_name(name) {
            errors.push(spec.error(
                &seal.key(field),
                format!("`{name}` is not a Cloud KMS name (1 to 63 letters, digits, `-`, `_`)"),
            ));
        }
    }
    if server.seal.rotation_days.is_some_and(|d| d < 1) {
        errors.push(spec.error(&seal.key("rotation_days"), "rotate at most once a day"));
    }
    errors
}
