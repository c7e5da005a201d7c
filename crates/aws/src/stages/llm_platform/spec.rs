//! The `[llm_platform]` section and its validation (before any API call).

use crate::stages::eks::spec::EksSpec;
use crate::stages::network::spec::NetworkSpec;
use engine::spec::{FieldPath, Globals, SpecError, SpecSource};
use serde::Deserialize;
use std::collections::BTreeMap;

/// `[llm_platform]`: the models' shared file system (S3 Files over the models bucket) and what
/// the cluster's CSI driver needs to mount it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LlmPlatformSpec {
    /// The models bucket, made outside the spec: looked up, never created.
    pub bucket: String,
    /// The file system's name, and the stem of its roles, policy and security group.
    #[serde(default = "default_name")]
    pub name: String,
    #[serde(default)]
    pub access_point: AccessPointSpec,
    /// Where the CSI driver's service accounts are.
    #[serde(default = "default_csi_namespace")]
    pub csi_namespace: String,
    /// The CSI driver's service accounts, each associated with its role (EKS Pod Identity).
    #[serde(default = "default_csi_service_accounts")]
    pub csi_service_accounts: Vec<String>,
    #[serde(default)]
    pub tags: BTreeMap<String, String>,
}

/// `[llm_platform.access_point]`: the directory the pods see, and who they are there.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AccessPointSpec {
    pub name: String,
    pub uid: i64,
    pub gid: i64,
    pub path: String,
    /// Octal mode of the directory when the access point makes it.
    pub permissions: String,
}

impl Default for AccessPointSpec {
    fn default() -> Self {
        AccessPointSpec {
            name: "shared".into(),
            uid: 1001,
            gid: 1001,
            path: "/models".into(),
            permissions: "0775".into(),
        }
    }
}

fn default_name() -> String {
    "llm-models-fs".into()
}
fn default_csi_namespace() -> String {
    "kube-system".into()
}
fn default_csi_service_accounts() -> Vec<String> {
    vec!["efs-csi-controller-sa".into(), "efs-csi-node-sa".into()]
}

/// The longest suffix the name gets (`-csi-driver-boundary`), within IAM's 64 characters.
const LONGEST_SUFFIX: usize = "-csi-driver-boundary".len();

/// Validates `[llm_platform]`. Returns every problem.
pub fn validate(
    spec: &SpecSource,
    globals: &Globals,
    net: Option<&NetworkSpec>,
    eks: Option<&EksSpec>,
    llm: &LlmPlatformSpec,
) -> Vec<SpecError> {
    let mut errors = Vec::new();
    let root = FieldPath::root("llm_platform");
    if globals.cloud != "aws" {
        errors.push(spec.error(
            &FieldPath::root("globals").key("cloud"),
            "`[llm_platform]` is an AWS section (S3 Files on EKS)",
        ));
    }
    match net {
        None => errors
            .push(spec.error(&root, "the file system needs `[network]` (its private subnets)")),
        Some(net) if net.subnets.private.is_none() => errors.push(
            spec.error(&root, "the file system's mount targets are in `[network.subnets.private]`"),
        ),
        Some(_) => {}
    }
    if eks.is_none() {
        errors.push(
            spec.error(&root, "the file system is for an EKS cluster's pods: `[eks]` is missing"),
        );
    }
    if !bucket_name(&llm.bucket) {
        errors.push(spec.error(
            &root.key("bucket"),
            format!("`{}` is not an S3 bucket name (3 to 63 of a-z, 0-9, `.`, `-`)", llm.bucket),
        ));
    }
    let name_ok = !llm.name.is_empty()
        && llm.name.len() + LONGEST_SUFFIX <= 64
        && llm.name.chars().all(|c| c.is_ascii_alphanumeric() || "+=,.@_-".contains(c));
    if !name_ok {
        errors.push(spec.error(
            &root.key("name"),
            format!(
                "`{}` cannot name IAM roles and policies (letters, digits, +=,.@_-; at most {})",
                llm.name,
                64 - LONGEST_SUFFIX
            ),
        ));
    }
    let ap = &llm.access_point;
    let at = root.key("access_point");
    for (field, id) in [("uid", ap.uid), ("gid", ap.gid)] {
        if !(0..=u32::MAX as i64).contains(&id) {
            errors.push(spec.error(&at.key(field), format!("{id} is not a POSIX id")));
        }
    }
    if !ap.path.starts_with('/') || ap.path.len() > 100 {
        errors.push(spec.error(
            &at.key("path"),
            format!("`{}` is not an absolute path (at most 100 characters)", ap.path),
        ));
    }
    let octal = (3..=4).contains(&ap.permissions.len())
        && ap.permissions.chars().all(|c| ('0'..='7').contains(&c));
    if !octal {
        errors.push(spec.error(
            &at.key("permissions"),
            format!("`{}` is not an octal mode (e.g. 0775)", ap.permissions),
        ));
    }
    if !dns_label(&llm.csi_namespace) {
        errors.push(spec.error(
            &root.key("csi_namespace"),
            format!("`{}` is not a namespace name", llm.csi_namespace),
        ));
    }
    if llm.csi_service_accounts.is_empty() {
        errors.push(
            spec.error(&root.key("csi_service_accounts"), "the CSI driver needs a service account"),
        );
    }
    for (i, sa) in llm.csi_service_accounts.iter().enumerate().filter(|(_, s)| !dns_label(s)) {
        errors.push(spec.error(
            &root.key("csi_service_accounts").index(i),
            format!("`{sa}` is not a service account name"),
        ));
    }
    errors
}

fn bucket_name(s: &str) -> bool {
    (3..=63).contains(&s.len())
        && s.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '.' || c == '-')
        && s.starts_with(|c: char| c.is_ascii_alphanumeric())
        && s.ends_with(|c: char| c.is_ascii_alphanumeric())
}

fn dns_label(s: &str) -> bool {
    (1..=63).contains(&s.len())
        && s.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}
