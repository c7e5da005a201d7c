//! `aws_subnet`: a subnet of one tier in one availability zone.

use super::{Ec2Tags, tag_spec, tags_of};
use crate::AwsClients;
use crate::error::{Listing, SdkResult, required};
use crate::lookup::{read_back_id, read_owned_then_ids};
use crate::tagging::retag;
use aws_sdk_ec2::types::{AttributeBooleanValue, Filter, ResourceType};
use engine::prelude::*;
use engine::retry::settle;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

#[derive(Attributes, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct Subnet {
    #[attr(replace)]
    pub vpc_id: String,
    #[attr(replace, normalize = engine::normalize::cidr)]
    pub cidr_block: String,
    #[attr(replace)]
    pub availability_zone: String,
    #[attr(in_place)]
    #[serde(default)]
    pub map_public_ip_on_launch: bool,
    #[attr(in_place, tags)]
    pub tags: Tags,
    #[attr(computed)]
    pub arn: Option<String>,
}

pub(crate) struct SubnetKind(pub Arc<AwsClients>);

impl SubnetKind {
    async fn describe(&self, filter: Filter) -> KindResult<Vec<Live<Subnet>>> {
        let pages = self.0.ec2.describe_subnets().filters(filter).into_paginator();
        let subnets = pages.items().send().all("ec2:DescribeSubnets").await?;
        subnets
            .iter()
            .map(|s| {
                let subnet = Subnet {
                    vpc_id: s.vpc_id().unwrap_or_default().to_string(),
                    cidr_block: s.cidr_block().unwrap_or_default().to_string(),
                    availability_zone: s.availability_zone().unwrap_or_default().to_string(),
                    map_public_ip_on_launch: s.map_public_ip_on_launch().unwrap_or(false),
                    tags: tags_of(s.tags()),
                    arn: s.subnet_arn().map(str::to_string),
                };
                Ok(Live::new(required(s.subnet_id(), "ec2:DescribeSubnets: SubnetId")?, subnet))
            })
            .collect()
    }

    async fn read_one(&self, id: &str) -> KindResult<Live<Subnet>> {
        read_back_id("subnet", "subnet-id", id, |f| self.describe(f)).await
    }

    async fn set_public_ip(&self, id: &str, on: bool) -> KindResult<()> {
        self.0
            .ec2
            .modify_subnet_attribute()
            .subnet_id(id)
            .map_public_ip_on_launch(AttributeBooleanValue::builder().value(on).build())
            .send()
            .await
            .api("ec2:ModifySubnetAttribute")
            .map(|_| ())
    }
}

impl TypedKind for SubnetKind {
    type Attrs = Subnet;
    const NAME: &'static str = "aws_subnet";

    async fn read(&self, ctx: &Context, requests: &Requests<Self>) -> Found<Self> {
        read_owned_then_ids(ctx, requests, "subnet-id", |f| self.describe(f)).await
    }

    async fn create(&self, _: &Context, desired: &Self::Attrs) -> Outcome<Self> {
        let out = self
            .0
            .ec2
            .create_subnet()
            .vpc_id(&desired.vpc_id)
            .cidr_block(&desired.cidr_block)
            .availability_zone(&desired.availability_zone)
            .tag_specifications(tag_spec(ResourceType::Subnet, &desired.tags))
            .send()
            .await
            .api("ec2:CreateSubnet")?;
        let id = required(out.subnet().and_then(|s| s.subnet_id()), "ec2:CreateSubnet: SubnetId")?;
        if desired.map_public_ip_on_launch {
            settle(|| self.set_public_ip(id, true)).await?;
        }
        self.read_one(id).await
    }

    async fn update(&self, _: &Context, update: Update<'_, Self>) -> Outcome<Self> {
        let Update { current, desired, changes } = update;
        if changes.map_public_ip_on_launch {
            self.set_public_ip(&current.id, desired.map_public_ip_on_launch).await?;
        }
        if changes.tags {
            let ec2 = &self.0.ec2;
            retag(&Ec2Tags(ec2), &current.id, &current.attributes.tags, &desired.tags).await?;
        }
        self.read_one(&current.id).await
    }

    async fn delete(&self, _: &Context, current: &LiveOf<Self>) -> KindResult<()> {
        self.0
            .ec2
            .delete_subnet()
            .subnet_id(&current.id)
            .send()
            .await
            .or_gone("ec2:DeleteSubnet", &["InvalidSubnetID.NotFound"])
    }
}
