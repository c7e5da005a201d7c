//! `aws_sqs_queue`: a standard SQS queue (Karpenter's interruption queue). Named by the spec,
//! so one whose create was not recorded is found again by name and adopted with its address
//! tag; a same-named queue without that tag is never taken over. Its id is the queue URL.
//! Retention and encryption change in place with `SetQueueAttributes`.

use super::{NO_SUCH_QUEUE, SqsTags};
use crate::AwsClients;
use crate::error::{SdkResult, required};
use crate::lookup::{read_by_key, still_there, wanted};
use crate::tagging::retag;
use aws_sdk_sqs::types::QueueAttributeName as Attr;
use engine::prelude::*;
use engine::retry::read_back;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::Arc;

#[derive(Attributes, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct Queue {
    #[attr(replace)]
    pub name: String,
    #[attr(in_place)]
    pub message_retention_seconds: Option<i64>,
    #[attr(in_place)]
    #[serde(default)]
    pub sqs_managed_sse: bool,
    #[attr(in_place, tags)]
    pub tags: Tags,
    #[attr(computed)]
    pub arn: Option<String>,
}

impl Queue {
    /// The attributes the engine sets, as SQS wants them.
    fn attributes(&self) -> HashMap<Attr, String> {
        let mut out =
            HashMap::from([(Attr::SqsManagedSseEnabled, self.sqs_managed_sse.to_string())]);
        if let Some(seconds) = self.message_retention_seconds {
            out.insert(Attr::MessageRetentionPeriod, seconds.to_string());
        }
        out
    }
}

/// The queue name at the end of a queue URL.
fn name_of_url(url: &str) -> &str {
    url.rsplit('/').next().unwrap_or(url)
}

pub(crate) struct QueueKind(pub Arc<AwsClients>);

impl QueueKind {
    async fn read_one(&self, name: &str) -> KindResult<Option<Live<Queue>>> {
        let sqs = &self.0.sqs;
        let call = sqs.get_queue_url().queue_name(name);
        let Some(out) = call.send().await.or_absent("sqs:GetQueueUrl", NO_SUCH_QUEUE)? else {
            return Ok(None);
        };
        let url = required(out.queue_url(), "sqs:GetQueueUrl: QueueUrl")?;
        let call = sqs.get_queue_attributes().queue_url(url).attribute_names(Attr::All);
        let attrs = call.send().await.or_absent("sqs:GetQueueAttributes", NO_SUCH_QUEUE)?;
        let tags = sqs.list_queue_tags().queue_url(url).send().await;
        let tags = tags.or_absent("sqs:ListQueueTags", NO_SUCH_QUEUE)?;
        let (Some(attrs), Some(tags)) = (attrs, tags) else {
            return Ok(None);
        };
        let get = |a: Attr| attrs.attributes().and_then(|m| m.get(&a));
        let queue = Queue {
            name: name.to_string(),
            message_retention_seconds: get(Attr::MessageRetentionPeriod)
                .and_then(|v| v.parse().ok()),
            sqs_managed_sse: get(Attr::SqsManagedSseEnabled).is_some_and(|v| v == "true"),
            tags: tags.tags().cloned().unwrap_or_default().into_iter().collect(),
            arn: get(Attr::QueueArn).cloned(),
        };
        Ok(Some(Live::new(url, queue)))
    }
}

impl TypedKind for QueueKind {
    type Attrs = Queue;
    const NAME: &'static str = "aws_sqs_queue";

    async fn read(&self, _: &Context, requests: &Requests<Self>) -> Found<Self> {
        // The recorded id is the queue's URL, which ends with its name.
        let key = |r: &ReadRequest<Queue>| {
            wanted(r, |q| q.name.clone()).map(|k| name_of_url(&k).to_string())
        };
        read_by_key(requests, key, |name| async move { self.read_one(&name).await }).await
    }

    async fn create(&self, _: &Context, desired: &Self::Attrs) -> Outcome<Self> {
        let name = &desired.name;
        // CreateQueue answers with the existing queue when the attributes match: a same-named
        // queue that is not this spec's must not be taken over that way.
        if self.read_one(name).await?.is_some() {
            return Err(KindError::new(format!(
                "sqs:CreateQueue: queue {name} already exists and is not this spec's"
            )));
        }
        let call = self.0.sqs.create_queue().queue_name(name);
        let call = call.set_attributes(Some(desired.attributes()));
        let call = call.set_tags(Some(desired.tags.clone().into_iter().collect()));
        call.send().await.api("sqs:CreateQueue").map_err(|mut e| {
            // A queue of this name deleted less than a minute ago: nothing was created.
            e.retryable |= e.code.as_deref().is_some_and(|c| c.ends_with("QueueDeletedRecently"));
            e
        })?;
        read_back(&format!("queue {name}"), || self.read_one(name)).await
    }

    async fn update(&self, _: &Context, update: Update<'_, Self>) -> Outcome<Self> {
        let Update { current, desired, changes } = update;
        let (sqs, url) = (&self.0.sqs, &current.id);
        if changes.message_retention_seconds || changes.sqs_managed_sse {
            let call = sqs.set_queue_attributes().queue_url(url);
            let call = call.set_attributes(Some(desired.attributes()));
            call.send().await.api("sqs:SetQueueAttributes")?;
        }
        if changes.tags {
            retag(&SqsTags(sqs), url, &current.attributes.tags, &desired.tags).await?;
        }
        let name = &desired.name;
        still_there(&format!("queue {name}"), self.read_one(name).await?)
    }

    async fn delete(&self, _: &Context, current: &LiveOf<Self>) -> KindResult<()> {
        let call = self.0.sqs.delete_queue().queue_url(&current.id);
        call.send().await.or_gone("sqs:DeleteQueue", NO_SUCH_QUEUE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use engine::testing::changed_fields;

    fn queue() -> Queue {
        Queue {
            name: "aws-0".into(),
            message_retention_seconds: Some(300),
            sqs_managed_sse: true,
            tags: Tags::new(),
            arn: None,
        }
    }

    #[test]
    fn retention_and_encryption_change_in_place() {
        let live = queue();
        let mut desired = live.clone();
        desired.message_retention_seconds = Some(600);
        desired.sqs_managed_sse = false;
        assert_eq!(
            changed_fields(&live, &desired),
            [("message_retention_seconds", false), ("sqs_managed_sse", false)]
        );
        desired.name = "other".into();
        assert!(changed_fields(&live, &desired).contains(&("name", true)));
    }

    #[test]
    fn names_come_from_urls() {
        assert_eq!(name_of_url("https://sqs.eu-west-3.amazonaws.com/123456789012/aws-0"), "aws-0");
        assert_eq!(name_of_url("aws-0"), "aws-0");
    }

    #[test]
    fn attributes_are_sent_as_sqs_strings() {
        let a = queue().attributes();
        assert_eq!(a[&Attr::MessageRetentionPeriod], "300");
        assert_eq!(a[&Attr::SqsManagedSseEnabled], "true");
    }
}
