//! `gcp_container_cluster`: a GKE Standard cluster, private, VPC-native on the network stage's
//! ranges, its default node pool removed once created (its node pools are
//! `gcp_container_node_pool`s).
//!
//! Private nodes and authorised networks are set through `privateClusterConfig` and
//! `masterAuthorizedNetworksConfig`, which GKE marks deprecated in favour of
//! `controlPlaneEndpointsConfig` but still honours: the reference platform's clusters were made
//! through them, and taking those over reads them the same way.
#![allow(deprecated)]

use super::{cluster_path, finish, parent, shown_version};
use crate::GcpClients;
use crate::error::{GcpResult, kind_error};
use crate::labels::{from_labels, to_labels};
use engine::ownership::adoptable;
use engine::prelude::*;
use google_cloud_container_v1::model::master_authorized_networks_config::CidrBlock;
use google_cloud_container_v1::model::release_channel::Channel;
use google_cloud_container_v1::model::{
    Cluster as Body, ClusterUpdate, DatapathProvider, IPAllocationPolicy,
    MasterAuthorizedNetworksConfig, NetworkConfig, NetworkPolicy, NodePool, PrivateClusterConfig,
    ReleaseChannel, WorkloadIdentityConfig,
};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::Arc;

/// The node pool GKE makes with a cluster, removed right after (as `remove_default_node_pool`).
const DEFAULT_POOL: &str = "default-pool";

#[derive(Attributes, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct Cluster {
    #[attr(replace)]
    pub name: String,
    /// A zone (zonal cluster) or a region.
    #[attr(replace)]
    pub location: String,
    /// The network's and subnetwork's names.
    #[attr(replace)]
    pub network: String,
    #[attr(replace)]
    pub subnetwork: String,
    /// The subnetwork's secondary ranges for pods and services.
    #[attr(replace)]
    pub pods_range_name: String,
    #[attr(replace)]
    pub services_range_name: String,
    #[attr(replace)]
    pub private_nodes: bool,
    #[attr(replace)]
    pub private_endpoint: bool,
    #[attr(replace, normalize = engine::normalize::cidr)]
    pub master_ipv4_cidr: String,
    #[attr(in_place, unordered)]
    pub authorized_networks: Vec<AuthorizedNetwork>,
    /// `RAPID`, `REGULAR`, `STABLE` or `EXTENDED`.
    #[attr(in_place)]
    pub release_channel: String,
    /// `DATAPATH_PROVIDER_UNSPECIFIED` (legacy, so Cilium can own the datapath) or
    /// `ADVANCED_DATAPATH`; set at creation only.
    #[attr(replace)]
    pub datapath_provider: String,
    #[attr(in_place)]
    pub network_policy: bool,
    /// Workload Identity pool, e.g. `ogenki-435905.svc.id.goog`.
    #[attr(in_place)]
    pub workload_pool: String,
    /// `none` or GKE's default (`logging.googleapis.com/kubernetes`).
    #[attr(in_place)]
    pub logging_service: String,
    #[attr(in_place)]
    pub monitoring_service: String,
    #[attr(in_place, tags)]
    pub labels: Tags,
    /// The control plane's Kubernetes version (`1.34` follows its patches); `None`: the
    /// release channel's.
    #[attr(in_place)]
    #[serde(default)]
    pub version: Option<String>,
    #[attr(computed)]
    #[serde(default)]
    pub endpoint: Option<String>,
    /// The cluster CA, PEM, base64 (as GKE gives it).
    #[attr(computed)]
    #[serde(default)]
    pub ca_certificate: Option<String>,
    /// `https://<endpoint>`: where the bootstrap reaches the API server.
    #[attr(computed)]
    #[serde(default)]
    pub endpoint_url: Option<String>,
    /// The cluster CA as PEM text.
    #[attr(computed)]
    #[serde(default)]
    pub ca_pem: Option<String>,
    #[attr(computed)]
    #[serde(default)]
    pub master_version: Option<String>,
    /// The service-account token issuer (`https://container.googleapis.com/v1/projects/...`).
    #[attr(computed)]
    #[serde(default)]
    pub issuer: Option<String>,
    #[attr(computed)]
    #[serde(default)]
    pub self_link: Option<String>,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct AuthorizedNetwork {
    pub cidr_block: String,
    pub display_name: String,
}

pub(crate) struct ClusterKind(pub Arc<GcpClients>);

