//! EC2 kinds: the VPC and its secondary CIDRs, subnets, gateways, route tables, routes and
//! associations, the S3 gateway endpoint, security groups and rules, flow logs, launch
//! templates.

pub(crate) mod eip;
pub(crate) mod flow_log;
pub(crate) mod internet_gateway;
pub(crate) mod internet_gateway_attachment;
pub(crate) mod launch_template;
pub(crate) mod nat_gateway;
pub(crate) mod route;
pub(crate) mod route_table;
pub(crate) mod route_table_association;
pub(crate) mod security_group;
pub(crate) mod security_group_rule;
pub(crate) mod subnet;
pub(crate) mod vpc;
pub(crate) mod vpc_cidr_association;
pub(crate) mod vpc_endpoint;

use crate::error::SdkResult;
use aws_sdk_ec2::types::{ResourceType, Tag, TagSpecification};

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
