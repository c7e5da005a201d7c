//! Benchmark (not a test): what one graph saves over the per-stage ordering.
//!
//! The whole AWS lane runs against the local peers (see `engine_tests::lane`) with moto behind
//! `testenv/fault_proxy.py`, which delays the slow AWS operations by their production duration
//! divided by a scale (default 100: EKS's 540 s control plane takes 5.4 s). Two fresh runs:
//!
//! 1. one graph: `engine apply` of the whole spec; its wall time is printed next to the graph's
//!    critical path (the longest dependency chain, each resource weighted by how long its step
//!    took), the lower bound with unbounded parallelism;
//! 2. per stage: one apply per stage in the old order (network, OpenBao's servers, EKS, OpenBao's
//!    configuration, the bootstrap), each waiting for the previous one, as the stacks of the
//!    OpenTofu + Terramate setup run.
//!
//! 3. both lanes: the GCP lane's cloud stages (network and GKE, against the GCP fake with the
//!    same scaled production latencies) run alone, then beside the whole AWS lane in one
//!    invocation (`engine::Workspace`, as `engine apply specs/aws.toml specs/gcp.toml --cloud
//!    all` does), compared with the two lanes run one after the other.
//!
//! Only the injected latencies are scaled: the local work (rendering charts, OpenBao's raft init)
//! runs at its own speed, so the ratios are the result, not the absolute times.
//!
//! Run with `bench/critical-path.sh` (it installs and points at the peers).

use engine::{Address, ApplyReport, Engine, NullObserver, Workspace};
use engine_tests::lane::{self, Run};
use engine_tests::{FaultProxy, GcpFake, ProxyRules, test_root_ca_overlay, workspace};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The stages of the per-stage ordering, in order, as `--target` / `--exclude` prefixes.
const STAGES: [(&str, &[&str], &[&str]); 5] = [
    ("network", &["aws.network"], &[]),
    ("openbao server", &["aws.openbao"], &["aws.openbao.config"]),
    ("eks", &["aws.eks"], &[]),
    ("openbao config", &["aws.openbao.config"], &[]),
    ("bootstrap", &["aws.bootstrap"], &[]),
];

fn main() {
    let scale: f64 = std::env::var("BENCH_SCALE")
        .ok()
        .map(|s| s.parse().expect("BENCH_SCALE is a number"))
        .unwrap_or(100.0);
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_all()
        .build()
        .unwrap()
        .block_on(run(scale));
}

async fn run(scale: f64) {
    println!("injected latencies: production seconds / {scale} (testenv/fault_proxy.py)");

    // 1. One graph, one run.
    let peers = lane::peers().await;
    let proxy = FaultProxy::start(
        &peers.moto.endpoint(),
        &ProxyRules { latency_scale: scale, ..Default::default() },
    );
    let engine = lane::engine(&peers, proxy_run(&proxy, &[], &[])).await;
    let plan = engine.plan().await.unwrap();
    let started = Instant::now();
    let report = engine.apply(&plan).await.unwrap();
    let wall = started.elapsed();
    assert_success(&report, "the whole lane");
    let took = step_durations(&report);
    let cost = |address: &Address| took.get(address).copied().unwrap_or(0.0);
    let (critical, path) = engine.graph().critical_path(&|r| cost(&r.address));
    // The same step durations under stage barriers: each stage as parallel as it can be, the
    // next one starting when the slowest chain of the previous one ends.
    let barriers: Vec<(&str, f64)> = STAGES
        .iter()
        .map(|(name, _, _)| {
            let (t, _) = engine.graph().critical_path(&|r| {
                if lane::stage(r.address.as_str()) == *name { cost(&r.address) } else { 0.0 }
            });
            (*name, t)
        })
        .collect();
    let estimated: f64 = barriers.iter().map(|(_, t)| t).sum();
    drop((engine, proxy, peers));

    // 2. The per-stage ordering, measured on fresh peers.
    let peers = lane::peers().await;
    let proxy = FaultProxy::start(
        &peers.moto.endpoint(),
        &ProxyRules { latency_scale: scale, ..Default::default() },
    );
    let mut staged = Vec::new();
    for (name, targets, excludes) in STAGES {
        let engine = lane::engine(&peers, proxy_run(&proxy, targets, excludes)).await;
        let started = Instant::now();
        let plan = engine.plan().await.unwrap();
        let report = engine.apply(&plan).await.unwrap();
        assert_success(&report, name);
        staged.push((name, started.elapsed()));
    }
    let staged_total: Duration = staged.iter().map(|(_, t)| *t).sum();

    let secs = |d: Duration| d.as_secs_f64();
    println!();
    println!("one graph   apply wall time                      {:6.2} s", secs(wall));
    println!(
        "            critical path                        {critical:6.2} s  ({} resources)",
        path.len()
    );
    println!("per stage   measured, one apply per stage         {:6.2} s", secs(staged_total));
    for (name, t) in &staged {
        println!("              {name:<16}                   {:6.2} s", secs(*t));
    }
    println!("            one-graph step times, stage barriers {estimated:6.2} s");
    println!();
    println!(
        "ratio       per stage / one graph                {:6.2}x",
        secs(staged_total) / secs(wall)
    );
    println!("            one graph / critical path            {:6.2}x", secs(wall) / critical);
    println!();
    println!("critical path (steps over 50 ms):");
    for a in &path {
        if cost(a) >= 0.05 {
            println!("  {:<58} {:6.2} s", a.to_string(), cost(a));
        }
    }
    both_lanes(scale, wall, critical).await;
}

