//! Route53 kinds: private hosted zones and their records; Route53's tagging calls.

pub(crate) mod record;
pub(crate) mod zone;

use crate::error::SdkResult;
use crate::tagging::TagApi;
use async_trait::async_trait;
use aws_sdk_route53::operation::change_tags_for_resource::builders::ChangeTagsForResourceFluentBuilder as ChangeTags;
use aws_sdk_route53::types::{Tag, TagResourceType};
use engine::{KindError, Tags};

/// Route53's tagging call, for hosted zones (by short zone id).
pub(crate) struct ZoneTags<'a>(pub &'a aws_sdk_route53::Client);

impl ZoneTags<'_> {
    fn call(&self, id: &str) -> ChangeTags {
        let call = self.0.change_tags_for_resource().resource_id(id);
        call.resource_type(TagResourceType::Hostedzone)
    }
}

#[async_trait]
impl TagApi for ZoneTags<'_> {
    async fn untag(&self, id: &str, keys: Vec<String>) -> Result<(), KindError> {
        let call = self.call(id).set_remove_tag_keys(Some(keys));
        call.send().await.api("route53:ChangeTagsForResource").map(|_| ())
    }

    async fn tag(&self, id: &str, tags: Tags) -> Result<(), KindError> {
        let tags = tags.iter().map(|(k, v)| Tag::builder().key(k).value(v).build());
        let call = self.call(id).set_add_tags(Some(tags.collect()));
        call.send().await.api("route53:ChangeTagsForResource").map(|_| ())
    }
}
