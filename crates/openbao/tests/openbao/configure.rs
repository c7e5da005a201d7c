//! The configuration kinds against a dev server, through the engine: apply, no-op re-plan,
//! what the configuration does (certificates, logins), drift detection and repair, secrecy.

use super::support::{self, Connect, JwtIssuer, assert_no_secret, engine};
use engine::{Action, DriftStatus, Plan, Provider, Secret};
use engine_openbao::{MemorySecrets, OpenBao, StaticConnector};
use engine_pki as pki;
use engine_testpeers::BaoServer;
use serde_json::{Value as Json, json};
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

const ISSUER: &str = "https://issuer.test.local";

fn section(jwt_public_key: &str) -> String {
    format!(
        r#"
[openbao.mounts.platform]
type = "kv-v2"
description = "platform secrets"
[openbao.mounts.apps]
type = "kv-v2"
[openbao.mounts.pki_private_issuer]
type = "pki"
description = "private issuer"
max_lease_ttl = "5y"

[openbao.policies]
dir = "policies"
inline = {{ reader = 'path "platform/data/*" {{ capabilities = ["read"] }}' }}

[openbao.pki]
mount = "pki_private_issuer"
bundle_secret = "openbao/pki/intermediate-aws"
issuer_name = "intermediate-aws"
certificate_file = "intermediate-aws.crt"
[openbao.pki.roles.ogenki]
allowed_domains = ["priv.example.test"]
allow_subdomains = true
key_type = "any"
organization = ["Ogenki"]
country = ["France"]
ttl = "30d"
max_ttl = "90d"

[openbao.userpass.users.admin]
policies = ["admin"]
token_ttl = "1h"

[openbao.jwt."jwt/aws-0"]
jwt_validation_pubkeys = ['''{jwt_public_key}''']
bound_issuer = "{ISSUER}"
[openbao.jwt."jwt/aws-0".roles.cert-manager]
bound_audiences = ["openbao"]
bound_subject = "system:serviceaccount:cert-manager:cert-manager"
token_policies = ["cert-manager"]
token_ttl = 600
token_max_ttl = 1200
token_type = "service"
[openbao.jwt."jwt/aws-0".roles.platform-reader]
bound_audiences = ["openbao"]
bound_claims = {{ team = "platform" }}
token_policies = ["reader"]
"#
    )
}

fn write_policies(dir: &Path) {
    std::fs::create_dir_all(dir.join("policies")).unwrap();
    std::fs::write(
        dir.join("policies/admin.hcl"),
        "# Everything, for the platform's administrators.\npath \"*\" {\n  capabilities = [\"create\", \"read\", \"update\", \"delete\", \"list\", \"sudo\"]\n}\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("policies/cert-manager.hcl"),
        "path \"pki_private_issuer/sign/ogenki\" {\n  capabilities = [\"update\"]\n}\npath \"pki_private_issuer/issue/ogenki\" {\n  capabilities = [\"update\"]\n}\n",
    )
    .unwrap();
}