/// GKE's base64 CA as PEM text (`None` when there is none or it does not decode).
fn pem(ca_base64: &str) -> Option<String> {
    use base64::Engine as _;
    let bytes = base64::engine::general_purpose::STANDARD.decode(ca_base64.trim()).ok()?;
    String::from_utf8(bytes).ok().filter(|p| p.contains("BEGIN CERTIFICATE"))
}

fn channel(name: &str) -> ReleaseChannel {
    ReleaseChannel::new().set_channel(Channel::from(name))
}

fn authorized(nets: &[AuthorizedNetwork]) -> MasterAuthorizedNetworksConfig {
    MasterAuthorizedNetworksConfig::new().set_enabled(!nets.is_empty()).set_cidr_blocks(
        nets.iter().map(|n| {
            CidrBlock::new().set_cidr_block(&n.cidr_block).set_display_name(&n.display_name)
        }),
    )
}

impl ClusterKind {
    fn attrs(&self, c: &Body, address: Option<&engine::Address>, version: Option<&str>) -> Cluster {
        let private = c.private_cluster_config.clone().unwrap_or_default();
        let ip = c.ip_allocation_policy.clone().unwrap_or_default();
        let mut authorized: Vec<AuthorizedNetwork> = c
            .master_authorized_networks_config
            .iter()
            .filter(|m| m.enabled)
            .flat_map(|m| m.cidr_blocks.iter())
            .map(|b| AuthorizedNetwork {
                cidr_block: b.cidr_block.clone(),
                display_name: b.display_name.clone(),
            })
            .collect();
        authorized.sort();
        let datapath =
            c.network_config.as_ref().map(|n| n.datapath_provider.clone()).unwrap_or_default();
        Cluster {
            name: c.name.clone(),
            location: c.location.clone(),
            network: crate::compute::last_segment(&c.network).to_string(),
            subnetwork: crate::compute::last_segment(&c.subnetwork).to_string(),
            pods_range_name: ip.cluster_secondary_range_name,
            services_range_name: ip.services_secondary_range_name,
            private_nodes: private.enable_private_nodes,
            private_endpoint: private.enable_private_endpoint,
            master_ipv4_cidr: private.master_ipv4_cidr_block,
            authorized_networks: authorized,
            release_channel: c
                .release_channel
                .as_ref()
                .and_then(|r| r.channel.name())
                .unwrap_or("UNSPECIFIED")
                .to_string(),
            datapath_provider: datapath
                .name()
                .unwrap_or("DATAPATH_PROVIDER_UNSPECIFIED")
                .to_string(),
            network_policy: c.network_policy.as_ref().is_some_and(|p| p.enabled),
            workload_pool: c
                .workload_identity_config
                .as_ref()
                .map(|w| w.workload_pool.clone())
                .unwrap_or_default(),
            logging_service: c.logging_service.clone(),
            monitoring_service: c.monitoring_service.clone(),
            labels: from_labels(&c.resource_labels, address),
            version: shown_version(&c.current_master_version, version),
            endpoint: Some(c.endpoint.clone()).filter(|e| !e.is_empty()),
            ca_certificate: c
                .master_auth
                .as_ref()
                .map(|a| a.cluster_ca_certificate.clone())
                .filter(|ca| !ca.is_empty()),
            endpoint_url: Some(c.endpoint.clone())
                .filter(|e| !e.is_empty())
                .map(|e| format!("https://{e}")),
            ca_pem: c.master_auth.as_ref().and_then(|a| pem(&a.cluster_ca_certificate)),
            master_version: Some(c.current_master_version.clone()).filter(|v| !v.is_empty()),
            issuer: Some(format!(
                "https://container.googleapis.com/v1/{}",
                cluster_path(&self.0, &c.location, &c.name)
            )),
            self_link: Some(c.self_link.clone()).filter(|s| !s.is_empty()),
        }
    }

    /// Every cluster of the project (all locations), by name: one list call per run.
    async fn all(&self, ctx: &Context) -> KindResult<Arc<HashMap<String, Body>>> {
        let key = format!("gcp:{}:clusters", self.0.project);
        ctx.memo(&key, || async {
            self.0.count("container", "ListClusters");
            let call = self.0.clusters.list_clusters().set_parent(parent(&self.0, "-"));
            let answer = Box::pin(call.send())
                .await
                .map_err(|e| kind_error("container:ListClusters", &e))?;
            Ok::<_, KindError>(answer.clusters.into_iter().map(|c| (c.name.clone(), c)).collect())
        })
        .await
    }

