//! `gcp_container_node_pool`: a node pool of a GKE cluster (spot or not, tainted, autoscaled).

use super::{cluster_path, finish};
use crate::GcpClients;
use crate::error::GcpResult;
use engine::prelude::*;
use google_cloud_container_v1::model::node_taint::Effect;
use google_cloud_container_v1::model::workload_metadata_config::Mode;
use google_cloud_container_v1::model::{
    NodeConfig, NodeLabels, NodeManagement, NodePool as Body, NodePoolAutoscaling, NodeTaint,
    NodeTaints, WorkloadMetadataConfig,
};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

#[derive(Attributes, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct NodePool {
    #[attr(replace)]
    pub name: String,
    /// The cluster's name.
    #[attr(replace)]
    pub cluster: String,
    #[attr(replace)]
    pub location: String,
    /// e.g. `e2-standard-4`.
    #[attr(replace)]
    pub machine_type: String,
    /// e.g. `COS_CONTAINERD`.
    #[attr(replace)]
    pub image_type: String,
    #[attr(replace)]
    pub disk_size_gb: i64,
    /// e.g. `pd-balanced`.
    #[attr(replace)]
    pub disk_type: String,
    #[attr(replace)]
    pub spot: bool,
    #[attr(replace, unordered)]
    pub oauth_scopes: Vec<String>,
    /// Nodes made at creation; autoscaling moves the count between the bounds after that.
    #[attr(setting)]
    pub initial_node_count: i64,
    #[attr(in_place)]
    pub min_node_count: i64,
    #[attr(in_place)]
    pub max_node_count: i64,
    #[attr(in_place, unordered)]
    pub taints: Vec<Taint>,
    /// Kubernetes labels of the nodes.
    #[attr(in_place)]
    pub node_labels: BTreeMap<String, String>,
    /// `GKE_METADATA` (Workload Identity) or `GCE_METADATA`.
    #[attr(in_place)]
    pub workload_metadata: String,
    #[attr(in_place)]
    pub auto_repair: bool,
    #[attr(in_place)]
    pub auto_upgrade: bool,
    /// The nodes' Kubernetes version (`1.34` follows its patches); `None`: the cluster's.
    #[attr(in_place)]
    #[serde(default)]
    pub version: Option<String>,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Taint {
    pub key: String,
    pub value: String,
    /// `NO_SCHEDULE`, `PREFER_NO_SCHEDULE` or `NO_EXECUTE`.
    pub effect: String,
}

pub(crate) struct NodePoolKind(pub Arc<GcpClients>);

/// `<location>/<cluster>/<pool>`: enough to find a recorded pool the spec no longer has.
fn id(location: &str, cluster: &str, name: &str) -> String {
    format!("{location}/{cluster}/{name}")
}

fn taints(taints: &[Taint]) -> Vec<NodeTaint> {
    taints
        .iter()
        .map(|t| {
            NodeTaint::new()
                .set_key(&t.key)
                .set_value(&t.value)
                .set_effect(Effect::from(t.effect.as_str()))
        })
        .collect()
}

fn attrs(cluster: &str, location: &str, p: &Body, version: Option<&str>) -> NodePool {
    let config = p.config.clone().unwrap_or_default();
    let scaling = p.autoscaling.clone().unwrap_or_default();
    let management = p.management.clone().unwrap_or_default();
    let mut t: Vec<Taint> = config
        .taints
        .iter()
        .map(|t| Taint {
            key: t.key.clone(),
            value: t.value.clone(),
            effect: t.effect.name().unwrap_or_default().into(),
        })
        .collect();
    t.sort();
    NodePool {
        name: p.name.clone(),
        cluster: cluster.to_string(),
        location: location.to_string(),
        machine_type: config.machine_type.clone(),
        image_type: config.image_type.clone(),
        disk_size_gb: i64::from(config.disk_size_gb),
        disk_type: config.disk_type.clone(),
        spot: config.spot,
        oauth_scopes: config.oauth_scopes.clone(),
        initial_node_count: i64::from(p.initial_node_count),
        min_node_count: i64::from(scaling.min_node_count),
        max_node_count: i64::from(scaling.max_node_count),
        taints: t,
        node_labels: config.labels.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
        workload_metadata: config
            .workload_metadata_config
            .as_ref()
            .and_then(|w| w.mode.name())
            .unwrap_or("MODE_UNSPECIFIED")
            .into(),
        auto_repair: management.auto_repair,
        auto_upgrade: management.auto_upgrade,
        version: super::shown_version(&p.version, version),
    }
}