fn changed(plan: &Plan) -> Vec<(String, Action, Vec<String>)> {
    plan.actions()
        .map(|c| {
            (c.address.to_string(), c.action, c.fields.iter().map(|f| f.name.clone()).collect())
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn configures_openbao_then_detects_and_repairs_drift() {
    let started = Instant::now();
    let server = BaoServer::dev().await;
    let root_token = server.root_secret();
    let work = tempfile::tempdir().unwrap();

    // Offline PKI: the intermediate bundle goes to the secret store, its certificate to a file.
    let root = pki::init_root(&work.path().join("pki")).unwrap();
    let inter = pki::intermediate(&root, "aws").unwrap();
    std::fs::write(work.path().join("intermediate-aws.crt"), &inter.cert_pem).unwrap();
    let secrets = Arc::new(MemorySecrets::new());
    secrets.insert("openbao/pki/intermediate-aws", inter.bundle_pem());
    write_policies(work.path());
    let jwt = JwtIssuer::new(ISSUER);

    let bao =
        OpenBao::builder(Arc::new(StaticConnector(server.connection(Some(root_token.clone())))))
            .secret_sink(secrets.clone())
            .secret_source(secrets.clone())
            .build();
    let provider = support::provider(bao);
    let spec = section(&jwt.public_key_pem);
    let engine = engine(provider.clone(), &spec, work.path(), work.path());
    let mut outputs: Vec<String> = Vec::new();

    // 1. Everything is created.
    let plan = engine.plan().await.unwrap();
    outputs.push(format!("{plan:?}"));
    let summary = plan.summary();
    assert_eq!(summary.add, 14, "{:#?}", changed(&plan));
    let applied = Instant::now();
    let report = engine.apply(&plan).await.unwrap();
    outputs.push(serde_json::to_string(&report).unwrap());
    assert!(report.is_success(), "{report:#?}");
    eprintln!(
        "apply: {} creates in {:?}, {} API calls ({} writes): {:?}",
        report.count(Action::Create),
        applied.elapsed(),
        report.api_calls.total(),
        report.api_calls.mutating(),
        report.api_calls.by_operation
    );

    // One write per resource (plus naming the issuer and making it the default): nothing was
    // retried, concurrent mount changes included.
    assert_eq!(report.api_calls.mutating(), 16, "{:?}", report.api_calls);

    // 2. A second plan changes nothing and only reads.
    let plan = engine.plan().await.unwrap();
    outputs.push(format!("{plan:?}"));
    assert!(!plan.has_changes(), "{:#?}", changed(&plan));
    assert_eq!(plan.api_calls.mutating(), 0);
    eprintln!(
        "no-op plan of {} resources: {} API calls: {:?}",
        plan.refreshed,
        plan.api_calls.total(),
        plan.api_calls.by_operation
    );
    assert!(plan.api_calls.total() <= plan.refreshed as u64);
    let drift = engine.drift().await.unwrap();
    assert!(drift.is_clean(), "{drift:#?}");

    // 3. The configuration works.
    let admin = server.root_client();
    // Role `ogenki` signs RSA and EC requests alike (cert-manager's keys are RSA by default),
    // and its certificates chain to the offline root through the intermediate.
    let csr = |name: &str, algorithm: &'static rcgen::SignatureAlgorithm| {
        let key = rcgen::KeyPair::generate_for(algorithm).unwrap();
        let mut params = rcgen::CertificateParams::new(vec![name.to_string()]).unwrap();
        params.distinguished_name = rcgen::DistinguishedName::new();
        params.distinguished_name.push(rcgen::DnType::CommonName, name);
        params.serialize_request(&key).unwrap().pem().unwrap()
    };
    let sign = |name: &str, algorithm: &'static rcgen::SignatureAlgorithm| json!({"csr": csr(name, algorithm), "common_name": name, "ttl": "24h"});
    let ec = admin
        .write(
            "test",
            "pki_private_issuer/sign/ogenki",
            &sign("grafana.priv.example.test", &rcgen::PKCS_ECDSA_P256_SHA256),
        )
        .await
        .unwrap()
        .unwrap();
    let ec_cert = ec.pointer("/data/certificate").and_then(Json::as_str).unwrap();
    let (_, pem) = x509_parser::pem::parse_x509_pem(ec_cert.as_bytes()).unwrap();
    let subject = pem.parse_x509().unwrap().subject().to_string();
    assert!(subject.contains("O=Ogenki") && subject.contains("C=France"), "{subject}");
    let issued = admin
        .write(
            "test",
            "pki_private_issuer/sign/ogenki",
            &sign("grafana.priv.example.test", &rcgen::PKCS_RSA_SHA256),
        )
        .await
        .unwrap()
        .unwrap();
    let cert = issued.pointer("/data/certificate").and_then(Json::as_str).unwrap();
    let issuing_ca = issued.pointer("/data/issuing_ca").and_then(Json::as_str).unwrap();
    assert_eq!(issuing_ca.trim(), inter.cert_pem.trim());
    pki::verify_server_chain(
        cert,
        &[issuing_ca],
        &root.cert_pem,
        Some("grafana.priv.example.test"),
    )
    .unwrap();
    // ... and it fails against another root.
    let other = pki::init_root(&work.path().join("other")).unwrap();
    assert!(pki::verify_server_chain(cert, &[issuing_ca], &other.cert_pem, None).is_err());
    // The role refuses names outside its domains.
    let refused = admin
        .write(
            "test",
            "pki_private_issuer/sign/ogenki",
            &sign("evil.example.org", &rcgen::PKCS_ECDSA_P256_SHA256),
        )
        .await
        .unwrap_err();
    assert_eq!(refused.status(), Some(400), "{refused}");

    // The admin logs in with the generated password, which only the secret store knows.
    let password = secrets.value("openbao/userpass/admin").expect("password stored");
    let login = admin
        .write("test", "auth/userpass/login/admin", &json!({"password": password.expose()}))
        .await
        .unwrap()
        .unwrap();
    let policies = login.pointer("/auth/policies").unwrap().to_string();
    assert!(policies.contains("\"admin\""), "{policies}");

    // A workload logs in with a JWT signed by the local issuer.
    let token = jwt.token("system:serviceaccount:cert-manager:cert-manager", "openbao");
    let login = admin
        .write(
            "test",
            "auth/jwt/aws-0/login",
            &json!({"role": "cert-manager", "jwt": token.expose()}),
        )
        .await
        .unwrap()
        .unwrap();
    assert_eq!(login.pointer("/auth/lease_duration"), Some(&json!(600)));
    let policies = login.pointer("/auth/policies").unwrap().to_string();
    assert!(policies.contains("\"cert-manager\""), "{policies}");
    // The JWT's token (a service token, as the role says) can have certificates signed
    // (policy cert-manager) ...
    assert!(
        login.pointer("/auth/client_token").and_then(Json::as_str).unwrap().starts_with("s."),
        "{login}"
    );
    let workload = server
        .client(Secret::new(login.pointer("/auth/client_token").and_then(Json::as_str).unwrap()));
    workload
        .write(
            "test",
            "pki_private_issuer/sign/ogenki",
            &sign("app.priv.example.test", &rcgen::PKCS_RSA_SHA256),
        )
        .await
        .unwrap();
    // ... but not read secrets.
    let denied = workload.read("test", "platform/data/anything").await.unwrap_err();
    assert_eq!(denied.status(), Some(403));
    // A token for another subject is refused.
    let stranger = jwt.token("system:serviceaccount:default:default", "openbao");
    let refused = admin
        .write(
            "test",
            "auth/jwt/aws-0/login",
            &json!({"role": "cert-manager", "jwt": stranger.expose()}),
        )
        .await
        .unwrap_err();
    assert!(matches!(refused.status(), Some(400 | 403)), "{refused}");
    // A role bound by claims rather than subject.
    let team_token =
        jwt.token_with("system:serviceaccount:apps:reader", "openbao", json!({"team": "platform"}));
    let login = admin
        .write(
            "test",
            "auth/jwt/aws-0/login",
            &json!({"role": "platform-reader", "jwt": team_token.expose()}),
        )
        .await
        .unwrap()
        .unwrap();
    let policies = login.pointer("/auth/policies").unwrap().to_string();
    assert!(policies.contains("\"reader\""), "{policies}");
    let other_team = jwt.token_with("x", "openbao", json!({"team": "apps"}));
    assert!(
        admin
            .write(
                "test",
                "auth/jwt/aws-0/login",
                &json!({"role": "platform-reader", "jwt": other_team.expose()}),
            )
            .await
            .is_err()
    );
    // kv-v2 really is version 2.
    admin.write("test", "platform/data/hello", &json!({"data": {"v": "1"}})).await.unwrap();

    // 4. Drift made behind the engine's back, with a client of the test's own.
    admin
        .put(
            "test",
            "sys/policies/acl/reader",
            &json!({"policy": "path \"platform/data/*\" { capabilities = [\"read\", \"list\"] }"}),
        )
        .await
        .unwrap();
    admin.patch("test", "pki_private_issuer/roles/ogenki", &json!({"ttl": "48h"})).await.unwrap();
    admin.delete("test", "sys/mounts/apps").await.unwrap();

    let drift = engine.drift().await.unwrap();
    outputs.push(serde_json::to_string(&drift).unwrap());
    let mut found: Vec<(String, String)> = drift
        .drifted
        .iter()
        .map(|d| {
            let what = match &d.status {
                DriftStatus::Deleted => "deleted".to_string(),
                DriftStatus::Modified { fields } => {
                    fields.iter().map(|f| f.name.clone()).collect::<Vec<_>>().join(",")
                }
            };
            (d.address.to_string(), what)
        })
        .collect();
    found.sort();
    assert_eq!(
        found,
        vec![
            ("aws.openbao.config.mount[\"apps\"]".to_string(), "deleted".to_string()),
            ("aws.openbao.config.pki_role[\"ogenki\"]".to_string(), "ttl".to_string()),
            ("aws.openbao.config.policy[\"reader\"]".to_string(), "policy".to_string()),
        ]
    );
    let ttl_drift = drift
        .drifted
        .iter()
        .find_map(|d| match &d.status {
            DriftStatus::Modified { fields } => fields.iter().find(|f| f.name == "ttl"),
            _ => None,
        })
        .unwrap();
    assert_eq!(
        (ttl_drift.applied.clone(), ttl_drift.live.clone()),
        (json!(2592000), json!(172800))
    );

    // The plan repairs exactly that: two updates and a create.
    let plan = engine.plan().await.unwrap();
    outputs.push(format!("{plan:?}"));
    let mut actions = changed(&plan);
    actions.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        actions.iter().map(|(a, act, _)| (a.as_str(), *act)).collect::<Vec<_>>(),
        vec![
            ("aws.openbao.config.mount[\"apps\"]", Action::Create),
            ("aws.openbao.config.pki_role[\"ogenki\"]", Action::Update),
            ("aws.openbao.config.policy[\"reader\"]", Action::Update),
        ]
    );
    assert_eq!(actions[1].2, vec!["ttl".to_string()]);
    assert_eq!(actions[2].2, vec!["policy".to_string()]);
    let report = engine.apply(&plan).await.unwrap();
    outputs.push(serde_json::to_string(&report).unwrap());
    assert!(report.is_success(), "{report:#?}");
    let drift = engine.drift().await.unwrap();
    assert!(drift.is_clean(), "{drift:#?}");
    assert!(!engine.plan().await.unwrap().has_changes());
    let role = admin.read_data("test", "pki_private_issuer/roles/ogenki").await.unwrap().unwrap();
    assert_eq!(role["ttl"], json!(2592000));

    // Importing the same bundle again (a rerun after a crash) finds the same issuer.
    let state = engine.state_document().unwrap();
    let issuer = state.get("aws.openbao.config.pki_intermediate[\"pki_private_issuer\"]").unwrap();
    let kinds = provider.kinds();
    let kind = kinds.iter().find(|k| k.name() == "openbao_pki_intermediate").unwrap();
    let desired: engine::Attrs = serde_json::from_value(json!({
        "mount": "pki_private_issuer",
        "bundle_secret": "openbao/pki/intermediate-aws",
        "issuer_name": "intermediate-aws",
        "certificate": inter.cert_pem.trim(),
    }))
    .unwrap();
    let ctx = engine::Context::new("aws", Arc::new(engine::NullObserver));
    let again = kind.create(&ctx, &engine::Address::new("x"), &desired).await.unwrap();
    assert_eq!(again.attributes["issuer_id"], issuer.attributes["issuer_id"]);
    outputs.push(format!("{again:?}"));

    // 5. Errors name the problem but not the token.
    let wrong = Secret::new("s.not-the-right-token-0123456789");
    let denied_bao =
        OpenBao::builder(Arc::new(StaticConnector(server.connection(Some(wrong.clone()))))).build();
    let denied_engine = support::engine(
        support::provider(denied_bao),
        &spec,
        work.path(),
        &work.path().join("denied"),
    );
    let err = denied_engine.plan().await.unwrap_err();
    let message = format!("{err} {err:?}");
    assert!(message.contains("403"), "{message}");
    outputs.push(message.clone());
    assert_no_secret("an error", &message, &[("wrong token", &wrong)]);

    // 6. No secret anywhere in what the engine produced or kept.
    outputs.push(std::fs::read_to_string(work.path().join("aws.state.json")).unwrap());
    let root_key = Secret::new(std::fs::read_to_string(&root.key_path).unwrap());
    let everything = outputs.join("\n");
    assert_no_secret(
        "plans, reports, drift and state",
        &everything,
        &[
            ("root token", &root_token),
            ("admin password", &password),
            ("intermediate key", inter.key_pem()),
            ("root key", &root_key),
            ("workload JWT", &token),
        ],
    );
    assert!(everything.contains("intermediate-aws"));
    eprintln!("configure test: {:?}", started.elapsed());
}

/// A mount the engine did not make is never taken over by its path: its create fails and names
/// it. One the engine made (its description carries the marker) is taken over by a run whose
/// state lost it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mount_the_engine_did_not_make_is_never_taken_over() {
    let server = BaoServer::dev().await;
    let admin = server.root_client();
    admin
        .write("test", "sys/mounts/apps", &json!({"type": "kv", "options": {"version": "2"}}))
        .await
        .unwrap();
    let work = tempfile::tempdir().unwrap();
    let bao =
        OpenBao::builder(Arc::new(StaticConnector(server.connection(Some(server.root_secret())))))
            .build();
    let provider = support::provider(bao);
    let spec = "[openbao.mounts.apps]\ntype = \"kv-v2\"\n[openbao.mounts.platform]\ntype = \"kv-v2\"\ndescription = \"platform secrets\"\n";
    let engine = engine(provider.clone(), spec, work.path(), work.path());

    let plan = engine.plan().await.unwrap();
    let actions: Vec<_> = plan.actions().map(|c| (c.address.to_string(), c.action)).collect();
    let mounts: Vec<_> = actions.iter().filter(|(a, _)| a.contains(".mount[")).collect();
    assert_eq!(mounts.len(), 2, "{actions:?}");
    assert!(mounts.iter().all(|(_, a)| *a == Action::Create), "{actions:?}");
    let report = engine.apply(&plan).await.unwrap();
    let failed: Vec<_> =
        report.failures().map(|s| format!("{}: {:?}", s.address, s.outcome)).collect();
    assert_eq!(failed.len(), 1, "{report:#?}");
    assert!(
        failed[0].contains("apps") && failed[0].contains("was not made by the engine"),
        "{failed:?}"
    );
    let mounts = admin.read_data("test", "sys/mounts").await.unwrap().unwrap();
    assert_eq!(mounts["apps/"]["description"], json!(""), "the foreign mount is untouched");
    assert_eq!(mounts["platform/"]["description"], json!("platform secrets [managed by engine]"));

    // State lost: the engine's own mount is found again by its marker, the foreign one is not.
    std::fs::remove_file(work.path().join("aws.state.json")).unwrap();
    let plan = engine.plan().await.unwrap();
    let action_of = |address: &str| {
        plan.changes.iter().find(|c| c.address.as_str().ends_with(address)).map(|c| c.action)
    };
    assert_eq!(action_of("mount[\"platform\"]"), Some(Action::Adopt), "{plan:#?}");
    assert_eq!(action_of("mount[\"apps\"]"), Some(Action::Create), "{plan:#?}");
}

