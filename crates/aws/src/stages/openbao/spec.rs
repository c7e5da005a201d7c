//! `[openbao.server]`: the AWS resources that run OpenBao, and their validation (all before any
//! API call). The rest of `[openbao]` is OpenBao's own configuration and belongs to another
//! provider; this module reads only the `server` table.

use crate::stages::network::spec::{NetworkSpec, check_section_tags, valid_region};
use engine::spec::{FieldPath, Globals, SpecError, SpecSource};
use serde::Deserialize;
use std::collections::BTreeMap;

/// `[openbao]` as this provider sees it: only `server`; the other keys are not ours.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct OpenBaoSection {
    pub server: Option<ServerSpec>,
}

/// `[openbao.server]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerSpec {
    /// `dev` (1 node) or `ha` (5 nodes).
    pub mode: Mode,
    /// OpenBao release installed on the nodes.
    #[serde(default = "default_version")]
    pub version: String,
    /// Expected SHA-256 of the OpenBao package the nodes install
    /// (`bao_<version>_linux_<arch>.deb`, from the release's checksums); checked at boot.
    pub package_sha256: Option<String>,
    /// Download URL of the `awskms` KMS plugin binary (OpenBao 2.7 ships `awskms` as a plugin).
    pub kms_plugin_url: String,
    /// Expected SHA-256 of the plugin binary; when absent the node records the hash of what it
    /// downloaded.
    pub kms_plugin_sha256: Option<String>,
    #[serde(default = "default_instance_type")]
    pub instance_type: String,
    /// AMI id, or a `resolve:ssm:` parameter (the default: Ubuntu 24.04 LTS from Canonical).
    #[serde(default = "default_image")]
    pub image: String,
    /// Secrets Manager secret holding the server's TLS certificate, key and CA (JSON with
    /// `cert`, `key`, `ca`, the reference's fields).
    #[serde(default = "default_tls_secret")]
    pub tls_secret: String,
    /// Host name in the private zone: `<hostname>.<zone>`.
    #[serde(default = "default_hostname")]
    pub hostname: String,
    /// KMS alias names (without `alias/`).
    #[serde(default = "default_seal_alias")]
    pub seal_key_alias: String,
    #[serde(default = "default_snapshot_alias")]
    pub snapshot_key_alias: String,
    #[serde(default)]
    pub snapshots: SnapshotsSpec,
    /// The nodes' root volume: gp3, encrypted, this size (the reference's 20 GiB).
    #[serde(default = "default_root_volume_gib")]
    pub root_volume_gib: i64,
    /// The image's root device name (Ubuntu's images: `/dev/sda1`).
    #[serde(default = "default_root_device")]
    pub root_device: String,
    /// Reach the nodes through SSM Session Manager (`AmazonSSMManagedInstanceCore` on their
    /// role), as the reference's `enable_ssm`.
    #[serde(default = "yes")]
    pub ssm: bool,
    /// Tags on every OpenBao resource, on top of the global tags.
    #[serde(default)]
    pub tags: BTreeMap<String, String>,
}

fn default_root_volume_gib() -> i64 {
    20
}
fn default_root_device() -> String {
    "/dev/sda1".into()
}
fn yes() -> bool {
    true
}

/// Cluster size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    Dev,
    Ha,
}

impl Mode {
    /// Number of nodes.
    pub fn nodes(self) -> i64 {
        match self {
            Mode::Dev => 1,
            Mode::Ha => 5,
        }
    }
}

/// `[openbao.server.snapshots]`: the raft snapshot bucket.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SnapshotsSpec {
    /// Bucket name; default `<cluster_name>-openbao-snapshots-<region>`.
    pub bucket: Option<String>,
    /// Key prefix of the snapshots.
    #[serde(default = "default_prefix")]
    pub prefix: String,
    /// Days a snapshot is kept.
    #[serde(default = "default_retention")]
    pub retention_days: i64,
    /// Days an overwritten or deleted snapshot version is kept.
    #[serde(default = "default_noncurrent")]
    pub noncurrent_retention_days: i64,
    /// Empty the bucket when it is destroyed (destroying it still needs confirmation).
    #[serde(default)]
    pub force_destroy: bool,
}

impl Default for SnapshotsSpec {
    fn default() -> Self {
        SnapshotsSpec {
            bucket: None,
            prefix: default_prefix(),
            retention_days: default_retention(),
            noncurrent_retention_days: default_noncurrent(),
            force_destroy: false,
        }
    }
}

