//! `aws_nat_gateway`: a public NAT gateway, with waiters for create and delete.

use crate::AwsClients;
use crate::error::{api_error, has_code};
use crate::lookup_json::{filter, live, read_owned_then_ids, str_attr};
use crate::tags;
use async_trait::async_trait;
use aws_sdk_ec2::types::{ConnectivityType, NatGatewayState, ResourceType};
use engine::{Address, Attrs, Context, Field, Kind, KindError, Live, ReadRequest};
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub(crate) struct NatGateway(pub Arc<AwsClients>);

const FIELDS: &[Field] = &[
    Field::replace("subnet_id"),
    Field::replace("allocation_id"),
    Field::replace("connectivity_type"),
    Field::in_place("tags"),
    Field::computed("id"),
];

/// How long a NAT gateway may take to become available or to go away.
const TIMEOUT: Duration = Duration::from_secs(15 * 60);

impl NatGateway {
    /// NAT gateways matching `filter`, with their state; deleted ones are left out.
    async fn describe(
        &self,
        filter: aws_sdk_ec2::types::Filter,
    ) -> Result<Vec<(Live, NatGatewayState)>, KindError> {
        let ec2 = &self.0.ec2;
        let nats: Vec<_> = ec2
            .describe_nat_gateways()
            .filter(filter)
            .into_paginator()
            .items()
            .send()
            .collect::<Result<_, _>>()
            .await
            .map_err(|e| api_error("ec2:DescribeNatGateways", e))?;
        Ok(nats
            .into_iter()
            .filter_map(|n| {
                let state = n.state().cloned().unwrap_or(NatGatewayState::Pending);
                if matches!(state, NatGatewayState::Deleted | NatGatewayState::Failed) {
                    return None;
                }
                let allocation = n
                    .nat_gateway_addresses()
                    .iter()
                    .find_map(|a| a.allocation_id())
                    .unwrap_or_default();
                Some((
                    live(
                        n.nat_gateway_id().unwrap_or_default(),
                        [
                            ("subnet_id", json!(n.subnet_id().unwrap_or_default())),
                            ("allocation_id", json!(allocation)),
                            (
                                "connectivity_type",
                                json!(
                                    n.connectivity_type().map(|c| c.as_str()).unwrap_or("public")
                                ),
                            ),
                            ("tags", tags::ec2_to_json(n.tags())),
                        ],
                    ),
                    state,
                ))
            })
            .collect())
    }

    /// Polls until the gateway is available (or gone when `gone` is set).
    async fn wait(&self, ctx: &Context, id: &str, gone: bool) -> Result<Option<Live>, KindError> {
        let started = Instant::now();
        let mut pause = Duration::from_millis(250);
        loop {
            let found = self
                .describe(filter("nat-gateway-id", vec![id.to_string()]))
                .await?
                .into_iter()
                .next();
            match (&found, gone) {
                (None, true) => return Ok(None),
                (Some((live, NatGatewayState::Available)), false) => return Ok(Some(live.clone())),
                (Some((_, NatGatewayState::Deleting)), false) => {
                    return Err(KindError::new(format!("NAT gateway {id} is being deleted")));
                }
                _ => {}
            }
            if started.elapsed() > TIMEOUT {
                return Err(KindError::new(format!(
                    "NAT gateway {id} not {} after {} s",
                    if gone { "deleted" } else { "available" },
                    TIMEOUT.as_secs()
                )));
            }
            let state = found
                .map(|(_, s)| s.as_str().to_string())
                .unwrap_or_else(|| "not visible yet".into());
            ctx.waiting(format!("NAT gateway {id}: {state} ({} s)", started.elapsed().as_secs()));
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_secs(10));
        }
    }
}

#[async_trait]
impl Kind for NatGateway {
    fn name(&self) -> &'static str {
        "aws_nat_gateway"
    }

    fn fields(&self) -> &'static [Field] {
        FIELDS
    }

    async fn read(
        &self,
        ctx: &Context,
        requests: &[ReadRequest],
    ) -> Result<Vec<Option<Live>>, KindError> {
        read_owned_then_ids(ctx, requests, "nat-gateway-id", |f| async {
            Ok(self.describe(f).await?.into_iter().map(|(l, _)| l).collect())
        })
        .await
    }

    async fn create(
        &self,
        ctx: &Context,
        _address: &Address,
        desired: &Attrs,
    ) -> Result<Live, KindError> {
        let ec2 = &self.0.ec2;
        let out = ec2
            .create_nat_gateway()
            .subnet_id(str_attr(desired, "subnet_id")?)
            .allocation_id(str_attr(desired, "allocation_id")?)
            .connectivity_type(ConnectivityType::Public)
            .tag_specifications(tags::ec2_spec(ResourceType::Natgateway, desired))
            .send()
            .await
            .map_err(|e| api_error("ec2:CreateNatGateway", e))?;
        let id = out
            .nat_gateway()
            .and_then(|n| n.nat_gateway_id())
            .ok_or_else(|| KindError::new("CreateNatGateway returned no id"))?
            .to_string();
        let mut waited = crate::settle::settle(|| self.wait(ctx, &id, false)).await?;
        waited.take().ok_or_else(|| KindError::new(format!("NAT gateway {id} vanished")))
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
        ctx: &Context,
        _address: &Address,
        current: &Live,
    ) -> Result<(), KindError> {
        let ec2 = &self.0.ec2;
        match ec2.delete_nat_gateway().nat_gateway_id(&current.id).send().await {
            Ok(_) => {}
            Err(e)
                if has_code(&e, "NatGatewayNotFound")
                    || has_code(&e, "InvalidNatGatewayID.NotFound") =>
            {
                return Ok(());
            }
            Err(e) => return Err(api_error("ec2:DeleteNatGateway", e)),
        }
        // The EIP and subnet are released only once the gateway is gone.
        self.wait(ctx, &current.id, true).await.map(|_| ())
    }
}
