//! `helm_release`: a Helm chart pulled over OCI, rendered natively against the live cluster
//! (`.Capabilities` from discovery, `lookup` answered by the API server), applied as objects,
//! pruned on upgrade, and checked object by object for drift.
//!
//! Attributes: `cluster`, `name`, `namespace` (changing one replaces the release), `chart`
//! (`oci://host/repo/name`), `version`, `values`, `out_of_sync` (field-level differences between
//! the applied objects and the cluster; desired empty) in place. Read back: `objects`
//! (identities), `chart_digest`. Settings: `cluster_endpoint`, `cluster_ca`, `wait`,
//! `timeout_seconds`.

use super::cluster::Cluster;
use super::object_set::{self, ApplyOptions, Record, RecordRef};
use super::set_kind::{self, SetSource};
use super::shared::Shared;
use async_trait::async_trait;
use engine::{Attributes, Context, KindError, KindResult};
use engine_helm::yaml::Numbers;
use engine_helm::{Capabilities, Chart, Lookup, RenderOptions};
use serde::{Deserialize, Serialize};
use serde_json::{Value as Json, json};
use std::sync::Arc;

#[derive(Attributes, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct HelmRelease {
    #[attr(replace)]
    pub cluster: String,
    #[attr(replace)]
    pub name: String,
    #[attr(in_place)]
    pub chart: String,
    #[attr(in_place)]
    #[serde(default)]
    pub version: String,
    #[attr(in_place)]
    #[serde(default)]
    pub values: Json,
    #[attr(in_place)]
    #[serde(default)]
    pub out_of_sync: Vec<String>,
    #[attr(computed)]
    #[serde(default)]
    pub objects: Vec<String>,
    #[attr(computed)]
    #[serde(default)]
    pub chart_digest: String,
    #[attr(replace)]
    pub namespace: String,
    #[attr(setting)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_endpoint: Option<String>,
    #[attr(setting)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_ca: Option<String>,
    /// Wait for the release's workloads to be ready (default true).
    #[attr(setting)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait: Option<bool>,
    #[attr(setting)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_seconds: Option<u64>,
}

/// The source of a `helm_release`: a chart rendered against the cluster.
pub(crate) struct Release;

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
impl SetSource for Release {
    type Attrs = HelmRelease;
    const NAME: &'static str = "helm_release";
    const SET_KIND: &'static str = "release";

    fn cluster(a: &HelmRelease) -> (&str, Option<&str>, Option<&str>) {
        (&a.cluster, a.cluster_endpoint.as_deref(), a.cluster_ca.as_deref())
    }

    fn record_ref(a: &HelmRelease) -> RecordRef {
        RecordRef { namespace: a.namespace.clone(), set_kind: Self::SET_KIND, name: a.name.clone() }
    }

    fn live(
        cluster: &str,
        at: &RecordRef,
        record: &Record,
        out_of_sync: Vec<String>,
    ) -> HelmRelease {
        HelmRelease {
            cluster: cluster.to_string(),
            name: at.name.clone(),
            chart: record.source.clone(),
            version: record.version.clone(),
            values: record.values.clone(),
            out_of_sync,
            objects: record.ids().iter().map(|i| i.key()).collect(),
            chart_digest: record.digest.clone(),
            namespace: at.namespace.clone(),
            cluster_endpoint: None,
            cluster_ca: None,
            wait: None,
            timeout_seconds: None,
        }
    }

    async fn build(
        &self,
        ctx: &Context,
        shared: &Shared,
        cluster: &Arc<Cluster>,
        at: &RecordRef,
        desired: &HelmRelease,
        old: Option<&Record>,
    ) -> KindResult<(Record, ApplyOptions)> {
        let reference = format!("{}:{}", desired.chart, desired.version);
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
        let values = if desired.values.is_null() { json!({}) } else { desired.values.clone() };
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
            source: desired.chart.clone(),
            version: desired.version.clone(),
            values,
            digest: pulled.digest,
            objects,
            pending: false,
        };
        let options = ApplyOptions {
            force_conflicts: false,
            wait: desired.wait.unwrap_or(true),
            timeout: set_kind::timeout(shared, desired.timeout_seconds),
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
