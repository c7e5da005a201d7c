//! `aws_cloudwatch_log_group`: the flow logs' destination. Named by the spec and tagged in the
//! create call, so a group made by a run that died before recording it is found (and adopted)
//! by the refresh; "already exists" on create means someone else's group.

use super::LogsTags;
use crate::AwsClients;
use crate::error::{SdkResult, required};
use crate::lookup::{read_named, still_there};
use crate::tagging::retag;
use engine::prelude::*;
use engine::retry::{read_back, settle};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

#[derive(Attributes, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct LogGroup {
    #[attr(replace)]
    pub name: String,
    /// `None`: kept forever.
    #[attr(in_place)]
    pub retention_in_days: Option<i32>,
    #[attr(in_place, tags)]
    pub tags: Tags,
    #[attr(computed)]
    pub arn: Option<String>,
}

pub(crate) struct LogGroupKind(pub Arc<AwsClients>);

impl LogGroupKind {
    async fn read_one(&self, name: &str) -> KindResult<Option<Live<LogGroup>>> {
        let logs = &self.0.logs;
        let call = logs.describe_log_groups().log_group_name_prefix(name);
        let out = call.send().await.api("logs:DescribeLogGroups")?;
        let Some(g) = out.log_groups().iter().find(|g| g.log_group_name() == Some(name)) else {
            return Ok(None);
        };
        let arn = g.arn().map(|a| a.trim_end_matches(":*"));
        let arn = required(g.log_group_arn().or(arn), "logs:DescribeLogGroups: logGroupArn")?;
        let call = logs.list_tags_for_resource().resource_arn(arn);
        let tags = call.send().await.api("logs:ListTagsForResource")?;
        let group = LogGroup {
            name: name.to_string(),
            retention_in_days: g.retention_in_days(),
            tags: tags.tags().into_iter().flatten().map(|(k, v)| (k.clone(), v.clone())).collect(),
            arn: Some(arn.to_string()),
        };
        Ok(Some(Live::new(name, group)))
    }

    async fn set_retention(&self, name: &str, days: Option<i32>) -> KindResult<()> {
        let logs = &self.0.logs;
        match days {
            Some(days) => {
                let call = logs.put_retention_policy().log_group_name(name).retention_in_days(days);
                call.send().await.api("logs:PutRetentionPolicy").map(|_| ())
            }
            None => {
                let call = logs.delete_retention_policy().log_group_name(name);
                call.send().await.api("logs:DeleteRetentionPolicy").map(|_| ())
            }
        }
    }
}

impl TypedKind for LogGroupKind {
    type Attrs = LogGroup;
    const NAME: &'static str = "aws_cloudwatch_log_group";

    /// One lookup per group (the spec has one).
    async fn read(&self, _: &Context, requests: &Requests<Self>) -> Found<Self> {
        read_named(requests, |d| d.name.clone(), |n| async move { self.read_one(&n).await }).await
    }

    async fn create(&self, _: &Context, desired: &Self::Attrs) -> Outcome<Self> {
        let name = &desired.name;
        let tags = desired.tags.clone().into_iter().collect();
        let call = self.0.logs.create_log_group().log_group_name(name).set_tags(Some(tags));
        call.send().await.api("logs:CreateLogGroup")?;
        if desired.retention_in_days.is_some() {
            settle(|| self.set_retention(name, desired.retention_in_days)).await?;
        }
        read_back(&format!("log group {name}"), || self.read_one(name)).await
    }

    async fn update(&self, _: &Context, update: Update<'_, Self>) -> Outcome<Self> {
        let Update { current, desired, changes } = update;
        let name = &current.id;
        if changes.retention_in_days {
            self.set_retention(name, desired.retention_in_days).await?;
        }
        if changes.tags {
            let arn = current.attributes.arn.as_deref();
            let arn = required(arn, &format!("log group {name}: arn"))?;
            retag(&LogsTags(&self.0.logs), arn, &current.attributes.tags, &desired.tags).await?;
        }
        still_there(&format!("log group {name}"), self.read_one(name).await?)
    }

    async fn delete(&self, _: &Context, current: &LiveOf<Self>) -> KindResult<()> {
        let call = self.0.logs.delete_log_group().log_group_name(&current.id);
        call.send().await.or_gone("logs:DeleteLogGroup", &["ResourceNotFoundException"])
    }
}
