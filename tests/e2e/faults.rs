//! Fault injection through the fault proxy (testenv/fault_proxy.py) in front of moto: the engine
//! killed right after the N-th mutating call commits, connections reset after creates commit,
//! and throttling on every service. Each time, the run (or a re-run) converges with no duplicate
//! and an empty second plan.
//!
//! One test spreads its kill points over the calls of a cold apply of the network stage
//! (`ENGINE_FAULT_KILL_POINTS`, default 15, each from empty); `bench/faults/soak.sh` runs it
//! with `all`, one run per mutating call.

use crate::support::{owned, reference_counts};
use engine_tests::{FaultProxy, Moto, ProxyRules, engine_command, network_spec_path, text};
use std::path::Path;
use std::time::{Duration, Instant};

/// `apply --auto-approve` of `spec` with state `state`.
fn apply_args<'a>(spec: &'a str, state: &'a str) -> Vec<&'a str> {
    vec!["apply", spec, "--state", state, "--auto-approve"]
}

/// Runs the engine to its end; its success and output.
fn run(endpoint: &str, args: &[&str]) -> (bool, String) {
    let out = engine_command(endpoint, args).output().expect("run the engine");
    (out.status.success(), text(&out))
}

/// Mutating calls of a cold apply, as the engine counts them (`N mutating` in its summary).
fn mutating_calls(summary: &str) -> usize {
    let at = summary.find(" mutating)").expect("the apply summary");
    let digits: String =
        summary[..at].chars().rev().take_while(char::is_ascii_digit).collect::<String>();
    digits.chars().rev().collect::<String>().parse().expect("a count")
}

/// The kill points: `ENGINE_FAULT_KILL_POINTS` of them (or `all`) spread over 1..=total.
fn kill_points(total: usize) -> Vec<usize> {
    let wanted = std::env::var("ENGINE_FAULT_KILL_POINTS").unwrap_or_else(|_| "15".into());
    let n = if wanted == "all" { total } else { wanted.parse().expect("a number or `all`") };
    let n = n.clamp(1, total);
    let mut points: Vec<usize> = (0..n).map(|i| 1 + i * (total - 1) / (n - 1).max(1)).collect();
    points.dedup();
    points
}

