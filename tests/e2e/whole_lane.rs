//! The whole AWS lane in one graph and one run, from an empty account to Flux, and back (see
//! `lane.rs` for the peers and what differs from production).

use engine::Secret;
use engine::{Action, Address, Engine};
use engine_openbao::BaoClient;
use engine_tests::lane::{self, LINEAGE, Peers, ROOT_TOKEN_SECRET, Run, ar, stage};
use engine_tests::moto;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use serde_json::json;
use std::collections::{BTreeSet, HashSet};

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

/// The keys of `eks-aws-0-vars` the reference provides (its Kustomizations substitute them).
const REFERENCE_VARS: [&str; 21] = [
    "cluster_name",
    "cluster_endpoint",
    "cluster_endpoint_full",
    "oidc_provider_arn",
    "oidc_issuer_url",
    "oidc_issuer_host",
    "aws_account_id",
    "region",
    "storage_class",
    "environment",
    "private_domain_name",
    "public_domain_name",
    "identity_provider_url",
    "vpc_id",
    "vpc_cidr_block",
    "openbao_cidr",
    "openbao_snapshot_bucket",
    "openbao_target_ip",
    "llm_hf_token_secret",
    "karpenter_queue_name",
    "route53_public_zone_id",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn whole_aws_lane_from_empty_to_flux_and_back() {
    let p = lane::peers().await;
    let engine = lane::engine(&p, Run::default()).await;

    // One graph: EKS waits for its subnets and IAM role, not for OpenBao; the bootstrap waits
    // for the cluster; OpenBao's configuration for its DNS name.
    let cluster_deps = ancestors(&engine, "aws.eks.cluster.main");
    assert!(cluster_deps.iter().any(|a| a.starts_with("aws.network.subnet")), "{cluster_deps:?}");
    assert!(cluster_deps.iter().any(|a| a.starts_with("aws.eks.iam_role")), "{cluster_deps:?}");
    assert!(!cluster_deps.iter().any(|a| a.starts_with("aws.openbao")), "{cluster_deps:?}");
    let stages: HashSet<&str> =
        engine.graph().resources().map(|r| stage(r.address.as_str())).collect();
    assert_eq!(stages.len(), 6, "every stage is in the one graph: {stages:?}");
    assert!(!stages.contains("other"), "{stages:?}");
    let instance = engine
        .graph()
        .resources()
        .find(|r| r.address.as_str().contains("flux_instance"))
        .expect("the Flux instance is a resource")
        .address
        .to_string();
    assert!(ancestors(&engine, &instance).contains("aws.eks.cluster.main"));
    // The DaemonSets EKS's addons install are parked only once the addons exist.
    for (patch, addon) in [("aws_node_patch", "vpc-cni"), ("kube_proxy_patch", "kube-proxy")] {
        let deps = ancestors(&engine, &format!("aws.bootstrap.k8s_object.{patch}"));
        assert!(deps.contains(&format!("aws.eks.addon[\"{addon}\"]")), "{patch}: {deps:?}");
    }
    // OpenBao is initialised once its servers and their DNS name exist.
    let init_deps = ancestors(&engine, "aws.openbao.config.init");
    for needed in ["aws.openbao.route53_record.api", "aws.openbao.autoscaling_group.server"] {
        assert!(init_deps.contains(needed), "{needed}: {init_deps:?}");
    }

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
    let patched = |name: &str| (format!("aws.bootstrap.k8s_object.{name}"), Action::Update);
    assert_eq!(not_created, [patched("aws_node_patch"), patched("kube_proxy_patch")]);
    let report = engine.apply(&plan).await.unwrap();
    assert!(report.is_success(), "{:#?}", report.failures().collect::<Vec<_>>());
    eprintln!("whole lane: {total} resources created, {} API calls", report.api_calls.total());

    // The DaemonSets EKS installed are patched (parked), not made.
    let client = p.cluster.client().await;
    let daemonsets: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        "kube-system",
        &ar("apps/v1", "DaemonSet", "daemonsets"),
    );
    for name in ["aws-node", "kube-proxy"] {
        let ds = daemonsets.get(name).await.expect("the addon's DaemonSet");
        let pod = &ds.data["spec"]["template"]["spec"];
        assert_eq!(pod["nodeSelector"]["engine/disabled"], "true", "{name} is parked");
        assert_eq!(pod["containers"][0]["image"], format!("registry.example/{name}:1"));
    }

    // Flux is installed and points at clusters/aws-0.
    let instances: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        "flux-system",
        &ar("fluxcd.controlplane.io/v1", "FluxInstance", "fluxinstances"),
    );
    let flux = instances.get("flux").await.expect("the FluxInstance exists");
    assert_eq!(flux.data["spec"]["sync"]["path"], "clusters/aws-0");
    // As the reference hands over to Flux: the `apps` shard, the volume, the patches.
    assert_eq!(flux.data["spec"]["sharding"]["shards"], serde_json::json!(["apps"]));
    assert_eq!(flux.data["spec"]["storage"]["size"], "5Gi");
    assert_eq!(flux.data["spec"]["cluster"]["networkPolicy"], true);
    let patches = flux.data["spec"]["kustomize"]["patches"].as_array().expect("patches");
    assert_eq!(patches.len(), 5, "{patches:?}");

    // Every key the reference's Kustomizations substitute from `eks-aws-0-vars`, filled from
    // the graph's outputs, and the watch label that makes Flux react to its changes.
    let configmaps: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), "flux-system", &ar("v1", "ConfigMap", "configmaps"));
    let vars = configmaps.get("eks-aws-0-vars").await.expect("the vars ConfigMap");
    assert_eq!(vars.metadata.labels.unwrap_or_default()["reconcile.fluxcd.io/watch"], "Enabled");
    let data = &vars.data["data"];
    for key in REFERENCE_VARS {
        let value = data[key].as_str().unwrap_or_else(|| panic!("`{key}` missing: {data}"));
        assert!(!value.is_empty() || key == "openbao_target_ip", "`{key}` is empty");
    }
    let state = engine.state_document().unwrap();
    let cluster = &state.resources["aws.eks.cluster.main"].attributes;
    assert_eq!(data["cluster_endpoint_full"], cluster["endpoint"]);
    assert_eq!(data["oidc_issuer_url"], cluster["oidc_issuer"]);
    assert_eq!(data["vpc_id"], state.resources["aws.network.vpc.main"].id.as_str());
    assert_eq!(data["karpenter_queue_name"], "Karpenter-aws-0");
    assert!(data["aws_account_id"].as_str().unwrap().chars().all(|c| c.is_ascii_digit()));

    // OpenBao: initialised with its credentials in Secrets Manager, and jwt/aws-0 bound to the
    // cluster's issuer: a service-account token of the cluster logs in.
    let sdk = p.moto.sdk_config().await;
    let stored = moto::secret_string(&sdk, ROOT_TOKEN_SECRET).await;
    let stored: serde_json::Value = serde_json::from_str(&stored).expect("a JSON document");
    let token = stored["token"].as_str().expect("the `token` field").to_string();
    let root =
        BaoClient::new(&engine_tests::bao_connection(&p.bao, Some(Secret::new(token.clone()))))
            .unwrap();
    let config =
        root.read("test", "auth/jwt/aws-0/config").await.unwrap().expect("jwt/aws-0 is configured");
    assert_eq!(config["data"]["oidc_discovery_url"], p.cluster.issuer().as_str());
    let jwt = p.cluster.service_account_token("security", "external-secrets", "openbao").await;
    let login = BaoClient::new(&engine_tests::bao_connection(&p.bao, None))
        .unwrap()
        .write("test", "auth/jwt/aws-0/login", &json!({"role": "external-secrets", "jwt": jwt}))
        .await
        .expect("login with the cluster's token")
        .expect("an auth response");
    assert!(login["auth"]["policies"].to_string().contains("external-secrets"), "{login}");

    // Second run: an empty plan and no write anywhere.
    let engine = lane::engine(&p, Run::default()).await;
    let plan = engine.plan().await.unwrap();
    assert!(!plan.has_changes(), "{:#?}", plan.changes);
    let report = engine.apply(&plan).await.unwrap();
    assert_eq!(report.api_calls.mutating(), 0, "{:?}", report.api_calls.mutating_operations());
    eprintln!(
        "whole lane no-op plan: {} resources read in {} API calls",
        plan.refreshed,
        plan.api_calls.total()
    );

    // Drift in every stage is found (the CLI exits 2 on it), then repaired.
    drift_every_stage(&p, &root, &client).await;
    let drift = engine.drift().await.unwrap();
    let found: BTreeSet<&str> = drift.drifted.iter().map(|d| stage(d.address.as_str())).collect();
    assert_eq!(
        found,
        BTreeSet::from(["bootstrap", "eks", "network", "openbao config", "openbao server"]),
        "{:#?}",
        drift.drifted
    );
    let repair = engine.plan().await.unwrap();
    let report = engine.apply(&repair).await.unwrap();
    assert!(report.is_success(), "{:#?}", report.failures().collect::<Vec<_>>());
    let after = engine.drift().await.unwrap();
    assert!(after.is_clean(), "{:#?}", after.drifted);

    // Destroy, in reverse: nothing but the protected lineage is left, and the cluster is empty
    // of what the engine put there.
    let destroy = engine.plan_destroy().await.unwrap();
    let report = engine.apply(&destroy).await.unwrap();
    assert!(report.is_success(), "{:#?}", report.failures().collect::<Vec<_>>());
    let left: Vec<String> = engine.state_document().unwrap().resources.keys().cloned().collect();
    assert_eq!(left, LINEAGE, "only the lineage is kept");
    // The operator's CRDs go with its release, so the kind itself is gone (a 404 on the type).
    match instances.get_opt("flux").await {
        Ok(found) => assert!(found.is_none(), "the FluxInstance is gone"),
        Err(kube::Error::Api(status)) => assert_eq!(status.code, 404, "{status:?}"),
        Err(e) => panic!("reading the FluxInstance: {e}"),
    }

    // Before anything went, OpenBao's snapshot was kept in the lineage's bucket.
    let s3 = aws_sdk_s3::Client::new(&p.moto.sdk_config().await);
    let bucket = "eu-west-3-ogenki-openbao-snapshot";
    let kept = s3.list_objects_v2().bucket(bucket).prefix("snapshots/pre-destroy-").send().await;
    let kept = kept.unwrap();
    assert_eq!(kept.contents().len(), 1, "one snapshot kept before the destroy");
    assert!(kept.contents()[0].size().unwrap_or(0) > 1000, "a raft snapshot");

    // With the confirmation, nothing is left, once the bucket is emptied (every version), as
    // the refusal to delete a bucket holding snapshots asks.
    let versions = s3.list_object_versions().bucket(bucket).send().await.unwrap();
    for v in versions.versions() {
        let call = s3.delete_object().bucket(bucket).key(v.key().unwrap_or_default());
        call.version_id(v.version_id().unwrap_or_default()).send().await.unwrap();
    }
    let confirmed = lane::engine(&p, Run { confirm_protected: true, ..Run::default() }).await;
    let destroy = confirmed.plan_destroy().await.unwrap();
    let report = confirmed.apply(&destroy).await.unwrap();
    assert!(report.is_success(), "{:#?}", report.failures().collect::<Vec<_>>());
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
        .tags(aws_sdk_ec2::types::Tag::builder().key("environment").value("changed").build())
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
    eks.tag_resource().resource_arn(arn).tags("environment", "changed").send().await.unwrap();
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
