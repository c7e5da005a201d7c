//! `aws_lb`: the internal network load balancer in front of the OpenBao nodes. Named by the
//! spec; one found by name is ours only when recorded in state or tagged with this address.
//! Read from one listing of the account's load balancers.

use super::{Described, ElbTags, by_arn, elb_tags, read_named};
use crate::AwsClients;
use crate::error::{Listing, SdkResult, required};
use crate::lookup::still_there;
use crate::tagging::retag;
use aws_sdk_elasticloadbalancingv2::types::{self as elb, LoadBalancerSchemeEnum as Scheme};
use engine::prelude::*;
use engine::retry::read_back;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

#[derive(Attributes, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct LoadBalancer {
    #[attr(replace)]
    pub name: String,
    #[attr(replace)]
    pub internal: bool,
    #[attr(replace)]
    pub load_balancer_type: String,
    #[attr(in_place, unordered)]
    pub subnet_ids: Vec<String>,
    #[attr(in_place, unordered)]
    #[serde(default)]
    pub security_group_ids: Vec<String>,
    #[attr(in_place, tags)]
    pub tags: Tags,
    #[attr(computed)]
    pub arn: Option<String>,
    #[attr(computed)]
    pub dns_name: Option<String>,
    #[attr(computed)]
    pub zone_id: Option<String>,
}

impl Described for elb::LoadBalancer {
    type Attrs = LoadBalancer;
    const ARN: &'static str = "elasticloadbalancing:DescribeLoadBalancers: LoadBalancerArn";

    fn arn(&self) -> Option<&str> {
        self.load_balancer_arn()
    }

    fn name(&self) -> Option<&str> {
        self.load_balancer_name()
    }

    fn attributes(&self, tags: Tags) -> LoadBalancer {
        let subnets = self.availability_zones().iter().filter_map(|z| z.subnet_id());
        LoadBalancer {
            name: self.load_balancer_name().unwrap_or_default().to_string(),
            internal: self.scheme() == Some(&Scheme::Internal),
            load_balancer_type: self.r#type().map(|t| t.as_str().to_string()).unwrap_or_default(),
            subnet_ids: subnets.map(str::to_string).collect(),
            security_group_ids: self.security_groups().to_vec(),
            tags,
            arn: self.load_balancer_arn().map(str::to_string),
            dns_name: self.dns_name().map(str::to_string),
            zone_id: self.canonical_hosted_zone_id().map(str::to_string),
        }
    }
}

pub(crate) struct LoadBalancerKind(pub Arc<AwsClients>);

impl LoadBalancerKind {
    /// Every load balancer of the account in the region (one listing).
    async fn list(&self) -> KindResult<Vec<elb::LoadBalancer>> {
        let pages = self.0.elbv2.describe_load_balancers().into_paginator().items().send();
        pages.all("elasticloadbalancing:DescribeLoadBalancers").await
    }

    async fn by_arn(&self, arn: &str) -> KindResult<Option<Live<LoadBalancer>>> {
        by_arn(&self.0.elbv2, &self.list().await?, arn).await
    }
}

impl TypedKind for LoadBalancerKind {
    type Attrs = LoadBalancer;
    const NAME: &'static str = "aws_lb";

    async fn read(&self, _: &Context, requests: &Requests<Self>) -> Found<Self> {
        read_named(&self.0.elbv2, &self.list().await?, requests, |lb| &lb.name).await
    }

    async fn create(&self, _: &Context, desired: &Self::Attrs) -> Outcome<Self> {
        let scheme = if desired.internal { Scheme::Internal } else { Scheme::InternetFacing };
        let groups = &desired.security_group_ids;
        let out = self
            .0
            .elbv2
            .create_load_balancer()
            .name(&desired.name)
            .r#type(elb::LoadBalancerTypeEnum::from(desired.load_balancer_type.as_str()))
            .scheme(scheme)
            .set_subnets(Some(desired.subnet_ids.clone()))
            .set_security_groups((!groups.is_empty()).then(|| groups.clone()))
            .set_tags(Some(elb_tags(&desired.tags)))
            .send()
            .await
            .api("elasticloadbalancing:CreateLoadBalancer")?;
        let arn = out.load_balancers().first().and_then(|lb| lb.load_balancer_arn());
        let arn = required(arn, "elasticloadbalancing:CreateLoadBalancer: LoadBalancerArn")?;
        read_back(&format!("load balancer {}", desired.name), || self.by_arn(arn)).await
    }

    async fn update(&self, _: &Context, update: Update<'_, Self>) -> Outcome<Self> {
        let Update { current, desired, changes } = update;
        let (elb, arn) = (&self.0.elbv2, &current.id);
        if changes.subnet_ids {
            let call = elb.set_subnets().load_balancer_arn(arn);
            let call = call.set_subnets(Some(desired.subnet_ids.clone()));
            call.send().await.api("elasticloadbalancing:SetSubnets")?;
        }
        if changes.security_group_ids {
            let call = elb.set_security_groups().load_balancer_arn(arn);
            let call = call.set_security_groups(Some(desired.security_group_ids.clone()));
            call.send().await.api("elasticloadbalancing:SetSecurityGroups")?;
        }
        if changes.tags {
            retag(&ElbTags(elb), arn, &current.attributes.tags, &desired.tags).await?;
        }
        still_there(&format!("load balancer {arn}"), self.by_arn(arn).await?)
    }

    async fn delete(&self, _: &Context, current: &LiveOf<Self>) -> KindResult<()> {
        let call = self.0.elbv2.delete_load_balancer().load_balancer_arn(&current.id);
        call.send()
            .await
            .or_gone("elasticloadbalancing:DeleteLoadBalancer", &["LoadBalancerNotFound"])
    }
}
