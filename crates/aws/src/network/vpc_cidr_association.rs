//! `aws_vpc_cidr_association`: a secondary IPv4 CIDR of the VPC.

use super::lookup::owned;
use super::lookup::str_attr;
use super::vpc::Vpc;
use crate::error::{api_error, has_code};
use crate::provider::Shared;
use crate::settle::read_back;
use async_trait::async_trait;
use engine::{Address, Attrs, Context, Field, Kind, KindError, Live, ReadRequest};
use serde_json::{Value as Json, json};
use std::sync::Arc;

pub(crate) struct VpcCidrAssociation(pub Arc<Shared>);

const FIELDS: &[Field] = &[
    Field::replace("vpc_id"),
    Field::replace("cidr_block"),
    Field::computed("id"),
];

/// The secondary CIDR associations of `vpcs` (VPCs as the VPC kind reads them).
fn associations(vpcs: &[Live]) -> Vec<Live> {
    let mut out = Vec::new();
    for v in vpcs {
        let Some(list) = v
            .attributes
            .get("cidr_associations")
            .and_then(Json::as_array)
        else {
            continue;
        };
        for a in list {
            let state = a.get("state").and_then(Json::as_str).unwrap_or_default();
            if !matches!(state, "associated" | "associating") {
                continue;
            }
            out.push(super::lookup::live(
                a.get("id").and_then(Json::as_str).unwrap_or_default(),
                [
                    ("vpc_id", json!(v.id)),
                    (
                        "cidr_block",
                        a.get("cidr_block").cloned().unwrap_or_default(),
                    ),
                ],
            ));
        }
    }
    out
}

impl VpcCidrAssociation {
    fn vpcs(&self) -> Vpc {
        Vpc(self.0.clone())
    }

    async fn describe(&self, vpc_ids: Vec<String>) -> Result<Vec<Live>, KindError> {
        if vpc_ids.is_empty() {
            return Ok(vec![]);
        }
        Ok(associations(
            &self
                .vpcs()
                .describe(super::lookup::filter("vpc-id", vpc_ids))
                .await?,
        ))
    }
}

/// The VPC id of a request: desired, or recorded.
fn vpc_of(r: &ReadRequest) -> Option<String> {
    r.desired
        .as_ref()
        .and_then(|d| d.get("vpc_id"))
        .and_then(|v| v.as_str())
        .map(str::to_string)
}

#[async_trait]
impl Kind for VpcCidrAssociation {
    fn name(&self) -> &'static str {
        "aws_vpc_cidr_association"
    }

    fn fields(&self) -> &'static [Field] {
        FIELDS
    }

    async fn read(
        &self,
        ctx: &Context,
        requests: &[ReadRequest],
    ) -> Result<Vec<Option<Live>>, KindError> {
        let vpc = self.vpcs();
        let owned = owned(ctx, "vpc-id", &|f| vpc.describe(f)).await?;
        let mut found = associations(&owned);
        let mut others: Vec<String> = requests
            .iter()
            .filter_map(vpc_of)
            .filter(|v| !owned.iter().any(|o| &o.id == v))
            .collect();
        others.sort();
        others.dedup();
        found.extend(self.describe(others).await?);
        // Recorded associations whose VPC the spec no longer names: look them up by id.
        let unmatched: Vec<&str> = requests
            .iter()
            .filter_map(|r| r.id.as_deref())
            .filter(|id| !found.iter().any(|l| l.id == *id))
            .collect();
        if !unmatched.is_empty() {
            let ec2 = &self.0.clients()?.ec2;
            let vpcs: Vec<_> = ec2
                .describe_vpcs()
                .filters(super::lookup::filter(
                    "cidr-block-association.association-id",
                    unmatched.iter().map(|s| s.to_string()).collect(),
                ))
                .send()
                .await
                .map_err(|e| api_error("ec2:DescribeVpcs", e))?
                .vpcs()
                .iter()
                .filter_map(|v| v.vpc_id().map(str::to_string))
                .collect();
            found.extend(self.describe(vpcs).await?);
        }
        Ok(requests
            .iter()
            .map(|r| {
                let by_id =
                    r.id.as_ref()
                        .and_then(|id| found.iter().find(|l| &l.id == id));
                let by_cidr = || {
                    let d = r.desired.as_ref()?;
                    found.iter().find(|l| {
                        l.attributes.get("cidr_block") == d.get("cidr_block")
                            && l.attributes.get("vpc_id") == d.get("vpc_id")
                    })
                };
                by_id.or_else(by_cidr).cloned()
            })
            .collect())
    }

    async fn create(
        &self,
        _ctx: &Context,
        _address: &Address,
        desired: &Attrs,
    ) -> Result<Live, KindError> {
        let ec2 = &self.0.clients()?.ec2;
        let vpc_id = str_attr(desired, "vpc_id")?;
        let out = ec2
            .associate_vpc_cidr_block()
            .vpc_id(vpc_id)
            .cidr_block(str_attr(desired, "cidr_block")?)
            .send()
            .await
            .map_err(|e| api_error("ec2:AssociateVpcCidrBlock", e))?;
        let id = out
            .cidr_block_association()
            .and_then(|a| a.association_id())
            .ok_or_else(|| KindError::new("AssociateVpcCidrBlock returned no association id"))?
            .to_string();
        read_back(&format!("CIDR association {id}"), || async {
            Ok(self
                .describe(vec![vpc_id.to_string()])
                .await?
                .into_iter()
                .find(|l| l.id == id))
        })
        .await
    }

    async fn update(
        &self,
        _ctx: &Context,
        _address: &Address,
        current: &Live,
        _desired: &Attrs,
    ) -> Result<Live, KindError> {
        // Every field forces replacement; nothing changes in place.
        Ok(current.clone())
    }

    async fn delete(
        &self,
        _ctx: &Context,
        _address: &Address,
        current: &Live,
    ) -> Result<(), KindError> {
        let ec2 = &self.0.clients()?.ec2;
        match ec2
            .disassociate_vpc_cidr_block()
            .association_id(&current.id)
            .send()
            .await
        {
            Ok(_) => Ok(()),
            Err(e) if has_code(&e, "InvalidVpcCidrBlockAssociationID.NotFound") => Ok(()),
            Err(e) => Err(api_error("ec2:DisassociateVpcCidrBlock", e)),
        }
    }
}
