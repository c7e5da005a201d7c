//! `aws_eip`: an Elastic IP for a NAT gateway. Released only once the NAT gateway using it is
//! gone: until then the release is retried.

use super::{Ec2Tags, tag_spec, tags_of};
use crate::AwsClients;
use crate::error::{SdkResult, required};
use crate::lookup::{read_back_id, read_owned_then_ids};
use crate::tagging::update_tags;
use aws_sdk_ec2::types::{DomainType, Filter, ResourceType};
use engine::prelude::*;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

#[derive(Attributes, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct Eip {
    #[attr(replace)]
    pub domain: String,
    #[attr(in_place, tags)]
    pub tags: Tags,
    #[attr(computed)]
    pub public_ip: Option<String>,
}

pub(crate) struct EipKind(pub Arc<AwsClients>);

impl EipKind {
    async fn describe(&self, filter: Filter) -> KindResult<Vec<Live<Eip>>> {
        let call = self.0.ec2.describe_addresses().filters(filter);
        let out = call.send().await.api("ec2:DescribeAddresses")?;
        out.addresses()
            .iter()
            .map(|a| {
                let eip = Eip {
                    domain: a.domain().map_or("vpc", |d| d.as_str()).to_string(),
                    tags: tags_of(a.tags()),
                    public_ip: a.public_ip().map(str::to_string),
                };
                Ok(Live::new(
                    required(a.allocation_id(), "ec2:DescribeAddresses: AllocationId")?,
                    eip,
                ))
            })
            .collect()
    }
}

impl TypedKind for EipKind {
    type Attrs = Eip;
    const NAME: &'static str = "aws_eip";

    async fn read(&self, ctx: &Context, requests: &Requests<Self>) -> Found<Self> {
        read_owned_then_ids(ctx, requests, "allocation-id", |f| self.describe(f)).await
    }

    async fn create(&self, _: &Context, desired: &Self::Attrs) -> Outcome<Self> {
        let tags = tag_spec(ResourceType::ElasticIp, &desired.tags);
        let domain = DomainType::from(desired.domain.as_str());
        let call = self.0.ec2.allocate_address().domain(domain).tag_specifications(tags);
        let out = call.send().await.api("ec2:AllocateAddress")?;
        let id = required(out.allocation_id(), "ec2:AllocateAddress: AllocationId")?;
        read_back_id("EIP", "allocation-id", id, |f| self.describe(f)).await
    }

    async fn update(&self, _: &Context, update: Update<'_, Self>) -> Outcome<Self> {
        update_tags(&Ec2Tags(&self.0.ec2), &update.current.id, update).await
    }

    async fn delete(&self, _: &Context, current: &LiveOf<Self>) -> KindResult<()> {
        let call = self.0.ec2.release_address().allocation_id(&current.id);
        match call.send().await.or_gone("ec2:ReleaseAddress", &["InvalidAllocationID.NotFound"]) {
            // Still associated with a NAT gateway that is being deleted.
            Err(e) if e.has_code("AuthFailure") || e.has_code("InvalidIPAddress.InUse") => Err(
                KindError::retryable(format!("ec2:ReleaseAddress: {} is still in use", current.id)),
            ),
            done => done,
        }
    }
}
