//! Real OpenBao servers on loopback, one per test, stopped on drop.
//!
//! - [`BaoServer::dev`]: `bao server -dev` with a random root token (HTTP).
//! - [`BaoServer::transit_provider`]: a dev server with a `transit` key, to auto-unseal others.
//! - [`BaoServer::raft`]: a real server: raft storage, TLS from the test's PKI, and a `transit`
//!   seal (auto-unseal) or none (Shamir). Uninitialised until a test initialises it.
//!
//! The servers are probed and prepared with the `bao` command itself (`bao status`,
//! `bao secrets enable`), as an operator would.

use crate::{cache, free_port_pair, installed};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The `bao` binary: `$ENGINE_BAO_BIN`, else where `testenv/install-openbao.sh` puts it.
pub fn bao_bin() -> PathBuf {
    installed("ENGINE_BAO_BIN", cache("openbao-2.7.2/bin/bao"), "testenv/install-openbao.sh")
}

/// The seal a raft server uses.
pub enum Seal {
    Shamir,
    /// Auto-unseal through the transit engine of another server.
    Transit {
        address: String,
        token: String,
        key: String,
    },
}

pub struct BaoServer {
    child: Option<Child>,
    args: Vec<String>,
    dir: tempfile::TempDir,
    pub address: String,
    /// The CA bundle that verifies the server's TLS certificate (none for HTTP).
    pub ca_bundle: Option<String>,
    /// The root token of a dev server.
    pub root_token: Option<String>,
}

impl BaoServer {
    /// A dev server (in-memory, initialised, unsealed) with a random root token.
    pub async fn dev() -> BaoServer {
        let token = format!("root-{}", random_hex(18));
        let port = free_port_pair();
        let args = vec![
            "server".to_string(),
            "-dev".into(),
            format!("-dev-root-token-id={token}"),
            format!("-dev-listen-address=127.0.0.1:{port}"),
        ];
        let mut s = BaoServer::spawn_in(temp_dir(), args, format!("http://127.0.0.1:{port}"), None);
        s.root_token = Some(token);
        // Exit status 0: initialised and unsealed.
        s.wait_status(|code| code == 0).await;
        s
    }

    /// A dev server with transit key `key`, to serve as another server's seal.
    pub async fn transit_provider(key: &str) -> BaoServer {
        let s = BaoServer::dev().await;
        s.bao(&["secrets", "enable", "transit"]).await;
        s.bao(&["write", "-f", &format!("transit/keys/{key}")]).await;
        s
    }

