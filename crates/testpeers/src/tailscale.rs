//! The project's Tailscale API fake (`testenv/tailscale_fake`: a tailnet's policy file, DNS and
//! auth keys as Tailscale's public API v2 serves them) on a free loopback port, one per test.

use crate::workspace;
use std::process::{Child, Command, Stdio};

/// A running Tailscale API fake; killed on drop.
pub struct TailscaleFake {
    child: Child,
    port: u16,
    api_key: String,
}

impl TailscaleFake {
    /// Starts a fresh fake (the default policy file, no DNS settings, no keys) that takes
    /// `api_key`, and waits until it listens.
    pub fn start(api_key: &str) -> TailscaleFake {
        let mut child = Command::new("python3")
            .arg(workspace().join("testenv/tailscale_fake/server.py"))
            .args(["-p", "0", "--api-key", api_key])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start testenv/tailscale_fake/server.py (python3)");
        let port = crate::announced_port(&mut child, "the Tailscale fake");
        TailscaleFake { child, port, api_key: api_key.to_string() }
    }

    /// `http://127.0.0.1:PORT`, the API's base URL.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The API key it takes.
    pub fn api_key(&self) -> &str {
        &self.api_key
    }
}

impl Drop for TailscaleFake {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
