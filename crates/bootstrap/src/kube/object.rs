//! `k8s_object`: one Kubernetes object, server-side applied under the engine's field manager.
//!
//! Attributes: `cluster`, the identity (`api_version`, `object_kind`, `namespace`, `name`;
//! changing one replaces the object), `manifest` (the object; read back as the live object
//! projected onto the fields it sets, compared as the server holds it), and `secret_data`
//! (Secret keys filled at apply time from the secret store: `{ key = "store name" }`; the values
//! never reach attributes or state). Settings: `cluster_endpoint` and `cluster_ca` (a cluster
//! the spec makes), `force_conflicts` (take fields over from other managers, as the platform's
//! DaemonSet patches need) and `patch` (an object the engine does not own: destroy gives its
//! fields back instead of deleting it).

use super::cluster::{applied_by_engine, not_ours, with_managed_by_label};
use super::object_id::ObjectId;
use super::project::{normalize, project};
use super::readiness;
use super::shared::Shared;
use base64::Engine as _;
use engine::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::{Value as Json, json};
use std::collections::BTreeMap;
use std::sync::Arc;

#[derive(Attributes, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct KubeObject {
    #[attr(replace)]
    pub cluster: String,
    #[attr(replace)]
    #[serde(default)]
    pub api_version: String,
    #[attr(replace)]
    #[serde(default)]
    pub object_kind: String,
    #[attr(replace)]
    #[serde(default)]
    pub namespace: String,
    #[attr(replace)]
    #[serde(default)]
    pub name: String,
    /// As read: the live object projected onto the fields the manifest sets.
    #[attr(in_place, normalize = manifest)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manifest: Option<Json>,
    /// As read: the keys present in the object, each with its store name.
    #[attr(in_place)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_data: Option<BTreeMap<String, String>>,
    /// The API server of a cluster the same spec makes.
    #[attr(setting)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_endpoint: Option<String>,
    #[attr(setting)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_ca: Option<String>,
    #[attr(setting)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub force_conflicts: Option<bool>,
    /// Fields of an object the engine does not own: destroying gives them back.
    #[attr(setting)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patch: Option<bool>,
}

pub(crate) struct KubeObjectKind(pub Arc<Shared>);

/// A manifest as the server holds it ([`normalize`]), as a field normaliser.
fn manifest(value: &Json) -> Json {
    normalize(value)
}

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

impl KubeObject {
    fn id(&self) -> ObjectId {
        ObjectId {
            api_version: self.api_version.clone(),
            kind: self.object_kind.clone(),
            namespace: self.namespace.clone(),
            name: self.name.clone(),
        }
    }

