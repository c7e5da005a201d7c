//! Capabilities offered to templates (`.Capabilities`).

/// The API versions `helm template` (v4.2) offers by default.
pub const DEFAULT_API_VERSIONS: &[&str] = &[
    "v1",
    "admissionregistration.k8s.io/v1",
    "admissionregistration.k8s.io/v1alpha1",
    "admissionregistration.k8s.io/v1beta1",
    "internal.apiserver.k8s.io/v1alpha1",
    "apps/v1",
    "apps/v1beta1",
    "apps/v1beta2",
    "authentication.k8s.io/v1",
    "authentication.k8s.io/v1alpha1",
    "authentication.k8s.io/v1beta1",
    "authorization.k8s.io/v1",
    "authorization.k8s.io/v1beta1",
    "autoscaling/v1",
    "autoscaling/v2",
    "batch/v1",
    "batch/v1beta1",
    "certificates.k8s.io/v1",
    "certificates.k8s.io/v1beta1",
    "certificates.k8s.io/v1alpha1",
    "coordination.k8s.io/v1alpha2",
    "coordination.k8s.io/v1beta1",
    "coordination.k8s.io/v1",
    "discovery.k8s.io/v1",
    "discovery.k8s.io/v1beta1",
    "events.k8s.io/v1",
    "events.k8s.io/v1beta1",
    "extensions/v1beta1",
    "flowcontrol.apiserver.k8s.io/v1",
    "flowcontrol.apiserver.k8s.io/v1beta1",
    "flowcontrol.apiserver.k8s.io/v1beta2",
    "flowcontrol.apiserver.k8s.io/v1beta3",
    "networking.k8s.io/v1",
    "networking.k8s.io/v1beta1",
    "node.k8s.io/v1",
    "node.k8s.io/v1alpha1",
    "node.k8s.io/v1beta1",
    "policy/v1",
    "policy/v1beta1",
    "rbac.authorization.k8s.io/v1",
    "rbac.authorization.k8s.io/v1beta1",
    "rbac.authorization.k8s.io/v1alpha1",
    "resource.k8s.io/v1",
    "resource.k8s.io/v1beta2",
    "resource.k8s.io/v1beta1",
    "resource.k8s.io/v1alpha3",
    "scheduling.k8s.io/v1alpha2",
    "scheduling.k8s.io/v1beta1",
    "scheduling.k8s.io/v1",
    "storage.k8s.io/v1beta1",
    "storage.k8s.io/v1",
    "storage.k8s.io/v1alpha1",
    "storagemigration.k8s.io/v1beta1",
    "apiextensions.k8s.io/v1beta1",
    "apiextensions.k8s.io/v1",
];

/// Kubernetes version `helm template` (v4.2) assumes by default.
pub const DEFAULT_KUBE_VERSION: &str = "v1.36.0";

/// What the cluster supports, as seen by templates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capabilities {
    /// Kubernetes version, e.g. `v1.33.4` or `1.33.4-gke.1`.
    pub kube_version: String,
    /// Supported API versions (`group/version`, or `group/version/Kind`).
    pub api_versions: Vec<String>,
}

impl Default for Capabilities {
    fn default() -> Self {
        Capabilities {
            kube_version: DEFAULT_KUBE_VERSION.to_string(),
            api_versions: DEFAULT_API_VERSIONS.iter().map(|s| s.to_string()).collect(),
        }
    }
}

impl Capabilities {
    /// Default capabilities with a kube version and extra API versions
    /// (what `helm template --kube-version --api-versions` gives).
    pub fn with(kube_version: Option<&str>, extra_api_versions: &[String]) -> Capabilities {
        let mut c = Capabilities::default();
        if let Some(k) = kube_version {
            c.kube_version = k.to_string();
        }
        c.api_versions.extend(extra_api_versions.iter().cloned());
        c
    }

    /// Parses the kube version like Helm: (full, normalized, major, minor).
    pub fn parse_kube_version(&self) -> Result<(String, String, String, String), String> {
        let v = self.kube_version.trim();
        let bare = v.strip_prefix('v').unwrap_or(v);
        let core: String = bare.chars().take_while(|c| c.is_ascii_digit() || *c == '.').collect();
        let parts: Vec<&str> = core.split('.').filter(|p| !p.is_empty()).collect();
        if parts.len() < 2 || parts.iter().any(|p| p.parse::<u64>().is_err()) {
            return Err(format!("could not parse {v:?} as version"));
        }
        let major = parts[0].parse::<u64>().unwrap_or(0).to_string();
        let minor = parts[1].parse::<u64>().unwrap_or(0).to_string();
        let patch = parts.get(2).map(|p| p.parse::<u64>().unwrap_or(0)).unwrap_or(0);
        let full = format!("v{bare}");
        let normalized = format!("v{major}.{minor}.{patch}");
        Ok((full, normalized, major, minor))
    }
}