    async fn body(&self, location: &str, name: &str) -> KindResult<Body> {
        self.0.count("container", "GetCluster");
        let call = self.0.clusters.get_cluster().set_name(cluster_path(&self.0, location, name));
        Box::pin(call.send()).await.api("container:GetCluster")
    }

    async fn get(&self, ctx: &Context, d: &Cluster, name: &str) -> KindResult<Live<Cluster>> {
        let body = self.body(&d.location, name).await?;
        Ok(Live::new(name, self.attrs(&body, ctx.address(), d.version.as_deref())))
    }

    /// One `updateCluster` call with `update`, waited for (GKE takes one change at a time).
    async fn apply(
        &self,
        ctx: &Context,
        c: &Cluster,
        update: Box<ClusterUpdate>,
    ) -> KindResult<()> {
        self.0.count("container", "UpdateCluster");
        let call =
            self.0.clusters.update_cluster().set_name(cluster_path(&self.0, &c.location, &c.name));
        let op = Box::pin(call.set_update(*update).send()).await.api("container:UpdateCluster")?;
        finish(&self.0, ctx, &c.location, "container:UpdateCluster", op).await
    }
}

/// One `updateCluster` change, made on the heap: GKE's `ClusterUpdate` is a large value, and
/// a debug build's worker stack is small.
fn change(set: impl FnOnce(&mut ClusterUpdate)) -> Box<ClusterUpdate> {
    let mut update = Box::<ClusterUpdate>::default();
    set(&mut update);
    update
}

/// The create request's cluster. GKE's `Cluster` is a large value: it is filled in place on the
/// heap, not through a chain of setters that each copy it on the stack.
fn create_body(d: &Cluster) -> Box<Body> {
    let mut body = Box::<Body>::default();
    body.name = d.name.clone();
    body.network = d.network.clone();
    body.subnetwork = d.subnetwork.clone();
    body.ip_allocation_policy = Some(
        IPAllocationPolicy::new()
            .set_use_ip_aliases(true)
            .set_cluster_secondary_range_name(&d.pods_range_name)
            .set_services_secondary_range_name(&d.services_range_name),
    );
    body.private_cluster_config = Some(
        PrivateClusterConfig::new()
            .set_enable_private_nodes(d.private_nodes)
            .set_enable_private_endpoint(d.private_endpoint)
            .set_master_ipv4_cidr_block(&d.master_ipv4_cidr),
    );
    body.master_authorized_networks_config = Some(authorized(&d.authorized_networks));
    body.release_channel = Some(channel(&d.release_channel));
    body.network_config = Some(
        NetworkConfig::new()
            .set_datapath_provider(DatapathProvider::from(d.datapath_provider.as_str())),
    );
    body.network_policy = Some(NetworkPolicy::new().set_enabled(d.network_policy));
    body.workload_identity_config =
        Some(WorkloadIdentityConfig::new().set_workload_pool(&d.workload_pool));
    body.logging_service = d.logging_service.clone();
    body.monitoring_service = d.monitoring_service.clone();
    body.resource_labels = to_labels(&d.labels);
    body.node_pools = vec![NodePool::new().set_name(DEFAULT_POOL).set_initial_node_count(1)];
    body.initial_cluster_version = d.version.clone().unwrap_or_default();
    body
}

impl TypedKind for ClusterKind {
    type Attrs = Cluster;
    const NAME: &'static str = "gcp_container_cluster";

    async fn read(&self, ctx: &Context, requests: &Requests<Self>) -> Found<Self> {
        let all = self.all(ctx).await?;
        Ok(requests
            .iter()
            .map(|r| {
                let version = r.desired.as_ref().and_then(|d| d.version.as_deref());
                if let Some(c) = r.id.as_ref().and_then(|id| all.get(id)) {
                    return Some(Live::new(
                        c.name.clone(),
                        self.attrs(c, Some(&r.address), version),
                    ));
                }
                // Not recorded: ours only when its labels say it is this resource of this state.
                let d = r.desired.as_ref()?;
                let c = all.get(&d.name).filter(|c| c.location == d.location)?;
                let found = self.attrs(c, Some(&r.address), version);
                adoptable(r, &found).then(|| Live::new(d.name.clone(), found))
            })
            .collect())
    }

