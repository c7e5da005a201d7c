//! `aws_vpc`: the VPC, its DNS attributes and tags.

use super::lookup::{bool_attr, live, read_owned_then_ids, str_attr};
use crate::error::api_error;
use crate::provider::Shared;
use crate::settle::{read_back, settle};
use crate::tags;
use async_trait::async_trait;
use aws_sdk_ec2::types::{AttributeBooleanValue, ResourceType, VpcAttributeName};
use engine::{Address, Attrs, Context, Field, Kind, KindError, Live, ReadRequest};
use serde_json::{Value as Json, json};
use std::sync::Arc;

pub(crate) struct Vpc(pub Arc<Shared>);

const FIELDS: &[Field] = &[
    Field::replace("cidr_block"),
    Field::in_place("enable_dns_hostnames"),
    Field::in_place("enable_dns_support"),
    Field::in_place("tags"),
    Field::computed("id"),
    Field::computed("cidr_associations"),
];

impl Vpc {
    pub(crate) async fn describe(
        &self,
        filter: aws_sdk_ec2::types::Filter,
    ) -> Result<Vec<Live>, KindError> {
        let ec2 = &self.0.clients()?.ec2;
        let vpcs: Vec<_> = ec2
            .describe_vpcs()
            .filters(filter)
            .into_paginator()
            .items()
            .send()
            .collect::<Result<_, _>>()
            .await
            .map_err(|e| api_error("ec2:DescribeVpcs", e))?;
        let mut out = Vec::new();
        for v in vpcs {
            let id = v.vpc_id().unwrap_or_default().to_string();
            let hostnames = self
                .attribute(&id, VpcAttributeName::EnableDnsHostnames)
                .await?;
            let support = self
                .attribute(&id, VpcAttributeName::EnableDnsSupport)
                .await?;
            out.push(live(
                id,
                [
                    ("cidr_block", json!(v.cidr_block().unwrap_or_default())),
                    ("enable_dns_hostnames", json!(hostnames)),
                    ("enable_dns_support", json!(support)),
                    ("tags", tags::ec2_to_json(v.tags())),
                    (
                        "cidr_associations",
                        Json::Array(
                            v.cidr_block_association_set()
                                .iter()
                                .map(|a| {
                                    json!({
                                        "id": a.association_id().unwrap_or_default(),
                                        "cidr_block": a.cidr_block().unwrap_or_default(),
                                        "state": a.cidr_block_state().and_then(|s| s.state()).map(|s| s.as_str()).unwrap_or_default(),
                                    })
                                })
                                .collect(),
                        ),
                    ),
                ],
            ));
        }
        Ok(out)
    }

    async fn attribute(&self, id: &str, name: VpcAttributeName) -> Result<bool, KindError> {
        let ec2 = &self.0.clients()?.ec2;
        let out = ec2
            .describe_vpc_attribute()
            .vpc_id(id)
            .attribute(name.clone())
            .send()
            .await
            .map_err(|e| api_error("ec2:DescribeVpcAttribute", e))?;
        let value = match name {
            VpcAttributeName::EnableDnsHostnames => out.enable_dns_hostnames(),
            _ => out.enable_dns_support(),
        };
        Ok(value.and_then(|v| v.value()).unwrap_or(false))
    }

    async fn set_dns(
        &self,
        id: &str,
        current: Option<&Attrs>,
        desired: &Attrs,
    ) -> Result<(), KindError> {
        let ec2 = &self.0.clients()?.ec2;
        // One attribute per call, as the API demands.
        for name in ["enable_dns_support", "enable_dns_hostnames"] {
            let want = bool_attr(desired, name);
            if current.map(|c| bool_attr(c, name)) == Some(want) {
                continue;
            }
            let value = AttributeBooleanValue::builder().value(want).build();
            let req = ec2.modify_vpc_attribute().vpc_id(id);
            let req = if name == "enable_dns_support" {
                req.enable_dns_support(value)
            } else {
                req.enable_dns_hostnames(value)
            };
            req.send()
                .await
                .map_err(|e| api_error("ec2:ModifyVpcAttribute", e))?;
        }
        Ok(())
    }

    async fn read_one(&self, id: &str) -> Result<Live, KindError> {
        read_back(&format!("VPC {id}"), || async {
            Ok(self
                .describe(super::lookup::filter("vpc-id", vec![id.to_string()]))
                .await?
                .into_iter()
                .next())
        })
        .await
    }
}

#[async_trait]
impl Kind for Vpc {
    fn name(&self) -> &'static str {
        "aws_vpc"
    }

    fn fields(&self) -> &'static [Field] {
        FIELDS
    }

    async fn read(
        &self,
        ctx: &Context,
        requests: &[ReadRequest],
    ) -> Result<Vec<Option<Live>>, KindError> {
        read_owned_then_ids(ctx, requests, "vpc-id", |f| self.describe(f)).await
    }

    async fn create(
        &self,
        _ctx: &Context,
        _address: &Address,
        desired: &Attrs,
    ) -> Result<Live, KindError> {
        let ec2 = &self.0.clients()?.ec2;
        let out = ec2
            .create_vpc()
            .cidr_block(str_attr(desired, "cidr_block")?)
            .tag_specifications(tags::ec2_spec(ResourceType::Vpc, desired))
            .send()
            .await
            .map_err(|e| api_error("ec2:CreateVpc", e))?;
        let id = out
            .vpc()
            .and_then(|v| v.vpc_id())
            .ok_or_else(|| KindError::new("CreateVpc returned no VPC id"))?
            .to_string();
        settle(|| self.set_dns(&id, None, desired)).await?;
        self.read_one(&id).await
    }

    async fn update(
        &self,
        _ctx: &Context,
        _address: &Address,
        current: &Live,
        desired: &Attrs,
    ) -> Result<Live, KindError> {
        let ec2 = &self.0.clients()?.ec2;
        self.set_dns(&current.id, Some(&current.attributes), desired)
            .await?;
        tags::ec2_update(ec2, &current.id, &current.attributes, desired).await?;
        self.read_one(&current.id).await
    }

    async fn delete(
        &self,
        _ctx: &Context,
        _address: &Address,
        current: &Live,
    ) -> Result<(), KindError> {
        let ec2 = &self.0.clients()?.ec2;
        match ec2.delete_vpc().vpc_id(&current.id).send().await {
            Ok(_) => Ok(()),
            Err(e) if crate::error::has_code(&e, "InvalidVpcID.NotFound") => Ok(()),
            Err(e) => Err(api_error("ec2:DeleteVpc", e)),
        }
    }
}
