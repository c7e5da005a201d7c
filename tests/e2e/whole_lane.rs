//! The whole AWS lane in one graph and one run, from an empty account to Flux: the reference spec
//! (`specs/aws.toml`: network, OpenBao's servers and configuration, EKS, the bootstrap) against
//! moto (+ the EKS extension), a real OpenBao server (raft, transit auto-unseal, TLS from the
//! offline PKI) and a real kube-apiserver (+ kwok). The harness supplies the EKS cluster's
//! Kubernetes connection and OpenBao's address (the library hooks); an overlay swaps the chart
//! registry and versions for the local registry's fixtures. Everything else runs as in production.

use crate::bao_server::{BaoServer, Seal};
use engine::spec::SpecSource;
use engine::{Action, Address, Engine, LocalBackend, Value};
use engine_aws::AwsProvider;
use engine_bootstrap::kube::Kube;
use engine_bootstrap::openbao::{BaoClient, StoredTokenConnector};
use engine_bootstrap::platform::ClusterOutputs;
use engine_bootstrap::{BootstrapProvider, OpenBaoSetup, Secret, pki};
use engine_cli::providers::SecretsManager;
use engine_tests::registry::fixtures;
use engine_tests::{KubeCluster, Moto, Registry, aws_spec_path};
use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, ServiceAccount};
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::discovery::ApiResource;
use serde_json::json;
use std::collections::{BTreeSet, HashSet};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

const PREFIX: &str = "openbao/aws-0";

/// The lineage a destroy keeps unless confirmed.
const LINEAGE: [&str; 6] = [
    "aws.openbao.kms_alias.seal",
    "aws.openbao.kms_alias.snapshots",
    "aws.openbao.kms_key.seal",
    "aws.openbao.kms_key.snapshots",
    "aws.openbao.kms_replica_key.seal",
    "aws.openbao.s3_bucket.snapshots",
];

/// What differs from production: the charts come from the local registry (at the fixtures'
/// versions), the Gateway API manifest from a file, the offline root from the test's directory.
fn overlay(root_ca: &Path, registry: &Registry) -> String {
    let gateway = fixtures().join("gateway-api/{channel}-install-{version}.yaml");
    let repo = registry.repo();
    format!(
        r#"[globals.versions]
cilium = "1.20.0"
flux_operator = "0.49.0"
flux_instance = "0.49.0"
gateway_api = "v1.6.1"

[openbao]
ca_file = "{root_ca}"

[bootstrap]
timeout_seconds = 120

[bootstrap.gateway_api]
source = "{gateway}"

[bootstrap.cilium]
chart = "{repo}/cilium"

[bootstrap.flux_operator]
chart = "{repo}/flux-operator"

[bootstrap.flux_instance]
chart = "{repo}/flux-instance"
wait = false   # no Flux controller runs on kwok nodes, so the instance never becomes Ready
"#,
        root_ca = root_ca.display(),
        gateway = gateway.display(),
    )
}

struct Peers {
    moto: Moto,
    bao: BaoServer,
    _transit: BaoServer,
    cluster: KubeCluster,
    _registry: Registry,
    root: pki::RootCa,
    work: tempfile::TempDir,
    overlay: String,
}

