//! `openbao_mount` (secrets engines, `sys/mounts`) and `openbao_auth` (auth methods,
//! `sys/auth`): the same resource on two mount tables, [`MountKind`] over `AUTH`.
//!
//! Attributes: `path` and `type` (replace), `description`, `default_lease_ttl`,
//! `max_lease_ttl` (seconds; 0 = the system default) and, for secrets engines, `options`
//! (e.g. `{"version": "2"}` for kv-v2), all tuned in place; `accessor` is computed.
//!
//! Reads are batched: one `GET sys/mounts` (or `sys/auth`) answers every resource of the kind.
//! Every enable, tune and disable holds the shared mount lock.
//!
//! Mounts the engine enables carry its marker at the end of their description ([`MARKER`];
//! attributes show the description without it). A mount that state does not record is taken
//! over only when it carries the marker (a restored snapshot, a run that died before writing
//! state), never by its path alone: a create that finds the path taken by a mount without it
//! fails and names it.

use crate::shared::{Shared, forget, int, mount_table, path, text};
use engine::prelude::*;
use engine::{Changes, TypedKind};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value as Json, json};
use std::collections::BTreeMap;
use std::sync::Arc;

#[derive(Attributes, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct Mount {
    #[attr(replace)]
    pub path: String,
    #[attr(replace)]
    #[serde(rename = "type")]
    pub kind: String,
    #[attr(in_place)]
    #[serde(default)]
    pub description: String,
    #[attr(in_place)]
    pub default_lease_ttl: Option<i64>,
    #[attr(in_place)]
    pub max_lease_ttl: Option<i64>,
    #[attr(computed)]
    pub accessor: Option<String>,
    /// Secrets engines only.
    #[attr(in_place)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub options: Option<Map<String, Json>>,
}

/// Ends the description of every mount the engine enables or tunes.
pub(crate) const MARKER: &str = " [managed by engine]";

/// The description as sent to OpenBao: the spec's, then the engine's marker.
fn marked(description: &str) -> String {
    format!("{description}{MARKER}")
}

/// The description without the engine's marker.
fn unmarked(description: &str) -> String {
    description.strip_suffix(MARKER).unwrap_or(description).to_string()
}

/// Whether a mount-table entry carries the engine's marker.
fn has_marker(m: &Json) -> bool {
    m.get("description").and_then(Json::as_str).is_some_and(|d| d.ends_with(MARKER))
}

/// The secrets engines (`AUTH = false`) or the auth methods (`AUTH = true`).
pub(crate) struct MountKind<const AUTH: bool>(pub Arc<Shared>);

impl<const AUTH: bool> MountKind<AUTH> {
    const LIST: &'static str = if AUTH { "sys/auth" } else { "sys/mounts" };

    fn op(verb: &str) -> String {
        format!("{verb}{}", if AUTH { "AuthMethod" } else { "SecretsEngine" })
    }

    fn enable_path(path: &str) -> String {
        format!("{}/{path}", Self::LIST)
    }

    fn tune_path(path: &str) -> String {
        if AUTH {
            format!("sys/mounts/auth/{path}/tune")
        } else {
            format!("sys/mounts/{path}/tune")
        }
    }

    /// A mount-table entry as a live resource.
    fn live(path: &str, m: &Json) -> Live<Mount> {
        let options = match m.get("options") {
            Some(Json::Object(o)) => o.clone(),
            _ => Map::new(),
        };
        let mount = Mount {
            path: path.to_string(),
            kind: text(m.get("type")),
            description: unmarked(&text(m.get("description"))),
            default_lease_ttl: Some(int(m.pointer("/config/default_lease_ttl"))),
            max_lease_ttl: Some(int(m.pointer("/config/max_lease_ttl"))),
            accessor: m.get("accessor").and_then(Json::as_str).map(String::from),
            options: (!AUTH).then_some(options),
        };
        Live::new(path, mount)
    }

    /// Every entry of the mount table, keyed by path without the trailing slash; one call per
    /// run, shared by all resources of the kind (and by `openbao_contents`).
    async fn table(&self, ctx: &Context) -> KindResult<Arc<BTreeMap<String, Json>>> {
        let op = Self::op("List");
        let Some(client) = self.0.reader(&op).await? else {
            return Ok(Arc::new(BTreeMap::new()));
        };
        mount_table(&self.0, ctx, &client, &op, Self::LIST).await
    }

