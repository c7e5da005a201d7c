//! Fault injection through the fault proxy (testenv/fault_proxy.py) in front of moto: the engine
//! killed right after the N-th mutating call commits, connections reset after creates commit,
//! and throttling on every service. Each time, the run (or a re-run) converges with no duplicate
//! and an empty second plan.
//!
//! One test spreads its kill points over the calls of a cold apply of the network stage
//! (`ENGINE_FAULT_KILL_POINTS`, default 15, each from empty); `bench/faults/soak.sh` runs it
//! with `all`, one run per mutating call. Another kills the whole lane again and again, one
//! kill every few mutating calls of each run, until a run completes.

use crate::support::{owned, reference_counts};
use engine_tests::lane;
use engine_tests::{
    FaultProxy, Moto, ProxyRules, aws_spec_path, engine_command, network_spec_path, text,
};
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
    run_killed_at_settled(moto, args, point, || true)
}

/// [`run_killed_at`], killed only at a moment `settled` accepts (one the engine is meant to
/// survive).
fn run_killed_at_settled(
    moto: &Moto,
    args: &[&str],
    point: usize,
    settled: impl Fn() -> bool,
) -> Option<String> {
    killed_at(&moto.endpoint(), |endpoint| engine_command(endpoint, args), point, settled)
}

/// Sends `signal` (`STOP`, `CONT`) to process `pid`.
fn signal(pid: u32, signal: &str) {
    let mut kill = std::process::Command::new("kill");
    let sent = kill.args([format!("-{signal}"), pid.to_string()]).status().unwrap();
    assert!(sent.success(), "kill -{signal} {pid}");
}

