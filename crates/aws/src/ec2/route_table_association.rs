//! `aws_route_table_association`: a subnet on a route table.

use super::route_table::route_tables;
use crate::AwsClients;
use crate::error::{api_error, has_code};
use crate::lookup_json::{live, str_attr};
use async_trait::async_trait;
use engine::{Address, Attrs, Context, Field, Kind, KindError, Live, ReadRequest};
use serde_json::json;
use std::sync::Arc;

pub(crate) struct RouteTableAssociation(pub Arc<AwsClients>);

const FIELDS: &[Field] =
    &[Field::replace("subnet_id"), Field::in_place("route_table_id"), Field::computed("id")];

fn desired_str(r: &ReadRequest, name: &str) -> Option<String> {
    r.desired.as_ref().and_then(|d| d.get(name)).and_then(|v| v.as_str()).map(str::to_string)
}

#[async_trait]
impl Kind for RouteTableAssociation {
    fn name(&self) -> &'static str {
        "aws_route_table_association"
    }

    fn fields(&self) -> &'static [Field] {
        FIELDS
    }

    async fn read(
        &self,
        ctx: &Context,
        requests: &[ReadRequest],
    ) -> Result<Vec<Option<Live>>, KindError> {
        let wanted_tables: Vec<String> =
            requests.iter().filter_map(|r| desired_str(r, "route_table_id")).collect();
        let mut tables = route_tables(ctx, &self.0, &wanted_tables).await?;
        // Associations recorded in state but on a table the spec does not name.
        let unknown: Vec<String> = requests
            .iter()
            .filter_map(|r| r.id.clone())
            .filter(|id| {
                !tables.iter().any(|t| {
                    t.associations()
                        .iter()
                        .any(|a| a.route_table_association_id() == Some(id.as_str()))
                })
            })
            .collect();
        if !unknown.is_empty() {
            let extra = self
                .0
                .ec2
                .describe_route_tables()
                .filters(crate::lookup_json::filter(
                    "association.route-table-association-id",
                    unknown,
                ))
                .send()
                .await
                .map_err(|e| api_error("ec2:DescribeRouteTables", e))?;
            tables.extend(extra.route_tables().iter().cloned());
        }
        let associations: Vec<Live> = tables
            .iter()
            .flat_map(|t| {
                t.associations().iter().filter_map(move |a| {
                    let subnet = a.subnet_id()?;
                    Some(live(
                        a.route_table_association_id().unwrap_or_default(),
                        [
                            ("subnet_id", json!(subnet)),
                            ("route_table_id", json!(t.route_table_id().unwrap_or_default())),
                        ],
                    ))
                })
            })
            .collect();
        Ok(requests
            .iter()
            .map(|r| {
                let by_id = r.id.as_ref().and_then(|id| associations.iter().find(|a| &a.id == id));
                let by_subnet = || {
                    let subnet = desired_str(r, "subnet_id")?;
                    associations.iter().find(|a| {
                        a.attributes.get("subnet_id").and_then(|v| v.as_str())
                            == Some(subnet.as_str())
                    })
                };
                by_id.or_else(by_subnet).cloned()
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
        let subnet = str_attr(desired, "subnet_id")?;
        let table = str_attr(desired, "route_table_id")?;
        let out = ec2
            .associate_route_table()
            .subnet_id(subnet)
            .route_table_id(table)
            .send()
            .await
            .map_err(|e| api_error("ec2:AssociateRouteTable", e))?;
        let id = out
            .association_id()
            .ok_or_else(|| KindError::new("AssociateRouteTable returned no id"))?;
        Ok(live(id, [("subnet_id", json!(subnet)), ("route_table_id", json!(table))]))
    }

    async fn update(
        &self,
        _ctx: &Context,
        _address: &Address,
        current: &Live,
        desired: &Attrs,
    ) -> Result<Live, KindError> {
        let ec2 = &self.0.ec2;
        let table = str_attr(desired, "route_table_id")?;
        let out = ec2
            .replace_route_table_association()
            .association_id(&current.id)
            .route_table_id(table)
            .send()
            .await
            .map_err(|e| api_error("ec2:ReplaceRouteTableAssociation", e))?;
        let id = out.new_association_id().unwrap_or(&current.id);
        Ok(live(
            id,
            [
                ("subnet_id", json!(str_attr(desired, "subnet_id")?)),
                ("route_table_id", json!(table)),
            ],
        ))
    }

    async fn delete(
        &self,
        _ctx: &Context,
        _address: &Address,
        current: &Live,
    ) -> Result<(), KindError> {
        let ec2 = &self.0.ec2;
        match ec2.disassociate_route_table().association_id(&current.id).send().await {
            Ok(_) => Ok(()),
            Err(e) if has_code(&e, "InvalidAssociationID.NotFound") => Ok(()),
            Err(e) => Err(api_error("ec2:DisassociateRouteTable", e)),
        }
    }
}
