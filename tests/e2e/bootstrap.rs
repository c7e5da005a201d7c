//! The cluster bootstrap against a real kube-apiserver (+ kwok nodes): Gateway API CRDs, Cilium,
//! Flux Operator, Flux Instance and the bootstrap objects, with charts pulled from a local
//! registry. Install, no-op re-apply, drift and repair, chart upgrade with pruning, errors,
//! destroy.

use engine::spec::SpecSource;
use engine::{Action, Engine, LocalBackend, Secret};
use engine_bootstrap::BootstrapProvider;
use engine_lanes::LaneBuilder;
use engine_openbao::{MemorySecrets, SecretSink};
use engine_tests::fixtures;
use engine_tests::lane::ar;
use engine_tests::{KubeCluster, Registry};
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::discovery::ApiResource;
use serde_json::{Value as Json, json};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

const FLUX_APP_KEY: &str =
    "-----BEGIN FAKE KEY-----\nbootstrap-secret-value-7f3a\n-----END FAKE KEY-----";

struct Peers {
    cluster: KubeCluster,
    registry: Registry,
    secrets: Arc<MemorySecrets>,
}

async fn peers() -> Peers {
    let cluster = KubeCluster::start(2);
    let registry = Registry::start();
    engine_tests::push_fixtures(
        &registry,
        &[
            "cilium-1.19.6.tgz",
            "cilium-1.20.0.tgz",
            "flux-operator-0.49.0.tgz",
            "flux-instance-0.49.0.tgz",
        ],
    )
    .await;
    let secrets = Arc::new(MemorySecrets::new());
    secrets.put("github/flux-app/private-key", &Secret::new(FLUX_APP_KEY)).await.unwrap();
    secrets.put("github/flux-app/app-id", &Secret::new("123456")).await.unwrap();
    // What EKS installs as addons: the DaemonSets the bootstrap parks.
    engine_tests::lane::install_addon_daemonsets(&cluster).await;
    Peers { cluster, registry, secrets }
}

fn spec(p: &Peers, cilium: &str) -> String {
    let gateway = fixtures().join("gateway-api/{channel}-install-{version}.yaml");
    format!(
        r#"
[globals]
cloud = "aws"
region = "eu-west-3"
cluster_name = "aws-0"
domain = "example.test"

[globals.tags]
environment = "test"

[globals.versions]
cilium = "{cilium}"
flux_operator = "0.49.0"
flux_instance = "0.49.0"
gateway_api = "v1.6.1"

[globals.flux]
repository = "https://github.com/example/platform.git"
reference = "refs/heads/main"

[bootstrap]
api_server_host = "api.aws-0.example.test"
timeout_seconds = 120

[bootstrap.gateway_api]
source = "{gateway}"

[bootstrap.cilium]
chart = "{repo}/cilium"
wait = false

[bootstrap.flux_operator]
chart = "{repo}/flux-operator"

[bootstrap.flux_instance]
chart = "{repo}/flux-instance"
storage_class = "gp3"
wait = false

[bootstrap.vars]
team = "platform"

[bootstrap.flux_secret]
data = {{ githubAppID = "github/flux-app/app-id", githubAppPrivateKey = "github/flux-app/private-key" }}

[bootstrap.storage_class]
name = "gp3"
provisioner = "ebs.csi.aws.com"
parameters = {{ type = "gp3", encrypted = "true" }}
"#,
        gateway = gateway.display(),
        repo = p.registry.repo(),
    )
}

async fn engine(p: &Peers, spec_text: &str, dir: &Path) -> (Engine, Arc<BootstrapProvider>) {
    // The lane as the binary wires it, with the test's API server reached whatever the spec
    // says, and the test's secrets.
    let spec = SpecSource::from_text("specs/aws.toml", "aws", spec_text);
    let lane = LaneBuilder::new(&spec)
        .kube_connector(engine_tests::cluster_connector(&p.cluster))
        .kube_poll_interval(Duration::from_millis(300))
        .secret_store(p.secrets.clone())
        .build()
        .await;
    let provider = lane.bootstrap.clone();
    let engine = lane
        .add_to(Engine::builder().spec(spec))
        .state(LocalBackend::new(dir.join("aws.state.json")))
        .retry_backoff(Duration::from_millis(200))
        .build()
        .unwrap_or_else(|e| panic!("spec is valid: {e:?}"));
    (engine, provider)
}

