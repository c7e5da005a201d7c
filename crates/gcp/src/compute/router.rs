//! `gcp_compute_router`: a Cloud Router, home of Cloud NAT (`gcp_compute_router_nat`, which
//! this kind's reads leave alone).

use super::by_name;
use crate::GcpClients;
use crate::error::GcpResult;
use crate::operation::finish;
use engine::prelude::*;
use google_cloud_compute_v1::model::{Operation, Router as Body};
use google_cloud_gax::paginator::ItemPaginator;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::Arc;

#[derive(Attributes, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct Router {
    #[attr(replace)]
    pub name: String,
    #[attr(replace)]
    pub region: String,
    /// The network's self link.
    #[attr(replace)]
    pub network: String,
    #[attr(computed)]
    #[serde(default)]
    pub self_link: Option<String>,
}

pub(crate) struct RouterKind(pub Arc<GcpClients>);

/// Every router of `region`, by name: one list call per run and region, shared with the NATs.
pub(crate) async fn routers(
    clients: &GcpClients,
    ctx: &Context,
    region: &str,
) -> KindResult<Arc<HashMap<String, Body>>> {
    let key = format!("gcp:{}:{region}:routers", clients.project);
    ctx.memo(&key, || async {
        clients.count("compute", "ListRouters");
        let call = clients.routers.list().set_project(&clients.project).set_region(region);
        let mut items = call.by_item();
        Ok::<_, KindError>(collect_by_name!(items, "compute:ListRouters"))
    })
    .await
}

/// One router as it is now.
pub(crate) async fn router(clients: &GcpClients, region: &str, name: &str) -> KindResult<Body> {
    clients.count("compute", "GetRouter");
    let call = clients.routers.get().set_project(&clients.project).set_region(region);
    call.set_router(name).send().await.api("compute:GetRouter")
}

/// Waits for a regional operation of the routers' API.
pub(crate) async fn finish_router_op(
    clients: &GcpClients,
    ctx: &Context,
    region: &str,
    what: &str,
    op: Operation,
) -> KindResult<()> {
    finish(ctx, what, op, |name| async move {
        clients.count("compute", "GetRegionOperation");
        let call = clients.routers.get_operation().set_project(&clients.project);
        call.set_region(region).set_operation(name).send().await.api("compute:GetRegionOperation")
    })
    .await
}

impl RouterKind {
    fn attrs(r: &Body) -> Router {
        Router {
            name: r.name.clone().unwrap_or_default(),
            region: r.region.as_deref().map(super::last_segment).unwrap_or_default().to_string(),
            network: r.network.clone().unwrap_or_default(),
            self_link: r.self_link.clone(),
        }
    }
}

impl TypedKind for RouterKind {
    type Attrs = Router;
    const NAME: &'static str = "gcp_compute_router";

    async fn read(&self, ctx: &Context, requests: &Requests<Self>) -> Found<Self> {
        let region = requests.iter().find_map(|r| r.desired.as_ref().map(|d| d.region.clone()));
        let all = routers(&self.0, ctx, &region.unwrap_or_else(|| self.0.region.clone())).await?;
        by_name(requests, |d| d.name.clone(), &all, |name, r| Ok(Live::new(name, Self::attrs(r))))
    }

    async fn create(&self, ctx: &Context, desired: &Self::Attrs) -> Outcome<Self> {
        let mut body = Body::new();
        body.name = Some(desired.name.clone());
        body.network = Some(desired.network.clone());
        self.0.count("compute", "InsertRouter");
        let call = self.0.routers.insert().set_project(&self.0.project).set_region(&desired.region);
        let op = call.set_body(body).send().await.api("compute:InsertRouter")?;
        finish_router_op(&self.0, ctx, &desired.region, "compute:InsertRouter", op).await?;
        let r = router(&self.0, &desired.region, &desired.name).await?;
        Ok(Live::new(&desired.name, Self::attrs(&r)))
    }

    async fn update(&self, _: &Context, update: Update<'_, Self>) -> Outcome<Self> {
        // Every field is replaced, never updated.
        let current = update.current;
        let r = router(&self.0, &current.attributes.region, &current.id).await?;
        Ok(Live::new(&current.id, Self::attrs(&r)))
    }

    async fn delete(&self, ctx: &Context, current: &LiveOf<Self>) -> KindResult<()> {
        let region = &current.attributes.region;
        self.0.count("compute", "DeleteRouter");
        let call = self.0.routers.delete().set_project(&self.0.project).set_region(region);
        if let Some(op) =
            call.set_router(&current.id).send().await.or_absent("compute:DeleteRouter")?
        {
            finish_router_op(&self.0, ctx, region, "compute:DeleteRouter", op).await?;
        }
        Ok(())
    }
}
