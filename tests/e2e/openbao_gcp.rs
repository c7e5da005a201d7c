//! OpenBao on GCP (`specs/gcp.toml`): the lineage on the GCP fake (Cloud KMS key ring and seal
//! key, the snapshot bucket) and OpenBao's configuration against a real OpenBao server whose
//! secret store is the fake's Secret Manager: the GCP intermediate issued into Secret Manager by
//! `engine pki intermediate specs/gcp.toml`, init with the root token and recovery keys under
//! the reference's names, a certificate of role `ogenki` chaining to the offline root, `jwt/gcp-0`
//! accepting a real service-account token, a no-op second run, drift repaired, secrets kept out
//! of state and plans, a destroy that keeps the lineage, and a new server rehydrated from the
//! newest raft snapshot in the bucket.

use engine::spec::SpecSource;
use engine::{DriftStatus, Engine, LocalBackend, Secret, Value};
use engine_lanes::{GcpSecretManager, LaneBuilder};
use engine_openbao::{BaoClient, ClusterIssuer, SecretSource};
use engine_pki as pki;
use engine_tests::{BaoServer, GcpFake, KubeCluster, Seal, engine_command, text, workspace};
use serde_json::{Value as Json, json};
use std::path::Path;
use std::time::Duration;

const PROJECT: &str = "ogenki-435905";
const BUCKET: &str = "ogenki-435905-ogenki-openbao-snapshot";
const ROOT_TOKEN: &str = "openbao-priv-gcp-root-token";
const LINEAGE: [&str; 8] = [
    "gcp.openbao.iam_member[\"drill-snapshots\"]",
    "gcp.openbao.iam_member[\"transfer-agent-snapshots\"]",
    "gcp.openbao.kms_crypto_key.seal",
    "gcp.openbao.kms_key_ring.seal",
    "gcp.openbao.service_account.drill",
    "gcp.openbao.service_account.node",
    "gcp.openbao.storage_bucket.snapshots",
    "gcp.openbao.storage_transfer_agent",
];
const REGION: &str = "europe-west4";

struct Rig {
    fake: GcpFake,
    bao: BaoServer,
    /// The seal's transit server, and what a new server of the lineage boots with.
    _transit: BaoServer,
    seal: Seal,
    leaf: (String, Secret),
    cluster: KubeCluster,
    root: pki::RootCa,
    dir: tempfile::TempDir,
}

impl Rig {
    /// The peers, and what the platform team does once: the offline root, and the GCP
    /// intermediate in Secret Manager through the `engine` binary.
    async fn start() -> Rig {
        let fake = GcpFake::start();
        let cluster = KubeCluster::start(1);
        let dir = tempfile::tempdir().unwrap();
        let root = pki::init_root(&dir.path().join("pki")).unwrap();
        let overlay = dir.path().join("overlay.toml");
        std::fs::write(&overlay, overlay_text(dir.path())).unwrap();
        let out = engine_command(
            "http://127.0.0.1:9",
            &[
                "pki",
                "intermediate",
                workspace().join("specs/gcp.toml").to_str().unwrap(),
                "--overlay",
                overlay.to_str().unwrap(),
                "--root",
                dir.path().join("pki").to_str().unwrap(),
            ],
        )
        .env("ENGINE_GCP_ENDPOINT", fake.endpoint())
        .output()
        .unwrap();
        assert!(out.status.success(), "{}", text(&out));
        assert!(
            text(&out)
                .contains("Issued the intermediate CA into `openbao-priv-gcp-intermediate-ca`")
        );
        // OpenBao as its servers boot: uninitialised, auto-unsealed, TLS from the intermediate.
        let store = GcpSecretManager::for_config(&engine_gcp::GcpConfig {
            project: PROJECT.into(),
            region: "europe-west4".into(),
            endpoint: Some(fake.endpoint()),
        })
        .await;
        let bundle = store.get("openbao-priv-gcp-intermediate-ca").await.unwrap().unwrap();
        let inter = pki::IntermediateBundle::from_bundle_pem(&bundle).unwrap();
        let leaf = pki::server_leaf(&inter, &["localhost"]).unwrap();
        let leaf = (leaf.chain_pem.clone(), leaf.key_pem().clone());
        let transit = BaoServer::transit_provider("autounseal").await;
        let seal = Seal::Transit {
            address: transit.address.clone(),
            token: transit.root_token.clone().unwrap(),
            key: "autounseal".into(),
        };
        let bao = BaoServer::raft(&seal, &leaf.0, leaf.1.expose(), &root.cert_pem).await;
        Rig { fake, bao, _transit: transit, seal, leaf, cluster, root, dir }
    }