async fn get(
    client: &kube::Client,
    ar: &ApiResource,
    ns: Option<&str>,
    name: &str,
) -> Option<Json> {
    let api: Api<DynamicObject> = match ns {
        Some(ns) => Api::namespaced_with(client.clone(), ns, ar),
        None => Api::all_with(client.clone(), ar),
    };
    api.get_opt(name).await.expect("get").map(|o| serde_json::to_value(o).unwrap())
}

/// Every object in the cluster that the engine's field manager still manages.
async fn engine_managed(client: &kube::Client) -> Vec<String> {
    let core = client.list_core_api_versions_aggregated().await.expect("discovery");
    let groups = client.list_api_groups_aggregated().await.expect("discovery");
    let mut out = Vec::new();
    for group in core.items.iter().chain(&groups.items) {
        let group_name = group.metadata.as_ref().and_then(|m| m.name.clone()).unwrap_or_default();
        // The preferred (first) version of each group is enough: objects are the same.
        let Some(version) = group.versions.first() else {
            continue;
        };
        let v = version.version.clone().unwrap_or_default();
        let api_version =
            if group_name.is_empty() { v.clone() } else { format!("{group_name}/{v}") };
        for r in &version.resources {
            let (Some(plural), Some(kind)) =
                (r.resource.clone(), r.response_kind.as_ref().and_then(|k| k.kind.clone()))
            else {
                continue;
            };
            if !r.verbs.iter().any(|v| v == "list") {
                continue;
            }
            let api: Api<DynamicObject> =
                Api::all_with(client.clone(), &ar(&api_version, &kind, &plural));
            let Ok(list) = api.list(&Default::default()).await else {
                continue;
            };
            for o in list.items {
                let managed = o
                    .metadata
                    .managed_fields
                    .iter()
                    .flatten()
                    .any(|m| m.manager.as_deref() == Some("engine"));
                if managed {
                    out.push(format!(
                        "{kind} {}/{}",
                        o.metadata.namespace.clone().unwrap_or_default(),
                        o.metadata.name.clone().unwrap_or_default()
                    ));
                }
            }
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bootstrap_installs_reapplies_as_noop_repairs_drift_upgrades_and_destroys() {
    let p = peers().await;
    let dir = tempfile::tempdir().unwrap();
    let client = p.cluster.client().await;

    // Install from nothing.
    let (engine, _provider) = engine(&p, &spec(&p, "1.19.6"), dir.path()).await;
    let plan = engine.plan().await.expect("plan");
    let creates = plan.actions().filter(|c| c.action == Action::Create).count();
    assert_eq!(creates, 10, "every bootstrap resource is created: {:#?}", plan.summary());
    // The addons' DaemonSets exist: parking them is an in-place change of objects the engine
    // does not own.
    for patch in
        ["aws.bootstrap.k8s_object.aws_node_patch", "aws.bootstrap.k8s_object.kube_proxy_patch"]
    {
        assert_eq!(plan.change(patch).map(|c| c.action), Some(Action::Update), "{patch}");
    }
    let started = std::time::Instant::now();
    let report = engine.apply(&plan).await.expect("apply");
    let install_time = started.elapsed();
    assert!(
        report.is_success(),
        "install failed: {:#?}\napiserver log tail: {}",
        report.failures().collect::<Vec<_>>(),
        tail(&p.cluster.log("kube-apiserver"))
    );
    let applied = report.api_calls.by_operation.get("kube:ApplyObject").copied().unwrap_or(0);
    eprintln!("install: {install_time:?}, {applied} objects applied, calls {:?}", report.api_calls);

    // What was asked for is there.
    let fi = get(
        &client,
        &ar("fluxcd.controlplane.io/v1", "FluxInstance", "fluxinstances"),
        Some("flux-system"),
        "flux",
    )
    .await
    .expect("the FluxInstance exists");
    assert_eq!(fi["spec"]["sync"]["path"], "clusters/aws-0");
    assert_eq!(fi["spec"]["sync"]["url"], "https://github.com/example/platform.git");
    assert_eq!(fi["spec"]["sync"]["ref"], "refs/heads/main");
    assert_eq!(fi["spec"]["distribution"]["version"], "2.x");
    assert_eq!(fi["spec"]["storage"]["class"], "gp3");
    let components = fi["spec"]["components"].as_array().unwrap();
    assert!(components.contains(&json!("source-watcher")), "{components:?}");
    let gw = get(
        &client,
        &ar("apiextensions.k8s.io/v1", "CustomResourceDefinition", "customresourcedefinitions"),
        None,
        "gateways.gateway.networking.k8s.io",
    )
    .await
    .expect("Gateway API CRDs are installed");
    assert_eq!(gw["metadata"]["annotations"]["gateway.networking.k8s.io/channel"], "experimental");
    let vars =
        get(&client, &ar("v1", "ConfigMap", "configmaps"), Some("flux-system"), "eks-aws-0-vars")
            .await
            .expect("vars ConfigMap");
    assert_eq!(vars["data"]["cluster_name"], "aws-0");
    assert_eq!(vars["data"]["team"], "platform");
    assert_eq!(vars["data"]["private_domain"], "priv.aws.example.test");
    let secret = get(&client, &ar("v1", "Secret", "secrets"), Some("flux-system"), "flux-system")
        .await
        .expect("flux-system Secret");
    use base64::Engine as _;
    let key = base64::engine::general_purpose::STANDARD
        .decode(secret["data"]["githubAppPrivateKey"].as_str().unwrap())
        .unwrap();
    assert_eq!(key, FLUX_APP_KEY.as_bytes());
    let aws_node =
        get(&client, &ar("apps/v1", "DaemonSet", "daemonsets"), Some("kube-system"), "aws-node")
            .await
            .unwrap();
    assert_eq!(aws_node["spec"]["template"]["spec"]["nodeSelector"]["engine/disabled"], "true");
    let cilium_cm =
        get(&client, &ar("v1", "ConfigMap", "configmaps"), Some("kube-system"), "cilium-config")
            .await
            .expect("cilium-config from the chart");
    assert_eq!(cilium_cm["data"]["ipam"], "eni");
    assert_eq!(cilium_cm["data"]["kube-proxy-replacement"], "true");
    let operator = get(
        &client,
        &ar("apps/v1", "Deployment", "deployments"),
        Some("flux-system"),
        "flux-operator",
    )
    .await
    .expect("flux-operator Deployment");
    assert!(
        operator["status"]["availableReplicas"].as_i64().unwrap_or(0) >= 1,
        "waited for: {operator}"
    );

    // The Flux Instance is ready: the operator's release is Flux's now, as the reference hands
    // it over; the state keeps it only as handed over.
    let handed = engine.state_document().unwrap();
    let operator_release = "aws.bootstrap.helm_release.flux_operator";
    assert!(!handed.resources.contains_key(operator_release), "{:?}", handed.resources.keys());
    assert_eq!(handed.handed_over[operator_release].to, "Flux");

    // Secrets never reach the state file.
    let state_text = std::fs::read_to_string(dir.path().join("aws.state.json")).unwrap();
    assert!(!state_text.contains("bootstrap-secret-value-7f3a"));
    let encoded = base64::engine::general_purpose::STANDARD.encode(FLUX_APP_KEY);
    assert!(!state_text.contains(&encoded));

    // Re-apply: nothing to do, and no write reaches the API server.
    let before = engine.api_calls();
    let plan = engine.plan().await.expect("second plan");
    assert!(!plan.has_changes(), "second plan is empty: {:#?}", plan.changes);
    let report = engine.apply(&plan).await.expect("second apply");
    assert!(report.is_success());
    let calls = engine.api_calls().since(&before);
    assert_eq!(calls.mutating(), 0, "no-op apply wrote: {:?}", calls.mutating_operations());
    eprintln!("no-op plan + apply calls: {calls:?}");

    // A run killed after it applied the flux-system Namespace and before it wrote state: the
    // next run finds the Namespace (a name and nothing else but the engine's label) and takes
    // it over instead of refusing it as someone else's.
    let state_path = dir.path().join("aws.state.json");
    let mut doc: Json =
        serde_json::from_str(&std::fs::read_to_string(&state_path).unwrap()).unwrap();
    let namespace = "aws.bootstrap.k8s_object.namespace_flux_system";
    assert!(doc["resources"].as_object_mut().unwrap().remove(namespace).is_some());
    std::fs::write(&state_path, serde_json::to_vec(&doc).unwrap()).unwrap();
    let (engine, _provider) = self::engine(&p, &spec(&p, "1.19.6"), dir.path()).await;
    let plan = engine.plan().await.unwrap();
    assert_eq!(
        plan.change(namespace).map(|c| c.action),
        Some(Action::Adopt),
        "{:#?}",
        plan.changes
    );
    let report = engine.apply(&plan).await.unwrap();
    assert!(report.is_success(), "{:#?}", report.failures().collect::<Vec<_>>());
    assert!(!engine.plan().await.unwrap().has_changes());
    let ns = get(&client, &ar("v1", "Namespace", "namespaces"), None, "flux-system").await.unwrap();
    assert_eq!(ns["metadata"]["labels"]["app.kubernetes.io/managed-by"], "engine");

    // Someone else changes things: drift reports them field by field; apply repairs.
    let cm_api: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), "kube-system", &ar("v1", "ConfigMap", "configmaps"));
    cm_api
        .patch(
            "cilium-config",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"ipam": "kubernetes"}})),
        )
        .await
        .unwrap();
    let vars_api: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), "flux-system", &ar("v1", "ConfigMap", "configmaps"));
    vars_api.delete("eks-aws-0-vars", &Default::default()).await.unwrap();
    let drift = engine.drift().await.expect("drift");
    assert!(!drift.is_clean());
    let text = format!("{:?}", drift.drifted);
    assert!(text.contains("aws.bootstrap.helm_release.cilium"), "{text}");
    assert!(text.contains(".data.ipam: \\\"kubernetes\\\" -> \\\"eni\\\""), "{text}");
    assert!(text.contains("aws.bootstrap.k8s_object.flux_vars"), "{text}");
    assert_eq!(drift.drifted.len(), 2, "{text}");
    let plan = engine.plan().await.unwrap();
    let report = engine.apply(&plan).await.unwrap();
    assert!(report.is_success(), "{:#?}", report.failures().collect::<Vec<_>>());
    assert!(engine.drift().await.unwrap().is_clean());
    let cm =
        get(&client, &ar("v1", "ConfigMap", "configmaps"), Some("kube-system"), "cilium-config")
            .await
            .unwrap();
    assert_eq!(cm["data"]["ipam"], "eni");

    // Upgrade Cilium 1.19.6 -> 1.20.0: an in-place update; objects the new chart no longer has
    // are pruned.
    let state_before = std::fs::read_to_string(dir.path().join("aws.state.json")).unwrap();
    let old_objects = release_objects(&state_before, "aws.bootstrap.helm_release.cilium");
    // The same upgrade turns Hubble Relay off, so the new render lacks objects the old one had.
    let upgraded = spec(&p, "1.20.0").replace(
        "chart = \"{repo}/cilium\"\nwait = false".replace("{repo}", &p.registry.repo()).as_str(),
        &format!(
            "chart = \"{}/cilium\"\nwait = false\nvalues = {{ hubble = {{ relay = {{ enabled = false }}, ui = {{ enabled = false }} }} }}",
            p.registry.repo()
        ),
    );
    assert!(upgraded.contains("relay = { enabled = false }, ui = { enabled = false }"));
    let (engine, _) = self::engine(&p, &upgraded, dir.path()).await;
    let plan = engine.plan().await.unwrap();
    let change = plan.change("aws.bootstrap.helm_release.cilium").expect("cilium changes");
    assert_eq!(change.action, Action::Update);
    // The vars ConfigMap carries the versions for Flux's substitutions.
    let changed: Vec<&str> =
        plan.actions().filter(|c| c.action != Action::NoOp).map(|c| c.address.as_str()).collect();
    assert_eq!(
        changed,
        ["aws.bootstrap.helm_release.cilium", "aws.bootstrap.k8s_object.flux_vars"]
    );
    let report = engine.apply(&plan).await.unwrap();
    assert!(report.is_success(), "{:#?}", report.failures().collect::<Vec<_>>());
    let state_after = std::fs::read_to_string(dir.path().join("aws.state.json")).unwrap();
    let new_objects = release_objects(&state_after, "aws.bootstrap.helm_release.cilium");
    let removed: Vec<&String> = old_objects.iter().filter(|o| !new_objects.contains(o)).collect();
    for key in &removed {
        let parts: Vec<&str> = key.split('|').collect();
        let (api_version, kind, ns, name) = (parts[0], parts[1], parts[2], parts[3]);
        let plural = format!("{}s", kind.to_lowercase());
        let found =
            get(&client, &ar(api_version, kind, &plural), (!ns.is_empty()).then_some(ns), name)
                .await;
        assert!(found.is_none(), "{key} was pruned");
    }
    assert!(
        removed.iter().any(|k| k.as_str() == "apps/v1|Deployment|kube-system|hubble-relay"),
        "hubble-relay is pruned: {removed:?}"
    );
    eprintln!(
        "upgrade: {} objects before, {} after, {} pruned",
        old_objects.len(),
        new_objects.len(),
        removed.len()
    );
    let ds = get(&client, &ar("apps/v1", "DaemonSet", "daemonsets"), Some("kube-system"), "cilium")
        .await
        .unwrap();
    let image =
        ds["spec"]["template"]["spec"]["containers"][0]["image"].as_str().unwrap().to_string();
    assert!(image.contains("v1.20.0"), "{image}");
    assert!(!engine.plan().await.unwrap().has_changes());

    // Destroy: Flux is suspended first, everything the engine made is gone, the parked
    // DaemonSets are given back.
    let plan = engine.plan_destroy().await.unwrap();
    let report = engine.apply(&plan).await.unwrap();
    assert!(report.is_success(), "{:#?}", report.failures().collect::<Vec<_>>());
    let left = engine_managed(&client).await;
    assert!(left.is_empty(), "engine-managed objects left: {left:?}");
    let aws_node =
        get(&client, &ar("apps/v1", "DaemonSet", "daemonsets"), Some("kube-system"), "aws-node")
            .await
            .expect("the addon's DaemonSet is not deleted");
    assert!(aws_node["spec"]["template"]["spec"]["nodeSelector"].get("engine/disabled").is_none());
}

