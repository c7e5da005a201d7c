//! `[bootstrap]` -> resources, in the platform's order (platform.md, "Kubernetes, part 2"):
//! DaemonSet patch of `aws-node`, Cilium's CNI configuration, Gateway API CRDs, Cilium, the
//! `kube-proxy` patch, `flux-system` namespace, Flux Operator, the vars ConfigMap, the
//! `flux-system` Secret, the default StorageClass, the Flux Instance, and the pre-destroy step.
//! What differs per cloud comes from the [`ClusterProfile`].

use super::profile::ClusterProfile;
use super::spec::{BootstrapSpec, ReleaseSpec, toml_to_json};
use crate::kube::identity_attrs;
use engine::spec::Globals;
use engine::{Address, ResourceSpec, Value};
use serde_json::{Value as Json, json};

/// How the resources reach their cluster when the spec makes it: references to the cluster
/// resource's outputs.
#[derive(Debug, Clone)]
pub struct ClusterOutputs {
    /// The spec section that makes the cluster (`eks`, `gke`).
    pub section: &'static str,
    pub endpoint: Value,
    pub ca_pem: Value,
    /// The endpoint's host (Cilium's `k8sServiceHost`).
    pub host: Value,
    /// What installs the DaemonSets the bootstrap patches, by DaemonSet name (`aws-node` → the
    /// vpc-cni addon): a patch waits for its installer when the spec makes it.
    pub installed_by: Vec<(String, Address)>,
}

impl ClusterOutputs {
    /// The resource that installs DaemonSet `name`, if any.
    fn installer(&self, name: &str) -> Option<&Address> {
        self.installed_by.iter().find(|(n, _)| n == name).map(|(_, a)| a)
    }
}

impl ClusterOutputs {
    /// Whether the outputs are known values rather than references to a cluster resource (a
    /// cluster given to the engine rather than made by the spec).
    pub fn is_given(&self) -> bool {
        [&self.endpoint, &self.ca_pem, &self.host].into_iter().all(|v| v.references().is_empty())
    }
}

/// The namespace Flux lives in.
pub const FLUX_NAMESPACE: &str = "flux-system";

fn addr(prefix: &str, kind: &str, name: &str) -> Address {
    Address::new(format!("{prefix}.{kind}.{name}"))
}

/// Seconds as an attribute value.
fn seconds(s: u64) -> i64 {
    i64::try_from(s).unwrap_or(i64::MAX)
}

