//! [`FaultProxy`]: `testenv/fault_proxy.py` in front of a peer (moto, OpenBao, kube-apiserver),
//! which answers the slow AWS operations after their production duration (scaled down), never
//! answers chosen calls so a test can kill the engine at a known point, loses answers, throttles,
//! or makes the peer unreachable for a while.

use crate::workspace;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

/// A running proxy; killed on drop.
pub struct FaultProxy {
    child: Child,
    port: u16,
    tls: bool,
}

/// What the proxy does besides forwarding.
#[derive(Debug, Clone, Default)]
pub struct ProxyRules {
    /// Production durations of the slow operations divided by this (0: no delay).
    pub latency_scale: f64,
    /// Operations never answered, each with a text their request body must contain (empty:
    /// every call of the operation), e.g. `("DescribeSubnets", "Filter.1.Name=subnet-id")`.
    pub holds: Vec<(String, String)>,
    /// After the N-th mutating call commits, never answer it and write `N OPERATION` to the
    /// file: the moment to kill the engine.
    pub kill_after: Option<(usize, PathBuf)>,
    /// Fraction of calls answered with the service's throttling error (0: none).
    pub throttle: f64,
    /// Seed of the throttling draws (runs are repeatable).
    pub seed: u64,
    /// Operations whose first call is forwarded, then answered with a connection reset.
    pub resets: Vec<String>,
    /// (operation, error code, seconds): the operation is answered with that error for that
    /// long after its first call.
    pub fails: Vec<(String, String, u64)>,
    /// (operation, seconds, report file): the first call of the operation is forwarded, then
    /// its connection and every other is reset for that long; `down OPERATION` is written to
    /// the file when the outage starts.
    pub down_after: Option<(String, u64, PathBuf)>,
    /// Serve HTTPS with this certificate chain and key (PEM files).
    pub tls: Option<(PathBuf, PathBuf)>,
    /// The CA bundle an https upstream is verified with.
    pub upstream_ca: Option<PathBuf>,
    /// A file that gets `sent OPERATION` and `answered OPERATION STATUS` for every forwarded
    /// call: which calls were in flight when the engine was killed.
    pub journal: Option<PathBuf>,
}

impl FaultProxy {
    /// Starts the proxy in front of `upstream` (e.g. moto's endpoint).
    pub fn start(upstream: &str, rules: &ProxyRules) -> FaultProxy {
        let mut cmd = Command::new("python3");
        cmd.arg(workspace().join("testenv/fault_proxy.py")).arg(upstream);
        if rules.latency_scale > 0.0 {
            cmd.args(["--latency-scale", &rules.latency_scale.to_string()]);
        }
        for (operation, text) in &rules.holds {
            let rule =
                if text.is_empty() { operation.clone() } else { format!("{operation}:{text}") };
            cmd.args(["--hold", &rule]);
        }
        if let Some((n, report)) = &rules.kill_after {
            cmd.args(["--kill-after", &n.to_string()]).arg("--report").arg(report);
        }
        for (operation, code, seconds) in &rules.fails {
            cmd.args(["--fail-for", &format!("{operation}:{code}:{seconds}")]);
        }
        for operation in &rules.resets {
            cmd.args(["--reset-after", operation]);
        }
        if let Some((operation, seconds, report)) = &rules.down_after {
            cmd.args(["--down-after", &format!("{operation}:{seconds}")])
                .arg("--report")
                .arg(report);
        }
        if let Some((chain, key)) = &rules.tls {
            cmd.arg("--tls-cert").arg(chain).arg("--tls-key").arg(key);
        }
        if let Some(ca) = &rules.upstream_ca {
            cmd.arg("--upstream-ca").arg(ca);
        }
        if let Some(journal) = &rules.journal {
            cmd.arg("--journal").arg(journal);
        }
        if rules.throttle > 0.0 {
            cmd.args([
                "--throttle",
                &rules.throttle.to_string(),
                "--seed",
                &rules.seed.to_string(),
            ]);
        }
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("python3 testenv/fault_proxy.py");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("the proxy's stdout"))
            .read_line(&mut line)
            .expect("the proxy's port");
        let port = line
            .trim()
            .strip_prefix("port ")
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("the proxy printed `{line}`"));
        FaultProxy { child, port, tls: rules.tls.is_some() }
    }

    /// `http://127.0.0.1:PORT` (`https://` when it serves TLS).
    pub fn endpoint(&self) -> String {
        self.endpoint_at("127.0.0.1")
    }

    /// The proxy's URL with `host` (a name its certificate holds, e.g. `localhost`).
    pub fn endpoint_at(&self, host: &str) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        format!("{scheme}://{host}:{}", self.port)
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