async fn peers() -> Peers {
    let moto = Moto::start();
    let cluster = KubeCluster::start(2);
    let registry = Registry::start();
    registry
        .push_fixtures(&[
            "cilium-1.20.0.tgz",
            "flux-operator-0.49.0.tgz",
            "flux-instance-0.49.0.tgz",
        ])
        .await;
    let work = tempfile::tempdir().unwrap();

    // What the platform team does once, before the first apply: the offline root, the AWS
    // intermediate in Secrets Manager, the GitHub App Flux authenticates with.
    let root = pki::init_root(&work.path().join("pki")).unwrap();
    let inter = pki::intermediate(&root, "aws").unwrap();
    let sm = aws_sdk_secretsmanager::Client::new(&moto.sdk_config().await);
    for (name, value) in [
        ("openbao/pki/intermediate-aws", inter.bundle_pem().expose()),
        ("github/flux-app/app-id", "123456"),
        ("github/flux-app/installation-id", "654321"),
        (
            "github/flux-app/private-key",
            "-----BEGIN FAKE KEY-----\nlane\n-----END FAKE KEY-----",
        ),
    ] {
        sm.create_secret()
            .name(name)
            .secret_string(value)
            .send()
            .await
            .unwrap();
    }

    // OpenBao as its servers boot: uninitialised, auto-unsealed, TLS chaining to the root.
    let leaf = pki::server_leaf(&inter, &["localhost"]).unwrap();
    let transit = BaoServer::transit_provider("autounseal").await;
    let seal = Seal::Transit {
        address: transit.address.clone(),
        token: transit.root_token.clone().unwrap(),
        key: "autounseal".into(),
    };
    let bao = BaoServer::raft(&seal, &leaf.chain_pem, leaf.key_pem(), &root.cert_pem).await;

    // What EKS installs as addons: the DaemonSets the bootstrap parks.
    let client = cluster.client().await;
    let daemonsets: Api<DynamicObject> = Api::namespaced_with(
        client,
        "kube-system",
        &ar("apps/v1", "DaemonSet", "daemonsets"),
    );
    for name in ["aws-node", "kube-proxy"] {
        let ds = json!({
            "apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": name, "namespace": "kube-system"},
            "spec": {
                "selector": {"matchLabels": {"k8s-app": name}},
                "template": {
                    "metadata": {"labels": {"k8s-app": name}},
                    "spec": {"containers": [{"name": name, "image": format!("registry.example/{name}:1")}]},
                },
            },
        });
        daemonsets
            .patch(name, &PatchParams::apply("eks"), &Patch::Apply(&ds))
            .await
            .expect("addon DaemonSet");
    }
    let root_ca = work.path().join("pki/root-ca.crt");
    let overlay = overlay(&root_ca, &registry);
    Peers {
        moto,
        bao,
        _transit: transit,
        cluster,
        _registry: registry,
        root,
        work,
        overlay,
    }
}

fn ar(api_version: &str, kind: &str, plural: &str) -> ApiResource {
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    ApiResource {
        group: group.into(),
        version: version.into(),
        api_version: api_version.into(),
        kind: kind.into(),
        plural: plural.into(),
    }
}

/// The lane's providers as the `engine` binary makes them, with the harness's connections.
async fn engine(p: &Peers, confirm_protected: bool) -> Engine {
    let sdk = p.moto.sdk_config().await;
    let aws = Arc::new(AwsProvider::new(sdk));
    let secrets = Arc::new(SecretsManager(aws.clone()));
    let cluster = engine_aws::eks::cluster_address();
    // The cluster's endpoint and CA come from EKS as in production; its issuer is the local
    // API server's, which OpenBao can reach for discovery.
    let outputs = ClusterOutputs {
        section: "eks",
        endpoint: Value::reference(&cluster, "endpoint"),
        ca_pem: Value::reference(&cluster, "ca_pem"),
        host: Value::reference(&cluster, "endpoint_host"),
        oidc_issuer: Value::from(p.cluster.issuer().as_str()),
        oidc_ca_pem: Some(Value::from(p.cluster.ca_pem().as_str())),
    };
    let kube_secrets = secrets.clone();
    let bootstrap = BootstrapProvider::builder("aws")
        .cluster(outputs, p.cluster.connector())
        .openbao(OpenBaoSetup {
            connector: Some(Arc::new(StoredTokenConnector {
                address: p.bao.address.clone(),
                ca_bundle: Some(p.root.cert_pem.clone()),
                source: secrets.clone(),
                token_secret: format!("{PREFIX}/root-token"),
            })),
            sink: secrets.clone(),
            source: secrets.clone(),
            after: vec![Address::new("aws.openbao.route53_record.api")],
            ready_timeout: Duration::from_secs(60),
            ..Default::default()
        })
        .kube(move |connector| {
            Kube::builder(connector)
                .secret_source(kube_secrets)
                .poll_interval(Duration::from_millis(300))
                .build()
        })
        .build();
    let spec = SpecSource::from_file(&aws_spec_path())
        .unwrap()
        .with_overlay(SpecSource::from_text("overlay.toml", "overlay", &p.overlay))
        .unwrap_or_else(|e| panic!("{e:?}"));
    Engine::builder()
        .spec(spec)
        .provider(aws)
        .provider(Arc::new(bootstrap))
        .state(LocalBackend::new(p.work.path().join("aws.state.json")))
        .retry_backoff(Duration::from_millis(200))
        .confirm_protected(confirm_protected)
        .build()
        .unwrap_or_else(|e| panic!("the reference spec is valid: {e:?}"))
}

