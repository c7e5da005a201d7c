//! `openbao_mount` (secrets engines, `sys/mounts`) and `openbao_auth` (auth methods,
//! `sys/auth`): the same resource on two mount tables.
//!
//! Attributes: `path` and `type` (replace), `description`, `default_lease_ttl`,
//! `max_lease_ttl` (seconds; 0 = the system default) and, for secrets engines, `options`
//! (e.g. `{"version": "2"}` for kv-v2), all tuned in place; `accessor` is computed.
//!
//! Reads are batched: one `GET sys/mounts` (or `sys/auth`) answers every resource of the kind.
//! Every enable, tune and disable holds the shared mount lock.

use super::shared::{
    Shared, forget, int, live, memo_key, opt_int, opt_str, path_attr, str_attr, wanted_id,
};
use async_trait::async_trait;
use engine::{Address, Attrs, Context, Field, Kind, KindError, Live, ReadRequest};
use serde_json::{Map, Value as Json, json};
use std::collections::BTreeMap;
use std::sync::Arc;

#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Table {
    Secrets,
    Auth,
}

impl Table {
    fn list_path(self) -> &'static str {
        match self {
            Table::Secrets => "sys/mounts",
            Table::Auth => "sys/auth",
        }
    }
    fn enable_path(self, path: &str) -> String {
        format!("{}/{path}", self.list_path())
    }
    fn tune_path(self, path: &str) -> String {
        match self {
            Table::Secrets => format!("sys/mounts/{path}/tune"),
            Table::Auth => format!("sys/mounts/auth/{path}/tune"),
        }
    }
    fn op(self, verb: &str) -> String {
        match self {
            Table::Secrets => format!("{verb}SecretsEngine"),
            Table::Auth => format!("{verb}AuthMethod"),
        }
    }
}

pub(crate) struct Mount {
    pub shared: Arc<Shared>,
    pub table: Table,
}

const SECRETS_FIELDS: &[Field] = &[
    Field::replace("path"),
    Field::replace("type"),
    Field::in_place("description"),
    Field::in_place("options"),
    Field::in_place("default_lease_ttl"),
    Field::in_place("max_lease_ttl"),
    Field::computed("accessor"),
];

const AUTH_FIELDS: &[Field] = &[
    Field::replace("path"),
    Field::replace("type"),
    Field::in_place("description"),
    Field::in_place("default_lease_ttl"),
    Field::in_place("max_lease_ttl"),
    Field::computed("accessor"),
];

/// A mount-table entry as a live resource.
fn mount_live(table: Table, path: &str, m: &Json) -> Live {
    let options = match m.get("options") {
        Some(Json::Object(o)) => Json::Object(o.clone()),
        _ => Json::Object(Map::new()),
    };
    let mut attrs = vec![
        ("path", Json::from(path)),
        ("type", m.get("type").cloned().unwrap_or(Json::Null)),
        ("description", Json::from(m.get("description").and_then(Json::as_str).unwrap_or(""))),
        ("default_lease_ttl", int(m.pointer("/config/default_lease_ttl"))),
        ("max_lease_ttl", int(m.pointer("/config/max_lease_ttl"))),
        ("accessor", m.get("accessor").cloned().unwrap_or(Json::Null)),
    ];
    if table == Table::Secrets {
        attrs.push(("options", options));
    }
    live(path, attrs)
}

fn ttl(seconds: i64) -> Json {
    Json::from(format!("{seconds}s"))
}

