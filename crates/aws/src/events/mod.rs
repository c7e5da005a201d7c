//! EventBridge kinds: rules with their target; EventBridge's tagging calls.

pub(crate) mod rule;

use crate::error::SdkResult;
use crate::tagging::TagApi;
use async_trait::async_trait;
use aws_sdk_eventbridge::types::Tag;
use engine::{KindError, KindResult, Tags};

/// Tags as EventBridge tags.
pub(crate) fn event_tags(tags: &Tags) -> KindResult<Vec<Tag>> {
    let tag = |(k, v): (&String, &String)| Tag::builder().key(k).value(v).build();
    tags.iter().map(tag).collect::<Result<_, _>>().map_err(|e| KindError::new(e.to_string()))
}

/// EventBridge's tagging calls (by ARN).
pub(crate) struct EventTags<'a>(pub &'a aws_sdk_eventbridge::Client);

#[async_trait]
impl TagApi for EventTags<'_> {
    async fn untag(&self, arn: &str, keys: Vec<String>) -> KindResult<()> {
        let call = self.0.untag_resource().resource_arn(arn).set_tag_keys(Some(keys));
        call.send().await.api("events:UntagResource").map(|_| ())
    }

    async fn tag(&self, arn: &str, tags: Tags) -> KindResult<()> {
        let call = self.0.tag_resource().resource_arn(arn).set_tags(Some(event_tags(&tags)?));
        call.send().await.api("events:TagResource").map(|_| ())
    }
}
