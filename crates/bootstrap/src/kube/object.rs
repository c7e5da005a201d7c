//! `k8s_object`: one Kubernetes object, server-side applied under the engine's field manager.
//!
//! Attributes: `cluster` (+ `cluster_endpoint`, `cluster_ca`), the identity (`api_version`,
//! `object_kind`, `namespace`, `name`; changing one replaces the object), `manifest` (the object;
//! compared on the fields it sets), `force_conflicts` (take fields over from other managers, as
//! the platform's DaemonSet patches need), and `secret_data` (Secret keys filled at apply time
//! from the secret store: `{ key = "store name" }`; the values never reach attributes or state).

use super::object_id::ObjectId;
use super::project::{normalize, project};
use super::readiness;
use super::shared::Shared;
use async_trait::async_trait;
use base64::Engine as _;
use engine::{Address, Attrs, Context, Field, Kind, KindError, Live, ReadRequest};
use serde_json::{Value as Json, json};
use std::sync::Arc;

pub(crate) struct KubeObject(pub Arc<Shared>);

const FIELDS: &[Field] = &[
    Field::replace("cluster"),
    Field::replace("api_version"),
    Field::replace("object_kind"),
    Field::replace("namespace"),
    Field::replace("name"),
    Field::in_place("manifest"),
    Field::in_place("secret_data"),
];

