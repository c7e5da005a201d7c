//! `aws_sqs_queue`: a standard SQS queue (Karpenter's interruption queue). Named by the spec,
//! so one whose create was not recorded is found again by name and adopted with its address
//! tag; a same-named queue without that tag is never taken over. Its id is the queue URL. Retention and encryption change in place with
//! `SetQueueAttributes`, tags with `TagQueue`/`UntagQueue`.

use crate::AwsClients;
use crate::error::{api_error, has_code};
use crate::lookup_json::{bool_attr, int_attr, live, read_by_name, str_attr};
use crate::settle::read_back;
use async_trait::async_trait;
use aws_sdk_sqs::error::ProvideErrorMetadata;
use aws_sdk_sqs::types::QueueAttributeName;
use aws_smithy_runtime_api::client::result::SdkError;
use engine::{Address, Attrs, Context, Field, Kind, KindError, Live, ReadRequest};
use serde_json::json;
use std::collections::HashMap;
use std::sync::Arc;

pub(crate) struct SqsQueue(pub Arc<AwsClients>);

const FIELDS: &[Field] = &[
    Field::replace("name"),
    Field::in_place("message_retention_seconds"),
    Field::in_place("sqs_managed_sse"),
    Field::in_place("tags"),
    Field::computed("id"),
    Field::computed("arn"),
];

/// Whether an SQS error says the queue does not exist (the JSON protocol's code, or the query
/// protocol's that SQS also sends).
pub(crate) fn no_such_queue<E: ProvideErrorMetadata, R>(err: &SdkError<E, R>) -> bool {
    has_code(err, "QueueDoesNotExist") || has_code(err, "AWS.SimpleQueueService.NonExistentQueue")
}

/// The queue name at the end of a queue URL.
pub(crate) fn name_of_url(url: &str) -> &str {
    url.rsplit('/').next().unwrap_or(url)
}

/// The attributes the engine sets, as SQS wants them.
fn queue_attributes(desired: &Attrs) -> Result<HashMap<QueueAttributeName, String>, KindError> {
    Ok(HashMap::from([
        (
            QueueAttributeName::MessageRetentionPeriod,
            int_attr(desired, "message_retention_seconds")?.to_string(),
        ),
        (
            QueueAttributeName::SqsManagedSseEnabled,
            bool_attr(desired, "sqs_managed_sse").to_string(),
        ),
    ]))
}

impl SqsQueue {
    fn sqs(&self) -> Result<&aws_sdk_sqs::Client, KindError> {
        Ok(&self.0.sqs)
    }

    async fn read_one(&self, name: &str) -> Result<Option<Live>, KindError> {
        let sqs = self.sqs()?;
        let url = match sqs.get_queue_url().queue_name(name).send().await {
            Ok(out) => out.queue_url().unwrap_or_default().to_string(),
            Err(e) if no_such_queue(&e) => return Ok(None),
            Err(e) => return Err(api_error("sqs:GetQueueUrl", e)),
        };
        let attrs = match sqs
            .get_queue_attributes()
            .queue_url(&url)
            .attribute_names(QueueAttributeName::All)
            .send()
            .await
        {
            Ok(out) => out.attributes().cloned().unwrap_or_default(),
            Err(e) if no_such_queue(&e) => return Ok(None),
            Err(e) => return Err(api_error("sqs:GetQueueAttributes", e)),
        };
        let tags = match sqs.list_queue_tags().queue_url(&url).send().await {
            Ok(out) => out.tags().cloned().unwrap_or_default(),
            Err(e) if no_such_queue(&e) => return Ok(None),
            Err(e) => return Err(api_error("sqs:ListQueueTags", e)),
        };
        let mut tags: Vec<(&str, &str)> =
            tags.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        tags.sort();
        let get = |a: QueueAttributeName| attrs.get(&a).map(String::as_str);
        Ok(Some(live(
            url.as_str(),
            [
                ("name", json!(name)),
                (
                    "message_retention_seconds",
                    json!(
                        get(QueueAttributeName::MessageRetentionPeriod)
                            .and_then(|v| v.parse::<i64>().ok())
                    ),
                ),
                (
                    "sqs_managed_sse",
                    json!(get(QueueAttributeName::SqsManagedSseEnabled) == Some("true")),
                ),
                ("tags", crate::tags::to_json(tags)),
                ("arn", json!(get(QueueAttributeName::QueueArn))),
            ],
        )))
    }
}