    /// One mount read directly (not through the batched table, which concurrent writes may
    /// have made stale); `None` when there is none at `path`.
    async fn read_single(&self, path: &str) -> KindResult<Option<Live<Mount>>> {
        Ok(self.read_entry(path).await?.map(|m| Self::live(path, &m)))
    }

    /// The mount-table entry at `path`, as OpenBao answers it.
    async fn read_entry(&self, path: &str) -> KindResult<Option<Json>> {
        let op = Self::op("Get");
        let client = self.0.client(&op).await?;
        match client.read_data(&op, &Self::enable_path(path)).await {
            Ok(d) => Ok(d),
            // "No secret engine mount at ...": OpenBao answers 400, not 404.
            Err(e) if e.status() == Some(400) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// The mount after a write; the batched table is forgotten so later reads see the write.
    async fn read_one(&self, ctx: &Context, path: &str) -> KindResult<Live<Mount>> {
        let client = self.0.client("ReadMount").await?;
        forget(ctx, &client, Self::LIST);
        let found = self.read_single(path).await?;
        found.ok_or_else(|| KindError::retryable(format!("mount `{path}` not found after writing")))
    }

    /// Tunes the fields marked in `changes` to `desired`; no call when there is nothing to tune.
    async fn tune(&self, path: &str, desired: &Mount, changes: &MountChanges) -> KindResult<()> {
        let body = tune_body(desired, changes);
        if body.is_empty() {
            return Ok(());
        }
        let op = Self::op("Tune");
        let client = self.0.client(&op).await?;
        let _lock = self.0.mount_lock.lock().await;
        client.write(&op, &Self::tune_path(path), &Json::Object(body)).await?;
        Ok(())
    }
}

fn ttl(seconds: i64) -> Json {
    Json::from(format!("{seconds}s"))
}

/// The tune call's body: the changed fields the spec sets.
fn tune_body(desired: &Mount, changes: &MountChanges) -> Map<String, Json> {
    let mut body = Map::new();
    if changes.description {
        body.insert("description".into(), json!(marked(&desired.description)));
    }
    let ttls = [
        ("default_lease_ttl", changes.default_lease_ttl, desired.default_lease_ttl),
        ("max_lease_ttl", changes.max_lease_ttl, desired.max_lease_ttl),
    ];
    for (name, changed, seconds) in ttls {
        if let (true, Some(s)) = (changed, seconds) {
            body.insert(name.into(), ttl(s));
        }
    }
    if let (true, Some(options)) = (changes.options, &desired.options) {
        body.insert("options".into(), Json::Object(options.clone()));
    }
    body
}

/// Every tunable field marked changed: an adopted mount is tuned to whatever the spec sets.
fn all_set() -> MountChanges {
    let mut changes = MountChanges::default();
    for name in ["description", "default_lease_ttl", "max_lease_ttl", "options"] {
        changes.mark(name);
    }
    changes
}

impl<const AUTH: bool> TypedKind for MountKind<AUTH> {
    type Attrs = Mount;
    const NAME: &'static str = if AUTH { "openbao_auth" } else { "openbao_mount" };

    async fn read(&self, ctx: &Context, requests: &Requests<Self>) -> Found<Self> {
        if requests.is_empty() {
            return Ok(vec![]);
        }
        let table = self.table(ctx).await?;
        Ok(requests
            .iter()
            .map(|r| match (&r.id, &r.desired) {
                (Some(path), _) => table.get(path).map(|m| Self::live(path, m)),
                // Not recorded: ours only when it carries the marker.
                (None, Some(d)) => {
                    table.get(&d.path).filter(|m| has_marker(m)).map(|m| Self::live(&d.path, m))
                }
                (None, None) => None,
            })
            .collect())
    }

    async fn create(&self, ctx: &Context, desired: &Self::Attrs) -> Outcome<Self> {
        let path = path("path", &desired.path)?;
        let op = Self::op("Enable");
        let client = self.0.client(&op).await?;
        let mut body = json!({ "type": desired.kind, "description": marked(&desired.description) });
        let mut config = Map::new();
        for (name, seconds) in [
            ("default_lease_ttl", desired.default_lease_ttl),
            ("max_lease_ttl", desired.max_lease_ttl),
        ] {
            if let Some(s) = seconds {
                config.insert(name.into(), ttl(s));
            }
        }
        if !config.is_empty() {
            body["config"] = Json::Object(config);
        }
        if let Some(options) = &desired.options {
            body["options"] = Json::Object(options.clone());
        }
        let enabled = {
            let _lock = self.0.mount_lock.lock().await;
            client.write(&op, &Self::enable_path(path), &body).await
        };
        match enabled {
            Ok(_) => {}
            // Already there: adopt it when the engine made it and it is of the desired type,
            // and tune it to the spec.
            Err(e) if e.status() == Some(400) => match self.read_entry(path).await? {
                Some(m) if has_marker(&m) && text(m.get("type")) == desired.kind => {
                    tracing::info!(path, "adopting the existing mount");
                    self.tune(path, desired, &all_set()).await?;
                }
                Some(m) if !has_marker(&m) => {
                    return Err(KindError::new(format!(
                        "{}: a {} mount already exists at `{path}` and was not made by the \
                         engine (its description lacks `{}`); remove it or import it",
                        Self::op("Enable"),
                        text(m.get("type")),
                        MARKER.trim()
                    )));
                }
                _ => return Err(e.into()),
            },
            Err(e) => return Err(e.into()),
        }
        self.read_one(ctx, path).await
    }

    async fn update(&self, ctx: &Context, update: Update<'_, Self>) -> Outcome<Self> {
        let Update { current, desired, changes } = update;
        let path = path("path", &current.attributes.path)?;
        self.tune(path, desired, changes).await?;
        self.read_one(ctx, path).await
    }

    async fn delete(&self, ctx: &Context, current: &LiveOf<Self>) -> KindResult<()> {
        let path = path("path", &current.attributes.path)?;
        let op = Self::op("Disable");
        let client = self.0.client(&op).await?;
        {
            let _lock = self.0.mount_lock.lock().await;
            client.delete(&op, &Self::enable_path(path)).await?;
        }
        forget(ctx, &client, Self::LIST);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn live_mounts_have_a_stable_shape() {
        let m = json!({
            "type": "pki", "description": "", "accessor": "pki_1", "options": null,
            "config": {"default_lease_ttl": 0, "max_lease_ttl": 315360000}
        });
        let l = MountKind::<false>::live("pki_private_issuer", &m);
        assert_eq!(l.id, "pki_private_issuer");
        let attrs = engine::encode("openbao_mount", &l.attributes).unwrap();
        assert_eq!(attrs["options"], json!({}));
        assert_eq!(attrs["max_lease_ttl"], json!(315360000));
        assert_eq!(attrs["type"], json!("pki"));
        let a = MountKind::<true>::live("userpass", &m);
        let attrs = engine::encode("openbao_auth", &a.attributes).unwrap();
        assert!(!attrs.contains_key("options"));
    }

    #[test]
    fn tune_sends_only_what_changed() {
        let current: Mount = serde_json::from_value(json!({
            "path": "pki", "type": "pki", "description": "a", "max_lease_ttl": 10, "options": {}
        }))
        .unwrap();
        let desired: Mount = serde_json::from_value(json!({
            "path": "pki", "type": "pki", "description": "a", "max_lease_ttl": 20
        }))
        .unwrap();
        let changed = engine::testing::changed_fields(&current, &desired);
        let mut changes = MountChanges::default();
        for (name, _) in changed {
            changes.mark(name);
        }
        assert_eq!(Json::Object(tune_body(&desired, &changes)), json!({"max_lease_ttl": "20s"}));
        let adopted = Json::Object(tune_body(&desired, &all_set()));
        assert_eq!(
            adopted,
            json!({"description": "a [managed by engine]", "max_lease_ttl": "20s"})
        );
    }

    #[test]
    fn the_marker_is_sent_and_not_shown() {
        let m = json!({"type": "kv", "description": "platform secrets [managed by engine]"});
        assert!(has_marker(&m));
        let l = MountKind::<false>::live("platform", &m);
        assert_eq!(l.attributes.description, "platform secrets");
        assert!(!has_marker(&json!({"type": "kv", "description": "platform secrets"})));
    }
}
