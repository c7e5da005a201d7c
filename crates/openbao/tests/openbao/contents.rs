//! `openbao_contents` against a real server the engine initialises: what is added to it out of
//! band (a policy, a secrets engine, an auth method, a user on the engine's userpass mount) is
//! drift named field by field, and apply removes exactly that; a spec that marks the resource
//! shared watches nothing.

use super::init::{self, PREFIX};
use super::support::{Connect, engine};
use engine::{Action, DriftStatus, Secret};
use engine_openbao::{BaoClient, MemorySecrets};
use engine_testpeers::{BaoServer, Seal};
use serde_json::{Value as Json, json};
use std::sync::Arc;

const CONTENTS: &str = "aws.openbao.config.contents";

/// The init test's section (init, a kv mount, a policy) and a userpass user.
fn section() -> String {
    format!("{}\n[openbao.userpass.users.admin]\npolicies = [\"reader\"]\n", init::section())
}

async fn keys(client: &BaoClient, path: &str) -> Vec<String> {
    let data = client.read_data("test", path).await.unwrap().unwrap_or_default();
    data.as_object().map(|m| m.keys().cloned().collect()).unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_is_added_out_of_band_is_drift_and_apply_removes_it() {
    let work = tempfile::tempdir().unwrap();
    let (chain, key, ca) = init::tls(&work.path().join("pki"));
    let server = BaoServer::raft(&Seal::Shamir, &chain, key.expose(), &ca).await;
    let secrets = Arc::new(MemorySecrets::new());
    let provider = || init::provider(&server, &secrets, None);
    let engine = engine(provider(), &section(), work.path(), work.path());
    let (_, report) = engine.plan_and_apply().await.unwrap();
    assert!(report.is_success(), "{report:#?}\n{}", server.log());
    assert!(engine.drift().await.unwrap().is_clean(), "a fresh server holds only the spec");

    // Out of band, with the root token: one of each.
    let token: Secret = secrets.value(&format!("{PREFIX}/root-token")).unwrap();
    let admin = server.client(token);
    let sudo = json!({"policy": "path \"*\" { capabilities = [\"sudo\"] }"});
    admin.put("test", "sys/policies/acl/intruder", &sudo).await.unwrap();
    admin.write("test", "sys/mounts/stash", &json!({"type": "kv"})).await.unwrap();
    admin.write("test", "sys/auth/approle", &json!({"type": "approle"})).await.unwrap();
    let user = json!({"password": "hunter2-hunter2", "token_policies": "intruder"});
    admin.write("test", "auth/userpass/users/mallory", &user).await.unwrap();

    let drift = engine.drift().await.unwrap();
    assert_eq!(drift.drifted.len(), 1, "{drift:#?}");
    assert_eq!(drift.drifted[0].address.as_str(), CONTENTS);
    let DriftStatus::Modified { fields } = &drift.drifted[0].status else { panic!("{drift:#?}") };
    let live: Vec<(&str, &Json)> = fields.iter().map(|f| (f.name.as_str(), &f.live)).collect();
    assert_eq!(
        live,
        [
            ("foreign_policies", &json!(["intruder"])),
            ("foreign_mounts", &json!(["stash"])),
            ("foreign_auth", &json!(["approle"])),
            ("foreign_entries", &json!(["auth/userpass/users/mallory"])),
        ]
    );

    let plan = engine.plan().await.unwrap();
    let actions: Vec<_> = plan.actions().map(|c| (c.address.to_string(), c.action)).collect();
    assert_eq!(actions, [(CONTENTS.to_string(), Action::Update)]);
    // The plan removes exactly what it names.
    let change = plan.change(CONTENTS).unwrap();
    let before: Vec<_> = change.fields.iter().filter_map(|f| f.before.clone()).collect();
    let after: Vec<_> = change.fields.iter().map(|f| f.after.clone()).collect();
    let removed = [["intruder"], ["stash"], ["approle"], ["auth/userpass/users/mallory"]];
    assert_eq!(before, removed.map(|r| json!(r)));
    assert!(after.iter().all(|a| *a == engine::PlannedValue::Known(json!([]))), "{after:?}");
    let report = engine.apply(&plan).await.unwrap();
    assert!(report.is_success(), "{report:#?}");
    let policies = admin.list("test", "sys/policies/acl").await.unwrap();
    assert!(policies.contains(&"reader".to_string()), "{policies:?}");
    assert!(!policies.contains(&"intruder".to_string()), "{policies:?}");
    let mounts = keys(&admin, "sys/mounts").await;
    assert!(mounts.contains(&"platform/".into()) && !mounts.contains(&"stash/".into()));
    let auth = keys(&admin, "sys/auth").await;
    assert!(auth.contains(&"userpass/".into()) && !auth.contains(&"approle/".into()));
    let users = admin.list("test", "auth/userpass/users").await.unwrap();
    assert_eq!(users, ["admin"]);
    assert!(!engine.plan().await.unwrap().has_changes());

    // Marked shared: what is added is not the engine's to watch.
    admin.put("test", "sys/policies/acl/operator", &sudo).await.unwrap();
    let shared = format!("shared = [\"{CONTENTS}\"]\n{}", section());
    let lenient = super::support::engine(provider(), &shared, work.path(), work.path());
    assert!(!lenient.plan().await.unwrap().has_changes());
    assert!(!engine.drift().await.unwrap().is_clean(), "watched, it is drift");
}
