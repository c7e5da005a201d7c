//! [`AwsProxy`]: `testenv/aws_proxy.py` in front of moto, which answers the slow AWS operations
//! after their production duration (scaled down), or never answers chosen calls so a test can
//! kill the engine between a create and the state write that follows it.

use crate::workspace;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

/// A running proxy; killed on drop.
pub struct AwsProxy {
    child: Child,
    port: u16,
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
    pub kill_after: Option<(usize, std::path::PathBuf)>,
    /// Fraction of calls answered with the service's throttling error (0: none).
    pub throttle: f64,
    /// Seed of the throttling draws (runs are repeatable).
    pub seed: u64,
    /// Operations whose first call is forwarded, then answered with a connection reset.
    pub resets: Vec<String>,
    /// (operation, error code, seconds): the operation is answered with that error for that
    /// long after its first call.
    pub fails: Vec<(String, String, u64)>,
}

impl AwsProxy {
    /// Starts the proxy in front of `upstream` (e.g. moto's endpoint).
    pub fn start(upstream: &str, rules: &ProxyRules) -> AwsProxy {
        let mut cmd = Command::new("python3");
        cmd.arg(workspace().join("testenv/aws_proxy.py")).arg(upstream);
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
            .expect("python3 testenv/aws_proxy.py");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("the proxy's stdout"))
            .read_line(&mut line)
            .expect("the proxy's port");
        let port = line
            .trim()
            .strip_prefix("port ")
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("the proxy printed `{line}`"));
        AwsProxy { child, port }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

impl Drop for AwsProxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
