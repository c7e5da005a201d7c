//! The `[eks]` section and its validation (all before any API call).

use crate::stages::network::spec::{NetworkSpec, check_section_tags};
use engine::spec::{FieldPath, Globals, SpecError, SpecSource, names};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::time::Duration;

/// `[eks]`. The cluster is named `[globals] cluster_name` and runs `[globals.versions]
/// kubernetes`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EksSpec {
    /// The Kubernetes service CIDR.
    #[serde(default = "default_service_cidr")]
    pub service_cidr: String,
    /// A public API endpoint as well as the private one (the platform's is private only).
    #[serde(default)]
    pub public_access: bool,
    /// Control plane log types sent to CloudWatch Logs.
    #[serde(default)]
    pub logging: Vec<String>,
    /// The OIDC provider's CA thumbprint: absent or `"skip"` to register none (AWS checks EKS
    /// issuers against its own trusted CAs; emulators have no real issuer), or 40 hexadecimal
    /// characters.
    pub oidc_thumbprint: Option<String>,
    /// Seconds, minutes or hours (`"30m"`) each long operation may take.
    #[serde(default)]
    pub timeouts: Timeouts,
    #[serde(default)]
    pub node_groups: BTreeMap<String, NodeGroupSpec>,
    /// Addons by their AWS name (`vpc-cni`, `coredns`, ...).
    #[serde(default)]
    pub addons: BTreeMap<String, AddonSpec>,
    #[serde(default)]
    pub access_entries: BTreeMap<String, AccessEntrySpec>,
    /// Pod identity associations, each with its own IAM role.
    #[serde(default)]
    pub pod_identities: BTreeMap<String, PodIdentitySpec>,
    /// What Karpenter needs from AWS (its chart is installed by GitOps).
    pub karpenter: Option<KarpenterSpec>,
    /// The network's subnet tier the control plane's interfaces go in (the reference's
    /// `intra`); node groups stay in the private subnets.
    #[serde(default = "default_control_plane_subnets")]
    pub control_plane_subnets: String,
    /// Inline policies, by name, on every node role (the node groups' and Karpenter's): the
    /// reference's `cilium_eni_<cluster>`.
    #[serde(default)]
    pub node_role_policies: BTreeMap<String, toml::Table>,
    /// Tags on every EKS resource, on top of the global tags.
    #[serde(default)]
    pub tags: BTreeMap<String, String>,
    /// What a destroy sweeps of what the cluster's controllers made (`[eks.sweep]`).
    #[serde(default)]
    pub sweep: SweepSpec,
}

/// `[eks.sweep]`: where ExternalDNS writes. The sweep itself always runs on destroy; load
/// balancers, security groups, volumes and Karpenter's instances are found by their tags.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SweepSpec {
    /// ExternalDNS's `--txt-owner-id` (its default is `default`).
    #[serde(default = "default_external_dns_owner")]
    pub external_dns_owner: String,
    /// Hosted zones ExternalDNS writes to besides the private zone (e.g. the public zone).
    #[serde(default)]
    pub external_dns_zone_ids: Vec<String>,
}

impl Default for SweepSpec {
    fn default() -> Self {
        SweepSpec {
            external_dns_owner: default_external_dns_owner(),
            external_dns_zone_ids: vec![],
        }
    }
}

fn default_external_dns_owner() -> String {
    "default".into()
}

/// `[eks.timeouts]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Timeouts {
    #[serde(default = "default_cluster_timeout")]
    pub cluster: String,
    #[serde(default = "default_node_group_timeout")]
    pub node_group: String,
    #[serde(default = "default_addon_timeout")]
    pub addon: String,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            cluster: default_cluster_timeout(),
            node_group: default_node_group_timeout(),
            addon: default_addon_timeout(),
        }
    }
}

