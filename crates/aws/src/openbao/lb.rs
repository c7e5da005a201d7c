//! `aws_lb`: the internal network load balancer in front of the OpenBao nodes. Named by the
//! spec; one found by name is ours only when recorded in state or tagged with this address.

use super::elb::{elb_tags, retag, strings, tags};
use crate::error::{api_error, has_code};
use crate::network::lookup::{address_tag, live, str_attr};
use crate::provider::Shared;
use crate::settle::read_back;
use async_trait::async_trait;
use aws_sdk_elasticloadbalancingv2::types::{
    LoadBalancer, LoadBalancerSchemeEnum, LoadBalancerTypeEnum,
};
use engine::{Address, Attrs, Context, Field, Kind, KindError, Live, ReadRequest};
use serde_json::{Value as Json, json};
use std::sync::Arc;

pub(crate) struct Lb(pub Arc<Shared>);

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

fn to_live(lb: &LoadBalancer, tags: Json) -> Live {
    let mut subnets: Vec<&str> = lb
        .availability_zones()
        .iter()
        .filter_map(|z| z.subnet_id())
        .collect();
    subnets.sort();
    let mut groups: Vec<&str> = lb.security_groups().iter().map(String::as_str).collect();
    groups.sort();
    live(
        lb.load_balancer_arn().unwrap_or_default(),
        [
            ("name", json!(lb.load_balancer_name())),
            (
                "internal",
                json!(lb.scheme() == Some(&LoadBalancerSchemeEnum::Internal)),
            ),
            ("load_balancer_type", json!(lb.r#type().map(|t| t.as_str()))),
            ("subnet_ids", json!(subnets)),
            ("security_group_ids", json!(groups)),
            ("tags", tags),
            ("arn", json!(lb.load_balancer_arn())),
            ("dns_name", json!(lb.dns_name())),
            ("zone_id", json!(lb.canonical_hosted_zone_id())),
        ],
    )
}

impl Lb {
    fn elb(&self) -> Result<&aws_sdk_elasticloadbalancingv2::Client, KindError> {
        Ok(&self.0.clients()?.elbv2)
    }

    /// Load balancers whose name or ARN is asked for (one listing, one tag call).
    async fn find(&self, names: &[String], arns: &[String]) -> Result<Vec<Live>, KindError> {
        let all: Vec<LoadBalancer> = self
            .elb()?
            .describe_load_balancers()
            .into_paginator()
            .items()
            .send()
            .collect::<Result<_, _>>()
            .await
            .map_err(|e| api_error("elasticloadbalancing:DescribeLoadBalancers", e))?;
        let wanted: Vec<&LoadBalancer> = all
            .iter()
            .filter(|lb| {
                lb.load_balancer_name()
                    .is_some_and(|n| names.iter().any(|w| w == n))
                    || lb
                        .load_balancer_arn()
                        .is_some_and(|a| arns.iter().any(|w| w == a))
            })
            .collect();
        let wanted_arns: Vec<String> = wanted
            .iter()
            .filter_map(|lb| lb.load_balancer_arn().map(str::to_string))
            .collect();
        let tags = tags(self.elb()?, &wanted_arns).await?;
        Ok(wanted
            .into_iter()
            .map(|lb| {
                let t = tags
                    .get(lb.load_balancer_arn().unwrap_or_default())
                    .cloned()
                    .unwrap_or(json!({}));
                to_live(lb, t)
            })
            .collect())
    }

    async fn by_arn(&self, arn: &str) -> Result<Option<Live>, KindError> {
        Ok(self.find(&[], &[arn.to_string()]).await?.into_iter().next())
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
        let internal = desired
            .get("internal")
            .and_then(Json::as_bool)
            .unwrap_or(true);
        let groups = strings(desired, "security_group_ids");
        let out = self
            .elb()?
            .create_load_balancer()
            .name(name)
            .r#type(LoadBalancerTypeEnum::from(str_attr(
                desired,
                "load_balancer_type",
            )?))
            .scheme(if internal {
                LoadBalancerSchemeEnum::Internal
            } else {
                LoadBalancerSchemeEnum::InternetFacing
            })
            .set_subnets(Some(strings(desired, "subnet_ids")))
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
            let mut a = strings(&current.attributes, f);
            let mut b = strings(desired, f);
            a.sort();
            b.sort();
            a != b
        };
        if differs("subnet_ids") {
            elb.set_subnets()
                .load_balancer_arn(arn)
                .set_subnets(Some(strings(desired, "subnet_ids")))
                .send()
                .await
                .map_err(|e| api_error("elasticloadbalancing:SetSubnets", e))?;
        }
        if differs("security_group_ids") {
            elb.set_security_groups()
                .load_balancer_arn(arn)
                .set_security_groups(Some(strings(desired, "security_group_ids")))
                .send()
                .await
                .map_err(|e| api_error("elasticloadbalancing:SetSecurityGroups", e))?;
        }
        retag(elb, arn, &current.attributes, desired).await?;
        self.by_arn(arn)
            .await?
            .ok_or_else(|| KindError::new(format!("load balancer {arn} vanished")))
    }

    async fn delete(
        &self,
        _ctx: &Context,
        _address: &Address,
        current: &Live,
    ) -> Result<(), KindError> {
        match self
            .elb()?
            .delete_load_balancer()
            .load_balancer_arn(&current.id)
            .send()
            .await
        {
            Ok(_) => Ok(()),
            Err(e) if has_code(&e, "LoadBalancerNotFound") => Ok(()),
            Err(e) => Err(api_error("elasticloadbalancing:DeleteLoadBalancer", e)),
        }
    }
}