/// People log in through an OIDC identity provider (here a second OpenBao's own OIDC provider, a
/// real one): the mount is configured with the client read from the secret store, the role
/// asks for the reference's claims and scopes, and the identity group maps the provider's
/// `admin` group to the admin policies.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn people_log_in_through_oidc_with_their_groups_policies() {
    let idp = BaoServer::dev().await;
    let idp_admin = idp.root_client();
    // The identity provider: its issuer where it is reached, and a client for OpenBao.
    idp_admin.write("test", "identity/oidc/config", &json!({"issuer": idp.address})).await.unwrap();
    let redirect = "http://localhost:8250/oidc/callback";
    idp_admin
        .write(
            "test",
            "identity/oidc/client/openbao",
            &json!({"redirect_uris": [redirect], "assignments": ["allow_all"]}),
        )
        .await
        .unwrap();
    let client = idp_admin.read("test", "identity/oidc/client/openbao").await.unwrap().unwrap();
    let client_id = client["data"]["client_id"].as_str().unwrap().to_string();
    let client_secret = client["data"]["client_secret"].as_str().unwrap().to_string();

    let server = BaoServer::dev().await;
    let work = tempfile::tempdir().unwrap();
    write_policies(work.path());
    let secrets = Arc::new(MemorySecrets::new());
    secrets.insert(
        "openbao-oidc",
        Secret::new(json!({"client_id": client_id, "client_secret": client_secret}).to_string()),
    );
    let bao =
        OpenBao::builder(Arc::new(StaticConnector(server.connection(Some(server.root_secret())))))
            .secret_sink(secrets.clone())
            .secret_source(secrets.clone())
            .build();
    let spec = format!(
        r#"
[openbao.policies]
dir = "policies"

[openbao.jwt.oidc]
type = "oidc"
oidc_discovery_url = "{}/v1/identity/oidc/provider/default"
credentials_secret = "openbao-oidc"
default_role = "default"

[openbao.jwt.oidc.roles.default]
role_type = "oidc"
allowed_redirect_uris = ["{redirect}"]
user_claim = "sub"
groups_claim = "groups"
oidc_scopes = ["profile", "email", "groups"]
token_ttl = "1h"
token_max_ttl = "8h"

[openbao.identity_groups.openbao-admin]
policies = ["admin"]
alias = {{ mount = "oidc", name = "admin" }}
"#,
        idp.address
    );
    let engine = engine(support::provider(bao), &spec, work.path(), work.path());
    let (plan, report) = engine.plan_and_apply().await.unwrap();
    assert!(report.is_success(), "{report:#?}\n{}", server.log());
    // The client's secret never reaches the plan, the state or the report.
    let state = std::fs::read_to_string(work.path().join("aws.state.json")).unwrap();
    let shown = format!("{plan:?}{state}{}", serde_json::to_string(&report).unwrap());
    assert!(!shown.contains(&client_secret), "the client secret leaked");
    assert!(!engine.plan().await.unwrap().has_changes(), "a second plan is empty");

    // OpenBao sends people to the identity provider with the client and scopes.
    let admin = server.root_client();
    let url = admin
        .write(
            "test",
            "auth/oidc/oidc/auth_url",
            &json!({"role": "default", "redirect_uri": redirect}),
        )
        .await
        .unwrap()
        .unwrap();
    let url = url["data"]["auth_url"].as_str().unwrap();
    assert!(
        url.starts_with(&format!(
            "{}/ui/vault/identity/oidc/provider/default/authorize",
            idp.address
        )),
        "{url}"
    );
    assert!(url.contains(&format!("client_id={client_id}")), "{url}");
    assert!(url.contains("groups") && url.contains("profile"), "{url}");

    // The provider's `admin` group maps to the group with the admin policies.
    let group = admin.read("test", "identity/group/name/openbao-admin").await.unwrap().unwrap();
    assert_eq!(group["data"]["type"], "external");
    assert_eq!(group["data"]["policies"], json!(["admin"]));
    assert_eq!(group["data"]["alias"]["name"], "admin");
    assert_eq!(group["data"]["alias"]["mount_path"], "auth/oidc/");

    // Someone moves the alias: drift, repaired by an update.
    let alias_id = group["data"]["alias"]["id"].as_str().unwrap();
    let accessor = group["data"]["alias"]["mount_accessor"].as_str().unwrap();
    admin
        .write(
            "test",
            &format!("identity/group-alias/id/{alias_id}"),
            &json!({"name": "everyone", "mount_accessor": accessor,
                    "canonical_id": group["data"]["id"]}),
        )
        .await
        .unwrap();
    let drift = engine.drift().await.unwrap();
    assert_eq!(drift.drifted.len(), 1, "{drift:#?}");
    let (_, report) = engine.plan_and_apply().await.unwrap();
    assert!(report.is_success(), "{report:#?}");
    let group = admin.read("test", "identity/group/name/openbao-admin").await.unwrap().unwrap();
    assert_eq!(group["data"]["alias"]["name"], "admin");

    // A destroy removes the group (and its alias) and the mount.
    let destroy = engine.plan_destroy().await.unwrap();
    assert!(engine.apply(&destroy).await.unwrap().is_success());
    let gone = admin.read("test", "identity/group/name/openbao-admin").await.unwrap();
    assert!(gone.is_none(), "{gone:?}");
}
