//! A set of objects applied, checked and pruned together: what a Helm release or a manifest
//! bundle (the Gateway API CRDs) is made of.
//!
//! The set's record lives in the cluster, next to the objects, as a Secret holding the applied
//! manifests (gzip + JSON, as Helm keeps its releases): the engine's state keeps only the
//! objects' identities, so no rendered Secret ever reaches the state file. The record is
//! written *before* the objects (listing old and new ones) and again after, so an interrupted
//! apply never leaves an object that a later destroy or prune cannot find.

use super::cluster::{Cluster, applied_by_engine, not_ours};
use super::object_id::ObjectId;
use super::project::{differences, normalize, project};
use super::readiness;
use base64::Engine as _;
use engine::{Context, KindError};
use flate2::Compression;
use flate2::read::GzDecoder;
use flate2::write::GzEncoder;
use serde::{Deserialize, Serialize};
use serde_json::{Value as Json, json};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::{Read, Write};
use std::time::Duration;

/// The record of an applied set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// Chart reference or manifest source.
    pub source: String,
    pub version: String,
    /// Values the chart was rendered with (`null` for manifests).
    pub values: Json,
    /// Digest of the chart archive or of the manifest text.
    pub digest: String,
    /// Applied objects, in apply order.
    pub objects: Vec<RecordedObject>,
    /// Set while an apply is under way (objects may be partly applied).
    #[serde(default)]
    pub pending: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordedObject {
    pub id: ObjectId,
    pub manifest: Json,
}

impl Record {
    pub fn ids(&self) -> Vec<ObjectId> {
        self.objects.iter().map(|o| o.id.clone()).collect()
    }
}

/// Where a set's record is kept.
#[derive(Debug, Clone)]
pub struct RecordRef {
    pub namespace: String,
    /// `release` or `manifests`.
    pub set_kind: &'static str,
    pub name: String,
}

impl RecordRef {
    fn id(&self) -> ObjectId {
        ObjectId {
            api_version: "v1".into(),
            kind: "Secret".into(),
            namespace: self.namespace.clone(),
            name: format!("engine.{}.{}", self.set_kind, self.name),
        }
    }
}

const RECORD_KEY: &str = "record";
const RECORD_TYPE: &str = "engine/object-set.v1";

pub async fn read_record(cluster: &Cluster, at: &RecordRef) -> Result<Option<Record>, KindError> {
    let Some(secret) = cluster.get(&at.id()).await? else {
        return Ok(None);
    };
    let encoded = secret
        .pointer(&format!("/data/{RECORD_KEY}"))
        .and_then(Json::as_str)
        .ok_or_else(|| KindError::new(format!("{}: no record in it", at.id())))?;
    let bad = |e: String| KindError::new(format!("{}: unreadable record: {e}", at.id()));
    let gz = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .map_err(|e| bad(e.to_string()))?;
    let mut text = String::new();
    GzDecoder::new(&gz[..]).read_to_string(&mut text).map_err(|e| bad(e.to_string()))?;
    serde_json::from_str(&text).map(Some).map_err(|e| bad(e.to_string()))
}

async fn write_record(cluster: &Cluster, at: &RecordRef, record: &Record) -> Result<(), KindError> {
    let text = serde_json::to_vec(record).map_err(|e| KindError::new(e.to_string()))?;
    let mut gz = GzEncoder::new(Vec::new(), Compression::default());
    let bytes = gz
        .write_all(&text)
        .and_then(|_| gz.finish())
        .map_err(|e| KindError::new(format!("record: {e}")))?;
    let id = at.id();
    let secret = json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "type": RECORD_TYPE,
        "metadata": {
            "name": id.name,
            "namespace": id.namespace,
            "labels": {"engine/set": at.name, "engine/set-kind": at.set_kind},
        },
        "data": {RECORD_KEY: base64::engine::general_purpose::STANDARD.encode(bytes)},
    });
    cluster.apply(&secret, true).await.map(|_| ())
}

