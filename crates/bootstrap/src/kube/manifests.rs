//! `k8s_manifests`: a YAML stream of objects (the Gateway API CRDs release file) fetched from a
//! URL or read from a file, applied with server-side apply (conflicts forced when asked), CRDs
//! waited for until `Established`, pruned and checked like a Helm release.
//!
//! Attributes: `cluster`, `name`, `record_namespace` (where the set's record is kept; the three
//! replace the set), `source` (an `https://` URL or a file path) and `version` in place,
//! `out_of_sync` (desired empty). Read back: `objects`, `digest`. Settings: `cluster_endpoint`,
//! `cluster_ca`, `force_conflicts`, `timeout_seconds`.

use super::cluster::Cluster;
use super::object_set::{self, ApplyOptions, Record, RecordRef};
use super::set_kind::{self, SetSource};
use super::shared::Shared;
use async_trait::async_trait;
use engine::{Attributes, Context, KindError, KindResult};
use engine_helm::yaml::Numbers;
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;
use std::sync::Arc;

#[derive(Attributes, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct KubeManifests {
    #[attr(replace)]
    pub cluster: String,
    #[attr(replace)]
    pub name: String,
    #[attr(in_place)]
    pub source: String,
    #[attr(in_place)]
    #[serde(default)]
    pub version: String,
    #[attr(in_place)]
    #[serde(default)]
    pub out_of_sync: Vec<String>,
    #[attr(computed)]
    #[serde(default)]
    pub objects: Vec<String>,
    #[attr(computed)]
    #[serde(default)]
    pub digest: String,
    #[attr(replace)]
    pub record_namespace: String,
    #[attr(setting)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_endpoint: Option<String>,
    #[attr(setting)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_ca: Option<String>,
    #[attr(setting)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub force_conflicts: Option<bool>,
    #[attr(setting)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_seconds: Option<u64>,
}

/// The source of a `k8s_manifests`: a YAML stream.
pub(crate) struct Manifests;

/// Fetches the manifest text of `source`.
async fn fetch(source: &str) -> KindResult<String> {
    if source.starts_with("https://") || source.starts_with("http://") {
        engine_helm::oci::install_crypto_provider();
        let response = reqwest::get(source)
            .await
            .and_then(|r| r.error_for_status())
            .map_err(|e| KindError::retryable(format!("{source}: {e}")))?;
        response.text().await.map_err(|e| KindError::retryable(format!("{source}: {e}")))
    } else {
        tokio::fs::read_to_string(source)
            .await
            .map_err(|e| KindError::new(format!("{source}: {e}")))
    }
}

/// The objects of a YAML stream: empty documents and documents that are not Kubernetes objects
/// at all (no `apiVersion` and no `kind`, such as the `kustomization.yaml` fragment the Gateway
/// API release file carries) are skipped; `List` objects are expanded.
pub fn parse_stream(source: &str, text: &str) -> KindResult<Vec<Json>> {
    let docs = engine_helm::yaml::parse_all(text, Numbers::Native)
        .map_err(|e| KindError::new(format!("{source}: {e}")))?;
    let mut out = Vec::new();
    for doc in docs.iter().filter(|d| !d.is_nil()) {
        let json = doc.to_json();
        if json.get("apiVersion").is_none() && json.get("kind").is_none() {
            tracing::debug!(source, "skipping a document that is not a Kubernetes object");
            continue;
        }
        if json.get("kind").and_then(Json::as_str) == Some("List") {
            out.extend(json["items"].as_array().cloned().unwrap_or_default());
        } else {
            out.push(json);
        }
    }
    Ok(out)
}

#[async_trait]
impl SetSource for Manifests {
    type Attrs = KubeManifests;
    const NAME: &'static str = "k8s_manifests";
    const SET_KIND: &'static str = "manifests";

    fn cluster(a: &KubeManifests) -> (&str, Option<&str>, Option<&str>) {
        (&a.cluster, a.cluster_endpoint.as_deref(), a.cluster_ca.as_deref())
    }

    fn record_ref(a: &KubeManifests) -> RecordRef {
        RecordRef {
            namespace: a.record_namespace.clone(),
            set_kind: Self::SET_KIND,
            name: a.name.clone(),
        }
    }

    fn live(
        cluster: &str,
        at: &RecordRef,
        record: &Record,
        out_of_sync: Vec<String>,
    ) -> KubeManifests {
        KubeManifests {
            cluster: cluster.to_string(),
            name: at.name.clone(),
            source: record.source.clone(),
            version: record.version.clone(),
            out_of_sync,
            objects: record.ids().iter().map(|i| i.key()).collect(),
            digest: record.digest.clone(),
            record_namespace: at.namespace.clone(),
            cluster_endpoint: None,
            cluster_ca: None,
            force_conflicts: None,
            timeout_seconds: None,
        }
    }

    async fn build(
        &self,
        _: &Context,
        shared: &Shared,
        cluster: &Arc<Cluster>,
        _: &RecordRef,
        desired: &KubeManifests,
        _: Option<&Record>,
    ) -> KindResult<(Record, ApplyOptions)> {
        let source = &desired.source;
        let body = fetch(source).await?;
        let objects = object_set::prepare(cluster, parse_stream(source, &body)?, "default")
            .await
            .map_err(|e| KindError::new(format!("{source}: {}", e.message)))?;
        let record = Record {
            source: source.clone(),
            version: desired.version.clone(),
            values: Json::Null,
            digest: object_set::digest(body.as_bytes()),
            objects,
            pending: false,
        };
        let options = ApplyOptions {
            force_conflicts: desired.force_conflicts.unwrap_or(false),
            wait: true,
            timeout: set_kind::timeout(shared, desired.timeout_seconds),
            poll_interval: shared.poll_interval,
        };
        Ok((record, options))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_skip_empty_documents_and_expand_lists() {
        let text = "---\n# comment only\n---\nresources:\n- a.yaml\n---\napiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Namespace\n  metadata: {name: a}\n---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: b\n";
        let objects = parse_stream("x.yaml", text).unwrap();
        let names: Vec<&str> =
            objects.iter().map(|o| o["metadata"]["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["a", "b"]);
    }
}
