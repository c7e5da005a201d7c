//! `aws_vpc`: the VPC, its DNS attributes and tags.

use super::{Ec2Tags, tag_spec, tags_of};
use crate::AwsClients;
use crate::error::{Listing, SdkResult, required};
use crate::lookup::{read_back_id, read_owned_then_ids};
use crate::tagging::retag;
use aws_sdk_ec2::types::{AttributeBooleanValue, Filter, ResourceType, VpcAttributeName};
use engine::prelude::*;
use engine::retry::settle;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

#[derive(Attributes, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct Vpc {
    #[attr(replace, normalize = engine::normalize::cidr)]
    pub cidr_block: String,
    #[attr(in_place)]
    pub enable_dns_hostnames: bool,
    #[attr(in_place)]
    pub enable_dns_support: bool,
    #[attr(in_place, tags)]
    pub tags: Tags,
    /// The VPC's CIDR blocks (the primary and secondary ones), as the VPC reports them.
    #[attr(computed)]
    #[serde(default)]
    pub cidr_associations: Vec<CidrAssociation>,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct CidrAssociation {
    pub id: String,
    pub cidr_block: String,
    pub state: String,
}

pub(crate) struct VpcKind(pub Arc<AwsClients>);

impl VpcKind {
    /// The VPCs `filter` selects, with their DNS attributes.
    pub(crate) async fn describe(&self, filter: Filter) -> KindResult<Vec<Live<Vpc>>> {
        let pages = self.0.ec2.describe_vpcs().filters(filter).into_paginator().items().send();
        let vpcs: Vec<_> = pages.all("ec2:DescribeVpcs").await?;
        // Two attribute reads per VPC (the API has no batch): all at once, each under the
        // refresh's bound.
        futures::future::try_join_all(vpcs.iter().map(|v| self.with_dns(v))).await
    }

    /// A described VPC with its two DNS attributes, read at the same time.
    async fn with_dns(&self, v: &aws_sdk_ec2::types::Vpc) -> KindResult<Live<Vpc>> {
        let id = required(v.vpc_id(), "ec2:DescribeVpcs: VpcId")?;
        let associations = v.cidr_block_association_set().iter().map(|a| CidrAssociation {
            id: a.association_id().unwrap_or_default().to_string(),
            cidr_block: a.cidr_block().unwrap_or_default().to_string(),
            state: a
                .cidr_block_state()
                .and_then(|s| s.state())
                .map(|s| s.as_str().to_string())
                .unwrap_or_default(),
        });
        let (enable_dns_hostnames, enable_dns_support) = tokio::try_join!(
            engine::bounded(self.dns(id, VpcAttributeName::EnableDnsHostnames)),
            engine::bounded(self.dns(id, VpcAttributeName::EnableDnsSupport)),
        )?;
        let vpc = Vpc {
            cidr_block: v.cidr_block().unwrap_or_default().to_string(),
            enable_dns_hostnames,
            enable_dns_support,
            tags: tags_of(v.tags()),
            cidr_associations: associations.collect(),
        };
        Ok(Live::new(id, vpc))
    }

    async fn dns(&self, id: &str, name: VpcAttributeName) -> KindResult<bool> {
        let call = self.0.ec2.describe_vpc_attribute().vpc_id(id).attribute(name.clone());
        let out = call.send().await.api("ec2:DescribeVpcAttribute")?;
        let value = match name {
            VpcAttributeName::EnableDnsHostnames => out.enable_dns_hostnames(),
            _ => out.enable_dns_support(),
        };
        Ok(value.and_then(|v| v.value()).unwrap_or(false))
    }

    /// Sets one DNS attribute (one per call, as the API demands).
    async fn set_dns(&self, id: &str, name: VpcAttributeName, on: bool) -> KindResult<()> {
        let value = AttributeBooleanValue::builder().value(on).build();
        let call = self.0.ec2.modify_vpc_attribute().vpc_id(id);
        let call = match name {
            VpcAttributeName::EnableDnsHostnames => call.enable_dns_hostnames(value),
            _ => call.enable_dns_support(value),
        };
        call.send().await.api("ec2:ModifyVpcAttribute").map(|_| ())
    }

    async fn read_one(&self, id: &str) -> KindResult<Live<Vpc>> {
        read_back_id("VPC", "vpc-id", id, |f| self.describe(f)).await
    }
}

impl TypedKind for VpcKind {
    type Attrs = Vpc;
    const NAME: &'static str = "aws_vpc";

    async fn read(&self, ctx: &Context, requests: &Requests<Self>) -> Found<Self> {
        read_owned_then_ids(ctx, requests, "vpc-id", |f| self.describe(f)).await
    }

    async fn create(&self, _: &Context, desired: &Self::Attrs) -> Outcome<Self> {
        let tags = tag_spec(ResourceType::Vpc, &desired.tags);
        let call = self.0.ec2.create_vpc().cidr_block(&desired.cidr_block).tag_specifications(tags);
        let out = call.send().await.api("ec2:CreateVpc")?;
        let id = required(out.vpc().and_then(|v| v.vpc_id()), "ec2:CreateVpc: VpcId")?;
        // Support first: hostnames need it.
        settle(|| self.set_dns(id, VpcAttributeName::EnableDnsSupport, desired.enable_dns_support))
            .await?;
        settle(|| {
            self.set_dns(id, VpcAttributeName::EnableDnsHostnames, desired.enable_dns_hostnames)
        })
        .await?;
        self.read_one(id).await
    }

    async fn update(&self, _: &Context, update: Update<'_, Self>) -> Outcome<Self> {
        let Update { current, desired, changes } = update;
        let id = &current.id;
        if changes.enable_dns_support {
            self.set_dns(id, VpcAttributeName::EnableDnsSupport, desired.enable_dns_support)
                .await?;
        }
        if changes.enable_dns_hostnames {
            self.set_dns(id, VpcAttributeName::EnableDnsHostnames, desired.enable_dns_hostnames)
                .await?;
        }
        if changes.tags {
            retag(&Ec2Tags(&self.0.ec2), id, &current.attributes.tags, &desired.tags).await?;
        }
        self.read_one(id).await
    }

    async fn delete(&self, _: &Context, current: &LiveOf<Self>) -> KindResult<()> {
        let call = self.0.ec2.delete_vpc().vpc_id(&current.id);
        call.send().await.or_gone("ec2:DeleteVpc", &["InvalidVpcID.NotFound"])
    }
}
