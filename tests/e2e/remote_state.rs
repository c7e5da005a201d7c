//! State kept in S3 (moto): conditional saves, leases raced for, renewed, expired after a kill
//! and lost mid-apply, with nothing lost and no duplicate made.

use crate::support::{REFERENCE_RESOURCES, exactly_one_wins_each_round, owned, reference_counts};
use aws_sdk_s3::types::{
    BucketLocationConstraint, BucketVersioningStatus, CreateBucketConfiguration,
    VersioningConfiguration,
};
use engine_aws::S3StateStore;
use engine_state::{Backend, RemoteBackend, StateError};
use engine_tests::{
    FaultProxy, Moto, ProxyRules, engine_command, network_spec_path, run_engine, text,
};
use std::sync::Arc;
use std::time::{Duration, Instant};

const BUCKET: &str = "engine-state";

/// The state bucket, versioned, and a client to look into it.
async fn state_bucket(moto: &Moto) -> aws_sdk_s3::Client {
    let s3 = aws_sdk_s3::Client::from_conf(
        aws_sdk_s3::config::Builder::from(&moto.sdk_config().await).force_path_style(true).build(),
    );
    s3.create_bucket()
        .bucket(BUCKET)
        .create_bucket_configuration(
            CreateBucketConfiguration::builder()
                .location_constraint(BucketLocationConstraint::from("eu-west-3"))
                .build(),
        )
        .send()
        .await
        .expect("CreateBucket");
    s3.put_bucket_versioning()
        .bucket(BUCKET)
        .versioning_configuration(
            VersioningConfiguration::builder().status(BucketVersioningStatus::Enabled).build(),
        )
        .send()
        .await
        .expect("PutBucketVersioning");
    s3
}

/// The object at `key` in the state bucket, if there is one.
async fn object(s3: &aws_sdk_s3::Client, key: &str) -> Option<Vec<u8>> {
    let out = s3.get_object().bucket(BUCKET).key(key).send().await.ok()?;
    Some(out.body.collect().await.expect("object body").into_bytes().to_vec())
}

/// `engine apply` of the network spec with its state in S3 under leases of 3 s.
fn apply_with_leases_of_3s(dir: &std::path::Path) -> Vec<String> {
    let overlay = s3_overlay(dir, "aws/network.json", 3);
    let spec = network_spec_path();
    ["apply", spec.to_str().unwrap(), "--overlay", overlay.to_str().unwrap(), "--auto-approve"]
        .map(String::from)
        .to_vec()
}

/// A run of `args` (an apply with an overlay) converges: no duplicate, then an empty plan.
async fn converges_on_rerun(moto: &Moto, args: &[&str]) {
    let rerun = run_engine(&moto.endpoint(), args, &[]);
    assert!(rerun.status.success(), "{}", text(&rerun));
    assert_eq!(owned(moto).await, reference_counts(), "no duplicates");
    let plan = run_engine(
        &moto.endpoint(),
        &["plan", args[1], "--overlay", args[3], "--detailed-exitcode"],
        &[],
    );
    assert_eq!(plan.status.code(), Some(0), "{}", text(&plan));
}

