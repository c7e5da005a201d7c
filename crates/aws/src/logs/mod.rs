//! CloudWatch Logs kinds: log groups; Logs' tagging calls (by ARN).

pub(crate) mod log_group;

use crate::error::SdkResult;
use crate::tagging::TagApi;
use async_trait::async_trait;
use engine::{KindError, Tags};

/// CloudWatch Logs' tagging calls (by ARN).
pub(crate) struct LogsTags<'a>(pub &'a aws_sdk_cloudwatchlogs::Client);

#[async_trait]
impl TagApi for LogsTags<'_> {
    async fn untag(&self, arn: &str, keys: Vec<String>) -> Result<(), KindError> {
        let call = self.0.untag_resource().resource_arn(arn).set_tag_keys(Some(keys));
        call.send().await.api("logs:UntagResource").map(|_| ())
    }

    async fn tag(&self, arn: &str, tags: Tags) -> Result<(), KindError> {
        let call =
            self.0.tag_resource().resource_arn(arn).set_tags(Some(tags.into_iter().collect()));
        call.send().await.api("logs:TagResource").map(|_| ())
    }
}
