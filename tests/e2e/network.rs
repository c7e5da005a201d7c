//! The network stage from empty: apply, no-op, drift and repair, replace, destroy.

use crate::support::{self, REFERENCE_RESOURCES, engine, owned, reference_counts};
use engine::{Action, DriftStatus, Provider};
use engine_tests::{Moto, network_spec_text, run_engine, text};

#[tokio::test(flavor = "multi_thread")]
async fn apply_from_empty_then_nothing_to_do() {
    let moto = Moto::start();
    let dir = tempfile::tempdir().unwrap();
    let (engine, provider) = engine(&moto, &network_spec_text(), dir.path()).await;

    let plan = engine.plan().await.unwrap();
    assert_eq!(plan.summary().add, REFERENCE_RESOURCES, "every resource is created");
    assert_eq!(plan.summary().destroy, 0);
    let report = engine.apply(&plan).await.unwrap();
    assert!(report.is_success(), "{:#?}", report.failures().collect::<Vec<_>>());
    assert_eq!(report.count(Action::Create), REFERENCE_RESOURCES);
    assert_eq!(owned(&moto).await, reference_counts());

    // Every resource is in state with its id and the ownership tags where the kind has tags.
    let state = engine.state_document().unwrap();
    assert_eq!(state.resources.len(), REFERENCE_RESOURCES);
    let vpc = &state.resources["aws.network.vpc.main"];
    assert!(vpc.id.starts_with("vpc-"), "{vpc:?}");
    assert_eq!(vpc.attributes["tags"]["engine:address"], "aws.network.vpc.main");

    // Second plan: nothing to do. Second apply: no mutating call at all.
    let before = provider.api_calls();
    let again = engine.plan().await.unwrap();
    assert!(!again.has_changes(), "{:#?}", again.actions().collect::<Vec<_>>());
    let noop = engine.apply(&again).await.unwrap();
    assert!(noop.steps.is_empty());
    let calls = provider.api_calls().since(&before);
    assert_eq!(
        calls.mutating(),
        0,
        "mutating calls on a no-op run: {:?}",
        calls.mutating_operations()
    );
    assert!(calls.total() > 0, "the plan did read the cloud");
    assert!(
        calls.total() < REFERENCE_RESOURCES as u64,
        "refresh is batched: {} calls for {REFERENCE_RESOURCES} resources ({:?})",
        calls.total(),
        calls.by_operation
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn drift_is_reported_by_field_and_repaired_by_apply() {
    let moto = Moto::start();
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("aws.state.json");
    let state_arg = state.to_str().unwrap();
    let spec = engine_tests::network_spec_path();
    let spec_arg = spec.to_str().unwrap();
    let out = run_engine(
        &moto.endpoint(),
        &["apply", spec_arg, "--state", state_arg, "--auto-approve"],
        &[],
    );
    assert!(out.status.success(), "{}", text(&out));
    let clean = run_engine(&moto.endpoint(), &["drift", spec_arg, "--state", state_arg], &[]);
    assert_eq!(clean.status.code(), Some(0), "{}", text(&clean));

    // Out-of-band changes with another client.
    let doc = engine_state::LocalBackend::new(&state).load().unwrap().unwrap();
    let id = |a: &str| doc.resources[a].id.clone();
    let ec2 = aws_sdk_ec2::Client::new(&moto.sdk_config().await);
    ec2.modify_vpc_attribute()
        .vpc_id(id("aws.network.vpc.main"))
        .enable_dns_hostnames(
            aws_sdk_ec2::types::AttributeBooleanValue::builder().value(false).build(),
        )
        .send()
        .await
        .unwrap();
    ec2.create_tags()
        .resources(id("aws.network.subnet.public[\"eu-west-3b\"]"))
        .tags(aws_sdk_ec2::types::Tag::builder().key("Name").value("hand-edited").build())
        .send()
        .await
        .unwrap();
    let (table, _) = id("aws.network.route.private_nat")
        .split_once('/')
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .unwrap();
    ec2.delete_route()
        .route_table_id(table)
        .destination_cidr_block("0.0.0.0/0")
        .send()
        .await
        .unwrap();

    let drift = run_engine(&moto.endpoint(), &["drift", spec_arg, "--state", state_arg], &[]);
    let report = text(&drift);
    assert_eq!(drift.status.code(), Some(2), "{report}");
    assert!(report.contains("aws.network.vpc.main"), "{report}");
    assert!(report.contains("enable_dns_hostnames = true (applied) -> false (live)"), "{report}");
    assert!(report.contains("aws.network.subnet.public[\"eu-west-3b\"]"), "{report}");
    assert!(report.contains("hand-edited"), "{report}");
    assert!(
        report.contains("aws.network.route.private_nat")
            && report.contains("deleted outside the engine"),
        "{report}"
    );
    // Compared with the spec as well, the same three show as what an apply would change.
    let both = run_engine(
        &moto.endpoint(),
        &["drift", spec_arg, "--state", state_arg, "--against", "both"],
        &[],
    );
    let both_text = text(&both);
    assert_eq!(both.status.code(), Some(2), "{both_text}");
    assert!(both_text.contains("3 of "), "{both_text}");
    assert!(
        both_text.contains("the spec differs: 1 to add, 2 to change, 0 to destroy."),
        "{both_text}"
    );
    // Drift never writes state.
    let after = engine_state::LocalBackend::new(&state).load().unwrap().unwrap();
    assert_eq!(after.serial, doc.serial, "drift wrote the state");

    // The JSON report names the same fields.
    let json_out =
        run_engine(&moto.endpoint(), &["drift", spec_arg, "--state", state_arg, "--json"], &[]);
    let v: serde_json::Value =
        serde_json::from_slice(&json_out.stdout).unwrap_or_else(|_| panic!("{}", text(&json_out)));
    assert_eq!(v["clean"], false);
    let drifted = v["drifted"].as_array().unwrap();
    assert_eq!(drifted.len(), 3, "{v:#}");
    let vpc = drifted.iter().find(|d| d["address"] == "aws.network.vpc.main").unwrap();
    assert_eq!(vpc["status"], "modified");
    assert_eq!(vpc["fields"][0]["name"], "enable_dns_hostnames");

    // Apply repairs all three; drift is clean again.
    let repair = run_engine(
        &moto.endpoint(),
        &["apply", spec_arg, "--state", state_arg, "--auto-approve"],
        &[],
    );
    let repair_text = text(&repair);
    assert!(repair.status.success(), "{repair_text}");
    assert!(repair_text.contains("Plan: 1 to add, 2 to change, 0 to destroy."), "{repair_text}");
    let clean = run_engine(&moto.endpoint(), &["drift", spec_arg, "--state", state_arg], &[]);
    assert_eq!(clean.status.code(), Some(0), "{}", text(&clean));

    // A spec edit not applied yet: no change was made outside the engine, but the live
    // resources no longer match the spec.
    let overlay = dir.path().join("edit.toml");
    std::fs::write(&overlay, "[globals.tags]\nreviewed = \"2026-12\"\n").unwrap();
    let edited = |against: &str| {
        run_engine(
            &moto.endpoint(),
            &[
                "drift",
                spec_arg,
                "--state",
                state_arg,
                "--overlay",
                overlay.to_str().unwrap(),
                "--against",
                against,
            ],
            &[],
        )
    };
    let applied = edited("applied");
    assert_eq!(applied.status.code(), Some(0), "{}", text(&applied));
    let spec_drift = edited("spec");
    let spec_text = text(&spec_drift);
    assert_eq!(spec_drift.status.code(), Some(2), "{spec_text}");
    assert!(spec_text.contains("reviewed"), "{spec_text}");
    assert!(spec_text.contains("aws.network.vpc.main"), "{spec_text}");
    assert!(spec_text.contains("0 to add,") && spec_text.contains("0 to destroy."), "{spec_text}");
}

#[tokio::test(flavor = "multi_thread")]
async fn cidr_change_replaces_and_tag_change_updates_in_place() {
    let moto = Moto::start();
    let dir = tempfile::tempdir().unwrap();
    let spec = network_spec_text();
    let (engine, _) = engine(&moto, &spec, dir.path()).await;
    let report = engine.apply(&engine.plan().await.unwrap()).await.unwrap();
    assert!(report.is_success());
    let old_subnet =
        engine.state_document().unwrap().resources["aws.network.subnet.intra[\"eu-west-3c\"]"]
            .id
            .clone();

    let changed = spec
        .replace("\"10.0.54.0/24\"", "\"10.0.55.0/24\"")
        .replace("environment = \"dev\"", "environment = \"staging\"");
    let (engine, _) = support::engine(&moto, &changed, dir.path()).await;
    let plan = engine.plan().await.unwrap();
    let subnet = plan.change("aws.network.subnet.intra[\"eu-west-3c\"]").unwrap();
    assert_eq!(subnet.action, Action::Replace);
    let cidr = subnet.fields.iter().find(|f| f.name == "cidr_block").unwrap();
    assert!(cidr.forces_replacement);
    // The association follows the subnet it points at.
    let assoc = plan.change("aws.network.route_table_association.intra[\"eu-west-3c\"]").unwrap();
    assert_eq!(assoc.action, Action::Replace);
    // A tag change is an update in place everywhere else.
    let vpc = plan.change("aws.network.vpc.main").unwrap();
    assert_eq!(vpc.action, Action::Update);
    assert!(vpc.fields.iter().all(|f| f.name == "tags" && !f.forces_replacement));
    let s = plan.summary();
    assert_eq!((s.add, s.destroy), (2, 2), "{s:?}");

    let report = engine.apply(&plan).await.unwrap();
    assert!(report.is_success(), "{:#?}", report.failures().collect::<Vec<_>>());
    let state = engine.state_document().unwrap();
    let new_subnet = &state.resources["aws.network.subnet.intra[\"eu-west-3c\"]"];
    assert_ne!(new_subnet.id, old_subnet);
    assert_eq!(new_subnet.attributes["cidr_block"], "10.0.55.0/24");
    assert!(!engine.plan().await.unwrap().has_changes());
    assert_eq!(owned(&moto).await.subnets, 12, "the old subnet is gone");
}

#[tokio::test(flavor = "multi_thread")]
async fn destroy_leaves_nothing_carrying_the_ownership_tags() {
    let moto = Moto::start();
    let dir = tempfile::tempdir().unwrap();
    let (engine, _) = engine(&moto, &network_spec_text(), dir.path()).await;
    assert!(engine.apply(&engine.plan().await.unwrap()).await.unwrap().is_success());
    assert_eq!(owned(&moto).await, reference_counts());

    let plan = engine.plan_destroy().await.unwrap();
    assert_eq!(plan.summary().destroy, REFERENCE_RESOURCES);
    // Dependents come before what they depend on.
    let pos = |a: &str| plan.changes.iter().position(|c| c.address.as_str() == a).unwrap();
    assert!(
        pos("aws.network.nat_gateway.main[\"eu-west-3a\"]")
            < pos("aws.network.eip.nat[\"eu-west-3a\"]")
    );
    assert!(pos("aws.network.subnet.private[\"eu-west-3a\"]") < pos("aws.network.vpc.main"));
    let report = engine.apply(&plan).await.unwrap();
    assert!(report.is_success(), "{:#?}", report.failures().collect::<Vec<_>>());
    let left = owned(&moto).await;
    assert_eq!(left.total(), 0, "left behind: {left:?}");
    assert!(engine.state_document().unwrap().resources.is_empty());
    // Destroying again is a no-op.
    assert!(!engine.plan_destroy().await.unwrap().has_changes());
}

#[tokio::test(flavor = "multi_thread")]
async fn per_az_nat_mode_builds_a_gateway_and_route_table_per_zone() {
    let moto = Moto::start();
    let dir = tempfile::tempdir().unwrap();
    let spec = network_spec_text().replace("nat = \"single\"", "nat = \"per-az\"");
    let (engine, _) = engine(&moto, &spec, dir.path()).await;
    let report = engine.apply(&engine.plan().await.unwrap()).await.unwrap();
    assert!(report.is_success(), "{:#?}", report.failures().collect::<Vec<_>>());
    let o = owned(&moto).await;
    assert_eq!((o.nat_gateways, o.eips, o.route_tables), (3, 3, 5), "{o:?}");
    assert!(!engine.plan().await.unwrap().has_changes());
    let drift = engine.drift().await.unwrap();
    assert!(drift.is_clean(), "{:?}", drift.drifted);
    assert!(drift.drifted.iter().all(|d| d.status != DriftStatus::Deleted));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failed_step_skips_its_dependents_and_the_rest_goes_on() {
    let moto = Moto::start();
    // Someone else's role already has the name the spec gives the flow-logs role.
    let iam = aws_sdk_iam::Client::new(&moto.sdk_config().await);
    iam.create_role()
        .role_name("aws-0-vpc-flow-logs")
        .assume_role_policy_document(r#"{"Version":"2012-10-17","Statement":[]}"#)
        .send()
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (engine, _) = engine(&moto, &network_spec_text(), dir.path()).await;
    let plan = engine.plan().await.unwrap();
    assert_eq!(
        plan.change("aws.network.iam_role.flow_logs").unwrap().action,
        Action::Create,
        "a same-named role without the engine's tags is not adopted"
    );

    let report = engine.apply(&plan).await.unwrap();
    assert!(!report.is_success());
    let failed: Vec<_> = report.failures().collect();
    assert_eq!(failed.len(), 1, "{failed:#?}");
    assert_eq!(failed[0].address.as_str(), "aws.network.iam_role.flow_logs");
    assert!(
        matches!(&failed[0].outcome, engine::StepOutcome::Failed(why) if why.contains("EntityAlreadyExists")),
        "{failed:#?}"
    );
    let mut skipped: Vec<&str> = report
        .steps
        .iter()
        .filter(|s| matches!(s.outcome, engine::StepOutcome::Skipped(_)))
        .map(|s| s.address.as_str())
        .collect();
    skipped.sort();
    assert_eq!(skipped, ["aws.network.flow_log.vpc", "aws.network.iam_role_policy.flow_logs"]);
    assert_eq!(report.count(Action::Create), REFERENCE_RESOURCES - 3);
    assert_eq!(engine.state_document().unwrap().resources.len(), REFERENCE_RESOURCES - 3);
    // The foreign role is untouched.
    let role = iam.get_role().role_name("aws-0-vpc-flow-logs").send().await.unwrap();
    assert!(role.role().unwrap().tags().is_empty());
}
