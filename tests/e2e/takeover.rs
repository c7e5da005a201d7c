//! Taking over what OpenTofu built: the network stage and OpenBao's lineage applied by Terraform
//! (the configurations in bench/vs-terraform/{network,lineage}, the reference's names) against
//! moto, their states imported with `engine import --from-tofu`, and the engine's plan creates
//! and replaces nothing; OpenBao's configuration (mounts, policies, auth methods) made through
//! the Vault provider taken over with its data.

use crate::support::{owned, reference_counts};
use engine::spec::SpecSource;
use engine::{Action, Engine, LocalBackend, Secret};
use engine_lanes::LaneBuilder;
use engine_openbao::{BaoClient, BaoConnection};
use engine_pki as pki;
use engine_tests::{BaoServer, Moto, network_spec_path, run_engine, text, workspace};
use serde_json::json;
use std::path::Path;
use std::process::Command;

/// The `.tf` files under `from` (a configuration and its local modules) copied into `to`.
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        let target = to.join(path.file_name().unwrap());
        if path.is_dir() {
            copy_tree(&path, &target);
        } else if path.extension().is_some_and(|e| e == "tf") {
            std::fs::copy(&path, target).unwrap();
        }
    }
}

/// Terraform applies `bench/vs-terraform/<stage>` against `moto` in `dir`; answers its state
/// file. Terraform and its AWS provider come with this machine (testenv/terraform-config.sh).
fn terraform_applies(moto: &Moto, stage: &str, dir: &Path) -> std::path::PathBuf {
    let config = Command::new(workspace().join("testenv/terraform-config.sh"))
        .output()
        .expect("run testenv/terraform-config.sh");
    assert!(
        config.status.success(),
        "Terraform is needed to prove the takeover and is missing here: {}",
        String::from_utf8_lossy(&config.stderr)
    );
    let config = String::from_utf8(config.stdout).unwrap().trim().to_string();
    copy_tree(&workspace().join(format!("bench/vs-terraform/{stage}")), dir);
    let terraform = |args: &[&str]| {
        let out = Command::new("terraform")
            .args(args)
            .current_dir(dir)
            .env("TF_CLI_CONFIG_FILE", &config)
            .env("TF_IN_AUTOMATION", "1")
            .env("AWS_ACCESS_KEY_ID", "test")
            .env("AWS_SECRET_ACCESS_KEY", "test")
            .env("AWS_REGION", "eu-west-3")
            .env_remove("AWS_PROFILE")
            .output()
            .expect("run terraform");
        let shown = format!(
            "terraform {args:?}: {:?}\n{}\n{}",
            out.status.code(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "{shown}");
    };
    terraform(&["init", "-input=false", "-no-color"]);
    let endpoint = format!("endpoint={}", moto.endpoint());
    terraform(&["apply", "-auto-approve", "-input=false", "-no-color", "-var", &endpoint]);
    dir.join("terraform.tfstate")
}

#[tokio::test(flavor = "multi_thread")]
async fn the_network_terraform_built_is_taken_over_with_nothing_created_or_replaced() {
    let moto = Moto::start();
    let work = tempfile::tempdir().unwrap();
    let tf = work.path().join("tf");
    std::fs::create_dir_all(&tf).unwrap();
    let tfstate = terraform_applies(&moto, "network", &tf);
    let before = owned(&moto).await;
    assert_eq!((before.vpcs, before.subnets), (0, 0), "nothing carries the engine's tags yet");
    let spec = network_spec_path();
    let state = work.path().join("aws.state.json");
    let (spec, state, tfstate) =
        (spec.to_str().unwrap(), state.to_str().unwrap(), tfstate.to_str().unwrap());

    let import = run_engine(
        &moto.endpoint(),
        &["import", "--from-tofu", tfstate, spec, "--state", state],
        &[],
    );
    let out = text(&import);
    assert!(import.status.success(), "{out}");
    assert!(out.contains("Taken over from OpenTofu: 44 resources"), "{out}");
    assert!(
        out.contains("aws.network.route_table.public <= module.vpc[0].aws_route_table.public"),
        "{out}"
    );
    assert!(!out.contains("Not taken over"), "everything Terraform made is the spec's: {out}");

    let actions = plan_actions(&run_engine(
        &moto.endpoint(),
        &["plan", spec, "--state", state, "--json"],
        &[],
    ));
    let forbidden: Vec<_> = actions
        .iter()
        .filter(|(a, _)| matches!(a.as_str(), "create" | "replace" | "delete"))
        .collect();
    assert!(forbidden.is_empty(), "nothing created, replaced or deleted: {forbidden:?}");
    assert!(actions.iter().any(|(a, _)| a == "update"), "the engine's tags are added: {actions:?}");

    let apply =
        run_engine(&moto.endpoint(), &["apply", spec, "--state", state, "--auto-approve"], &[]);
    assert!(apply.status.success(), "{}", text(&apply));
    assert!(text(&apply).contains("0 added"), "{}", text(&apply));
    assert_eq!(owned(&moto).await, reference_counts(), "every resource once, now the engine's");
    let drift = run_engine(&moto.endpoint(), &["drift", spec, "--state", state], &[]);
    assert_eq!(drift.status.code(), Some(0), "{}", text(&drift));
    let again =
        run_engine(&moto.endpoint(), &["plan", spec, "--state", state, "--detailed-exitcode"], &[]);
    assert_eq!(again.status.code(), Some(0), "{}", text(&again));
}

/// The actions of a `plan --json`, as (action, address).
fn plan_actions(plan: &std::process::Output) -> Vec<(String, String)> {
    assert!(plan.status.success(), "{}", text(plan));
    let plan: serde_json::Value = serde_json::from_slice(&plan.stdout).unwrap();
    plan["resource_changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["action"].as_str().unwrap().to_string(), c["address"].to_string()))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn openbaos_lineage_terraform_built_is_taken_over_never_made_again() {
    let moto = Moto::start();
    let work = tempfile::tempdir().unwrap();
    let tf = work.path().join("tf");
    std::fs::create_dir_all(&tf).unwrap();
    let tfstate = terraform_applies(&moto, "lineage", &tf);
    // specs/aws.toml as it is, its offline root where this test keeps one.
    pki::init_root(&work.path().join("pki")).unwrap();
    let overlay = work.path().join("overlay.toml");
    std::fs::write(
        &overlay,
        format!("[openbao]\nca_file = \"{}\"\n", work.path().join("pki/root-ca.crt").display()),
    )
    .unwrap();
    let spec = workspace().join("specs/aws.toml");
    let state = work.path().join("aws.state.json");
    let (spec, overlay, state, tfstate) = (
        spec.to_str().unwrap(),
        overlay.to_str().unwrap(),
        state.to_str().unwrap(),
        tfstate.to_str().unwrap(),
    );
    let lineage = [
        "--target",
        "aws.openbao.kms_key",
        "--target",
        "aws.openbao.kms_alias",
        "--target",
        "aws.openbao.kms_replica_key",
        "--target",
        "aws.openbao.s3_bucket",
    ];
    let overlaid = |args: &[&str]| -> Vec<String> {
        let mut all: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        all.extend(["--overlay".to_string(), overlay.to_string()]);
        all.extend(["--state".to_string(), state.to_string()]);
        all.extend(lineage.iter().map(|a| a.to_string()));
        all
    };
    let run = |args: Vec<String>| {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        run_engine(&moto.endpoint(), &args, &[])
    };

    let import = run(overlaid(&["import", "--from-tofu", tfstate, spec]));
    let out = text(&import);
    assert!(import.status.success(), "{out}");
    assert!(out.contains("Taken over from OpenTofu: 6 resources"), "{out}");
    assert!(out.contains("aws.openbao.kms_key.seal <= aws_kms_key.openbao"), "{out}");
    assert!(out.contains("aws.openbao.s3_bucket.snapshots <= aws_s3_bucket.snapshot"), "{out}");
    assert!(!out.contains("Not taken over"), "the bucket's settings are the bucket's: {out}");

    let actions = plan_actions(&run(overlaid(&["plan", spec, "--json"])));
    assert_eq!(actions.len(), 6, "{actions:?}");
    let forbidden: Vec<_> = actions
        .iter()
        .filter(|(a, _)| matches!(a.as_str(), "create" | "replace" | "delete"))
        .collect();
    assert!(forbidden.is_empty(), "no key, alias or bucket made again: {forbidden:?}");

    let apply = run(overlaid(&["apply", spec, "--auto-approve"]));
    assert!(apply.status.success(), "{}", text(&apply));
    assert!(text(&apply).contains("0 added"), "{}", text(&apply));
    let kms = aws_sdk_kms::Client::new(&moto.sdk_config().await);
    let keys = kms.list_keys().send().await.unwrap();
    assert_eq!(keys.keys().len(), 2, "the seal and snapshot keys, once each");
    let again = run(overlaid(&["plan", spec, "--detailed-exitcode"]));
    assert_eq!(again.status.code(), Some(0), "{}", text(&again));
}

/// A policy as the reference's management stack writes it.
const READER: &str = "path \"platform/data/*\" {\n  capabilities = [\"read\"]\n}\n";

#[tokio::test(flavor = "multi_thread")]
async fn openbaos_configuration_opentofu_made_is_taken_over_with_its_data() {
    let moto = Moto::start();
    let sdk = moto.sdk_config().await;
    let bao = BaoServer::dev().await;
    let token = bao.root_token.clone().unwrap();

    // What the reference's stacks left: the root token where it keeps it (field `token`), a kv
    // mount holding data, a policy, the userpass method.
    aws_sdk_secretsmanager::Client::new(&sdk)
        .create_secret()
        .name("openbao/cloud-native-ref/tokens/root")
        .secret_string(json!({ "token": token }).to_string())
        .send()
        .await
        .unwrap();
    let connection = BaoConnection {
        route: None,
        address: bao.address.clone(),
        ca_bundle: None,
        token: Some(Secret::new(token.clone())),
    };
    let root = BaoClient::new(&connection).unwrap();
    let made =
        json!({"type": "kv", "options": {"version": "2"}, "description": "platform secrets"});
    root.write("test", "sys/mounts/platform", &made).await.unwrap();
    root.write("test", "platform/data/app", &json!({"data": {"password": "kept"}})).await.unwrap();
    root.write("test", "sys/policies/acl/reader", &json!({ "policy": READER })).await.unwrap();
    root.write("test", "sys/auth/userpass", &json!({"type": "userpass"})).await.unwrap();
    // Their OpenTofu state, with the Vault provider's types and attributes (that provider is
    // not on this machine, so the state is written here as it records these resources).
    let instance = |kind: &str, name: &str, attributes: serde_json::Value| {
        json!({"mode": "managed", "type": kind, "name": name,
               "provider": "provider[\"registry.opentofu.org/hashicorp/vault\"]",
               "instances": [{"schema_version": 0, "attributes": attributes}]})
    };
    let tfstate = json!({"version": 4, "terraform_version": "1.11.4", "resources": [
        instance("vault_mount", "platform", json!({
            "id": "platform", "path": "platform", "type": "kv-v2",
            "description": "platform secrets", "options": {"version": "2"},
            "default_lease_ttl_seconds": 0, "max_lease_ttl_seconds": 0,
        })),
        instance("vault_policy", "reader", json!({"id": "reader", "name": "reader", "policy": READER})),
        instance("vault_auth_backend", "userpass", json!({"id": "userpass", "path": "userpass", "type": "userpass"})),
    ]});
    let instances =
        engine::tofu_import::read_tofu_state("management.tfstate", &tfstate.to_string()).unwrap();

    // The engine's spec of the same configuration, with the reference's secret names.
    let work = tempfile::tempdir().unwrap();
    let spec_path = work.path().join("aws.toml");
    let config = format!(
        "\n[openbao.init]\nsecret_prefix = \"openbao/cloud-native-ref\"\n\
         root_token_secret = \"openbao/cloud-native-ref/tokens/root#token\"\n\n\
         [openbao.mounts.platform]\ntype = \"kv-v2\"\ndescription = \"platform secrets\"\n\n\
         [openbao.policies.inline]\nreader = '''{READER}'''\n\n\
         [openbao.userpass.users.admin]\npolicies = [\"reader\"]\n"
    );
    std::fs::write(&spec_path, engine_tests::spec_text_through(0) + &config).unwrap();
    let spec = SpecSource::from_file(&spec_path).unwrap();
    let lane = LaneBuilder::new(&spec)
        .aws_config(sdk.clone())
        .openbao_address(&bao.address, None)
        .state_path(&work.path().join("aws.state.json"))
        .build()
        .await;
    let engine = lane
        .add_to(Engine::builder().spec(spec.clone()))
        .state(LocalBackend::new(work.path().join("aws.state.json")))
        .build()
        .unwrap_or_else(|e| panic!("{e:?}"));

    let matching = engine.import_from_tofu(&instances).unwrap();
    let kinds: Vec<&str> = matching.matched.values().map(|r| r.kind.as_str()).collect();
    assert_eq!(kinds.len(), 3, "{matching:?}");
    assert!(matching.unmatched.is_empty() && matching.unknown.is_empty(), "{matching:?}");
    let plan = engine.plan().await.unwrap();
    for change in &plan.changes {
        if matching.matched.contains_key(&change.address) {
            assert!(
                !matches!(change.action, Action::Create | Action::Replace | Action::Delete),
                "{} is OpenTofu's and must be taken over: {:?}",
                change.address,
                change.action
            );
        }
    }
    let report = engine.apply(&plan).await.unwrap();
    assert!(report.is_success(), "{:#?}", report.failures().collect::<Vec<_>>());
    let kept =
        root.read_data("test", "platform/data/app").await.unwrap().expect("the data is kept");
    assert_eq!(kept["data"]["password"], "kept");
    let again = engine.plan().await.unwrap();
    assert!(again.changes.iter().all(|c| c.action == Action::NoOp), "{:?}", again.summary());
}