/// `[eks.node_groups.<name>]`: a managed node group in the private subnets.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeGroupSpec {
    #[serde(default = "default_ami_type")]
    pub ami_type: String,
    /// `ON_DEMAND` or `SPOT`.
    #[serde(default = "default_capacity_type")]
    pub capacity_type: String,
    pub instance_types: Vec<String>,
    pub min_size: i64,
    pub max_size: i64,
    pub desired_size: i64,
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    #[serde(default)]
    pub taints: Vec<TaintSpec>,
    /// The kubelet's pod limit. When set, the node group boots from a launch template of its
    /// own whose user data sets Bottlerocket's `settings.kubernetes.max-pods`.
    pub max_pods: Option<i64>,
    /// Only the private subnets of these zones (the reference's `main` group: the first one).
    /// Default: every zone.
    pub azs: Option<Vec<String>>,
    /// Pins the AMI release (`1.54.0-5043decc`); a change rolls the nodes with
    /// `UpdateNodegroupVersion`. Default: EKS's newest for the version.
    pub release_version: Option<String>,
}

/// A node taint.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaintSpec {
    pub key: String,
    #[serde(default)]
    pub value: String,
    /// `NO_SCHEDULE`, `NO_EXECUTE` or `PREFER_NO_SCHEDULE`.
    pub effect: String,
}

/// `[eks.addons.<name>]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AddonSpec {
    /// `vX.Y.Z-eksbuild.N`; absent: the default version for the cluster, not diffed.
    pub version: Option<String>,
    /// The addon's configuration values (its JSON schema's document).
    pub configuration: Option<toml::Table>,
    /// Installed before the node groups (the CNI, kube-proxy, the pod identity agent: what a
    /// node needs to become ready), rather than after them.
    #[serde(default)]
    pub before_compute: bool,
}

/// `[eks.access_entries.<name>]`: an IAM principal's access to the cluster.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AccessEntrySpec {
    pub principal_arn: String,
    /// EKS access policy names, associated cluster-wide (e.g. `AmazonEKSClusterAdminPolicy`).
    #[serde(default)]
    pub policies: Vec<String>,
}

/// `[eks.pod_identities.<name>]`: an IAM role for one Kubernetes service account.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PodIdentitySpec {
    pub namespace: String,
    pub service_account: String,
    /// AWS managed (or other existing) policy ARNs attached to the role.
    #[serde(default)]
    pub managed_policies: Vec<String>,
    /// An inline policy document.
    pub policy: Option<toml::Table>,
    /// More inline policies, by name (the reference's scoped `crossplane_<area>_<cluster>`).
    #[serde(default)]
    pub policies: BTreeMap<String, toml::Table>,
}

/// `[eks.karpenter]`: the interruption queue and its EventBridge rules, the node role with its
/// `EC2_LINUX` access entry, and the controller's pod identity.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KarpenterSpec {
    #[serde(default = "default_true")]
    pub enabled: bool,
    /// Namespace of the controller's service account.
    #[serde(default = "default_karpenter_namespace")]
    pub namespace: String,
    #[serde(default = "default_karpenter_service_account")]
    pub service_account: String,
    /// The interruption queue (default: the cluster's name; the reference: `Karpenter-<cluster>`).
    pub queue_name: Option<String>,
    /// The nodes' role (default `<cluster>-karpenter-node`; the reference: `Karpenter-<cluster>`).
    pub node_role_name: Option<String>,
}

fn default_true() -> bool {
    true
}
fn default_karpenter_namespace() -> String {
    "kube-system".into()
}
fn default_karpenter_service_account() -> String {
    "karpenter".into()
}

/// The highest `max_pods` the spec accepts.
pub const MAX_PODS_LIMIT: i64 = 1024;

fn default_control_plane_subnets() -> String {
    "private".into()
}
fn default_service_cidr() -> String {
    "172.20.0.0/16".into()
}
fn default_cluster_timeout() -> String {
    "30m".into()
}
fn default_node_group_timeout() -> String {
    "30m".into()
}
fn default_addon_timeout() -> String {
    "20m".into()
}
fn default_ami_type() -> String {
    "BOTTLEROCKET_x86_64".into()
}
fn default_capacity_type() -> String {
    "ON_DEMAND".into()
}

/// The name of Karpenter's pod identity (and of its role, `<cluster>-karpenter`).
pub const KARPENTER: &str = "karpenter";