/// The engine that `command` makes for an endpoint, run through a proxy in front of
/// `upstream` (moto, the GCP fake) that stops answering after the `point`-th mutating call
/// commits; then the engine is frozen (SIGSTOP) and, once what it had sent has reached its peers,
/// SIGKILLed if `settled` accepts the moment, else let run a little and frozen again. The call
/// killed at (`N OPERATION`), or `None` when the run ended first (it must have succeeded).
pub(crate) fn killed_at(
    upstream: &str,
    command: impl Fn(&str) -> std::process::Command,
    point: usize,
    settled: impl Fn() -> bool,
) -> Option<String> {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("killed");
    let rules = ProxyRules { kill_after: Some((point, report.clone())), ..Default::default() };
    let proxy = FaultProxy::start(upstream, &rules);
    let (out, err) = (dir.path().join("stdout"), dir.path().join("stderr"));
    let mut child = command(&proxy.endpoint())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .expect("start the engine");
    let started = Instant::now();
    loop {
        if report.exists() {
            let frozen = Instant::now();
            loop {
                signal(child.id(), "STOP");
                // What it wrote before the freeze reaches the proxies in front of its peers.
                std::thread::sleep(Duration::from_millis(200));
                if settled() || frozen.elapsed() > Duration::from_secs(60) {
                    break;
                }
                signal(child.id(), "CONT");
                std::thread::sleep(Duration::from_millis(20));
            }
            child.kill().unwrap();
            child.wait().unwrap();
            // Calls the engine had in flight still land in the cloud; an operator's re-run comes
            // seconds later, not within the same millisecond.
            std::thread::sleep(Duration::from_secs(1));
            return Some(std::fs::read_to_string(&report).unwrap().trim().to_string());
        }
        if let Some(status) = child.try_wait().unwrap() {
            // The error first (stderr), then the end of what it printed: a whole plan would
            // push the cause out of a truncated log.
            let (out, err) =
                (std::fs::read_to_string(&out).unwrap(), std::fs::read_to_string(&err).unwrap());
            let lines: Vec<&str> = out.lines().collect();
            let tail = lines[lines.len().saturating_sub(40)..].join("\n");
            assert!(
                status.success(),
                "kill point {point}: the run failed before it ({status}):\n--- stderr ---\n{err}\n\
                 --- last lines of stdout ---\n{tail}"
            );
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

/// The whole lane (network, OpenBao, EKS, bootstrap) through the `engine` binary, killed after
/// the `stride`-th mutating AWS call of every run (`ENGINE_FAULT_STRIDE`, 15 in the test suite;
/// the soak runs several) until a run completes: each re-run picks up
/// where the last one died; in the end every resource exists once and the plan is empty.
///
/// One moment is not survivable by design: OpenBao answers `sys/init` with the root token and
/// keys once, so a kill while that answer is on its way loses them (`outages.rs` proves the loud
/// error that follows). OpenBao sits behind a journaling proxy, and a kill that falls in that
/// window (the engine frozen, its journal read) waits until the answer is in escrow.
///
/// Where its kill points land depends on timing: among them, the moment between an S3 bucket's
/// create and the call that tags it, which the next run takes over by the create journaled as
/// begun (`engine::ownership::untagged_but_begun`).
#[tokio::test(flavor = "multi_thread")]
async fn the_whole_lane_killed_again_and_again_converges_without_duplicates() {
    let stride: usize =
        std::env::var("ENGINE_FAULT_STRIDE").map_or(15, |s| s.parse().expect("a number"));
    let p = lane::peers().await;
    let dir = p.work.path();
    let (state, escrow, journal) =
        (dir.join("aws.state.json"), dir.join("aws.openbao-escrow.json"), dir.join("journal"));
    let inter = engine_pki::intermediate(&p.root, "proxy").unwrap();
    let leaf = engine_pki::server_leaf(&inter, &["localhost"]).unwrap();
    let (chain, key) = (dir.join("proxy-chain.pem"), dir.join("proxy-key.pem"));
    std::fs::write(&chain, &leaf.chain_pem).unwrap();
    std::fs::write(&key, leaf.key_pem().expose()).unwrap();
    let rules = ProxyRules {
        tls: Some((chain, key)),
        upstream_ca: Some(dir.join("pki/root-ca.crt")),
        journal: Some(journal.clone()),
        ..Default::default()
    };
    let bao = FaultProxy::start(&p.bao.address, &rules);
    let overlay = dir.join("overlay.toml");
    std::fs::write(&overlay, cli_overlay(&p, &bao.endpoint_at("localhost"))).unwrap();
    let spec = aws_spec_path();
    let (spec, state_arg) = (spec.to_str().unwrap(), state.to_str().unwrap());
    let overlay = overlay.to_str().unwrap();
    let args = ["apply", spec, "--state", state_arg, "--overlay", overlay, "--auto-approve"];

    // Killed only once OpenBao's answer to `sys/init`, if on its way, is in escrow.
    let settled = || !init_answer_unkept(&journal, &escrow);
    let mut kills = Vec::new();
    loop {
        assert!(kills.len() < 40, "no run completed after {} kills: {kills:?}", kills.len());
        let command = |endpoint: &str| with_tailnet(engine_command(endpoint, &args), &p);
        match killed_at(&p.moto.endpoint(), command, stride, settled) {
            Some(killed) => kills.push(killed),
            None => break,
        }
    }
    eprintln!("{} kills before a run completed: {kills:?}", kills.len());
    assert!(kills.len() >= 4, "the lane makes far more than {stride} mutating calls: {kills:?}");
    assert!(!escrow.exists(), "the credentials reached the secret store");
    assert_eq!(duplicates(&p.moto).await, Vec::<String>::new(), "after {kills:?}");
    let plan = ["plan", spec, "--state", state_arg, "--overlay", overlay, "--detailed-exitcode"];
    let out = with_tailnet(engine_command(&p.moto.endpoint(), &plan), &p).output().unwrap();
    assert!(out.status.success(), "the plan after the last run is not empty:\n{}", text(&out));
}

/// `cmd` reaching the lane's Tailscale API (the router's key and split DNS, `[access]`).
fn with_tailnet(mut cmd: std::process::Command, p: &lane::Peers) -> std::process::Command {
    cmd.env("ENGINE_TAILSCALE_ENDPOINT", p.tailnet.endpoint())
        .env("TAILSCALE_API_KEY", p.tailnet.api_key());
    cmd
}

/// Whether OpenBao's answer to `sys/init` may be on its way to the engine and not kept yet: the
/// call was sent, nothing went to OpenBao after its answer, and no escrow holds the answer.
fn init_answer_unkept(journal: &Path, escrow: &Path) -> bool {
    let journal = std::fs::read_to_string(journal).unwrap_or_default();
    let Some(at) = journal.rfind("sent PUT /v1/sys/init") else { return false };
    let since = &journal[at..];
    let moved_on =
        since.find("answered PUT /v1/sys/init").is_some_and(|a| since[a..].lines().count() > 1);
    !moved_on && !escrow.exists()
}

/// The lane's overlay for the `engine` binary: what the library hooks give the in-process lane
/// (OpenBao's address, the cluster's kubeconfig and issuer) written as spec values.
fn cli_overlay(p: &lane::Peers, bao_address: &str) -> String {
    let issuer = p.cluster.issuer();
    p.overlay
        .replacen("[openbao]\n", &format!("[openbao]\naddress = \"{bao_address}\"\n"), 1)
        .replacen(
            "[bootstrap]\n",
            &format!("[bootstrap]\nkubeconfig = \"{}\"\n", p.cluster.kubeconfig().display()),
            1,
        )
        + &format!(
            "\n[openbao.jwt.\"jwt/aws-0\"]\ncluster_issuer = false\noidc_discovery_url = \"{issuer}\"\n\
             bound_issuer = \"{issuer}\"\noidc_discovery_ca_pem = \"\"\"\n{}\"\"\"\n",
            p.cluster.ca_pem().trim_end()
        )
}

/// What exists more than once in moto: EC2 resources sharing an `engine:address` tag, KMS keys
/// sharing one, hosted zones sharing a name.
async fn duplicates(moto: &Moto) -> Vec<String> {
    let config = moto.sdk_config().await;
    let mut seen: Vec<String> = Vec::new();
    let ec2 = aws_sdk_ec2::Client::new(&config);
    let filter = aws_sdk_ec2::types::Filter::builder().name("key").values("engine:address").build();
    let mut pages = ec2.describe_tags().filters(filter).into_paginator().items().send();
    while let Some(tag) = pages.next().await {
        let tag = tag.unwrap();
        let kind = tag.resource_type().map(|t| t.as_str().to_string()).unwrap_or_default();
        seen.push(format!("ec2 {kind} {}", tag.value().unwrap_or_default()));
    }
    let kms = aws_sdk_kms::Client::new(&config);
    for key in kms.list_keys().send().await.unwrap().keys() {
        let id = key.key_id().unwrap_or_default();
        let tags = kms.list_resource_tags().key_id(id).send().await.unwrap();
        for tag in tags.tags().iter().filter(|t| t.tag_key() == "engine:address") {
            seen.push(format!("kms {}", tag.tag_value()));
        }
    }
    let route53 = aws_sdk_route53::Client::new(&config);
    for zone in route53.list_hosted_zones().send().await.unwrap().hosted_zones() {
        seen.push(format!("zone {}", zone.name()));
    }
    seen.sort();
    let mut twice: Vec<String> =
        seen.windows(2).filter(|w| w[0] == w[1]).map(|w| w[0].clone()).collect();
    twice.dedup();
    twice
}