/// Objects of a set with namespaces decided: a namespaced object without one gets
/// `default_namespace`, a cluster-scoped object loses any. An object of a kind that neither the
/// cluster nor a CRD of the same set serves is an error naming it; nothing is applied then.
pub async fn prepare(
    cluster: &Cluster,
    manifests: Vec<Json>,
    default_namespace: &str,
) -> Result<Vec<RecordedObject>, KindError> {
    // Scopes declared by CRDs of the set: their kinds are not served until applied.
    let mut declared: HashMap<(String, String), bool> = HashMap::new();
    for m in &manifests {
        if m.get("kind").and_then(Json::as_str) == Some("CustomResourceDefinition") {
            let group = m.pointer("/spec/group").and_then(Json::as_str).unwrap_or("");
            let kind = m.pointer("/spec/names/kind").and_then(Json::as_str).unwrap_or("");
            let namespaced = m.pointer("/spec/scope").and_then(Json::as_str) == Some("Namespaced");
            for v in m.pointer("/spec/versions").and_then(Json::as_array).into_iter().flatten() {
                let version = v.get("name").and_then(Json::as_str).unwrap_or("");
                declared.insert((format!("{group}/{version}"), kind.to_string()), namespaced);
            }
        }
    }
    let mut out = Vec::new();
    let mut seen = BTreeSet::new();
    for m in manifests {
        let Some(id) = ObjectId::of(&m) else {
            let snippet: String = m.to_string().chars().take(120).collect();
            return Err(KindError::new(format!(
                "an object without apiVersion, kind or metadata.name: {snippet}"
            )));
        };
        let key = (id.api_version.clone(), id.kind.clone());
        let namespaced = match declared.get(&key) {
            Some(n) => *n,
            None => match cluster.resource_type(&id.api_version, &id.kind).await {
                Ok(t) => t.namespaced,
                Err(e) => return Err(KindError::new(format!("{id}: {}", e.message))),
            },
        };
        let mut m = normalize(&m);
        let namespace = if namespaced {
            if id.namespace.is_empty() {
                m["metadata"]["namespace"] = json!(default_namespace);
                default_namespace.to_string()
            } else {
                id.namespace.clone()
            }
        } else {
            if let Some(meta) = m.get_mut("metadata").and_then(Json::as_object_mut) {
                meta.remove("namespace");
            }
            String::new()
        };
        let id = ObjectId { namespace, ..id };
        if !seen.insert(id.clone()) {
            return Err(KindError::new(format!("{id} appears twice")));
        }
        out.push(RecordedObject { id, manifest: m });
    }
    // CRDs first, then namespaces, then the rest in the order given (Helm's install order).
    out.sort_by_key(|o| match o.id.kind.as_str() {
        "CustomResourceDefinition" => 0,
        "Namespace" => 1,
        _ => 2,
    });
    Ok(out)
}

/// How to apply a set.
pub struct ApplyOptions {
    pub force_conflicts: bool,
    /// Wait for readiness of workloads and custom resources (CRDs are always waited for).
    pub wait: bool,
    pub timeout: Duration,
    pub poll_interval: Duration,
}

/// Applies `new`, prunes what `old` had and `new` has not, and records `new`.
pub async fn apply(
    ctx: &Context,
    cluster: &Cluster,
    at: &RecordRef,
    new: Record,
    old: Option<&Record>,
    options: &ApplyOptions,
) -> Result<Record, KindError> {
    let new_ids: BTreeSet<ObjectId> = new.ids().into_iter().collect();
    let applied_before: BTreeSet<ObjectId> =
        old.map(|o| o.ids().into_iter().collect()).unwrap_or_default();
    let stale: Vec<RecordedObject> = old
        .map(|o| o.objects.iter().filter(|x| !new_ids.contains(&x.id)).cloned().collect())
        .unwrap_or_default();
    // An object new to the set that exists already is taken over only when the engine
    // applied it (a run that died before writing the record); checked before anything changes.
    for o in new.objects.iter().filter(|o| !applied_before.contains(&o.id)) {
        if let Some(existing) = cluster.get(&o.id).await?
            && !applied_by_engine(&existing)
        {
            return Err(not_ours(&o.id, &existing));
        }
    }
    let mut pending = new.clone();
    pending.pending = true;
    pending.objects.extend(stale.iter().cloned());
    write_record(cluster, at, &pending).await?;

    let total = new.objects.len();
    let crds: Vec<ObjectId> = new
        .objects
        .iter()
        .filter(|o| o.id.kind == "CustomResourceDefinition")
        .map(|o| o.id.clone())
        .collect();
    for (i, o) in new.objects.iter().enumerate() {
        if i == crds.len() && !crds.is_empty() {
            readiness::wait_for(ctx, cluster, &crds, options.timeout, options.poll_interval)
                .await?;
            cluster.forget_types().await;
        }
        ctx.waiting(format!("applying {}/{total}: {}", i + 1, o.id));
        apply_object(cluster, o, options.force_conflicts, applied_before.contains(&o.id)).await?;
    }
    if crds.len() == total && !crds.is_empty() {
        readiness::wait_for(ctx, cluster, &crds, options.timeout, options.poll_interval).await?;
        cluster.forget_types().await;
    }
    delete_objects(ctx, cluster, &stale).await?;
    write_record(cluster, at, &new).await?;
    if options.wait {
        readiness::wait_for(ctx, cluster, &new.ids(), options.timeout, options.poll_interval)
            .await?;
    }
    Ok(new)
}

