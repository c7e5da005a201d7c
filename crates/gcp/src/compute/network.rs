//! `gcp_compute_network`: a VPC network with custom subnetworks.

use super::by_name;
use crate::GcpClients;
use crate::error::GcpResult;
use crate::operation::finish;
use engine::prelude::*;
use google_cloud_compute_v1::model::network_routing_config::RoutingMode;
use google_cloud_compute_v1::model::{Network as Body, NetworkRoutingConfig};
use google_cloud_gax::paginator::ItemPaginator;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::Arc;

#[derive(Attributes, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct Network {
    #[attr(replace)]
    pub name: String,
    #[attr(replace)]
    pub auto_create_subnetworks: bool,
    /// `REGIONAL` or `GLOBAL` dynamic routing.
    #[attr(in_place)]
    pub routing_mode: String,
    #[attr(computed)]
    #[serde(default)]
    pub self_link: Option<String>,
}

pub(crate) struct NetworkKind(pub Arc<GcpClients>);

impl NetworkKind {
    fn attrs(n: &Body) -> Network {
        Network {
            name: n.name.clone().unwrap_or_default(),
            auto_create_subnetworks: n.auto_create_subnetworks.unwrap_or(false),
            routing_mode: n
                .routing_config
                .as_ref()
                .and_then(|r| r.routing_mode.as_ref())
                .and_then(|m| m.name())
                .unwrap_or("REGIONAL")
                .to_string(),
            self_link: n.self_link.clone(),
        }
    }

    /// Every network of the project, by name: one list call per run.
    async fn all(&self, ctx: &Context) -> KindResult<Arc<HashMap<String, Body>>> {
        let key = format!("gcp:{}:networks", self.0.project);
        ctx.memo(&key, || async {
            self.0.count("compute", "ListNetworks");
            let mut items = self.0.networks.list().set_project(&self.0.project).by_item();
            Ok::<_, KindError>(collect_by_name!(items, "compute:ListNetworks"))
        })
        .await
    }

    async fn get(&self, name: &str) -> KindResult<Live<Network>> {
        self.0.count("compute", "GetNetwork");
        let call = self.0.networks.get().set_project(&self.0.project).set_network(name);
        let n = call.send().await.api("compute:GetNetwork")?;
        Ok(Live::new(name, Self::attrs(&n)))
    }

    async fn finish(
        &self,
        ctx: &Context,
        what: &str,
        op: google_cloud_compute_v1::model::Operation,
    ) -> KindResult<()> {
        finish(ctx, what, op, |name| async move {
            self.0.count("compute", "GetGlobalOperation");
            let call =
                self.0.networks.get_operation().set_project(&self.0.project).set_operation(name);
            call.send().await.api("compute:GetGlobalOperation")
        })
        .await
    }
}

fn routing(mode: &str) -> NetworkRoutingConfig {
    let mut config = NetworkRoutingConfig::new();
    config.routing_mode = Some(RoutingMode::from(mode));
    config
}

impl TypedKind for NetworkKind {
    type Attrs = Network;
    const NAME: &'static str = "gcp_compute_network";

    async fn read(&self, ctx: &Context, requests: &Requests<Self>) -> Found<Self> {
        let all = self.all(ctx).await?;
        by_name(requests, |d| d.name.clone(), &all, |name, n| Ok(Live::new(name, Self::attrs(n))))
    }

    async fn create(&self, ctx: &Context, desired: &Self::Attrs) -> Outcome<Self> {
        let mut body = Body::new();
        body.name = Some(desired.name.clone());
        body.auto_create_subnetworks = Some(desired.auto_create_subnetworks);
        body.routing_config = Some(routing(&desired.routing_mode));
        self.0.count("compute", "InsertNetwork");
        let call = self.0.networks.insert().set_project(&self.0.project).set_body(body);
        let op = call.send().await.api("compute:InsertNetwork")?;
        self.finish(ctx, "compute:InsertNetwork", op).await?;
        self.get(&desired.name).await
    }

    async fn update(&self, ctx: &Context, update: Update<'_, Self>) -> Outcome<Self> {
        let Update { current, desired, changes } = update;
        if changes.routing_mode {
            let mut body = Body::new();
            body.routing_config = Some(routing(&desired.routing_mode));
            self.0.count("compute", "PatchNetwork");
            let call =
                self.0.networks.patch().set_project(&self.0.project).set_network(&current.id);
            let op = call.set_body(body).send().await.api("compute:PatchNetwork")?;
            self.finish(ctx, "compute:PatchNetwork", op).await?;
        }
        self.get(&current.id).await
    }

    async fn delete(&self, ctx: &Context, current: &LiveOf<Self>) -> KindResult<()> {
        self.0.count("compute", "DeleteNetwork");
        let call = self.0.networks.delete().set_project(&self.0.project).set_network(&current.id);
        if let Some(op) = call.send().await.or_absent("compute:DeleteNetwork")? {
            self.finish(ctx, "compute:DeleteNetwork", op).await?;
        }
        Ok(())
    }
}