impl Mount {
    /// Every entry of the mount table, keyed by path without the trailing slash; one call per
    /// run, shared by all resources of the kind.
    async fn table(&self, ctx: &Context) -> Result<Arc<BTreeMap<String, Json>>, KindError> {
        let op = self.table.op("List");
        let Some(client) = self.shared.reader(&op).await? else {
            return Ok(Arc::new(BTreeMap::new()));
        };
        let key = memo_key(&client, self.table.list_path());
        ctx.memo(&key, || async {
            let data = self
                .shared
                .read_data(&client, &op, self.table.list_path())
                .await?
                .unwrap_or_default();
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

    /// One mount read directly (not through the batched table, which concurrent writes may
    /// have made stale); `None` when there is none at `path`.
    async fn read_single(&self, path: &str) -> Result<Option<Live>, KindError> {
        let op = self.table.op("Get");
        let client = self.shared.client(&op).await?;
        match client.read_data(&op, &self.table.enable_path(path)).await {
            Ok(d) => Ok(d.map(|m| mount_live(self.table, path, &m))),
            // "No secret engine mount at ...": OpenBao answers 400, not 404.
            Err(e) if e.status() == Some(400) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// The mount after a write; the batched table is forgotten so later reads see the write.
    async fn read_one(&self, ctx: &Context, path: &str) -> Result<Live, KindError> {
        let client = self.shared.client("ReadMount").await?;
        forget(ctx, &client, self.table.list_path());
        self.read_single(path).await?.ok_or_else(|| {
            KindError::retryable(format!("mount `{path}` not found after writing it"))
        })
    }

    fn tune_body(&self, desired: &Attrs, current: Option<&Attrs>) -> Json {
        let mut body = Map::new();
        let changed = |name: &str| match current {
            None => desired.contains_key(name),
            Some(c) => desired.get(name).is_some_and(|d| Some(d) != c.get(name)),
        };
        if changed("description") {
            body.insert("description".into(), desired["description"].clone());
        }
        for name in ["default_lease_ttl", "max_lease_ttl"] {
            if changed(name)
                && let Some(s) = opt_int(desired, name)
            {
                body.insert(name.into(), ttl(s));
            }
        }
        if self.table == Table::Secrets && changed("options") {
            body.insert("options".into(), desired["options"].clone());
        }
        Json::Object(body)
    }
}

#[async_trait]
impl Kind for Mount {
    fn name(&self) -> &'static str {
        match self.table {
            Table::Secrets => "openbao_mount",
            Table::Auth => "openbao_auth",
        }
    }

    fn fields(&self) -> &'static [Field] {
        match self.table {
            Table::Secrets => SECRETS_FIELDS,
            Table::Auth => AUTH_FIELDS,
        }
    }

    async fn read(
        &self,
        ctx: &Context,
        requests: &[ReadRequest],
    ) -> Result<Vec<Option<Live>>, KindError> {
        if requests.is_empty() {
            return Ok(vec![]);
        }
        let table = self.table(ctx).await?;
        Ok(requests
            .iter()
            .map(|r| {
                let path = wanted_id(r, |d| opt_str(d, "path").map(String::from))?;
                table.get(&path).map(|m| mount_live(self.table, &path, m))
            })
            .collect())
    }

    async fn create(
        &self,
        ctx: &Context,
        address: &Address,
        desired: &Attrs,
    ) -> Result<Live, KindError> {
        let path = path_attr(desired, "path")?;
        let kind = str_attr(desired, "type")?;
        let op = self.table.op("Enable");
        let client = self.shared.client(&op).await?;
        let mut body = json!({ "type": kind });
        if let Some(d) = opt_str(desired, "description") {
            body["description"] = Json::from(d);
        }
        let mut config = Map::new();
        for name in ["default_lease_ttl", "max_lease_ttl"] {
            if let Some(s) = opt_int(desired, name) {
                config.insert(name.into(), ttl(s));
            }
        }
        if !config.is_empty() {
            body["config"] = Json::Object(config);
        }
        if self.table == Table::Secrets
            && let Some(o) = desired.get("options")
        {
            body["options"] = o.clone();
        }
        let enabled = {
            let _lock = self.shared.mount_lock.lock().await;
            client.write(&op, &self.table.enable_path(path), &body).await
        };
        if let Err(e) = enabled {
            // Already there (a restored snapshot, a run that died before writing state): adopt
            // it when it is of the desired type, and tune it to the spec.
            if e.status() != Some(400) {
                return Err(e.into());
            }
            let existing = self.read_single(path).await?;
            return match existing {
                Some(current) if current.attributes.get("type") == desired.get("type") => {
                    tracing::info!(path, "adopting the existing mount");
                    self.update(ctx, address, &current, desired).await
                }
                _ => Err(e.into()),
            };
        }
        self.read_one(ctx, path).await
    }

    async fn update(
        &self,
        ctx: &Context,
        _address: &Address,
        current: &Live,
        desired: &Attrs,
    ) -> Result<Live, KindError> {
        let path = path_attr(&current.attributes, "path")?;
        let body = self.tune_body(desired, Some(&current.attributes));
        if body.as_object().is_some_and(|b| !b.is_empty()) {
            let op = self.table.op("Tune");
            let client = self.shared.client(&op).await?;
            let _lock = self.shared.mount_lock.lock().await;
            client.write(&op, &self.table.tune_path(path), &body).await?;
        }
        self.read_one(ctx, path).await
    }

    async fn delete(
        &self,
        ctx: &Context,
        _address: &Address,
        current: &Live,
    ) -> Result<(), KindError> {
        let path = path_attr(&current.attributes, "path")?;
        let op = self.table.op("Disable");
        let client = self.shared.client(&op).await?;
        {
            let _lock = self.shared.mount_lock.lock().await;
            client.delete(&op, &self.table.enable_path(path)).await?;
        }
        forget(ctx, &client, self.table.list_path());
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
        let l = mount_live(Table::Secrets, "pki_private_issuer", &m);
        assert_eq!(l.id, "pki_private_issuer");
        assert_eq!(l.attributes["options"], json!({}));
        assert_eq!(l.attributes["max_lease_ttl"], json!(315360000));
        let a = mount_live(Table::Auth, "userpass", &m);
        assert!(!a.attributes.contains_key("options"));
    }

    #[test]
    fn tune_sends_only_what_changed() {
        let shared = Arc::new(Shared::new(
            Arc::new(super::super::StaticConnector(super::super::BaoConnection {
                address: "http://127.0.0.1:1".into(),
                ca_bundle: None,
                token: None,
            })),
            Arc::new(super::super::NoSecrets),
            Arc::new(super::super::NoSecrets),
            Arc::new(super::super::NoSnapshots),
            std::time::Duration::from_secs(1),
        ));
        let m = Mount { shared, table: Table::Secrets };
        let current: Attrs = serde_json::from_value(json!({
            "path": "pki", "type": "pki", "description": "a", "max_lease_ttl": 10, "options": {}
        }))
        .unwrap();
        let desired: Attrs = serde_json::from_value(json!({
            "path": "pki", "type": "pki", "description": "a", "max_lease_ttl": 20
        }))
        .unwrap();
        assert_eq!(m.tune_body(&desired, Some(&current)), json!({"max_lease_ttl": "20s"}));
    }
}