#[async_trait]
impl Kind for SqsQueue {
    fn name(&self) -> &'static str {
        "aws_sqs_queue"
    }

    fn fields(&self) -> &'static [Field] {
        FIELDS
    }

    async fn read(
        &self,
        _ctx: &Context,
        requests: &[ReadRequest],
    ) -> Result<Vec<Option<Live>>, KindError> {
        // The recorded id is the queue's URL, which ends with its name.
        read_by_name(requests, "name", |n| async move { self.read_one(name_of_url(&n)).await })
            .await
    }

    #[tracing::instrument(skip_all, fields(%address))]
    async fn create(
        &self,
        _ctx: &Context,
        address: &Address,
        desired: &Attrs,
    ) -> Result<Live, KindError> {
        let name = str_attr(desired, "name")?;
        // CreateQueue answers with the existing queue when the attributes match: a same-named
        // queue that is not this spec's must not be taken over that way.
        if self.read_one(name).await?.is_some() {
            return Err(KindError::new(format!(
                "sqs:CreateQueue: queue {name} already exists and is not this spec's"
            )));
        }
        let out = self
            .sqs()?
            .create_queue()
            .queue_name(name)
            .set_attributes(Some(queue_attributes(desired)?))
            .set_tags(Some(crate::tags::from_attrs(desired).into_iter().collect()))
            .send()
            .await;
        if let Err(e) = out {
            let mut err = api_error("sqs:CreateQueue", e);
            // A queue of this name deleted less than a minute ago: nothing was created.
            err.retryable |= err.code.as_deref() == Some("QueueDeletedRecently")
                || err.code.as_deref() == Some("AWS.SimpleQueueService.QueueDeletedRecently");
            return Err(err);
        }
        tracing::info!(queue = name, "created queue");
        read_back(&format!("queue {name}"), || self.read_one(name)).await
    }

    #[tracing::instrument(skip_all, fields(%address))]
    async fn update(
        &self,
        _ctx: &Context,
        address: &Address,
        current: &Live,
        desired: &Attrs,
    ) -> Result<Live, KindError> {
        let sqs = self.sqs()?;
        let url = current.id.as_str();
        let have = &current.attributes;
        if ["message_retention_seconds", "sqs_managed_sse"]
            .iter()
            .any(|f| have.get(*f) != desired.get(*f))
        {
            sqs.set_queue_attributes()
                .queue_url(url)
                .set_attributes(Some(queue_attributes(desired)?))
                .send()
                .await
                .map_err(|e| api_error("sqs:SetQueueAttributes", e))?;
        }
        crate::tags::update(
            have,
            desired,
            |keys| async move {
                sqs.untag_queue()
                    .queue_url(url)
                    .set_tag_keys(Some(keys))
                    .send()
                    .await
                    .map(|_| ())
                    .map_err(|e| api_error("sqs:UntagQueue", e))
            },
            || async {
                sqs.tag_queue()
                    .queue_url(url)
                    .set_tags(Some(crate::tags::from_attrs(desired).into_iter().collect()))
                    .send()
                    .await
                    .map(|_| ())
                    .map_err(|e| api_error("sqs:TagQueue", e))
            },
        )
        .await?;
        let name = str_attr(desired, "name")?;
        self.read_one(name).await?.ok_or_else(|| KindError::new(format!("queue {name} vanished")))
    }

    #[tracing::instrument(skip_all, fields(%address))]
    async fn delete(
        &self,
        _ctx: &Context,
        address: &Address,
        current: &Live,
    ) -> Result<(), KindError> {
        match self.sqs()?.delete_queue().queue_url(&current.id).send().await {
            Ok(_) => Ok(()),
            Err(e) if no_such_queue(&e) => Ok(()),
            Err(e) => Err(api_error("sqs:DeleteQueue", e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retention_and_encryption_change_in_place() {
        use crate::stages::eks::changed_fields;
        let live = json!({"name": "aws-0", "message_retention_seconds": 300, "sqs_managed_sse": true, "tags": {}});
        let mut desired = live.clone();
        desired["message_retention_seconds"] = json!(600);
        desired["sqs_managed_sse"] = json!(false);
        assert_eq!(
            changed_fields(FIELDS, &live, &desired),
            [("message_retention_seconds", false), ("sqs_managed_sse", false)]
        );
        desired["name"] = json!("other");
        assert!(changed_fields(FIELDS, &live, &desired).contains(&("name", true)));
    }

    #[test]
    fn names_come_from_urls() {
        assert_eq!(name_of_url("https://sqs.eu-west-3.amazonaws.com/123456789012/aws-0"), "aws-0");
        assert_eq!(name_of_url("aws-0"), "aws-0");
    }

    #[test]
    fn attributes_are_sent_as_sqs_strings() {
        let desired = json!({"message_retention_seconds": 300, "sqs_managed_sse": true});
        let a = queue_attributes(desired.as_object().unwrap()).unwrap();
        assert_eq!(a[&QueueAttributeName::MessageRetentionPeriod], "300");
        assert_eq!(a[&QueueAttributeName::SqsManagedSseEnabled], "true");
    }
}
