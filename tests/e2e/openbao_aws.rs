//! The OpenBao server stage on AWS from empty (with the network it needs): apply, what exists,
//! no-op, adoption, drift and repair, destroy keeping the lineage, confirmed destroy.

use crate::support::engine;
use engine::{Action, Engine, LocalBackend, Provider};
use engine_aws::AwsProvider;
use engine_aws::s3::snapshots;
use engine_aws::secretsmanager::{PutOutcome, SecretValue, get_secret_string, put_secret_string};
use engine_tests::{FaultProxy, Moto, ProxyRules, spec_text_through};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

const BUCKET: &str = "eu-west-3-ogenki-openbao-snapshot";
const RECORD: &str = "bao.priv.aws.ogenki.io";

/// Every lineage resource: kept by an unconfirmed destroy.
const LINEAGE: [&str; 6] = [
    "aws.openbao.kms_key.seal",
    "aws.openbao.kms_alias.seal",
    "aws.openbao.kms_replica_key.seal",
    "aws.openbao.kms_key.snapshots",
    "aws.openbao.kms_alias.snapshots",
    "aws.openbao.s3_bucket.snapshots",
];

async fn config(moto: &Moto, region: &str) -> aws_config::SdkConfig {
    moto.sdk_config()
        .await
        .into_builder()
        .region(aws_config::Region::new(region.to_string()))
        .build()
}

async fn s3(moto: &Moto) -> aws_sdk_s3::Client {
    aws_sdk_s3::Client::from_conf(
        aws_sdk_s3::config::Builder::from(&moto.sdk_config().await).force_path_style(true).build(),
    )
}

async fn confirmed(moto_config: aws_config::SdkConfig, spec: &str, dir: &Path) -> Engine {
    let (builder, _) = crate::support::lane(moto_config, spec).await;
    builder
        .state(LocalBackend::new(dir.join("aws.state.json")))
        .retry_backoff(Duration::from_millis(50))
        .confirm_protected(true)
        .build()
        .expect("spec is valid")
}

async fn stage_engine(
    moto_config: aws_config::SdkConfig,
    dir: &Path,
) -> (Engine, Arc<AwsProvider>) {
    let (builder, lane) = crate::support::lane(moto_config, &spec_text_through(3)).await;
    let provider = lane.aws;
    let engine = builder
        .state(LocalBackend::new(dir.join("aws.state.json")))
        .target("aws.openbao")
        .build()
        .expect("spec is valid");
    (engine, provider)
}