fn release_objects(state: &str, address: &str) -> Vec<String> {
    let doc: Json = serde_json::from_str(state).unwrap();
    doc["resources"][address]["attributes"]["objects"]
        .as_array()
        .unwrap_or_else(|| panic!("{address} in state"))
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect()
}

fn tail(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(20)..].join("\n")
}

/// An engine for a bootstrap of `cluster` with only a manifest bundle of text `bundle` (in place
/// of the Gateway API CRDs) and the platform's own objects, state in `dir`.
async fn bundle_engine(cluster: &KubeCluster, dir: &Path, bundle: &str) -> Engine {
    let path = dir.join("bundle.yaml");
    std::fs::write(&path, bundle).unwrap();
    let text = format!(
        "[globals]\ncloud = \"aws\"\nregion = \"eu-west-3\"\ncluster_name = \"aws-0\"\ndomain = \"example.test\"\n[globals.versions]\ngateway_api = \"v0\"\n[bootstrap]\ndisable_aws_node = false\ndisable_kube_proxy = false\n[bootstrap.gateway_api]\nsource = \"{}\"\n",
        path.display()
    );
    let spec = SpecSource::from_text("specs/aws.toml", "aws", &text);
    let connector = engine_tests::cluster_connector(cluster);
    let lane = LaneBuilder::new(&spec).kube_connector(connector).build().await;
    lane.add_to(Engine::builder().spec(spec))
        .state(LocalBackend::new(dir.join("s.json")))
        .retry_backoff(Duration::from_millis(50))
        .build()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_object_is_an_error_naming_it_and_nothing_is_applied() {
    let cluster = KubeCluster::start(0);
    let dir = tempfile::tempdir().unwrap();
    let engine = bundle_engine(
        &cluster,
        dir.path(),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fine\n  namespace: default\n---\napiVersion: widgets.example.com/v1\nkind: Widget\nmetadata:\n  name: gizmo\n  namespace: default\n",
    )
    .await;
    let plan = engine.plan().await.unwrap();
    let report = engine.apply(&plan).await.unwrap();
    let failure = format!("{:?}", report.failures().collect::<Vec<_>>());
    assert!(
        failure.contains("Widget.widgets.example.com default/gizmo")
            && failure.contains("serves no kind `Widget`"),
        "{failure}"
    );
    let client = cluster.client().await;
    assert!(
        get(&client, &ar("v1", "ConfigMap", "configmaps"), Some("default"), "fine").await.is_none(),
        "nothing of the bundle is applied"
    );
}

/// Objects the engine did not apply are never taken over by name: a manifest bundle with one
/// and a single object (Cilium's CNI ConfigMap) fail naming them, and leave them as they were.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn objects_the_engine_did_not_make_are_never_taken_over() {
    let cluster = KubeCluster::start(0);
    let client = cluster.client().await;
    let config_maps = ar("v1", "ConfigMap", "configmaps");
    let theirs = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "taken", "namespace": "default"}, "data": {"owner": "someone"}});
    Api::<DynamicObject>::namespaced_with(client.clone(), "default", &config_maps)
        .patch("taken", &PatchParams::apply("someone-else"), &Patch::Apply(&theirs))
        .await
        .unwrap();
    let cni = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "cilium-cni-configuration", "namespace": "kube-system"},
        "data": {"cni-config": "theirs"}});
    Api::<DynamicObject>::namespaced_with(client.clone(), "kube-system", &config_maps)
        .patch("cilium-cni-configuration", &PatchParams::apply("someone-else"), &Patch::Apply(&cni))
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let engine = bundle_engine(
        &cluster,
        dir.path(),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fine\n  namespace: default\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: taken\n  namespace: default\ndata:\n  owner: engine\n",
    )
    .await;
    let plan = engine.plan().await.unwrap();
    let adopted: Vec<_> = plan.changes.iter().filter(|c| c.action == Action::Adopt).collect();
    assert!(adopted.is_empty(), "{adopted:#?}");
    let report = engine.apply(&plan).await.unwrap();
    let failures: Vec<String> = report.failures().map(|f| format!("{f:?}")).collect();
    let named = |what: &str| {
        failures.iter().any(|f| f.contains(what) && f.contains("was not made by the engine"))
    };
    assert!(named("default/taken") && named("cilium-cni-configuration"), "{failures:#?}");
    let taken = get(&client, &config_maps, Some("default"), "taken").await.unwrap();
    assert_eq!(taken["data"]["owner"], json!("someone"), "their object is untouched");
    let fine = get(&client, &config_maps, Some("default"), "fine").await;
    assert!(fine.is_none(), "nothing of the bundle is applied");

    // Their ConfigMap gone, the bundle applies; the CNI ConfigMap is still theirs.
    Api::<DynamicObject>::namespaced_with(client.clone(), "default", &config_maps)
        .delete("taken", &Default::default())
        .await
        .unwrap();
    let plan = engine.plan().await.unwrap();
    let report = engine.apply(&plan).await.unwrap();
    let failures: Vec<String> = report.failures().map(|f| format!("{f:?}")).collect();
    assert_eq!(failures.len(), 1, "{failures:#?}");
    assert!(failures[0].contains("kube-system/cilium-cni-configuration"), "{failures:#?}");
    assert!(failures[0].contains("was not made by the engine"), "{failures:#?}");
    let cni = get(&client, &config_maps, Some("kube-system"), "cilium-cni-configuration").await;
    assert_eq!(cni.unwrap()["data"]["cni-config"], json!("theirs"));
    assert!(get(&client, &config_maps, Some("default"), "fine").await.is_some());
}

