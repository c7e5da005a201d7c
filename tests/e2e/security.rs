//! The security stage in one graph: OpenBao's AWS resources against moto, and OpenBao's own
//! configuration against a real OpenBao server (raft storage, transit auto-unseal, TLS from the
//! offline PKI), with AWS Secrets Manager (moto) as the store of its credentials.

use engine::spec::SpecSource;
use engine::{Engine, LocalBackend, Secret};
use engine_lanes::LaneBuilder;
use engine_openbao::{BaoClient, BaoConnection};
use engine_pki as pki;
use engine_tests::BaoServer;
use engine_tests::{Moto, moto};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

const PREFIX: &str = "openbao/aws-0";

fn config_section() -> String {
    r#"
[openbao]
ca_file = "pki/root-ca.crt"

[openbao.init]
secret_prefix = "openbao/aws-0"

[openbao.mounts.platform]
type = "kv-v2"
[openbao.mounts.pki_private_issuer]
type = "pki"
max_lease_ttl = "5y"

[openbao.policies.inline]
reader = 'path "platform/data/*" { capabilities = ["read"] }'
admin = 'path "*" { capabilities = ["create", "read", "update", "delete", "list", "sudo"] }'

[openbao.pki]
mount = "pki_private_issuer"
bundle_secret = "openbao/pki/intermediate-aws"
issuer_name = "intermediate-aws"
[openbao.pki.roles.ogenki]
allowed_domains = ["priv.aws.cloud.ogenki.io"]
allow_subdomains = true
ttl = "30d"
max_ttl = "90d"

[openbao.userpass.users.admin]
policies = ["admin"]

[openbao.tls]
secret = "openbao/tls"
"#
    .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn security_stage_from_empty_with_secrets_in_secrets_manager() {
    let moto = Moto::start();
    let work = tempfile::tempdir().unwrap();

    // The offline PKI: root (kept on this machine), the AWS intermediate as a bundle in Secrets
    // Manager, and OpenBao's TLS leaf.
    let root = pki::init_root(&work.path().join("pki")).unwrap();
    let inter = pki::intermediate(&root, "aws").unwrap();
    let leaf = pki::server_leaf(&inter, &["localhost"]).unwrap();
    let sdk = moto.sdk_config().await;
    aws_sdk_secretsmanager::Client::new(&sdk)
        .create_secret()
        .name("openbao/pki/intermediate-aws")
        .secret_string(inter.bundle_pem().expose())
        .send()
        .await
        .unwrap();

    // A real server, uninitialised, auto-unsealed by a transit key on another server.
    let (server, _transit) =
        BaoServer::auto_unsealed(&leaf.chain_pem, leaf.key_pem().expose(), &root.cert_pem).await;

    // The spec: the reference network and OpenBao server (stages 1 and 2), plus OpenBao's
    // configuration.
    let spec_path = work.path().join("aws.toml");
    std::fs::write(&spec_path, engine_tests::spec_text_through(2) + &config_section()).unwrap();

    // The lane as the binary wires it, with the test's server instead of
    // bao.priv.aws.<domain>; the token is read from Secrets Manager exactly as in production.
    let spec = SpecSource::from_file(&spec_path).unwrap();
    let lane = LaneBuilder::new(&spec)
        .aws_config(sdk.clone())
        .openbao_address(&server.address, Some(root.cert_pem.clone()))
        .openbao_ready_timeout(Duration::from_secs(60))
        .state_path(&work.path().join("aws.state.json"))
        .build()
        .await;
    let build = || {
        lane.add_to(Engine::builder().spec(spec.clone()))
            .state(LocalBackend::new(work.path().join("aws.state.json")))
            .retry_backoff(Duration::from_millis(200))
            .build()
            .unwrap_or_else(|e| panic!("{e:?}"))
    };
    let engine = build();
    // OpenBao is configured after its DNS name exists, not after the whole network.
    let deps = engine.graph().dependencies_of(&engine::Address::new("aws.openbao.config.init"));
    assert!(deps.iter().any(|a| a.as_str() == "aws.openbao.route53_record.api"), "{deps:?}");
    // The servers boot with the certificate the configuration issues.
    let lt_deps =
        engine.graph().dependencies_of(&engine::Address::new("aws.openbao.launch_template.server"));
    assert!(lt_deps.iter().any(|a| a.as_str() == "aws.openbao.config.tls"), "{lt_deps:?}");

    let mut outputs = Vec::new();
    let plan = engine.plan().await.unwrap();
    outputs.push(format!("{plan:?}"));
    let report = engine.apply(&plan).await.unwrap();
    outputs.push(serde_json::to_string(&report).unwrap());
    assert!(report.is_success(), "{:#?}", report.failures().collect::<Vec<_>>());

    // Init stored the root token and recovery key in Secrets Manager; with it, OpenBao answers.
    let token = moto::secret_string(&sdk, &format!("{PREFIX}/root-token")).await;
    let recovery = moto::secret_string(&sdk, &format!("{PREFIX}/recovery-keys")).await;
    let client = BaoClient::new(&BaoConnection {
        route: None,
        address: server.address.clone(),
        ca_bundle: Some(root.cert_pem.clone()),
        token: Some(Secret::new(token.clone())),
    })
    .unwrap();

    // A certificate from role `ogenki` chains to the offline root.
    let issued = client
        .write(
            "test",
            "pki_private_issuer/issue/ogenki",
            &json!({"common_name": "web.priv.aws.cloud.ogenki.io"}),
        )
        .await
        .expect("issue")
        .expect("a certificate");
    let cert = issued["data"]["certificate"].as_str().unwrap();
    let chain: Vec<&str> = issued["data"]["ca_chain"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    pki::verify_server_chain(cert, &chain, &root.cert_pem, Some("web.priv.aws.cloud.ogenki.io"))
        .expect("the certificate chains to the offline root");

    // OpenBao's own TLS certificate is in Secrets Manager for the servers' boot script, valid
    // for its DNS name and chaining to the offline root.
    let tls: serde_json::Value =
        serde_json::from_str(&moto::secret_string(&sdk, "openbao/tls").await).unwrap();
    pki::verify_server_chain(
        tls["cert"].as_str().unwrap(),
        &[],
        tls["ca"].as_str().unwrap(),
        Some("bao.priv.aws.cloud.ogenki.io"),
    )
    .expect("OpenBao's certificate chains to the root");
    assert_eq!(tls["ca"].as_str().unwrap().trim(), root.cert_pem.trim());
    let tls_key = tls["key"].as_str().unwrap().to_string();

    // Second run: nothing to do, no write anywhere.
    let engine = build();
    let plan = engine.plan().await.unwrap();
    outputs.push(format!("{plan:?}"));
    assert!(!plan.has_changes(), "{:#?}", plan.changes);
    let report = engine.apply(&plan).await.unwrap();
    assert_eq!(report.api_calls.mutating(), 0, "{:?}", report.api_calls.mutating_operations());
    let mut by_service = std::collections::BTreeMap::<String, u64>::new();
    for (op, n) in &plan.api_calls.by_operation {
        *by_service.entry(op.split(':').next().unwrap_or("").to_string()).or_default() += n;
    }
    eprintln!(
        "no-op plan: {} resources, {} calls {by_service:?}",
        plan.changes.len() + plan.kept.len(),
        plan.api_calls.total()
    );

    // Drift in OpenBao (a policy edited, a role's TTL changed) and in AWS is reported, then
    // repaired.
    let root_client = client;
    root_client
        .write(
            "test",
            "sys/policies/acl/reader",
            &json!({"policy": "path \"*\" { capabilities = [\"read\"] }"}),
        )
        .await
        .unwrap();
    root_client
        .write("test", "pki_private_issuer/roles/ogenki", &json!({"ttl": "1h"}))
        .await
        .unwrap();
    let drift = engine.drift().await.unwrap();
    let text = format!("{:?}", drift.drifted);
    outputs.push(text.clone());
    let drifted: Vec<&str> = drift.drifted.iter().map(|d| d.address.as_str()).collect();
    assert_eq!(
        drifted,
        ["aws.openbao.config.pki_role[\"ogenki\"]", "aws.openbao.config.policy[\"reader\"]"],
        "{text}"
    );
    assert!(text.contains("name: \"ttl\", applied: Number(2592000), live: Number(3600)"), "{text}");
    let plan = engine.plan().await.unwrap();
    let report = engine.apply(&plan).await.unwrap();
    assert!(report.is_success(), "{:#?}", report.failures().collect::<Vec<_>>());
    assert!(engine.drift().await.unwrap().is_clean());

    // Secrets appear nowhere: plans, reports, drift, state.
    let state = std::fs::read_to_string(work.path().join("aws.state.json")).unwrap();
    outputs.push(state);
    let everything = outputs.join("\n");
    for (what, secret) in [
        ("root token", token.as_str()),
        ("recovery keys", recovery.as_str()),
        ("intermediate key", inter.key_pem().expose()),
        ("TLS key", tls_key.as_str()),
    ] {
        assert!(!everything.contains(secret), "the {what} leaked");
    }
}

/// `engine pki intermediate` issues the cloud's intermediate from the offline root into Secrets
/// Manager once, and keeps it on later runs; no key is ever printed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pki_intermediate_is_stored_in_secrets_manager_once() {
    let moto = Moto::start();
    let work = tempfile::tempdir().unwrap();
    let root_dir = work.path().join("root");
    let root_arg = root_dir.display().to_string();
    let out = engine_tests::run_engine(&moto.endpoint(), &["pki", "init-root", &root_arg], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", engine_tests::text(&out));
    let spec = work.path().join("aws.toml");
    std::fs::write(
        &spec,
        r#"[globals]
cloud = "aws"
region = "eu-west-3"
cluster_name = "aws-0"
domain = "example.test"

[openbao.mounts.pki_private_issuer]
type = "pki"

[openbao.pki]
mount = "pki_private_issuer"
bundle_secret = "openbao/pki/intermediate-aws"
certificate_file = "intermediate-aws.crt"
"#,
    )
    .unwrap();
    let spec_arg = spec.display().to_string();
    let args = ["pki", "intermediate", spec_arg.as_str(), "--root", root_arg.as_str()];
    let first = engine_tests::run_engine(&moto.endpoint(), &args, &[]);
    let t = engine_tests::text(&first);
    assert_eq!(first.status.code(), Some(0), "{t}");
    assert!(t.contains("Issued the intermediate CA into `openbao/pki/intermediate-aws`"), "{t}");
    let second = engine_tests::run_engine(&moto.endpoint(), &args, &[]);
    let t2 = engine_tests::text(&second);
    assert!(t2.contains("Kept the intermediate CA already in"), "{t2}");
    assert!(!t.contains("PRIVATE KEY") && !t2.contains("PRIVATE KEY"));

    let stored =
        engine_tests::moto::secret_string(&moto.sdk_config().await, "openbao/pki/intermediate-aws")
            .await;
    let bundle = pki::IntermediateBundle::from_bundle_pem(&Secret::new(stored)).unwrap();
    let root = pki::load_root(&root_dir).unwrap();
    assert_eq!(bundle.root_cert_pem.trim(), root.cert_pem.trim());
    let file = std::fs::read_to_string(work.path().join("intermediate-aws.crt")).unwrap();
    assert_eq!(file.trim(), bundle.cert_pem.trim());
    let leaf = pki::server_leaf(&bundle, &["bao.priv.aws.example.test"]).unwrap();
    pki::verify_server_chain(
        &leaf.chain_pem,
        &[],
        &root.cert_pem,
        Some("bao.priv.aws.example.test"),
    )
    .expect("leaves of the stored intermediate chain to the offline root");
}

/// `[openbao.jwt."jwt/aws-0"] cluster_issuer = true` binds the mount to the issuer of the cluster
/// the spec makes: a service-account token of that cluster logs in to OpenBao.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_clusters_jwt_mount_accepts_its_service_account_tokens() {
    use engine::Value;
    use engine_openbao::{ClusterIssuer, StaticConnector};

    let cluster = engine_tests::KubeCluster::start(0);
    let bao = BaoServer::dev().await;
    let root_token = Secret::new(bao.root_token.clone().unwrap());
    let work = tempfile::tempdir().unwrap();
    let spec = r#"[globals]
cloud = "aws"
region = "eu-west-3"
cluster_name = "aws-0"
domain = "example.test"

[openbao.policies.inline]
cert-manager = 'path "pki_private_issuer/sign/ogenki" { capabilities = ["update"] }'

[openbao.jwt."jwt/aws-0"]
cluster_issuer = true
[openbao.jwt."jwt/aws-0".roles.cert-manager]
bound_audiences = ["openbao"]
bound_subject = "system:serviceaccount:cert-manager:cert-manager"
token_policies = ["cert-manager"]
token_ttl = 600
token_max_ttl = 1200
"#;
    let issuer = cluster.issuer();
    let ca = cluster.ca_pem();
    // The cluster's issuer, given as values (the cluster is not made by this spec); OpenBao
    // reached with the dev server's root token.
    let issuer = ClusterIssuer {
        section: "eks",
        url: Value::from(issuer.as_str()),
        ca_pem: Some(Value::from(ca.as_str())),
    };
    let source =
        SpecSource::from_text(&work.path().join("aws.toml").display().to_string(), "aws", spec);
    let connection = |token| engine_tests::bao_connection(&bao, token);
    let lane = LaneBuilder::new(&source)
        .openbao_connector(Arc::new(StaticConnector(connection(Some(root_token.clone())))))
        .cluster_issuer(issuer)
        .build()
        .await;
    let engine = lane
        .add_to(Engine::builder().spec(source.clone()))
        .state(LocalBackend::new(work.path().join("aws.state.json")))
        .retry_backoff(Duration::from_millis(100))
        .build()
        .unwrap_or_else(|e| panic!("{e:?}"));
    let plan = engine.plan().await.unwrap();
    let report = engine.apply(&plan).await.unwrap();
    assert!(report.is_success(), "{:#?}", report.failures().collect::<Vec<_>>());
    assert!(!engine.plan().await.unwrap().has_changes());

    // A token of the cluster's service account, for audience `openbao`, logs in.
    let good = cluster.service_account_token("cert-manager", "cert-manager", "openbao").await;
    let anonymous = BaoClient::new(&connection(None)).unwrap();
    let login = anonymous
        .write("test", "auth/jwt/aws-0/login", &json!({"role": "cert-manager", "jwt": good}))
        .await
        .expect("login with the cluster's token")
        .expect("an auth response");
    let policies = login["auth"]["policies"].to_string();
    assert!(policies.contains("cert-manager"), "{login}");
    assert_eq!(login["auth"]["lease_duration"], 600);

    let wrong = cluster.service_account_token("cert-manager", "cert-manager", "other").await;
    assert!(
        anonymous
            .write("test", "auth/jwt/aws-0/login", &json!({"role": "cert-manager", "jwt": wrong}))
            .await
            .is_err(),
        "a token for another audience is refused"
    );
}