    /// A new server of the same lineage: same seal, same TLS, empty storage.
    async fn new_server(&self) -> BaoServer {
        BaoServer::raft(&self.seal, &self.leaf.0, self.leaf.1.expose(), &self.root.cert_pem).await
    }

    /// Puts `bytes` in the snapshot bucket as `name`, as the snapshot job does.
    async fn upload(&self, name: &str, bytes: Vec<u8>) {
        let url = format!(
            "{}/upload/storage/v1/b/{BUCKET}/o?uploadType=media&name={name}",
            self.fake.endpoint()
        );
        let answer = reqwest::Client::new().post(url).body(bytes).send().await.unwrap();
        assert!(answer.status().is_success(), "{}", answer.text().await.unwrap_or_default());
    }

    fn store_config(&self) -> engine_gcp::GcpConfig {
        engine_gcp::GcpConfig {
            project: PROJECT.into(),
            region: "europe-west4".into(),
            endpoint: Some(self.fake.endpoint()),
        }
    }

    /// The lane of `specs/gcp.toml`, OpenBao at the test's server, its JWT mount trusting the
    /// test's API server; what runs inside gcp-0 left out.
    async fn engine(&self, bao: &BaoServer) -> Engine {
        self.engine_with(bao, "").await
    }

    /// [`Rig::engine`] with `more` added to the overlay.
    async fn engine_with(&self, bao: &BaoServer, more: &str) -> Engine {
        let overlay = format!("{}\n{more}", overlay_text(self.dir.path()));
        let spec = SpecSource::from_file(&workspace().join("specs/gcp.toml"))
            .unwrap()
            .with_overlay(SpecSource::from_text("overlay.toml", "overlay", &overlay))
            .unwrap();
        let lane = LaneBuilder::new(&spec)
            .gcp_endpoint(&self.fake.endpoint())
            .openbao_address(&bao.address, Some(self.root.cert_pem.clone()))
            .openbao_ready_timeout(Duration::from_secs(60))
            .state_path(&self.dir.path().join("gcp.state.json"))
            .cluster_issuer(ClusterIssuer {
                section: "gke",
                url: Value::from(self.cluster.issuer().as_str()),
                ca_pem: Some(Value::from(self.cluster.ca_pem().as_str())),
            })
            .build()
            .await;
        lane.add_to(Engine::builder().spec(spec))
            .state(LocalBackend::new(self.dir.path().join("gcp.state.json")))
            .selection(engine::Selection::decide(Some("gcp"), &[], &|_| None).unwrap())
            .exclude("gcp.bootstrap")
            .exclude("gcp.access")
            .retry_backoff(Duration::from_millis(100))
            .build()
            .unwrap_or_else(|e| panic!("{e:?}"))
    }

    async fn secret(&self, name: &str) -> Option<String> {
        let store = GcpSecretManager::for_config(&self.store_config()).await;
        store.get(name).await.unwrap().map(|s| s.expose().to_string())
    }

    async fn get(&self, path: &str) -> (u16, Json) {
        let answer = reqwest::get(format!("{}{path}", self.fake.endpoint())).await.unwrap();
        let status = answer.status().as_u16();
        (status, answer.json().await.unwrap_or(Json::Null))
    }
}

