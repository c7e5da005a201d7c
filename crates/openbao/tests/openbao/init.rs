//! `openbao_init` against real non-dev servers: raft storage, TLS from the offline PKI, and
//! either a `transit` seal served by a dev server (auto-unseal, recovery shares) or Shamir.

use super::support::{Connect, assert_no_secret, engine};
use engine::{Action, DriftStatus, Plan, Secret};
use engine_openbao::{
    BaoClient, HookError, MemorySecrets, OpenBao, OpenBaoProvider, Snapshot, SnapshotSource,
    StoredTokenConnector,
};
use engine_pki as pki;
use engine_testpeers::{BaoServer, Seal};
use serde_json::{Value as Json, json};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub(super) const PREFIX: &str = "openbao/test";

pub(super) fn section() -> String {
    format!(
        r#"
[openbao.init]
secret_prefix = "{PREFIX}"

[openbao.mounts.platform]
type = "kv-v2"

[openbao.policies.inline]
reader = 'path "platform/data/*" {{ capabilities = ["read"] }}'
"#
    )
}

/// TLS for `localhost` from a fresh offline PKI: (leaf chain, leaf key, root certificate).
pub(super) fn tls(dir: &std::path::Path) -> (String, Secret, String) {
    let root = pki::init_root(dir).unwrap();
    let inter = pki::intermediate(&root, "test").unwrap();
    let leaf = pki::server_leaf(&inter, &["localhost"]).unwrap();
    (leaf.chain_pem.clone(), leaf.key_pem().clone(), root.cert_pem)
}

/// The newest snapshot of the lineage, held in memory.
struct OneSnapshot(Vec<u8>);

#[async_trait::async_trait]
impl SnapshotSource for OneSnapshot {
    async fn newest(&self) -> Result<Option<Snapshot>, HookError> {
        Ok(Some(Snapshot { name: "snapshots/openbao-test.snap".into(), data: self.0.clone() }))
    }
}

pub(super) fn provider(
    server: &BaoServer,
    secrets: &Arc<MemorySecrets>,
    snapshot: Option<Vec<u8>>,
) -> Arc<OpenBaoProvider> {
    let mut builder = OpenBao::builder(Arc::new(StoredTokenConnector {
        address: server.address.clone(),
        ca_bundle: server.ca_bundle.clone(),
        source: secrets.clone(),
        token_secret: engine_openbao::SecretRef::parse(&format!("{PREFIX}/root-token")),
        route: None,
    }))
    .secret_sink(secrets.clone())
    .secret_source(secrets.clone());
    if let Some(s) = snapshot {
        builder = builder.snapshots(Arc::new(OneSnapshot(s)));
    }
    super::support::provider(builder.build())
}

fn creates(plan: &Plan) -> Vec<String> {
    plan.actions().filter(|c| c.action == Action::Create).map(|c| c.address.to_string()).collect()
}

