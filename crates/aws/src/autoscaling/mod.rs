//! Auto Scaling kinds: autoscaling groups.

pub(crate) mod group;

use crate::error::SdkResult;
use crate::tagging::TagApi;
use async_trait::async_trait;
use aws_sdk_autoscaling::types::Tag;
use aws_sdk_autoscaling::types::builders::TagBuilder;
use engine::{KindResult, Tags};

/// The tag `key` of the group named `group`, its value yet to set.
fn group_tag(group: &str, key: impl Into<String>) -> TagBuilder {
    Tag::builder().resource_id(group).resource_type("auto-scaling-group").key(key)
}

/// A group's tags for AWS: the engine's ownership tags stay on the group, the others propagate
/// to the instances it launches.
pub(crate) fn asg_tags(group: &str, tags: &Tags) -> Vec<Tag> {
    let tag = |(k, v): (&String, &String)| {
        group_tag(group, k).value(v).propagate_at_launch(!k.starts_with("engine:")).build()
    };
    tags.iter().map(tag).collect()
}

/// Auto Scaling's tagging calls (by group name).
pub(crate) struct AsgTags<'a>(pub &'a aws_sdk_autoscaling::Client);

#[async_trait]
impl TagApi for AsgTags<'_> {
    async fn untag(&self, group: &str, keys: Vec<String>) -> KindResult<()> {
        let tags = keys.into_iter().map(|k| group_tag(group, k).build()).collect();
        let call = self.0.delete_tags().set_tags(Some(tags));
        call.send().await.api("autoscaling:DeleteTags").map(|_| ())
    }

    async fn tag(&self, group: &str, tags: Tags) -> KindResult<()> {
        let call = self.0.create_or_update_tags().set_tags(Some(asg_tags(group, &tags)));
        call.send().await.api("autoscaling:CreateOrUpdateTags").map(|_| ())
    }
}
