//! [`BootstrapProvider`]: the `[bootstrap]` section, what goes inside the cluster, as resources
//! of a lane.
//!
//! It shares the lane of the cloud provider that makes the cluster (the engine expands every
//! provider of a lane into one graph), so each resource waits on the resource it needs (the
//! cluster, the addon that installs a DaemonSet it patches), not on a whole stage. It is built
//! configured: its kinds already hold the connector to the cluster (a harness's, the spec's
//! kubeconfig from [`kubeconfig_connector`], or the cluster's outputs), and what differs per
//! cloud comes as a [`ClusterProfile`]. Its expansion only computes resources.

use crate::kube::{Kube, KubeconfigConnector};
use crate::platform::{self, ClusterOutputs, ClusterProfile, Inputs};
use engine::spec::{FieldPath, SpecErrors, SpecSource};
use engine::{Address, ApiCalls, Kind, Provider, ResourceSpec, Value};
use std::sync::Arc;

/// Expands `[bootstrap]` for one lane and supplies the kube kinds.
pub struct BootstrapProvider {
    lane: &'static str,
    prefix: String,
    kube: Kube,
    profile: ClusterProfile,
    /// References to the cluster's outputs, when a cloud provider of the lane makes it.
    cluster: Option<ClusterOutputs>,
    output_vars: Vec<(String, Value)>,
    /// What every bootstrap resource waits for when the spec makes it (the engine's path to a
    /// private API: the tailnet's router and split DNS).
    after: Vec<Address>,
}

/// Builds a [`BootstrapProvider`].
pub struct BootstrapProviderBuilder(BootstrapProvider);

impl BootstrapProvider {
    /// A provider for `lane` whose resources are addressed under `prefix` (`aws.bootstrap`),
    /// managed by the kinds of `kube`; a plain Kubernetes profile until [`profile`] says
    /// otherwise.
    ///
    /// [`profile`]: BootstrapProviderBuilder::profile
    pub fn builder(lane: &'static str, prefix: &str, kube: Kube) -> BootstrapProviderBuilder {
        BootstrapProviderBuilder(BootstrapProvider {
            lane,
            prefix: prefix.to_string(),
            kube,
            profile: ClusterProfile::default(),
            cluster: None,
            output_vars: Vec::new(),
            after: Vec::new(),
        })
    }
}

impl BootstrapProviderBuilder {
    /// What the cloud does differently.
    pub fn profile(mut self, profile: ClusterProfile) -> Self {
        self.0.profile = profile;
        self
    }

    /// The cluster made by the lane's cloud provider, its outputs referenced by `cluster`.
    pub fn cluster(mut self, cluster: ClusterOutputs) -> Self {
        self.0.cluster = Some(cluster);
        self
    }

    /// Keys of the vars ConfigMap whose values are other resources' outputs.
    pub fn output_var(mut self, key: &str, value: Value) -> Self {
        self.0.output_vars.push((key.to_string(), value));
        self
    }

    /// Every resource waits for `addresses` when the spec makes them.
    pub fn after(mut self, addresses: Vec<Address>) -> Self {
        self.0.after = addresses;
        self
    }

    pub fn build(self) -> BootstrapProvider {
        self.0
    }
}

/// The cluster the spec names with `[bootstrap] kubeconfig` (and `context`): the only way the
/// engine reads a kubeconfig. `None` when the spec names none. Errors point at the spec's
/// fields.
pub fn kubeconfig_connector(spec: &SpecSource) -> Result<Option<KubeconfigConnector>, SpecErrors> {
    let Some(b) = platform::load(spec)? else {
        return Ok(None);
    };
    Ok(b.kubeconfig.map(|path| KubeconfigConnector {
        path: platform::kubeconfig_path(spec, &path),
        context: b.context,
    }))
}

