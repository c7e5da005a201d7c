//! OpenBao's configuration as engine resource kinds, on OpenBao's HTTP API, and the provider of
//! the `[openbao]` spec section. Cloud-neutral: the server's cloud resources belong to the
//! cloud's provider, and the stores it needs (secrets, snapshots) are traits the lane wiring
//! implements.
//!
//! | kind | what | API | file |
//! |---|---|---|---|
//! | `openbao_init` | initialised + unsealed server (or restored from a snapshot) | `sys/init`, `sys/seal-status`, `sys/storage/raft/snapshot-force` | `init.rs` |
//! | `openbao_mount` | secrets engine (kv-v2, pki, ...) | `sys/mounts` | `mount.rs` |
//! | `openbao_auth` | auth method (userpass, jwt) | `sys/auth` | `mount.rs` |
//! | `openbao_policy` | ACL policy | `sys/policies/acl` | `policy.rs` |
//! | `openbao_userpass_user` | userpass user with a generated password | `auth/<mount>/users` | `userpass.rs` |
//! | `openbao_jwt_config` | JWT auth config (discovery URL or public keys, issuer) | `auth/<mount>/config` | `jwt.rs` |
//! | `openbao_jwt_role` | JWT role | `auth/<mount>/role` | `jwt.rs` |
//! | `openbao_pki_intermediate` | imported intermediate CA as default issuer | `<mount>/issuers/import/bundle` | `pki.rs` |
//! | `openbao_pki_role` | PKI role | `<mount>/roles` | `pki.rs` |
//! | `openbao_server_tls` | OpenBao's own TLS certificate, issued from the intermediate | the secret store | `server_tls.rs` |
//! | `openbao_pre_destroy_snapshot` | a raft snapshot into the lineage's bucket, taken by a destroy before anything else goes | `sys/storage/raft/snapshot` | `pre_destroy.rs` |
//! | `openbao_contents` | what a server the engine initialised holds that the spec does not declare (drift, removed by apply) | `sys/policies/acl`, `sys/mounts`, `sys/auth`, `LIST` of roles and users | `contents.rs` |
//!
//! The rest: `spec.rs` (the section, validated, its files read), `expand.rs` (its resources),
//! `provider.rs` ([`OpenBaoProvider`], [`spec_connector`]), `client.rs` (the HTTP client),
//! `connect.rs` (how the kinds reach the server), `stores.rs` (the secret and snapshot stores),
//! `entry.rs` (the kind shared by entries written whole: JWT and PKI roles).
//!
//! The kinds reach OpenBao through a [`BaoConnector`] given when they are built (the address,
//! CA bundle and token are looked up at apply time, never carried in attributes), and reach the
//! world outside OpenBao through [`SecretSink`], [`SecretSource`] and [`SnapshotSource`].
//!
//! ```no_run
//! # use std::sync::Arc;
//! use engine_openbao::{BaoConnection, MemorySecrets, OpenBao, OpenBaoProvider, StaticConnector};
//! let secrets = Arc::new(MemorySecrets::new());
//! let bao = OpenBao::builder(Arc::new(StaticConnector(BaoConnection { route: None,
//!     address: "https://bao.priv.aws.example.com:8200".into(),
//!     ca_bundle: Some(std::fs::read_to_string("root-ca.crt").unwrap()),
//!     token: None,
//! })))
//! .secret_sink(secrets.clone())
//! .secret_source(secrets)
//! .build();
//! let provider = OpenBaoProvider::builder("aws", "aws.openbao.config", bao).build();
//! ```

mod autopilot;
mod client;
mod connect;
mod contents;
mod entry;
mod escrow;
mod expand;
mod identity_group;
mod init;
mod jwt;
mod mount;
mod pki;
mod policy;
mod pre_destroy;
mod provider;
mod server_tls;
mod shared;
mod spec;
mod stores;
mod tofu;
mod userpass;

