//! `k8s_manifests`: a YAML stream of objects (the Gateway API CRDs release file) fetched from a
//! URL or read from a file, applied with server-side apply (conflicts forced when asked), CRDs
//! waited for until `Established`, pruned and checked like a Helm release.
//!
//! Attributes: `cluster`, `name`, `record_namespace` (where the set's record is kept), `source`
//! (an `https://` URL or a file path), `version`, `force_conflicts`, `timeout_seconds`. Read back:
//! `out_of_sync`, `objects`, `digest`.

use super::cluster::Cluster;
use super::object_set::{self, ApplyOptions, Record, RecordRef};
use super::set_kind::{self, SetSource, text};
use super::shared::Shared;
use async_trait::async_trait;
use engine::{Attrs, Context, Field, KindError};
use engine_helm::yaml::Numbers;
use serde_json::{Value as Json, json};
use std::sync::Arc;

/// The source of a `k8s_manifests`: a YAML stream.
pub(crate) struct KubeManifests;

const FIELDS: &[Field] = &[
    Field::replace("cluster"),
    Field::replace("name"),
    Field::replace("record_namespace"),
    Field::in_place("source"),
    Field::in_place("version"),
    Field::in_place("out_of_sync"),
    Field::computed("objects"),
    Field::computed("digest"),
];

fn live_attrs(record: &Record, common: &Attrs) -> Attrs {
    let mut a = common.clone();
    a.insert("source".into(), json!(record.source));
    a.insert("version".into(), json!(record.version));
    a.insert("digest".into(), json!(record.digest));
    a
}

/// Fetches the manifest text of `source`.
async fn fetch(source: &str) -> Result<String, KindError> {
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
pub fn parse_stream(source: &str, text: &str) -> Result<Vec<Json>, KindError> {
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
impl SetSource for KubeManifests {
    const NAME: &'static str = "k8s_manifests";
    const SET_KIND: &'static str = "manifests";
    const NAMESPACE_KEY: &'static str = "record_namespace";
    const FIELDS: &'static [Field] = FIELDS;

    fn live_attrs(record: &Record, common: &Attrs) -> Attrs {
        live_attrs(record, common)
    }

    async fn build(
        &self,
        _ctx: &Context,
        shared: &Shared,
        cluster: &Arc<Cluster>,
        _at: &RecordRef,
        desired: &Attrs,
        _old: Option<&Record>,
    ) -> Result<(Record, ApplyOptions), KindError> {
        let source = text(desired, "source");
        let body = fetch(&source).await?;
        let objects = object_set::prepare(cluster, parse_stream(&source, &body)?, "default")
            .await
            .map_err(|e| KindError::new(format!("{source}: {}", e.message)))?;
        let record = Record {
            source: source.clone(),
            version: text(desired, "version"),
            values: Json::Null,
            digest: object_set::digest(body.as_bytes()),
            objects,
            pending: false,
        };
        let options = ApplyOptions {
            force_conflicts: desired
                .get("force_conflicts")
                .and_then(Json::as_bool)
                .unwrap_or(false),
            wait: true,
            timeout: set_kind::timeout(shared, desired),
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