    /// The object `id` of `cluster`, and nothing else.
    fn identity(cluster: &str, id: &ObjectId) -> KubeObject {
        KubeObject {
            cluster: cluster.to_string(),
            api_version: id.api_version.clone(),
            object_kind: id.kind.clone(),
            namespace: id.namespace.clone(),
            name: id.name.clone(),
            manifest: None,
            secret_data: None,
            cluster_endpoint: None,
            cluster_ca: None,
            force_conflicts: None,
            patch: None,
        }
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

impl KubeObjectKind {
    async fn read_one(&self, r: &ReadRequest<KubeObject>) -> KindResult<Option<Live<KubeObject>>> {
        let wanted = match (&r.desired, &r.id) {
            (Some(d), _) => d.clone(),
            (None, Some(sid)) => {
                let (cluster, id, patch) = parse_state_id(sid)
                    .ok_or_else(|| KindError::new(format!("bad object id `{sid}` in state")))?;
                KubeObject { patch: Some(patch), ..KubeObject::identity(&cluster, &id) }
            }
            (None, None) => return Ok(None),
        };
        if r.desired.is_some()
            && wanted.cluster_endpoint.is_none()
            && self.0.connector.needs_outputs()
        {
            // The spec's cluster is still to be made: nothing is in it yet.
            return Ok(None);
        }
        let target = self.0.target(
            &wanted.cluster,
            wanted.cluster_endpoint.as_deref(),
            wanted.cluster_ca.as_deref(),
        );
        let cluster = self.0.cluster(&target).await?;
        let Some(obj) = cluster.get(&wanted.id()).await? else {
            return Ok(None);
        };
        // Not recorded in state: ours only when the engine applied it (patches excepted: they
        // are of objects the engine does not own).
        let patch = wanted.patch.unwrap_or(false);
        if r.id.is_none() && !patch && !applied_by_engine(&obj) {
            return Ok(None);
        }
        Ok(Some(live(&wanted, &obj)))
    }

    /// Applies the object; `repair` (an update of an object applied before) takes back fields
    /// another manager changed instead of failing on the conflict.
    async fn apply(
        &self,
        ctx: &Context,
        desired: &KubeObject,
        repair: bool,
    ) -> KindResult<Live<KubeObject>> {
        let id = desired.id();
        let target = self.0.target(
            &desired.cluster,
            desired.cluster_endpoint.as_deref(),
            desired.cluster_ca.as_deref(),
        );
        let cluster = self.0.cluster(&target).await?;
        let manifest = desired.manifest.as_ref();
        let manifest = manifest.ok_or_else(|| KindError::new(format!("{id}: no manifest")))?;
        // What the engine owns carries its label; a patch of someone else's object does not.
        let mut want = if desired.patch.unwrap_or(false) {
            normalize(manifest)
        } else {
            with_managed_by_label(normalize(manifest))
        };
        for (key, store_name) in desired.secret_data.iter().flatten() {
            let value = self.0.secrets.get(store_name).await;
            let value =
                value.map_err(|e| KindError::new(format!("{id}: secret store: {e}")))?.ok_or_else(
                    || KindError::new(format!("{id}: `{store_name}` is not in the secret store")),
                )?;
            let encoded = base64::engine::general_purpose::STANDARD.encode(value.expose());
            want["data"][key] = Json::String(encoded);
        }
        if !repair
            && !desired.patch.unwrap_or(false)
            && let Some(existing) = cluster.get(&id).await?
            && !applied_by_engine(&existing)
        {
            return Err(not_ours(&id, &existing));
        }
        let force = desired.force_conflicts.unwrap_or(false);
        let stored = match cluster.apply(&want, force).await {
            Err(e) if repair && e.code.as_deref() == Some("Conflict") => {
                tracing::info!(object = %id, "taking back fields changed by another manager");
                cluster.apply(&want, true).await?
            }
            other => other?,
        };
        if id.kind == "CustomResourceDefinition" {
            cluster.forget_types().await;
            let (timeout, interval) = (self.0.wait_timeout, self.0.poll_interval);
            readiness::wait_for(ctx, &cluster, std::slice::from_ref(&id), timeout, interval)
                .await?;
        }
        Ok(live(desired, &stored))
    }
}

/// The object as read, seen through what `desired` sets.
fn live(desired: &KubeObject, obj: &Json) -> Live<KubeObject> {
    let id = desired.id();
    let manifest = desired.manifest.as_ref().map(|manifest| {
        let want = normalize(manifest);
        let seen = project(&want, obj);
        // The plan shows the live value of the fields the engine sets; for Secrets only
        // whether they match.
        match (id.kind == "Secret", seen != want) {
            (true, true) => redact_secret(manifest, true),
            (true, false) => want,
            (false, _) => strip_status(seen),
        }
    });
    // Whether each store-filled key is present; its value is checked at apply.
    let secret_data = desired.secret_data.as_ref().map(|keys| {
        keys.iter()
            .filter(|(k, _)| obj.pointer(&format!("/data/{k}")).is_some())
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    });
    let patch = desired.patch.unwrap_or(false);
    let object =
        KubeObject { manifest, secret_data, ..KubeObject::identity(&desired.cluster, &id) };
    Live::new(state_id(&desired.cluster, &id, patch), object)
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

impl TypedKind for KubeObjectKind {
    type Attrs = KubeObject;
    const NAME: &'static str = "k8s_object";

    async fn read(&self, _: &Context, requests: &Requests<Self>) -> Found<Self> {
        futures::future::try_join_all(requests.iter().map(|r| engine::bounded(self.read_one(r))))
            .await
    }

    async fn create(&self, ctx: &Context, desired: &Self::Attrs) -> Outcome<Self> {
        self.apply(ctx, desired, false).await
    }

    async fn update(&self, ctx: &Context, update: Update<'_, Self>) -> Outcome<Self> {
        let Update { desired, .. } = update;
        self.apply(ctx, desired, true).await
    }

    async fn delete(&self, ctx: &Context, current: &LiveOf<Self>) -> KindResult<()> {
        let (cluster_name, id, patch) = parse_state_id(&current.id)
            .ok_or_else(|| KindError::new(format!("bad object id `{}`", current.id)))?;
        let target = self.0.target(&cluster_name, None, None);
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
            let (timeout, interval) = (self.0.wait_timeout, self.0.poll_interval);
            readiness::wait_gone(ctx, &cluster, std::slice::from_ref(&id), timeout, interval)
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
