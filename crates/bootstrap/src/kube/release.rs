//! `helm_release`: a Helm chart pulled over OCI, rendered natively against the live cluster
//! (`.Capabilities` from discovery, `lookup` answered by the API server), applied as objects,
//! pruned on upgrade, and checked object by object for drift.
//!
//! Attributes: `cluster`, `name`, `namespace` (changing either replaces the release), `chart`
//! (`oci://host/repo/name`), `version`, `values`, `wait`, `timeout_seconds`. Read back:
//! `out_of_sync` (field-level differences between the applied objects and the cluster; desired
//! empty), `objects` (identities), `chart_digest`.

use super::cluster::Cluster;
use super::object_set::{self, ApplyOptions, Record};
use super::set_kind::{self, text};
use super::shared::Shared;
use async_trait::async_trait;
use engine::{Address, Attrs, Context, Field, Kind, KindError, Live, ReadRequest};
use engine_helm::yaml::Numbers;
use engine_helm::{Capabilities, Chart, Lookup, RenderOptions};
use serde_json::{Value as Json, json};
use std::sync::Arc;

pub(crate) struct HelmRelease(pub Arc<Shared>);

const SET_KIND: &str = "release";

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
                let items = self
                    .cluster
                    .list(api_version, kind, namespace)
                    .await
                    .map_err(|e| e.message)?;
                Ok(Some(
                    json!({"apiVersion": "v1", "kind": "List", "items": items}),
                ))
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

impl HelmRelease {
    async fn install(&self, ctx: &Context, desired: &Attrs) -> Result<Live, KindError> {
        let target = self.0.target(desired)?;
        let cluster = self.0.cluster(&target).await?;
        let at = set_kind::record_ref(SET_KIND, desired, "namespace");
        let chart_ref = text(desired, "chart");
        let version = text(desired, "version");
        let values = desired.get("values").cloned().unwrap_or(json!({}));
        let reference = format!("{chart_ref}:{version}");

        ctx.waiting(format!("pulling {reference}"));
        self.0.calls.record(&engine::ApiCall {
            service: "oci".into(),
            operation: "GetChart".into(),
        });
        let pulled = engine_helm::oci::pull_archive(&reference, &self.0.pull)
            .await
            .map_err(|e| KindError::retryable(format!("{reference}: {e}")))?;
        let chart = Chart::load_tgz_bytes(&pulled.archive, &reference)
            .map_err(|e| KindError::new(format!("{reference}: {e}")))?;

        let capabilities = Capabilities {
            kube_version: cluster.server_version().await?,
            api_versions: cluster.api_versions().await?,
        };
        let old = object_set::read_record(&cluster, &at).await?;
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
        let objects = object_set::prepare(&cluster, manifests, &at.namespace)
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
            timeout: set_kind::timeout(&self.0, desired),
            poll_interval: self.0.poll_interval,
        };
        let applied = object_set::apply(ctx, &cluster, &at, record, old.as_ref(), &options).await?;
        let mut live = set_kind::live(&target.name, &at, &applied, vec![], live_attrs);
        live.attributes
            .insert("namespace".into(), json!(at.namespace));
        Ok(live)
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
        let documents = rendered
            .manifests
            .iter()
            .map(|m| (&m.source, &m.content))
            .chain(
                rendered
                    .hooks
                    .iter()
                    .filter(|h| {
                        h.events
                            .iter()
                            .any(|e| install_events.contains(&e.as_str()))
                    })
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

#[async_trait]
impl Kind for HelmRelease {
    fn name(&self) -> &'static str {
        "helm_release"
    }

    fn fields(&self) -> &'static [Field] {
        FIELDS
    }

    async fn read(
        &self,
        _ctx: &Context,
        requests: &[ReadRequest],
    ) -> Result<Vec<Option<Live>>, KindError> {
        futures::future::try_join_all(requests.iter().map(|r| async move {
            let live = set_kind::read_one(&self.0, SET_KIND, "namespace", r, live_attrs).await?;
            Ok::<_, KindError>(live.map(|mut l| {
                let ns = set_kind::parse_state_id(SET_KIND, &l.id)
                    .map(|(_, at)| at.namespace)
                    .unwrap_or_default();
                l.attributes.insert("namespace".into(), json!(ns));
                l
            }))
        }))
        .await
    }

    async fn create(
        &self,
        ctx: &Context,
        _address: &Address,
        desired: &Attrs,
    ) -> Result<Live, KindError> {
        self.install(ctx, desired).await
    }

    async fn update(
        &self,
        ctx: &Context,
        _address: &Address,
        _current: &Live,
        desired: &Attrs,
    ) -> Result<Live, KindError> {
        self.install(ctx, desired).await
    }

    async fn delete(
        &self,
        ctx: &Context,
        _address: &Address,
        current: &Live,
    ) -> Result<(), KindError> {
        set_kind::delete(&self.0, ctx, SET_KIND, current).await
    }
}
