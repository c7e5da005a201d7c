//! `[openbao.server]` on GCP: OpenBao's lineage (what outlives its servers: the raft snapshot
//! bucket, the Cloud KMS key that seals the servers, their service account) and its servers
//! (an instance group of one behind an internal load balancer on 8200, and its DNS record).

use crate::stages::project::GcpSection;
use engine::spec::{FieldPath, Globals, SpecError, SpecSource, TextOrOtherSpec};
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
    /// A daily copy of another bucket's snapshots (the AWS lane's) into this one.
    pub mirror: Option<MirrorSpec>,
}

/// `[openbao.server.snapshots.mirror]`: a Storage Transfer job that copies the AWS lane's
/// snapshot bucket into this one every day, never overwriting nor deleting, reading S3 through
/// an AWS role that trusts the project's Storage Transfer service agent (the shared spec's
/// `openbao-snapshot-mirror`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MirrorSpec {
    /// The S3 bucket copied.
    pub source_bucket: String,
    /// The AWS role's ARN, or the shared spec's role read in the same run
    /// (`{ spec = "aws-gcp-federation", address = "...", attribute = "arn" }`).
    pub role_arn: TextOrOtherSpec,
    /// The job's name (`transferJobs/<job>`).
    #[serde(default = "default_mirror_job")]
    pub job: String,
    /// The prefix the copies go under in this bucket (default: the snapshots' prefix).
    pub sink_path: Option<String>,
    /// The first day the job runs (`YYYY-MM-DD`); it runs daily from then.
    pub start_date: String,
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
fn default_mirror_job() -> String {
    "openbao-snapshot-mirror".into()
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

fn validate_mirror(spec: &SpecSource, at: &FieldPath, mirror: &MirrorSpec) -> Vec<SpecError> {
    let mut errors = Vec::new();
    let s3_ok = (3..=63).contains(&mirror.source_bucket.len())
        && mirror
            .source_bucket
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || ".-".contains(c));
    if !s3_ok {
        errors.push(spec.error(
            &at.key("source_bucket"),
            format!("`{}` is not an S3 bucket name", mirror.source_bucket),
        ));
    }
    let arn_ok = match mirror.role_arn.text() {
        Some(arn) => arn.starts_with("arn:aws:iam::") && arn.contains(":role/"),
        None => !mirror.role_arn.is_blank(),
    };
    if !arn_ok {
        errors.push(spec.error(
            &at.key("role_arn"),
            "an IAM role ARN (arn:aws:iam::ACCOUNT:role/NAME), or { spec, address, attribute } \
             naming the role of another spec",
        ));
    }
    let job_ok = !mirror.job.is_empty()
        && mirror.job.len() <= 115
        && !mirror.job.starts_with("OPI")
        && mirror.job.chars().all(|c| c.is_ascii_alphanumeric() || "-._~".contains(c))
        && mirror.job.ends_with(|c: char| c.is_ascii_alphanumeric());
    if !job_ok {
        errors.push(spec.error(
            &at.key("job"),
            format!(
                "`{}` is not a transfer job name (letters, digits, `-._~`, ending with a letter \
                 or digit, not starting with OPI)",
                mirror.job
            ),
        ));
    }
    let date: Vec<&str> = mirror.start_date.split('-').collect();
    let date_ok = date.len() == 3
        && date.iter().zip([4, 2, 2]).all(|(p, n)| p.len() == n && p.parse::<u32>().is_ok())
        && date[1].parse::<u32>().is_ok_and(|m| (1..=12).contains(&m))
        && date[2].parse::<u32>().is_ok_and(|d| (1..=31).contains(&d));
    if !date_ok {
        errors.push(spec.error(
            &at.key("start_date"),
            format!("`{}` is not a date (YYYY-MM-DD)", mirror.start_date),
        ));
    }
    errors
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
    if let Some(mirror) = &server.snapshots.mirror {
        errors.extend(validate_mirror(spec, &snaps.key("mirror"), mirror));
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
