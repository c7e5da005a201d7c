//! `[openbao.server]` on GCP: OpenBao's lineage (what outlives its servers: the raft snapshot
//! bucket, the Cloud KMS key that seals the servers, their service account) and its servers
//! (an instance group of one behind an internal load balancer on 8200, and its DNS record).

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
    /// Name stem of the servers' resources: the group, its template, the load balancer, the
    /// firewalls `<name>-health-check` and `<name>-api`.
    #[serde(default = "default_name")]
    pub name: String,
    /// The OpenBao release the nodes install.
    #[serde(default = "default_version")]
    pub version: String,
    #[serde(default = "default_machine_type")]
    pub machine_type: String,
    /// The boot image (a family or an image URL).
    #[serde(default = "default_image")]
    pub image: String,
    #[serde(default = "default_boot_disk")]
    pub boot_disk_gb: i64,
    /// The disk raft lives on (`openbao-data`).
    #[serde(default = "default_data_disk")]
    pub data_disk_gb: i64,
    #[serde(default = "default_data_disk_type")]
    pub data_disk_type: String,
    /// The nodes' service account id (kept in the lineage: its unique id survives rebuilds).
    #[serde(default = "default_service_account")]
    pub service_account: String,
    /// The restore drill's service account (kept in the lineage, reads the snapshots).
    #[serde(default = "default_drill_service_account")]
    pub drill_service_account: String,
    /// The load balancer's name in the private zone (`bao` → `bao.<private zone>`).
    #[serde(default = "default_hostname")]
    pub hostname: String,
    /// The Secret Manager secret the nodes read their TLS material from.
    pub tls_secret: String,
    /// Who may reach OpenBao's API on 8200 (default: the nodes' subnetwork and the pods).
    pub api_sources: Option<Vec<String>>,
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

fn default_name() -> String {
    "openbao-dev".into()
}
fn default_version() -> String {
    "2.6.2".into()
}
fn default_machine_type() -> String {
    "e2-small".into()
}
fn default_image() -> String {
    "projects/ubuntu-os-cloud/global/images/family/ubuntu-2404-lts-amd64".into()
}
fn default_boot_disk() -> i64 {
    20
}
fn default_data_disk() -> i64 {
    10
}
fn default_data_disk_type() -> String {
    "pd-balanced".into()
}
fn default_drill_service_account() -> String {
    "openbao-drill".into()
}
fn default_service_account() -> String {
    "openbao-node".into()
}
fn default_hostname() -> String {
    "bao".into()
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
    // The servers.
    if !crate::stages::project::valid_name(&server.name) || server.name.len() > 50 {
        errors.push(spec.error(
            &root.key("name"),
            format!(
                "`{}` is not a name stem (1 to 50 lowercase letters, digits and `-`, starting \
                 with a letter): the servers' resources are named from it",
                server.name
            ),
        ));
    }
    if !crate::stages::gke::spec::valid_machine_type(&server.machine_type) {
        errors.push(spec.error(
            &root.key("machine_type"),
            format!("`{}` is not a machine type (like e2-small)", server.machine_type),
        ));
    }
    for (field, sa) in [
        ("service_account", &server.service_account),
        ("drill_service_account", &server.drill_service_account),
    ] {
        let sa_ok = (6..=30).contains(&sa.len())
            && sa.starts_with(|c: char| c.is_ascii_lowercase())
            && !sa.ends_with('-')
            && sa.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
        if !sa_ok {
            errors.push(spec.error(
                &root.key(field),
                format!(
                    "`{sa}` is not a service account id (6 to 30 lowercase letters, digits, `-`)"
                ),
            ));
        }
    }
    if server.boot_disk_gb < 10 {
        errors.push(spec.error(&root.key("boot_disk_gb"), "the boot disk needs at least 10 GB"));
    }
    if server.data_disk_gb < 1 {
        errors.push(spec.error(&root.key("data_disk_gb"), "the data disk needs at least 1 GB"));
    }
    let secret_ok = (1..=255).contains(&server.tls_secret.len())
        && server.tls_secret.chars().all(|c| c.is_ascii_alphanumeric() || "-_".contains(c));
    if !secret_ok {
        errors.push(spec.error(
            &root.key("tls_secret"),
            format!(
                "`{}` is not a Secret Manager secret id (letters, digits, `-` and `_`)",
                server.tls_secret
            ),
        ));
    }
    for (i, cidr) in server.api_sources.iter().flatten().enumerate() {
        if cidr.parse::<ipnet::IpNet>().is_err() {
            errors.push(
                spec.error(
                    &root.key("api_sources").index(i),
                    format!("`{cidr}` is not a CIDR block"),
                ),
            );
        }
    }
    errors
}
