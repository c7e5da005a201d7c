//! SQS kinds: queues and their policies; SQS's tagging calls and its "no such queue" codes.

pub(crate) mod queue;
pub(crate) mod queue_policy;

use crate::error::SdkResult;
use crate::tagging::TagApi;
use async_trait::async_trait;
use engine::{KindResult, Tags};

/// The codes of "the queue does not exist": the JSON protocol's, and the query protocol's that
/// SQS also sends.
pub(crate) const NO_SUCH_QUEUE: &[&str] =
    &["QueueDoesNotExist", "AWS.SimpleQueueService.NonExistentQueue"];

/// SQS's tagging calls (by queue URL).
pub(crate) struct SqsTags<'a>(pub &'a aws_sdk_sqs::Client);

#[async_trait]
impl TagApi for SqsTags<'_> {
    async fn untag(&self, url: &str, keys: Vec<String>) -> KindResult<()> {
        let call = self.0.untag_queue().queue_url(url).set_tag_keys(Some(keys));
        call.send().await.api("sqs:UntagQueue").map(|_| ())
    }

    async fn tag(&self, url: &str, tags: Tags) -> KindResult<()> {
        let call = self.0.tag_queue().queue_url(url).set_tags(Some(tags.into_iter().collect()));
        call.send().await.api("sqs:TagQueue").map(|_| ())
    }
}