/// Everything `address` depends on, directly or not.
fn ancestors(engine: &Engine, address: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut todo = vec![Address::new(address)];
    while let Some(a) = todo.pop() {
        for d in engine.graph().dependencies_of(&a) {
            if seen.insert(d.to_string()) {
                todo.push(d.clone());
            }
        }
    }
    seen
}

/// The stage a resource address belongs to.
fn stage(address: &str) -> &'static str {
    match address {
        a if a.starts_with("aws.network.") => "network",
        a if a.starts_with("aws.openbao.config.") => "openbao config",
        a if a.starts_with("aws.openbao.") => "openbao server",
        a if a.starts_with("aws.eks.") => "eks",
        a if a.starts_with("aws.bootstrap.") => "bootstrap",
        _ => "other",
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn whole_aws_lane_from_empty_to_flux_and_back() {
    let p = peers().await;
    let engine = engine(&p, false).await;

    // One graph: EKS waits for its subnets and IAM role, not for OpenBao; the bootstrap waits
    // for the cluster; OpenBao's configuration for its DNS name.
    let cluster_deps = ancestors(&engine, "aws.eks.cluster.main");
    assert!(
        cluster_deps
            .iter()
            .any(|a| a.starts_with("aws.network.subnet")),
        "{cluster_deps:?}"
    );
    assert!(
        cluster_deps
            .iter()
            .any(|a| a.starts_with("aws.eks.iam_role")),
        "{cluster_deps:?}"
    );
    assert!(
        !cluster_deps.iter().any(|a| a.starts_with("aws.openbao")),
        "{cluster_deps:?}"
    );
    let stages: HashSet<&str> = engine
        .graph()
        .resources()
        .map(|r| stage(r.address.as_str()))
        .collect();
    assert_eq!(
        stages.len(),
        5,
        "every stage is in the one graph: {stages:?}"
    );
    let instance = engine
        .graph()
        .resources()
        .find(|r| r.address.as_str().contains("flux_instance"))
        .expect("the Flux instance is a resource")
        .address
        .to_string();
    assert!(ancestors(&engine, &instance).contains("aws.eks.cluster.main"));
    assert!(
        ancestors(&engine, "aws.openbao.config.init").contains("aws.openbao.route53_record.api")
    );

    // From empty: every resource of the lane is created, in one run.
    let plan = engine.plan().await.unwrap();
    let total = engine.graph().resources().count();
    assert_eq!(plan.changes.len(), total, "{:#?}", plan.kept);
    // (The DaemonSets EKS installed are patched, not made.)
    let not_created: Vec<_> = plan
        .changes
        .iter()
        .filter(|c| c.action != Action::Create)
        .map(|c| (c.address.to_string(), c.action))
        .collect();
    assert_eq!(
        not_created,
        [
            (
                "aws.bootstrap.k8s_object.aws_node_patch".to_string(),
                Action::Update
            ),
            (
                "aws.bootstrap.k8s_object.kube_proxy_patch".to_string(),
                Action::Update
            )
        ]
    );
    let report = engine.apply(&plan).await.unwrap();
    assert!(
        report.is_success(),
        "{:#?}",
        report.failures().collect::<Vec<_>>()
    );
    eprintln!(
        "whole lane: {total} resources created, {} API calls",
        report.api_calls.total()
    );

    // Flux is installed and points at clusters/aws-0.
    let client = p.cluster.client().await;
    let instances: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        "flux-system",
        &ar("fluxcd.controlplane.io/v1", "FluxInstance", "fluxinstances"),
    );
    let flux = instances
        .get("flux")
        .await
        .expect("the FluxInstance exists");
    assert_eq!(flux.data["spec"]["sync"]["path"], "clusters/aws-0");

    // OpenBao: initialised with its credentials in Secrets Manager, and jwt/aws-0 bound to the
    // cluster's issuer: a service-account token of the cluster logs in.
    let sm = aws_sdk_secretsmanager::Client::new(&p.moto.sdk_config().await);
    let token = sm
        .get_secret_value()
        .secret_id(format!("{PREFIX}/root-token"))
        .send()
        .await
        .expect("root token in Secrets Manager")
        .secret_string()
        .unwrap()
        .to_string();
    let root = BaoClient::new(&p.bao.connection(Some(Secret::new(token.clone())))).unwrap();
    let config = root
        .read("test", "auth/jwt/aws-0/config")
        .await
        .unwrap()
        .expect("jwt/aws-0 is configured");
    assert_eq!(
        config["data"]["oidc_discovery_url"],
        p.cluster.issuer().as_str()
    );
    let namespaces: Api<Namespace> = Api::all(client.clone());
    namespaces
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "security"}})).unwrap(),
        )
        .await
        .unwrap();
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), "security");
    accounts
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "external-secrets"}})).unwrap(),
        )
        .await
        .unwrap();
    let request = TokenRequest {
        spec: Some(TokenRequestSpec {
            audiences: Some(vec!["openbao".into()]),
            expiration_seconds: Some(600),
            ..Default::default()
        }),
        ..Default::default()
    };
    let jwt = accounts
        .create_token_request("external-secrets", &PostParams::default(), &request)
        .await
        .unwrap()
        .status
        .unwrap()
        .token;
    let login = BaoClient::new(&p.bao.connection(None))
        .unwrap()
        .write(
            "test",
            "auth/jwt/aws-0/login",
            &json!({"role": "external-secrets", "jwt": jwt}),
        )
        .await
        .expect("login with the cluster's token")
        .expect("an auth response");
    assert!(
        login["auth"]["policies"]
            .to_string()
            .contains("external-secrets"),
        "{login}"
    );

    // Second run: an empty plan and no write anywhere.
    let engine = self::engine(&p, false).await;
    let plan = engine.plan().await.unwrap();
    assert!(!plan.has_changes(), "{:#?}", plan.changes);
    let report = engine.apply(&plan).await.unwrap();
    assert_eq!(
        report.api_calls.mutating(),
        0,
        "{:?}",
        report.api_calls.mutating_operations()
    );
    eprintln!(
        "whole lane no-op plan: {} resources read in {} API calls",
        plan.refreshed,
        plan.api_calls.total()
    );

    // Drift in every stage is found (the CLI exits 2 on it), then repaired.
    drift_every_stage(&p, &root, &client).await;
    let drift = engine.drift().await.unwrap();
    let found: BTreeSet<&str> = drift
        .drifted
        .iter()
        .map(|d| stage(d.address.as_str()))
        .collect();
    assert_eq!(
        found,
        BTreeSet::from([
            "bootstrap",
            "eks",
            "network",
            "openbao config",
            "openbao server"
        ]),
        "{:#?}",
        drift.drifted
    );
    let repair = engine.plan().await.unwrap();
    let report = engine.apply(&repair).await.unwrap();
    assert!(
        report.is_success(),
        "{:#?}",
        report.failures().collect::<Vec<_>>()
    );
    let after = engine.drift().await.unwrap();
    assert!(after.is_clean(), "{:#?}", after.drifted);

    // Destroy, in reverse: nothing but the protected lineage is left, and the cluster is empty
    // of what the engine put there.
    let destroy = engine.plan_destroy().await.unwrap();
    let report = engine.apply(&destroy).await.unwrap();
    assert!(
        report.is_success(),
        "{:#?}",
        report.failures().collect::<Vec<_>>()
    );
    let left: Vec<String> = engine
        .state_document()
        .unwrap()
        .resources
        .keys()
        .cloned()
        .collect();
    assert_eq!(left, LINEAGE, "only the lineage is kept");
    // The operator's CRDs go with its release, so the kind itself is gone (a 404 on the type).
    match instances.get_opt("flux").await {
        Ok(found) => assert!(found.is_none(), "the FluxInstance is gone"),
        Err(kube::Error::Api(status)) => assert_eq!(status.code, 404, "{status:?}"),
        Err(e) => panic!("reading the FluxInstance: {e}"),
    }

    // With the confirmation, nothing is left.
    let confirmed = self::engine(&p, true).await;
    let destroy = confirmed.plan_destroy().await.unwrap();
    let report = confirmed.apply(&destroy).await.unwrap();
    assert!(
        report.is_success(),
        "{:#?}",
        report.failures().collect::<Vec<_>>()
    );
    assert!(confirmed.state_document().unwrap().resources.is_empty());
}