fn default_version() -> String {
    "2.7.2".into()
}
fn default_instance_type() -> String {
    "t3.small".into()
}
fn default_image() -> String {
    "resolve:ssm:/aws/service/canonical/ubuntu/server/24.04/stable/current/amd64/hvm/ebs-gp3/ami-id"
        .into()
}
fn default_tls_secret() -> String {
    "openbao/tls".into()
}
fn default_hostname() -> String {
    "bao".into()
}
fn default_seal_alias() -> String {
    "openbao-seal".into()
}
fn default_snapshot_alias() -> String {
    "openbao-snapshots".into()
}
fn default_prefix() -> String {
    "snapshots/".into()
}
fn default_retention() -> i64 {
    30
}
fn default_noncurrent() -> i64 {
    7
}

/// The snapshot bucket's name.
pub fn bucket_name(globals: &Globals, server: &ServerSpec) -> String {
    server
        .snapshots
        .bucket
        .clone()
        .unwrap_or_else(|| format!("{}-openbao-snapshots-{}", globals.cluster_name, globals.region))
}

/// The private zone's name (from `[network] private_zone`).
pub fn zone_name(globals: &Globals, net: &NetworkSpec) -> Option<String> {
    net.private_zone
        .as_ref()
        .map(|z| z.name.clone().unwrap_or_else(|| format!("priv.aws.{}", globals.domain)))
}

/// Whether `name` follows S3's bucket naming rules.
fn valid_bucket(name: &str) -> bool {
    let len_ok = (3..=63).contains(&name.len());
    let chars_ok =
        name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.');
    let ends_ok = name.chars().next().is_some_and(|c| c.is_ascii_alphanumeric())
        && name.chars().last().is_some_and(|c| c.is_ascii_alphanumeric());
    let not_ip = name.split('.').count() != 4 || name.split('.').any(|p| p.parse::<u8>().is_err());
    len_ok && chars_ok && ends_ok && !name.contains("..") && not_ip
}

/// Whether `label` is one DNS label.
fn valid_label(label: &str) -> bool {
    (1..=63).contains(&label.len())
        && label.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !label.starts_with('-')
        && !label.ends_with('-')
}

/// Whether `alias` is a KMS alias name (without `alias/`).
fn valid_alias(alias: &str) -> bool {
    (1..=250).contains(&alias.len())
        && !alias.starts_with("aws/")
        && alias.chars().all(|c| c.is_ascii_alphanumeric() || "/_-".contains(c))
}

