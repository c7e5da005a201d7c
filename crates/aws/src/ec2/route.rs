//! `aws_route`: one route of a route table (to an internet or NAT gateway).

use super::route_table::route_tables;
use crate::AwsClients;
use crate::error::{api_error, has_code};
use crate::lookup_json::{live, str_attr};
use async_trait::async_trait;
use engine::{Address, Attrs, Context, Field, Kind, KindError, Live, ReadRequest};
use serde_json::{Value as Json, json};
use std::sync::Arc;

pub(crate) struct Route(pub Arc<AwsClients>);

const FIELDS: &[Field] = &[
    Field::replace("route_table_id"),
    Field::replace("destination_cidr_block"),
    Field::in_place("gateway_id"),
    Field::in_place("nat_gateway_id"),
    Field::computed("id"),
];

/// Route ids are `rtb-id/destination`.
fn route_id(table: &str, destination: &str) -> String {
    format!("{table}/{destination}")
}

/// The table and destination a request is about: from the spec, else from the recorded id.
fn target(r: &ReadRequest) -> Option<(String, String)> {
    let from_desired = r.desired.as_ref().and_then(|d| {
        Some((
            d.get("route_table_id")?.as_str()?.to_string(),
            d.get("destination_cidr_block")?.as_str()?.to_string(),
        ))
    });
    from_desired.or_else(|| {
        let (t, d) = r.id.as_ref()?.split_once('/')?;
        Some((t.to_string(), d.to_string()))
    })
}

/// Adds the target of the route (only the fields that are set).
fn route_live(table: &str, destination: &str, gateway: Option<&str>, nat: Option<&str>) -> Live {
    let mut l = live(
        route_id(table, destination),
        [("route_table_id", json!(table)), ("destination_cidr_block", json!(destination))],
    );
    if let Some(g) = gateway {
        l.attributes.insert("gateway_id".into(), json!(g));
    }
    if let Some(n) = nat {
        l.attributes.insert("nat_gateway_id".into(), json!(n));
    }
    l
}

#[async_trait]
impl Kind for Route {
    fn name(&self) -> &'static str {
        "aws_route"
    }

    fn fields(&self) -> &'static [Field] {
        FIELDS
    }

    async fn read(
        &self,
        ctx: &Context,
        requests: &[ReadRequest],
    ) -> Result<Vec<Option<Live>>, KindError> {
        let targets: Vec<Option<(String, String)>> = requests.iter().map(target).collect();
        let ids: Vec<String> = targets.iter().flatten().map(|(t, _)| t.clone()).collect();
        let tables = route_tables(ctx, &self.0, &ids).await?;
        Ok(targets
            .iter()
            .map(|t| {
                let (table, dest) = t.as_ref()?;
                let rt = tables.iter().find(|x| x.route_table_id() == Some(table.as_str()))?;
                let r = rt
                    .routes()
                    .iter()
                    .find(|r| r.destination_cidr_block() == Some(dest.as_str()))?;
                Some(route_live(table, dest, r.gateway_id(), r.nat_gateway_id()))
            })
            .collect())
    }

    async fn create(
        &self,
        _ctx: &Context,
        _address: &Address,
        desired: &Attrs,
    ) -> Result<Live, KindError> {
        let ec2 = &self.0.ec2;
        let table = str_attr(desired, "route_table_id")?;
        let dest = str_attr(desired, "destination_cidr_block")?;
        let gateway = desired.get("gateway_id").and_then(Json::as_str);
        let nat = desired.get("nat_gateway_id").and_then(Json::as_str);
        ec2.create_route()
            .route_table_id(table)
            .destination_cidr_block(dest)
            .set_gateway_id(gateway.map(str::to_string))
            .set_nat_gateway_id(nat.map(str::to_string))
            .send()
            .await
            .map_err(|e| api_error("ec2:CreateRoute", e))?;
        Ok(route_live(table, dest, gateway, nat))
    }

    async fn update(
        &self,
        ctx: &Context,
        address: &Address,
        _current: &Live,
        desired: &Attrs,
    ) -> Result<Live, KindError> {
        let ec2 = &self.0.ec2;
        let table = str_attr(desired, "route_table_id")?;
        let dest = str_attr(desired, "destination_cidr_block")?;
        let gateway = desired.get("gateway_id").and_then(Json::as_str);
        let nat = desired.get("nat_gateway_id").and_then(Json::as_str);
        let replaced = ec2
            .replace_route()
            .route_table_id(table)
            .destination_cidr_block(dest)
            .set_gateway_id(gateway.map(str::to_string))
            .set_nat_gateway_id(nat.map(str::to_string))
            .send()
            .await;
        match replaced {
            Ok(_) => {}
            // Deleted by someone else since the plan: create it again.
            Err(e) if has_code(&e, "InvalidRoute.NotFound") => {
                self.create(ctx, address, desired).await?;
            }
            Err(e) => return Err(api_error("ec2:ReplaceRoute", e)),
        }
        Ok(route_live(table, dest, gateway, nat))
    }

    async fn delete(
        &self,
        _ctx: &Context,
        _address: &Address,
        current: &Live,
    ) -> Result<(), KindError> {
        let ec2 = &self.0.ec2;
        let (table, dest) = current
            .id
            .split_once('/')
            .ok_or_else(|| KindError::new(format!("bad route id {}", current.id)))?;
        match ec2.delete_route().route_table_id(table).destination_cidr_block(dest).send().await {
            Ok(_) => Ok(()),
            Err(e)
                if has_code(&e, "InvalidRoute.NotFound")
                    || has_code(&e, "InvalidRouteTableID.NotFound") =>
            {
                Ok(())
            }
            Err(e) => Err(api_error("ec2:DeleteRoute", e)),
        }
    }
}