/// Waits until the server reports itself unsealed (auto-unseal after a restart).
async fn wait_unsealed(server: &BaoServer) {
    let client = BaoClient::new(&server.connection(None)).unwrap();
    let started = Instant::now();
    loop {
        if let Ok(200) = client.status("test", "sys/health").await {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "not unsealed after a restart:\n{}",
            server.log()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_unseal_init_restart_and_rehydrate_from_a_snapshot() {
    let started = Instant::now();
    let work = tempfile::tempdir().unwrap();
    let transit = BaoServer::transit_provider("autounseal").await;
    let seal = Seal::Transit {
        address: transit.address.clone(),
        token: transit.root_token.clone().unwrap(),
        key: "autounseal".into(),
    };
    let (chain, key, ca) = tls(&work.path().join("pki"));
    let mut a = BaoServer::raft(&seal, &chain, key.expose(), &ca).await;
    let secrets = Arc::new(MemorySecrets::new());
    let mut outputs = Vec::new();

    // 1. A fresh server: the plan creates init and the configuration (read as absent, since
    //    nothing exists inside an uninitialised OpenBao), the apply does it.
    let engine_a =
        engine(provider(&a, &secrets, None), &section(), work.path(), &work.path().join("a"));
    let plan = engine_a.plan().await.unwrap();
    assert_eq!(
        creates(&plan),
        vec![
            "aws.openbao.config.contents",
            "aws.openbao.config.init",
            "aws.openbao.config.mount[\"platform\"]",
            "aws.openbao.config.policy[\"reader\"]",
        ]
    );
    let t = Instant::now();
    let report = engine_a.apply(&plan).await.unwrap();
    assert!(report.is_success(), "{report:#?}\n{}", a.log());
    eprintln!("init + configuration applied in {:?}", t.elapsed());
    outputs.push(format!("{plan:?}"));
    outputs.push(serde_json::to_string(&report).unwrap());

    // Recovery shares 1/1 with the transit seal; credentials only in the secret store.
    assert_eq!(
        secrets.names(),
        vec![format!("{PREFIX}/recovery-keys"), format!("{PREFIX}/root-token")]
    );
    let root_token = secrets.value(&format!("{PREFIX}/root-token")).unwrap();
    let recovery = secrets.value(&format!("{PREFIX}/recovery-keys")).unwrap();
    let recovery_keys: Vec<String> = serde_json::from_str(recovery.expose()).unwrap();
    assert_eq!(recovery_keys.len(), 1);
    let state = engine_a.state_document().unwrap();
    let init = state.get("aws.openbao.config.init").unwrap();
    assert_eq!(init.attributes["recovery_seal"], json!(true));
    assert_eq!(init.attributes["seal_type"], json!("transit"));
    assert_eq!(init.attributes["shares"], json!(1));
    assert_eq!(init.attributes["threshold"], json!(1));
    assert_eq!(init.attributes["sealed"], json!(false));

    // 2. Nothing left to do.
    let plan = engine_a.plan().await.unwrap();
    assert!(!plan.has_changes(), "{plan:#?}");
    eprintln!("no-op plan on the raft server: {:?}", plan.api_calls.by_operation);

    // The root token works; write a secret the snapshot will carry.
    let admin = a.client(root_token.clone());
    admin
        .write("test", "platform/data/lineage", &json!({"data": {"proof": "from-a"}}))
        .await
        .unwrap();

    // 3. A crash and a restart: the transit seal unseals it without anyone's help.
    a.restart().await;
    wait_unsealed(&a).await;
    let plan = engine_a.plan().await.unwrap();
    assert!(!plan.has_changes(), "{plan:#?}");
    assert!(engine_a.drift().await.unwrap().is_clean());
    let secret = admin.read_data("test", "platform/data/lineage").await.unwrap().unwrap();
    assert_eq!(secret.pointer("/data/proof"), Some(&json!("from-a")));
    let snapshot = admin.read_bytes("test", "sys/storage/raft/snapshot").await.unwrap();
    assert!(snapshot.len() > 1000);
    outputs.push(std::fs::read_to_string(work.path().join("a/aws.state.json")).unwrap());

    // 4. Rehydrate: a new server of the same lineage (same seal key, same secret store) restores
    //    the newest snapshot instead of starting empty.
    let b = BaoServer::raft(&seal, &chain, key.expose(), &ca).await;
    let engine_b = engine(
        provider(&b, &secrets, Some(snapshot)),
        &section(),
        work.path(),
        &work.path().join("b"),
    );
    let plan = engine_b.plan().await.unwrap();
    assert_eq!(creates(&plan).len(), 4);
    let t = Instant::now();
    let report = engine_b.apply(&plan).await.unwrap();
    assert!(report.is_success(), "{report:#?}\n{}", b.log());
    eprintln!("rehydrate from snapshot applied in {:?}", t.elapsed());
    outputs.push(serde_json::to_string(&report).unwrap());
    // The throw-away credentials of B's own init were not stored: the lineage's remain.
    assert_eq!(secrets.names().len(), 2);
    assert_eq!(secrets.value(&format!("{PREFIX}/root-token")).unwrap(), root_token);
    assert_eq!(secrets.value(&format!("{PREFIX}/recovery-keys")).unwrap(), recovery);
    // B serves A's data to A's root token.
    let secret = b
        .client(root_token.clone())
        .read_data("test", "platform/data/lineage")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(secret.pointer("/data/proof"), Some(&json!("from-a")));
    assert!(!engine_b.plan().await.unwrap().has_changes());
    outputs.push(std::fs::read_to_string(work.path().join("b/aws.state.json")).unwrap());

    let recovery_key = Secret::new(recovery_keys[0].clone());
    assert_no_secret(
        "plans, reports and states",
        &outputs.join("\n"),
        &[("root token", &root_token), ("recovery key", &recovery_key), ("TLS key", &key)],
    );
    eprintln!("auto-unseal test: {:?}", started.elapsed());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shamir_init_unseals_and_a_sealed_server_is_drift() {
    let started = Instant::now();
    let work = tempfile::tempdir().unwrap();
    let (chain, key, ca) = tls(&work.path().join("pki"));
    let mut server = BaoServer::raft(&Seal::Shamir, &chain, key.expose(), &ca).await;
    let secrets = Arc::new(MemorySecrets::new());
    let spec = format!("[openbao.init]\nsecret_prefix = \"{PREFIX}\"\n");
    let engine = engine(provider(&server, &secrets, None), &spec, work.path(), work.path());

    let (_, report) = engine.plan_and_apply().await.unwrap();
    assert!(report.is_success(), "{report:#?}\n{}", server.log());
    // Without an auto-unseal seal: unseal shares, and the server was unsealed with them.
    assert_eq!(
        secrets.names(),
        vec![format!("{PREFIX}/root-token"), format!("{PREFIX}/unseal-keys")]
    );
    let init = engine.state_document().unwrap();
    let init = init.get("aws.openbao.config.init").unwrap();
    assert_eq!(init.attributes["recovery_seal"], json!(false));
    assert_eq!(init.attributes["seal_type"], json!("shamir"));
    assert_eq!(init.attributes["sealed"], json!(false));

    // After a restart a Shamir server stays sealed: drift on `sealed`, repaired by an update
    // that unseals with the stored keys.
    server.restart().await;
    // What a sealed server holds cannot be read: a plan that needs it stops and says how to
    // unseal, rather than reading it as empty.
    let other = tempfile::tempdir().unwrap();
    let with_mount = format!("{spec}\n[openbao.mounts.apps]\ntype = \"kv-v2\"\n");
    let reader = crate::support::engine(
        provider(&server, &secrets, None),
        &with_mount,
        other.path(),
        other.path(),
    );
    let err = format!("{:?}", reader.plan().await.unwrap_err());
    assert!(err.contains("is sealed") && err.contains("--target"), "{err}");
    let drift = engine.drift().await.unwrap();
    assert_eq!(drift.drifted.len(), 1, "{drift:#?}");
    match &drift.drifted[0].status {
        DriftStatus::Modified { fields } => {
            assert_eq!(fields.len(), 1);
            assert_eq!(fields[0].name, "sealed");
            assert_eq!((&fields[0].applied, &fields[0].live), (&json!(false), &json!(true)));
        }
        other => panic!("{other:?}"),
    }
    let plan = engine.plan().await.unwrap();
    let actions: Vec<(String, Action)> =
        plan.actions().map(|c| (c.address.to_string(), c.action)).collect();
    assert_eq!(actions, vec![("aws.openbao.config.init".to_string(), Action::Update)]);
    let report = engine.apply(&plan).await.unwrap();
    assert!(report.is_success(), "{report:#?}");
    assert!(engine.drift().await.unwrap().is_clean());
    let token = secrets.value(&format!("{PREFIX}/root-token")).unwrap();
    let health = server.client(token.clone()).read("test", "sys/health").await.unwrap().unwrap();
    assert_eq!(health["sealed"], Json::Bool(false));

    let unseal = secrets.value(&format!("{PREFIX}/unseal-keys")).unwrap();
    let state = std::fs::read_to_string(work.path().join("aws.state.json")).unwrap();
    let keys: Vec<String> = serde_json::from_str(unseal.expose()).unwrap();
    assert_no_secret(
        "state and report",
        &format!("{state}\n{}", serde_json::to_string(&report).unwrap()),
        &[("root token", &token), ("unseal key", &Secret::new(keys[0].clone()))],
    );
    eprintln!("shamir test: {:?}", started.elapsed());
}

/// An `ha` server gets Raft autopilot as the reference sets it; a change made by hand is drift.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn raft_autopilot_as_the_reference_sets_it_for_ha_servers() {
    let work = tempfile::tempdir().unwrap();
    let (chain, key, ca) = tls(&work.path().join("pki"));
    let server = BaoServer::raft(&Seal::Shamir, &chain, key.expose(), &ca).await;
    let secrets = Arc::new(MemorySecrets::new());
    let spec = format!(
        "[openbao.server]\nmode = \"ha\"\n\n[openbao.init]\nsecret_prefix = \"{PREFIX}\"\n"
    );
    let engine = engine(provider(&server, &secrets, None), &spec, work.path(), work.path());
    let plan = engine.plan().await.unwrap();
    assert!(creates(&plan).contains(&"aws.openbao.config.raft_autopilot".to_string()));
    let report = engine.apply(&plan).await.unwrap();
    assert!(report.is_success(), "{report:#?}\n{}", server.log());
    let token = secrets.value(&format!("{PREFIX}/root-token")).unwrap();
    let client = server.client(token);
    let path = "sys/storage/raft/autopilot/configuration";
    let config = client.read("test", path).await.unwrap().unwrap();
    let data = &config["data"];
    assert_eq!(data["cleanup_dead_servers"], json!(true), "{config}");
    assert_eq!(data["min_quorum"], json!(3), "{config}");
    assert_eq!(data["dead_server_last_contact_threshold"], json!("30m0s"), "{config}");
    assert!(!engine.plan().await.unwrap().has_changes());

    // Someone turns the cleanup off: drift, repaired by an update.
    client.write("test", path, &json!({"cleanup_dead_servers": false})).await.unwrap();
    let drift = engine.drift().await.unwrap();
    let fields: Vec<String> = drift
        .drifted
        .iter()
        .flat_map(|d| match &d.status {
            DriftStatus::Modified { fields } => fields.iter().map(|f| f.name.clone()).collect(),
            DriftStatus::Deleted => vec![],
        })
        .collect();
    assert_eq!(fields, ["cleanup_dead_servers"], "{drift:#?}");
    let (_, report) = engine.plan_and_apply().await.unwrap();
    assert!(report.is_success(), "{report:#?}");
    assert!(engine.drift().await.unwrap().is_clean());
}

/// How long a fault lasts (`ENGINE_FAULT_OUTAGE_SECONDS`, 60 by default; the soak sets more).
fn outage() -> Duration {
    let seconds = std::env::var("ENGINE_FAULT_OUTAGE_SECONDS").map_or(60, |s| s.parse().unwrap());
    Duration::from_secs(seconds)
}

/// A server sealed under an apply, for a minute, then unsealed (by an operator, or by itself
/// with an auto-unseal seal): the writes wait it out instead of failing, and nothing is lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_sealed_for_a_minute_under_an_apply_is_waited_out() {
    let work = tempfile::tempdir().unwrap();
    let (chain, key, ca) = tls(&work.path().join("pki"));
    let server = BaoServer::raft(&Seal::Shamir, &chain, key.expose(), &ca).await;
    let secrets = Arc::new(MemorySecrets::new());
    let first = engine(provider(&server, &secrets, None), &section(), work.path(), work.path());
    let (_, report) = first.plan_and_apply().await.unwrap();
    assert!(report.is_success(), "{report:#?}\n{}", server.log());

    // Planned while unsealed, applied while sealed.
    let more = format!("{}\n[openbao.mounts.apps]\ntype = \"kv-v2\"\n", section());
    let engine = engine(provider(&server, &secrets, None), &more, work.path(), work.path());
    let plan = engine.plan().await.unwrap();
    assert_eq!(creates(&plan), ["aws.openbao.config.mount[\"apps\"]"]);
    let token = secrets.value(&format!("{PREFIX}/root-token")).unwrap();
    let admin = server.client(token);
    admin.put("test", "sys/seal", &json!({})).await.unwrap();
    let sealed_at = Instant::now();
    let keys = secrets.value(&format!("{PREFIX}/unseal-keys")).unwrap();
    let keys: Vec<String> = serde_json::from_str(keys.expose()).unwrap();
    let operator = admin.clone();
    let unseal = tokio::spawn(async move {
        tokio::time::sleep(outage()).await;
        for key in keys {
            operator.put("test", "sys/unseal", &json!({ "key": key })).await.unwrap();
        }
    });
    let report = engine.apply(&plan).await.unwrap();
    unseal.await.unwrap();
    assert!(report.is_success(), "{report:#?}\n{}", server.log());
    assert!(sealed_at.elapsed() >= outage(), "the write waited for the unseal");
    let mounts = admin.read_data("test", "sys/mounts").await.unwrap().unwrap();
    assert!(mounts.get("apps/").is_some(), "{mounts:#}");
    assert!(!engine.plan().await.unwrap().has_changes());
}