/// Waits until the lease object `key` exists (a run took its lock).
async fn lease_taken(s3: &aws_sdk_s3::Client, key: &str) {
    let started = Instant::now();
    while object(s3, key).await.is_none() {
        assert!(started.elapsed() < Duration::from_secs(60), "the lease {key} was never taken");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// An overlay keeping the spec's state at `key` in the state bucket, with leases of `lease`.
fn s3_overlay(dir: &std::path::Path, key: &str, lease: u64) -> std::path::PathBuf {
    let path = dir.join("state.toml");
    std::fs::write(
        &path,
        format!(
            "[state]\nbackend = \"s3\"\nbucket = \"{BUCKET}\"\nkey = \"{key}\"\nlease_seconds = {lease}\n"
        ),
    )
    .unwrap();
    path
}

#[tokio::test(flavor = "multi_thread")]
async fn a_network_kept_in_s3_converges_and_every_command_reads_it_there() {
    let moto = Moto::start();
    let s3 = state_bucket(&moto).await;
    let spec = network_spec_path();
    let (spec, state) = (spec.to_str().unwrap(), "s3://engine-state/aws/network.json");

    let apply =
        run_engine(&moto.endpoint(), &["apply", spec, "--state", state, "--auto-approve"], &[]);
    assert!(apply.status.success(), "{}", text(&apply));
    let doc: engine_state::StateDocument =
        serde_json::from_slice(&object(&s3, "aws/network.json").await.expect("state in S3"))
            .unwrap();
    assert_eq!(doc.resources.len(), REFERENCE_RESOURCES, "every resource recorded");
    assert!(object(&s3, "aws/network.json.lock").await.is_none(), "the lease was released");
    let versions =
        s3.list_object_versions().bucket(BUCKET).prefix("aws/network.json").send().await.unwrap();
    let kept = versions.versions().iter().filter(|v| v.key() == Some("aws/network.json")).count();
    assert!(kept > 2, "each save's previous version is kept by the bucket: {kept}");
    assert!(
        !std::path::Path::new(spec).parent().unwrap().join(".engine/aws.state.json").exists(),
        "nothing written locally"
    );

    let plan =
        run_engine(&moto.endpoint(), &["plan", spec, "--state", state, "--detailed-exitcode"], &[]);
    assert_eq!(plan.status.code(), Some(0), "{}", text(&plan));
    let drift = run_engine(&moto.endpoint(), &["drift", spec, "--state", state], &[]);
    assert_eq!(drift.status.code(), Some(0), "{}", text(&drift));
    let list = run_engine(&moto.endpoint(), &["state", "list", "--state", state], &[]);
    assert!(text(&list).contains("aws.network.vpc.main"), "{}", text(&list));
    assert_eq!(owned(&moto).await, reference_counts(), "no duplicates");
}

#[tokio::test(flavor = "multi_thread")]
async fn two_clients_racing_for_one_s3_lease_exactly_one_wins_every_round() {
    let moto = Moto::start();
    state_bucket(&moto).await;
    let sdk = moto.sdk_config().await;
    // Two clients, each with its own store and its own copy of the state's backend.
    let backends: Vec<Arc<RemoteBackend>> = (0..2)
        .map(|_| {
            let store = S3StateStore::new(&sdk, BUCKET, "eu-west-3");
            Arc::new(RemoteBackend::new(Arc::new(store), "race.json", Duration::from_secs(30)))
        })
        .collect();
    exactly_one_wins_each_round(&backends, 100);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_killed_holders_lease_expires_and_the_next_run_takes_over_without_force_unlock() {
    let moto = Moto::start();
    let s3 = state_bucket(&moto).await;
    let dir = tempfile::tempdir().unwrap();
    let args = apply_with_leases_of_3s(dir.path());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    // The read-back after each subnet's create is never answered: the run stays mid-apply.
    let rules = ProxyRules {
        holds: vec![("DescribeSubnets".into(), "Filter.1.Name=subnet-id".into())],
        ..Default::default()
    };
    let proxy = FaultProxy::start(&moto.endpoint(), &rules);
    let mut child = engine_command(&proxy.endpoint(), &args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    lease_taken(&s3, "aws/network.json.lock").await;
    assert!(child.try_wait().unwrap().is_none(), "apply is still running");
    // Held past several renewals, then killed: no release, no last write.
    tokio::time::sleep(Duration::from_secs(4)).await;
    let sdk = moto.sdk_config().await;
    let backend = RemoteBackend::new(
        Arc::new(S3StateStore::new(&sdk, BUCKET, "eu-west-3")),
        "aws/network.json",
        Duration::from_secs(3),
    );
    let status = backend.lock_status().unwrap().expect("held");
    assert!(status.live, "renewed while its run lives: {status:?}");
    assert_eq!(status.holder.pid, child.id());
    child.kill().unwrap();
    child.wait().unwrap();
    let killed = Instant::now();
    while backend.lock_status().unwrap().is_some_and(|s| s.live) {
        assert!(killed.elapsed() < Duration::from_secs(10), "the lease never expired");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    converges_on_rerun(&moto, &args).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_run_whose_lease_another_client_removed_stops_writing_and_loses_nothing() {
    let moto = Moto::start();
    let s3 = state_bucket(&moto).await;
    let dir = tempfile::tempdir().unwrap();
    let args = apply_with_leases_of_3s(dir.path());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    // The VPC's create is throttled for a while: the run is mid-apply when its lease goes.
    let rules = ProxyRules {
        fails: vec![("CreateVpc".into(), "RequestLimitExceeded".into(), 8)],
        ..Default::default()
    };
    let proxy = FaultProxy::start(&moto.endpoint(), &rules);
    let child = engine_command(&proxy.endpoint(), &args).spawn_output();
    lease_taken(&s3, "aws/network.json.lock").await;
    s3.delete_object().bucket(BUCKET).key("aws/network.json.lock").send().await.unwrap();
    let out = child.join().unwrap();
    let t = text(&out);
    assert_eq!(out.status.code(), Some(1), "{t}");
    assert!(t.contains("is no longer this run's"), "the run says why it stopped: {t}");

    converges_on_rerun(&moto, &args).await;
}

/// Running a command on its own thread, its output collected.
trait SpawnOutput {
    fn spawn_output(self) -> std::thread::JoinHandle<std::process::Output>;
}

impl SpawnOutput for std::process::Command {
    fn spawn_output(mut self) -> std::thread::JoinHandle<std::process::Output> {
        std::thread::spawn(move || self.output().expect("run the engine"))
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sealed_state_round_trips_through_migrate_local_to_s3_to_local_and_back_to_clear() {
    let moto = Moto::start();
    let s3 = state_bucket(&moto).await;
    let kms = aws_sdk_kms::Client::new(&moto.sdk_config().await);
    let key = kms.create_key().send().await.unwrap().key_metadata.unwrap().key_id;
    let dir = tempfile::tempdir().unwrap();
    let spec = network_spec_path();
    let spec = spec.to_str().unwrap();
    let local = dir.path().join("aws.state.json");
    let sealed_local = dir.path().join("sealed.state.json");
    let (local, sealed_local) = (local.to_str().unwrap(), sealed_local.to_str().unwrap());
    let remote = "s3://engine-state/aws/sealed.json";
    let passphrase = [("ENGINE_STATE_PASSPHRASE", "a passphrase long enough to be accepted")];
    let apply =
        run_engine(&moto.endpoint(), &["apply", spec, "--state", local, "--auto-approve"], &[]);
    assert!(apply.status.success(), "{}", text(&apply));
    let clear = std::fs::read_to_string(local).unwrap();
    let original: engine_state::StateDocument = serde_json::from_str(&clear).unwrap();
    let vpc_id = original.resources["aws.network.vpc.main"].id.clone();
    // Nothing of the state may be readable once sealed: no address, no cloud id.
    let in_clear = |bytes: &[u8]| {
        let text = String::from_utf8_lossy(bytes);
        text.contains("aws.network.vpc.main") || text.contains(&vpc_id)
    };

    // Local (clear) to S3, sealed with KMS data keys.
    let to_s3 = run_engine(
        &moto.endpoint(),
        &[
            "state",
            "migrate",
            "--spec",
            spec,
            "--state",
            local,
            "--to",
            remote,
            "--to-encryption",
            "aws_kms",
            "--to-kms-key-id",
            &key,
        ],
        &[],
    );
    assert!(to_s3.status.success(), "{}", text(&to_s3));
    let stored = object(&s3, "aws/sealed.json").await.expect("migrated to S3");
    assert!(!in_clear(&stored), "sealed: {}", String::from_utf8_lossy(&stored));
    assert!(String::from_utf8_lossy(&stored).contains("\"method\": \"aws_kms\""));
    let list = run_engine(&moto.endpoint(), &["state", "list", "--state", remote], &[]);
    assert!(text(&list).contains("aws.network.vpc.main"), "read back through KMS: {}", text(&list));

    // S3 (KMS) to a local file sealed with a passphrase.
    let to_local = run_engine(
        &moto.endpoint(),
        &[
            "state",
            "migrate",
            "--spec",
            spec,
            "--state",
            remote,
            "--to",
            sealed_local,
            "--to-encryption",
            "passphrase",
        ],
        &passphrase,
    );
    assert!(to_local.status.success(), "{}", text(&to_local));
    let stored = std::fs::read(sealed_local).unwrap();
    assert!(!in_clear(&stored), "sealed: {}", String::from_utf8_lossy(&stored));
    let plan = run_engine(
        &moto.endpoint(),
        &["plan", spec, "--state", sealed_local, "--detailed-exitcode"],
        &passphrase,
    );
    assert_eq!(plan.status.code(), Some(0), "the sealed state plans empty: {}", text(&plan));
    let refused = run_engine(&moto.endpoint(), &["plan", spec, "--state", sealed_local], &[]);
    assert_eq!(refused.status.code(), Some(1), "{}", text(&refused));
    assert!(text(&refused).contains("encrypted with `passphrase`"), "{}", text(&refused));

    // Back to clear, in place.
    let unsealed = run_engine(
        &moto.endpoint(),
        &["state", "migrate", "--spec", spec, "--state", sealed_local, "--to-encryption", "none"],
        &passphrase,
    );
    assert!(unsealed.status.success(), "{}", text(&unsealed));
    let back: engine_state::StateDocument =
        serde_json::from_slice(&std::fs::read(sealed_local).unwrap()).unwrap();
    assert_eq!(back.resources, original.resources, "nothing lost on the way");
    assert_eq!(back.lineage, original.lineage);
    assert_eq!(std::fs::read_to_string(local).unwrap(), clear, "the source was left as it was");
}

#[tokio::test(flavor = "multi_thread")]
async fn force_unlock_names_the_holder_says_it_still_renews_and_asks_first() {
    let moto = Moto::start();
    state_bucket(&moto).await;
    let sdk = moto.sdk_config().await;
    let holder = RemoteBackend::new(
        Arc::new(S3StateStore::new(&sdk, BUCKET, "eu-west-3")),
        "aws/held.json",
        Duration::from_secs(3),
    );
    let held = holder.lock("apply").unwrap();
    let id = held.holder().id.clone();
    let state = "s3://engine-state/aws/held.json";

    let asked = run_engine(&moto.endpoint(), &["force-unlock", &id, "--state", state], &[]);
    let out = text(&asked);
    assert_eq!(asked.status.code(), Some(1), "{out}");
    assert!(out.contains(&format!("pid {}", std::process::id())), "the holder is named: {out}");
    assert!(out.contains("still holds it"), "{out}");
    assert!(out.contains("pass --force"), "no terminal to ask on: {out}");
    assert!(holder.lock_status().unwrap().is_some(), "the lock is kept");

    let wrong = run_engine(
        &moto.endpoint(),
        &["force-unlock", "not-the-id", "--state", state, "--force"],
        &[],
    );
    assert_eq!(wrong.status.code(), Some(1), "{}", text(&wrong));
    assert!(text(&wrong).contains("not not-the-id"), "{}", text(&wrong));

    let removed =
        run_engine(&moto.endpoint(), &["force-unlock", &id, "--state", state, "--force"], &[]);
    assert!(removed.status.success(), "{}", text(&removed));
    assert!(holder.lock_status().unwrap().is_none(), "removed");
    // The holder finds out at its next renewal and stops writing.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let lost = held.still_held().unwrap_err();
    assert!(matches!(lost, StateError::LeaseLost { .. }), "{lost}");
}

#[tokio::test(flavor = "multi_thread")]
async fn two_engines_on_two_state_copies_racing_for_one_s3_lease_exactly_one_applies_each_round() {
    use engine::testing::{FakeCloud, FakeProvider, Fault, Op};
    let moto = Moto::start();
    state_bucket(&moto).await;
    let sdk = moto.sdk_config().await;
    let cloud = Arc::new(FakeCloud::default());
    // Each engine with its own store: two copies of the same S3 state.
    let engine = |size: usize| {
        let store = S3StateStore::new(&sdk, BUCKET, "eu-west-3");
        let spec = format!(
            "[globals]\ncloud = \"aws\"\nregion = \"eu-west-3\"\ncluster_name = \"race\"\n\
             domain = \"example.org\"\n\n[fake.items.a]\nsize = {size}\n"
        );
        engine::Engine::builder()
            .spec_str("race.toml", "race", &spec)
            .provider(Arc::new(FakeProvider::new("aws", cloud.clone())))
            .shared_state(Arc::new(RemoteBackend::new(
                Arc::new(store),
                "race.json",
                Duration::from_secs(30),
            )))
            .retry_policy(engine::RetryPolicy {
                attempts: 4,
                first_delay: Duration::from_millis(150),
                max_delay: Duration::from_millis(300),
            })
            .build()
            .unwrap()
    };
    for round in 0..100 {
        let (first, second) = (Arc::new(engine(round + 1)), Arc::new(engine(round + 1)));
        let (plan_1, plan_2) = (first.plan().await.unwrap(), second.plan().await.unwrap());
        assert!(plan_1.has_changes() && plan_2.has_changes(), "round {round}");
        // The item's write is busy twice: the winner holds its lease for 450 ms.
        let op = if round == 0 { Op::Create } else { Op::Update };
        cloud.fail("fake.item.a", op, Fault::Busy(2));
        let runs = [(first, plan_1), (second, plan_2)].map(|(engine, plan)| {
            tokio::spawn(async move {
                let started = Instant::now();
                let result = engine.apply(&plan).await;
                (result, started.elapsed())
            })
        });
        let mut applied = 0;
        for run in runs {
            let (result, took) = run.await.unwrap();
            match result {
                Ok(report) => {
                    assert!(report.is_success(), "round {round}: {:?}", report.steps);
                    applied += 1;
                }
                Err(engine::EngineError::State(StateError::Locked { holder, .. })) => {
                    assert_eq!(
                        (holder.operation.as_str(), holder.pid),
                        ("apply", std::process::id())
                    );
                    assert!(
                        took < Duration::from_millis(400),
                        "round {round}: refused fast ({took:?})"
                    );
                }
                Err(other) => panic!("round {round}: expected the lock to be refused, got {other}"),
            }
        }
        assert_eq!(applied, 1, "round {round}: exactly one applies");
    }
}
