//! `aws_cloudwatch_log_group`: the flow logs' destination.

use crate::AwsClients;
use crate::error::{api_error, has_code};
use crate::lookup_json::{live, read_by_name, still_there, str_attr};
use crate::settle::settle;
use async_trait::async_trait;
use engine::{Address, Attrs, Context, Field, Kind, KindError, Live, ReadRequest};
use serde_json::{Value as Json, json};
use std::sync::Arc;

pub(crate) struct LogGroup(pub Arc<AwsClients>);

const FIELDS: &[Field] = &[
    Field::replace("name"),
    Field::in_place("retention_in_days"),
    Field::in_place("tags"),
    Field::computed("id"),
    Field::computed("arn"),
];

impl LogGroup {
    async fn read_one(&self, name: &str) -> Result<Option<Live>, KindError> {
        let logs = &self.0.logs;
        let out = logs
            .describe_log_groups()
            .log_group_name_prefix(name)
            .send()
            .await
            .map_err(|e| api_error("logs:DescribeLogGroups", e))?;
        let Some(g) = out.log_groups().iter().find(|g| g.log_group_name() == Some(name)) else {
            return Ok(None);
        };
        let arn = g
            .log_group_arn()
            .map(str::to_string)
            .or_else(|| g.arn().map(|a| a.trim_end_matches(":*").to_string()))
            .unwrap_or_default();
        let tags = logs
            .list_tags_for_resource()
            .resource_arn(&arn)
            .send()
            .await
            .map_err(|e| api_error("logs:ListTagsForResource", e))?;
        let tags = crate::tags::to_json(
            tags.tags()
                .map(|m| m.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect::<Vec<_>>())
                .unwrap_or_default(),
        );
        Ok(Some(live(
            name,
            [
                ("name", json!(name)),
                ("retention_in_days", json!(g.retention_in_days())),
                ("tags", tags),
                ("arn", json!(arn)),
            ],
        )))
    }

    async fn set_retention(&self, name: &str, days: Option<i64>) -> Result<(), KindError> {
        let logs = &self.0.logs;
        match days {
            Some(d) => logs
                .put_retention_policy()
                .log_group_name(name)
                .retention_in_days(d as i32)
                .send()
                .await
                .map(|_| ())
                .map_err(|e| api_error("logs:PutRetentionPolicy", e)),
            None => logs
                .delete_retention_policy()
                .log_group_name(name)
                .send()
                .await
                .map(|_| ())
                .map_err(|e| api_error("logs:DeleteRetentionPolicy", e)),
        }
    }
}

#[async_trait]
impl Kind for LogGroup {
    fn name(&self) -> &'static str {
        "aws_cloudwatch_log_group"
    }

    fn fields(&self) -> &'static [Field] {
        FIELDS
    }

    async fn read(
        &self,
        _ctx: &Context,
        requests: &[ReadRequest],
    ) -> Result<Vec<Option<Live>>, KindError> {
        // Log groups are named by the spec: one lookup per group (the spec has one).
        read_by_name(requests, "name", |n| async move { self.read_one(&n).await }).await
    }

    async fn create(
        &self,
        _ctx: &Context,
        _address: &Address,
        desired: &Attrs,
    ) -> Result<Live, KindError> {
        let logs = &self.0.logs;
        let name = str_attr(desired, "name")?;
        // Tagged in the same call, so a group made by a run that died before recording it is
        // found (and adopted) by the refresh; "already exists" here means someone else's group.
        logs.create_log_group()
            .log_group_name(name)
            .set_tags(Some(crate::tags::from_attrs(desired).into_iter().collect()))
            .send()
            .await
            .map_err(|e| api_error("logs:CreateLogGroup", e))?;
        let days = desired.get("retention_in_days").and_then(Json::as_i64);
        settle(|| self.set_retention(name, days)).await?;
        settle(|| async {
            self.read_one(name)
                .await?
                .ok_or_else(|| KindError::retryable(format!("log group {name} not visible yet")))
        })
        .await
    }

    async fn update(
        &self,
        _ctx: &Context,
        _address: &Address,
        current: &Live,
        desired: &Attrs,
    ) -> Result<Live, KindError> {
        let logs = &self.0.logs;
        let name = str_attr(desired, "name")?;
        if current.attributes.get("retention_in_days") != desired.get("retention_in_days") {
            self.set_retention(name, desired.get("retention_in_days").and_then(Json::as_i64))
                .await?;
        }
        let arn = current.attributes.get("arn").and_then(Json::as_str).unwrap_or_default();
        crate::tags::update(
            &current.attributes,
            desired,
            |keys| async move {
                logs.untag_resource()
                    .resource_arn(arn)
                    .set_tag_keys(Some(keys))
                    .send()
                    .await
                    .map(|_| ())
                    .map_err(|e| api_error("logs:UntagResource", e))
            },
            || async move {
                logs.tag_resource()
                    .resource_arn(arn)
                    .set_tags(Some(crate::tags::from_attrs(desired).into_iter().collect()))
                    .send()
                    .await
                    .map(|_| ())
                    .map_err(|e| api_error("logs:TagResource", e))
            },
        )
        .await?;
        still_there(&format!("log group {name}"), self.read_one(name).await?)
    }

    async fn delete(
        &self,
        _ctx: &Context,
        _address: &Address,
        current: &Live,
    ) -> Result<(), KindError> {
        let logs = &self.0.logs;
        match logs.delete_log_group().log_group_name(&current.id).send().await {
            Ok(_) => Ok(()),
            Err(e) if has_code(&e, "ResourceNotFoundException") => Ok(()),
            Err(e) => Err(api_error("logs:DeleteLogGroup", e)),
        }
    }
}
