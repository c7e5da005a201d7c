//! `aws_lb`: the internal network load balancer in front of the OpenBao nodes. Named by the
//! spec; one found by name is ours only when recorded in state or tagged with this address.

use super::{ElbResource, by_arn, elb_tags, read_named, retag};
use crate::AwsClients;
use crate::error::api_error;
use crate::lookup_json::{live, still_there, str_attr, strings_attr};
use crate::settle::read_back;
use async_trait::async_trait;
use aws_sdk_elasticloadbalancingv2::types::{
    LoadBalancer, LoadBalancerSchemeEnum, LoadBalancerTypeEnum,
};
use engine::{Address, Attrs, Context, Field, Kind, KindError, Live, ReadRequest};
use serde_json::{Value as Json, json};
use std::sync::Arc;

pub(crate) struct Lb(pub Arc<AwsClients>);

const FIELDS: &[Field] = &[
    Field::replace("name"),
    Field::replace("internal"),
    Field::replace("load_balancer_type"),
    Field::in_place("subnet_ids").unordered(),
    Field::in_place("security_group_ids").unordered(),
    Field::in_place("tags"),
    Field::computed("id"),
    Field::computed("arn"),
    Field::computed("dns_name"),
    Field::computed("zone_id"),
];

impl ElbResource for LoadBalancer {
    fn arn(&self) -> Option<&str> {
        self.load_balancer_arn()
    }

    fn name(&self) -> Option<&str> {
        self.load_balancer_name()
    }

    fn to_live(&self, tags: Json) -> Live {
        let mut subnets: Vec<&str> =
            self.availability_zones().iter().filter_map(|z| z.subnet_id()).collect();
        subnets.sort();
        let mut groups: Vec<&str> = self.security_groups().iter().map(String::as_str).collect();
        groups.sort();
        live(
            self.load_balancer_arn().unwrap_or_default(),
            [
                ("name", json!(self.load_balancer_name())),
                ("internal", json!(self.scheme() == Some(&LoadBalancerSchemeEnum::Internal))),
                ("load_balancer_type", json!(self.r#type().map(|t| t.as_str()))),
                ("subnet_ids", json!(subnets)),
                ("security_group_ids", json!(groups)),
                ("tags", tags),
                ("arn", json!(self.load_balancer_arn())),
                ("dns_name", json!(self.dns_name())),
                ("zone_id", json!(self.canonical_hosted_zone_id())),
            ],
        )
    }
}

impl Lb {
    fn elb(&self) -> Result<&aws_sdk_elasticloadbalancingv2::Client, KindError> {
        Ok(&self.0.elbv2)
    }

    /// Every load balancer of the account in the region (one listing).
    async fn list(&self) -> Result<Vec<LoadBalancer>, KindError> {
        self.elb()?
            .describe_load_balancers()
            .into_paginator()
            .items()
            .send()
            .collect::<Result<_, _>>()
            .await
            .map_err(|e| api_error("elasticloadbalancing:DescribeLoadBalancers", e))
    }

    async fn by_arn(&self, arn: &str) -> Result<Option<Live>, KindError> {
        by_arn(self.elb()?, &self.list().await?, arn).await
    }
}

#[async_trait]
impl Kind for Lb {
    fn name(&self) -> &'static str {
        "aws_lb"
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
        let internal = desired.get("internal").and_then(Json::as_bool).unwrap_or(true);
        let groups = strings_attr(desired, "security_group_ids");
        let out = self
            .elb()?
            .create_load_balancer()
            .name(name)
            .r#type(LoadBalancerTypeEnum::from(str_attr(desired, "load_balancer_type")?))
            .scheme(if internal {
                LoadBalancerSchemeEnum::Internal
            } else {
                LoadBalancerSchemeEnum::InternetFacing
            })
            .set_subnets(Some(strings_attr(desired, "subnet_ids")))
            .set_security_groups((!groups.is_empty()).then_some(groups))
            .set_tags(Some(elb_tags(desired)))
            .send()
            .await
            .map_err(|e| api_error("elasticloadbalancing:CreateLoadBalancer", e))?;
        let arn = out
            .load_balancers()
            .first()
            .and_then(|lb| lb.load_balancer_arn())
            .ok_or_else(|| KindError::new("CreateLoadBalancer returned no ARN"))?
            .to_string();
        tracing::info!(%address, %arn, "created load balancer");
        read_back(&format!("load balancer {name}"), || self.by_arn(&arn)).await
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
        let differs = |f: &str| {
            let mut a = strings_attr(&current.attributes, f);
            let mut b = strings_attr(desired, f);
            a.sort();
            b.sort();
            a != b
        };
        if differs("subnet_ids") {
            elb.set_subnets()
                .load_balancer_arn(arn)
                .set_subnets(Some(strings_attr(desired, "subnet_ids")))
                .send()
                .await
                .map_err(|e| api_error("elasticloadbalancing:SetSubnets", e))?;
        }
        if differs("security_group_ids") {
            elb.set_security_groups()
                .load_balancer_arn(arn)
                .set_security_groups(Some(strings_attr(desired, "security_group_ids")))
                .send()
                .await
                .map_err(|e| api_error("elasticloadbalancing:SetSecurityGroups", e))?;
        }
        retag(elb, arn, &current.attributes, desired).await?;
        still_there(&format!("load balancer {arn}"), self.by_arn(arn).await?)
    }

    async fn delete(
        &self,
        _ctx: &Context,
        _address: &Address,
        current: &Live,
    ) -> Result<(), KindError> {
        let result = self.elb()?.delete_load_balancer().load_balancer_arn(&current.id).send().await;
        crate::error::deleted(
            "elasticloadbalancing:DeleteLoadBalancer",
            result,
            &["LoadBalancerNotFound"],
        )
    }
}