/// The engine with `args`, through a proxy in front of moto that stops answering after the
/// `point`-th mutating call commits; the engine is then SIGKILLed. The call killed at (`N
/// OPERATION`), or `None` when the run ended first (it must have succeeded).
fn run_killed_at(moto: &Moto, args: &[&str], point: usize) -> Option<String> {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("killed");
    let rules = ProxyRules { kill_after: Some((point, report.clone())), ..Default::default() };
    let proxy = FaultProxy::start(&moto.endpoint(), &rules);
    let (out, err) = (dir.path().join("stdout"), dir.path().join("stderr"));
    let mut child = engine_command(&proxy.endpoint(), args)
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .expect("start the engine");
    let started = Instant::now();
    loop {
        if report.exists() {
            child.kill().unwrap();
            child.wait().unwrap();
            // Calls the engine had in flight still land in the cloud; an operator's re-run comes
            // seconds later, not within the same millisecond.
            std::thread::sleep(Duration::from_secs(1));
            return Some(std::fs::read_to_string(&report).unwrap().trim().to_string());
        }
        if let Some(status) = child.try_wait().unwrap() {
            let shown =
                std::fs::read_to_string(&out).unwrap() + &std::fs::read_to_string(&err).unwrap();
            assert!(status.success(), "kill point {point}: the run failed before it:\n{shown}");
            return None;
        }
        assert!(started.elapsed() < Duration::from_secs(300), "kill point {point}: no progress");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn killed_after_a_mutating_call_commits_the_rerun_converges_without_duplicates() {
    let spec = network_spec_path();
    let spec = spec.to_str().unwrap();
    // The number of mutating calls of a cold apply.
    let total = {
        let moto = Moto::start();
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("s.json");
        let (ok, out) = run(&moto.endpoint(), &apply_args(spec, state.to_str().unwrap()));
        assert!(ok, "{out}");
        mutating_calls(&out)
    };
    assert!(total > 40, "a cold apply of the network makes {total} mutating calls");
    let points = kill_points(total);
    let mut killed = 0;
    for &point in &points {
        let moto = Moto::start();
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("s.json");
        let state = state.to_str().unwrap();
        killed += usize::from(run_killed_at(&moto, &apply_args(spec, state), point).is_some());
        let (ok, out) = run(&moto.endpoint(), &apply_args(spec, state));
        assert!(ok, "kill point {point}/{total}: the re-run failed:\n{out}");
        assert_eq!(owned(&moto).await, reference_counts(), "kill point {point}: duplicates");
        let plan = ["plan", spec, "--state", state, "--detailed-exitcode"];
        let (clean, out) = run(&moto.endpoint(), &plan);
        assert!(clean, "kill point {point}/{total}: the second plan is not empty:\n{out}");
    }
    eprintln!("{killed} kills over {total} mutating calls: {points:?}");
    assert!(killed >= points.len().min(15) - 1, "only {killed} of {} kills", points.len());
}

/// A cold apply of the network stage through a proxy with `rules` in front of a new moto; the
/// moto, the proxy, the spec and the state (in `dir`), once the apply succeeded.
async fn applied_through(
    rules: ProxyRules,
    dir: &Path,
) -> (Moto, FaultProxy, std::path::PathBuf, std::path::PathBuf) {
    let moto = Moto::start();
    let proxy = FaultProxy::start(&moto.endpoint(), &rules);
    let spec = network_spec_path();
    let state = dir.join("s.json");
    let (ok, out) =
        run(&proxy.endpoint(), &apply_args(spec.to_str().unwrap(), state.to_str().unwrap()));
    assert!(ok, "{out}");
    assert_eq!(owned(&moto).await, reference_counts(), "one resource per create, no duplicate");
    (moto, proxy, spec, state)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_fifth_of_all_calls_throttled_apply_and_destroy_still_finish() {
    let dir = tempfile::tempdir().unwrap();
    let rules = ProxyRules { throttle: 0.2, seed: 7, ..Default::default() };
    let (moto, proxy, spec, state) = applied_through(rules, dir.path()).await;
    let (spec, state) = (spec.to_str().unwrap(), state.to_str().unwrap());
    let (clean, out) =
        run(&proxy.endpoint(), &["plan", spec, "--state", state, "--detailed-exitcode"]);
    assert!(clean, "{out}");
    let (ok, out) = run(&proxy.endpoint(), &["destroy", spec, "--state", state, "--auto-approve"]);
    assert!(ok, "{out}");
    assert_eq!(owned(&moto).await.total(), 0, "destroy leaves nothing");
}

#[tokio::test(flavor = "multi_thread")]
async fn connections_reset_after_creates_commit_leave_exactly_one_resource_each() {
    let dir = tempfile::tempdir().unwrap();
    let resets = ["CreateVpc", "CreateSubnet", "CreateSecurityGroup", "CreateRouteTable"];
    let resets = resets.iter().map(|s| s.to_string()).collect();
    let (moto, _proxy, spec, state) =
        applied_through(ProxyRules { resets, ..Default::default() }, dir.path()).await;
    let (spec, state) = (spec.to_str().unwrap(), state.to_str().unwrap());
    let (clean, out) =
        run(&moto.endpoint(), &["plan", spec, "--state", state, "--detailed-exitcode"]);
    assert!(clean, "{out}");
}

/// Seconds a security group's delete is refused with `DependencyViolation` (lingering network
/// interfaces): `ENGINE_FAULT_DRAIN_SECONDS`, 20 in the test suite, 180 in the soak.
fn drain_seconds() -> u64 {
    std::env::var("ENGINE_FAULT_DRAIN_SECONDS").map_or(20, |s| s.parse().expect("seconds"))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_security_group_delete_refused_for_a_while_still_finishes_the_destroy() {
    let dir = tempfile::tempdir().unwrap();
    let seconds = drain_seconds();
    let fails = vec![("DeleteSecurityGroup".into(), "DependencyViolation".into(), seconds)];
    let (moto, proxy, spec, state) =
        applied_through(ProxyRules { fails, ..Default::default() }, dir.path()).await;
    let (spec, state) = (spec.to_str().unwrap(), state.to_str().unwrap());
    let started = Instant::now();
    let (ok, out) = run(&proxy.endpoint(), &["destroy", spec, "--state", state, "--auto-approve"]);
    assert!(ok, "{out}");
    assert!(started.elapsed() >= Duration::from_secs(seconds), "the delete waited it out");
    assert_eq!(owned(&moto).await.total(), 0, "destroy leaves nothing");
}