impl Provider for BootstrapProvider {
    fn lane(&self) -> &'static str {
        self.lane
    }

    fn sections(&self) -> &'static [&'static str] {
        &["bootstrap"]
    }

    fn expand(&self, spec: &SpecSource) -> Result<Vec<ResourceSpec>, SpecErrors> {
        let Some(b) = platform::load(spec)? else {
            return Ok(vec![]);
        };
        let globals = spec.globals()?;
        let mut api_server_host = b.api_server_host.clone();
        if let Some(path) = &b.kubeconfig
            && api_server_host.is_none()
        {
            let path = platform::kubeconfig_path(spec, path);
            let host = platform::kubeconfig_host(&path, b.context.as_deref()).map_err(|e| {
                spec.errors(vec![spec.error(&FieldPath::root("bootstrap").key("kubeconfig"), e)])
            })?;
            api_server_host = Some(host);
        }
        // The cluster: the one the spec names with `kubeconfig`, else the one it makes.
        let cluster = match (&b.kubeconfig, &self.cluster) {
            (Some(_), _) => None,
            (None, Some(c)) if c.is_given() || spec.has_section(c.section) => Some(c.clone()),
            (None, Some(c)) => {
                return Err(spec.errors(vec![spec.error(
                    &FieldPath::root("bootstrap"),
                    format!(
                        "[bootstrap] needs a cluster: add [{}] to make one, or name an existing \
                         one with `kubeconfig`",
                        c.section
                    ),
                )]));
            }
            (None, None) => None,
        };
        let name = spec.name();
        let inputs = Inputs {
            prefix: &self.prefix,
            profile: &self.profile,
            globals: &globals,
            spec_name: &name,
            cluster,
            api_server_host,
            output_vars: self.output_vars.clone(),
        };
        let resources = platform::resources(&b, &inputs).into_iter();
        Ok(resources.map(|r| self.after.iter().fold(r, |r, a| r.after_if_present(a))).collect())
    }

    fn kinds(&self) -> Vec<Arc<dyn Kind>> {
        self.kube.kinds()
    }

    fn api_calls(&self) -> ApiCalls {
        self.kube.api_calls()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kube::NoConnector;
    use serde_json::json;

    const SPEC: &str = r#"
[globals]
cloud = "aws"
region = "eu-west-3"
cluster_name = "aws-0"
domain = "example.test"

[globals.versions]
cilium = "1.20.0"
flux_instance = "0.49.0"

[globals.flux]
repository = "https://git.example.test/platform.git"
reference = "refs/heads/main"

[bootstrap]
api_server_host = "api.example.test"

[bootstrap.cilium]
chart = "oci://registry.example.test/cilium"

[bootstrap.flux_instance]
chart = "oci://registry.example.test/flux-instance"
"#;

    fn expand(profile: ClusterProfile) -> Vec<ResourceSpec> {
        let kube = Kube::builder(Arc::new(NoConnector)).build();
        let provider = BootstrapProvider::builder("aws", "t.bootstrap", kube).profile(profile);
        provider.build().expand(&SpecSource::from_text("specs/t.toml", "t", SPEC)).unwrap()
    }

    fn find<'a>(resources: &'a [ResourceSpec], name: &str) -> Option<&'a ResourceSpec> {
        resources.iter().find(|r| r.address.as_str().ends_with(name))
    }

    fn json(value: &Value) -> serde_json::Value {
        value.resolve(&|_| None).unwrap()
    }

    #[test]
    fn what_differs_per_cloud_comes_from_the_profile() {
        let plain = expand(ClusterProfile::default());
        assert!(find(&plain, "_patch").is_none() && find(&plain, "cni_configuration").is_none());
        assert!(find(&plain, "storage_class").is_none());
        let vars = find(&plain, "k8s_object.flux_vars").unwrap();
        assert_eq!(vars.attributes["name"], Value::from("aws-0-vars"));
        let cilium = json(&find(&plain, "helm_release.cilium").unwrap().attributes["values"]);
        assert_eq!(cilium["ipam"]["mode"], "kubernetes");
        assert_eq!(cilium["k8sServiceHost"], "api.example.test");

        let cni = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "cni", "namespace": "kube-system"}});
        let profile = ClusterProfile {
            vars_config_map: "x-{cluster}-vars".into(),
            cilium_values: json!({"ipam": {"mode": "eni"}}),
            cni_configuration: Some(cni),
            parked_daemonsets: vec!["aws-node".into()],
            flux_cluster_type: "aws".into(),
            storage_class: Some(toml::from_str("name = \"gp3\"\nprovisioner = \"ebs\"").unwrap()),
            jwt_issuer: None,
        };
        let resources = expand(profile);
        let cni = find(&resources, "k8s_object.cilium_cni_configuration").unwrap();
        assert_eq!(cni.address.as_str(), "t.bootstrap.k8s_object.cilium_cni_configuration");
        assert_eq!(cni.attributes["name"], Value::Json(json!("cni")));
        assert!(find(&resources, "k8s_object.aws_node_patch").is_some());
        assert!(find(&resources, "k8s_object.kube_proxy_patch").is_none());
        let cilium = find(&resources, "helm_release.cilium").unwrap();
        assert!(cilium.depends_on.contains(&cni.address));
        assert_eq!(json(&cilium.attributes["values"])["ipam"]["mode"], "eni");
        let vars = find(&resources, "k8s_object.flux_vars").unwrap();
        assert_eq!(vars.attributes["name"], Value::from("x-aws-0-vars"));
        assert!(find(&resources, "k8s_object.storage_class").is_some());
        let instance = find(&resources, "helm_release.flux_instance").unwrap();
        assert_eq!(json(&instance.attributes["values"])["instance"]["cluster"]["type"], "aws");
    }
}
