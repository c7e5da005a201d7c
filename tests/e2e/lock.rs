//! The run lock: a second writer is refused with the holder named; readers never lock.

use crate::support::{owned, reference_counts};
use engine_tests::{Moto, engine_command, network_spec_path, run_engine, text};

#[tokio::test(flavor = "multi_thread")]
async fn a_second_apply_is_refused_while_the_lock_is_held() {
    let moto = Moto::start();
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("aws.state.json");
    let backend = engine_state::LocalBackend::new(&state);
    let held = backend.lock("apply").unwrap();
    let spec = network_spec_path();
    let (spec_arg, state_arg) = (spec.to_str().unwrap(), state.to_str().unwrap());

    let refused = run_engine(
        &moto.endpoint(),
        &["apply", spec_arg, "--state", state_arg, "--auto-approve"],
        &[],
    );
    let out = text(&refused);
    assert_eq!(refused.status.code(), Some(1), "{out}");
    assert!(out.contains("state is locked by `apply`"), "{out}");
    assert!(out.contains(&format!("pid {}", std::process::id())), "{out}");
    assert!(out.contains(&held.holder().id), "the lock id is given for force-unlock: {out}");
    assert_eq!(owned(&moto).await.total(), 0, "nothing was created");

    // Plan and drift do not lock.
    let plan = run_engine(&moto.endpoint(), &["plan", spec_arg, "--state", state_arg], &[]);
    assert!(plan.status.success(), "{}", text(&plan));
    let drift = run_engine(&moto.endpoint(), &["drift", spec_arg, "--state", state_arg], &[]);
    assert_eq!(drift.status.code(), Some(0), "{}", text(&drift));
    drop(held);
    assert!(!dir.path().join("aws.state.json.lock").exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn two_concurrent_applies_never_duplicate() {
    let moto = Moto::start();
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("aws.state.json");
    let spec = network_spec_path();
    let args =
        ["apply", spec.to_str().unwrap(), "--state", state.to_str().unwrap(), "--auto-approve"];
    let (mut a, mut b) =
        (engine_command(&moto.endpoint(), &args), engine_command(&moto.endpoint(), &args));
    let first = std::thread::spawn(move || a.output());
    let second = std::thread::spawn(move || b.output());
    let (a, b) = (first.join().unwrap().unwrap(), second.join().unwrap().unwrap());
    for out in [&a, &b] {
        let t = text(out);
        assert!(
            out.status.success()
                || t.contains("state is locked")
                || t.contains("the state changed since this plan"),
            "{t}"
        );
    }
    assert!(a.status.success() || b.status.success(), "{}\n{}", text(&a), text(&b));
    assert_eq!(owned(&moto).await, reference_counts(), "no duplicates");
}
