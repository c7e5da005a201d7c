//! `aws_route_table`, and the batched read of route tables that routes and associations share.

use crate::AwsClients;
use crate::error::{api_error, has_code};
use crate::lookup_json::{filter, live, match_requests, missing_ids, owned_filter, str_attr};
use crate::settle::read_back;
use crate::tags;
use async_trait::async_trait;
use aws_sdk_ec2::types::{ResourceType, RouteTable as Ec2RouteTable};
use engine::{Address, Attrs, Context, Field, Kind, KindError, Live, ReadRequest};
use serde_json::json;
use std::sync::Arc;

pub(crate) struct RouteTable(pub Arc<AwsClients>);

const FIELDS: &[Field] =
    &[Field::replace("vpc_id"), Field::in_place("tags"), Field::computed("id")];

/// Memo key of the owned route tables of this run.
const MEMO: &str = "ec2:route-tables";

async fn describe(
    shared: &AwsClients,
    filter: aws_sdk_ec2::types::Filter,
) -> Result<Vec<Ec2RouteTable>, KindError> {
    shared
        .ec2
        .describe_route_tables()
        .filters(filter)
        .into_paginator()
        .items()
        .send()
        .collect::<Result<_, _>>()
        .await
        .map_err(|e| api_error("ec2:DescribeRouteTables", e))
}

/// The spec's route tables, plus any of `ids` not among them: one call for everything owned
/// (shared by route tables, routes and associations within a refresh), one more for the rest.
pub(crate) async fn route_tables(
    ctx: &Context,
    shared: &AwsClients,
    ids: &[String],
) -> Result<Vec<Ec2RouteTable>, KindError> {
    let owned = ctx.memo(MEMO, || describe(shared, owned_filter(ctx))).await?;
    let mut tables: Vec<Ec2RouteTable> = owned.as_ref().clone();
    let missing: Vec<String> = ids
        .iter()
        .filter(|id| !tables.iter().any(|t| t.route_table_id() == Some(id.as_str())))
        .cloned()
        .collect();
    if !missing.is_empty() {
        tables.extend(describe(shared, filter("route-table-id", missing)).await?);
    }
    Ok(tables)
}

fn to_live(t: &Ec2RouteTable) -> Live {
    live(
        t.route_table_id().unwrap_or_default(),
        [("vpc_id", json!(t.vpc_id().unwrap_or_default())), ("tags", tags::ec2_to_json(t.tags()))],
    )
}

#[async_trait]
impl Kind for RouteTable {
    fn name(&self) -> &'static str {
        "aws_route_table"
    }

    fn fields(&self) -> &'static [Field] {
        FIELDS
    }

    async fn read(
        &self,
        ctx: &Context,
        requests: &[ReadRequest],
    ) -> Result<Vec<Option<Live>>, KindError> {
        let owned: Vec<Live> = route_tables(ctx, &self.0, &[]).await?.iter().map(to_live).collect();
        let missing = missing_ids(requests, &owned);
        let mut found = owned;
        if !missing.is_empty() {
            found.extend(route_tables(ctx, &self.0, &missing).await?.iter().map(to_live));
        }
        Ok(match_requests(requests, &found))
    }

    async fn create(
        &self,
        _ctx: &Context,
        _address: &Address,
        desired: &Attrs,
    ) -> Result<Live, KindError> {
        let ec2 = &self.0.ec2;
        let out = ec2
            .create_route_table()
            .vpc_id(str_attr(desired, "vpc_id")?)
            .tag_specifications(tags::ec2_spec(ResourceType::RouteTable, desired))
            .send()
            .await
            .map_err(|e| api_error("ec2:CreateRouteTable", e))?;
        let id = out
            .route_table()
            .and_then(|t| t.route_table_id())
            .ok_or_else(|| KindError::new("CreateRouteTable returned no id"))?
            .to_string();
        read_back(&format!("route table {id}"), || async {
            Ok(describe(&self.0, filter("route-table-id", vec![id.clone()]))
                .await?
                .first()
                .map(to_live))
        })
        .await
    }

    async fn update(
        &self,
        _ctx: &Context,
        _address: &Address,
        current: &Live,
        desired: &Attrs,
    ) -> Result<Live, KindError> {
        tags::ec2_retag(&self.0.ec2, current, desired).await
    }

    async fn delete(
        &self,
        _ctx: &Context,
        _address: &Address,
        current: &Live,
    ) -> Result<(), KindError> {
        let ec2 = &self.0.ec2;
        match ec2.delete_route_table().route_table_id(&current.id).send().await {
            Ok(_) => Ok(()),
            Err(e) if has_code(&e, "InvalidRouteTableID.NotFound") => Ok(()),
            Err(e) => Err(api_error("ec2:DeleteRouteTable", e)),
        }
    }
}
