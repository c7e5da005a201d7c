//! `aws_nat_gateway`: a public NAT gateway. Create waits until it is available, delete until it
//! is gone (its EIP and subnet are released only then). Deleted and failed gateways linger in
//! `DescribeNatGateways` for a while: they count as absent.

use super::{Ec2Tags, tag_spec, tags_of};
use crate::AwsClients;
use crate::error::{Listing, SdkResult, required};
use crate::lookup::{filter, read_owned_then_ids};
use crate::tagging::update_tags;
use aws_sdk_ec2::types::{ConnectivityType, Filter, NatGatewayState, ResourceType};
use engine::prelude::*;
use engine::wait::{Poll, Wait};
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::time::Duration;

#[derive(Attributes, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct NatGateway {
    #[attr(replace)]
    pub subnet_id: String,
    #[attr(replace)]
    pub allocation_id: String,
    #[attr(replace)]
    pub connectivity_type: String,
    #[attr(in_place, tags)]
    pub tags: Tags,
}

pub(crate) struct NatGatewayKind(pub Arc<AwsClients>);

/// How long a NAT gateway may take to become available or to go away.
const TIMEOUT: Duration = Duration::from_secs(15 * 60);

impl NatGatewayKind {
    /// NAT gateways matching `filter`, with their state; deleted and failed ones are left out.
    async fn describe(
        &self,
        filter: Filter,
    ) -> KindResult<Vec<(Live<NatGateway>, NatGatewayState)>> {
        let pages = self.0.ec2.describe_nat_gateways().filter(filter).into_paginator();
        let nats: Vec<_> = pages.items().send().all("ec2:DescribeNatGateways").await?;
        let mut out = Vec::new();
        for n in nats {
            let state = n.state().cloned().unwrap_or(NatGatewayState::Pending);
            if matches!(state, NatGatewayState::Deleted | NatGatewayState::Failed) {
                continue;
            }
            let allocation = n.nat_gateway_addresses().iter().find_map(|a| a.allocation_id());
            let nat = NatGateway {
                subnet_id: n.subnet_id().unwrap_or_default().to_string(),
                allocation_id: allocation.unwrap_or_default().to_string(),
                connectivity_type: n.connectivity_type().map_or("public", |c| c.as_str()).into(),
                tags: tags_of(n.tags()),
            };
            let id = required(n.nat_gateway_id(), "ec2:DescribeNatGateways: NatGatewayId")?;
            out.push((Live::new(id, nat), state));
        }
        Ok(out)
    }

    /// The gateway `id` and its state (`None`: it does not exist, or no longer).
    async fn one(&self, id: &str) -> KindResult<Option<(Live<NatGateway>, NatGatewayState)>> {
        Ok(self.describe(filter("nat-gateway-id", vec![id.into()])).await?.pop())
    }
}

impl TypedKind for NatGatewayKind {
    type Attrs = NatGateway;
    const NAME: &'static str = "aws_nat_gateway";

    async fn read(&self, ctx: &Context, requests: &Requests<Self>) -> Found<Self> {
        read_owned_then_ids(ctx, requests, "nat-gateway-id", |f| async {
            Ok(self.describe(f).await?.into_iter().map(|(l, _)| l).collect())
        })
        .await
    }

    async fn create(&self, ctx: &Context, desired: &Self::Attrs) -> Outcome<Self> {
        let out = self
            .0
            .ec2
            .create_nat_gateway()
            .subnet_id(&desired.subnet_id)
            .allocation_id(&desired.allocation_id)
            .connectivity_type(ConnectivityType::from(desired.connectivity_type.as_str()))
            .tag_specifications(tag_spec(ResourceType::Natgateway, &desired.tags))
            .send()
            .await
            .api("ec2:CreateNatGateway")?;
        let id = out.nat_gateway().and_then(|n| n.nat_gateway_id());
        let id = required(id, "ec2:CreateNatGateway: NatGatewayId")?;
        Wait::new(format!("NAT gateway {id}"), TIMEOUT)
            .until(ctx, || async {
                match self.one(id).await? {
                    Some((live, NatGatewayState::Available)) => Ok(Poll::Done(live)),
                    Some((_, NatGatewayState::Deleting)) => {
                        Err(KindError::new(format!("NAT gateway {id} is being deleted")))
                    }
                    Some((_, state)) => Ok(Poll::Pending(state.as_str().into())),
                    None => Ok(Poll::Pending("not visible yet".into())),
                }
            })
            .await
    }

    async fn update(&self, _: &Context, update: Update<'_, Self>) -> Outcome<Self> {
        update_tags(&Ec2Tags(&self.0.ec2), &update.current.id, update).await
    }

    async fn delete(&self, ctx: &Context, current: &LiveOf<Self>) -> KindResult<()> {
        let id = &current.id;
        let gone = ["NatGatewayNotFound", "InvalidNatGatewayID.NotFound"];
        let call = self.0.ec2.delete_nat_gateway().nat_gateway_id(id);
        if call.send().await.or_absent("ec2:DeleteNatGateway", &gone)?.is_none() {
            return Ok(());
        }
        Wait::new(format!("NAT gateway {id}"), TIMEOUT)
            .until(ctx, || async {
                Ok(match self.one(id).await? {
                    None => Poll::Done(()),
                    Some((_, state)) => Poll::Pending(state.as_str().into()),
                })
            })
            .await
    }
}
