//! `flux_suspend`: the pre-destroy step of a cluster's bootstrap. It exists in state once the
//! cluster is bootstrapped; deleting it suspends Flux (the FluxInstance's reconciliation is
//! disabled and every Kustomization and HelmRelease is suspended) so Flux does not recreate what
//! the rest of the destroy removes. It depends on the Flux releases, so a destroy runs it first.
//!
//! Attributes: `cluster`, `namespace` and `instance` (the FluxInstance).

use super::object_id::ObjectId;
use super::set_kind::text;
use super::shared::Shared;
use async_trait::async_trait;
use engine::{Address, Attrs, Context, Field, Kind, KindError, Live, ReadRequest};
use serde_json::{Value as Json, json};
use std::sync::Arc;

pub(crate) struct FluxSuspend(pub Arc<Shared>);

const FIELDS: &[Field] =
    &[Field::replace("cluster"), Field::in_place("namespace"), Field::in_place("instance")];

/// Flux-managed kinds suspended by `spec.suspend`.
const SUSPENDABLE: &[(&str, &str)] = &[
    ("kustomize.toolkit.fluxcd.io/v1", "Kustomization"),
    ("helm.toolkit.fluxcd.io/v2", "HelmRelease"),
];

fn live(attrs: &Attrs) -> Live {
    let cluster = text(attrs, "cluster");
    let mut a = Attrs::new();
    for k in ["cluster", "namespace", "instance"] {
        a.insert(k.into(), json!(text(attrs, k)));
    }
    Live {
        id: format!("{cluster}|{}|{}", text(attrs, "namespace"), text(attrs, "instance")),
        attributes: a,
    }
}

fn attrs_of_id(id: &str) -> Attrs {
    let mut parts = id.splitn(3, '|');
    let mut a = Attrs::new();
    for k in ["cluster", "namespace", "instance"] {
        a.insert(k.into(), json!(parts.next().unwrap_or_default()));
    }
    a
}

#[async_trait]
impl Kind for FluxSuspend {
    fn name(&self) -> &'static str {
        "flux_suspend"
    }

    fn fields(&self) -> &'static [Field] {
        FIELDS
    }

    /// Nothing to read in the cluster: the step is "present" once recorded.
    async fn read(
        &self,
        _ctx: &Context,
        requests: &[ReadRequest],
    ) -> Result<Vec<Option<Live>>, KindError> {
        Ok(requests
            .iter()
            .map(|r| {
                let id = r.id.as_ref()?;
                Some(match &r.desired {
                    Some(d) => live(d),
                    None => live(&attrs_of_id(id)),
                })
            })
            .collect())
    }

    async fn create(&self, _: &Context, _: &Address, desired: &Attrs) -> Result<Live, KindError> {
        Ok(live(desired))
    }

    async fn update(
        &self,
        _: &Context,
        _: &Address,
        _: &Live,
        desired: &Attrs,
    ) -> Result<Live, KindError> {
        Ok(live(desired))
    }

    async fn delete(&self, ctx: &Context, _: &Address, current: &Live) -> Result<(), KindError> {
        let attrs = attrs_of_id(&current.id);
        let target = self.0.target(&attrs)?;
        let cluster = self.0.cluster(&target).await?;
        let instance = ObjectId {
            api_version: "fluxcd.controlplane.io/v1".into(),
            kind: "FluxInstance".into(),
            namespace: text(&attrs, "namespace"),
            name: text(&attrs, "instance"),
        };
        if cluster.get(&instance).await?.is_some() {
            ctx.waiting(format!("suspending {instance}"));
            cluster
                .merge_patch(
                    &instance,
                    &json!({"metadata": {"annotations": {"fluxcd.controlplane.io/reconcile": "disabled"}}}),
                )
                .await?;
        }
        for (api_version, kind) in SUSPENDABLE {
            for obj in cluster.list(api_version, kind, "").await? {
                let (Some(name), Some(namespace)) = (
                    obj.pointer("/metadata/name").and_then(Json::as_str),
                    obj.pointer("/metadata/namespace").and_then(Json::as_str),
                ) else {
                    continue;
                };
                let id = ObjectId {
                    api_version: api_version.to_string(),
                    kind: kind.to_string(),
                    namespace: namespace.into(),
                    name: name.into(),
                };
                ctx.waiting(format!("suspending {id}"));
                cluster.merge_patch(&id, &json!({"spec": {"suspend": true}})).await?;
            }
        }
        Ok(())
    }
}
