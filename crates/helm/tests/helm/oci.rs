//! OCI pull against a local registry (`docker-registry`, started per test
//! on a free loopback port and stopped on drop).

use std::process::Command;

use engine_helm::oci::{self, PullOptions};
use engine_helm::{Chart, Credentials};

use super::common::{Inputs, Registry, fixture, helm_bin, init_crypto, ours};

pub fn rt() -> tokio::runtime::Runtime {
    init_crypto();
    tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime")
}

#[test]
fn push_and_pull_with_cache() {
    let reg = Registry::start();
    let rt = rt();
    let archive = std::fs::read(fixture("flux-instance-0.49.0.tgz")).expect("fixture");
    let cache = tempfile::tempdir().expect("tempdir");
    let opts = PullOptions { cache_dir: Some(cache.path().to_path_buf()), ..Default::default() };
    let reference = rt.block_on(oci::push(&archive, &reg.repo(), &opts)).expect("push");
    assert_eq!(reference, format!("{}/flux-instance:0.49.0", reg.repo()));

    let first = rt.block_on(oci::pull_archive(&reference, &opts)).expect("pull");
    assert!(!first.from_cache);
    assert_eq!(first.archive, archive, "pulled archive differs from pushed one");
    assert_eq!(first.digest, oci::sha256_digest(&archive));
    let second = rt.block_on(oci::pull_archive(&reference, &opts)).expect("pull from cache");
    assert!(second.from_cache, "second pull should come from the cache");

    // A corrupted cache entry is detected and replaced.
    let cached = cache
        .path()
        .join("sha256")
        .join(format!("{}.tgz", first.digest.trim_start_matches("sha256:")));
    std::fs::write(&cached, b"garbage").expect("corrupt cache");
    let third = rt.block_on(oci::pull_archive(&reference, &opts)).expect("pull after corruption");
    assert!(!third.from_cache);
    assert_eq!(third.archive, archive);

    // The pulled chart renders like the local archive.
    let chart = rt.block_on(oci::pull(&reference, &opts)).expect("pull chart");
    assert_eq!(chart.name(), "flux-instance");
    let dir = tempfile::tempdir().expect("tempdir");
    let local = dir.path().join("pulled.tgz");
    std::fs::write(&local, &third.archive).expect("write");
    let a = ours(&fixture("flux-instance-0.49.0.tgz"), &Inputs::default()).expect("render fixture");
    let b = ours(&local, &Inputs::default()).expect("render pulled");
    assert_eq!(a, b);
}

#[test]
fn pull_chart_pushed_by_helm() {
    let reg = Registry::start();
    let out = Command::new(helm_bin())
        .arg("push")
        .arg(fixture("flux-operator-0.49.0.tgz"))
        .arg(reg.repo())
        .arg("--plain-http")
        .env("HELM_REGISTRY_CONFIG", std::env::temp_dir().join("engine-helm-registry.json"))
        .output()
        .expect("helm push");
    assert!(out.status.success(), "helm push failed: {}", String::from_utf8_lossy(&out.stderr));
    let rt = rt();
    let reference = format!("{}/flux-operator:0.49.0", reg.repo());
    let chart: Chart = rt
        .block_on(oci::pull(&reference, &PullOptions::default()))
        .expect("pull helm-pushed chart");
    assert_eq!(chart.name(), "flux-operator");
    assert_eq!(chart.version(), "0.49.0");
    assert!(!chart.templates.is_empty());
    // Pinned by its manifest digest: pulled; by any other digest: refused.
    let pulled = rt.block_on(oci::pull_archive(&reference, &PullOptions::default())).unwrap();
    let pinned = format!("{}/flux-operator@{}", reg.repo(), pulled.manifest_digest);
    let chart = rt.block_on(oci::pull(&pinned, &PullOptions::default())).expect("pinned pull");
    assert_eq!(chart.version(), "0.49.0");
    let wrong = format!("sha256:{}", "0".repeat(64));
    let other = format!("{}/flux-operator:0.49.0@{wrong}", reg.repo());
    let err = rt.block_on(oci::pull(&other, &PullOptions::default())).expect_err("wrong digest");
    assert!(err.to_string().contains(&wrong), "unclear error: {err}");
    // Unknown tags fail with a clear error.
    let missing = format!("{}/flux-operator:9.9.9", reg.repo());
    let err = rt.block_on(oci::pull(&missing, &PullOptions::default())).expect_err("missing tag");
    assert!(err.to_string().contains("flux-operator:9.9.9"), "unclear error: {err}");
}

#[test]
fn pull_with_basic_auth() {
    let reg = Registry::start_with(Some(("engine", "s3cret")));
    let rt = rt();
    let archive = std::fs::read(fixture("flux-instance-0.49.0.tgz")).expect("fixture");
    let good = PullOptions {
        credentials: Credentials::Basic { username: "engine".into(), password: "s3cret".into() },
        ..Default::default()
    };
    let reference =
        rt.block_on(oci::push(&archive, &reg.repo(), &good)).expect("authenticated push");
    let pulled = rt.block_on(oci::pull_archive(&reference, &good)).expect("authenticated pull");
    assert_eq!(pulled.archive, archive);
    let err = rt
        .block_on(oci::pull_archive(&reference, &PullOptions::default()))
        .expect_err("anonymous pull must be refused");
    assert!(err.to_string().contains("manifest"), "unclear error: {err}");
    let bad = PullOptions {
        credentials: Credentials::Basic { username: "engine".into(), password: "wrong".into() },
        ..Default::default()
    };
    rt.block_on(oci::pull_archive(&reference, &bad)).expect_err("wrong password must be refused");
}

#[test]
fn plain_http_refused_for_remote_hosts() {
    let r = oci::ChartRef::parse("oci://registry.example.com/charts/x:1.0.0", None).expect("parse");
    assert!(!r.is_loopback());
    let r = oci::ChartRef::parse("oci://[::1]:5000/charts/x:1.0.0", None).expect("parse");
    assert!(r.is_loopback());
}
