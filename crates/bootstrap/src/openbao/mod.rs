//! OpenBao configuration as engine resource kinds, on OpenBao's HTTP API.
//!
//! | kind | what | API |
//! |---|---|---|
//! | `openbao_init` | initialised + unsealed server (or restored from a snapshot) | `sys/init`, `sys/seal-status`, `sys/storage/raft/snapshot-force` |
//! | `openbao_mount` | secrets engine (kv-v2, pki, ...) | `sys/mounts` |
//! | `openbao_auth` | auth method (userpass, jwt) | `sys/auth` |
//! | `openbao_policy` | ACL policy | `sys/policies/acl` |
//! | `openbao_userpass_user` | userpass user with a generated password | `auth/<mount>/users` |
//! | `openbao_jwt_config` | JWT auth config (discovery URL or public keys, issuer) | `auth/<mount>/config` |
//! | `openbao_jwt_role` | JWT role | `auth/<mount>/role` |
//! | `openbao_pki_intermediate` | imported intermediate CA as default issuer | `<mount>/issuers/import/bundle` |
//! | `openbao_pki_role` | PKI role | `<mount>/roles` |
//! | `openbao_server_tls` | OpenBao's own TLS certificate, issued from the intermediate | the secret store |
//!
//! The kinds reach OpenBao through a [`BaoConnector`] given when they are built (the address,
//! CA bundle and token are looked up at apply time, never carried in attributes), and reach the
//! world outside OpenBao through [`SecretSink`], [`SecretSource`] and [`SnapshotSource`].
//!
//! ```no_run
//! # use std::sync::Arc;
//! use engine_bootstrap::openbao::{BaoConnection, MemorySecrets, OpenBao, StaticConnector};
//! let secrets = Arc::new(MemorySecrets::new());
//! let bao = OpenBao::builder(Arc::new(StaticConnector(BaoConnection {
//!     address: "https://bao.priv.aws.example.com:8200".into(),
//!     ca_bundle: Some(std::fs::read_to_string("root-ca.crt").unwrap()),
//!     token: None,
//! })))
//! .secret_sink(secrets.clone())
//! .secret_source(secrets)
//! .build();
//! let kinds = bao.kinds(); // register with the provider
//! ```

mod client;
mod config;
mod hooks;
mod init;
mod jwt;
mod mount;
mod pki_engine;
mod policy;
mod server_tls;
mod shared;
mod userpass;

pub use client::{
    BaoClient, BaoConnection, BaoConnector, BaoError, StaticConnector, StoredTokenConnector,
};
pub use config::{
    ClusterIssuer, ConfigError, InitConfig, JwtMountConfig, JwtRoleConfig, MountConfig,
    OpenBaoConfig, PkiConfig, PkiRoleConfig, PoliciesConfig, STAGE, TlsConfig, Ttl, UserConfig,
    UserpassConfig, expand, expand_at, expand_with_cluster,
};
pub use hooks::{
    HookError, MemorySecrets, NoSecrets, NoSnapshots, SecretSink, SecretSource, Snapshot,
    SnapshotSource,
};
pub use pki_engine::ROLE_SETTINGS as PKI_ROLE_SETTINGS;
pub use policy::normalize as normalize_policy;

use engine::{ApiCalls, Kind, Secret};
use shared::Shared;
use std::sync::Arc;
use std::time::Duration;

/// The OpenBao kinds of one server, sharing one connection pool, one mount lock and one API
/// call counter.
pub struct OpenBao {
    shared: Arc<Shared>,
}

/// Builds an [`OpenBao`].
pub struct OpenBaoBuilder {
    connector: Arc<dyn BaoConnector>,
    sink: Arc<dyn SecretSink>,
    source: Arc<dyn SecretSource>,
    snapshots: Arc<dyn SnapshotSource>,
    ready_timeout: Duration,
}

impl OpenBao {
    /// Kinds reaching OpenBao through `connector`; no secret store and no snapshots until set.
    pub fn builder(connector: Arc<dyn BaoConnector>) -> OpenBaoBuilder {
        OpenBaoBuilder {
            connector,
            sink: Arc::new(NoSecrets),
            source: Arc::new(NoSecrets),
            snapshots: Arc::new(NoSnapshots),
            ready_timeout: Duration::from_secs(120),
        }
    }

    /// Every OpenBao kind.
    pub fn kinds(&self) -> Vec<Arc<dyn Kind>> {
        let s = &self.shared;
        vec![
            Arc::new(init::Init(s.clone())),
            Arc::new(mount::Mount { shared: s.clone(), table: mount::Table::Secrets }),
            Arc::new(mount::Mount { shared: s.clone(), table: mount::Table::Auth }),
            Arc::new(policy::Policy(s.clone())),
            Arc::new(userpass::UserpassUser(s.clone())),
            Arc::new(jwt::JwtConfig(s.clone())),
            Arc::new(jwt::JwtRole(s.clone())),
            Arc::new(pki_engine::PkiIntermediate(s.clone())),
            Arc::new(pki_engine::PkiRole(s.clone())),
            Arc::new(server_tls::ServerTls(s.clone())),
        ]
    }

    /// OpenBao API calls made by these kinds so far (`openbao:<operation>`).
    pub fn api_calls(&self) -> ApiCalls {
        self.shared.calls.snapshot()
    }
}

impl OpenBaoBuilder {
    /// Where created credentials go (root token, recovery keys, generated passwords).
    pub fn secret_sink(mut self, sink: Arc<dyn SecretSink>) -> Self {
        self.sink = sink;
        self
    }

    /// Where imported secrets come from (the intermediate CA bundle, stored unseal keys).
    pub fn secret_source(mut self, source: Arc<dyn SecretSource>) -> Self {
        self.source = source;
        self
    }

    /// Where the lineage's snapshots are found (rehydrate instead of a fresh init).
    pub fn snapshots(mut self, snapshots: Arc<dyn SnapshotSource>) -> Self {
        self.snapshots = snapshots;
        self
    }

    /// How long `openbao_init` waits for the server to become active (default 120 s).
    pub fn ready_timeout(mut self, timeout: Duration) -> Self {
        self.ready_timeout = timeout;
        self
    }

    pub fn build(self) -> OpenBao {
        OpenBao {
            shared: Arc::new(Shared::new(
                self.connector,
                self.sink,
                self.source,
                self.snapshots,
                self.ready_timeout,
            )),
        }
    }
}

/// Every OpenBao kind reaching OpenBao through `connector`, without secret store or snapshots
/// (enough for configuration kinds other than init and userpass users).
pub fn kinds(connector: Arc<dyn BaoConnector>) -> Vec<Arc<dyn Kind>> {
    OpenBao::builder(connector).build().kinds()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_is_named_openbao_and_unique() {
        let kinds = kinds(Arc::new(StaticConnector(BaoConnection {
            address: "http://127.0.0.1:8200".into(),
            ca_bundle: None,
            token: None,
        })));
        let mut names: Vec<&str> = kinds.iter().map(|k| k.name()).collect();
        assert!(names.iter().all(|n| n.starts_with("openbao_")));
        names.sort();
        names.dedup();
        assert_eq!(names.len(), 10);
    }
}

/// A fresh random secret of `bytes` random bytes, base64url-encoded (no padding).
pub fn random_secret(bytes: usize) -> Result<Secret, String> {
    use base64::Engine as _;
    let mut buf = vec![0u8; bytes];
    aws_lc_rs::rand::fill(&mut buf)
        .map_err(|_| "the system random generator failed".to_string())?;
    let out = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&buf);
    buf.iter_mut().for_each(|b| *b = 0);
    Ok(Secret::new(out))
}