/// A count as GKE's `int32`.
fn count(n: i64) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

impl NodePoolKind {
    fn path(&self, p: &NodePool) -> String {
        format!("{}/nodePools/{}", cluster_path(&self.0, &p.location, &p.cluster), p.name)
    }

    /// The pools of cluster `cluster` in `location` (none when the cluster does not exist).
    async fn pools(
        &self,
        ctx: &Context,
        location: &str,
        cluster: &str,
    ) -> KindResult<Arc<HashMap<String, Body>>> {
        let path = cluster_path(&self.0, location, cluster);
        ctx.memo(&format!("gcp:{path}:node-pools"), || async {
            self.0.count("container", "ListNodePools");
            let answer = Box::pin(self.0.clusters.list_node_pools().set_parent(&path).send()).await;
            let pools = answer
                .or_absent("container:ListNodePools")?
                .map(|a| a.node_pools)
                .unwrap_or_default();
            Ok::<_, KindError>(pools.into_iter().map(|p| (p.name.clone(), p)).collect())
        })
        .await
    }

    async fn get(&self, p: &NodePool) -> KindResult<Live<NodePool>> {
        self.0.count("container", "GetNodePool");
        let body = Box::pin(self.0.clusters.get_node_pool().set_name(self.path(p)).send())
            .await
            .api("container:GetNodePool")?;
        let live = attrs(&p.cluster, &p.location, &body, p.version.as_deref());
        Ok(Live::new(id(&p.location, &p.cluster, &p.name), live))
    }
}

impl TypedKind for NodePoolKind {
    type Attrs = NodePool;
    const NAME: &'static str = "gcp_container_node_pool";

    async fn read(&self, ctx: &Context, requests: &Requests<Self>) -> Found<Self> {
        let mut out = Vec::with_capacity(requests.len());
        for r in requests {
            let recorded = r.id.as_deref().and_then(|id| {
                let mut parts = id.splitn(3, '/');
                Some((
                    parts.next()?.to_string(),
                    parts.next()?.to_string(),
                    parts.next()?.to_string(),
                ))
            });
            let wanted = recorded.or_else(|| {
                r.desired.as_ref().map(|d| (d.location.clone(), d.cluster.clone(), d.name.clone()))
            });
            let Some((location, cluster, name)) = wanted else {
                out.push(None);
                continue;
            };
            let pools = self.pools(ctx, &location, &cluster).await?;
            let version = r.desired.as_ref().and_then(|d| d.version.as_deref());
            out.push(pools.get(&name).map(|p| {
                Live::new(id(&location, &cluster, &name), attrs(&cluster, &location, p, version))
            }));
        }
        Ok(out)
    }

    async fn create(&self, ctx: &Context, d: &Self::Attrs) -> Outcome<Self> {
        let config = NodeConfig::new()
            .set_machine_type(&d.machine_type)
            .set_image_type(&d.image_type)
            .set_disk_size_gb(count(d.disk_size_gb))
            .set_disk_type(&d.disk_type)
            .set_spot(d.spot)
            .set_oauth_scopes(d.oauth_scopes.clone())
            .set_taints(taints(&d.taints))
            .set_labels(d.node_labels.clone())
            .set_workload_metadata_config(
                WorkloadMetadataConfig::new().set_mode(Mode::from(d.workload_metadata.as_str())),
            );
        let body = Body::new()
            .set_name(&d.name)
            .set_config(config)
            .set_initial_node_count(count(d.initial_node_count))
            .set_version(d.version.clone().unwrap_or_default())
            .set_autoscaling(
                NodePoolAutoscaling::new()
                    .set_enabled(true)
                    .set_min_node_count(count(d.min_node_count))
                    .set_max_node_count(count(d.max_node_count)),
            )
            .set_management(
                NodeManagement::new()
                    .set_auto_repair(d.auto_repair)
                    .set_auto_upgrade(d.auto_upgrade),
            );
        ctx.waiting("creating the node pool");
        self.0.count("container", "CreateNodePool");
        let call = self.0.clusters.create_node_pool().set_parent(cluster_path(
            &self.0,
            &d.location,
            &d.cluster,
        ));
        let op = Box::pin(call.set_node_pool(body).send()).await.api("container:CreateNodePool")?;
        finish(&self.0, ctx, &d.location, "container:CreateNodePool", op).await?;
        self.get(d).await
    }