const LOG_TYPES: &[&str] = &["api", "audit", "authenticator", "controllerManager", "scheduler"];
const CAPACITY_TYPES: &[&str] = &["ON_DEMAND", "SPOT", "CAPACITY_BLOCK"];
const TAINT_EFFECTS: &[&str] = &["NO_SCHEDULE", "NO_EXECUTE", "PREFER_NO_SCHEDULE"];

/// A duration such as `90s`, `30m` or `1h`.
pub fn parse_duration(text: &str) -> Option<Duration> {
    let (number, unit) = text.split_at(text.find(|c: char| !c.is_ascii_digit())?);
    let n: u64 = number.parse().ok()?;
    let seconds = match unit {
        "s" => n,
        "m" => n.checked_mul(60)?,
        "h" => n.checked_mul(3600)?,
        _ => return None,
    };
    Some(Duration::from_secs(seconds))
}

/// Whether `version` is a Kubernetes minor version like `1.36`.
pub fn valid_kubernetes_version(version: &str) -> bool {
    let parts: Vec<&str> = version.split('.').collect();
    parts.len() == 2 && parts.iter().all(|p| !p.is_empty() && p.parse::<u32>().is_ok())
}

/// The addon version format EKS uses.
fn valid_addon_version(version: &str) -> bool {
    let Some(rest) = version.strip_prefix('v') else {
        return false;
    };
    let Some((semver, build)) = rest.split_once("-eksbuild.") else {
        return false;
    };
    let parts: Vec<&str> = semver.split('.').collect();
    parts.len() == 3
        && parts.iter().all(|p| p.parse::<u32>().is_ok())
        && build.parse::<u32>().is_ok()
}

/// Whether `arn` names an IAM role or user.
fn valid_principal(arn: &str) -> bool {
    let parts: Vec<&str> = arn.splitn(6, ':').collect();
    parts.len() == 6
        && parts[0] == "arn"
        && parts[2] == "iam"
        && parts[4].len() == 12
        && parts[4].chars().all(|c| c.is_ascii_digit())
        && (parts[5].starts_with("role/") || parts[5].starts_with("user/"))
}

