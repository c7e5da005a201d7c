//! `aws_route_table_association`: a subnet on a route table. Associations have no tags: they
//! are read through the route tables (the batched read shared with `aws_route_table`), found
//! by id, else by the subnet the spec names (a subnet has one association).

use super::route_table::{describe, route_tables};
use crate::AwsClients;
use crate::error::{SdkResult, required};
use crate::lookup::{filter, missing_ids};
use aws_sdk_ec2::types::RouteTable;
use engine::prelude::*;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

#[derive(Attributes, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct RouteTableAssociation {
    #[attr(replace)]
    pub subnet_id: String,
    #[attr(in_place)]
    pub route_table_id: String,
}

pub(crate) struct RouteTableAssociationKind(pub Arc<AwsClients>);

/// The subnet associations of `tables` (a main table's association has no subnet).
fn associations(tables: &[RouteTable]) -> Vec<Live<RouteTableAssociation>> {
    let mut out = Vec::new();
    for t in tables {
        let table = t.route_table_id().unwrap_or_default();
        for a in t.associations() {
            if let (Some(id), Some(subnet)) = (a.route_table_association_id(), a.subnet_id()) {
                let attrs = RouteTableAssociation {
                    subnet_id: subnet.into(),
                    route_table_id: table.into(),
                };
                out.push(Live::new(id, attrs));
            }
        }
    }
    out
}

impl TypedKind for RouteTableAssociationKind {
    type Attrs = RouteTableAssociation;
    const NAME: &'static str = "aws_route_table_association";

    async fn read(&self, ctx: &Context, requests: &Requests<Self>) -> Found<Self> {
        let wanted: Vec<String> = requests
            .iter()
            .filter_map(|r| Some(r.desired.as_ref()?.route_table_id.clone()))
            .collect();
        let mut tables = route_tables(ctx, &self.0, &wanted).await?;
        // Associations recorded in state but on a table the spec does not name.
        let unknown = missing_ids(requests, &associations(&tables));
        if !unknown.is_empty() {
            let by_id = filter("association.route-table-association-id", unknown);
            tables.extend(describe(&self.0, by_id).await?);
        }
        let found = associations(&tables);
        Ok(requests
            .iter()
            .map(|r| {
                let by_id = r.id.as_ref().and_then(|id| found.iter().find(|a| &a.id == id));
                let by_subnet = || {
                    let subnet = &r.desired.as_ref()?.subnet_id;
                    found.iter().find(|a| &a.attributes.subnet_id == subnet)
                };
                by_id.or_else(by_subnet).cloned()
            })
            .collect())
    }

    async fn create(&self, _: &Context, desired: &Self::Attrs) -> Outcome<Self> {
        let call = self.0.ec2.associate_route_table().subnet_id(&desired.subnet_id);
        let call = call.route_table_id(&desired.route_table_id);
        let out = call.send().await.api("ec2:AssociateRouteTable")?;
        let id = required(out.association_id(), "ec2:AssociateRouteTable: AssociationId")?;
        Ok(Live::new(id, desired.clone()))
    }

    async fn update(&self, _: &Context, update: Update<'_, Self>) -> Outcome<Self> {
        let Update { current, desired, .. } = update;
        let call = self.0.ec2.replace_route_table_association().association_id(&current.id);
        let call = call.route_table_id(&desired.route_table_id);
        let out = call.send().await.api("ec2:ReplaceRouteTableAssociation")?;
        let id = out.new_association_id();
        let id = required(id, "ec2:ReplaceRouteTableAssociation: NewAssociationId")?;
        Ok(Live::new(id, desired.clone()))
    }

    async fn delete(&self, _: &Context, current: &LiveOf<Self>) -> KindResult<()> {
        let call = self.0.ec2.disassociate_route_table().association_id(&current.id);
        call.send().await.or_gone("ec2:DisassociateRouteTable", &["InvalidAssociationID.NotFound"])
    }
}