/// One change made outside the engine in each stage.
async fn drift_every_stage(p: &Peers, bao: &BaoClient, client: &kube::Client) {
    let sdk = p.moto.sdk_config().await;
    let state = std::fs::read_to_string(p.work.path().join("aws.state.json")).unwrap();
    let state: serde_json::Value = serde_json::from_str(&state).unwrap();
    let id = |address: &str| {
        state["resources"][address]["id"]
            .as_str()
            .unwrap_or_else(|| panic!("{address} in state"))
            .to_string()
    };
    // Network: a tag of the VPC changed.
    aws_sdk_ec2::Client::new(&sdk)
        .create_tags()
        .resources(id("aws.network.vpc.main"))
        .tags(
            aws_sdk_ec2::types::Tag::builder()
                .key("environment")
                .value("changed")
                .build(),
        )
        .send()
        .await
        .unwrap();
    // OpenBao's servers: versioning of the snapshot bucket suspended.
    aws_sdk_s3::Client::new(&sdk)
        .put_bucket_versioning()
        .bucket(id("aws.openbao.s3_bucket.snapshots"))
        .versioning_configuration(
            aws_sdk_s3::types::VersioningConfiguration::builder()
                .status(aws_sdk_s3::types::BucketVersioningStatus::Suspended)
                .build(),
        )
        .send()
        .await
        .unwrap();
    // EKS: a tag of the cluster changed.
    let eks = aws_sdk_eks::Client::new(&sdk);
    let arn = eks
        .describe_cluster()
        .name("aws-0")
        .send()
        .await
        .unwrap()
        .cluster()
        .and_then(|c| c.arn())
        .unwrap()
        .to_string();
    eks.tag_resource()
        .resource_arn(arn)
        .tags("environment", "changed")
        .send()
        .await
        .unwrap();
    // OpenBao's configuration: a policy edited.
    bao.write(
        "test",
        "sys/policies/acl/cert-manager",
        &json!({"policy": "path \"*\" { capabilities = [\"read\"] }"}),
    )
    .await
    .unwrap();
    // Inside the cluster: Cilium's IPAM mode changed.
    let maps: Api<ConfigMap> = Api::namespaced(client.clone(), "kube-system");
    maps.patch(
        "cilium-config",
        &PatchParams::apply("someone-else").force(),
        &Patch::Apply(json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "cilium-config"},
            "data": {"ipam": "kubernetes"},
        })),
    )
    .await
    .unwrap();
}