fn overlay_text(dir: &Path) -> String {
    format!(
        "[openbao]\nca_file = \"{}\"\n\n[openbao.tls]\ndns_names = [\"localhost\"]\n",
        dir.join("pki/root-ca.crt").display()
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn openbao_on_gcp_from_empty_to_a_destroy_that_keeps_the_lineage() {
    let rig = Rig::start().await;
    let engine = rig.engine(&rig.bao).await;

    let plan = engine.plan().await.unwrap();
    let planned: Vec<String> = plan.actions().map(|c| c.address.to_string()).collect();
    for a in LINEAGE {
        assert!(planned.iter().any(|p| p == a), "{a} planned: {planned:?}");
    }
    assert!(planned.iter().any(|p| p == "gcp.openbao.config.init"));
    // The snapshot mirror needs the shared spec's AWS role: alone, the spec leaves it out.
    assert_eq!(plan.left_out.len(), 1, "{:?}", plan.left_out);
    let (address, why) = &plan.left_out[0];
    assert_eq!(address.as_str(), "gcp.openbao.storage_transfer_job.mirror");
    assert!(why.contains("spec `aws-gcp-federation` is not in this run"), "{why}");
    let report = engine.apply(&plan).await.unwrap();
    assert!(report.is_success(), "{:#?}", report.failures().collect::<Vec<_>>());

    // The lineage in the fake, as the reference names it.
    let ring = format!("/v1/projects/{PROJECT}/locations/europe-west4/keyRings/openbao-dev");
    assert_eq!(rig.get(&ring).await.0, 200);
    let (status, key) = rig.get(&format!("{ring}/cryptoKeys/openbao-unseal")).await;
    assert_eq!(status, 200, "{key}");
    assert_eq!(key["purpose"], "ENCRYPT_DECRYPT");
    assert_eq!(key["labels"]["engine-managed-by"], "engine");
    let (status, bucket) = rig.get(&format!("/storage/v1/b/{BUCKET}")).await;
    assert_eq!(status, 200, "{bucket}");
    assert_eq!(bucket["versioning"]["enabled"], true);
    assert_eq!(bucket["iamConfiguration"]["uniformBucketLevelAccess"]["enabled"], true);
    assert_eq!(bucket["lifecycle"]["rule"][0]["condition"]["age"], 120);
    // The restore drill's identity reads the snapshots.
    let (status, policy) = rig.get(&format!("/storage/v1/b/{BUCKET}/iam")).await;
    assert_eq!(status, 200, "{policy}");
    let viewers = policy["bindings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["role"] == "roles/storage.objectViewer")
        .unwrap_or_else(|| panic!("{policy}"));
    assert_eq!(
        viewers["members"],
        json!([format!("serviceAccount:openbao-drill@{PROJECT}.iam.gserviceaccount.com")])
    );
    // The servers: one node from a template booting OpenBao sealed by the lineage's key, with
    // the grants it needs, behind an internal load balancer named in the private zone.
    let compute = format!("/compute/v1/projects/{PROJECT}");
    let (status, group) =
        rig.get(&format!("{compute}/regions/{REGION}/instanceGroupManagers/openbao-dev")).await;
    assert_eq!(status, 200, "{group}");
    assert_eq!(group["targetSize"], 1);
    let template_name = group["instanceTemplate"].as_str().unwrap().rsplit('/').next().unwrap();
    let (_, template) =
        rig.get(&format!("{compute}/global/instanceTemplates/{template_name}")).await;
    let props = &template["properties"];
    assert_eq!(props["machineType"], "e2-small");
    assert_eq!(
        props["serviceAccounts"][0]["email"],
        format!("openbao-node@{PROJECT}.iam.gserviceaccount.com")
    );
    assert_eq!(props["disks"][1]["deviceName"], "openbao-data");
    let script = props["metadata"]["items"][0]["value"].as_str().unwrap();
    assert!(
        script.contains("key_ring   = \"openbao-dev\"") && script.contains("OPENBAO_VERSION=2.6.2")
    );
    let (_, key_policy) = rig.get(&format!("{ring}/cryptoKeys/openbao-unseal:getIamPolicy")).await;
    assert!(
        key_policy.to_string().contains("roles/cloudkms.cryptoKeyEncrypterDecrypter"),
        "{key_policy}"
    );
    let (_, rule) =
        rig.get(&format!("{compute}/regions/{REGION}/forwardingRules/openbao-dev")).await;
    assert_eq!(rule["ports"], json!(["8200"]));
    let (_, record) = rig
        .get(&format!("/dns/v1/projects/{PROJECT}/managedZones/priv-gcp-ogenki-io/rrsets/bao.priv.gcp.ogenki.io./A"))
        .await;
    assert_eq!(record["rrdatas"], json!([rule["IPAddress"]]), "{record}");
    for firewall in ["openbao-dev-health-check", "openbao-dev-api"] {
        assert_eq!(rig.get(&format!("{compute}/global/firewalls/{firewall}")).await.0, 200);
    }

    // Init: the root token and recovery keys in Secret Manager under the reference's names.
    let token = rig.secret(ROOT_TOKEN).await.expect("the root token is in Secret Manager");
    assert!(rig.secret("openbao-priv-gcp-recovery-keys").await.is_some());
    let connection = |token: Option<Secret>| engine_tests::bao_connection(&rig.bao, token);
    let client = BaoClient::new(&connection(Some(Secret::new(token.clone())))).unwrap();

    // A certificate of role `ogenki` chains to the offline root.
    let issued = client
        .write(
            "test",
            "pki_private_issuer/issue/ogenki",
            &json!({"common_name": "web.priv.gcp.ogenki.io"}),
        )
        .await
        .unwrap()
        .unwrap();
    let chain: Vec<&str> = issued["data"]["ca_chain"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    pki::verify_server_chain(
        issued["data"]["certificate"].as_str().unwrap(),
        &chain,
        &rig.root.cert_pem,
        Some("web.priv.gcp.ogenki.io"),
    )
    .expect("the certificate chains to the offline root");

    // jwt/gcp-0 takes a service-account token of the cluster.
    let jwt = rig.cluster.service_account_token("security", "external-secrets", "openbao").await;
    let login = BaoClient::new(&connection(None))
        .unwrap()
        .write("test", "auth/jwt/gcp-0/login", &json!({"role": "external-secrets", "jwt": jwt}))
        .await
        .expect("login with the cluster's token")
        .expect("an auth response");
    assert!(login["auth"]["policies"].to_string().contains("external-secrets"), "{login}");

    // No secret in the state or the plan.
    let state_text = std::fs::read_to_string(rig.dir.path().join("gcp.state.json")).unwrap();
    assert!(!state_text.contains(&token), "the root token is not in the state");
    assert!(!format!("{plan:?}").contains(&token));

    // Second run: nothing to do, no write anywhere.
    let again = engine.plan().await.unwrap();
    assert!(!again.has_changes(), "{:#?}", again.actions().collect::<Vec<_>>());
    // The seal key's two grants: one read of its policy.
    let calls = &again.api_calls.by_operation;
    assert_eq!(calls.get("cloudkms:GetIamPolicy"), Some(&1), "{calls:?}");
    let noop = engine.apply(&again).await.unwrap();
    assert_eq!(noop.api_calls.mutating(), 0, "{:?}", noop.api_calls.mutating_operations());

    // Drift in the lineage and in OpenBao is found, then repaired.
    let update = json!({"lifecycle": {"rule": []}, "labels": bucket["labels"]});
    let patched = reqwest::Client::new()
        .patch(format!("{}/storage/v1/b/{BUCKET}", rig.fake.endpoint()))
        .json(&update)
        .send()
        .await
        .unwrap();
    assert!(patched.status().is_success());
    client.delete("test", "sys/policy/snapshot").await.unwrap();
    let firewall = format!("{}{compute}/global/firewalls/openbao-dev-api", rig.fake.endpoint());
    let widened = json!({"sourceRanges": ["0.0.0.0/0"]});
    let patched = reqwest::Client::new().patch(firewall).json(&widened).send().await.unwrap();
    assert!(patched.status().is_success());
    let drift = engine.drift().await.unwrap();
    let drifted: Vec<(String, String)> = drift
        .drifted
        .iter()
        .flat_map(|d| match &d.status {
            DriftStatus::Modified { fields } => {
                fields.iter().map(|f| (d.address.to_string(), f.name.clone())).collect::<Vec<_>>()
            }
            DriftStatus::Deleted => vec![(d.address.to_string(), "deleted".into())],
        })
        .collect();
    assert!(
        drifted.contains(&("gcp.openbao.storage_bucket.snapshots".into(), "lifecycle".into())),
        "{drifted:?}"
    );
    assert!(drifted.iter().any(|(a, _)| a.contains("policy[\"snapshot\"]")), "{drifted:?}");
    assert!(
        drifted.contains(&("gcp.openbao.firewall[\"api\"]".into(), "source_ranges".into())),
        "{drifted:?}"
    );
    let (_, repaired) = engine.plan_and_apply().await.unwrap();
    assert!(repaired.is_success(), "{:#?}", repaired.failures().collect::<Vec<_>>());
    assert!(engine.drift().await.unwrap().is_clean());
    assert_eq!(
        rig.get(&format!("/storage/v1/b/{BUCKET}")).await.1["lifecycle"]["rule"][0]["condition"]["age"],
        120
    );

    // A new machine type: a new template, the group rolls to it, the old template goes.
    let bigger =
        rig.engine_with(&rig.bao, "[openbao.server]\nmachine_type = \"e2-medium\"\n").await;
    let plan = bigger.plan().await.unwrap();
    let changed: Vec<String> = plan.actions().map(|c| c.address.to_string()).collect();
    assert_eq!(changed, ["gcp.openbao.instance_group.server"], "only the group changes");
    let report = bigger.apply(&plan).await.unwrap();
    assert!(report.is_success(), "{:#?}", report.failures().collect::<Vec<_>>());
    let group_url = format!("{compute}/regions/{REGION}/instanceGroupManagers/openbao-dev");
    let rolled = rig.get(&group_url).await.1["instanceTemplate"].as_str().unwrap().to_string();
    assert!(!rolled.ends_with(template_name), "a new template: {rolled}");
    let (_, templates) = rig.get(&format!("{compute}/global/instanceTemplates")).await;
    let names: Vec<&str> = templates["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names.len(), 1, "the old template is gone: {names:?}");
    assert!(rolled.ends_with(names[0]));
    assert!(!bigger.plan().await.unwrap().has_changes());

    // What the lineage keeps: a secret, and the snapshot job's raft snapshots in the bucket
    // (an older one and one outside the prefix beside it).
    client
        .write("test", "platform/data/lineage", &json!({"data": {"proof": "from-a"}}))
        .await
        .unwrap();
    let snapshot = client.read_bytes("test", "sys/storage/raft/snapshot").await.unwrap();
    rig.upload("snapshots/older.snap", b"not the newest".to_vec()).await;
    tokio::time::sleep(Duration::from_millis(1100)).await;
    rig.upload("snapshots/newest.snap", snapshot).await;
    rig.upload("elsewhere/ignored.snap", b"outside the prefix".to_vec()).await;

    // Destroy keeps the lineage, and what it needs.
    let destroy = engine.plan_destroy().await.unwrap();
    let kept: Vec<String> = destroy.kept.iter().map(|a| a.to_string()).collect();
    for a in LINEAGE {
        assert!(kept.contains(&a.to_string()), "{a} kept: {kept:?}");
    }
    // kv mounts are forgotten, never disabled: their secrets stay.
    let mut forgotten: Vec<String> = destroy
        .actions()
        .filter(|c| c.action == engine::Action::Forget)
        .map(|c| c.address.to_string())
        .collect();
    forgotten.sort();
    let kv = ["agents", "apps", "lineage", "platform"];
    let expected: Vec<String> =
        kv.iter().map(|m| format!("gcp.openbao.config.mount[\"{m}\"]")).collect();
    assert_eq!(forgotten, expected);
    let report = engine.apply(&destroy).await.unwrap();
    assert!(report.is_success(), "{:#?}", report.failures().collect::<Vec<_>>());
    // Before anything went, OpenBao's snapshot was kept in the bucket.
    let (_, listed) =
        rig.get(&format!("/storage/v1/b/{BUCKET}/o?prefix=snapshots/pre-destroy-")).await;
    let snapshots = listed["items"].as_array().map(Vec::len).unwrap_or(0);
    assert_eq!(snapshots, 1, "one snapshot kept before the destroy: {listed}");
    let kept = client.read_data("test", "platform/data/lineage").await.unwrap();
    assert_eq!(kept.unwrap().pointer("/data/proof"), Some(&json!("from-a")), "kv data survives");
    let mounts = client.read("test", "sys/mounts").await.unwrap().unwrap();
    assert!(mounts["data"].get("platform/").is_some(), "{mounts}");
    assert!(mounts["data"].get("pki_private_issuer/").is_none(), "the pki mount goes: {mounts}");
    assert_eq!(rig.get(&format!("/storage/v1/b/{BUCKET}")).await.0, 200, "the bucket stays");
    assert_eq!(rig.get(&ring).await.0, 200, "the key ring stays");
    let gone =
        rig.get(&format!("{compute}/regions/{REGION}/instanceGroupManagers/openbao-dev")).await;
    assert_eq!(gone.0, 404, "the servers go");
    let (_, templates) = rig.get(&format!("{compute}/global/instanceTemplates")).await;
    assert!(templates["items"].as_array().is_none_or(|t| t.is_empty()), "{templates}");
    let left: Vec<String> = engine.state_document().unwrap().resources.keys().cloned().collect();
    assert_eq!(left, LINEAGE, "only the lineage is left in the state");

    // Rebuild on a new server: it restores the newest snapshot in the bucket, the lineage's
    // credentials stay those in Secret Manager, and the secret is back.
    let b = rig.new_server().await;
    let rebuilt = rig.engine(&b).await;
    let report = rebuilt.plan_and_apply().await.unwrap().1;
    assert!(report.is_success(), "{:#?}\n{}", report.failures().collect::<Vec<_>>(), b.log());
    assert_eq!(rig.secret(ROOT_TOKEN).await.as_deref(), Some(token.as_str()));
    let back = BaoClient::new(&engine_tests::bao_connection(&b, Some(Secret::new(token.clone()))))
        .unwrap()
        .read_data("test", "platform/data/lineage")
        .await
        .unwrap()
        .expect("the secret is back");
    assert_eq!(back.pointer("/data/proof"), Some(&json!("from-a")));
    assert!(!rebuilt.plan().await.unwrap().has_changes());
}