    /// A real server with raft storage serving TLS (`leaf_chain`, `leaf_key`) for `localhost`,
    /// trusted through `ca_bundle`; uninitialised.
    pub async fn raft(seal: &Seal, leaf_chain: &str, leaf_key: &str, ca_bundle: &str) -> BaoServer {
        let port = free_port_pair();
        let dir = temp_dir();
        let data = dir.path().join("raft");
        std::fs::create_dir(&data).expect("the raft directory");
        std::fs::write(dir.path().join("tls.crt"), leaf_chain).expect("the TLS certificate");
        std::fs::write(dir.path().join("tls.key"), leaf_key).expect("the TLS key");
        std::fs::write(dir.path().join("ca.crt"), ca_bundle).expect("the CA bundle");
        let seal = match seal {
            Seal::Shamir => String::new(),
            Seal::Transit { address, token, key } => format!(
                "seal \"transit\" {{\n  address = \"{address}\"\n  token = \"{token}\"\n  key_name = \"{key}\"\n  mount_path = \"transit/\"\n}}\n",
            ),
        };
        let config = format!(
            r#"storage "raft" {{
  path = "{data}"
  node_id = "node-1"
  performance_multiplier = 1
}}
listener "tcp" {{
  address = "127.0.0.1:{port}"
  cluster_address = "127.0.0.1:{cluster}"
  tls_cert_file = "{dir}/tls.crt"
  tls_key_file = "{dir}/tls.key"
}}
{seal}
api_addr = "https://localhost:{port}"
cluster_addr = "https://127.0.0.1:{cluster}"
disable_mlock = true
"#,
            data = data.display(),
            dir = dir.path().display(),
            cluster = port + 1,
        );
        let config_path = dir.path().join("server.hcl");
        std::fs::write(&config_path, config).expect("the server configuration");
        let args = vec!["server".to_string(), format!("-config={}", config_path.display())];
        let address = format!("https://localhost:{port}");
        let mut s = BaoServer::spawn_in(dir, args, address, Some(ca_bundle.to_string()));
        // Any answer: 0 unsealed, 2 sealed (1 is "cannot reach it").
        s.wait_status(|code| code == 0 || code == 2).await;
        s
    }

    /// A raft server (as [`BaoServer::raft`]) auto-unsealed by a new transit server, returned
    /// with it: the seal must outlive the server.
    pub async fn auto_unsealed(
        leaf_chain: &str,
        leaf_key: &str,
        ca_bundle: &str,
    ) -> (BaoServer, BaoServer) {
        let transit = BaoServer::transit_provider("autounseal").await;
        let seal = Seal::Transit {
            address: transit.address.clone(),
            token: transit.root_token.clone().expect("a dev server has a root token"),
            key: "autounseal".into(),
        };
        (BaoServer::raft(&seal, leaf_chain, leaf_key, ca_bundle).await, transit)
    }

    fn spawn_in(
        dir: tempfile::TempDir,
        args: Vec<String>,
        address: String,
        ca_bundle: Option<String>,
    ) -> BaoServer {
        let mut s = BaoServer { child: None, args, dir, address, ca_bundle, root_token: None };
        s.start();
        s
    }

    fn log_path(&self) -> PathBuf {
        self.dir.path().join("bao.log")
    }

    fn start(&mut self) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log_path())
            .expect("the server's log file");
        let child = self
            .command()
            .args(&self.args)
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("the log file"))
            .stderr(log)
            .spawn()
            .expect("start bao");
        self.child = Some(child);
    }

    /// The `bao` command, isolated from the machine's configuration: its home (where the dev
    /// server and the CLI keep tokens) is the test's directory.
    fn command(&self) -> Command {
        let mut command = Command::new(bao_bin());
        command
            .env("HOME", self.dir.path())
            .env_remove("BAO_ADDR")
            .env_remove("VAULT_ADDR")
            .env_remove("BAO_TOKEN")
            .env_remove("VAULT_TOKEN");
        command
    }

    /// `bao <args>` against this server with the root token; panics with its output on failure.
    async fn bao(&self, args: &[&str]) {
        let mut command = self.client_command();
        command.args(args);
        if let Some(token) = &self.root_token {
            command.env("BAO_TOKEN", token);
        }
        let out = tokio::task::spawn_blocking(move || command.output())
            .await
            .expect("the bao command ran")
            .expect("start the bao command");
        assert!(
            out.status.success(),
            "bao {args:?} failed:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// The `bao` command aimed at this server (and trusting its CA).
    fn client_command(&self) -> Command {
        let mut command = self.command();
        command.env("BAO_ADDR", &self.address);
        if self.ca_bundle.is_some() {
            command.env("BAO_CACERT", self.dir.path().join("ca.crt"));
        }
        command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
        command
    }

    fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Kills the server (no graceful shutdown) and starts it again on the same storage.
    pub async fn restart(&mut self) {
        self.stop();
        self.start();
        self.wait_status(|code| code == 0 || code == 2).await;
    }

    /// The server's log, for failure messages.
    pub fn log(&self) -> String {
        let mut text = String::new();
        if let Ok(mut file) = std::fs::File::open(self.log_path()) {
            let _ = file.read_to_string(&mut text);
        }
        text
    }

    /// Runs `bao status` until its exit status is accepted by `ok` (30 s at most).
    async fn wait_status(&mut self, ok: impl Fn(i32) -> bool) {
        let started = Instant::now();
        loop {
            if let Some(c) = self.child.as_mut()
                && let Ok(Some(status)) = c.try_wait()
            {
                panic!("bao exited ({status}):\n{}", self.log());
            }
            let mut status = self.client_command();
            status.arg("status").stdout(Stdio::null()).stderr(Stdio::null());
            let code = tokio::task::spawn_blocking(move || status.status())
                .await
                .expect("bao status ran")
                .expect("start bao status")
                .code();
            if code.is_some_and(&ok) {
                return;
            }
            if started.elapsed() > Duration::from_secs(30) {
                panic!("bao did not come up on {}:\n{}", self.address, self.log());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The server's working directory (its configuration, log and storage).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for BaoServer {
    fn drop(&mut self) {
        self.stop();
    }
}

fn temp_dir() -> tempfile::TempDir {
    tempfile::tempdir().expect("a temporary directory")
}

/// `bytes` random bytes from the kernel, as hex.
fn random_hex(bytes: usize) -> String {
    let mut buf = vec![0u8; bytes];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut buf))
        .expect("read /dev/urandom");
    buf.iter().map(|b| format!("{b:02x}")).collect()
}
