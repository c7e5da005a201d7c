//! `aws_subnet`: a subnet of one tier in one availability zone.

use super::lookup::{bool_attr, filter, live, read_owned_then_ids, str_attr};
use crate::error::{api_error, deleted};
use crate::provider::Shared;
use crate::settle::{read_back, settle};
use crate::tags;
use async_trait::async_trait;
use aws_sdk_ec2::types::{AttributeBooleanValue, ResourceType};
use engine::{Address, Attrs, Context, Field, Kind, KindError, Live, ReadRequest};
use serde_json::json;
use std::sync::Arc;

pub(crate) struct Subnet(pub Arc<Shared>);

const FIELDS: &[Field] = &[
    Field::replace("vpc_id"),
    Field::replace("cidr_block"),
    Field::replace("availability_zone"),
    Field::in_place("map_public_ip_on_launch"),
    Field::in_place("tags"),
    Field::computed("id"),
    Field::computed("arn"),
];

impl Subnet {
    async fn describe(&self, filter: aws_sdk_ec2::types::Filter) -> Result<Vec<Live>, KindError> {
        let ec2 = &self.0.clients()?.ec2;
        let subnets: Vec<_> = ec2
            .describe_subnets()
            .filters(filter)
            .into_paginator()
            .items()
            .send()
            .collect::<Result<_, _>>()
            .await
            .map_err(|e| api_error("ec2:DescribeSubnets", e))?;
        Ok(subnets
            .into_iter()
            .map(|s| {
                live(
                    s.subnet_id().unwrap_or_default(),
                    [
                        ("vpc_id", json!(s.vpc_id().unwrap_or_default())),
                        ("cidr_block", json!(s.cidr_block().unwrap_or_default())),
                        (
                            "availability_zone",
                            json!(s.availability_zone().unwrap_or_default()),
                        ),
                        (
                            "map_public_ip_on_launch",
                            json!(s.map_public_ip_on_launch().unwrap_or(false)),
                        ),
                        ("tags", tags::ec2_to_json(s.tags())),
                        ("arn", json!(s.subnet_arn().unwrap_or_default())),
                    ],
                )
            })
            .collect())
    }

    async fn read_one(&self, id: &str) -> Result<Live, KindError> {
        read_back(&format!("subnet {id}"), || async {
            Ok(self
                .describe(filter("subnet-id", vec![id.to_string()]))
                .await?
                .into_iter()
                .next())
        })
        .await
    }

    async fn set_public_ip(&self, id: &str, value: bool) -> Result<(), KindError> {
        let ec2 = &self.0.clients()?.ec2;
        ec2.modify_subnet_attribute()
            .subnet_id(id)
            .map_public_ip_on_launch(AttributeBooleanValue::builder().value(value).build())
            .send()
            .await
            .map_err(|e| api_error("ec2:ModifySubnetAttribute", e))?;
        Ok(())
    }
}

#[async_trait]
impl Kind for Subnet {
    fn name(&self) -> &'static str {
        "aws_subnet"
    }

    fn fields(&self) -> &'static [Field] {
        FIELDS
    }

    async fn read(
        &self,
        ctx: &Context,
        requests: &[ReadRequest],
    ) -> Result<Vec<Option<Live>>, KindError> {
        read_owned_then_ids(ctx, requests, "subnet-id", |f| self.describe(f)).await
    }

    async fn create(
        &self,
        _ctx: &Context,
        _address: &Address,
        desired: &Attrs,
    ) -> Result<Live, KindError> {
        let ec2 = &self.0.clients()?.ec2;
        let out = ec2
            .create_subnet()
            .vpc_id(str_attr(desired, "vpc_id")?)
            .cidr_block(str_attr(desired, "cidr_block")?)
            .availability_zone(str_attr(desired, "availability_zone")?)
            .tag_specifications(tags::ec2_spec(ResourceType::Subnet, desired))
            .send()
            .await
            .map_err(|e| api_error("ec2:CreateSubnet", e))?;
        let id = out
            .subnet()
            .and_then(|s| s.subnet_id())
            .ok_or_else(|| KindError::new("CreateSubnet returned no subnet id"))?
            .to_string();
        if bool_attr(desired, "map_public_ip_on_launch") {
            settle(|| self.set_public_ip(&id, true)).await?;
        }
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
        let want = bool_attr(desired, "map_public_ip_on_launch");
        if bool_attr(&current.attributes, "map_public_ip_on_launch") != want {
            self.set_public_ip(&current.id, want).await?;
        }
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
        deleted(
            "ec2:DeleteSubnet",
            ec2.delete_subnet().subnet_id(&current.id).send().await,
            &["InvalidSubnetID.NotFound"],
        )
    }
}
