//! `aws_route`: one route of a route table (to an internet or NAT gateway). Routes have no id
//! and no tags: the id is `rtb-id/destination`, and they are read through the route tables
//! (the batched read shared with `aws_route_table`).

use super::route_table::route_tables;
use crate::AwsClients;
use crate::error::SdkResult;
use engine::prelude::*;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

#[derive(Attributes, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct Route {
    #[attr(replace)]
    pub route_table_id: String,
    #[attr(replace, normalize = engine::normalize::cidr)]
    pub destination_cidr_block: String,
    #[attr(in_place)]
    pub gateway_id: Option<String>,
    #[attr(in_place)]
    pub nat_gateway_id: Option<String>,
}

pub(crate) struct RouteKind(pub Arc<AwsClients>);

/// The route as the engine knows it: its id is the table and the destination.
fn live(route: Route) -> Live<Route> {
    Live::new(format!("{}/{}", route.route_table_id, route.destination_cidr_block), route)
}

/// The table and destination a request is about: from the spec, else from the recorded id.
fn target(r: &ReadRequest<Route>) -> Option<(String, String)> {
    match (&r.desired, &r.id) {
        (Some(d), _) => Some((d.route_table_id.clone(), d.destination_cidr_block.clone())),
        (None, id) => id.as_ref()?.split_once('/').map(|(t, d)| (t.into(), d.into())),
    }
}

impl RouteKind {
    /// Sets the route's target: replaces it, or creates it when it does not exist (`replace`
    /// false, or deleted by someone else since the plan).
    async fn put(&self, route: &Route, replace: bool) -> KindResult<Live<Route>> {
        let ec2 = &self.0.ec2;
        let (table, dest) = (&route.route_table_id, &route.destination_cidr_block);
        if replace {
            let call = ec2.replace_route().route_table_id(table).destination_cidr_block(dest);
            let call = call.set_gateway_id(route.gateway_id.clone());
            let call = call.set_nat_gateway_id(route.nat_gateway_id.clone());
            let replaced =
                call.send().await.or_absent("ec2:ReplaceRoute", &["InvalidRoute.NotFound"]);
            if replaced?.is_some() {
                return Ok(live(route.clone()));
            }
        }
        let call = ec2.create_route().route_table_id(table).destination_cidr_block(dest);
        let call = call.set_gateway_id(route.gateway_id.clone());
        let call = call.set_nat_gateway_id(route.nat_gateway_id.clone());
        call.send().await.api("ec2:CreateRoute")?;
        Ok(live(route.clone()))
    }
}

impl TypedKind for RouteKind {
    type Attrs = Route;
    const NAME: &'static str = "aws_route";

    async fn read(&self, ctx: &Context, requests: &Requests<Self>) -> Found<Self> {
        let targets: Vec<Option<(String, String)>> = requests.iter().map(target).collect();
        let ids: Vec<String> = targets.iter().flatten().map(|(t, _)| t.clone()).collect();
        let tables = route_tables(ctx, &self.0, &ids).await?;
        Ok(targets
            .into_iter()
            .map(|t| {
                let (table, dest) = t?;
                let rt = tables.iter().find(|x| x.route_table_id() == Some(table.as_str()))?;
                let r = rt
                    .routes()
                    .iter()
                    .find(|r| r.destination_cidr_block() == Some(dest.as_str()))?;
                Some(live(Route {
                    route_table_id: table,
                    destination_cidr_block: dest,
                    gateway_id: r.gateway_id().map(str::to_string),
                    nat_gateway_id: r.nat_gateway_id().map(str::to_string),
                }))
            })
            .collect())
    }

    async fn create(&self, _: &Context, desired: &Self::Attrs) -> Outcome<Self> {
        self.put(desired, false).await
    }

    async fn update(&self, _: &Context, update: Update<'_, Self>) -> Outcome<Self> {
        let Update { desired, .. } = update;
        self.put(desired, true).await
    }

    async fn delete(&self, _: &Context, current: &LiveOf<Self>) -> KindResult<()> {
        let route = &current.attributes;
        let call = self.0.ec2.delete_route().route_table_id(&route.route_table_id);
        let call = call.destination_cidr_block(&route.destination_cidr_block);
        let gone = ["InvalidRoute.NotFound", "InvalidRouteTableID.NotFound"];
        call.send().await.or_gone("ec2:DeleteRoute", &gone)
    }
}
