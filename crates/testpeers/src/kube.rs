//! A real Kubernetes control plane (etcd, kube-apiserver, controller-manager, scheduler, kwok
//! with Ready nodes) on loopback, started per test by `testenv/kube-up.sh` and stopped on drop.

use crate::{cache, installed, workspace};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The Kubernetes version the test environment builds (testenv/kube/versions.env).
pub const KUBE_VERSION: &str = "v1.36.5";

/// A running control plane; stopped on drop.
pub struct KubeCluster {
    dir: tempfile::TempDir,
    kubeconfig: PathBuf,
}

fn bin_dir() -> PathBuf {
    let default = cache(&format!("kube-{KUBE_VERSION}/bin"));
    let dir = installed("KUBE_BIN_DIR", default, "testenv/install-kube.sh");
    installed("KUBE_APISERVER", dir.join("kube-apiserver"), "testenv/install-kube.sh");
    dir
}

impl KubeCluster {
    /// Starts a fresh control plane with `nodes` kwok nodes. Ports are picked free just before
    /// use, so a start that loses a port to a parallel test is tried again (three times).
    pub fn start(nodes: u32) -> KubeCluster {
        let mut failures = Vec::new();
        for _ in 0..3 {
            let dir = tempfile::Builder::new().prefix("engine-kube-").tempdir().expect("temp dir");
            let out = Command::new(workspace().join("testenv/kube-up.sh"))
                .arg(dir.path())
                .env("KUBE_BIN_DIR", bin_dir())
                .env("KUBE_NODES", nodes.to_string())
                .output()
                .expect("running testenv/kube-up.sh");
            let cluster = KubeCluster { kubeconfig: dir.path().join("kubeconfig"), dir };
            if out.status.success() {
                return cluster;
            }
            let stderr = String::from_utf8_lossy(&out.stderr).to_string();
            let port_taken = stderr.contains("address already in use");
            failures.push(stderr);
            drop(cluster);
            if !port_taken {
                break;
            }
        }
        panic!("kube-up.sh failed:\n{}", failures.join("\n---\n"));
    }

    /// The admin kubeconfig (bearer token, system:masters).
    pub fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    /// The client configuration of the admin kubeconfig.
    pub async fn config(&self) -> kube::Config {
        let file = kube::config::Kubeconfig::read_from(&self.kubeconfig).expect("kubeconfig");
        kube::Config::from_custom_kubeconfig(file, &Default::default()).await.expect("config")
    }

    /// A client for assertions.
    pub async fn client(&self) -> kube::Client {
        // kube's TLS needs a process-wide crypto provider; aws-lc-rs is the workspace's.
        let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
        kube::Client::try_from(self.config().await).expect("client")
    }

    /// A token of service account `namespace/name` for `audience` (10 minutes), making the
    /// namespace and the account when they are missing.
    pub async fn service_account_token(
        &self,
        namespace: &str,
        name: &str,
        audience: &str,
    ) -> String {
        use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
        use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
        use kube::api::{Api, PostParams};
        let client = self.client().await;
        let exists = |r: Result<_, kube::Error>| match r {
            Ok(_) => {}
            Err(kube::Error::Api(e)) if e.code == 409 => {}
            Err(e) => panic!("creating {namespace}/{name}: {e}"),
        };
        let namespaces: Api<Namespace> = Api::all(client.clone());
        let mut ns = Namespace::default();
        ns.metadata.name = Some(namespace.into());
        exists(namespaces.create(&PostParams::default(), &ns).await.map(|_| ()));
        let accounts: Api<ServiceAccount> = Api::namespaced(client, namespace);
        let mut account = ServiceAccount::default();
        account.metadata.name = Some(name.into());
        exists(accounts.create(&PostParams::default(), &account).await.map(|_| ()));
        let request = TokenRequest {
            spec: Some(TokenRequestSpec {
                audiences: Some(vec![audience.to_string()]),
                expiration_seconds: Some(600),
                ..Default::default()
            }),
            ..Default::default()
        };
        accounts
            .create_token_request(name, &PostParams::default(), &request)
            .await
            .unwrap_or_else(|e| panic!("a token of {namespace}/{name}: {e}"))
            .status
            .expect("a token request status")
            .token
            .expect("a token")
    }

    /// A value of the control plane's `env` file (`KUBE_OIDC_ISSUER`, `KUBE_CA_FILE`, ...).
    pub fn env(&self, key: &str) -> String {
        let text = std::fs::read_to_string(self.dir.path().join("env")).expect("env file");
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("export {key}=")))
            .unwrap_or_else(|| panic!("{key} is not in the control plane's env"))
            .trim_matches('\'')
            .to_string()
    }

    /// The API server's URL, also its service-account issuer (with anonymous OIDC discovery).
    pub fn issuer(&self) -> String {
        self.env("KUBE_OIDC_ISSUER")
    }

    /// The cluster CA (PEM).
    pub fn ca_pem(&self) -> String {
        std::fs::read_to_string(self.env("KUBE_CA_FILE")).expect("cluster CA")
    }

    /// A component's log (for failure messages).
    pub fn log(&self, component: &str) -> String {
        std::fs::read_to_string(self.dir.path().join(format!("{component}.log")))
            .unwrap_or_default()
    }
}

impl Drop for KubeCluster {
    fn drop(&mut self) {
        let _ = Command::new(workspace().join("testenv/kube-down.sh"))
            .arg(self.dir.path())
            .env("KUBE_STOP_TIMEOUT", "5")
            .output();
    }
}