/// A name that can be part of IAM role names and addresses.
fn valid_name(name: &str) -> bool {
    !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// Validates `[eks]` against the globals and `[network]`. Returns every problem.
pub fn validate(
    spec: &SpecSource,
    globals: &Globals,
    net: Option<&NetworkSpec>,
    eks: &EksSpec,
) -> Vec<SpecError> {
    let mut errors = Vec::new();
    let root = FieldPath::root("eks");
    let g = FieldPath::root("globals");
    for (name, policy) in &eks.node_role_policies {
        check_policy_document(spec, &root.key("node_role_policies").key(name), policy, &mut errors);
    }
    let sweep = root.key("sweep");
    if let Some(net) = net {
        let tiers: Vec<&str> = net.subnets.tiers().iter().map(|(name, _)| *name).collect();
        if !tiers.contains(&eks.control_plane_subnets.as_str()) {
            errors.push(spec.error(
                &root.key("control_plane_subnets"),
                format!(
                    "`{}` is no subnet tier of `[network.subnets]` ({})",
                    eks.control_plane_subnets,
                    tiers.join(", ")
                ),
            ));
        }
        for (name, ng) in &eks.node_groups {
            for (i, az) in ng.azs.iter().flatten().enumerate() {
                if !net.azs.contains(az) {
                    errors.push(spec.error(
                        &root.key("node_groups").key(name).key("azs").index(i),
                        format!("`{az}` is not one of `[network] azs`"),
                    ));
                }
            }
        }
    }
    for (i, zone) in eks.sweep.external_dns_zone_ids.iter().enumerate() {
        let valid = !zone.is_empty()
            && zone.len() <= 32
            && zone.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit());
        if !valid {
            errors.push(spec.error(
                &sweep.key("external_dns_zone_ids").index(i),
                format!("`{zone}` is not a Route53 hosted zone id (capitals and digits, e.g. Z002027037R5RFCG05YY6)"),
            ));
        }
    }
    if eks.sweep.external_dns_owner.trim().is_empty() {
        errors.push(spec.error(&sweep.key("external_dns_owner"), "must not be empty"));
    }
    if globals.cloud != "aws" {
        errors.push(spec.error(&g.key("cloud"), "`[eks]` is an AWS cluster"));
    }
    match net {
        None => {
            errors.push(spec.error(
                &root,
                "the EKS cluster needs the `[network]` section (its private subnets)",
            ))
        }
        Some(net) if net.subnets.private.is_none() => {
            errors.push(spec.error(&root, "the EKS cluster needs `[network.subnets.private]`"))
        }
        Some(net) if net.azs.len() < 2 => errors.push(spec.error(
            &FieldPath::root("network").key("azs"),
            "EKS needs subnets in at least two availability zones",
        )),
        Some(_) => {}
    }
    match globals.versions.get("kubernetes") {
        None => errors.push(spec.error(
            &g.key("versions"),
            "`[globals.versions] kubernetes` is the cluster's version (like \"1.36\")",
        )),
        Some(v) if !valid_kubernetes_version(v) => errors.push(spec.error(
            &g.key("versions").key("kubernetes"),
            format!("`{v}` is not a Kubernetes minor version (like \"1.36\")"),
        )),
        Some(_) => {}
    }
    let cluster = &globals.cluster_name;
    let name_ok = (1..=100).contains(&cluster.len())
        && cluster.chars().next().is_some_and(|c| c.is_ascii_alphanumeric())
        && cluster.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if !name_ok {
        errors.push(spec.error(
            &g.key("cluster_name"),
            format!("`{cluster}` is not an EKS cluster name (letters, digits, - and _)"),
        ));
    }
    match eks.service_cidr.parse::<ipnet::Ipv4Net>() {
        Ok(net) if (12..=24).contains(&net.prefix_len()) && net.trunc() == net => {}
        _ => errors.push(spec.error(
            &root.key("service_cidr"),
            format!(
                "`{}` is not a service CIDR EKS accepts (a network of /12 to /24)",
                eks.service_cidr
            ),
        )),
    }
    for (i, t) in eks.logging.iter().enumerate() {
        if !LOG_TYPES.contains(&t.as_str()) {
            errors.push(spec.error(
                &root.key("logging").index(i),
                format!("`{t}` is not a log type; one of {}", LOG_TYPES.join(", ")),
            ));
        }
    }
    if let Some(t) = &eks.oidc_thumbprint
        && t != "skip"
        && (t.len() != 40 || !t.chars().all(|c| c.is_ascii_hexdigit()))
    {
        errors.push(spec.error(
            &root.key("oidc_thumbprint"),
            "give \"skip\" or a SHA-1 thumbprint (40 hexadecimal characters)",
        ));
    }
    let t = root.key("timeouts");
    for (field, value) in [
        ("cluster", &eks.timeouts.cluster),
        ("node_group", &eks.timeouts.node_group),
        ("addon", &eks.timeouts.addon),
    ] {
        if parse_duration(value).is_none_or(|d| d.is_zero()) {
            errors.push(spec.error(
                &t.key(field),
                format!("`{value}` is not a duration (like \"90s\", \"30m\", \"1h\")"),
            ));
        }
    }
    for (name, ng) in &eks.node_groups {
        let p = root.key("node_groups").key(name);
        if !valid_name(name) {
            errors.push(spec.error(&p, format!("`{name}` is not a node group name")));
        }
        if !CAPACITY_TYPES.contains(&ng.capacity_type.as_str()) {
            errors.push(
                spec.error(
                    &p.key("capacity_type"),
                    format!("one of {}", CAPACITY_TYPES.join(", ")),
                ),
            );
        }
        if ng.instance_types.is_empty() {
            errors.push(spec.error(&p.key("instance_types"), "give at least one type"));
        }
        for (i, it) in ng.instance_types.iter().enumerate() {
            if !it.contains('.') {
                errors.push(spec.error(
                    &p.key("instance_types").index(i),
                    format!("`{it}` is not an EC2 instance type (like c7i.large)"),
                ));
            }
        }
        if ng.min_size < 0 || ng.max_size < 1 || ng.min_size > ng.max_size {
            errors.push(spec.error(
                &p.key("max_size"),
                "sizes need 0 <= min_size <= max_size and max_size >= 1",
            ));
        }
        if ng.desired_size < ng.min_size || ng.desired_size > ng.max_size {
            errors.push(spec.error(
                &p.key("desired_size"),
                "desired_size must be between min_size and max_size",
            ));
        }
        if let Some(m) = ng.max_pods
            && !(1..=MAX_PODS_LIMIT).contains(&m)
        {
            errors.push(spec.error(
                &p.key("max_pods"),
                format!("max_pods must be between 1 and {MAX_PODS_LIMIT}"),
            ));
        }
        if ng.max_pods.is_some() && !ng.ami_type.starts_with("BOTTLEROCKET_") {
            errors.push(spec.error(
                &p.key("ami_type"),
                format!(
                    "`{}`: max_pods is set through Bottlerocket's settings, so it needs a \
                     BOTTLEROCKET_* ami_type",
                    ng.ami_type
                ),
            ));
        }
        for (key, value) in &ng.labels {
            check_label(spec, &p.key("labels").key(key), key, value, &mut errors);
        }
        for (i, taint) in ng.taints.iter().enumerate() {
            let t = p.key("taints").index(i);
            if !TAINT_EFFECTS.contains(&taint.effect.as_str()) {
                errors.push(
                    spec.error(&t.key("effect"), format!("one of {}", TAINT_EFFECTS.join(", "))),
                );
            }
            if !names::k8s_label_key(&taint.key) {
                errors.push(spec.error(&t.key("key"), label_key_message(&taint.key)));
            }
            if !names::k8s_label_value(&taint.value) {
                errors.push(spec.error(&t.key("value"), label_value_message(&taint.value)));
            }
        }
    }
    for (name, addon) in &eks.addons {
        let p = root.key("addons").key(name);
        if !valid_name(name) {
            errors.push(spec.error(&p, format!("`{name}` is not an addon name")));
        }
        if let Some(v) = &addon.version
            && !valid_addon_version(v)
        {
            errors.push(spec.error(
                &p.key("version"),
                format!("`{v}` is not an addon version (like v1.19.0-eksbuild.1)"),
            ));
        }
    }
    for (name, entry) in &eks.access_entries {
        let p = root.key("access_entries").key(name);
        if !valid_name(name) {
            errors.push(spec.error(&p, format!("`{name}` is not an access entry name")));
        }
        if !valid_principal(&entry.principal_arn) {
            errors.push(spec.error(
                &p.key("principal_arn"),
                format!("`{}` is not an IAM role or user ARN", entry.principal_arn),
            ));
        }
        for (i, policy) in entry.policies.iter().enumerate() {
            if !policy.starts_with("AmazonEKS") || policy.contains('/') {
                errors.push(spec.error(
                    &p.key("policies").index(i),
                    format!("`{policy}` is not an EKS access policy name (AmazonEKS...)"),
                ));
            }
        }
    }
    let mut accounts = BTreeMap::new();
    for (name, pi) in &eks.pod_identities {
        let p = root.key("pod_identities").key(name);
        if !valid_name(name) || format!("{cluster}-{name}").len() > 64 {
            errors.push(spec.error(
                &p,
                format!("`{name}` must be letters, digits, - and _, and `{cluster}-{name}` at most 64 characters (its IAM role)"),
            ));
        }
        check_service_account(spec, &p, &pi.namespace, &pi.service_account, &mut errors);
        if let Some(other) = accounts.insert((&pi.namespace, &pi.service_account), name) {
            errors.push(spec.error(
                &p.key("service_account"),
                format!(
                    "`{}/{}` already has pod identity `{other}`",
                    pi.namespace, pi.service_account
                ),
            ));
        }
        for (i, arn) in pi.managed_policies.iter().enumerate() {
            if !arn.starts_with("arn:") || !arn.contains(":policy/") {
                errors.push(spec.error(
                    &p.key("managed_policies").index(i),
                    format!("`{arn}` is not an IAM policy ARN"),
                ));
            }
        }
        if pi.managed_policies.is_empty() && pi.policy.is_none() && pi.policies.is_empty() {
            errors.push(spec.error(
                &p,
                "give `managed_policies`, an inline `policy` or named inline `policies`",
            ));
        }
        for (name, policy) in &pi.policies {
            check_policy_document(spec, &p.key("policies").key(name), policy, &mut errors);
        }
        if let Some(policy) = &pi.policy {
            check_policy_document(spec, &p.key("policy"), policy, &mut errors);
        }
    }
    if let Some(k) = eks.karpenter.as_ref().filter(|k| k.enabled) {
        let p = root.key("karpenter");
        check_service_account(spec, &p, &k.namespace, &k.service_account, &mut errors);
        if let Some(other) = accounts.get(&(&k.namespace, &k.service_account)) {
            errors.push(spec.error(
                &p.key("service_account"),
                format!(
                    "`{}/{}` already has pod identity `{other}`",
                    k.namespace, k.service_account
                ),
            ));
        }
        if eks.pod_identities.contains_key(KARPENTER) {
            errors.push(spec.error(
                &root.key("pod_identities").key(KARPENTER),
                "`karpenter` is the pod identity `[eks.karpenter]` makes; give this one another name",
            ));
        }
        // The longest name derived from the cluster's: an EventBridge rule (64 at most).
        if format!("{cluster}-karpenter-instance-state-change").len() > 64 {
            errors.push(spec.error(
                &g.key("cluster_name"),
                "the cluster name is too long for Karpenter's EventBridge rule names (64 characters)",
            ));
        }
    }
    check_section_tags(spec, &root.key("tags"), globals, &eks.tags, &mut errors);
    errors
}

