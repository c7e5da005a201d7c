//! `aws_flow_log`: VPC flow logs delivered to CloudWatch Logs.

use super::{Ec2Tags, tag_spec, tags_of};
use crate::AwsClients;
use crate::error::{Listing, SdkResult, required};
use crate::lookup::{read_back_id, read_owned_then_ids};
use crate::tagging::update_tags;
use aws_sdk_ec2::types::{
    Filter, FlowLogsResourceType, LogDestinationType, ResourceType, TrafficType,
};
use engine::prelude::*;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

#[derive(Attributes, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct FlowLog {
    /// The VPC.
    #[attr(replace)]
    pub resource_id: String,
    #[attr(replace)]
    pub traffic_type: String,
    #[attr(replace)]
    pub log_group_name: String,
    #[attr(replace)]
    pub deliver_logs_permission_arn: String,
    #[attr(in_place, tags)]
    pub tags: Tags,
}

pub(crate) struct FlowLogKind(pub Arc<AwsClients>);

impl FlowLogKind {
    async fn describe(&self, filter: Filter) -> KindResult<Vec<Live<FlowLog>>> {
        let pages = self.0.ec2.describe_flow_logs().filter(filter).into_paginator();
        let logs: Vec<_> = pages.items().send().all("ec2:DescribeFlowLogs").await?;
        logs.iter()
            .map(|f| {
                let log = FlowLog {
                    resource_id: f.resource_id().unwrap_or_default().to_string(),
                    traffic_type: f.traffic_type().map_or("", |t| t.as_str()).to_string(),
                    log_group_name: log_group_of(f),
                    deliver_logs_permission_arn: f
                        .deliver_logs_permission_arn()
                        .unwrap_or_default()
                        .to_string(),
                    tags: tags_of(f.tags()),
                };
                Ok(Live::new(required(f.flow_log_id(), "ec2:DescribeFlowLogs: FlowLogId")?, log))
            })
            .collect()
    }
}

/// The log group a flow log delivers to: its `LogGroupName`, else the group its destination ARN
/// names (a flow log created with `LogDestination`, as OpenTofu's provider creates it).
fn log_group_of(f: &aws_sdk_ec2::types::FlowLog) -> String {
    match f.log_group_name().filter(|n| !n.is_empty()) {
        Some(name) => name.to_string(),
        None => f
            .log_destination()
            .and_then(|arn| arn.split_once(":log-group:"))
            .map(|(_, group)| group.trim_end_matches(":*").to_string())
            .unwrap_or_default(),
    }
}

impl TypedKind for FlowLogKind {
    type Attrs = FlowLog;
    const NAME: &'static str = "aws_flow_log";

    async fn read(&self, ctx: &Context, requests: &Requests<Self>) -> Found<Self> {
        read_owned_then_ids(ctx, requests, "flow-log-id", |f| self.describe(f)).await
    }

    async fn create(&self, _: &Context, desired: &Self::Attrs) -> Outcome<Self> {
        let out = self
            .0
            .ec2
            .create_flow_logs()
            .resource_type(FlowLogsResourceType::Vpc)
            .resource_ids(&desired.resource_id)
            .traffic_type(TrafficType::from(desired.traffic_type.as_str()))
            .log_destination_type(LogDestinationType::CloudWatchLogs)
            .log_group_name(&desired.log_group_name)
            .deliver_logs_permission_arn(&desired.deliver_logs_permission_arn)
            .tag_specifications(tag_spec(ResourceType::VpcFlowLog, &desired.tags))
            .send()
            .await
            .api("ec2:CreateFlowLogs")?;
        if let Some(err) = out.unsuccessful().first() {
            let msg = err.error().and_then(|e| e.message()).unwrap_or("unknown error");
            return Err(KindError::new(format!("ec2:CreateFlowLogs: {msg}")));
        }
        let id = out.flow_log_ids().first().map(String::as_str);
        let id = required(id, "ec2:CreateFlowLogs: FlowLogIds")?;
        read_back_id("flow log", "flow-log-id", id, |f| self.describe(f)).await
    }

    async fn update(&self, _: &Context, update: Update<'_, Self>) -> Outcome<Self> {
        update_tags(&Ec2Tags(&self.0.ec2), &update.current.id, update).await
    }

    async fn delete(&self, _: &Context, current: &LiveOf<Self>) -> KindResult<()> {
        let call = self.0.ec2.delete_flow_logs().flow_log_ids(&current.id);
        call.send().await.or_gone("ec2:DeleteFlowLogs", &["InvalidFlowLogId.NotFound"])
    }
}