/// Validates `[openbao.server]` against the globals and `[network]`. Returns every problem.
pub fn validate(
    spec: &SpecSource,
    globals: &Globals,
    net: Option<&NetworkSpec>,
    server: &ServerSpec,
) -> Vec<SpecError> {
    let mut errors = Vec::new();
    let root = FieldPath::root("openbao").key("server");
    let g = FieldPath::root("globals");
    if globals.cloud != "aws" {
        errors.push(spec.error(&g.key("cloud"), "`[openbao.server]` here runs OpenBao on AWS"));
    }
    match net {
        None => errors.push(spec.error(
            &root,
            "the OpenBao server needs the `[network]` section (its private subnets and zone)",
        )),
        Some(net) => {
            if net.private_zone.is_none() {
                errors.push(spec.error(
                    &root.key("hostname"),
                    "the OpenBao record needs `[network] private_zone`",
                ));
            }
            if net.subnets.private.is_none() {
                errors.push(spec.error(
                    &root,
                    "the OpenBao nodes and load balancer need `[network.subnets.private]`",
                ));
            }
        }
    }
    if !(8..=16384).contains(&server.root_volume_gib) {
        errors.push(spec.error(
            &root.key("root_volume_gib"),
            format!("{} GiB: a gp3 root volume is 8 to 16384 GiB", server.root_volume_gib),
        ));
    }
    if !server.root_device.starts_with("/dev/") {
        errors.push(spec.error(
            &root.key("root_device"),
            format!("`{}` is not a device name (like /dev/sda1)", server.root_device),
        ));
    }
    match &globals.secondary_region {
        None => errors.push(
            spec.error(&g, "`[globals] secondary_region` is needed for the seal key's replica"),
        ),
        Some(r) if !valid_region(r) => errors.push(spec.error(
            &g.key("secondary_region"),
            format!("`{r}` is not an AWS region name (like eu-west-1)"),
        )),
        Some(r) if r == &globals.region => errors.push(spec.error(
            &g.key("secondary_region"),
            "the seal key's replica must be in another region than `region`",
        )),
        Some(_) => {}
    }
    let version_ok = {
        let parts: Vec<&str> = server.version.split('.').collect();
        parts.len() == 3 && parts.iter().all(|p| p.parse::<u32>().is_ok())
    };
    if !version_ok {
        errors.push(spec.error(
            &root.key("version"),
            format!("`{}` is not an OpenBao release (like 2.7.2)", server.version),
        ));
    }
    if !server.kms_plugin_url.starts_with("https://") {
        errors.push(
            spec.error(
                &root.key("kms_plugin_url"),
                "the KMS plugin must be downloaded over https://",
            ),
        );
    }
    for (field, sha) in [
        ("package_sha256", &server.package_sha256),
        ("kms_plugin_sha256", &server.kms_plugin_sha256),
    ] {
        if let Some(sha) = sha
            && (sha.len() != 64 || !sha.chars().all(|c| c.is_ascii_hexdigit()))
        {
            errors.push(spec.error(&root.key(field), "a SHA-256 is 64 hexadecimal characters"));
        }
    }
    if server.instance_type.is_empty() || !server.instance_type.contains('.') {
        errors.push(spec.error(
            &root.key("instance_type"),
            format!("`{}` is not an EC2 instance type (like t3.small)", server.instance_type),
        ));
    }
    if !(server.image.starts_with("ami-") || server.image.starts_with("resolve:ssm:")) {
        errors.push(
            spec.error(
                &root.key("image"),
                "give an AMI id (ami-...) or a `resolve:ssm:` parameter",
            ),
        );
    }
    if server.tls_secret.is_empty() || server.tls_secret.len() > 512 {
        errors.push(spec.error(&root.key("tls_secret"), "a secret name is 1 to 512 characters"));
    }
    if !valid_label(&server.hostname) {
        errors.push(
            spec.error(&root.key("hostname"), format!("`{}` is not a DNS label", server.hostname)),
        );
    }
    for (field, alias) in [
        ("seal_key_alias", &server.seal_key_alias),
        ("snapshot_key_alias", &server.snapshot_key_alias),
    ] {
        if !valid_alias(alias) {
            errors.push(spec.error(
                &root.key(field),
                format!("`{alias}` is not a KMS alias name (without `alias/`)"),
            ));
        }
    }
    if server.seal_key_alias == server.snapshot_key_alias {
        errors.push(
            spec.error(&root.key("snapshot_key_alias"), "the snapshot key needs its own alias"),
        );
    }
    let snaps = root.key("snapshots");
    let bucket = bucket_name(globals, server);
    if !valid_bucket(&bucket) {
        errors.push(spec.error(
            &snaps.key("bucket"),
            format!(
                "`{bucket}` is not a valid S3 bucket name (3-63 lowercase letters, digits, dots, hyphens)"
            ),
        ));
    }
    if server.snapshots.retention_days < 1 {
        errors.push(
            spec.error(&snaps.key("retention_days"), "snapshots must be kept at least 1 day"),
        );
    }
    if server.snapshots.noncurrent_retention_days < 1 {
        errors.push(spec.error(
            &snaps.key("noncurrent_retention_days"),
            "old snapshot versions must be kept at least 1 day",
        ));
    }
    if server.snapshots.prefix.is_empty() || server.snapshots.prefix.starts_with('/') {
        errors.push(spec.error(
            &snaps.key("prefix"),
            "the snapshot prefix must be non-empty and not start with `/`",
        ));
    }
    // Names AWS limits to 32 characters (load balancer, target group).
    let base = format!("{}-openbao", globals.cluster_name);
    if base.len() + 3 > 32 {
        errors.push(spec.error(
            &g.key("cluster_name"),
            format!(
                "`{base}-lb` is longer than the 32 characters AWS allows for load balancer names"
            ),
        ));
    }
    check_section_tags(spec, &root.key("tags"), globals, &server.tags, &mut errors);
    errors
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucket_names() {
        assert!(valid_bucket("aws-0-openbao-snapshots-eu-west-3"));
        assert!(!valid_bucket("Upper"));
        assert!(!valid_bucket("ab"));
        assert!(!valid_bucket("-start"));
        assert!(!valid_bucket("a..b"));
        assert!(!valid_bucket("192.168.1.1"));
    }

    #[test]
    fn labels_and_aliases() {
        assert!(valid_label("bao"));
        assert!(!valid_label("bao.x"));
        assert!(valid_alias("openbao-seal"));
        assert!(!valid_alias("aws/ebs"));
        assert!(!valid_alias("with space"));
    }
}