fn label_key_message(key: &str) -> String {
    format!(
        "`{key}` is not a Kubernetes label key (an optional DNS prefix and `/`, then 1 to 63 \
         letters, digits, `-`, `_` and `.`)"
    )
}

fn label_value_message(value: &str) -> String {
    format!(
        "`{value}` is not a Kubernetes label value (at most 63 letters, digits, `-`, `_` and `.`, \
         starting and ending with a letter or digit)"
    )
}

/// A node label: its key and value as Kubernetes accepts them.
fn check_label(
    spec: &SpecSource,
    path: &FieldPath,
    key: &str,
    value: &str,
    errors: &mut Vec<SpecError>,
) {
    if !names::k8s_label_key(key) {
        errors.push(spec.error(path, label_key_message(key)));
    }
    if !names::k8s_label_value(value) {
        errors.push(spec.error(path, label_value_message(value)));
    }
}

/// The `namespace` and `service_account` under `path`: required, and Kubernetes names.
fn check_service_account(
    spec: &SpecSource,
    path: &FieldPath,
    namespace: &str,
    service_account: &str,
    errors: &mut Vec<SpecError>,
) {
    for (field, value, ok, what) in [
        ("namespace", namespace, names::k8s_label_name(namespace), "namespace name"),
        (
            "service_account",
            service_account,
            names::k8s_subdomain(service_account),
            "service account name",
        ),
    ] {
        if value.is_empty() {
            errors.push(spec.error(&path.key(field), format!("`{field}` must not be empty")));
        } else if !ok {
            errors.push(spec.error(
                &path.key(field),
                format!("`{value}` is not a Kubernetes {what} (lower case letters, digits and -)"),
            ));
        }
    }
}

