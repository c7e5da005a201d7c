//! The project's GCP fake (`testenv/gcp_fake`: Compute, GKE, Cloud DNS, IAM, KMS, Secret
//! Manager, Storage and Resource Manager on one port, shapes from Google's own API
//! descriptions) on a free loopback port, one per test.

use crate::{cache, installed, workspace};
use std::process::{Child, Command, Stdio};

/// The fake's environment version (testenv/install-gcp-fake.sh).
pub const GCP_FAKE_VERSION: &str = "1";

/// A running GCP fake; killed on drop.
pub struct GcpFake {
    child: Child,
    port: u16,
}

impl GcpFake {
    /// Starts a fresh fake whose operations complete at once, and waits until it listens.
    pub fn start() -> GcpFake {
        GcpFake::start_with(&[])
    }

    /// Starts a fresh fake with extra arguments (e.g. `--operation-seconds 2`).
    pub fn start_with(args: &[&str]) -> GcpFake {
        let venv = format!("gcp-fake-{GCP_FAKE_VERSION}/bin/python");
        installed("ENGINE_GCP_FAKE_PYTHON", cache(&venv), "testenv/install-gcp-fake.sh");
        let mut child = Command::new(workspace().join("testenv/gcp-fake-server"))
            .args(["-p", "0"])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start testenv/gcp-fake-server");
        let port = crate::announced_port(&mut child, "the GCP fake");
        GcpFake { child, port }
    }

    /// `http://127.0.0.1:PORT`: the one endpoint of every service.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

impl Drop for GcpFake {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
