//! `aws_lb_target_group`: the OpenBao nodes behind the load balancer, with an HTTPS health
//! check. Named by the spec; one found by name is ours only when recorded in state or tagged
//! with this address.

use super::{ElbResource, by_arn, elb_tags, read_named, retag};
use crate::AwsClients;
use crate::error::{api_error, has_code};
use crate::lookup_json::{int_attr, live, still_there, str_attr};
use crate::settle::read_back;
use async_trait::async_trait;
use aws_sdk_elasticloadbalancingv2::types::{Matcher, ProtocolEnum, TargetGroup, TargetTypeEnum};
use engine::{Address, Attrs, Context, Field, Kind, KindError, Live, ReadRequest};
use serde_json::{Value as Json, json};
use std::sync::Arc;

pub(crate) struct LbTargetGroup(pub Arc<AwsClients>);

const FIELDS: &[Field] = &[
    Field::replace("name"),
    Field::replace("port"),
    Field::replace("protocol"),
    Field::replace("vpc_id"),
    Field::replace("target_type"),
    Field::in_place("health_check"),
    Field::in_place("tags"),
    Field::computed("id"),
    Field::computed("arn"),
];

impl ElbResource for TargetGroup {
    fn arn(&self) -> Option<&str> {
        self.target_group_arn()
    }

    fn name(&self) -> Option<&str> {
        self.target_group_name()
    }

    fn to_live(&self, tags: Json) -> Live {
        live(
            self.target_group_arn().unwrap_or_default(),
            [
                ("name", json!(self.target_group_name())),
                ("port", json!(self.port())),
                ("protocol", json!(self.protocol().map(|p| p.as_str()))),
                ("vpc_id", json!(self.vpc_id())),
                ("target_type", json!(self.target_type().map(|t| t.as_str()))),
                (
                    "health_check",
                    json!({
                        "protocol": self.health_check_protocol().map(|p| p.as_str()),
                        "port": self.health_check_port(),
                        "path": self.health_check_path(),
                        "interval_seconds": self.health_check_interval_seconds(),
                        "healthy_threshold": self.healthy_threshold_count(),
                        "unhealthy_threshold": self.unhealthy_threshold_count(),
                        "matcher": self.matcher().and_then(|m| m.http_code()),
                    }),
                ),
                ("tags", tags),
                ("arn", json!(self.target_group_arn())),
            ],
        )
    }
}

/// Sets the desired health check on a CreateTargetGroup or a ModifyTargetGroup call: the two
/// builders have the same setters but no common type.
macro_rules! with_health_check {
    ($call:expr, $desired:expr) => {
        $call
            .health_check_enabled(true)
            .health_check_protocol(ProtocolEnum::from(check_str($desired, "protocol")?))
            .health_check_port(check_str($desired, "port")?)
            .health_check_path(check_str($desired, "path")?)
            .health_check_interval_seconds(check_int($desired, "interval_seconds")?)
            .healthy_threshold_count(check_int($desired, "healthy_threshold")?)
            .unhealthy_threshold_count(check_int($desired, "unhealthy_threshold")?)
            .matcher(Matcher::builder().http_code(check_str($desired, "matcher")?).build())
    };
}

/// A string inside the `health_check` attribute.
fn check_str<'a>(desired: &'a Attrs, key: &str) -> Result<&'a str, KindError> {
    desired
        .get("health_check")
        .and_then(|h| h.get(key))
        .and_then(Json::as_str)
        .ok_or_else(|| KindError::new(format!("health_check.{key} is missing")))
}

/// A number inside the `health_check` attribute.
fn check_int(desired: &Attrs, key: &str) -> Result<i32, KindError> {
    desired
        .get("health_check")
        .and_then(|h| h.get(key))
        .and_then(Json::as_i64)
        .map(|n| n as i32)
        .ok_or_else(|| KindError::new(format!("health_check.{key} is missing")))
}

impl LbTargetGroup {
    fn elb(&self) -> Result<&aws_sdk_elasticloadbalancingv2::Client, KindError> {
        Ok(&self.0.elbv2)
    }

    /// Every target group of the account in the region (one listing).
    async fn list(&self) -> Result<Vec<TargetGroup>, KindError> {
        self.elb()?
            .describe_target_groups()
            .into_paginator()
            .items()
            .send()
            .collect::<Result<_, _>>()
            .await
            .map_err(|e| api_error("elasticloadbalancing:DescribeTargetGroups", e))
    }

    async fn by_arn(&self, arn: &str) -> Result<Option<Live>, KindError> {
        by_arn(self.elb()?, &self.list().await?, arn).await
    }
}

#[async_trait]
impl Kind for LbTargetGroup {
    fn name(&self) -> &'static str {
        "aws_lb_target_group"
    }

    fn fields(&self) -> &'static [Field] {
        FIELDS
    }

    async fn read(
        &self,
        _ctx: &Context,
        requests: &[ReadRequest],
    ) -> Result<Vec<Option<Live>>, KindError> {
        read_named(self.elb()?, &self.list().await?, requests).await
    }

    async fn create(
        &self,
        _ctx: &Context,
        address: &Address,
        desired: &Attrs,
    ) -> Result<Live, KindError> {
        let name = str_attr(desired, "name")?;
        let call = self
            .elb()?
            .create_target_group()
            .name(name)
            .protocol(ProtocolEnum::from(str_attr(desired, "protocol")?))
            .port(int_attr(desired, "port")?)
            .vpc_id(str_attr(desired, "vpc_id")?)
            .target_type(TargetTypeEnum::from(str_attr(desired, "target_type")?))
            .set_tags(Some(elb_tags(desired)));
        let out = with_health_check!(call, desired)
            .send()
            .await
            .map_err(|e| api_error("elasticloadbalancing:CreateTargetGroup", e))?;
        let arn = out
            .target_groups()
            .first()
            .and_then(|tg| tg.target_group_arn())
            .ok_or_else(|| KindError::new("CreateTargetGroup returned no ARN"))?
            .to_string();
        tracing::info!(%address, %arn, "created target group");
        read_back(&format!("target group {name}"), || self.by_arn(&arn)).await
    }

    async fn update(
        &self,
        _ctx: &Context,
        _address: &Address,
        current: &Live,
        desired: &Attrs,
    ) -> Result<Live, KindError> {
        let elb = self.elb()?;
        let arn = &current.id;
        if current.attributes.get("health_check") != desired.get("health_check") {
            let call = elb.modify_target_group().target_group_arn(arn);
            with_health_check!(call, desired)
                .send()
                .await
                .map_err(|e| api_error("elasticloadbalancing:ModifyTargetGroup", e))?;
        }
        retag(elb, arn, &current.attributes, desired).await?;
        still_there(&format!("target group {arn}"), self.by_arn(arn).await?)
    }

    async fn delete(
        &self,
        _ctx: &Context,
        _address: &Address,
        current: &Live,
    ) -> Result<(), KindError> {
        match self.elb()?.delete_target_group().target_group_arn(&current.id).send().await {
            Ok(_) => Ok(()),
            Err(e) if has_code(&e, "TargetGroupNotFound") => Ok(()),
            // Still used by a listener being deleted.
            Err(e) if has_code(&e, "ResourceInUse") => {
                Err(KindError::retryable(format!("target group {} is still in use", current.id)))
            }
            Err(e) => Err(api_error("elasticloadbalancing:DeleteTargetGroup", e)),
        }
    }
}
