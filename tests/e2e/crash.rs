//! A run killed mid-apply: the next run adopts what was made and converges, with no duplicates.

use crate::support::{REFERENCE_RESOURCES, owned, reference_counts};
use engine_tests::{Moto, engine_command, network_spec_path, run_engine, text};
use std::time::{Duration, Instant};

#[tokio::test(flavor = "multi_thread")]
async fn abort_between_create_and_state_write_is_adopted_not_duplicated() {
    let moto = Moto::start();
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("aws.state.json");
    let spec = network_spec_path();
    let args =
        ["apply", spec.to_str().unwrap(), "--state", state.to_str().unwrap(), "--auto-approve"];
    let victim = "aws.network.subnet.private[\"eu-west-3a\"]";

    let crashed =
        run_engine(&moto.endpoint(), &args, &[("ENGINE_FAULT_ABORT_AFTER_CREATE", victim)]);
    assert!(!crashed.status.success(), "the fault must abort the run: {}", text(&crashed));
    let doc = engine_state::LocalBackend::new(&state)
        .load()
        .unwrap()
        .unwrap_or_else(|| engine_state::StateDocument::new("aws"));
    assert!(!doc.resources.contains_key(victim), "the crash came before the state write");
    let before = owned(&moto).await;
    assert!(before.subnets >= 1, "the subnet exists in the cloud: {before:?}");

    let rerun = run_engine(&moto.endpoint(), &args, &[]);
    let out = text(&rerun);
    assert!(rerun.status.success(), "{out}");
    assert!(out.contains("to adopt into state"), "{out}");
    assert!(out.contains(&format!("{victim}: Adopted")), "{out}");
    assert_eq!(owned(&moto).await, reference_counts(), "no duplicates");
    let doc = engine_state::LocalBackend::new(&state).load().unwrap().unwrap();
    assert_eq!(doc.resources.len(), REFERENCE_RESOURCES);
}

#[tokio::test(flavor = "multi_thread")]
async fn sigkill_mid_apply_then_rerun_converges() {
    let moto = Moto::start();
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("aws.state.json");
    let spec = network_spec_path();
    let args = [
        "apply",
        spec.to_str().unwrap(),
        "--state",
        state.to_str().unwrap(),
        "--auto-approve",
        "--parallelism",
        "1",
    ];
    let mut child = engine_command(&moto.endpoint(), &args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Kill once a few steps are recorded, long before the end.
    let started = Instant::now();
    let recorded = loop {
        let n = engine_state::LocalBackend::new(&state)
            .load()
            .ok()
            .flatten()
            .map(|d| d.resources.len())
            .unwrap_or(0);
        if n >= 5 {
            break n;
        }
        assert!(child.try_wait().unwrap().is_none(), "apply ended before it could be killed");
        assert!(started.elapsed() < Duration::from_secs(60), "apply made no progress");
        std::thread::sleep(Duration::from_millis(5));
    };
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    assert!(recorded < REFERENCE_RESOURCES, "killed mid-way ({recorded} recorded)");
    assert!(dir.path().join("aws.state.json.lock").exists(), "a killed run leaves its lock");

    // The next run takes over the dead run's lock, adopts, converges.
    let rerun = run_engine(&moto.endpoint(), &args[..5], &[]);
    assert!(rerun.status.success(), "{}", text(&rerun));
    assert_eq!(owned(&moto).await, reference_counts(), "no duplicates");
    let plan = run_engine(
        &moto.endpoint(),
        &["plan", args[1], "--state", args[3], "--detailed-exitcode"],
        &[],
    );
    assert_eq!(plan.status.code(), Some(0), "{}", text(&plan));
}
