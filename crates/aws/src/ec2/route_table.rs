//! `aws_route_table`, and the batched read of route tables that routes and associations share
//! (one `DescribeRouteTables` for everything the spec owns per refresh).

use super::{Ec2Tags, tag_spec, tags_of};
use crate::AwsClients;
use crate::error::{Listing, SdkResult, required};
use crate::lookup::{filter, match_requests, owned_filter};
use crate::tagging::update_tags;
use aws_sdk_ec2::types::{Filter, ResourceType, RouteTable as Ec2RouteTable};
use engine::TAG_SPEC;
use engine::prelude::*;
use engine::retry::read_back;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

#[derive(Attributes, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct RouteTable {
    #[attr(replace)]
    pub vpc_id: String,
    #[attr(in_place, tags)]
    pub tags: Tags,
}

pub(crate) struct RouteTableKind(pub Arc<AwsClients>);

/// Memo key of the owned route tables of this run.
const MEMO: &str = "ec2:route-tables";

/// The route tables `filter` selects, as EC2 answers (with their routes and associations).
pub(super) async fn describe(
    clients: &AwsClients,
    filter: Filter,
) -> KindResult<Vec<Ec2RouteTable>> {
    let pages = clients.ec2.describe_route_tables().filters(filter).into_paginator();
    pages.items().send().all("ec2:DescribeRouteTables").await
}

/// The route tables the spec owns, read once per refresh (once for every spec of the run when
/// their refreshes share reads, each keeping its own).
async fn owned_tables(ctx: &Context, clients: &AwsClients) -> KindResult<Vec<Ec2RouteTable>> {
    let specs = ctx.run_specs();
    if specs.len() == 1 {
        let owned = ctx.memo(MEMO, || describe(clients, owned_filter(ctx))).await?;
        return Ok(owned.as_ref().clone());
    }
    let by_run = filter(&format!("tag:{TAG_SPEC}"), specs);
    let all = ctx.run_memo(MEMO, || describe(clients, by_run)).await?;
    let spec = ctx.spec_name();
    let ours = |t: &&Ec2RouteTable| {
        t.tags().iter().any(|tag| tag.key() == Some(TAG_SPEC) && tag.value() == Some(spec))
    };
    Ok(all.iter().filter(ours).cloned().collect())
}

/// The spec's route tables, plus any of `ids` not among them: one call for everything owned
/// (shared by route tables, routes and associations within a refresh), one more for the rest.
pub(super) async fn route_tables(
    ctx: &Context,
    clients: &AwsClients,
    ids: &[String],
) -> KindResult<Vec<Ec2RouteTable>> {
    let mut tables: Vec<Ec2RouteTable> = owned_tables(ctx, clients).await?;
    let mut missing: Vec<String> = ids
        .iter()
        .filter(|id| !tables.iter().any(|t| t.route_table_id() == Some(id.as_str())))
        .cloned()
        .collect();
    missing.sort();
    missing.dedup();
    if !missing.is_empty() {
        tables.extend(describe(clients, filter("route-table-id", missing)).await?);
    }
    Ok(tables)
}

fn to_live(t: &Ec2RouteTable) -> KindResult<Live<RouteTable>> {
    let table =
        RouteTable { vpc_id: t.vpc_id().unwrap_or_default().to_string(), tags: tags_of(t.tags()) };
    Ok(Live::new(required(t.route_table_id(), "ec2:DescribeRouteTables: RouteTableId")?, table))
}

impl TypedKind for RouteTableKind {
    type Attrs = RouteTable;
    const NAME: &'static str = "aws_route_table";

    async fn read(&self, ctx: &Context, requests: &Requests<Self>) -> Found<Self> {
        let ids: Vec<String> = requests.iter().filter_map(|r| r.id.clone()).collect();
        let tables = route_tables(ctx, &self.0, &ids).await?;
        let found = tables.iter().map(to_live).collect::<KindResult<Vec<_>>>()?;
        Ok(match_requests(requests, &found))
    }

    async fn create(&self, _: &Context, desired: &Self::Attrs) -> Outcome<Self> {
        let tags = tag_spec(ResourceType::RouteTable, &desired.tags);
        let call = self.0.ec2.create_route_table().vpc_id(&desired.vpc_id).tag_specifications(tags);
        let out = call.send().await.api("ec2:CreateRouteTable")?;
        let id = out.route_table().and_then(|t| t.route_table_id());
        let id = required(id, "ec2:CreateRouteTable: RouteTableId")?;
        read_back(&format!("route table {id}"), || async {
            let found = describe(&self.0, filter("route-table-id", vec![id.into()])).await?;
            found.first().map(to_live).transpose()
        })
        .await
    }

    async fn update(&self, _: &Context, update: Update<'_, Self>) -> Outcome<Self> {
        update_tags(&Ec2Tags(&self.0.ec2), &update.current.id, update).await
    }

    async fn delete(&self, _: &Context, current: &LiveOf<Self>) -> KindResult<()> {
        let call = self.0.ec2.delete_route_table().route_table_id(&current.id);
        call.send().await.or_gone("ec2:DeleteRouteTable", &["InvalidRouteTableID.NotFound"])
    }
}
