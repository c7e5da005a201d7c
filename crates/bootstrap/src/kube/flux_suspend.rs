//! `flux_suspend`: the pre-destroy step of a cluster's bootstrap. It exists in state once the
//! cluster is bootstrapped; deleting it suspends Flux (the FluxInstance's reconciliation is
//! disabled and every Kustomization and HelmRelease is suspended) so Flux does not recreate what
//! the rest of the destroy removes. It depends on the Flux releases, so a destroy runs it first.
//!
//! Attributes: `cluster` (replace), `namespace` and `instance` (the FluxInstance) in place.
//! Settings: `cluster_endpoint`, `cluster_ca`.

use super::object_id::ObjectId;
use super::shared::Shared;
use engine::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::{Value as Json, json};
use std::sync::Arc;

#[derive(Attributes, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct FluxSuspend {
    #[attr(replace)]
    pub cluster: String,
    #[attr(in_place)]
    pub namespace: String,
    #[attr(in_place)]
    pub instance: String,
    #[attr(setting)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_endpoint: Option<String>,
    #[attr(setting)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_ca: Option<String>,
}

pub(crate) struct FluxSuspendKind(pub Arc<Shared>);

/// Flux-managed kinds suspended by `spec.suspend`.
const SUSPENDABLE: &[(&str, &str)] = &[
    ("kustomize.toolkit.fluxcd.io/v1", "Kustomization"),
    ("helm.toolkit.fluxcd.io/v2", "HelmRelease"),
];

/// The step as recorded: `<cluster>|<namespace>|<instance>`.
fn live(step: &FluxSuspend) -> Live<FluxSuspend> {
    let id = format!("{}|{}|{}", step.cluster, step.namespace, step.instance);
    let step = FluxSuspend { cluster_endpoint: None, cluster_ca: None, ..step.clone() };
    Live::new(id, step)
}

/// The step a state id names.
fn of_id(id: &str) -> KindResult<FluxSuspend> {
    let mut parts = id.splitn(3, '|').map(String::from);
    let (Some(cluster), Some(namespace), Some(instance)) =
        (parts.next(), parts.next(), parts.next())
    else {
        return Err(KindError::new(format!("bad flux_suspend id `{id}` in state")));
    };
    Ok(FluxSuspend { cluster, namespace, instance, cluster_endpoint: None, cluster_ca: None })
}

impl TypedKind for FluxSuspendKind {
    type Attrs = FluxSuspend;
    const NAME: &'static str = "flux_suspend";

    /// Nothing to read in the cluster: the step is "present" once recorded.
    async fn read(&self, _: &Context, requests: &Requests<Self>) -> Found<Self> {
        let recorded = requests.iter().map(|r| match (&r.id, &r.desired) {
            (None, _) => Ok(None),
            (Some(_), Some(d)) => Ok(Some(live(d))),
            (Some(id), None) => Ok(Some(live(&of_id(id)?))),
        });
        recorded.collect()
    }

    async fn create(&self, _: &Context, desired: &Self::Attrs) -> Outcome<Self> {
        Ok(live(desired))
    }

    async fn update(&self, _: &Context, update: Update<'_, Self>) -> Outcome<Self> {
        let Update { desired, .. } = update;
        Ok(live(desired))
    }

    async fn delete(&self, ctx: &Context, current: &LiveOf<Self>) -> KindResult<()> {
        let step = of_id(&current.id)?;
        let target = self.0.target(&step.cluster, None, None);
        let cluster = self.0.cluster(&target).await?;
        let instance = ObjectId {
            api_version: "fluxcd.controlplane.io/v1".into(),
            kind: "FluxInstance".into(),
            namespace: step.namespace.clone(),
            name: step.instance.clone(),
        };
        if cluster.get(&instance).await?.is_some() {
            ctx.waiting(format!("suspending {instance}"));
            let disabled = json!({"metadata": {"annotations":
                {"fluxcd.controlplane.io/reconcile": "disabled"}}});
            cluster.merge_patch(&instance, &disabled).await?;
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
