//! `helm_release`: a Helm chart pulled over OCI, rendered natively against the live cluster
//! (`.Capabilities` from discovery, `lookup` answered by the API server), applied as objects,
//! pruned on upgrade, and checked object by object for drift.
//!
//! Attributes: `cluster`, `name`, `namespace` (changing either replaces the release), `chart`
//! (`oci://host/repo/name`), `version`, `values`, `wait`, `timeout_seconds`. Read back:
//! `out_of_sync` (field-level differences between the applied objects and the cluster; desired
//! empty), `objects` (identities), `chart_digest`.

use super::cluster::Cluster;
use super::object_set::{self, ApplyOptions, Record, RecordRef};
use super::set_kind::{self, SetSource, text};
use super::shared::Shared;
use async_trait::async_trait;
use engine::{Attrs, Context, Field, KindError};
use engine_helm::yaml::Numbers;
use engine_helm::{Capabilities, Chart, Lookup, RenderOptions};
use serde_json::{Value as Json, json};
use std::sync::Arc;

/// The source of a `helm_release`: a chart rendered against the cluster.
pub(crate) struct HelmRelease;

const FIELDS: &[Field] = &[
    Field::replace("cluster"),
    Field::replace("name"),
    Field::replace("namespace"),
    Field::in_place("chart"),
    Field::in_place("version"),
    Field::in_place("values"),
    Field::in_place("out_of_sync"),
    Field::computed("objects"),
    Field::computed("chart_digest"),
];

fn live_attrs(record: &Record, common: &Attrs) -> Attrs {
    let mut a = common.clone();
    a.insert("chart".into(), json!(record.source));
    a.insert("version".into(), json!(record.version));
    a.insert("values".into(), record.values.clone());
    a.insert("chart_digest".into(), json!(record.digest));
    a
}

/// Answers the templates' `lookup` from the live cluster (on the rendering thread).
struct LiveLookup {
    cluster: Arc<Cluster>,
    runtime: tokio::runtime::Handle,
}

impl Lookup for LiveLookup {
    fn lookup(
        &self,
        api_version: &str,
        kind: &str,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Json>, String> {
        self.runtime.block_on(async {
            if name.is_empty() {
                let items =
                    self.cluster.list(api_version, kind, namespace).await.map_err(|e| e.message)?;
                Ok(Some(json!({"apiVersion": "v1", "kind": "List", "items": items})))
            } else {
                let id = super::ObjectId {
                    api_version: api_version.into(),
                    kind: kind.into(),
                    namespace: namespace.into(),
                    name: name.into(),
                };
                self.cluster.get(&id).await.map_err(|e| e.message)
            }
        })
    }
}

#[async_trait]
impl SetSource for HelmRelease {
    const NAME: &'static str = "helm_release";
    const SET_KIND: &'static str = "release";
    const NAMESPACE_KEY: &'static str = "namespace";
    const FIELDS: &'static [Field] = FIELDS;

    fn live_attrs(record: &Record, common: &Attrs) -> Attrs {
        live_attrs(record, common)
    }

    async fn build(
        &self,
        ctx: &Context,
        shared: &Shared,
        cluster: &Arc<Cluster>,
        at: &RecordRef,
        desired: &Attrs,
        old: Option<&Record>,
    ) -> Result<(Record, ApplyOptions), KindError> {
        let chart_ref = text(desired, "chart");
        let version = text(desired, "version");
        let values = desired.get("values").cloned().unwrap_or(json!({}));
        let reference = format!("{chart_ref}:{version}");

        ctx.waiting(format!("pulling {reference}"));
        shared
            .calls
            .record(&engine::ApiCall { service: "oci".into(), operation: "GetChart".into() });
        let pulled = engine_helm::oci::pull_archive(&reference, &shared.pull)
            .await
            .map_err(|e| KindError::retryable(format!("{reference}: {e}")))?;
        let chart = Chart::load_tgz_bytes(&pulled.archive, &reference)
            .map_err(|e| KindError::new(format!("{reference}: {e}")))?;

        let capabilities = Capabilities {
            kube_version: cluster.server_version().await?,
            api_versions: cluster.api_versions().await?,
        };
        let manifests = render(
            cluster.clone(),
            chart,
            &at.name,
            &at.namespace,
            values.clone(),
            capabilities,
            old.is_some(),
        )
        .await
        .map_err(|e| KindError::new(format!("{reference}: {e}")))?;
        let objects = object_set::prepare(cluster, manifests, &at.namespace)
            .await
            .map_err(|e| KindError::new(format!("{reference}: {}", e.message)))?;
        let record = Record {
            source: chart_ref,
            version,
            values,
            digest: pulled.digest,
            objects,
            pending: false,
        };
        let options = ApplyOptions {
            force_conflicts: false,
            wait: desired.get("wait").and_then(Json::as_bool).unwrap_or(true),
            timeout: set_kind::timeout(shared, desired),
            poll_interval: shared.poll_interval,
        };
        Ok((record, options))
    }
}

/// Renders the chart on a blocking thread (templates call `lookup` synchronously) and returns
/// its objects: `crds/` first, then templates in Helm's install order, then install hooks.
async fn render(
    cluster: Arc<Cluster>,
    chart: Chart,
    name: &str,
    namespace: &str,
    values: Json,
    capabilities: Capabilities,
    is_upgrade: bool,
) -> Result<Vec<Json>, String> {
    let name = name.to_string();
    let namespace = namespace.to_string();
    let runtime = tokio::runtime::Handle::current();
    tokio::task::spawn_blocking(move || {
        let lookup = LiveLookup { cluster, runtime };
        let mut options = RenderOptions::new(&name, &namespace, values, &lookup);
        options.capabilities = capabilities;
        options.is_upgrade = is_upgrade;
        let rendered = engine_helm::render(&chart, &options).map_err(|e| e.to_string())?;
        let mut out = Vec::new();
        for file in chart.crds() {
            let text = String::from_utf8_lossy(&file.data);
            for doc in engine_helm::yaml::parse_all(&text, Numbers::Native)
                .map_err(|e| format!("{}: {e}", file.name))?
            {
                if !doc.is_nil() {
                    out.push(doc.to_json());
                }
            }
        }
        let install_events = ["pre-install", "post-install", "pre-upgrade", "post-upgrade"];
        let documents = rendered.manifests.iter().map(|m| (&m.source, &m.content)).chain(
            rendered
                .hooks
                .iter()
                .filter(|h| h.events.iter().any(|e| install_events.contains(&e.as_str())))
                .map(|h| (&h.source, &h.content)),
        );
        for (source, content) in documents {
            let doc = engine_helm::yaml::parse(content, Numbers::Native)
                .map_err(|e| format!("{source}: {e}"))?;
            if !doc.is_nil() {
                out.push(doc.to_json());
            }
        }
        Ok(out)
    })
    .await
    .map_err(|e| format!("rendering stopped: {e}"))?
}
