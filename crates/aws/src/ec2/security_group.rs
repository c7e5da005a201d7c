//! `aws_security_group`: a security group whose rules are all managed as
//! `aws_security_group_rule` resources (the default allow-all egress rule is removed on create).

use super::{Ec2Tags, tag_spec, tags_of};
use crate::AwsClients;
use crate::error::{Listing, SdkResult, required};
use crate::lookup::{read_back_id, read_owned_then_ids};
use crate::tagging::update_tags;
use aws_sdk_ec2::types::{Filter, IpPermission, IpRange, ResourceType};
use engine::prelude::*;
use engine::retry::settle;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

#[derive(Attributes, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct SecurityGroup {
    #[attr(replace)]
    pub name: String,
    #[attr(replace)]
    pub description: String,
    #[attr(replace)]
    pub vpc_id: String,
    #[attr(in_place, tags)]
    pub tags: Tags,
    #[attr(computed)]
    pub arn: Option<String>,
}

pub(crate) struct SecurityGroupKind(pub Arc<AwsClients>);

impl SecurityGroupKind {
    async fn describe(&self, filter: Filter) -> KindResult<Vec<Live<SecurityGroup>>> {
        let pages = self.0.ec2.describe_security_groups().filters(filter).into_paginator();
        let groups: Vec<_> = pages.items().send().all("ec2:DescribeSecurityGroups").await?;
        groups
            .iter()
            .map(|g| {
                let group = SecurityGroup {
                    name: g.group_name().unwrap_or_default().to_string(),
                    description: g.description().unwrap_or_default().to_string(),
                    vpc_id: g.vpc_id().unwrap_or_default().to_string(),
                    tags: tags_of(g.tags()),
                    arn: g.security_group_arn().map(str::to_string),
                };
                Ok(Live::new(required(g.group_id(), "ec2:DescribeSecurityGroups: GroupId")?, group))
            })
            .collect()
    }

    async fn revoke_default_egress(&self, id: &str) -> KindResult<()> {
        let all = IpRange::builder().cidr_ip("0.0.0.0/0").build();
        let all = IpPermission::builder().ip_protocol("-1").ip_ranges(all).build();
        let call = self.0.ec2.revoke_security_group_egress().group_id(id).ip_permissions(all);
        call.send().await.or_gone("ec2:RevokeSecurityGroupEgress", &["InvalidPermission.NotFound"])
    }
}

impl TypedKind for SecurityGroupKind {
    type Attrs = SecurityGroup;
    const NAME: &'static str = "aws_security_group";

    async fn read(&self, ctx: &Context, requests: &Requests<Self>) -> Found<Self> {
        read_owned_then_ids(ctx, requests, "group-id", |f| self.describe(f)).await
    }

    async fn create(&self, _: &Context, desired: &Self::Attrs) -> Outcome<Self> {
        let out = self
            .0
            .ec2
            .create_security_group()
            .group_name(&desired.name)
            .description(&desired.description)
            .vpc_id(&desired.vpc_id)
            .tag_specifications(tag_spec(ResourceType::SecurityGroup, &desired.tags))
            .send()
            .await
            .api("ec2:CreateSecurityGroup")?;
        let id = required(out.group_id(), "ec2:CreateSecurityGroup: GroupId")?;
        settle(|| self.revoke_default_egress(id)).await?;
        read_back_id("security group", "group-id", id, |f| self.describe(f)).await
    }

    async fn update(&self, _: &Context, update: Update<'_, Self>) -> Outcome<Self> {
        update_tags(&Ec2Tags(&self.0.ec2), &update.current.id, update).await
    }

    async fn delete(&self, _: &Context, current: &LiveOf<Self>) -> KindResult<()> {
        let call = self.0.ec2.delete_security_group().group_id(&current.id);
        call.send().await.or_gone("ec2:DeleteSecurityGroup", &["InvalidGroup.NotFound"])
    }
}
