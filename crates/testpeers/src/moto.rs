//! A moto server (the AWS emulator, with the project's extension) on a free loopback port, one
//! per test.

use crate::{cache, free_port, installed, workspace};
use aws_config::{BehaviorVersion, SdkConfig};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The moto version the test environment installs (testenv/install-moto.sh).
pub const MOTO_VERSION: &str = "5.2.5";

/// A running moto server; killed on drop.
pub struct Moto {
    child: Child,
    port: u16,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

/// The project's wrapper that starts moto with its extension (EKS calls, S3 wire-format fixes):
/// `$ENGINE_MOTO_SERVER`, else `testenv/moto-server` over the moto testenv/install-moto.sh
/// installs.
fn moto_server_bin() -> PathBuf {
    if let Some(p) = std::env::var_os("ENGINE_MOTO_SERVER") {
        return PathBuf::from(p);
    }
    let moto = format!("moto-{MOTO_VERSION}/bin/moto_server");
    installed("ENGINE_MOTO_BIN", cache(&moto), "testenv/install-moto.sh");
    workspace().join("testenv/moto-server")
}

impl Moto {
    /// Starts a fresh server and waits until it answers.
    pub fn start() -> Moto {
        let bin = moto_server_bin();
        let dir = tempfile::tempdir().expect("temp dir");
        for _ in 0..3 {
            let port = free_port();
            let log = dir.path().join(format!("moto-{port}.log"));
            let file = std::fs::File::create(&log).expect("moto log");
            let child = Command::new(&bin)
                .args(["-H", "127.0.0.1", "-p", &port.to_string()])
                .env("MOTO_IAM_LOAD_MANAGED_POLICIES", "true")
                .stdout(Stdio::from(file.try_clone().expect("log")))
                .stderr(Stdio::from(file))
                .spawn()
                .unwrap_or_else(|e| panic!("cannot start {}: {e}", bin.display()));
            let mut moto = Moto { child, port, log, _dir: tempfile::tempdir().expect("temp dir") };
            if moto.wait_ready(Duration::from_secs(30)) {
                moto._dir = dir;
                return moto;
            }
        }
        panic!("moto did not start; see logs in {}", dir.path().display());
    }

    fn wait_ready(&mut self, timeout: Duration) -> bool {
        let started = Instant::now();
        while started.elapsed() < timeout {
            if let Ok(Some(_)) = self.child.try_wait() {
                return false;
            }
            if TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        false
    }

    /// `http://127.0.0.1:PORT`.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The server's log (for failure messages).
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// An SDK config pointing at this server with test credentials.
    pub async fn sdk_config(&self) -> SdkConfig {
        sdk_config_at(&self.endpoint()).await
    }
}

/// An SDK config pointing at `endpoint` (moto, or a proxy in front of it) with test credentials.
pub async fn sdk_config_at(endpoint: &str) -> SdkConfig {
    aws_config::defaults(BehaviorVersion::latest())
        .endpoint_url(endpoint)
        .region(aws_config::Region::new("eu-west-3"))
        .credentials_provider(aws_sdk_ec2::config::Credentials::new(
            "test", "test", None, None, "tests",
        ))
        .load()
        .await
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The string value of secret `name` in Secrets Manager (panics when there is none).
pub async fn secret_string(sdk: &SdkConfig, name: &str) -> String {
    aws_sdk_secretsmanager::Client::new(sdk)
        .get_secret_value()
        .secret_id(name)
        .send()
        .await
        .unwrap_or_else(|e| panic!("secret {name} in Secrets Manager: {e:?}"))
        .secret_string()
        .unwrap_or_else(|| panic!("secret {name} has no string value"))
        .to_string()
}
