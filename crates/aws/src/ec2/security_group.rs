//! `aws_security_group`: a security group whose rules are all managed as
//! `aws_security_group_rule` resources (the default allow-all egress rule is removed).

use crate::AwsClients;
use crate::error::{api_error, has_code};
use crate::lookup_json::{filter, live, read_owned_then_ids, str_attr};
use crate::settle::{read_back, settle};
use crate::tags;
use async_trait::async_trait;
use aws_sdk_ec2::types::{IpPermission, IpRange, ResourceType};
use engine::{Address, Attrs, Context, Field, Kind, KindError, Live, ReadRequest};
use serde_json::json;
use std::sync::Arc;

pub(crate) struct SecurityGroup(pub Arc<AwsClients>);

const FIELDS: &[Field] = &[
    Field::replace("name"),
    Field::replace("description"),
    Field::replace("vpc_id"),
    Field::in_place("tags"),
    Field::computed("id"),
    Field::computed("arn"),
];

impl SecurityGroup {
    async fn describe(&self, filter: aws_sdk_ec2::types::Filter) -> Result<Vec<Live>, KindError> {
        let ec2 = &self.0.ec2;
        let groups: Vec<_> = ec2
            .describe_security_groups()
            .filters(filter)
            .into_paginator()
            .items()
            .send()
            .collect::<Result<_, _>>()
            .await
            .map_err(|e| api_error("ec2:DescribeSecurityGroups", e))?;
        Ok(groups
            .into_iter()
            .map(|g| {
                live(
                    g.group_id().unwrap_or_default(),
                    [
                        ("name", json!(g.group_name().unwrap_or_default())),
                        ("description", json!(g.description().unwrap_or_default())),
                        ("vpc_id", json!(g.vpc_id().unwrap_or_default())),
                        ("tags", tags::ec2_to_json(g.tags())),
                        ("arn", json!(g.security_group_arn().unwrap_or_default())),
                    ],
                )
            })
            .collect())
    }

    async fn revoke_default_egress(&self, id: &str) -> Result<(), KindError> {
        let ec2 = &self.0.ec2;
        let all = IpPermission::builder()
            .ip_protocol("-1")
            .ip_ranges(IpRange::builder().cidr_ip("0.0.0.0/0").build())
            .build();
        match ec2.revoke_security_group_egress().group_id(id).ip_permissions(all).send().await {
            Ok(_) => Ok(()),
            Err(e) if has_code(&e, "InvalidPermission.NotFound") => Ok(()),
            Err(e) => Err(api_error("ec2:RevokeSecurityGroupEgress", e)),
        }
    }
}

#[async_trait]
impl Kind for SecurityGroup {
    fn name(&self) -> &'static str {
        "aws_security_group"
    }

    fn fields(&self) -> &'static [Field] {
        FIELDS
    }

    async fn read(
        &self,
        ctx: &Context,
        requests: &[ReadRequest],
    ) -> Result<Vec<Option<Live>>, KindError> {
        read_owned_then_ids(ctx, requests, "group-id", |f| self.describe(f)).await
    }

    async fn create(
        &self,
        _ctx: &Context,
        _address: &Address,
        desired: &Attrs,
    ) -> Result<Live, KindError> {
        let ec2 = &self.0.ec2;
        let out = ec2
            .create_security_group()
            .group_name(str_attr(desired, "name")?)
            .description(str_attr(desired, "description")?)
            .vpc_id(str_attr(desired, "vpc_id")?)
            .tag_specifications(tags::ec2_spec(ResourceType::SecurityGroup, desired))
            .send()
            .await
            .map_err(|e| api_error("ec2:CreateSecurityGroup", e))?;
        let id = out
            .group_id()
            .ok_or_else(|| KindError::new("CreateSecurityGroup returned no id"))?
            .to_string();
        settle(|| self.revoke_default_egress(&id)).await?;
        read_back(&format!("security group {id}"), || async {
            Ok(self.describe(filter("group-id", vec![id.clone()])).await?.into_iter().next())
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
        match ec2.delete_security_group().group_id(&current.id).send().await {
            Ok(_) => Ok(()),
            Err(e) if has_code(&e, "InvalidGroup.NotFound") => Ok(()),
            Err(e) => Err(api_error("ec2:DeleteSecurityGroup", e)),
        }
    }
}