async fn key_state(kms: &aws_sdk_kms::Client, id: &str) -> String {
    kms.describe_key()
        .key_id(id)
        .send()
        .await
        .unwrap()
        .key_metadata()
        .and_then(|m| m.key_state())
        .map(|s| s.as_str().to_string())
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn openbao_server_stage_from_empty_to_destroy() {
    let moto = Moto::start();
    let dir = tempfile::tempdir().unwrap();
    let spec = spec_text_through(3);
    let (engine, provider) = engine(&moto, &spec, dir.path()).await;

    // Apply from empty: the network and the OpenBao server stage.
    let plan = engine.plan().await.unwrap();
    let stage: Vec<_> =
        plan.actions().filter(|c| c.address.as_str().starts_with("aws.openbao.")).collect();
    // 24, the SSM attachment, 8200 between nodes and from the pod range (nodes and balancer).
    assert_eq!(stage.len(), 28, "OpenBao resources");
    assert!(stage.iter().all(|c| c.action == Action::Create));
    let report = engine.apply(&plan).await.unwrap();
    assert!(
        report.is_success(),
        "{:#?}\n{}",
        report.failures().collect::<Vec<_>>(),
        moto.log().lines().rev().take(40).collect::<Vec<_>>().join("\n")
    );
    let state = engine.state_document().unwrap();
    let id = |a: &str| state.resources[a].id.clone();
    for a in LINEAGE {
        assert!(state.resources[a].protected, "{a} is protected");
    }

    // What exists, read with clients of the test's own.
    let cfg = moto.sdk_config().await;
    let kms = aws_sdk_kms::Client::new(&cfg);
    let kms2 = aws_sdk_kms::Client::new(&config(&moto, "eu-west-1").await);
    let seal = id("aws.openbao.kms_key.seal");
    let meta = kms.describe_key().key_id(&seal).send().await.unwrap();
    let meta = meta.key_metadata().unwrap();
    assert_eq!(meta.multi_region(), Some(true));
    let replica = kms2.describe_key().key_id(&seal).send().await.unwrap();
    assert!(
        replica.key_metadata().unwrap().arn().unwrap().contains(":eu-west-1:"),
        "replica in the secondary region"
    );
    let aliases = kms.list_aliases().send().await.unwrap();
    let alias = aliases
        .aliases()
        .iter()
        .find(|a| a.alias_name() == Some("alias/openbao-seal"))
        .expect("seal alias");
    assert_eq!(alias.target_key_id(), Some(seal.as_str()));
    assert!(
        kms.get_key_rotation_status().key_id(&seal).send().await.unwrap().key_rotation_enabled()
    );

    let s3c = s3(&moto).await;
    let enc = s3c.get_bucket_encryption().bucket(BUCKET).send().await.unwrap();
    let rule = &enc.server_side_encryption_configuration().unwrap().rules()[0];
    let by_default = rule.apply_server_side_encryption_by_default().unwrap();
    assert_eq!(by_default.sse_algorithm().as_str(), "aws:kms");
    assert_eq!(
        by_default.kms_master_key_id(),
        state.resources["aws.openbao.kms_key.snapshots"].attributes["arn"].as_str()
    );
    let versioning = s3c.get_bucket_versioning().bucket(BUCKET).send().await.unwrap();
    assert_eq!(versioning.status().map(|s| s.as_str()), Some("Enabled"));
    let pab = s3c.get_public_access_block().bucket(BUCKET).send().await.unwrap();
    let pab = pab.public_access_block_configuration().unwrap();
    assert_eq!(
        (
            pab.block_public_acls(),
            pab.block_public_policy(),
            pab.ignore_public_acls(),
            pab.restrict_public_buckets()
        ),
        (Some(true), Some(true), Some(true), Some(true))
    );
    let lifecycle = s3c.get_bucket_lifecycle_configuration().bucket(BUCKET).send().await.unwrap();
    let lc = &lifecycle.rules()[0];
    assert_eq!(lc.expiration().and_then(|e| e.days()), Some(30));
    assert_eq!(lc.noncurrent_version_expiration().and_then(|e| e.noncurrent_days()), Some(7));

    let asc = aws_sdk_autoscaling::Client::new(&cfg);
    let groups = asc
        .describe_auto_scaling_groups()
        .auto_scaling_group_names("aws-0-openbao")
        .send()
        .await
        .unwrap();
    let group = &groups.auto_scaling_groups()[0];
    assert_eq!(
        (group.min_size(), group.max_size(), group.desired_capacity()),
        (Some(1), Some(1), Some(1)),
        "dev mode: one node"
    );
    assert!(
        group.tags().iter().any(|t| t.key() == Some("openbao-cluster")
            && t.value() == Some("aws-0")
            && t.propagate_at_launch() == Some(true)),
        "the auto-join tag propagates to the nodes"
    );
    let elb = aws_sdk_elasticloadbalancingv2::Client::new(&cfg);
    let lbs = elb.describe_load_balancers().names("aws-0-openbao-lb").send().await.unwrap();
    let lb = &lbs.load_balancers()[0];
    assert_eq!(lb.scheme().map(|s| s.as_str()), Some("internal"));
    assert_eq!(lb.r#type().map(|s| s.as_str()), Some("network"));
    let tgs = elb.describe_target_groups().names("aws-0-openbao").send().await.unwrap();
    let tg = &tgs.target_groups()[0];
    assert_eq!(tg.port(), Some(8200));
    assert_eq!(tg.protocol().map(|p| p.as_str()), Some("TCP"));
    assert_eq!(tg.health_check_protocol().map(|p| p.as_str()), Some("HTTPS"));
    // The reference's health check: a node still joining, uninitialised or sealed is not
    // recycled; and a grace period long enough for it to boot.
    assert_eq!(
        tg.health_check_path(),
        Some(
            "/v1/sys/health?standbyok=true&uninitcode=200&sealedcode=200&drsecondarycode=200\
             &performancestandbyok=true"
        )
    );
    assert_eq!(
        (tg.health_check_interval_seconds(), tg.healthy_threshold_count()),
        (Some(30), Some(2))
    );
    assert_eq!(group.health_check_grace_period(), Some(600));
    // Nodes boot from an encrypted 20 GiB gp3 root volume, IMDSv2 with one hop.
    let ec2 = aws_sdk_ec2::Client::new(&cfg);
    let version = ec2
        .describe_launch_template_versions()
        .launch_template_name("aws-0-openbao")
        .versions("$Latest")
        .send()
        .await
        .unwrap();
    let data = version.launch_template_versions()[0].launch_template_data().unwrap();
    let root = &data.block_device_mappings()[0];
    let ebs = root.ebs().unwrap();
    assert_eq!(
        (root.device_name(), ebs.volume_size(), ebs.encrypted()),
        (Some("/dev/sda1"), Some(20), Some(true))
    );
    assert_eq!(ebs.volume_type().map(|t| t.as_str()), Some("gp3"));
    let metadata = data.metadata_options().unwrap();
    assert_eq!(metadata.http_put_response_hop_limit(), Some(1));
    // Reached through SSM, as the reference's `enable_ssm`.
    let iam = aws_sdk_iam::Client::new(&cfg);
    let attached = iam.list_attached_role_policies().role_name("aws-0-openbao").send().await;
    let attached = attached.unwrap();
    assert!(
        attached
            .attached_policies()
            .iter()
            .any(|p| p.policy_name() == Some("AmazonSSMManagedInstanceCore")),
        "{:?}",
        attached.attached_policies()
    );
    // The pods (the VPC's secondary range) reach the API.
    let rules = ec2
        .describe_security_group_rules()
        .filters(
            aws_sdk_ec2::types::Filter::builder()
                .name("group-id")
                .values(id("aws.openbao.security_group.server"))
                .build(),
        )
        .send()
        .await
        .unwrap();
    assert!(
        rules.security_group_rules().iter().any(|r| r.cidr_ipv4() == Some("100.64.0.0/16")
            && r.from_port() == Some(8200)
            && r.is_egress() == Some(false)),
        "{:?}",
        rules.security_group_rules()
    );
    let listeners = elb
        .describe_listeners()
        .load_balancer_arn(lb.load_balancer_arn().unwrap())
        .send()
        .await
        .unwrap();
    let listener = &listeners.listeners()[0];
    assert_eq!(listener.port(), Some(8200));
    assert_eq!(listener.default_actions()[0].target_group_arn(), tg.target_group_arn());

    let r53 = aws_sdk_route53::Client::new(&cfg);
    let records = r53
        .list_resource_record_sets()
        .hosted_zone_id(id("aws.network.route53_zone.private"))
        .send()
        .await
        .unwrap();
    let record = records
        .resource_record_sets()
        .iter()
        .find(|r| r.name().trim_end_matches('.') == RECORD)
        .expect("the OpenBao record");
    assert_eq!(
        record.alias_target().map(|a| a.dns_name().trim_end_matches('.').to_string()),
        lb.dns_name().map(str::to_string)
    );

    // Second plan: nothing to do; second apply: no mutating call.
    let before = provider.api_calls();
    let again = engine.plan().await.unwrap();
    assert!(
        !again.has_changes(),
        "{:#?}",
        again.actions().filter(|c| c.action != Action::NoOp).collect::<Vec<_>>()
    );
    let noop = engine.apply(&again).await.unwrap();
    assert!(noop.steps.is_empty());
    let calls = provider.api_calls().since(&before);
    assert_eq!(calls.mutating(), 0, "{:?}", calls.mutating_operations());

    // The no-op plan of the OpenBao stage alone, and what it costs.
    let (stage_engine, stage_provider) = stage_engine(cfg.clone(), dir.path()).await;
    let before = stage_provider.api_calls();
    let stage_plan = stage_engine.plan().await.unwrap();
    assert!(!stage_plan.has_changes());
    let calls = stage_provider.api_calls().since(&before);
    println!(
        "no-op plan of the OpenBao stage: {} resources, {} calls: {:?}",
        stage_plan.refreshed,
        calls.total(),
        calls.by_operation
    );
    assert_eq!(calls.mutating(), 0);
    assert!(
        calls.total() < stage_plan.refreshed as u64 + 12,
        "{} calls for {} resources",
        calls.total(),
        stage_plan.refreshed
    );

    // A run that died between create and state write: found again by ownership, adopted.
    let backend = LocalBackend::new(dir.path().join("aws.state.json"));
    let mut doc = backend.load().unwrap().unwrap();
    let forgotten = [
        "aws.openbao.kms_key.seal",
        "aws.openbao.kms_replica_key.seal",
        "aws.openbao.s3_bucket.snapshots",
        "aws.openbao.iam_instance_profile.server",
        "aws.openbao.launch_template.server",
        "aws.openbao.autoscaling_group.server",
        "aws.openbao.lb.api",
        "aws.openbao.lb_target_group.api",
        "aws.openbao.lb_listener.api",
    ];
    for a in forgotten {
        doc.resources.remove(a).expect(a);
    }
    doc.serial += 1;
    backend.save(&doc).unwrap();
    let adopt = engine.plan().await.unwrap();
    for a in forgotten {
        assert_eq!(
            adopt.change(a).map(|c| c.action),
            Some(Action::Adopt),
            "{a}: {:?}",
            adopt.change(a)
        );
    }
    assert_eq!(adopt.summary().add, 0, "nothing created twice");
    let adopted = engine.apply(&adopt).await.unwrap();
    assert!(adopted.is_success());
    assert_eq!(adopted.api_calls.mutating(), 0);
    assert!(!engine.plan().await.unwrap().has_changes());

    // Out-of-band changes: reported by drift, repaired by apply.
    s3c.put_bucket_versioning()
        .bucket(BUCKET)
        .versioning_configuration(
            aws_sdk_s3::types::VersioningConfiguration::builder()
                .status(aws_sdk_s3::types::BucketVersioningStatus::Suspended)
                .build(),
        )
        .send()
        .await
        .unwrap();
    s3c.delete_bucket_lifecycle().bucket(BUCKET).send().await.unwrap();
    asc.update_auto_scaling_group()
        .auto_scaling_group_name("aws-0-openbao")
        .max_size(3)
        .send()
        .await
        .unwrap();
    let drift = engine.drift().await.unwrap();
    let drifted: Vec<(String, Vec<String>)> = drift
        .drifted
        .iter()
        .map(|d| {
            let fields = match &d.status {
                engine::DriftStatus::Modified { fields } => {
                    fields.iter().map(|f| f.name.clone()).collect()
                }
                engine::DriftStatus::Deleted => vec!["<deleted>".into()],
            };
            (d.address.to_string(), fields)
        })
        .collect();
    let has = |a: &str, f: &str| {
        drifted.iter().any(|(addr, fields)| addr == a && fields.iter().any(|x| x == f))
    };
    assert!(has("aws.openbao.s3_bucket.snapshots", "versioning"), "{drifted:?}");
    assert!(has("aws.openbao.s3_bucket.snapshots", "lifecycle_rules"), "{drifted:?}");
    assert!(has("aws.openbao.autoscaling_group.server", "max_size"), "{drifted:?}");
    assert_eq!(drifted.len(), 2, "{drifted:?}");
    let repair = engine.plan().await.unwrap();
    assert_eq!(repair.summary().change, 2, "{:?}", repair.summary());
    assert_eq!(repair.summary().add + repair.summary().destroy, 0);
    let repaired = engine.apply(&repair).await.unwrap();
    assert!(repaired.is_success(), "{:#?}", repaired.failures().collect::<Vec<_>>());
    assert!(engine.drift().await.unwrap().is_clean());
    assert_eq!(
        s3c.get_bucket_versioning()
            .bucket(BUCKET)
            .send()
            .await
            .unwrap()
            .status()
            .map(|s| s.as_str()),
        Some("Enabled")
    );

    // Destroy keeps the lineage unless confirmed.
    let destroy = engine.plan_destroy().await.unwrap();
    for a in LINEAGE {
        assert!(destroy.kept.iter().any(|k| k.as_str() == a), "{a} kept: {:?}", destroy.kept);
        assert!(destroy.change(a).is_none(), "{a} is not deleted");
    }
    let destroyed = engine.apply(&destroy).await.unwrap();
    assert!(destroyed.is_success(), "{:#?}", destroyed.failures().collect::<Vec<_>>());
    let left = engine.state_document().unwrap();
    let mut kept: Vec<&str> = left.resources.keys().map(String::as_str).collect();
    kept.sort();
    let mut lineage = LINEAGE.to_vec();
    lineage.sort();
    assert_eq!(kept, lineage);
    assert_eq!(key_state(&kms, &seal).await, "Enabled");
    assert!(s3c.head_bucket().bucket(BUCKET).send().await.is_ok());
    assert!(
        asc.describe_auto_scaling_groups()
            .auto_scaling_group_names("aws-0-openbao")
            .send()
            .await
            .unwrap()
            .auto_scaling_groups()
            .is_empty()
    );

    // Confirmed: everything goes (keys wait out KMS's deletion window).
    let all = confirmed(cfg.clone(), &spec, dir.path()).await;
    let plan = all.plan_destroy().await.unwrap();
    assert_eq!(plan.summary().destroy, LINEAGE.len());
    let report = all.apply(&plan).await.unwrap();
    assert!(report.is_success(), "{:#?}", report.failures().collect::<Vec<_>>());
    assert!(all.state_document().unwrap().resources.is_empty());
    assert!(s3c.head_bucket().bucket(BUCKET).send().await.is_err());
    assert_eq!(key_state(&kms, &seal).await, "PendingDeletion");
    assert_eq!(key_state(&kms2, &seal).await, "PendingDeletion");
    let snapshot_key = state.resources["aws.openbao.kms_key.snapshots"].id.clone();
    assert_eq!(key_state(&kms, &snapshot_key).await, "PendingDeletion");
    assert!(
        kms.list_aliases()
            .send()
            .await
            .unwrap()
            .aliases()
            .iter()
            .all(|a| !a.alias_name().unwrap_or_default().starts_with("alias/openbao-"))
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn secrets_and_snapshots_helpers() {
    let moto = Moto::start();
    let dir = tempfile::tempdir().unwrap();
    let (_engine, provider) = engine(&moto, &spec_text_through(3), dir.path()).await;
    let clients = provider.clients();

    // Secrets: create, read, unchanged, update.
    let name = "openbao/test/root-token";
    assert_eq!(get_secret_string(clients, name).await.unwrap(), None);
    let v1 = SecretValue::new("s.first");
    assert_eq!(put_secret_string(clients, name, &v1).await.unwrap(), PutOutcome::Created);
    assert_eq!(get_secret_string(clients, name).await.unwrap(), Some(v1.clone()));
    assert_eq!(put_secret_string(clients, name, &v1).await.unwrap(), PutOutcome::Unchanged);
    let v2 = SecretValue::new("s.second");
    assert_eq!(put_secret_string(clients, name, &v2).await.unwrap(), PutOutcome::Updated);
    assert_eq!(get_secret_string(clients, name).await.unwrap(), Some(v2));

    // Snapshots: none, then the newest of several.
    let s3c = s3(&moto).await;
    let bucket = "snapshots-helper-test";
    s3c.create_bucket()
        .bucket(bucket)
        .create_bucket_configuration(
            aws_sdk_s3::types::CreateBucketConfiguration::builder()
                .location_constraint(aws_sdk_s3::types::BucketLocationConstraint::EuWest3)
                .build(),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(snapshots::newest(clients, bucket, "snapshots/").await.unwrap(), None);
    for (key, body) in [
        ("snapshots/a.snap", "first"),
        ("other/z.snap", "elsewhere"),
        ("snapshots/b.snap", "second"),
    ] {
        s3c.put_object()
            .bucket(bucket)
            .key(key)
            .body(aws_sdk_s3::primitives::ByteStream::from_static(body.as_bytes()))
            .send()
            .await
            .unwrap();
        // Distinct modification times (S3 keeps seconds).
        tokio::time::sleep(Duration::from_millis(1100)).await;
    }
    let (snap, bytes) = snapshots::download_newest(clients, bucket, "snapshots/")
        .await
        .unwrap()
        .expect("a snapshot");
    assert_eq!(snap.key, "snapshots/b.snap");
    assert_eq!(bytes, b"second");
    assert_eq!(snap.size, 6);
}

/// A run stopped between the snapshot bucket's create and the call that tags it (the proxy never
/// answers `PutBucketTagging`; moto ignores the tags `CreateBucket` carries): the next run takes
/// the untagged bucket over by the create that state records as begun, instead of refusing it as
/// someone else's, and tags it.
#[tokio::test(flavor = "multi_thread")]
async fn a_bucket_made_by_a_run_stopped_before_tagging_it_is_taken_over() {
    const ADDRESS: &str = "aws.openbao.s3_bucket.snapshots";
    let moto = Moto::start();
    let dir = tempfile::tempdir().unwrap();
    let rules = ProxyRules {
        holds: vec![("PutBucketTagging".into(), String::new())],
        ..Default::default()
    };
    let proxy = FaultProxy::start(&moto.endpoint(), &rules);
    let through = moto.sdk_config().await.into_builder().endpoint_url(proxy.endpoint()).build();
    let (stopped, _) = stage_engine(through, dir.path()).await;
    let run = tokio::spawn(async move { stopped.plan_and_apply().await.map(|_| ()) });
    let s3 = s3(&moto).await;
    let started = std::time::Instant::now();
    while s3.head_bucket().bucket(BUCKET).send().await.is_err() {
        assert!(started.elapsed() < Duration::from_secs(120), "the bucket was never created");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Its tagging call is on its way and never answered: the run is stopped there.
    tokio::time::sleep(Duration::from_millis(500)).await;
    run.abort();
    let _ = run.await;

    let state = LocalBackend::new(dir.path().join("aws.state.json")).load().unwrap().unwrap();
    assert!(state.get(ADDRESS).is_none(), "not recorded");
    assert!(state.creating.contains_key(ADDRESS), "marked begun: {:?}", state.creating);
    let tagging = s3.get_bucket_tagging().bucket(BUCKET).send().await;
    assert!(tagging.is_err(), "untagged: {tagging:?}");

    // Another state (no create begun) never takes it; this one does, with no create.
    let other = tempfile::tempdir().unwrap();
    let (stranger, _) = stage_engine(moto.sdk_config().await, other.path()).await;
    let plan = stranger.plan().await.unwrap();
    assert_eq!(plan.change(ADDRESS).map(|c| c.action), Some(Action::Create));
    let (engine, _) = stage_engine(moto.sdk_config().await, dir.path()).await;
    let plan = engine.plan().await.unwrap();
    assert_eq!(plan.change(ADDRESS).map(|c| c.action), Some(Action::Update), "{plan:#?}");
    let report = engine.apply(&plan).await.unwrap();
    assert!(report.is_success(), "{report:#?}");
    let state = engine.state_document().unwrap();
    assert!(state.get(ADDRESS).is_some() && state.creating.is_empty(), "{:?}", state.creating);
    let tags = s3.get_bucket_tagging().bucket(BUCKET).send().await.unwrap();
    assert!(tags.tag_set().iter().any(|t| t.key() == "engine:address" && t.value() == ADDRESS));
    let buckets = s3.list_buckets().send().await.unwrap();
    assert_eq!(buckets.buckets().len(), 1, "one bucket");
    assert!(!engine.plan().await.unwrap().has_changes());
}
