//! `aws_flow_log`: VPC flow logs delivered to CloudWatch Logs.

use crate::AwsClients;
use crate::error::{api_error, has_code};
use crate::lookup_json::{filter, live, read_owned_then_ids, str_attr};
use crate::settle::read_back;
use crate::tags;
use async_trait::async_trait;
use aws_sdk_ec2::types::{FlowLogsResourceType, LogDestinationType, ResourceType, TrafficType};
use engine::{Address, Attrs, Context, Field, Kind, KindError, Live, ReadRequest};
use serde_json::json;
use std::sync::Arc;

pub(crate) struct FlowLog(pub Arc<AwsClients>);

const FIELDS: &[Field] = &[
    Field::replace("resource_id"),
    Field::replace("traffic_type"),
    Field::replace("log_group_name"),
    Field::replace("deliver_logs_permission_arn"),
    Field::in_place("tags"),
    Field::computed("id"),
];

impl FlowLog {
    async fn describe(&self, filter: aws_sdk_ec2::types::Filter) -> Result<Vec<Live>, KindError> {
        let ec2 = &self.0.ec2;
        let logs: Vec<_> = ec2
            .describe_flow_logs()
            .filter(filter)
            .into_paginator()
            .items()
            .send()
            .collect::<Result<_, _>>()
            .await
            .map_err(|e| api_error("ec2:DescribeFlowLogs", e))?;
        Ok(logs
            .into_iter()
            .map(|f| {
                live(
                    f.flow_log_id().unwrap_or_default(),
                    [
                        ("resource_id", json!(f.resource_id().unwrap_or_default())),
                        (
                            "traffic_type",
                            json!(f.traffic_type().map(|t| t.as_str()).unwrap_or_default()),
                        ),
                        ("log_group_name", json!(f.log_group_name().unwrap_or_default())),
                        (
                            "deliver_logs_permission_arn",
                            json!(f.deliver_logs_permission_arn().unwrap_or_default()),
                        ),
                        ("tags", tags::ec2_to_json(f.tags())),
                    ],
                )
            })
            .collect())
    }
}

#[async_trait]
impl Kind for FlowLog {
    fn name(&self) -> &'static str {
        "aws_flow_log"
    }

    fn fields(&self) -> &'static [Field] {
        FIELDS
    }

    async fn read(
        &self,
        ctx: &Context,
        requests: &[ReadRequest],
    ) -> Result<Vec<Option<Live>>, KindError> {
        read_owned_then_ids(ctx, requests, "flow-log-id", |f| self.describe(f)).await
    }

    async fn create(
        &self,
        _ctx: &Context,
        _address: &Address,
        desired: &Attrs,
    ) -> Result<Live, KindError> {
        let ec2 = &self.0.ec2;
        let out = ec2
            .create_flow_logs()
            .resource_type(FlowLogsResourceType::Vpc)
            .resource_ids(str_attr(desired, "resource_id")?)
            .traffic_type(TrafficType::from(str_attr(desired, "traffic_type")?))
            .log_destination_type(LogDestinationType::CloudWatchLogs)
            .log_group_name(str_attr(desired, "log_group_name")?)
            .deliver_logs_permission_arn(str_attr(desired, "deliver_logs_permission_arn")?)
            .tag_specifications(tags::ec2_spec(ResourceType::VpcFlowLog, desired))
            .send()
            .await
            .map_err(|e| api_error("ec2:CreateFlowLogs", e))?;
        if let Some(err) = out.unsuccessful().first() {
            let msg = err.error().and_then(|e| e.message()).unwrap_or("unknown error");
            return Err(KindError::new(format!("ec2:CreateFlowLogs: {msg}")));
        }
        let id = out
            .flow_log_ids()
            .first()
            .ok_or_else(|| KindError::new("CreateFlowLogs returned no id"))?
            .clone();
        read_back(&format!("flow log {id}"), || async {
            Ok(self.describe(filter("flow-log-id", vec![id.clone()])).await?.into_iter().next())
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
        tags::ec2_retag(&self.0.ec2, current, desired).await
    }

    async fn delete(
        &self,
        _ctx: &Context,
        _address: &Address,
        current: &Live,
    ) -> Result<(), KindError> {
        let ec2 = &self.0.ec2;
        match ec2.delete_flow_logs().flow_log_ids(&current.id).send().await {
            Ok(_) => Ok(()),
            Err(e) if has_code(&e, "InvalidFlowLogId.NotFound") => Ok(()),
            Err(e) => Err(api_error("ec2:DeleteFlowLogs", e)),
        }
    }
}