pub use client::{BaoClient, BaoConnection, BaoError};
pub use connect::{BaoConnector, NoConnector, StaticConnector, StoredTokenConnector};
pub use escrow::Escrow;
pub use expand::{ClusterIssuer, expand};
pub use pki::ROLE_SETTINGS as PKI_ROLE_SETTINGS;
pub use policy::{normalize_policy, policy_text};
pub use provider::{OpenBaoProvider, OpenBaoProviderBuilder, spec_connector};
pub use spec::{
    ConfigError, InitConfig, JwtMountConfig, JwtRoleConfig, MountConfig, OpenBaoConfig, PkiConfig,
    PkiRoleConfig, PoliciesConfig, TlsConfig, Ttl, UserConfig, UserpassConfig,
};
pub use stores::{
    HookError, MemorySecrets, NoSecrets, NoSnapshots, SecretRef, SecretSink, SecretSource,
    Snapshot, SnapshotSink, SnapshotSource,
};

use engine::{ApiCalls, Kind, Secret, Typed};
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
    escrow: Option<Escrow>,
    snapshot_sink: Option<Arc<dyn SnapshotSink>>,
    snapshot_before_destroy: bool,
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
            escrow: None,
            snapshot_sink: None,
            snapshot_before_destroy: true,
        }
    }

    /// Every OpenBao kind.
    pub fn kinds(&self) -> Vec<Arc<dyn Kind>> {
        let s = &self.shared;
        vec![
            Typed::arc(init::InitKind(s.clone())),
            Typed::arc(autopilot::AutopilotKind(s.clone())),
            Typed::arc(identity_group::IdentityGroupKind(s.clone())),
            Typed::arc(mount::MountKind::<false>(s.clone())),
            Typed::arc(mount::MountKind::<true>(s.clone())),
            Typed::arc(policy::PolicyKind(s.clone())),
            Typed::arc(userpass::UserpassUserKind(s.clone())),
            Typed::arc(jwt::JwtConfigKind(s.clone())),
            Typed::arc(entry::EntryKind::<jwt::JwtRole>::new(s.clone())),
            Typed::arc(pki::PkiIntermediateKind(s.clone())),
            Typed::arc(entry::EntryKind::<pki::PkiRole>::new(s.clone())),
            Typed::arc(server_tls::ServerTlsKind(s.clone())),
            Typed::arc(contents::ContentsKind(s.clone())),
            Typed::arc(pre_destroy::PreDestroySnapshotKind(s.clone())),
        ]
    }

    /// Whether a destroy keeps a snapshot first (a snapshot bucket is known).
    pub fn snapshots_before_destroy(&self) -> bool {
        self.shared.snapshot_sink.is_some()
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

    /// Where `openbao_init` keeps a new server's credentials until the secret store has them
    /// (without one they go straight to the store, and a failure there loses them).
    pub fn escrow(mut self, escrow: Escrow) -> Self {
        self.escrow = Some(escrow);
        self
    }

    /// Where a destroy keeps OpenBao's snapshot before it takes anything away (the lineage's
    /// bucket); without one, no such snapshot is made.
    pub fn snapshot_sink(mut self, sink: Arc<dyn SnapshotSink>) -> Self {
        self.snapshot_sink = Some(sink);
        self
    }

    /// Whether a destroy takes that snapshot (default true; false for `--skip-snapshot`).
    pub fn snapshot_before_destroy(mut self, yes: bool) -> Self {
        self.snapshot_before_destroy = yes;
        self
    }

    pub fn build(self) -> OpenBao {
        let mut shared =
            Shared::new(self.connector, self.sink, self.source, self.snapshots, self.ready_timeout);
        shared.escrow = self.escrow;
        shared.snapshot_sink = self.snapshot_sink;
        shared.snapshot_before_destroy = self.snapshot_before_destroy;
        OpenBao { shared: Arc::new(shared) }
    }
}

/// Every OpenBao kind reaching OpenBao through `connector`, without secret store or snapshots
/// (enough for configuration kinds other than init and userpass users).
pub fn kinds(connector: Arc<dyn BaoConnector>) -> Vec<Arc<dyn Kind>> {
    OpenBao::builder(connector).build().kinds()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_is_named_openbao_and_unique() {
        let kinds = kinds(Arc::new(StaticConnector(BaoConnection {
            route: None,
            address: "http://127.0.0.1:8200".into(),
            ca_bundle: None,
            token: None,
        })));
        let mut names: Vec<&str> = kinds.iter().map(|k| k.name()).collect();
        assert!(names.iter().all(|n| n.starts_with("openbao_")));
        names.sort();
        names.dedup();
        assert_eq!(names.len(), 14);
    }
}