/// Deep merge: `over` wins; maps merge key by key.
pub fn merge(base: &mut Json, over: &Json) {
    match (base, over) {
        (Json::Object(b), Json::Object(o)) => {
            for (k, v) in o {
                match b.get_mut(k) {
                    Some(existing) => merge(existing, v),
                    None => {
                        b.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        (b, o) => *b = o.clone(),
    }
}

/// The expansion's inputs beyond the section itself.
pub struct Inputs<'a> {
    /// Where the resources are addressed (`aws.bootstrap`).
    pub prefix: &'a str,
    pub profile: &'a ClusterProfile,
    pub globals: &'a Globals,
    pub spec_name: &'a str,
    /// The cluster's outputs when the spec makes the cluster.
    pub cluster: Option<ClusterOutputs>,
    /// The API server host when bootstrapping an existing cluster.
    pub api_server_host: Option<String>,
    /// Extra vars whose values are other resources' outputs (VPC id, zone id, ...).
    pub output_vars: Vec<(String, Value)>,
}

/// The bootstrap resources.
pub fn resources(spec: &BootstrapSpec, inputs: &Inputs) -> Vec<ResourceSpec> {
    let g = inputs.globals;
    let profile = inputs.profile;
    let cloud = g.cloud.as_str();
    let cluster = g.cluster_name.as_str();
    let mut out: Vec<ResourceSpec> = Vec::new();

    let base = |kind: &str, name: &str, engine_kind: &str| {
        let mut r = ResourceSpec::new(addr(inputs.prefix, kind, name), engine_kind)
            .attr("cluster", cluster);
        if let Some(c) = &inputs.cluster {
            r = r.attr("cluster_endpoint", c.endpoint.clone()).attr("cluster_ca", c.ca_pem.clone());
        }
        r
    };
    let object = |name: &str, manifest: Value, force: bool| {
        let mut r = base("k8s_object", name, "k8s_object");
        if let Value::Json(m) = &manifest
            && let Some(id) = identity_attrs(m)
        {
            for (k, v) in id {
                r = r.attr(k, Value::Json(v));
            }
        }
        r.attr("manifest", manifest).attr("force_conflicts", force)
    };
    let version = |key: &str| g.versions.get(key).cloned().unwrap_or_default();

    // 1. Park aws-node (VPC CNI) without deleting the addon.
    let park = |name: &str| {
        json!({
            "apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": name, "namespace": "kube-system"},
            "spec": {"template": {"spec": {"nodeSelector": {"engine/disabled": "true"}}}},
        })
    };
    // A patch waits for whatever installs its DaemonSet (the EKS addon), so the addon never
    // lands over it.
    let patch = |name: &str, daemonset: &str| {
        let r = object(name, Value::Json(park(daemonset)), true).attr("patch", true);
        match inputs.cluster.as_ref().and_then(|c| c.installer(daemonset)) {
            Some(installer) => r.after_if_present(installer),
            None => r,
        }
    };
    let aws_node = spec
        .disable_aws_node
        .unwrap_or(profile.parks("aws-node"))
        .then(|| patch("aws_node_patch", "aws-node"));
    let aws_node_addr = aws_node.as_ref().map(|r| r.address.clone());
    out.extend(aws_node);

    // 2. Cilium's CNI configuration, when the cloud needs one.
    let cni_config = profile
        .cni_configuration
        .as_ref()
        .map(|manifest| object("cilium_cni_configuration", Value::Json(manifest.clone()), false));
    let cni_addr = cni_config.as_ref().map(|r| r.address.clone());
    out.extend(cni_config);

    // 3. Gateway API CRDs.
    let gateway = spec.gateway_api.as_ref().map(|gw| {
        let v = version("gateway_api");
        let source = gw.source.replace("{version}", &v).replace("{channel}", &gw.channel);
        base("k8s_manifests", "gateway_api_crds", "k8s_manifests")
            .attr("name", "gateway-api")
            .attr("record_namespace", "kube-system")
            .attr("source", source)
            .attr("version", v)
            .attr("force_conflicts", true)
            .attr("timeout_seconds", seconds(spec.timeout_seconds))
            .attr("out_of_sync", Value::List(vec![]))
    });
    let gateway_addr = gateway.as_ref().map(|r| r.address.clone());
    out.extend(gateway);

    // A pinned chart is pulled by its digest (`oci://...@sha256:...`).
    let pinned = |r: &ReleaseSpec| match &r.digest {
        Some(d) => format!("{}@{d}", r.chart),
        None => r.chart.clone(),
    };
    let release =
        |key: &str, name: &str, namespace: &str, r: &ReleaseSpec, platform: Value, wait: bool| {
            base("helm_release", key, "helm_release")
                .attr("name", name)
                .attr("namespace", namespace)
                .attr("chart", pinned(r))
                .attr("version", version(key))
                .attr("values", platform)
                .attr("wait", r.wait.unwrap_or(wait))
                .attr("out_of_sync", Value::List(vec![]))
                .attr("timeout_seconds", seconds(r.timeout_seconds.unwrap_or(spec.timeout_seconds)))
        };

    // 4. Cilium, then 5. the kube-proxy patch it makes unnecessary.
    let mut cilium_addr = None;
    if let Some(c) = &spec.cilium {
        let mut values = profile.cilium_values_for(cluster);
        merge(&mut values, &toml_to_json(&c.values));
        let mut platform = json_to_value(values);
        // k8sServiceHost: the cluster's endpoint host (an output when the spec makes it).
        let host = match (&inputs.cluster, &inputs.api_server_host) {
            (Some(c), _) => Some(c.host.clone()),
            (None, Some(h)) => Some(Value::Str(h.clone())),
            (None, None) => None,
        };
        if let (Value::Map(m), Some(h)) = (&mut platform, host)
            && !m.contains_key("k8sServiceHost")
        {
            m.insert("k8sServiceHost".into(), h);
        }
        let mut r = release("cilium", "cilium", "kube-system", c, platform, false);
        for dep in [&aws_node_addr, &cni_addr, &gateway_addr].into_iter().flatten() {
            r = r.after(dep);
        }
        cilium_addr = Some(r.address.clone());
        out.push(r);
    }
    if spec.disable_kube_proxy.unwrap_or(profile.parks("kube-proxy")) {
        let mut r = patch("kube_proxy_patch", "kube-proxy");
        if let Some(c) = &cilium_addr {
            r = r.after(c);
        }
        out.push(r);
    }

    // 6. flux-system.
    let flux_wanted = spec.flux_operator.is_some() || spec.flux_instance.is_some();
    if !flux_wanted {
        return out;
    }
    let ns = object(
        "namespace_flux_system",
        Value::Json(json!({"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": FLUX_NAMESPACE}})),
        false,
    );
    let ns_addr = ns.address.clone();
    out.push(ns);

    // 7. Flux Operator.
    let mut operator_addr = None;
    if let Some(op) = &spec.flux_operator {
        let mut values = json!({});
        merge(&mut values, &toml_to_json(&op.values));
        let mut r = release(
            "flux_operator",
            "flux-operator",
            FLUX_NAMESPACE,
            op,
            json_to_value(values),
            true,
        )
        .after(&ns_addr);
        if let Some(c) = &cilium_addr {
            r = r.after(c);
        }
        operator_addr = Some(r.address.clone());
        out.push(r);
    }

    // 8. The vars ConfigMap, the flux-system Secret and the default StorageClass.
    let vars_name = profile.vars_name(cluster);
    let mut data: Vec<(String, Value)> = vec![
        ("cluster_name".into(), Value::Str(cluster.into())),
        ("cloud".into(), Value::Str(cloud.into())),
        ("region".into(), Value::Str(g.region.clone())),
        ("domain".into(), Value::Str(g.domain.clone())),
        ("private_domain".into(), Value::Str(format!("priv.{cloud}.{}", g.domain))),
    ];
    for (k, v) in &g.versions {
        data.push((format!("{k}_version"), Value::Str(v.clone())));
    }
    for (k, v) in &g.tags {
        data.push((format!("tag_{k}"), Value::Str(v.clone())));
    }
    if let Some(flux) = &g.flux {
        data.push(("flux_repository".into(), Value::Str(flux.repository.clone())));
        data.push(("flux_reference".into(), Value::Str(flux.reference.clone())));
    }
    if let Some(class) = spec.flux_instance.as_ref().and_then(|fi| fi.storage_class.as_ref()) {
        data.push(("storage_class".into(), Value::Str(class.clone())));
    }
    data.extend(inputs.output_vars.iter().cloned());
    for (k, v) in &spec.vars {
        data.push((k.clone(), Value::Str(v.clone())));
    }
    let data_map: Value = Value::Map(data.into_iter().collect());
    let vars_manifest = Value::Map(
        [
            ("apiVersion".to_string(), Value::Str("v1".into())),
            ("kind".to_string(), Value::Str("ConfigMap".into())),
            (
                "metadata".to_string(),
                // Flux reconciles what substitutes from it again when it changes.
                Value::Json(json!({
                    "name": vars_name,
                    "namespace": FLUX_NAMESPACE,
                    "labels": {"reconcile.fluxcd.io/watch": "Enabled"},
                })),
            ),
            ("data".to_string(), data_map),
        ]
        .into_iter()
        .collect(),
    );
    let vars = base("k8s_object", "flux_vars", "k8s_object")
        .attr("api_version", "v1")
        .attr("object_kind", "ConfigMap")
        .attr("namespace", FLUX_NAMESPACE)
        .attr("name", vars_name.as_str())
        .attr("manifest", vars_manifest)
        .attr("force_conflicts", false)
        .after(&ns_addr);
    let vars_addr = vars.address.clone();
    out.push(vars);

    let mut instance_deps = vec![vars_addr];
    if let Some(s) = &spec.flux_secret {
        let r = object(
            "flux_secret",
            Value::Json(json!({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
                "metadata": {"name": "flux-system", "namespace": FLUX_NAMESPACE}})),
            false,
        )
        .attr("secret_data", Value::Json(json!(s.data)))
        .after(&ns_addr);
        instance_deps.push(r.address.clone());
        out.push(r);
    }
    if let Some(sc) = spec.storage_class.as_ref().or(profile.storage_class.as_ref()) {
        let r = object(
            "storage_class",
            Value::Json(json!({
                "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                "metadata": {"name": sc.name, "annotations":
                    {"storageclass.kubernetes.io/is-default-class": "true"}},
                "provisioner": sc.provisioner,
                "parameters": sc.parameters,
                "volumeBindingMode": sc.volume_binding_mode,
                "reclaimPolicy": "Delete",
                "allowVolumeExpansion": true,
            })),
            false,
        );
        instance_deps.push(r.address.clone());
        out.push(r);
    }

    // 9. Flux Instance, syncing clusters/<cluster>.
    if let Some(fi) = &spec.flux_instance {
        let (url, reference) = g
            .flux
            .as_ref()
            .map(|f| (f.repository.clone(), f.reference.clone()))
            .unwrap_or_default();
        let mut values = json!({
            "instance": {
                "distribution": {"version": fi.distribution},
                "components": fi.components,
                "cluster": {"type": profile.flux_cluster_type, "networkPolicy": true},
                "sharding": {"key": "sharding.fluxcd.io/key", "shards": fi.shards},
                "sync": {
                    "kind": "GitRepository",
                    "url": url,
                    "ref": reference,
                    "path": format!("clusters/{cluster}"),
                    "pullSecret": if spec.flux_secret.is_some() { "flux-system" } else { "" },
                },
            },
        });
        if let Some(class) = &fi.storage_class {
            values["instance"]["storage"] = json!({"class": class, "size": fi.storage_size});
        }
        if !fi.patches.is_empty() {
            values["instance"]["kustomize"] = json!({"patches": fi.patches});
        }
        merge(&mut values, &toml_to_json(&fi.values));
        let as_release = ReleaseSpec {
            chart: fi.chart.clone(),
            digest: fi.digest.clone(),
            values: Default::default(),
            wait: fi.wait,
            timeout_seconds: fi.timeout_seconds,
            hand_over_to_flux: None,
        };
        let mut r = release(
            "flux_instance",
            "flux",
            FLUX_NAMESPACE,
            &as_release,
            json_to_value(values),
            true,
        )
        .after(&ns_addr);
        for d in instance_deps.iter().chain(operator_addr.iter()) {
            r = r.after(d);
        }
        let instance_addr = r.address.clone();
        out.push(r);

        // Once the instance is ready, Flux manages the operator (its own tree has a release of
        // it), as the reference hands it over by removing it from its state.
        let hand_over = spec.flux_operator.as_ref().and_then(|op| op.hand_over_to_flux);
        if let Some(operator) = out.iter_mut().find(|r| Some(&r.address) == operator_addr.as_ref())
            && hand_over.unwrap_or(true)
        {
            *operator = operator.clone().hand_over_after(&instance_addr, "Flux");
        }

        // 10. The pre-destroy step: destroyed first, it suspends Flux.
        out.push(
            base("flux_suspend", "flux", "flux_suspend")
                .attr("namespace", FLUX_NAMESPACE)
                .attr("instance", "flux")
                .after(&instance_addr),
        );
    }
    out
}

/// JSON as an engine value (kept whole, so it diffs as one attribute).
fn json_to_value(j: Json) -> Value {
    match j {
        Json::Object(m) => Value::Map(m.into_iter().map(|(k, v)| (k, json_to_value(v))).collect()),
        other => Value::Json(other),
    }
}
