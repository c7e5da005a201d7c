//! `aws_sqs_queue_policy`: the access policy of an SQS queue, the queue's `Policy` attribute
//! (a separate resource because its statements name the queue's ARN). Identified by the queue
//! URL; it has no tags, so a policy found on a queue but not recorded counts as ours only when
//! it already means the wanted document. Changed in place; deleting it clears the attribute.

use super::NO_SUCH_QUEUE;
use crate::AwsClients;
use crate::error::SdkResult;
use crate::lookup::{ours_by_value, read_each, wanted};
use aws_sdk_sqs::types::QueueAttributeName;
use engine::normalize::iam_policy;
use engine::prelude::*;
use engine::retry::read_back;
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;
use std::sync::Arc;

#[derive(Attributes, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct QueuePolicy {
    #[attr(replace)]
    pub queue_url: String,
    /// The policy document (as SQS returns it: parsed when it is JSON).
    #[attr(in_place, normalize = engine::normalize::iam_policy)]
    pub policy: Json,
}

pub(crate) struct QueuePolicyKind(pub Arc<AwsClients>);

impl QueuePolicyKind {
    async fn read_one(&self, url: &str) -> KindResult<Option<Live<QueuePolicy>>> {
        let call = self.0.sqs.get_queue_attributes().queue_url(url);
        let call = call.attribute_names(QueueAttributeName::Policy);
        let out = call.send().await.or_absent("sqs:GetQueueAttributes", NO_SUCH_QUEUE)?;
        let text = out.as_ref().and_then(|o| o.attributes()?.get(&QueueAttributeName::Policy));
        Ok(text.filter(|t| !t.is_empty()).map(|text| {
            let policy = serde_json::from_str(text).unwrap_or_else(|_| Json::from(text.as_str()));
            Live::new(url, QueuePolicy { queue_url: url.to_string(), policy })
        }))
    }

    async fn write(&self, desired: &QueuePolicy) -> KindResult<Live<QueuePolicy>> {
        let url = &desired.queue_url;
        let text = match &desired.policy {
            Json::String(text) => text.clone(),
            document => document.to_string(),
        };
        let call = self.0.sqs.set_queue_attributes().queue_url(url);
        let call = call.attributes(QueueAttributeName::Policy, text);
        call.send().await.api("sqs:SetQueueAttributes")?;
        read_back(&format!("policy of queue {url}"), || self.read_one(url)).await
    }
}

impl TypedKind for QueuePolicyKind {
    type Attrs = QueuePolicy;
    const NAME: &'static str = "aws_sqs_queue_policy";

    async fn read(&self, _: &Context, requests: &Requests<Self>) -> Found<Self> {
        let key = |r: &ReadRequest<QueuePolicy>| wanted(r, |p| p.queue_url.clone());
        let found =
            read_each(requests, key, |url| async move { self.read_one(&url).await }).await?;
        let same =
            |a: &QueuePolicy, b: &QueuePolicy| iam_policy(&a.policy) == iam_policy(&b.policy);
        Ok(requests.iter().zip(found).map(|(r, l)| ours_by_value(r, l, same)).collect())
    }

    async fn create(&self, _: &Context, desired: &Self::Attrs) -> Outcome<Self> {
        self.write(desired).await
    }

    async fn update(&self, _: &Context, update: Update<'_, Self>) -> Outcome<Self> {
        let Update { desired, .. } = update;
        self.write(desired).await
    }

    async fn delete(&self, _: &Context, current: &LiveOf<Self>) -> KindResult<()> {
        let call = self.0.sqs.set_queue_attributes().queue_url(&current.id);
        let call = call.attributes(QueueAttributeName::Policy, "");
        call.send().await.or_gone("sqs:SetQueueAttributes", NO_SUCH_QUEUE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use engine::testing::changed_fields;
    use serde_json::json;

    #[test]
    fn policies_compare_by_meaning() {
        let statement = json!({"Effect": "Allow", "Action": "sqs:SendMessage", "Resource": "q"});
        let live = QueuePolicy {
            queue_url: "https://sqs.eu-west-3.amazonaws.com/123456789012/aws-0".into(),
            policy: json!({"Version": "2012-10-17", "Statement": [statement]}),
        };
        let mut same = live.clone();
        same.policy = json!(
            r#"{"Statement": {"Action": ["sqs:SendMessage"], "Effect": "Allow", "Resource": "q"},
                "Version": "2012-10-17"}"#
        );
        assert!(changed_fields(&live, &same).is_empty());
        let mut other = live.clone();
        other.policy["Statement"][0]["Effect"] = json!("Deny");
        assert_eq!(changed_fields(&live, &other), [("policy", false)]);
    }
}
