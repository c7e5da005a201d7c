//! `aws_eip`: an Elastic IP for a NAT gateway.

use crate::AwsClients;
use crate::error::{api_error, has_code};
use crate::lookup_json::{filter, live, read_owned_then_ids};
use crate::settle::read_back;
use crate::tags;
use async_trait::async_trait;
use aws_sdk_ec2::types::{DomainType, ResourceType};
use engine::{Address, Attrs, Context, Field, Kind, KindError, Live, ReadRequest};
use serde_json::json;
use std::sync::Arc;

pub(crate) struct Eip(pub Arc<AwsClients>);

const FIELDS: &[Field] = &[
    Field::replace("domain"),
    Field::in_place("tags"),
    Field::computed("id"),
    Field::computed("public_ip"),
];

impl Eip {
    async fn describe(&self, filter: aws_sdk_ec2::types::Filter) -> Result<Vec<Live>, KindError> {
        let ec2 = &self.0.ec2;
        let out = ec2
            .describe_addresses()
            .filters(filter)
            .send()
            .await
            .map_err(|e| api_error("ec2:DescribeAddresses", e))?;
        Ok(out
            .addresses()
            .iter()
            .map(|a| {
                live(
                    a.allocation_id().unwrap_or_default(),
                    [
                        ("domain", json!(a.domain().map(|d| d.as_str()).unwrap_or("vpc"))),
                        ("tags", tags::ec2_to_json(a.tags())),
                        ("public_ip", json!(a.public_ip().unwrap_or_default())),
                    ],
                )
            })
            .collect())
    }
}

#[async_trait]
impl Kind for Eip {
    fn name(&self) -> &'static str {
        "aws_eip"
    }

    fn fields(&self) -> &'static [Field] {
        FIELDS
    }

    async fn read(
        &self,
        ctx: &Context,
        requests: &[ReadRequest],
    ) -> Result<Vec<Option<Live>>, KindError> {
        read_owned_then_ids(ctx, requests, "allocation-id", |f| self.describe(f)).await
    }

    async fn create(
        &self,
        _ctx: &Context,
        _address: &Address,
        desired: &Attrs,
    ) -> Result<Live, KindError> {
        let ec2 = &self.0.ec2;
        let out = ec2
            .allocate_address()
            .domain(DomainType::Vpc)
            .tag_specifications(tags::ec2_spec(ResourceType::ElasticIp, desired))
            .send()
            .await
            .map_err(|e| api_error("ec2:AllocateAddress", e))?;
        let id = out
            .allocation_id()
            .ok_or_else(|| KindError::new("AllocateAddress returned no allocation id"))?
            .to_string();
        read_back(&format!("EIP {id}"), || async {
            Ok(self.describe(filter("allocation-id", vec![id.clone()])).await?.into_iter().next())
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
        match ec2.release_address().allocation_id(&current.id).send().await {
            Ok(_) => Ok(()),
            Err(e) if has_code(&e, "InvalidAllocationID.NotFound") => Ok(()),
            // Still associated with a NAT gateway that is being deleted.
            Err(e) if has_code(&e, "AuthFailure") || has_code(&e, "InvalidIPAddress.InUse") => Err(
                KindError::retryable(format!("ec2:ReleaseAddress: {} is still in use", current.id)),
            ),
            Err(e) => Err(api_error("ec2:ReleaseAddress", e)),
        }
    }
}