    async fn create(&self, ctx: &Context, d: &Self::Attrs) -> Outcome<Self> {
        let body = create_body(d);
        ctx.waiting("creating the cluster (GKE takes minutes)");
        self.0.count("container", "CreateCluster");
        let call = self.0.clusters.create_cluster().set_parent(parent(&self.0, &d.location));
        let op = Box::pin(call.set_cluster(*body).send()).await.api("container:CreateCluster")?;
        finish(&self.0, ctx, &d.location, "container:CreateCluster", op).await?;
        // The default pool goes: the spec's node pools are resources of their own.
        let pool =
            format!("{}/nodePools/{DEFAULT_POOL}", cluster_path(&self.0, &d.location, &d.name));
        self.0.count("container", "DeleteNodePool");
        if let Some(op) = Box::pin(self.0.clusters.delete_node_pool().set_name(pool).send())
            .await
            .or_absent("container:DeleteNodePool")?
        {
            finish(&self.0, ctx, &d.location, "container:DeleteNodePool", op).await?;
        }
        self.get(ctx, d, &d.name).await
    }

    async fn update(&self, ctx: &Context, update: Update<'_, Self>) -> Outcome<Self> {
        let Update { current, desired: d, changes } = update;
        // The control plane first: its node pools follow in their own steps, after it.
        if changes.version
            && let Some(version) = &d.version
        {
            ctx.waiting(format!("upgrading the control plane to {version}"));
            self.apply(ctx, d, change(|u| u.desired_master_version = version.clone())).await?;
        }
        if changes.authorized_networks {
            let networks = authorized(&d.authorized_networks);
            self.apply(
                ctx,
                d,
                change(|u| u.desired_master_authorized_networks_config = Some(networks)),
            )
            .await?;
        }
        if changes.release_channel {
            let channel = channel(&d.release_channel);
            self.apply(ctx, d, change(|u| u.desired_release_channel = Some(channel))).await?;
        }
        if changes.workload_pool {
            let pool = WorkloadIdentityConfig::new().set_workload_pool(&d.workload_pool);
            self.apply(ctx, d, change(|u| u.desired_workload_identity_config = Some(pool))).await?;
        }
        if changes.logging_service {
            let service = d.logging_service.clone();
            self.apply(ctx, d, change(|u| u.desired_logging_service = service)).await?;
        }
        if changes.monitoring_service {
            let service = d.monitoring_service.clone();
            self.apply(ctx, d, change(|u| u.desired_monitoring_service = service)).await?;
        }
        if changes.network_policy {
            self.0.count("container", "SetNetworkPolicy");
            let call = self.0.clusters.set_network_policy().set_name(cluster_path(
                &self.0,
                &d.location,
                &d.name,
            ));
            let op = Box::pin(
                call.set_network_policy(NetworkPolicy::new().set_enabled(d.network_policy)).send(),
            )
            .await;
            let op = op.api("container:SetNetworkPolicy")?;
            finish(&self.0, ctx, &d.location, "container:SetNetworkPolicy", op).await?;
        }
        if changes.labels {
            // Labels change with the fingerprint of those they replace.
            let fingerprint = self.body(&d.location, &current.id).await?.label_fingerprint;
            self.0.count("container", "SetLabels");
            let call =
                self.0.clusters.set_labels().set_name(cluster_path(&self.0, &d.location, &d.name));
            let call =
                call.set_resource_labels(to_labels(&d.labels)).set_label_fingerprint(fingerprint);
            let op = Box::pin(call.send()).await.api("container:SetLabels")?;
            finish(&self.0, ctx, &d.location, "container:SetLabels", op).await?;
        }
        self.get(ctx, d, &current.id).await
    }

    async fn delete(&self, ctx: &Context, current: &LiveOf<Self>) -> KindResult<()> {
        let location = &current.attributes.location;
        ctx.waiting("deleting the cluster (GKE takes minutes)");
        self.0.count("container", "DeleteCluster");
        let call =
            self.0.clusters.delete_cluster().set_name(cluster_path(&self.0, location, &current.id));
        if let Some(op) = Box::pin(call.send()).await.or_absent("container:DeleteCluster")? {
            finish(&self.0, ctx, location, "container:DeleteCluster", op).await?;
        }
        Ok(())
    }
}