/// A connector that always answers the same configuration.
struct Fixed(kube::Config);

#[async_trait::async_trait]
impl engine_bootstrap::kube::KubeConnector for Fixed {
    async fn config(
        &self,
        _: &engine_bootstrap::kube::ClusterTarget,
    ) -> Result<kube::Config, engine_bootstrap::kube::ConnectError> {
        Ok(self.0.clone())
    }
}

/// `cluster`'s configuration with `credentials` instead of its own.
async fn with_credentials(cluster: &KubeCluster, credentials: Json) -> kube::Config {
    let mut file = kube::config::Kubeconfig::read_from(cluster.kubeconfig()).unwrap();
    for named in &mut file.auth_infos {
        named.auth_info = Some(serde_json::from_value(credentials.clone()).unwrap());
    }
    kube::Config::from_custom_kubeconfig(file, &Default::default()).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_api_server_that_does_not_answer_is_an_error_never_a_deletion() {
    let cluster = KubeCluster::start(0);
    let dir = tempfile::tempdir().unwrap();
    let manifest = dir.path().join("objects.yaml");
    std::fs::write(
        &manifest,
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kept\n  namespace: default\n",
    )
    .unwrap();
    let text = format!(
        "[globals]\ncloud = \"aws\"\nregion = \"eu-west-3\"\ncluster_name = \"aws-0\"\ndomain = \"example.test\"\n[globals.versions]\ngateway_api = \"v0\"\n[bootstrap]\ndisable_aws_node = false\ndisable_kube_proxy = false\n[bootstrap.gateway_api]\nsource = \"{}\"\n",
        manifest.display()
    );
    let state = dir.path().join("s.json");
    let engine_with = |connector: Arc<dyn engine_bootstrap::kube::KubeConnector>| {
        let spec = SpecSource::from_text("specs/aws.toml", "aws", &text);
        let state = state.clone();
        async move {
            let lane = LaneBuilder::new(&spec).kube_connector(connector).build().await;
            lane.add_to(Engine::builder().spec(spec))
                .state(LocalBackend::new(state))
                .retry_backoff(Duration::from_millis(50))
                .build()
                .unwrap()
        }
    };
    let engine = engine_with(engine_tests::cluster_connector(&cluster)).await;
    let report = engine.apply(&engine.plan().await.unwrap()).await.unwrap();
    assert!(report.is_success(), "{report:#?}");
    let recorded = std::fs::read_to_string(&state).unwrap();

    // The same cluster refusing the credentials (401), then not listening at all.
    let refused = with_credentials(&cluster, json!({"token": "not-a-valid-token"})).await;
    let mut gone = refused.clone();
    gone.cluster_url = format!("https://127.0.0.1:{}", engine_tests::free_port()).parse().unwrap();
    for (what, config) in [("refused", refused), ("unreachable", gone)] {
        let engine = engine_with(Arc::new(Fixed(config))).await;
        let plan = engine.plan().await;
        let error = format!("{:?}", plan.as_ref().err());
        assert!(plan.is_err(), "{what}: a plan made without the cluster's answer: {plan:#?}");
        assert!(error.contains("discovery"), "{what}: {error}");
        assert!(engine.drift().await.is_err(), "{what}: drift must fail, not report deletions");
        assert_eq!(std::fs::read_to_string(&state).unwrap(), recorded, "{what}: state is kept");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_flux_instance_wait_reports_what_is_not_ready() {
    let p = peers().await;
    let dir = tempfile::tempdir().unwrap();
    let text = spec(&p, "1.19.6").replace(
        "storage_class = \"gp3\"\nwait = false",
        "storage_class = \"gp3\"\nwait = true\ntimeout_seconds = 3",
    );
    let (engine, _) = engine(&p, &text, dir.path()).await;
    let plan = engine.plan().await.unwrap();
    let report = engine.apply(&plan).await.unwrap();
    let failures: Vec<_> = report.failures().collect();
    assert_eq!(failures.len(), 1, "{failures:#?}");
    let text = format!("{failures:?}");
    assert!(text.contains("aws.bootstrap.helm_release.flux_instance"), "{text}");
    assert!(
        text.contains(
            "FluxInstance.fluxcd.controlplane.io flux-system/flux: no Ready condition yet"
        ),
        "{text}"
    );
}

/// The `engine` binary on an existing cluster, reached only because the spec opts in with
/// `[bootstrap] kubeconfig`; the `flux-system` Secret comes from Secrets Manager (moto).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_bootstraps_an_existing_cluster_through_the_specs_kubeconfig_only() {
    let moto = engine_tests::Moto::start();
    let cluster = KubeCluster::start(1);
    let registry = Registry::start();
    engine_tests::push_fixtures(
        &registry,
        &["flux-operator-0.49.0.tgz", "flux-instance-0.49.0.tgz"],
    )
    .await;
    let sm = aws_sdk_secretsmanager::Client::new(&moto.sdk_config().await);
    sm.create_secret()
        .name("github/flux-app")
        .secret_string(FLUX_APP_KEY)
        .send()
        .await
        .expect("secret in moto");

    let dir = tempfile::tempdir().unwrap();
    let base = format!(
        r#"[globals]
cloud = "aws"
region = "eu-west-3"
cluster_name = "aws-0"
domain = "example.test"

[globals.versions]
flux_operator = "0.49.0"
flux_instance = "0.49.0"

[globals.flux]
repository = "https://github.com/example/platform.git"
reference = "refs/heads/main"

[bootstrap]
disable_aws_node = false
disable_kube_proxy = false
timeout_seconds = 120
KUBECONFIG_LINE
[bootstrap.flux_operator]
chart = "{repo}/flux-operator"

[bootstrap.flux_instance]
chart = "{repo}/flux-instance"
wait = false

[bootstrap.flux_secret]
data = {{ githubAppPrivateKey = "github/flux-app" }}
"#,
        repo = registry.repo()
    );
    let spec = dir.path().join("aws.toml");
    // The environment points at the cluster, but without the spec's opt-in the engine does not
    // use it.
    let env_kubeconfig = cluster.kubeconfig().display().to_string();
    std::fs::write(&spec, base.replace("KUBECONFIG_LINE", "")).unwrap();
    let spec_arg = spec.display().to_string();
    let out = engine_tests::run_engine(
        &moto.endpoint(),
        &["plan", &spec_arg],
        &[("KUBECONFIG", &env_kubeconfig)],
    );
    let t = engine_tests::text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(
        t.contains("[bootstrap] needs a cluster: add [eks] to make one, or name an existing one with `kubeconfig`"),
        "{t}"
    );

    let line = format!("kubeconfig = \"{env_kubeconfig}\"");
    std::fs::write(&spec, base.replace("KUBECONFIG_LINE", &line)).unwrap();
    let out = engine_tests::run_engine(
        &moto.endpoint(),
        &["apply", "--auto-approve", &spec_arg],
        &[("KUBECONFIG", "/nonexistent")],
    );
    let t = engine_tests::text(&out);
    assert_eq!(out.status.code(), Some(0), "{t}");
    assert!(!t.contains("bootstrap-secret-value-7f3a"), "{t}");
    let client = cluster.client().await;
    let secret = get(&client, &ar("v1", "Secret", "secrets"), Some("flux-system"), "flux-system")
        .await
        .expect("flux-system Secret");
    use base64::Engine as _;
    let key = base64::engine::general_purpose::STANDARD
        .decode(secret["data"]["githubAppPrivateKey"].as_str().unwrap())
        .unwrap();
    assert_eq!(key, FLUX_APP_KEY.as_bytes());
    let out = engine_tests::run_engine(&moto.endpoint(), &["drift", &spec_arg], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", engine_tests::text(&out));
    let state = std::fs::read_to_string(dir.path().join(".engine/aws.state.json")).unwrap();
    assert!(!state.contains("bootstrap-secret-value-7f3a"));
}

/// `clusters/<cluster>/` holds Flux Kustomizations that the API server accepts (server-side
/// dry-run against Flux's own CRD), and its kustomization.yaml lists every one of them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clusters_directories_are_valid_flux_kustomizations() {
    let crds =
        std::env::var("ENGINE_FLUX_CRDS").map(std::path::PathBuf::from).unwrap_or_else(|_| {
            std::path::PathBuf::from(std::env::var("HOME").unwrap())
                .join(".cache/engine/flux-crds-v1.9.6")
        });
    let crd_file = crds.join("kustomize.toolkit.fluxcd.io_kustomizations.yaml");
    assert!(
        crd_file.is_file(),
        "Flux's Kustomization CRD is missing at {}: run testenv/install-flux-crds.sh",
        crd_file.display()
    );
    let cluster = KubeCluster::start(0);
    let client = cluster.client().await;
    let crd_text = std::fs::read_to_string(&crd_file).unwrap();
    let crd = engine_bootstrap::kube::parse_stream("crd", &crd_text).unwrap().remove(0);
    let crd_api: Api<DynamicObject> = Api::all_with(
        client.clone(),
        &ar("apiextensions.k8s.io/v1", "CustomResourceDefinition", "customresourcedefinitions"),
    );
    crd_api
        .patch(
            "kustomizations.kustomize.toolkit.fluxcd.io",
            &PatchParams::apply("test"),
            &Patch::Apply(&crd),
        )
        .await
        .expect("CRD applied");
    let ns_api: Api<DynamicObject> =
        Api::all_with(client.clone(), &ar("v1", "Namespace", "namespaces"));
    ns_api
        .patch(
            "flux-system",
            &PatchParams::apply("test"),
            &Patch::Apply(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "flux-system"}})),
        )
        .await
        .unwrap();
    // The CRD is served once established.
    let ks = ar("kustomize.toolkit.fluxcd.io/v1", "Kustomization", "kustomizations");
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), "flux-system", &ks);
    let mut served = false;
    for _ in 0..100 {
        if api.list(&Default::default()).await.is_ok() {
            served = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(served, "the Kustomization CRD is not served");

    for (cluster_name, vars) in [("aws-0", "eks-aws-0-vars"), ("gcp-0", "gke-gcp-0-vars")] {
        let dir = engine_tests::workspace().join("clusters").join(cluster_name);
        let listed = std::fs::read_to_string(dir.join("kustomization.yaml")).unwrap();
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.file_name().unwrap() != "kustomization.yaml")
            .collect();
        files.sort();
        assert_eq!(files.len(), 8, "{cluster_name}: one Kustomization per layer");
        for file in files {
            let name = file.file_name().unwrap().to_string_lossy().to_string();
            assert!(
                listed.contains(&format!("- {name}")),
                "{cluster_name}/kustomization.yaml lists {name}"
            );
            let text = std::fs::read_to_string(&file).unwrap();
            for obj in engine_bootstrap::kube::parse_stream(&name, &text).unwrap() {
                assert_eq!(obj["kind"], "Kustomization", "{name}");
                if let Some(from) = obj.pointer("/spec/postBuild/substituteFrom/0/name") {
                    assert_eq!(
                        from, vars,
                        "{cluster_name}/{name} substitutes from the vars ConfigMap"
                    );
                }
                let obj_name = obj["metadata"]["name"].as_str().unwrap().to_string();
                api.patch(&obj_name, &PatchParams::apply("test").dry_run(), &Patch::Apply(&obj))
                    .await
                    .unwrap_or_else(|e| panic!("{cluster_name}/{name} is rejected: {e}"));
            }
        }
    }
}
