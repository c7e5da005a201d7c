//! `aws_lb_target_group`: the OpenBao nodes behind the load balancer, with an HTTPS health
//! check. Named by the spec; one found by name is ours only when recorded in state or tagged
//! with this address.

use super::elb::{elb_tags, int, retag, tags};
use crate::error::{api_error, has_code};
use crate::network::lookup::{address_tag, live, str_attr};
use crate::provider::Shared;
use crate::settle::read_back;
use async_trait::async_trait;
use aws_sdk_elasticloadbalancingv2::types::{Matcher, ProtocolEnum, TargetGroup, TargetTypeEnum};
use engine::{Address, Attrs, Context, Field, Kind, KindError, Live, ReadRequest};
use serde_json::{Value as Json, json};
use std::sync::Arc;

pub(crate) struct LbTargetGroup(pub Arc<Shared>);

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

fn to_live(tg: &TargetGroup, tags: Json) -> Live {
    live(
        tg.target_group_arn().unwrap_or_default(),
        [
            ("name", json!(tg.target_group_name())),
            ("port", json!(tg.port())),
            ("protocol", json!(tg.protocol().map(|p| p.as_str()))),
            ("vpc_id", json!(tg.vpc_id())),
            ("target_type", json!(tg.target_type().map(|t| t.as_str()))),
            (
                "health_check",
                json!({
                    "protocol": tg.health_check_protocol().map(|p| p.as_str()),
                    "port": tg.health_check_port(),
                    "path": tg.health_check_path(),
                    "interval_seconds": tg.health_check_interval_seconds(),
                    "healthy_threshold": tg.healthy_threshold_count(),
                    "unhealthy_threshold": tg.unhealthy_threshold_count(),
                    "matcher": tg.matcher().and_then(|m| m.http_code()),
                }),
            ),
            ("tags", tags),
            ("arn", json!(tg.target_group_arn())),
        ],
    )
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
        Ok(&self.0.clients()?.elbv2)
    }

    /// Target groups whose name or ARN is asked for (one listing, one tag call).
    async fn find(&self, names: &[String], arns: &[String]) -> Result<Vec<Live>, KindError> {
        let all: Vec<TargetGroup> = self
            .elb()?
            .describe_target_groups()
            .into_paginator()
            .items()
            .send()
            .collect::<Result<_, _>>()
            .await
            .map_err(|e| api_error("elasticloadbalancing:DescribeTargetGroups", e))?;
        let wanted: Vec<&TargetGroup> = all
            .iter()
            .filter(|tg| {
                tg.target_group_name()
                    .is_some_and(|n| names.iter().any(|w| w == n))
                    || tg
                        .target_group_arn()
                        .is_some_and(|a| arns.iter().any(|w| w == a))
            })
            .collect();
        let wanted_arns: Vec<String> = wanted
            .iter()
            .filter_map(|tg| tg.target_group_arn().map(str::to_string))
            .collect();
        let tags = tags(self.elb()?, &wanted_arns).await?;
        Ok(wanted
            .into_iter()
            .map(|tg| {
                let t = tags
                    .get(tg.target_group_arn().unwrap_or_default())
                    .cloned()
                    .unwrap_or(json!({}));
                to_live(tg, t)
            })
            .collect())
    }

    async fn by_arn(&self, arn: &str) -> Result<Option<Live>, KindError> {
        Ok(self.find(&[], &[arn.to_string()]).await?.into_iter().next())
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
        let name_of = |r: &ReadRequest| {
            r.desired
                .as_ref()
                .and_then(|d| d.get("name"))
                .and_then(Json::as_str)
                .map(str::to_string)
        };
        let names: Vec<String> = requests.iter().filter_map(name_of).collect();
        let arns: Vec<String> = requests.iter().filter_map(|r| r.id.clone()).collect();
        let found = self.find(&names, &arns).await?;
        Ok(requests
            .iter()
            .map(|r| {
                if let Some(id) = &r.id
                    && let Some(l) = found.iter().find(|l| &l.id == id)
                {
                    return Some(l.clone());
                }
                let name = name_of(r)?;
                found
                    .iter()
                    .find(|l| {
                        l.attributes.get("name").and_then(Json::as_str) == Some(name.as_str())
                            && address_tag(l) == Some(r.address.as_str())
                    })
                    .cloned()
            })
            .collect())
    }

    async fn create(
        &self,
        _ctx: &Context,
        address: &Address,
        desired: &Attrs,
    ) -> Result<Live, KindError> {
        let name = str_attr(desired, "name")?;
        let out = self
            .elb()?
            .create_target_group()
            .name(name)
            .protocol(ProtocolEnum::from(str_attr(desired, "protocol")?))
            .port(int(desired, "port")?)
            .vpc_id(str_attr(desired, "vpc_id")?)
            .target_type(TargetTypeEnum::from(str_attr(desired, "target_type")?))
            .health_check_enabled(true)
            .health_check_protocol(ProtocolEnum::from(check_str(desired, "protocol")?))
            .health_check_port(check_str(desired, "port")?)
            .health_check_path(check_str(desired, "path")?)
            .health_check_interval_seconds(check_int(desired, "interval_seconds")?)
            .healthy_threshold_count(check_int(desired, "healthy_threshold")?)
            .unhealthy_threshold_count(check_int(desired, "unhealthy_threshold")?)
            .matcher(
                Matcher::builder()
                    .http_code(check_str(desired, "matcher")?)
                    .build(),
            )
            .set_tags(Some(elb_tags(desired)))
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
            elb.modify_target_group()
                .target_group_arn(arn)
                .health_check_enabled(true)
                .health_check_protocol(ProtocolEnum::from(check_str(desired, "protocol")?))
                .health_check_port(check_str(desired, "port")?)
                .health_check_path(check_str(desired, "path")?)
                .health_check_interval_seconds(check_int(desired, "interval_seconds")?)
                .healthy_threshold_count(check_int(desired, "healthy_threshold")?)
                .unhealthy_threshold_count(check_int(desired, "unhealthy_threshold")?)
                .matcher(
                    Matcher::builder()
                        .http_code(check_str(desired, "matcher")?)
                        .build(),
                )
                .send()
                .await
                .map_err(|e| api_error("elasticloadbalancing:ModifyTargetGroup", e))?;
        }
        retag(elb, arn, &current.attributes, desired).await?;
        self.by_arn(arn)
            .await?
            .ok_or_else(|| KindError::new(format!("target group {arn} vanished")))
    }

    async fn delete(
        &self,
        _ctx: &Context,
        _address: &Address,
        current: &Live,
    ) -> Result<(), KindError> {
        match self
            .elb()?
            .delete_target_group()
            .target_group_arn(&current.id)
            .send()
            .await
        {
            Ok(_) => Ok(()),
            Err(e) if has_code(&e, "TargetGroupNotFound") => Ok(()),
            // Still used by a listener being deleted.
            Err(e) if has_code(&e, "ResourceInUse") => Err(KindError::retryable(format!(
                "target group {} is still in use",
                current.id
            ))),
            Err(e) => Err(api_error("elasticloadbalancing:DeleteTargetGroup", e)),
        }
    }
}
