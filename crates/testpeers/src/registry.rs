//! A distribution registry (`docker-registry`) on a free loopback port: where tests push the
//! platform's charts (from `../shared/fixtures/charts`) over the OCI API, the way a release
//! pipeline pushes them to ghcr.io or quay.io, for the engine to pull.

use crate::{free_port, installed};
use std::io::Write;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

fn registry_bin() -> PathBuf {
    let default = PathBuf::from("/usr/bin/docker-registry");
    installed("ENGINE_REGISTRY_BIN", default, "testenv/install-registry.sh")
}

/// Runs the registry and removes its storage once its standard input reaches end of file: when
/// the handle is dropped, or when the test process ends in any way (only it holds the pipe's
/// write end), so a registry shared by a whole test binary does not outlive it.
const SUPERVISOR: &str = r#"
"$1" serve "$2" >/dev/null 2>&1 &
pid=$!
read -r _ || true
kill "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
rm -rf "$3"
"#;

/// A running registry; stopped (and its storage removed) on drop or when the process exits.
pub struct Registry {
    supervisor: Child,
    stdin: Option<ChildStdin>,
    pub port: u16,
}

impl Registry {
    /// Starts an empty registry open to anyone.
    pub fn start() -> Registry {
        Registry::start_with(None)
    }

    /// Starts an empty registry; with `htpasswd` (user, password), basic auth is required.
    pub fn start_with(htpasswd: Option<(&str, &str)>) -> Registry {
        let dir = tempfile::Builder::new().prefix("engine-registry-").tempdir().expect("temp dir");
        let dir = dir.keep();
        let port = free_port();
        let mut config = format!(
            "version: 0.1\nlog:\n  level: error\n  accesslog:\n    disabled: true\nstorage:\n  filesystem:\n    rootdirectory: {}\n  delete:\n    enabled: true\nhttp:\n  addr: 127.0.0.1:{port}\n",
            dir.join("data").display()
        );
        if let Some((user, password)) = htpasswd {
            let hash = bcrypt::hash(password, 5).expect("bcrypt");
            let file = dir.join("htpasswd");
            std::fs::write(&file, format!("{user}:{hash}\n")).expect("htpasswd file");
            config.push_str(&format!(
                "auth:\n  htpasswd:\n    realm: engine-test\n    path: {}\n",
                file.display()
            ));
        }
        let config_path = dir.join("config.yml");
        std::fs::write(&config_path, config).expect("registry config");
        let mut supervisor = Command::new("/bin/sh")
            .arg("-c")
            .arg(SUPERVISOR)
            .arg("engine-registry")
            .arg(registry_bin())
            .arg(&config_path)
            .arg(&dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("starting docker-registry");
        let stdin = supervisor.stdin.take();
        let mut registry = Registry { supervisor, stdin, port };
        let deadline = Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Ok(Some(status)) = registry.supervisor.try_wait() {
                panic!("docker-registry exited early ({status}) on port {port}");
            }
            assert!(Instant::now() < deadline, "docker-registry did not start on port {port}");
            std::thread::sleep(Duration::from_millis(50));
        }
        registry
    }

    /// `oci://127.0.0.1:PORT/charts`.
    pub fn repo(&self) -> String {
        format!("oci://127.0.0.1:{}/charts", self.port)
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        if let Some(mut stdin) = self.stdin.take() {
            let _ = stdin.write_all(b"stop\n");
        }
        let _ = self.supervisor.wait();
    }
}
