//! `aws_sqs_queue_policy`: the access policy of an SQS queue, the queue's `Policy` attribute
//! (a separate resource because its statements name the queue's ARN). Identified by the queue
//! URL; it has no tags, so a policy found on a queue but not recorded counts as ours only when
//! it already is the wanted document. Changed in place; deleting it clears the attribute.

use super::queue::no_such_queue;
use crate::AwsClients;
use crate::error::api_error;
use crate::lookup_json::{live, ours_by_value, read_each, str_attr, wanted_name};
use async_trait::async_trait;
use aws_sdk_sqs::types::QueueAttributeName;
use engine::{Address, Attrs, Context, Field, Kind, KindError, Live, ReadRequest};
use serde_json::{Value as Json, json};
use std::sync::Arc;

pub(crate) struct SqsQueuePolicy(pub Arc<AwsClients>);

const FIELDS: &[Field] =
    &[Field::replace("queue_url"), Field::in_place("policy"), Field::computed("id")];

impl SqsQueuePolicy {
    fn sqs(&self) -> Result<&aws_sdk_sqs::Client, KindError> {
        Ok(&self.0.sqs)
    }

    async fn read_one(&self, url: &str) -> Result<Option<Live>, KindError> {
        let out = match self
            .sqs()?
            .get_queue_attributes()
            .queue_url(url)
            .attribute_names(QueueAttributeName::Policy)
            .send()
            .await
        {
            Ok(out) => out,
            Err(e) if no_such_queue(&e) => return Ok(None),
            Err(e) => return Err(api_error("sqs:GetQueueAttributes", e)),
        };
        let Some(text) = out
            .attributes()
            .and_then(|a| a.get(&QueueAttributeName::Policy))
            .filter(|p| !p.is_empty())
        else {
            return Ok(None);
        };
        let policy: Json = serde_json::from_str(text)
            .map_err(|e| KindError::new(format!("the policy of queue {url} is not JSON: {e}")))?;
        Ok(Some(live(url, [("queue_url", json!(url)), ("policy", policy)])))
    }

    async fn put(&self, url: &str, policy: &str) -> Result<(), KindError> {
        self.sqs()?
            .set_queue_attributes()
            .queue_url(url)
            .attributes(QueueAttributeName::Policy, policy)
            .send()
            .await
            .map(|_| ())
            .map_err(|e| api_error("sqs:SetQueueAttributes", e))
    }

    async fn write(&self, desired: &Attrs) -> Result<Live, KindError> {
        let url = str_attr(desired, "queue_url")?;
        let policy = desired
            .get("policy")
            .filter(|p| p.is_object())
            .ok_or_else(|| KindError::new("attribute `policy` is missing or not a document"))?;
        self.put(url, &policy.to_string()).await?;
        crate::settle::read_back(&format!("policy of queue {url}"), || self.read_one(url)).await
    }
}

#[async_trait]
impl Kind for SqsQueuePolicy {
    fn name(&self) -> &'static str {
        "aws_sqs_queue_policy"
    }

    fn fields(&self) -> &'static [Field] {
        FIELDS
    }

    async fn read(
        &self,
        _ctx: &Context,
        requests: &[ReadRequest],
    ) -> Result<Vec<Option<Live>>, KindError> {
        let found = read_each(
            requests,
            |r| wanted_name(r, "queue_url"),
            |url| async move { self.read_one(&url).await },
        )
        .await?;
        Ok(requests.iter().zip(found).map(|(r, l)| ours_by_value(r, l, "policy")).collect())
    }

    #[tracing::instrument(skip_all, fields(%address))]
    async fn create(
        &self,
        _ctx: &Context,
        address: &Address,
        desired: &Attrs,
    ) -> Result<Live, KindError> {
        self.write(desired).await
    }

    #[tracing::instrument(skip_all, fields(%address))]
    async fn update(
        &self,
        _ctx: &Context,
        address: &Address,
        _current: &Live,
        desired: &Attrs,
    ) -> Result<Live, KindError> {
        self.write(desired).await
    }

    #[tracing::instrument(skip_all, fields(%address))]
    async fn delete(
        &self,
        _ctx: &Context,
        address: &Address,
        current: &Live,
    ) -> Result<(), KindError> {
        match self.put(&current.id, "").await {
            Err(e)
                if e.code.as_deref().is_some_and(|c| {
                    c.contains("NonExistentQueue") || c == "QueueDoesNotExist"
                }) =>
            {
                Ok(())
            }
            other => other,
        }
    }
}
