//! State shared by every OpenBao kind of one [`OpenBao`](super::OpenBao): the connector, one
//! HTTP pool, the mount lock, the hooks and the API call counter. Also small helpers to read
//! attributes.

use super::client::{BaoClient, BaoConnection, BaoConnector, BaoError, http_client};
use super::hooks::{SecretSink, SecretSource, SnapshotSource};
use engine::{ApiCallCounter, Attrs, Context, KindError, Live};
use serde_json::Value as Json;
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
            http: Mutex::new(None),
        }
    }

    /// A client for the current connection, token or not.
    pub async fn connect(&self) -> Result<BaoClient, KindError> {
        let connection = self.connector.connect().await?;
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
        client.require_token(op)?;
        Ok(Some(client))
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

/// Memo key for a batched read of `what` on the server of `client`.
pub(crate) fn memo_key(client: &BaoClient, what: &str) -> String {
    format!("openbao:{}:{what}", client.address())
}

/// Forgets memoised reads of `what` (after a write).
pub(crate) fn forget(ctx: &Context, client: &BaoClient, what: &str) {
    ctx.forget(&memo_key(client, what));
}

/// A required string attribute.
pub(crate) fn str_attr<'a>(attrs: &'a Attrs, name: &str) -> Result<&'a str, KindError> {
    attrs
        .get(name)
        .and_then(Json::as_str)
        .ok_or_else(|| KindError::new(format!("attribute `{name}` must be a string")))
}

/// An optional string attribute.
pub(crate) fn opt_str<'a>(attrs: &'a Attrs, name: &str) -> Option<&'a str> {
    attrs.get(name).and_then(Json::as_str)
}

/// An optional integer attribute.
pub(crate) fn opt_int(attrs: &Attrs, name: &str) -> Option<i64> {
    attrs.get(name).and_then(Json::as_i64)
}

/// A path segment (mount path, role or policy name) safe to put in a URL as is.
pub(crate) fn path_attr<'a>(attrs: &'a Attrs, name: &str) -> Result<&'a str, KindError> {
    let v = str_attr(attrs, name)?;
    check_path(name, v)?;
    Ok(v)
}

/// Checks a value used inside an API path: letters, digits, `-`, `_`, `.`, and `/` between
/// segments; no empty or `..` segments.
pub(crate) fn check_path(name: &str, v: &str) -> Result<(), KindError> {
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

/// The path or name of a request: the id from state, else the desired attribute(s).
pub(crate) fn wanted_id(
    request: &engine::ReadRequest,
    id_of: impl Fn(&Attrs) -> Option<String>,
) -> Option<String> {
    request.id.clone().or_else(|| request.desired.as_ref().and_then(&id_of))
}

/// Reads every request concurrently: by its recorded id, else by the id `id_of` derives from
/// its desired attributes; a request with neither is absent.
pub(crate) async fn read_each<F, Fut>(
    requests: &[engine::ReadRequest],
    id_of: impl Fn(&Attrs) -> Option<String>,
    read: F,
) -> Result<Vec<Option<Live>>, KindError>
where
    F: Fn(String, Option<Attrs>) -> Fut,
    Fut: std::future::Future<Output = Result<Option<Live>, KindError>>,
{
    let reads = requests.iter().map(|r| {
        let id = wanted_id(r, &id_of);
        let fut = id.map(|id| read(id, r.desired.clone()));
        async move {
            match fut {
                Some(f) => f.await,
                None => Ok(None),
            }
        }
    });
    futures::future::join_all(reads).await.into_iter().collect()
}

/// A live resource from attribute pairs.
pub(crate) fn live(
    id: impl Into<String>,
    attrs: impl IntoIterator<Item = (&'static str, Json)>,
) -> Live {
    Live { id: id.into(), attributes: attrs.into_iter().map(|(k, v)| (k.to_string(), v)).collect() }
}

/// `value` as a JSON array of strings (null and absent: empty).
pub(crate) fn string_list(value: Option<&Json>) -> Json {
    match value {
        Some(Json::Array(a)) => Json::Array(a.clone()),
        Some(Json::String(s)) if !s.is_empty() => {
            Json::Array(s.split(',').map(|p| Json::String(p.trim().to_string())).collect())
        }
        _ => Json::Array(vec![]),
    }
}

/// `value` as an integer (seconds); OpenBao answers TTLs as numbers.
pub(crate) fn int(value: Option<&Json>) -> Json {
    match value {
        Some(Json::Number(n)) => Json::from(n.as_i64().unwrap_or_default()),
        Some(Json::String(s)) => s.parse::<i64>().map(Json::from).unwrap_or(Json::Null),
        _ => Json::from(0),
    }
}

/// `value` as a string (null and absent: empty).
pub(crate) fn string(value: Option<&Json>) -> Json {
    Json::String(value.and_then(Json::as_str).unwrap_or_default().to_string())
}

/// `value` as a bool (null and absent: false).
pub(crate) fn boolean(value: Option<&Json>) -> Json {
    Json::Bool(value.and_then(Json::as_bool).unwrap_or(false))
}

/// Text compared without whitespace noise: trailing spaces, CRLF, surrounding blank lines.
pub(crate) fn same_text(a: &str, b: &str) -> bool {
    let norm =
        |s: &str| s.lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join("\n");
    norm(a) == norm(b)
}

/// Reports `live` as `desired` when they differ only in whitespace, so the planner's plain
/// equality sees no change.
pub(crate) fn prefer_desired_text(live: &str, desired: Option<&str>) -> Json {
    match desired {
        Some(d) if same_text(live, d) => Json::String(d.to_string()),
        _ => Json::String(live.to_string()),
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
    fn text_comparison_ignores_whitespace_noise() {
        assert!(same_text("a {\r\n  b\n}\n\n", "a {\n b   \n}"));
        assert!(!same_text("a { b }", "a { c }"));
        assert_eq!(prefer_desired_text("x\n", Some("x")), Json::from("x"));
        assert_eq!(prefer_desired_text("y", Some("x")), Json::from("y"));
    }
}
