//! Taking over what OpenTofu built: the network stage applied by Terraform (the configuration in
//! bench/vs-terraform/network, the reference's module naming) against moto, its state imported
//! from the bucket key the reference keeps it at with `engine import --from-tofu`, and the
//! engine's plan creates and replaces nothing.

use crate::support::{owned, reference_counts};
use engine_tests::{Moto, network_spec_path, run_engine, text, workspace};
use std::path::Path;
use std::process::Command;

/// Terraform applies `bench/vs-terraform/network` against `moto` in `dir`; answers its state
/// file. Terraform and its AWS provider come with this machine (testenv/terraform-config.sh).
fn terraform_applies_the_network(moto: &Moto, dir: &Path) -> std::path::PathBuf {
    let config = Command::new(workspace().join("testenv/terraform-config.sh"))
        .output()
        .expect("run testenv/terraform-config.sh");
    assert!(
        config.status.success(),
        "Terraform is needed to prove the takeover and is missing here: {}",
        String::from_utf8_lossy(&config.stderr)
    );
    let config = String::from_utf8(config.stdout).unwrap().trim().to_string();
    std::fs::copy(workspace().join("bench/vs-terraform/network/main.tf"), dir.join("main.tf"))
        .unwrap();
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
    let tfstate = terraform_applies_the_network(&moto, &tf);
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
    assert!(out.contains("aws.network.route_table.public <= aws_route_table.public"), "{out}");
    assert!(!out.contains("Not taken over"), "everything Terraform made is the spec's: {out}");

    let plan = run_engine(&moto.endpoint(), &["plan", spec, "--state", state, "--json"], &[]);
    assert!(plan.status.success(), "{}", text(&plan));
    let plan: serde_json::Value = serde_json::from_slice(&plan.stdout).unwrap();
    let actions: Vec<(String, String)> = plan["resource_changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["action"].as_str().unwrap().to_string(), c["address"].to_string()))
        .collect();
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
