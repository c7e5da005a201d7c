//! State shared by every OpenBao kind of one [`OpenBao`](crate::OpenBao): the connector, one
//! HTTP pool, the mount lock, the stores and the API call counter. Also small helpers to read
//! OpenBao's answers into typed attributes.

use crate::client::{BaoClient, BaoConnection, BaoError, http_client};
use crate::connect::BaoConnector;
use crate::escrow::Escrow;
use crate::stores::{SecretSink, SecretSource, SnapshotSink, SnapshotSource};
use engine::{ApiCallCounter, Context, KindError, KindResult, ReadRequest};
use serde::Serialize;
use serde_json::Value as Json;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub(crate) struct Shared {
    pub connector: Arc<dyn BaoConnector>,
    pub sink: Arc<dyn SecretSink>,
    pub source: Arc<dyn SecretSource>,
    pub snapshots: Arc<dyn SnapshotSource>,
    pub calls: ApiCallCounter,
    /// Enable/disable/tune of secrets engines and auth methods, one at a time: OpenBao
    /// misbehaves on concurrent mount-table changes.
    pub mount_lock: tokio::sync::Mutex<()>,
    /// How long `openbao_init` waits for the server to become active.
    pub ready_timeout: Duration,
    /// Where a new server's credentials wait for the secret store.
    pub escrow: Option<Escrow>,
    /// Where the snapshot taken before a destroy goes (none: no such snapshot is made).
    pub snapshot_sink: Option<Arc<dyn SnapshotSink>>,
    /// Whether a destroy takes that snapshot (`false`: `engine destroy --skip-snapshot`).
    pub snapshot_before_destroy: bool,
    http: Mutex<Option<HttpPool>>,
}

struct HttpPool {
    address: String,
    ca_bundle: Option<String>,
    client: reqwest::Client,
}

impl Shared {
    pub fn new(
        connector: Arc<dyn BaoConnector>,
        sink: Arc<dyn SecretSink>,
        source: Arc<dyn SecretSource>,
        snapshots: Arc<dyn SnapshotSource>,
        ready_timeout: Duration,
    ) -> Self {
        Shared {
            connector,
            sink,
            source,
            snapshots,
            calls: ApiCallCounter::default(),
            mount_lock: tokio::sync::Mutex::new(()),
            ready_timeout,
            escrow: None,
            snapshot_sink: None,
            snapshot_before_destroy: true,
            http: Mutex::new(None),
        }
    }

    /// A client for the current connection, token or not. Without a token from the connector,
    /// the root token held in escrow (a run stopped before the secret store had it) is used.
    pub async fn connect(&self) -> Result<BaoClient, KindError> {
        let mut connection = self.connector.connect().await?;
        if connection.token.is_none()
            && let Some(escrow) = &self.escrow
        {
            let held = escrow.root_token().map_err(|e| escrow.failed(e))?;
            connection.token = held;
        }
        let http = self.http_for(&connection)?;
        Ok(BaoClient::from_parts(http, &connection, self.calls.clone()))
    }

    /// A client with a token, for everything but init.
    pub async fn client(&self, op: &str) -> Result<BaoClient, KindError> {
        let client = self.connect().await?;
        client.require_token(op)?;
        Ok(client)
    }

    /// A client for reads: `None` when there is no token because OpenBao is not initialised
    /// yet (then nothing inside it exists, and a plan must say so rather than fail).
    pub async fn reader(&self, op: &str) -> Result<Option<BaoClient>, KindError> {
        let client = self.connect().await?;
        if client.has_token() {
            return Ok(Some(client));
        }
        let status = client.read("GetSealStatus", "sys/seal-status").await?.unwrap_or_default();
        if status.get("initialized").and_then(Json::as_bool) == Some(false) {
            return Ok(None);
        }
        // Initialised, and no token stored or in escrow: never read as empty.
        Err(KindError::new(format!(
            "{op}: OpenBao at {} is initialised, but no token for it is in the secret store or \
             in escrow: the credentials of its initialisation were lost or are kept elsewhere. \
             If you hold them, store the root token and keys under the spec's \
             `[openbao.init] secret_prefix` (`<prefix>/root-token`, `<prefix>/recovery-keys`) \
             and run again; otherwise make a new root token from the recovery keys \
             (`bao operator generate-root`), or wipe the server's storage and apply again",
            client.address()
        )))
    }

