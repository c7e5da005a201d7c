//! EC2 kinds: the VPC and its secondary CIDRs, subnets, gateways, route tables, routes and
//! associations, the S3 gateway endpoint, security groups and rules, flow logs, launch
//! templates.

mod eip;
mod flow_log;
mod internet_gateway;
mod launch_template;
mod nat_gateway;
mod route;
mod route_table;
mod route_table_association;
mod security_group;
mod security_group_rule;
mod subnet;
mod vpc;
mod vpc_cidr_association;
mod vpc_endpoint;

use crate::AwsClients;
use crate::error::SdkResult;
use aws_sdk_ec2::types::{ResourceType, Tag, TagSpecification};
use engine::{Kind, Typed};
use std::sync::Arc;

pub(crate) fn kinds(shared: &Arc<AwsClients>) -> Vec<Arc<dyn Kind>> {
    vec![
        Typed::arc(vpc::VpcKind(shared.clone())),
        Typed::arc(vpc_cidr_association::VpcCidrAssociationKind(shared.clone())),
        Typed::arc(subnet::SubnetKind(shared.clone())),
        Typed::arc(internet_gateway::InternetGatewayKind(shared.clone())),
        Typed::arc(internet_gateway::InternetGatewayAttachmentKind(shared.clone())),
        Typed::arc(eip::EipKind(shared.clone())),
        Typed::arc(nat_gateway::NatGatewayKind(shared.clone())),
        Typed::arc(route_table::RouteTableKind(shared.clone())),
        Typed::arc(route::RouteKind(shared.clone())),
        Typed::arc(route_table_association::RouteTableAssociationKind(shared.clone())),
        Typed::arc(vpc_endpoint::VpcEndpointKind(shared.clone())),
        Typed::arc(security_group::SecurityGroupKind(shared.clone())),
        Typed::arc(security_group_rule::SecurityGroupRuleKind(shared.clone())),
        Typed::arc(flow_log::FlowLogKind(shared.clone())),
        Typed::arc(launch_template::LaunchTemplateKind(shared.clone())),
    ]
}

/// EC2's tagging calls (by resource id).
pub(crate) struct Ec2Tags<'a>(pub &'a aws_sdk_ec2::Client);

#[async_trait::async_trait]
impl crate::tagging::TagApi for Ec2Tags<'_> {
    async fn untag(&self, id: &str, keys: Vec<String>) -> Result<(), engine::KindError> {
        let tags = keys.into_iter().map(|k| Tag::builder().key(k).build());
        self.0
            .delete_tags()
            .resources(id)
            .set_tags(Some(tags.collect()))
            .send()
            .await
            .api("ec2:DeleteTags")
            .map(|_| ())
    }

    async fn tag(&self, id: &str, tags: engine::Tags) -> Result<(), engine::KindError> {
        self.0
            .create_tags()
            .resources(id)
            .set_tags(Some(ec2_tags(&tags)))
            .send()
            .await
            .api("ec2:CreateTags")
            .map(|_| ())
    }
}

/// Tags as EC2 tags.
pub(crate) fn ec2_tags(tags: &engine::Tags) -> Vec<Tag> {
    tags.iter().map(|(k, v)| Tag::builder().key(k).value(v).build()).collect()
}

/// EC2 tags as tags.
pub(crate) fn tags_of(tags: &[Tag]) -> engine::Tags {
    crate::tagging::from_pairs(
        tags.iter().map(|t| (t.key().unwrap_or_default(), t.value().unwrap_or_default())),
    )
}

/// A TagSpecification for a create call, so the resource is owned from its first moment.
pub(crate) fn tag_spec(resource: ResourceType, tags: &engine::Tags) -> TagSpecification {
    TagSpecification::builder().resource_type(resource).set_tags(Some(ec2_tags(tags))).build()
}
