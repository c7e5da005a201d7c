//! A distribution registry (`docker-registry`) on a free loopback port holding the platform's
//! charts from `../shared/fixtures/charts`, pushed over the OCI API the way a release pipeline
//! pushes them to ghcr.io or quay.io.

use crate::moto::free_port;
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running registry; killed on drop.
pub struct Registry {
    child: Child,
    pub port: u16,
    _dir: tempfile::TempDir,
}

fn registry_bin() -> PathBuf {
    let p = std::env::var_os("ENGINE_REGISTRY_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/docker-registry"));
    assert!(
        p.is_file(),
        "docker-registry not found at {}: run testenv/install-registry.sh (or set ENGINE_REGISTRY_BIN)",
        p.display()
    );
    p
}

/// The shared, read-only fixtures (`../shared/fixtures` from the workspace).
pub fn fixtures() -> PathBuf {
    let dir = crate::workspace().join("../shared/fixtures");
    assert!(dir.is_dir(), "fixtures missing at {}", dir.display());
    dir
}

impl Registry {
    /// Starts an empty registry.
    pub fn start() -> Registry {
        let dir = tempfile::tempdir().expect("temp dir");
        let port = free_port();
        let config = dir.path().join("config.yml");
        std::fs::write(
            &config,
            format!(
                "version: 0.1\nlog:\n  level: error\n  accesslog:\n    disabled: true\nstorage:\n  filesystem:\n    rootdirectory: {}\nhttp:\n  addr: 127.0.0.1:{port}\n",
                dir.path().join("data").display()
            ),
        )
        .expect("registry config");
        let child = Command::new(registry_bin())
            .arg("serve")
            .arg(&config)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("starting docker-registry");
        let mut registry = Registry { child, port, _dir: dir };
        let deadline = Instant::now() + Duration::from_secs(20);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Ok(Some(status)) = registry.child.try_wait() {
                panic!("docker-registry exited early: {status}");
            }
            assert!(Instant::now() < deadline, "docker-registry did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
        registry
    }

    /// `oci://127.0.0.1:PORT/charts`.
    pub fn repo(&self) -> String {
        format!("oci://127.0.0.1:{}/charts", self.port)
    }

    /// Pushes the fixture charts named (`cilium-1.20.0.tgz`, ...).
    pub async fn push_fixtures(&self, archives: &[&str]) {
        for name in archives {
            let path = fixtures().join("charts").join(name);
            let data = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            engine_helm::oci::push(&data, &self.repo(), &Default::default())
                .await
                .unwrap_or_else(|e| panic!("pushing {name}: {e}"));
        }
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