/// Production seconds of the GCP fake's slow operations (typical GCP figures).
const GCP_SECONDS: [(&str, f64); 8] = [
    ("networks.insert", 25.0),
    ("subnetworks.insert", 20.0),
    ("routers.insert", 10.0),
    ("routers.patch", 35.0),
    ("firewalls.insert", 10.0),
    ("clusters.create", 420.0),
    ("nodePools.delete", 150.0),
    ("nodePools.create", 180.0),
];

/// A fresh GCP fake with the scaled latencies, and the GCP lane's cloud stages on it.
async fn gcp_lane(scale: f64, dir: &std::path::Path) -> (GcpFake, Engine) {
    let latencies: Vec<String> = GCP_SECONDS
        .iter()
        .flat_map(|(m, s)| ["--operation-latency".to_string(), format!("{m}={}", s / scale)])
        .collect();
    let args: Vec<&str> = latencies.iter().map(String::as_str).collect();
    let fake = GcpFake::start_with(&args);
    let engine = lane::spec_engine(
        &workspace().join("specs/gcp.toml"),
        &test_root_ca_overlay(),
        ("http://127.0.0.1:9", &fake.endpoint()),
        &dir.join("gcp.state.json"),
        &["gcp.bootstrap", "gcp.openbao"],
        Arc::new(NullObserver),
    )
    .await;
    (fake, engine)
}

/// 3. Both lanes in one invocation against the two lanes one after the other.
async fn both_lanes(scale: f64, aws_alone: Duration, aws_critical: f64) {
    let dir = tempfile::tempdir().unwrap();
    let (fake, gcp) = gcp_lane(scale, dir.path()).await;
    let plan = gcp.plan().await.unwrap();
    let started = Instant::now();
    let report = gcp.apply(&plan).await.unwrap();
    let gcp_alone = started.elapsed();
    assert_success(&report, "the GCP lane");
    let took = step_durations(&report);
    let (gcp_critical, _) =
        gcp.graph().critical_path(&|r| took.get(&r.address).copied().unwrap_or(0.0));
    drop((gcp, fake));

    let dir = tempfile::tempdir().unwrap();
    let peers = lane::peers().await;
    let proxy = FaultProxy::start(
        &peers.moto.endpoint(),
        &ProxyRules { latency_scale: scale, ..Default::default() },
    );
    let aws = lane::engine(&peers, proxy_run(&proxy, &[], &[])).await;
    let (_fake, gcp) = gcp_lane(scale, dir.path()).await;
    let ws = Workspace::new(vec![aws, gcp]).unwrap();
    let plans: Vec<_> = ws.plan().await.into_iter().map(Result::unwrap).collect();
    let started = Instant::now();
    let reports = ws.apply(&plans).await;
    let both = started.elapsed();
    for (r, name) in reports.iter().zip(["aws", "gcp"]) {
        assert_success(r.as_ref().unwrap(), name);
    }

    let secs = |d: Duration| d.as_secs_f64();
    let sequential = secs(aws_alone) + secs(gcp_alone);
    let critical = aws_critical.max(gcp_critical);
    println!();
    println!("both lanes  AWS lane alone (1.)                   {:6.2} s", secs(aws_alone));
    println!("            GCP lane alone (network + GKE)         {:6.2} s", secs(gcp_alone));
    println!("            one after the other                    {sequential:6.2} s");
    println!("            one invocation, --cloud all           {:6.2} s", secs(both));
    println!("            critical path (the longer lane's)     {critical:6.2} s");
    println!();
    println!("ratio       one after the other / one invocation  {:6.2}x", sequential / secs(both));
    println!("            one invocation / critical path        {:6.2}x", secs(both) / critical);
}

fn proxy_run(proxy: &FaultProxy, targets: &[&str], excludes: &[&str]) -> Run {
    Run {
        aws_endpoint: Some(proxy.endpoint()),
        targets: targets.iter().map(|t| t.to_string()).collect(),
        excludes: excludes.iter().map(|e| e.to_string()).collect(),
        ..Run::default()
    }
}

/// Seconds each resource's steps took (a replace has two).
fn step_durations(report: &ApplyReport) -> BTreeMap<Address, f64> {
    let mut took = BTreeMap::new();
    for step in &report.steps {
        *took.entry(step.address.clone()).or_insert(0.0) += step.elapsed.as_secs_f64();
    }
    took
}

fn assert_success(report: &ApplyReport, what: &str) {
    assert!(report.is_success(), "{what}: {:#?}", report.failures().collect::<Vec<_>>());
}
