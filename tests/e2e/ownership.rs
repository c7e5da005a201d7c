//! Ownership: a resource is taken over only by the deployment whose lineage made it.

use crate::support::REFERENCE_RESOURCES;
use engine_tests::{Moto, network_spec_text, run_engine, text};
use std::path::{Path, PathBuf};

/// `text` written as `<dir>/aws.toml`: every deployment here has the spec name `aws`.
fn spec_in(dir: &Path, text: &str) -> PathBuf {
    let path = dir.join("aws.toml");
    std::fs::write(&path, text).unwrap();
    path
}

fn run(moto: &Moto, args: &[&str]) -> (bool, String) {
    let out = run_engine(&moto.endpoint(), args, &[]);
    (out.status.success(), text(&out))
}

/// Two deployments from two `aws.toml` in one account (their own cluster name and domain, so
/// their named resources differ): neither adopts the other's resources, even when one loses its
/// state, and destroying one leaves the other intact.
#[tokio::test(flavor = "multi_thread")]
async fn two_specs_of_the_same_name_never_take_each_other_over() {
    let moto = Moto::start();
    let (a, b, b_again) =
        (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let spec_a = spec_in(a.path(), &network_spec_text());
    let other = network_spec_text()
        .replace("cluster_name = \"aws-0\"", "cluster_name = \"aws-1\"")
        .replace("domain = \"cloud.ogenki.io\"", "domain = \"other.example\"");
    assert_ne!(other, network_spec_text());
    let spec_b = spec_in(b.path(), &other);
    let state = |d: &tempfile::TempDir| d.path().join("state.json").to_str().unwrap().to_string();
    let (sa, sb) = (state(&a), state(&b));
    let spec_a = spec_a.to_str().unwrap();
    let spec_b = spec_b.to_str().unwrap();

    let (ok, out) = run(&moto, &["apply", spec_a, "--state", &sa, "--auto-approve"]);
    assert!(ok, "{out}");
    let (ok, out) = run(&moto, &["apply", spec_b, "--state", &sb, "--auto-approve"]);
    assert!(ok, "{out}");
    assert!(!out.contains("adopt"), "B adopted something of A:\n{out}");

    // B's spec again, from a new state: everything is to create, nothing of B (same spec name,
    // same addresses, same names) or A is adopted.
    let spec_b2 = spec_in(b_again.path(), &other);
    let sb2 = state(&b_again);
    let (_, plan) = run(&moto, &["plan", spec_b2.to_str().unwrap(), "--state", &sb2]);
    assert!(!plan.contains("adopt"), "a new lineage adopted existing resources:\n{plan}");
    assert!(plan.contains(&format!("Plan: {REFERENCE_RESOURCES} to add, 0 to change")), "{plan}");

    // Destroying A leaves B whole: B's next plan has nothing to do.
    let (ok, out) = run(&moto, &["destroy", spec_a, "--state", &sa, "--auto-approve"]);
    assert!(ok, "{out}");
    let (clean, plan) = run(&moto, &["plan", spec_b, "--state", &sb, "--detailed-exitcode"]);
    assert!(clean && plan.contains("No changes"), "B was touched by A's destroy:\n{plan}");
    let ec2 = aws_sdk_ec2::Client::new(&moto.sdk_config().await);
    let vpcs = ec2.describe_vpcs().send().await.unwrap();
    let tagged =
        |v: &&aws_sdk_ec2::types::Vpc| v.tags().iter().any(|t| t.key() == Some("engine:lineage"));
    assert_eq!(vpcs.vpcs().iter().filter(tagged).count(), 1, "B's VPC alone is left");
}

/// A rule added out of band to a security group the engine owns whole, or a policy to one of its
/// roles, is drift, named, and `apply` removes it; in a group the spec marks as shared it is
/// left alone.
#[tokio::test(flavor = "multi_thread")]
async fn what_is_added_out_of_band_is_drift_unless_the_resource_is_shared() {
    let moto = Moto::start();
    let dir = tempfile::tempdir().unwrap();
    let spec = spec_in(dir.path(), &network_spec_text());
    let spec = spec.to_str().unwrap();
    let state = dir.path().join("state.json");
    let state = state.to_str().unwrap();
    let (ok, out) = run(&moto, &["apply", spec, "--state", state, "--auto-approve"]);
    assert!(ok, "{out}");
    let doc = engine_state::LocalBackend::new(state).load().unwrap().unwrap();
    let group = doc.resources["aws.network.security_group.private_access"].id.clone();
    let ec2 = aws_sdk_ec2::Client::new(&moto.sdk_config().await);
    let ssh = aws_sdk_ec2::types::IpPermission::builder()
        .ip_protocol("tcp")
        .from_port(22)
        .to_port(22)
        .ip_ranges(aws_sdk_ec2::types::IpRange::builder().cidr_ip("0.0.0.0/0").build())
        .build();
    let added = ec2
        .authorize_security_group_ingress()
        .group_id(&group)
        .ip_permissions(ssh.clone())
        .send()
        .await
        .unwrap();
    let rule = added.security_group_rules()[0].security_group_rule_id().unwrap().to_string();
    // And to the flow logs' role: a managed policy attached, an inline policy put.
    let iam = aws_sdk_iam::Client::new(&moto.sdk_config().await);
    let (role, admin) = ("aws-0-vpc-flow-logs", "arn:aws:iam::aws:policy/AdministratorAccess");
    iam.attach_role_policy().role_name(role).policy_arn(admin).send().await.unwrap();
    let anything =
        r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"*","Resource":"*"}]}"#;
    let put = iam.put_role_policy().role_name(role).policy_name("extra").policy_document(anything);
    put.send().await.unwrap();

    let drift = run_engine(&moto.endpoint(), &["drift", spec, "--state", state], &[]);
    let shown = text(&drift);
    assert_eq!(drift.status.code(), Some(2), "{shown}");
    assert!(shown.contains("foreign_rules") && shown.contains(&rule), "{shown}");
    assert!(shown.contains("foreign_policies") && shown.contains(admin), "{shown}");
    assert!(shown.contains("inline:extra"), "{shown}");
    let (ok, out) = run(&moto, &["apply", spec, "--state", state, "--auto-approve"]);
    assert!(ok, "{out}");
    let attached = iam.list_attached_role_policies().role_name(role).send().await.unwrap();
    assert!(attached.attached_policies().is_empty(), "the attached policy is detached");
    let inline = iam.list_role_policies().role_name(role).send().await.unwrap();
    assert_eq!(inline.policy_names(), ["flow-logs-to-cloudwatch"], "the spec's own stays");
    let left = ec2
        .describe_security_group_rules()
        .filters(aws_sdk_ec2::types::Filter::builder().name("group-id").values(&group).build());
    let left = left.send().await.unwrap();
    assert!(
        left.security_group_rules().iter().all(|r| r.security_group_rule_id() != Some(&rule)),
        "the foreign rule is revoked"
    );
    let drift = run_engine(&moto.endpoint(), &["drift", spec, "--state", state], &[]);
    assert_eq!(drift.status.code(), Some(0), "{}", text(&drift));

    // A group the spec marks as shared: a rule added out of band is the controller's business.
    let moto = Moto::start();
    let dir = tempfile::tempdir().unwrap();
    let shared = network_spec_text().replace(
        "[globals.tags]",
        "shared = [\"aws.network.security_group.private_access\"]\n\n[globals.tags]",
    );
    assert_ne!(shared, network_spec_text());
    let spec = spec_in(dir.path(), &shared);
    let spec = spec.to_str().unwrap();
    let state = dir.path().join("state.json");
    let state = state.to_str().unwrap();
    let (ok, out) = run(&moto, &["apply", spec, "--state", state, "--auto-approve"]);
    assert!(ok, "{out}");
    let doc = engine_state::LocalBackend::new(state).load().unwrap().unwrap();
    let group = doc.resources["aws.network.security_group.private_access"].id.clone();
    let ec2 = aws_sdk_ec2::Client::new(&moto.sdk_config().await);
    ec2.authorize_security_group_ingress()
        .group_id(&group)
        .ip_permissions(ssh)
        .send()
        .await
        .unwrap();
    let drift = run_engine(&moto.endpoint(), &["drift", spec, "--state", state], &[]);
    assert_eq!(drift.status.code(), Some(0), "{}", text(&drift));
    let (clean, plan) = run(&moto, &["plan", spec, "--state", state, "--detailed-exitcode"]);
    assert!(clean, "{plan}");
}
