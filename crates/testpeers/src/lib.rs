//! The real local peers the tests talk to, each started on free loopback ports and stopped when
//! its guard drops: [`Moto`] (the AWS emulator, with the project's EKS extension), [`FaultProxy`]
//! (a proxy in front of it that injects production latencies or holds chosen calls),
//! [`Registry`] (an OCI distribution registry), [`TailscaleFake`] (Tailscale's API), [`KubeCluster`] (kube-apiserver, etcd,
//! controller-manager, scheduler and kwok nodes), and OpenBao servers ([`openbao`]).
//!
//! A peer that is not installed makes the test fail loudly with the command that installs it
//! (`testenv/install-*.sh`; `testenv/test` installs them all). This crate depends on no engine
//! crate: it speaks to the peers the way any client would.

pub mod gcp;
pub mod kube;
pub mod moto;
pub mod openbao;
pub mod proxy;
pub mod registry;
pub mod tailscale;

pub use gcp::GcpFake;
pub use kube::KubeCluster;
pub use moto::Moto;
pub use openbao::{BaoServer, Seal};
pub use proxy::{FaultProxy, ProxyRules};
pub use registry::Registry;
pub use tailscale::TailscaleFake;

use std::net::TcpListener;
use std::path::PathBuf;

/// The port a peer prints on its first line of output (`port N`), once it listens.
pub(crate) fn announced_port(child: &mut std::process::Child, what: &str) -> u16 {
    use std::io::BufRead;
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap_or_else(|| panic!("{what}'s stdout")))
        .read_line(&mut line)
        .unwrap_or_else(|e| panic!("{what}'s port: {e}"));
    line.trim()
        .strip_prefix("port ")
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("{what} printed `{line}`"))
}

/// The workspace root.
pub fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .and_then(|p| p.parent())
        .expect("crates/testpeers is inside the workspace")
        .to_path_buf()
}

/// The shared, read-only fixtures (`../shared/fixtures` from the workspace): charts and the
/// Gateway API manifests.
pub fn fixtures() -> PathBuf {
    let dir = workspace().join("../shared/fixtures");
    assert!(dir.is_dir(), "fixtures missing at {}", dir.display());
    dir
}

/// A port nothing listens on right now.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// A port `p` with `p + 1` also free (OpenBao's cluster port).
pub fn free_port_pair() -> u16 {
    for _ in 0..50 {
        let a = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        let p = a.local_addr().expect("a local address").port();
        if p < u16::MAX && TcpListener::bind(("127.0.0.1", p + 1)).is_ok() {
            return p;
        }
    }
    panic!("no pair of free loopback ports");
}

/// A binary named by `env`, else `default`; a missing one fails naming what installs it.
fn installed(env: &str, default: PathBuf, install: &str) -> PathBuf {
    let path = std::env::var_os(env).map(PathBuf::from).unwrap_or(default);
    assert!(path.exists(), "{} is not installed: run {install} (or set {env})", path.display());
    path
}

/// `~/.cache/engine/<rest>`, where the testenv scripts install the peers.
fn cache(rest: &str) -> PathBuf {
    let home = std::env::var_os("HOME").expect("HOME is set");
    PathBuf::from(home).join(".cache/engine").join(rest)
}