    async fn update(&self, ctx: &Context, update: Update<'_, Self>) -> Outcome<Self> {
        let Update { desired: d, changes, .. } = update;
        let path = self.path(d);
        if changes.min_node_count || changes.max_node_count {
            let scaling = NodePoolAutoscaling::new()
                .set_enabled(true)
                .set_min_node_count(count(d.min_node_count))
                .set_max_node_count(count(d.max_node_count));
            self.0.count("container", "SetNodePoolAutoscaling");
            let call = self
                .0
                .clusters
                .set_node_pool_autoscaling()
                .set_name(&path)
                .set_autoscaling(scaling);
            let op = Box::pin(call.send()).await.api("container:SetNodePoolAutoscaling")?;
            finish(&self.0, ctx, &d.location, "container:SetNodePoolAutoscaling", op).await?;
        }
        if changes.auto_repair || changes.auto_upgrade {
            let management = NodeManagement::new()
                .set_auto_repair(d.auto_repair)
                .set_auto_upgrade(d.auto_upgrade);
            self.0.count("container", "SetNodePoolManagement");
            let call = self
                .0
                .clusters
                .set_node_pool_management()
                .set_name(&path)
                .set_management(management);
            let op = Box::pin(call.send()).await.api("container:SetNodePoolManagement")?;
            finish(&self.0, ctx, &d.location, "container:SetNodePoolManagement", op).await?;
        }
        if changes.version
            && let Some(version) = &d.version
        {
            ctx.waiting(format!("upgrading the nodes to {version}"));
            self.0.count("container", "UpdateNodePool");
            let call = self.0.clusters.update_node_pool().set_name(&path);
            let call = call.set_node_version(version).set_image_type(&d.image_type);
            let op = Box::pin(call.send()).await.api("container:UpdateNodePool")?;
            finish(&self.0, ctx, &d.location, "container:UpdateNodePool", op).await?;
        }
        if changes.taints || changes.node_labels || changes.workload_metadata {
            let mut call = self.0.clusters.update_node_pool().set_name(&path);
            if changes.taints {
                call = call.set_taints(NodeTaints::new().set_taints(taints(&d.taints)));
            }
            if changes.node_labels {
                call = call.set_labels(NodeLabels::new().set_labels(d.node_labels.clone()));
            }
            if changes.workload_metadata {
                let mode = Mode::from(d.workload_metadata.as_str());
                call =
                    call.set_workload_metadata_config(WorkloadMetadataConfig::new().set_mode(mode));
            }
            self.0.count("container", "UpdateNodePool");
            let op = Box::pin(call.send()).await.api("container:UpdateNodePool")?;
            finish(&self.0, ctx, &d.location, "container:UpdateNodePool", op).await?;
        }
        self.get(d).await
    }

    async fn delete(&self, ctx: &Context, current: &LiveOf<Self>) -> KindResult<()> {
        let p = &current.attributes;
        self.0.count("container", "DeleteNodePool");
        let call = self.0.clusters.delete_node_pool().set_name(self.path(p));
        if let Some(op) = Box::pin(call.send()).await.or_absent("container:DeleteNodePool")? {
            finish(&self.0, ctx, &p.location, "container:DeleteNodePool", op).await?;
        }
        Ok(())
    }
}