/// The identity attributes of a manifest.
pub fn identity_attrs(manifest: &Json) -> Option<[(&'static str, Json); 4]> {
    let id = ObjectId::of(manifest)?;
    Some([
        ("api_version", json!(id.api_version)),
        ("object_kind", json!(id.kind)),
        ("namespace", json!(id.namespace)),
        ("name", json!(id.name)),
    ])
}

fn text(attrs: &Attrs, key: &str) -> String {
    attrs.get(key).and_then(Json::as_str).unwrap_or_default().to_string()
}

fn id_of(attrs: &Attrs) -> ObjectId {
    ObjectId {
        api_version: text(attrs, "api_version"),
        kind: text(attrs, "object_kind"),
        namespace: text(attrs, "namespace"),
        name: text(attrs, "name"),
    }
}

/// The id kept in state: `<cluster>|apiVersion|kind|namespace|name`, with `|patch` appended for
/// a patch of an object the engine does not own (destroying it gives the fields back instead of
/// deleting the object).
fn state_id(cluster: &str, id: &ObjectId, patch: bool) -> String {
    let suffix = if patch { "|patch" } else { "" };
    format!("{cluster}|{}{suffix}", id.key())
}

fn parse_state_id(s: &str) -> Option<(String, ObjectId, bool)> {
    let (s, patch) = match s.strip_suffix("|patch") {
        Some(rest) => (rest, true),
        None => (s, false),
    };
    let (cluster, key) = s.split_once('|')?;
    Some((cluster.to_string(), ObjectId::parse_key(key)?, patch))
}

fn is_patch(attrs: &Attrs) -> bool {
    attrs.get("patch").and_then(Json::as_bool).unwrap_or(false)
}

impl KubeObject {
    async fn read_one(&self, r: &ReadRequest) -> Result<Option<Live>, KindError> {
        let (attrs, cluster_name, id) = match (&r.desired, &r.id) {
            (Some(d), _) => (d.clone(), text(d, "cluster"), id_of(d)),
            (None, Some(sid)) => {
                let (c, id, patch) = parse_state_id(sid)
                    .ok_or_else(|| KindError::new(format!("bad object id `{sid}` in state")))?;
                let mut a = Attrs::new();
                a.insert("cluster".into(), json!(c));
                a.insert("patch".into(), json!(patch));
                (a, c, id)
            }
            (None, None) => return Ok(None),
        };
        let target = self.0.target(&attrs)?;
        let cluster = self.0.cluster(&target).await?;
        let Some(obj) = cluster.get(&id).await? else {
            return Ok(None);
        };
        Ok(Some(self.live(&cluster_name, &id, &attrs, &obj)))
    }

    fn live(&self, cluster: &str, id: &ObjectId, desired: &Attrs, obj: &Json) -> Live {
        let mut attributes = Attrs::new();
        attributes.insert("cluster".into(), json!(cluster));
        attributes.insert("api_version".into(), json!(id.api_version));
        attributes.insert("object_kind".into(), json!(id.kind));
        attributes.insert("namespace".into(), json!(id.namespace));
        attributes.insert("name".into(), json!(id.name));
        if let Some(manifest) = desired.get("manifest") {
            let want = normalize(manifest);
            let seen = project(&want, obj);
            let drifted = seen != want;
            // The plan shows the live value of the fields the engine sets; for Secrets only
            // whether they match.
            let shown = if id.kind == "Secret" {
                if drifted { redact_secret(manifest, true) } else { want }
            } else {
                strip_status(seen)
            };
            attributes.insert("manifest".into(), shown);
        }
        if let Some(keys) = desired.get("secret_data").and_then(Json::as_object) {
            // Whether each store-filled key is present; its value is checked at apply.
            let present: serde_json::Map<String, Json> = keys
                .iter()
                .filter(|(k, _)| obj.pointer(&format!("/data/{k}")).is_some())
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            attributes.insert("secret_data".into(), Json::Object(present));
        }
        Live { id: state_id(cluster, id, is_patch(desired)), attributes }
    }

    /// Applies the object; `repair` (an update of an object applied before) takes back fields
    /// another manager changed instead of failing on the conflict.
    async fn apply(&self, ctx: &Context, desired: &Attrs, repair: bool) -> Result<Live, KindError> {
        let id = id_of(desired);
        let target = self.0.target(desired)?;
        let cluster = self.0.cluster(&target).await?;
        let manifest =
            desired.get("manifest").ok_or_else(|| KindError::new(format!("{id}: no manifest")))?;
        let mut want = normalize(manifest);
        if let Some(keys) = desired.get("secret_data").and_then(Json::as_object) {
            for (key, store_name) in keys {
                let name = store_name.as_str().unwrap_or_default();
                let value = self
                    .0
                    .secrets
                    .get(name)
                    .await
                    .map_err(|e| KindError::new(format!("{id}: secret store: {e}")))?
                    .ok_or_else(|| {
                        KindError::new(format!("{id}: `{name}` is not in the secret store"))
                    })?;
                let encoded = base64::engine::general_purpose::STANDARD.encode(value.expose());
                want["data"][key] = Json::String(encoded);
            }
        }
        let force = desired.get("force_conflicts").and_then(Json::as_bool).unwrap_or(false);
        let stored = match cluster.apply(&want, force).await {
            Err(e) if repair && e.code.as_deref() == Some("Conflict") => {
                tracing::info!(object = %id, "taking back fields changed by another manager");
                cluster.apply(&want, true).await?
            }
            other => other?,
        };
        if id.kind == "CustomResourceDefinition" {
            cluster.forget_types().await;
            readiness::wait_for(
                ctx,
                &cluster,
                std::slice::from_ref(&id),
                self.0.wait_timeout,
                self.0.poll_interval,
            )
            .await?;
        }
        Ok(self.live(&target.name, &id, desired, &stored))
    }
}

fn strip_status(mut v: Json) -> Json {
    if let Some(o) = v.as_object_mut() {
        o.remove("status");
    }
    v
}

/// A Secret's manifest as the plan may show it: keys kept, values replaced.
fn redact_secret(manifest: &Json, drifted: bool) -> Json {
    let mut shown = normalize(manifest);
    if let Some(data) = shown.get_mut("data").and_then(Json::as_object_mut) {
        for v in data.values_mut() {
            *v = json!(if drifted { "(sensitive, changed)" } else { "(sensitive)" });
        }
    }
    shown
}

#[async_trait]
impl Kind for KubeObject {
    fn name(&self) -> &'static str {
        "k8s_object"
    }

    fn fields(&self) -> &'static [Field] {
        FIELDS
    }

    async fn read(
        &self,
        _ctx: &Context,
        requests: &[ReadRequest],
    ) -> Result<Vec<Option<Live>>, KindError> {
        futures::future::try_join_all(requests.iter().map(|r| self.read_one(r))).await
    }

    async fn create(
        &self,
        ctx: &Context,
        _address: &Address,
        desired: &Attrs,
    ) -> Result<Live, KindError> {
        self.apply(ctx, desired, false).await
    }

    async fn update(
        &self,
        ctx: &Context,
        _address: &Address,
        _current: &Live,
        desired: &Attrs,
    ) -> Result<Live, KindError> {
        self.apply(ctx, desired, true).await
    }

    async fn delete(
        &self,
        ctx: &Context,
        _address: &Address,
        current: &Live,
    ) -> Result<(), KindError> {
        let (cluster_name, id, patch) = parse_state_id(&current.id)
            .ok_or_else(|| KindError::new(format!("bad object id `{}`", current.id)))?;
        let mut attrs = Attrs::new();
        attrs.insert("cluster".into(), json!(cluster_name));
        let target = self.0.target(&attrs)?;
        let cluster = self.0.cluster(&target).await?;
        if patch {
            // Applying only the identity releases every field the engine's manager owns.
            if cluster.get(&id).await?.is_some() {
                let mut bare = json!({
                    "apiVersion": id.api_version, "kind": id.kind,
                    "metadata": {"name": id.name},
                });
                if !id.namespace.is_empty() {
                    bare["metadata"]["namespace"] = json!(id.namespace);
                }
                cluster.apply(&bare, true).await?;
            }
        } else if cluster.delete(&id).await? {
            readiness::wait_gone(
                ctx,
                &cluster,
                std::slice::from_ref(&id),
                self.0.wait_timeout,
                self.0.poll_interval,
            )
            .await?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_ids_carry_the_cluster_and_round_trip() {
        let id = ObjectId::parse_key("apps/v1|DaemonSet|kube-system|aws-node").unwrap();
        let sid = state_id("aws-0", &id, false);
        assert_eq!(sid, "aws-0|apps/v1|DaemonSet|kube-system|aws-node");
        assert_eq!(parse_state_id(&sid), Some(("aws-0".to_string(), id.clone(), false)));
        let patch = state_id("aws-0", &id, true);
        assert_eq!(parse_state_id(&patch), Some(("aws-0".to_string(), id, true)));
    }

    #[test]
    fn secret_manifests_are_shown_without_values() {
        let m = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
            "stringData": {"token": "hunter2"}});
        let shown = redact_secret(&m, true).to_string();
        assert!(!shown.contains("hunter2") && !shown.contains("aHVudGVy"), "{shown}");
    }
}
