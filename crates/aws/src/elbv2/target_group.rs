//! `aws_lb_target_group`: the OpenBao nodes behind the load balancer, with an HTTPS health
//! check. Named by the spec; one found by name is ours only when recorded in state or tagged
//! with this address. Read from one listing of the account's target groups.

use super::{Described, ElbTags, by_arn, elb_tags, read_named};
use crate::AwsClients;
use crate::error::{Listing, SdkResult, required};
use crate::lookup::still_there;
use crate::tagging::retag;
use aws_sdk_elasticloadbalancingv2::types::{self as elb, Matcher, ProtocolEnum, TargetTypeEnum};
use engine::prelude::*;
use engine::retry::read_back;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

#[derive(Attributes, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct TargetGroup {
    #[attr(replace)]
    pub name: String,
    #[attr(replace)]
    pub port: i32,
    #[attr(replace)]
    pub protocol: String,
    #[attr(replace)]
    pub vpc_id: String,
    #[attr(replace)]
    pub target_type: String,
    #[attr(in_place)]
    pub health_check: HealthCheck,
    #[attr(in_place, tags)]
    pub tags: Tags,
    #[attr(computed)]
    pub arn: Option<String>,
}

/// The health check; a TCP check has no path and no matcher.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct HealthCheck {
    pub protocol: Option<String>,
    pub port: Option<String>,
    pub path: Option<String>,
    pub interval_seconds: Option<i32>,
    pub healthy_threshold: Option<i32>,
    pub unhealthy_threshold: Option<i32>,
    /// The HTTP codes of a healthy answer, e.g. `200,429`.
    pub matcher: Option<String>,
}

impl Described for elb::TargetGroup {
    type Attrs = TargetGroup;
    const ARN: &'static str = "elasticloadbalancing:DescribeTargetGroups: TargetGroupArn";

    fn arn(&self) -> Option<&str> {
        self.target_group_arn()
    }

    fn name(&self) -> Option<&str> {
        self.target_group_name()
    }

    fn attributes(&self, tags: Tags) -> TargetGroup {
        let text = |s: Option<&str>| s.map(str::to_string);
        TargetGroup {
            name: self.target_group_name().unwrap_or_default().to_string(),
            port: self.port().unwrap_or_default(),
            protocol: self.protocol().map(|p| p.as_str().to_string()).unwrap_or_default(),
            vpc_id: self.vpc_id().unwrap_or_default().to_string(),
            target_type: self.target_type().map(|t| t.as_str().to_string()).unwrap_or_default(),
            health_check: HealthCheck {
                protocol: text(self.health_check_protocol().map(|p| p.as_str())),
                port: text(self.health_check_port()),
                path: text(self.health_check_path()),
                interval_seconds: self.health_check_interval_seconds(),
                healthy_threshold: self.healthy_threshold_count(),
                unhealthy_threshold: self.unhealthy_threshold_count(),
                matcher: text(self.matcher().and_then(|m| m.http_code())),
            },
            tags,
            arn: text(self.target_group_arn()),
        }
    }
}

/// Sets the health check on a CreateTargetGroup or a ModifyTargetGroup call: the two builders
/// have the same setters but no common type.
macro_rules! with_health_check {
    ($call:expr, $check:expr) => {{
        let c: &HealthCheck = $check;
        $call
            .health_check_enabled(true)
            .set_health_check_protocol(c.protocol.as_deref().map(ProtocolEnum::from))
            .set_health_check_port(c.port.clone())
            .set_health_check_path(c.path.clone())
            .set_health_check_interval_seconds(c.interval_seconds)
            .set_healthy_threshold_count(c.healthy_threshold)
            .set_unhealthy_threshold_count(c.unhealthy_threshold)
            .set_matcher(c.matcher.as_ref().map(|m| Matcher::builder().http_code(m).build()))
    }};
}

pub(crate) struct TargetGroupKind(pub Arc<AwsClients>);

impl TargetGroupKind {
    /// Every target group of the account in the region (one listing).
    async fn list(&self) -> KindResult<Vec<elb::TargetGroup>> {
        let pages = self.0.elbv2.describe_target_groups().into_paginator().items().send();
        pages.all("elasticloadbalancing:DescribeTargetGroups").await
    }

    async fn by_arn(&self, arn: &str) -> KindResult<Option<Live<TargetGroup>>> {
        by_arn(&self.0.elbv2, &self.list().await?, arn).await
    }
}

impl TypedKind for TargetGroupKind {
    type Attrs = TargetGroup;
    const NAME: &'static str = "aws_lb_target_group";

    async fn read(&self, _: &Context, requests: &Requests<Self>) -> Found<Self> {
        read_named(&self.0.elbv2, &self.list().await?, requests, |tg| &tg.name).await
    }

    async fn create(&self, _: &Context, desired: &Self::Attrs) -> Outcome<Self> {
        let call = self
            .0
            .elbv2
            .create_target_group()
            .name(&desired.name)
            .protocol(ProtocolEnum::from(desired.protocol.as_str()))
            .port(desired.port)
            .vpc_id(&desired.vpc_id)
            .target_type(TargetTypeEnum::from(desired.target_type.as_str()))
            .set_tags(Some(elb_tags(&desired.tags)));
        let call = with_health_check!(call, &desired.health_check);
        let out = call.send().await.api("elasticloadbalancing:CreateTargetGroup")?;
        let arn = out.target_groups().first().and_then(|tg| tg.target_group_arn());
        let arn = required(arn, "elasticloadbalancing:CreateTargetGroup: TargetGroupArn")?;
        read_back(&format!("target group {}", desired.name), || self.by_arn(arn)).await
    }

    async fn update(&self, _: &Context, update: Update<'_, Self>) -> Outcome<Self> {
        let Update { current, desired, changes } = update;
        let (elb, arn) = (&self.0.elbv2, &current.id);
        if changes.health_check {
            let call = elb.modify_target_group().target_group_arn(arn);
            let call = with_health_check!(call, &desired.health_check);
            call.send().await.api("elasticloadbalancing:ModifyTargetGroup")?;
        }
        if changes.tags {
            retag(&ElbTags(elb), arn, &current.attributes.tags, &desired.tags).await?;
        }
        still_there(&format!("target group {arn}"), self.by_arn(arn).await?)
    }

    async fn delete(&self, _: &Context, current: &LiveOf<Self>) -> KindResult<()> {
        let call = self.0.elbv2.delete_target_group().target_group_arn(&current.id);
        let op = "elasticloadbalancing:DeleteTargetGroup";
        match call.send().await.or_gone(op, &["TargetGroupNotFound"]) {
            // Still used by a listener being deleted.
            Err(e) if e.code.as_deref() == Some("ResourceInUse") => {
                Err(KindError::retryable(format!("target group {} is still in use", current.id)))
            }
            other => other,
        }
    }
}