    /// GET the `data` of `path`; `None` when absent, or when OpenBao answers "sealed" because it
    /// is not initialised yet (a new server of a lineage whose token is already stored).
    pub async fn read_data(
        &self,
        client: &BaoClient,
        op: &str,
        path: &str,
    ) -> Result<Option<Json>, KindError> {
        match client.read_data(op, path).await {
            Ok(d) => Ok(d),
            Err(e) if e.status() == Some(503) => {
                let status =
                    client.read("GetSealStatus", "sys/seal-status").await?.unwrap_or_default();
                if status.get("initialized").and_then(Json::as_bool) == Some(false) {
                    Ok(None)
                } else if status.get("sealed").and_then(Json::as_bool) == Some(true) {
                    Err(sealed(client, op))
                } else {
                    Err(e.into())
                }
            }
            Err(e) => Err(e.into()),
        }
    }

    fn http_for(&self, c: &BaoConnection) -> Result<reqwest::Client, BaoError> {
        let mut pool = self.http.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(p) = pool.as_ref()
            && p.address == c.address
            && p.ca_bundle == c.ca_bundle
        {
            return Ok(p.client.clone());
        }
        let client = http_client(&c.address, c.ca_bundle.as_deref())?;
        *pool = Some(HttpPool {
            address: c.address.clone(),
            ca_bundle: c.ca_bundle.clone(),
            client: client.clone(),
        });
        Ok(client)
    }
}

/// A read refused because the server is sealed: what it holds cannot be known, so the plan
/// stops, naming how to unseal it.
fn sealed(client: &BaoClient, op: &str) -> KindError {
    KindError::new(format!(
        "{op}: OpenBao at {} is sealed, so what it holds cannot be read. With an auto-unseal \
         seal, wait until it unseals; with Shamir keys, apply only the `openbao_init` resource \
         (`--target` its address), which unseals it with the keys stored under the spec's \
         `[openbao.init] secret_prefix`, or unseal it with `bao operator unseal`; then run again",
        client.address()
    ))
}

/// Memo key for a batched read of `what` on the server of `client`.
pub(crate) fn memo_key(client: &BaoClient, what: &str) -> String {
    format!("openbao:{}:{what}", client.address())
}

/// The mount table at `list` (`sys/mounts` or `sys/auth`) keyed by path without the trailing
/// slash: read once per run and shared by every kind that needs it (forgotten after a write).
pub(crate) async fn mount_table(
    shared: &Shared,
    ctx: &Context,
    client: &BaoClient,
    op: &str,
    list: &str,
) -> KindResult<Arc<BTreeMap<String, Json>>> {
    ctx.memo(&memo_key(client, list), || async {
        let data = shared.read_data(client, op, list).await?.unwrap_or_default();
        let map = match data {
            Json::Object(m) => {
                m.into_iter().map(|(k, v)| (k.trim_end_matches('/').to_string(), v)).collect()
            }
            _ => BTreeMap::new(),
        };
        Ok::<_, KindError>(map)
    })
    .await
}

/// Forgets memoised reads of `what` (after a write).
pub(crate) fn forget(ctx: &Context, client: &BaoClient, what: &str) {
    ctx.forget(&memo_key(client, what));
}

/// `value` as a path segment (mount path, role or policy name) safe to put in a URL as is.
pub(crate) fn path<'a>(name: &str, value: &'a str) -> KindResult<&'a str> {
    check_path(name, value)?;
    Ok(value)
}

/// Checks a value used inside an API path: letters, digits, `-`, `_`, `.`, and `/` between
/// segments; no empty or `..` segments.
pub(crate) fn check_path(name: &str, v: &str) -> KindResult<()> {
    let ok = !v.is_empty()
        && v.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'))
        && v.split('/').all(|s| !s.is_empty() && s != "." && s != "..");
    if ok {
        Ok(())
    } else {
        Err(KindError::new(format!(
            "`{name}` = `{v}` is not a valid OpenBao path (letters, digits, `-_.`, `/` between \
             segments)"
        )))
    }
}

/// `<mount>/<name>` split at its last `/` (mount paths may hold `/`, names do not).
pub(crate) fn split_id<'a>(id: &'a str, what: &str) -> KindResult<(&'a str, &'a str)> {
    id.rsplit_once('/').ok_or_else(|| KindError::new(format!("`{id}` is not `<mount>/<{what}>`")))
}