const POLICY_VERSIONS: &[&str] = &["2012-10-17", "2008-10-17"];
const POLICY_KEYS: &[&str] = &["Version", "Id", "Statement"];
const STATEMENT_KEYS: &[&str] =
    &["Sid", "Effect", "Action", "NotAction", "Resource", "NotResource", "Condition"];

/// An inline IAM policy of a role (an identity policy): its version, and statements that each
/// allow or deny actions on resources. IAM would refuse the rest when the role is written.
fn check_policy_document(
    spec: &SpecSource,
    path: &FieldPath,
    doc: &toml::Table,
    errors: &mut Vec<SpecError>,
) {
    for key in doc.keys().filter(|k| !POLICY_KEYS.contains(&k.as_str())) {
        errors.push(spec.error(
            &path.key(key),
            format!("unknown policy key `{key}`, expected one of {}", POLICY_KEYS.join(", ")),
        ));
    }
    match doc.get("Version") {
        Some(toml::Value::String(v)) if POLICY_VERSIONS.contains(&v.as_str()) => {}
        Some(v) => errors.push(spec.error(
            &path.key("Version"),
            format!("{v} is not an IAM policy version (\"2012-10-17\")"),
        )),
        None => {}
    }
    let statements: Vec<(FieldPath, &toml::Value)> = match doc.get("Statement") {
        Some(toml::Value::Array(items)) if !items.is_empty() => items
            .iter()
            .enumerate()
            .map(|(i, item)| (path.key("Statement").index(i), item))
            .collect(),
        Some(one @ toml::Value::Table(_)) => vec![(path.key("Statement"), one)],
        _ => {
            errors.push(spec.error(
                &path.key("Statement"),
                "a policy needs `Statement`: a table, or an array of tables",
            ));
            vec![]
        }
    };
    for (p, statement) in statements {
        let Some(statement) = statement.as_table() else {
            errors.push(spec.error(&p, "a statement is a table"));
            continue;
        };
        for key in statement.keys().filter(|k| !STATEMENT_KEYS.contains(&k.as_str())) {
            errors.push(spec.error(
                &p.key(key),
                format!(
                    "unknown statement key `{key}` (an identity policy), expected one of {}",
                    STATEMENT_KEYS.join(", ")
                ),
            ));
        }
        match statement.get("Effect").and_then(|e| e.as_str()) {
            Some("Allow" | "Deny") => {}
            _ => errors.push(spec.error(&p.key("Effect"), "Effect must be \"Allow\" or \"Deny\"")),
        }
        for (a, b) in [("Action", "NotAction"), ("Resource", "NotResource")] {
            let present: Vec<&str> =
                [a, b].into_iter().filter(|k| statement.contains_key(*k)).collect();
            if present.len() != 1 {
                errors.push(
                    spec.error(&p, format!("a statement needs exactly one of `{a}` and `{b}`")),
                );
            }
            for key in present {
                let ok = match &statement[key] {
                    toml::Value::String(s) => !s.is_empty(),
                    toml::Value::Array(items) => {
                        !items.is_empty()
                            && items.iter().all(|v| v.as_str().is_some_and(|s| !s.is_empty()))
                    }
                    _ => false,
                };
                if !ok {
                    errors.push(spec.error(
                        &p.key(key),
                        format!("`{key}` is a string or a non-empty array of strings"),
                    ));
                }
            }
        }
        for key in ["Action", "NotAction"] {
            let actions: Vec<(FieldPath, &str)> = match statement.get(key) {
                Some(toml::Value::String(s)) => vec![(p.key(key), s.as_str())],
                Some(toml::Value::Array(items)) => items
                    .iter()
                    .enumerate()
                    .filter_map(|(i, v)| v.as_str().map(|s| (p.key(key).index(i), s)))
                    .collect(),
                _ => vec![],
            };
            for (ap, action) in actions {
                let ok = action == "*"
                    || action.split_once(':').is_some_and(|(service, name)| {
                        !service.is_empty()
                            && service.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
                            && !name.is_empty()
                            && !name.contains(char::is_whitespace)
                    });
                if !ok {
                    errors.push(spec.error(
                        &ap,
                        format!("`{action}` is not an IAM action (like ec2:DescribeSubnets)"),
                    ));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("90s"), Some(Duration::from_secs(90)));
        assert_eq!(parse_duration("30m"), Some(Duration::from_secs(1800)));
        assert_eq!(parse_duration("1h"), Some(Duration::from_secs(3600)));
        assert_eq!(parse_duration("30"), None);
        assert_eq!(parse_duration("m"), None);
        assert_eq!(parse_duration("5d"), None);
    }

    #[test]
    fn versions_and_principals() {
        assert!(valid_kubernetes_version("1.36"));
        assert!(!valid_kubernetes_version("1.36.2"));
        assert!(!valid_kubernetes_version("latest"));
        assert!(valid_addon_version("v1.19.0-eksbuild.1"));
        assert!(!valid_addon_version("1.19.0"));
        assert!(valid_principal("arn:aws:iam::123456789012:role/admins"));
        assert!(valid_principal("arn:aws:iam::123456789012:user/me"));
        assert!(!valid_principal("arn:aws:iam::123:role/x"));
        assert!(!valid_principal("arn:aws:s3:::bucket"));
    }
}
