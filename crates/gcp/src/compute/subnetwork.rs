//! `gcp_compute_subnetwork`: a regional subnetwork with secondary ranges (GKE's pods and
//! services), Private Google Access and flow logs.

use super::by_name;
use crate::GcpClients;
use crate::error::GcpResult;
use crate::operation::finish;
use engine::prelude::*;
use google_cloud_compute_v1::model::subnetwork_log_config::Metadata;
use google_cloud_compute_v1::model::{
    Operation, Subnetwork as Body, SubnetworkLogConfig, SubnetworkSecondaryRange,
    SubnetworksSetPrivateIpGoogleAccessRequest,
};
use google_cloud_gax::paginator::ItemPaginator;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::Arc;

#[derive(Attributes, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct Subnetwork {
    #[attr(replace)]
    pub name: String,
    #[attr(replace)]
    pub region: String,
    /// The network's self link.
    #[attr(replace)]
    pub network: String,
    #[attr(replace, normalize = engine::normalize::cidr)]
    pub ip_cidr_range: String,
    #[attr(in_place)]
    pub private_ip_google_access: bool,
    #[attr(in_place, unordered)]
    pub secondary_ip_ranges: Vec<SecondaryRange>,
    /// Flow logs; `None`: off.
    #[attr(in_place)]
    pub flow_logs: Option<FlowLogs>,
    #[attr(computed)]
    #[serde(default)]
    pub self_link: Option<String>,
    #[attr(computed)]
    #[serde(default)]
    pub gateway_address: Option<String>,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct SecondaryRange {
    pub range_name: String,
    pub ip_cidr_range: String,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct FlowLogs {
    /// Fraction of flows sampled, 0 to 1.
    pub flow_sampling: f64,
    /// `INCLUDE_ALL_METADATA`, `EXCLUDE_ALL_METADATA` or `CUSTOM_METADATA`.
    pub metadata: String,
}

/// Every subnetwork of `region`, by name: one list call per run and region, shared by the
/// kinds that need them.
pub(crate) async fn listed(
    clients: &GcpClients,
    ctx: &Context,
    region: &str,
) -> KindResult<Arc<HashMap<String, Body>>> {
    let key = format!("gcp:{}:{region}:subnetworks", clients.project);
    ctx.memo(&key, || list(clients, region)).await
}

/// Every subnetwork of `region`, by name, read now.
pub(crate) async fn list(clients: &GcpClients, region: &str) -> KindResult<HashMap<String, Body>> {
    clients.count("compute", "ListSubnetworks");
    let call = clients.subnetworks.list().set_project(&clients.project).set_region(region);
    let mut items = call.by_item();
    Ok(collect_by_name!(items, "compute:ListSubnetworks"))
}

pub(crate) struct SubnetworkKind(pub Arc<GcpClients>);

impl SubnetworkKind {
    fn attrs(s: &Body) -> Subnetwork {
        let logs = s.log_config.as_ref().filter(|l| l.enable == Some(true)).map(|l| FlowLogs {
            flow_sampling: f64::from(l.flow_sampling.unwrap_or(0.5)),
            metadata: l
                .metadata
                .as_ref()
                .and_then(|m| m.name())
                .unwrap_or("INCLUDE_ALL_METADATA")
                .into(),
        });
        Subnetwork {
            name: s.name.clone().unwrap_or_default(),
            region: s.region.as_deref().map(super::last_segment).unwrap_or_default().to_string(),
            network: s.network.clone().unwrap_or_default(),
            ip_cidr_range: s.ip_cidr_range.clone().unwrap_or_default(),
            private_ip_google_access: s.private_ip_google_access.unwrap_or(false),
            secondary_ip_ranges: s
                .secondary_ip_ranges
                .iter()
                .map(|r| SecondaryRange {
                    range_name: r.range_name.clone().unwrap_or_default(),
                    ip_cidr_range: r.ip_cidr_range.clone().unwrap_or_default(),
                })
                .collect(),
            flow_logs: logs,
            self_link: s.self_link.clone(),
            gateway_address: s.gateway_address.clone(),
        }
    }

    /// The body's fields an update may patch: secondary ranges and flow logs.
    fn patchable(body: &mut Body, desired: &Subnetwork) {
        body.secondary_ip_ranges = desired
            .secondary_ip_ranges
            .iter()
            .map(|r| {
                let mut range = SubnetworkSecondaryRange::new();
                range.range_name = Some(r.range_name.clone());
                range.ip_cidr_range = Some(r.ip_cidr_range.clone());
                range
            })
            .collect();
        let mut logs = SubnetworkLogConfig::new();
        logs.enable = Some(desired.flow_logs.is_some());
        if let Some(f) = &desired.flow_logs {
            logs.flow_sampling = Some(f.flow_sampling as f32);
            logs.metadata = Some(Metadata::from(f.metadata.as_str()));
        }
        body.log_config = Some(logs);
    }

    /// Every subnetwork of `region`, by name: one list call per run and region.
    async fn all(&self, ctx: &Context, region: &str) -> KindResult<Arc<HashMap<String, Body>>> {
        listed(&self.0, ctx, region).await
    }

    async fn body(&self, region: &str, name: &str) -> KindResult<Body> {
        self.0.count("compute", "GetSubnetwork");
        let call = self.0.subnetworks.get().set_project(&self.0.project).set_region(region);
        call.set_subnetwork(name).send().await.api("compute:GetSubnetwork")
    }

    async fn get(&self, region: &str, name: &str) -> KindResult<Live<Subnetwork>> {
        Ok(Live::new(name, Self::attrs(&self.body(region, name).await?)))
    }

    async fn finish(
        &self,
        ctx: &Context,
        region: &str,
        what: &str,
        op: Operation,
    ) -> KindResult<()> {
        finish(ctx, what, op, |name| async move {
            self.0.count("compute", "GetRegionOperation");
            let call = self.0.subnetworks.get_operation().set_project(&self.0.project);
            let call = call.set_region(region).set_operation(name);
            call.send().await.api("compute:GetRegionOperation")
        })
        .await
    }
}

impl TypedKind for SubnetworkKind {
    type Attrs = Subnetwork;
    const NAME: &'static str = "gcp_compute_subnetwork";

    async fn read(&self, ctx: &Context, requests: &Requests<Self>) -> Found<Self> {
        let region = requests.iter().find_map(|r| r.desired.as_ref().map(|d| d.region.clone()));
        let all = self.all(ctx, &region.unwrap_or_else(|| self.0.region.clone())).await?;
        by_name(requests, |d| d.name.clone(), &all, |name, s| Ok(Live::new(name, Self::attrs(s))))
    }

    async fn create(&self, ctx: &Context, desired: &Self::Attrs) -> Outcome<Self> {
        let mut body = Body::new();
        body.name = Some(desired.name.clone());
        body.network = Some(desired.network.clone());
        body.ip_cidr_range = Some(desired.ip_cidr_range.clone());
        body.private_ip_google_access = Some(desired.private_ip_google_access);
        Self::patchable(&mut body, desired);
        self.0.count("compute", "InsertSubnetwork");
        let call =
            self.0.subnetworks.insert().set_project(&self.0.project).set_region(&desired.region);
        let op = call.set_body(body).send().await.api("compute:InsertSubnetwork")?;
        self.finish(ctx, &desired.region, "compute:InsertSubnetwork", op).await?;
        self.get(&desired.region, &desired.name).await
    }

    async fn update(&self, ctx: &Context, update: Update<'_, Self>) -> Outcome<Self> {
        let Update { current, desired, changes } = update;
        let region = &current.attributes.region;
        if changes.private_ip_google_access {
            let mut request = SubnetworksSetPrivateIpGoogleAccessRequest::new();
            request.private_ip_google_access = Some(desired.private_ip_google_access);
            self.0.count("compute", "SetPrivateIpGoogleAccess");
            let call = self.0.subnetworks.set_private_ip_google_access();
            let call =
                call.set_project(&self.0.project).set_region(region).set_subnetwork(&current.id);
            let op = call.set_body(request).send().await.api("compute:SetPrivateIpGoogleAccess")?;
            self.finish(ctx, region, "compute:SetPrivateIpGoogleAccess", op).await?;
        }
        if changes.secondary_ip_ranges || changes.flow_logs {
            // A patch carries the fingerprint of the subnetwork it changes.
            let live = self.body(region, &current.id).await?;
            let mut body = Body::new();
            body.fingerprint = live.fingerprint;
            Self::patchable(&mut body, desired);
            self.0.count("compute", "PatchSubnetwork");
            let call = self.0.subnetworks.patch().set_project(&self.0.project).set_region(region);
            let op = call
                .set_subnetwork(&current.id)
                .set_body(body)
                .send()
                .await
                .api("compute:PatchSubnetwork")?;
            self.finish(ctx, region, "compute:PatchSubnetwork", op).await?;
        }
        self.get(region, &current.id).await
    }

    async fn delete(&self, ctx: &Context, current: &LiveOf<Self>) -> KindResult<()> {
        let region = &current.attributes.region;
        self.0.count("compute", "DeleteSubnetwork");
        let call = self.0.subnetworks.delete().set_project(&self.0.project).set_region(region);
        if let Some(op) =
            call.set_subnetwork(&current.id).send().await.or_absent("compute:DeleteSubnetwork")?
        {
            self.finish(ctx, region, "compute:DeleteSubnetwork", op).await?;
        }
        Ok(())
    }
}
