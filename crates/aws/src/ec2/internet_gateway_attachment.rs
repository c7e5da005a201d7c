//! `aws_internet_gateway_attachment`. An attachment has no id of its own and no tags: its id is
//! `igw-id/vpc-id`, and it is read through the gateway's attachments (one batched
//! `DescribeInternetGateways`, shared with the gateway kind).

use super::internet_gateway::describe;
use crate::AwsClients;
use crate::error::SdkResult;
use crate::lookup::{filter, owned};
use engine::prelude::*;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

#[derive(Attributes, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct InternetGatewayAttachment {
    #[attr(replace)]
    pub internet_gateway_id: String,
    #[attr(replace)]
    pub vpc_id: String,
}

pub(crate) struct InternetGatewayAttachmentKind(pub Arc<AwsClients>);

/// The attachment of `igw` to `vpc`.
fn attachment(igw: &str, vpc: &str) -> Live<InternetGatewayAttachment> {
    let attrs = InternetGatewayAttachment { internet_gateway_id: igw.into(), vpc_id: vpc.into() };
    Live::new(format!("{igw}/{vpc}"), attrs)
}

/// The gateway and VPC a request is about: from the spec, else from the recorded id.
fn target(r: &ReadRequest<InternetGatewayAttachment>) -> Option<(String, String)> {
    match (&r.desired, &r.id) {
        (Some(d), _) => Some((d.internet_gateway_id.clone(), d.vpc_id.clone())),
        (None, id) => id.as_ref()?.split_once('/').map(|(g, v)| (g.into(), v.into())),
    }
}

impl TypedKind for InternetGatewayAttachmentKind {
    type Attrs = InternetGatewayAttachment;
    const NAME: &'static str = "aws_internet_gateway_attachment";

    async fn read(&self, ctx: &Context, requests: &Requests<Self>) -> Found<Self> {
        let targets: Vec<_> = requests.iter().map(target).collect();
        let by_filter = |f| describe(&self.0, f);
        let mut found = owned(ctx, "internet-gateway-id", &by_filter).await?.as_ref().clone();
        let mut others: Vec<String> = targets
            .iter()
            .flatten()
            .map(|(igw, _)| igw.clone())
            .filter(|igw| !found.iter().any(|l| &l.id == igw))
            .collect();
        others.sort();
        others.dedup();
        if !others.is_empty() {
            found.extend(by_filter(filter("internet-gateway-id", others)).await?);
        }
        // Attached to the VPC wanted, else to another one (which the plan then replaces).
        Ok(targets
            .iter()
            .map(|t| {
                let (igw, vpc) = t.as_ref()?;
                let vpcs = &found.iter().find(|l| &l.id == igw)?.attributes.attached_vpc_ids;
                let vpc = if vpcs.contains(vpc) { vpc } else { vpcs.first()? };
                Some(attachment(igw, vpc))
            })
            .collect())
    }

    async fn create(&self, _: &Context, desired: &Self::Attrs) -> Outcome<Self> {
        let (igw, vpc) = (&desired.internet_gateway_id, &desired.vpc_id);
        let call = self.0.ec2.attach_internet_gateway().internet_gateway_id(igw).vpc_id(vpc);
        call.send().await.api("ec2:AttachInternetGateway")?;
        Ok(attachment(igw, vpc))
    }

    async fn delete(&self, _: &Context, current: &LiveOf<Self>) -> KindResult<()> {
        let a = &current.attributes;
        let call = self.0.ec2.detach_internet_gateway();
        let call = call.internet_gateway_id(&a.internet_gateway_id).vpc_id(&a.vpc_id);
        let gone = ["Gateway.NotAttached", "InvalidInternetGatewayID.NotFound"];
        call.send().await.or_gone("ec2:DetachInternetGateway", &gone)
    }
}