/// Reads every request concurrently: by its recorded id, else by the id `id_of` derives from
/// its desired attributes; a request with neither is absent.
pub(crate) async fn read_each<A, T, F, Fut>(
    requests: &[ReadRequest<A>],
    id_of: impl Fn(&A) -> String,
    read: F,
) -> KindResult<Vec<Option<T>>>
where
    F: Fn(String, Option<&A>) -> Fut,
    Fut: std::future::Future<Output = KindResult<Option<T>>>,
{
    let reads = requests.iter().map(|r| {
        let id = r.id.clone().or_else(|| r.desired.as_ref().map(&id_of));
        let fut = id.map(|id| read(id, r.desired.as_ref()));
        async move {
            match fut {
                Some(f) => engine::bounded(f).await,
                None => Ok(None),
            }
        }
    });
    futures::future::join_all(reads).await.into_iter().collect()
}

/// The body of a write: the desired attributes that OpenBao takes, i.e. without the ones that
/// name the resource (`mount`, `name`, ...) and the engine's own settings.
pub(crate) fn body<A: Serialize>(kind: &str, desired: &A, leave_out: &[&str]) -> KindResult<Json> {
    let mut attrs = engine::encode(kind, desired)?;
    for key in leave_out {
        attrs.remove(*key);
    }
    Ok(Json::Object(attrs))
}

/// A list of strings as OpenBao answers it: an array, or comma-separated text (null and absent:
/// empty).
pub(crate) fn strings(value: Option<&Json>) -> Vec<String> {
    match value {
        Some(Json::Array(a)) => a.iter().filter_map(Json::as_str).map(String::from).collect(),
        Some(Json::String(s)) if !s.is_empty() => {
            s.split(',').map(|p| p.trim().to_string()).collect()
        }
        _ => Vec::new(),
    }
}

/// An integer as OpenBao answers it (TTLs in seconds, as numbers or text); absent: 0.
pub(crate) fn int(value: Option<&Json>) -> i64 {
    match value {
        Some(Json::Number(n)) => n.as_i64().unwrap_or_default(),
        Some(Json::String(s)) => s.parse().unwrap_or_default(),
        _ => 0,
    }
}

/// A string (null and absent: empty).
pub(crate) fn text(value: Option<&Json>) -> String {
    value.and_then(Json::as_str).unwrap_or_default().to_string()
}

/// A bool (null and absent: false).
pub(crate) fn flag(value: Option<&Json>) -> bool {
    value.and_then(Json::as_bool).unwrap_or(false)
}

/// Whether two texts (PEM certificates and keys) are the same but for whitespace: trailing
/// spaces, CRLF, surrounding blank lines ([`engine::normalize::text_lines`]).
pub(crate) fn same_text(a: &str, b: &str) -> bool {
    engine::normalize::text_lines(&Json::from(a)) == engine::normalize::text_lines(&Json::from(b))
}

/// A list of PEM texts, each compared as [`engine::normalize::text_lines`] does.
pub(crate) fn pem_list(value: &Json) -> Json {
    match value {
        Json::Array(items) => {
            Json::Array(items.iter().map(engine::normalize::text_lines).collect())
        }
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_checked() {
        assert!(check_path("path", "jwt/aws-0").is_ok());
        assert!(check_path("path", "pki_private_issuer").is_ok());
        for bad in ["", "a//b", "../sys", "a?b", "a b", "/a", "a/"] {
            assert!(check_path("path", bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn texts_compare_without_whitespace_noise() {
        assert!(same_text("a {\r\n  b\n}\n\n", "a {\n b   \n}"));
        assert!(!same_text("a { b }", "a { c }"));
        let keys = pem_list(&serde_json::json!(["k\r\n", " j "]));
        assert_eq!(keys, serde_json::json!(["k", "j"]));
    }

    #[test]
    fn answers_read_leniently() {
        let v = serde_json::json!({"n": 5, "s": "7", "list": "a, b", "t": true});
        assert_eq!((int(v.get("n")), int(v.get("s")), int(v.get("x"))), (5, 7, 0));
        assert_eq!(strings(v.get("list")), ["a", "b"]);
        assert!(flag(v.get("t")) && !flag(v.get("x")));
        assert_eq!(text(v.get("x")), "");
    }
}