/// Applies one object. A conflict on an object this set applied before means another manager
/// changed fields the engine set (drift): the engine takes them back. A conflict on an object
/// new to the set is an error naming the fields, unless the spec forces conflicts.
async fn apply_object(
    cluster: &Cluster,
    o: &RecordedObject,
    force: bool,
    applied_before: bool,
) -> Result<(), KindError> {
    match cluster.apply(&o.manifest, force).await {
        Err(e) if applied_before && !force && e.code.as_deref() == Some("Conflict") => {
            tracing::info!(object = %o.id, "taking back fields changed by another manager");
            cluster.apply(&o.manifest, true).await.map(|_| ())
        }
        other => other.map(|_| ()),
    }
}

/// Deletes objects in reverse apply order (custom resources before their CRDs, namespaces last).
pub async fn delete_objects(
    ctx: &Context,
    cluster: &Cluster,
    objects: &[RecordedObject],
) -> Result<(), KindError> {
    for o in objects.iter().rev() {
        ctx.waiting(format!("deleting {}", o.id));
        cluster.delete(&o.id).await?;
    }
    Ok(())
}

/// Deletes a whole set, waits until its objects are gone (finalizers run: namespaces empty,
/// CRDs drop their custom resources), then deletes its record.
pub async fn delete(
    ctx: &Context,
    cluster: &Cluster,
    at: &RecordRef,
    timeout: Duration,
    poll_interval: Duration,
) -> Result<(), KindError> {
    if let Some(record) = read_record(cluster, at).await? {
        delete_objects(ctx, cluster, &record.objects).await?;
        readiness::wait_gone(ctx, cluster, &record.ids(), timeout, poll_interval).await?;
    }
    cluster.delete(&at.id()).await?;
    Ok(())
}

/// What differs between the record and the cluster: objects missing or changed by someone
/// else, field by field. Reads each type once per namespace.
pub async fn check(cluster: &Cluster, record: &Record) -> Result<Vec<String>, KindError> {
    let mut groups: BTreeMap<(String, String, String), Vec<&RecordedObject>> = BTreeMap::new();
    for o in &record.objects {
        groups
            .entry((o.id.api_version.clone(), o.id.kind.clone(), o.id.namespace.clone()))
            .or_default()
            .push(o);
    }
    let mut out = Vec::new();
    if record.pending {
        out.push("the last apply did not finish".to_string());
    }
    for ((api_version, kind, namespace), objects) in groups {
        let live: HashMap<String, Json> = if objects.len() == 1 {
            cluster
                .get(&objects[0].id)
                .await?
                .map(|o| (objects[0].id.name.clone(), o))
                .into_iter()
                .collect()
        } else {
            cluster
                .list(&api_version, &kind, &namespace)
                .await?
                .into_iter()
                .filter_map(|o| {
                    let name = o.pointer("/metadata/name")?.as_str()?.to_string();
                    Some((name, o))
                })
                .collect()
        };
        for o in objects {
            match live.get(&o.id.name) {
                None => out.push(format!("{}: missing", o.id)),
                Some(l) => out.extend(differences(&o.id, &o.manifest, &project(&o.manifest, l))),
            }
        }
    }
    Ok(out)
}

/// A sha256 digest of text.
pub fn digest(text: &[u8]) -> String {
    engine_helm::oci::sha256_digest(text)
}
