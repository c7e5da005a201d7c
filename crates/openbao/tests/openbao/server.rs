//! Real OpenBao servers on loopback, one per test, stopped on drop.
//!
//! - [`BaoServer::dev`]: `bao server -dev` with a random root token (HTTP).
//! - [`BaoServer::transit_provider`]: a dev server with a `transit` key, to auto-unseal others.
//! - [`BaoServer::raft`]: a real server: raft storage, TLS from our PKI, and a `transit` seal
//!   (auto-unseal) or none (Shamir). Uninitialised until a test initialises it.

use engine::Secret;
use engine_openbao::{BaoClient, BaoConnection};
use serde_json::json;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The `bao` binary: `$ENGINE_BAO_BIN`, else where `testenv/install-openbao.sh` puts it.
pub fn bao_bin() -> PathBuf {
    if let Some(p) = std::env::var_os("ENGINE_BAO_BIN") {
        let p = PathBuf::from(p);
        assert!(
            p.exists(),
            "ENGINE_BAO_BIN={} does not exist; run testenv/install-openbao.sh",
            p.display()
        );
        return p;
    }
    let home = std::env::var_os("HOME").expect("HOME is set");
    let p = PathBuf::from(home).join(".cache/engine/openbao-2.7.2/bin/bao");
    assert!(
        p.exists(),
        "OpenBao is not installed at {}: run testenv/install-openbao.sh (or set ENGINE_BAO_BIN)",
        p.display()
    );
    p
}

/// A port `p` with `p + 1` also free (OpenBao's cluster port).
fn free_port_pair() -> u16 {
    for _ in 0..50 {
        let a = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        let p = a.local_addr().unwrap().port();
        if p < u16::MAX && TcpListener::bind(("127.0.0.1", p + 1)).is_ok() {
            return p;
        }
    }
    panic!("no pair of free loopback ports");
}

/// The seal a raft server uses.
pub enum Seal {
    Shamir,
    /// Auto-unseal through the transit engine of another server.
    Transit {
        address: String,
        token: Secret,
        key: String,
    },
}

pub struct BaoServer {
    child: Option<Child>,
    args: Vec<String>,
    dir: tempfile::TempDir,
    pub address: String,
    pub ca_bundle: Option<String>,
    /// The root token of a dev server.
    pub root_token: Option<Secret>,
}

impl BaoServer {
    /// A dev server (in-memory, initialised, unsealed) with a random root token.
    pub async fn dev() -> BaoServer {
        let token = engine_openbao::random_secret(18).unwrap();
        let token = Secret::new(format!("root-{}", token.expose()));
        let port = free_port_pair();
        let args = vec![
            "server".to_string(),
            "-dev".into(),
            format!("-dev-root-token-id={}", token.expose()),
            format!("-dev-listen-address=127.0.0.1:{port}"),
        ];
        let mut s = BaoServer::spawn(args, format!("http://127.0.0.1:{port}"), None);
        s.root_token = Some(token);
        s.wait_http(|status| status == 200).await;
        s
    }

    /// A dev server with transit key `key`, to serve as another server's seal.
    pub async fn transit_provider(key: &str) -> BaoServer {
        let s = BaoServer::dev().await;
        let c = s.root_client();
        c.write("test", "sys/mounts/transit", &json!({"type": "transit"}))
            .await
            .expect("enable transit");
        c.write("test", &format!("transit/keys/{key}"), &json!({}))
            .await
            .expect("create the transit key");
        s
    }

    /// A real server with raft storage serving TLS (`leaf_chain`, `leaf_key`) for `localhost`,
    /// trusted through `ca_bundle`; uninitialised.
    pub async fn raft(
        seal: &Seal,
        leaf_chain: &str,
        leaf_key: &Secret,
        ca_bundle: &str,
    ) -> BaoServer {
        let port = free_port_pair();
        let dir = tempfile::tempdir().expect("temp dir");
        let data = dir.path().join("raft");
        std::fs::create_dir(&data).unwrap();
        std::fs::write(dir.path().join("tls.crt"), leaf_chain).unwrap();
        std::fs::write(dir.path().join("tls.key"), leaf_key.expose()).unwrap();
        let seal = match seal {
            Seal::Shamir => String::new(),
            Seal::Transit { address, token, key } => format!(
                "seal \"transit\" {{\n  address = \"{address}\"\n  token = \"{}\"\n  key_name = \"{key}\"\n  mount_path = \"transit/\"\n}}\n",
                token.expose()
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
        std::fs::write(&config_path, config).unwrap();
        let args = vec!["server".to_string(), format!("-config={}", config_path.display())];
        let mut s = BaoServer::spawn_in(
            dir,
            args,
            format!("https://localhost:{port}"),
            Some(ca_bundle.to_string()),
        );
        s.wait_http(|_| true).await;
        s
    }

    fn spawn(args: Vec<String>, address: String, ca: Option<String>) -> BaoServer {
        let dir = tempfile::tempdir().expect("temp dir");
        BaoServer::spawn_in(dir, args, address, ca)
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
        let log =
            std::fs::OpenOptions::new().create(true).append(true).open(self.log_path()).unwrap();
        let child = Command::new(bao_bin())
            .args(&self.args)
            // The dev server stores its token in $HOME; keep it in the test's directory.
            .env("HOME", self.dir.path())
            .env_remove("BAO_ADDR")
            .env_remove("VAULT_ADDR")
            .env_remove("BAO_TOKEN")
            .env_remove("VAULT_TOKEN")
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("start bao");
        self.child = Some(child);
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
        self.wait_http(|_| true).await;
    }

    /// The server's log, for failure messages.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.log_path()).unwrap_or_default()
    }

    /// Polls `sys/health` until it answers a status accepted by `ok` (30 s at most).
    async fn wait_http(&mut self, ok: impl Fn(u16) -> bool) {
        let client = BaoClient::new(&self.connection(None)).unwrap();
        let started = Instant::now();
        loop {
            if let Some(c) = self.child.as_mut()
                && let Ok(Some(status)) = c.try_wait()
            {
                panic!("bao exited ({status}):\n{}", self.log());
            }
            if let Ok(status) = client.status("test", "sys/health").await
                && ok(status)
            {
                return;
            }
            if started.elapsed() > Duration::from_secs(30) {
                panic!("bao did not come up on {}:\n{}", self.address, self.log());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// A connection to this server with `token`.
    pub fn connection(&self, token: Option<Secret>) -> BaoConnection {
        BaoConnection { address: self.address.clone(), ca_bundle: self.ca_bundle.clone(), token }
    }

    /// A client with the dev root token: the tests' own, independent of the kinds.
    pub fn root_client(&self) -> BaoClient {
        BaoClient::new(&self.connection(self.root_token.clone())).unwrap()
    }

    /// A client with `token`.
    pub fn client(&self, token: Secret) -> BaoClient {
        BaoClient::new(&self.connection(Some(token))).unwrap()
    }

    #[allow(dead_code)]
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for BaoServer {
    fn drop(&mut self) {
        self.stop();
    }
}
