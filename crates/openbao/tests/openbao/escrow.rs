//! A new server's credentials are never lost: they wait in an owner-only escrow file until the
//! secret store has them, and a server initialised without them in hand is an error, never an
//! adoption.

use super::support::{Connect, assert_no_secret, engine};
use engine::{Action, Plan, Secret};
use engine_openbao::{
    Escrow, HookError, MemorySecrets, OpenBao, OpenBaoProvider, SecretSink, StoredTokenConnector,
};
use engine_pki as pki;
use engine_testpeers::BaoServer;
use serde_json::json;
use std::path::Path;
use std::sync::Arc;

const PREFIX: &str = "openbao/test";

const SECTION: &str = r#"
[openbao.init]
secret_prefix = "openbao/test"

[openbao.mounts.platform]
type = "kv-v2"
"#;

/// A secret store that is down.
struct DownStore;

#[async_trait::async_trait]
impl SecretSink for DownStore {
    async fn put(&self, _: &str, _: &Secret) -> Result<(), HookError> {
        Err(HookError("the secret store is unreachable".into()))
    }
}

/// The kinds against `server`, the token read from `secrets`, credentials written to `sink`,
/// the escrow at `escrow`.
fn provider(
    server: &BaoServer,
    secrets: &Arc<MemorySecrets>,
    sink: Arc<dyn SecretSink>,
    escrow: &Path,
) -> Arc<OpenBaoProvider> {
    let connector = StoredTokenConnector {
        address: server.address.clone(),
        ca_bundle: server.ca_bundle.clone(),
        source: secrets.clone(),
        token_secret: engine_openbao::SecretRef::parse(&format!("{PREFIX}/root-token")),
        route: None,
    };
    let bao = OpenBao::builder(Arc::new(connector))
        .secret_sink(sink)
        .secret_source(secrets.clone())
        .escrow(Escrow::new(escrow))
        .build();
    super::support::provider(bao)
}

/// An uninitialised raft server auto-unsealed by a transit server (kept alive with it).
async fn servers(dir: &Path) -> (BaoServer, BaoServer) {
    let root = pki::init_root(&dir.join("pki")).unwrap();
    let inter = pki::intermediate(&root, "test").unwrap();
    let leaf = pki::server_leaf(&inter, &["localhost"]).unwrap();
    BaoServer::auto_unsealed(&leaf.chain_pem, leaf.key_pem().expose(), &root.cert_pem).await
}

fn action_of(plan: &Plan, address: &str) -> Action {
    plan.actions().find(|c| c.address.as_str() == address).map(|c| c.action).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_store_write_keeps_the_credentials_in_escrow_until_the_next_apply() {
    let work = tempfile::tempdir().unwrap();
    let (server, _transit) = servers(work.path()).await;
    let secrets = Arc::new(MemorySecrets::new());
    let escrow = work.path().join(".engine/aws.openbao-escrow.json");

    // 1. The secret store is down when OpenBao answers its init: the step fails, saying where
    //    the credentials are; they are in the escrow file (owner-only), not lost.
    let down = engine(
        provider(&server, &secrets, Arc::new(DownStore), &escrow),
        SECTION,
        work.path(),
        work.path(),
    );
    let plan = down.plan().await.unwrap();
    let report = down.apply(&plan).await.unwrap();
    assert!(!report.is_success());
    let failure = format!("{:?}", report.failures().collect::<Vec<_>>());
    assert!(failure.contains("kept in") && failure.contains("openbao-escrow.json"), "{failure}");
    assert!(secrets.names().is_empty(), "{:?}", secrets.names());
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&escrow).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "the escrow is readable by its owner only");
    }
    let held = Escrow::new(&escrow).root_token().unwrap().expect("the root token is held");
    assert!(server.client(held.clone()).read("test", "sys/mounts").await.is_ok());

    // 2. The next run (the store is back) reads OpenBao with the escrowed token; its plan
    //    stores the credentials and configures the rest; the escrow is then released.
    let up = engine(
        provider(&server, &secrets, secrets.clone(), &escrow),
        SECTION,
        work.path(),
        work.path(),
    );
    let plan = up.plan().await.unwrap();
    assert_eq!(action_of(&plan, "aws.openbao.config.init"), Action::Update, "{plan:#?}");
    let init = plan.actions().find(|c| c.address.as_str() == "aws.openbao.config.init").unwrap();
    let fields: Vec<&str> = init.fields.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(fields, ["credentials_stored"]);
    let report = up.apply(&plan).await.unwrap();
    assert!(report.is_success(), "{report:#?}\n{}", server.log());
    assert!(!escrow.exists(), "the escrow is released once the store has the credentials");
    assert_eq!(secrets.value(&format!("{PREFIX}/root-token")).unwrap(), held);
    assert!(secrets.value(&format!("{PREFIX}/recovery-keys")).is_some());
    assert!(!up.plan().await.unwrap().has_changes());
    let shown = [format!("{plan:?}"), serde_json::to_string(&report).unwrap(), failure];
    assert_no_secret("plan, report and failure", &shown.join("\n"), &[("root token", &held)]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_initialised_server_without_its_credentials_is_an_error_not_an_adoption() {
    let work = tempfile::tempdir().unwrap();
    let (server, _transit) = servers(work.path()).await;
    // Initialised by someone else (or by a try whose answer was lost): its credentials are
    // nowhere the engine looks.
    let anonymous = server.connection(None);
    let answer = engine_openbao::BaoClient::new(&anonymous)
        .unwrap()
        .put("test", "sys/init", &json!({"recovery_shares": 1, "recovery_threshold": 1}))
        .await
        .unwrap()
        .unwrap();
    let lost = Secret::new(answer["root_token"].as_str().unwrap());

    let secrets = Arc::new(MemorySecrets::new());
    let escrow = work.path().join("aws.openbao-escrow.json");
    let init_only = "[openbao.init]\nsecret_prefix = \"openbao/test\"\n";
    let engine = engine(
        provider(&server, &secrets, secrets.clone(), &escrow),
        init_only,
        work.path(),
        work.path(),
    );
    let plan = engine.plan().await.unwrap();
    assert_eq!(action_of(&plan, "aws.openbao.config.init"), Action::Update, "{plan:#?}");
    let report = engine.apply(&plan).await.unwrap();
    assert!(!report.is_success(), "an initialised server without credentials is not adopted");
    let failure = format!("{:?}", report.failures().collect::<Vec<_>>());
    assert!(failure.contains("is initialised, but its root token is neither"), "{failure}");
    assert!(failure.contains("bao operator generate-root"), "{failure}");
    assert!(secrets.names().is_empty());
    // The state does not record it as ours.
    let state = std::fs::read_to_string(work.path().join("aws.state.json")).unwrap_or_default();
    assert!(!state.contains("openbao_init"), "{state}");
    assert_no_secret("the failure", &failure, &[("root token", &lost)]);
}
