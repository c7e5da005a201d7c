//! OCI pull against a local registry (`docker-registry`, started per test
//! on a free loopback port and stopped on drop).

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use engine_helm::oci::{self, PullOptions};
use engine_helm::{Chart, Credentials};

use super::common::{Inputs, fixture, helm_bin, init_crypto, ours};

fn registry_bin() -> PathBuf {
    let p = std::env::var_os("ENGINE_REGISTRY_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/docker-registry"));
    assert!(
        p.is_file(),
        "OCI registry binary not found at {} (set ENGINE_REGISTRY_BIN or run testenv/install-registry.sh)",
        p.display()
    );
    p
}

/// A registry process serving on 127.0.0.1:port.
pub struct Registry {
    child: Child,
    pub port: u16,
    _dir: tempfile::TempDir,
}

impl Registry {
    /// Starts a registry; with `htpasswd` (user, password) basic auth is required.
    pub fn start(htpasswd: Option<(&str, &str)>) -> Registry {
        let bin = registry_bin();
        let dir = tempfile::Builder::new()
            .prefix("engine-registry-")
            .tempdir()
            .expect("tempdir");
        let port = TcpListener::bind("127.0.0.1:0")
            .expect("bind")
            .local_addr()
            .expect("addr")
            .port();
        let mut cfg = format!(
            "version: 0.1\nlog:\n  level: error\n  accesslog:\n    disabled: true\nstorage:\n  filesystem:\n    rootdirectory: {}\n  delete:\n    enabled: true\nhttp:\n  addr: 127.0.0.1:{port}\n",
            dir.path().join("data").display()
        );
        if let Some((user, pass)) = htpasswd {
            let hash = bcrypt::hash(pass, 5).expect("bcrypt");
            let file = dir.path().join("htpasswd");
            std::fs::write(&file, format!("{user}:{hash}\n")).expect("write htpasswd");
            cfg.push_str(&format!(
                "auth:\n  htpasswd:\n    realm: engine-test\n    path: {}\n",
                file.display()
            ));
        }
        let cfg_path = dir.path().join("config.yml");
        std::fs::write(&cfg_path, cfg).expect("write config");
        let child = Command::new(bin)
            .arg("serve")
            .arg(&cfg_path)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("starting docker-registry");
        let reg = Registry {
            child,
            port,
            _dir: dir,
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "registry did not start on port {port}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        reg
    }

    pub fn repo(&self) -> String {
        format!("oci://127.0.0.1:{}/charts", self.port)
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn rt() -> tokio::runtime::Runtime {
    init_crypto();
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

#[test]
fn push_and_pull_with_cache() {
    let reg = Registry::start(None);
    let rt = rt();
    let archive = std::fs::read(fixture("flux-instance-0.49.0.tgz")).expect("fixture");
    let cache = tempfile::tempdir().expect("tempdir");
    let opts = PullOptions {
        cache_dir: Some(cache.path().to_path_buf()),
        ..Default::default()
    };
    let reference = rt
        .block_on(oci::push(&archive, &reg.repo(), &opts))
        .expect("push");
    assert_eq!(reference, format!("{}/flux-instance:0.49.0", reg.repo()));

    let first = rt
        .block_on(oci::pull_archive(&reference, &opts))
        .expect("pull");
    assert!(!first.from_cache);
    assert_eq!(
        first.archive, archive,
        "pulled archive differs from pushed one"
    );
    assert_eq!(first.digest, oci::sha256_digest(&archive));
    let second = rt
        .block_on(oci::pull_archive(&reference, &opts))
        .expect("pull from cache");
    assert!(second.from_cache, "second pull should come from the cache");

    // A corrupted cache entry is detected and replaced.
    let cached = cache.path().join("sha256").join(format!(
        "{}.tgz",
        first.digest.trim_start_matches("sha256:")
    ));
    std::fs::write(&cached, b"garbage").expect("corrupt cache");
    let third = rt
        .block_on(oci::pull_archive(&reference, &opts))
        .expect("pull after corruption");
    assert!(!third.from_cache);
    assert_eq!(third.archive, archive);

    // The pulled chart renders like the local archive.
    let chart = rt
        .block_on(oci::pull(&reference, &opts))
        .expect("pull chart");
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
    let reg = Registry::start(None);
    let out = Command::new(helm_bin())
        .arg("push")
        .arg(fixture("flux-operator-0.49.0.tgz"))
        .arg(reg.repo())
        .arg("--plain-http")
        .env(
            "HELM_REGISTRY_CONFIG",
            std::env::temp_dir().join("engine-helm-registry.json"),
        )
        .output()
        .expect("helm push");
    assert!(
        out.status.success(),
        "helm push failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rt = rt();
    let reference = format!("{}/flux-operator:0.49.0", reg.repo());
    let chart: Chart = rt
        .block_on(oci::pull(&reference, &PullOptions::default()))
        .expect("pull helm-pushed chart");
    assert_eq!(chart.name(), "flux-operator");
    assert_eq!(chart.version(), "0.49.0");
    assert!(!chart.templates.is_empty());
    // Unknown tags fail with a clear error.
    let missing = format!("{}/flux-operator:9.9.9", reg.repo());
    let err = rt
        .block_on(oci::pull(&missing, &PullOptions::default()))
        .expect_err("missing tag");
    assert!(
        err.to_string().contains("flux-operator:9.9.9"),
        "unclear error: {err}"
    );
}

#[test]
fn pull_with_basic_auth() {
    let reg = Registry::start(Some(("engine", "s3cret")));
    let rt = rt();
    let archive = std::fs::read(fixture("flux-instance-0.49.0.tgz")).expect("fixture");
    let good = PullOptions {
        credentials: Credentials::Basic {
            username: "engine".into(),
            password: "s3cret".into(),
        },
        ..Default::default()
    };
    let reference = rt
        .block_on(oci::push(&archive, &reg.repo(), &good))
        .expect("authenticated push");
    let pulled = rt
        .block_on(oci::pull_archive(&reference, &good))
        .expect("authenticated pull");
    assert_eq!(pulled.archive, archive);
    let err = rt
        .block_on(oci::pull_archive(&reference, &PullOptions::default()))
        .expect_err("anonymous pull must be refused");
    assert!(err.to_string().contains("manifest"), "unclear error: {err}");
    let bad = PullOptions {
        credentials: Credentials::Basic {
            username: "engine".into(),
            password: "wrong".into(),
        },
        ..Default::default()
    };
    rt.block_on(oci::pull_archive(&reference, &bad))
        .expect_err("wrong password must be refused");
}

#[test]
fn plain_http_refused_for_remote_hosts() {
    let r = oci::ChartRef::parse("oci://registry.example.com/charts/x:1.0.0", None).expect("parse");
    assert!(!r.is_loopback());
    let r = oci::ChartRef::parse("oci://[::1]:5000/charts/x:1.0.0", None).expect("parse");
    assert!(r.is_loopback());
}
