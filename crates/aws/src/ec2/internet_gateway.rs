//! `aws_internet_gateway`: a gateway with the VPCs it is attached to (attachments are
//! `aws_internet_gateway_attachment` resources).

use super::{Ec2Tags, tag_spec, tags_of};
use crate::AwsClients;
use crate::error::{Listing, SdkResult, required};
use crate::lookup::{read_back_id, read_owned_then_ids};
use crate::tagging::update_tags;
use aws_sdk_ec2::types::{Filter, ResourceType};
use engine::prelude::*;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

#[derive(Attributes, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct InternetGateway {
    #[attr(in_place, tags)]
    pub tags: Tags,
    #[attr(computed)]
    #[serde(default)]
    pub attached_vpc_ids: Vec<String>,
}

pub(crate) struct InternetGatewayKind(pub Arc<AwsClients>);

/// Internet gateways matching `filter`, with the VPCs each is attached to.
pub(super) async fn describe(
    clients: &AwsClients,
    filter: Filter,
) -> KindResult<Vec<Live<InternetGateway>>> {
    let pages = clients.ec2.describe_internet_gateways().filters(filter).into_paginator();
    let igws: Vec<_> = pages.items().send().all("ec2:DescribeInternetGateways").await?;
    igws.iter()
        .map(|g| {
            let id = required(g.internet_gateway_id(), "ec2:DescribeInternetGateways: Id")?;
            let vpcs = g.attachments().iter().filter_map(|a| a.vpc_id()).map(str::to_string);
            let igw = InternetGateway { tags: tags_of(g.tags()), attached_vpc_ids: vpcs.collect() };
            Ok(Live::new(id, igw))
        })
        .collect()
}

impl TypedKind for InternetGatewayKind {
    type Attrs = InternetGateway;
    const NAME: &'static str = "aws_internet_gateway";

    async fn read(&self, ctx: &Context, requests: &Requests<Self>) -> Found<Self> {
        read_owned_then_ids(ctx, requests, "internet-gateway-id", |f| describe(&self.0, f)).await
    }

    async fn create(&self, _: &Context, desired: &Self::Attrs) -> Outcome<Self> {
        let tags = tag_spec(ResourceType::InternetGateway, &desired.tags);
        let call = self.0.ec2.create_internet_gateway().tag_specifications(tags);
        let out = call.send().await.api("ec2:CreateInternetGateway")?;
        let id = out.internet_gateway().and_then(|g| g.internet_gateway_id());
        let id = required(id, "ec2:CreateInternetGateway: InternetGatewayId")?;
        read_back_id("internet gateway", "internet-gateway-id", id, |f| describe(&self.0, f)).await
    }

    async fn update(&self, _: &Context, update: Update<'_, Self>) -> Outcome<Self> {
        update_tags(&Ec2Tags(&self.0.ec2), &update.current.id, update).await
    }

    async fn delete(&self, _: &Context, current: &LiveOf<Self>) -> KindResult<()> {
        let call = self.0.ec2.delete_internet_gateway().internet_gateway_id(&current.id);
        call.send()
            .await
            .or_gone("ec2:DeleteInternetGateway", &["InvalidInternetGatewayID.NotFound"])
    }
}
