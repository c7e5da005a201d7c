//! `aws_security_group`: a security group whose rules are all managed as
//! `aws_security_group_rule` resources (the default allow-all egress rule is removed on create).
//!
//! The engine owns the group whole: `foreign_rules` lists the group's rules that are no
//! `aws_security_group_rule` of the engine (neither an `engine:address` tag nor recorded in the
//! state, as a rule taken over from OpenTofu is until its tags are set), the spec wants none,
//! so a rule added out of band is drift and `apply` revokes it. A group that a controller in the
//! cluster legitimately adds rules to is named in `[globals] shared`: its expansion leaves
//! `foreign_rules` out, and it is neither reported nor cleaned.

use super::{Ec2Tags, tag_spec, tags_of};
use crate::AwsClients;
use crate::error::{Listing, SdkResult, required};
use crate::lookup::{filter, read_back_id, read_owned_then_ids};
use crate::tagging::retag;
use aws_sdk_ec2::types::{Filter, IpPermission, IpRange, ResourceType};
use engine::TAG_ADDRESS;
use engine::prelude::*;
use engine::retry::settle;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::Arc;

#[derive(Attributes, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct SecurityGroup {
    #[attr(replace)]
    pub name: String,
    #[attr(replace)]
    pub description: String,
    #[attr(replace)]
    pub vpc_id: String,
    #[attr(in_place, tags)]
    pub tags: Tags,
    #[attr(computed)]
    pub arn: Option<String>,
    /// Rules in the group the engine did not make, as `<rule id> <in|out> <protocol>
    /// <ports> <peer>`; `None` for a shared group (not watched).
    #[attr(in_place, unordered)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub foreign_rules: Option<Vec<String>>,
}

pub(crate) struct SecurityGroupKind(pub Arc<AwsClients>);

/// A rule already gone when revoked.
const GONE_RULE: &[&str] = &["InvalidPermission.NotFound", "InvalidSecurityGroupRuleId.NotFound"];

/// A rule for people and for [`SecurityGroupKind::revoke`]: `sgr-1 in tcp 22-22 10.0.0.0/8`.
fn describe_rule(r: &aws_sdk_ec2::types::SecurityGroupRule) -> String {
    let direction = if r.is_egress() == Some(true) { "out" } else { "in" };
    let peer = r
        .cidr_ipv4()
        .or(r.cidr_ipv6())
        .or(r.prefix_list_id())
        .or(r.referenced_group_info().and_then(|g| g.group_id()))
        .unwrap_or("?");
    format!(
        "{} {direction} {} {}-{} {peer}",
        r.security_group_rule_id().unwrap_or("?"),
        r.ip_protocol().unwrap_or("?"),
        r.from_port().unwrap_or(-1),
        r.to_port().unwrap_or(-1),
    )
}

impl SecurityGroupKind {
    async fn describe(&self, filter: Filter) -> KindResult<Vec<Live<SecurityGroup>>> {
        let pages = self.0.ec2.describe_security_groups().filters(filter).into_paginator();
        let groups: Vec<_> = pages.items().send().all("ec2:DescribeSecurityGroups").await?;
        groups
            .iter()
            .map(|g| {
                let group = SecurityGroup {
                    name: g.group_name().unwrap_or_default().to_string(),
                    description: g.description().unwrap_or_default().to_string(),
                    vpc_id: g.vpc_id().unwrap_or_default().to_string(),
                    tags: tags_of(g.tags()),
                    arn: g.security_group_arn().map(str::to_string),
                    foreign_rules: None,
                };
                Ok(Live::new(required(g.group_id(), "ec2:DescribeSecurityGroups: GroupId")?, group))
            })
            .collect()
    }

    /// The rules that are not the engine's, by group id: one call for all `groups`.
    async fn foreign_rules(
        &self,
        ctx: &Context,
        groups: Vec<String>,
    ) -> KindResult<HashMap<String, Vec<String>>> {
        let mut out: HashMap<String, Vec<String>> =
            groups.iter().map(|g| (g.clone(), vec![])).collect();
        if groups.is_empty() {
            return Ok(out);
        }
        let call = self.0.ec2.describe_security_group_rules().filters(filter("group-id", groups));
        let rules: Vec<_> =
            call.into_paginator().items().send().all("ec2:DescribeSecurityGroupRules").await?;
        for r in rules {
            let ours = r.tags().iter().any(|t| t.key() == Some(TAG_ADDRESS))
                || r.security_group_rule_id()
                    .is_some_and(|id| ctx.is_recorded("aws_security_group_rule", id));
            if let (false, Some(group)) = (ours, r.group_id()) {
                out.entry(group.to_string()).or_default().push(describe_rule(&r));
            }
        }
        Ok(out)
    }

    /// Revokes the rules listed in `foreign` (as [`describe_rule`] writes them).
    async fn revoke(&self, group: &str, foreign: &[String]) -> KindResult<()> {
        let ids = |direction: &str| -> Vec<String> {
            foreign
                .iter()
                .filter(|r| r.split(' ').nth(1) == Some(direction))
                .filter_map(|r| r.split(' ').next().map(str::to_string))
                .collect()
        };
        let ec2 = &self.0.ec2;
        let (ingress, egress) = (ids("in"), ids("out"));
        if !ingress.is_empty() {
            let call = ec2.revoke_security_group_ingress().group_id(group);
            let call = call.set_security_group_rule_ids(Some(ingress));
            call.send().await.or_gone("ec2:RevokeSecurityGroupIngress", GONE_RULE)?;
        }
        if !egress.is_empty() {
            let call = ec2.revoke_security_group_egress().group_id(group);
            let call = call.set_security_group_rule_ids(Some(egress));
            call.send().await.or_gone("ec2:RevokeSecurityGroupEgress", GONE_RULE)?;
        }
        Ok(())
    }

    async fn revoke_default_egress(&self, id: &str) -> KindResult<()> {
        let all = IpRange::builder().cidr_ip("0.0.0.0/0").build();
        let all = IpPermission::builder().ip_protocol("-1").ip_ranges(all).build();
        let call = self.0.ec2.revoke_security_group_egress().group_id(id).ip_permissions(all);
        call.send().await.or_gone("ec2:RevokeSecurityGroupEgress", &["InvalidPermission.NotFound"])
    }
}

impl TypedKind for SecurityGroupKind {
    type Attrs = SecurityGroup;
    const NAME: &'static str = "aws_security_group";

    async fn read(&self, ctx: &Context, requests: &Requests<Self>) -> Found<Self> {
        let mut found =
            read_owned_then_ids(ctx, requests, "group-id", |f| self.describe(f)).await?;
        // Foreign rules of the groups the spec watches whole (shared ones leave them out).
        let watched = |r: &ReadRequest<SecurityGroup>| {
            r.desired.as_ref().is_none_or(|d| d.foreign_rules.is_some())
        };
        let groups: Vec<String> = requests
            .iter()
            .zip(&found)
            .filter(|(r, _)| watched(r))
            .filter_map(|(_, l)| l.as_ref().map(|l| l.id.clone()))
            .collect();
        let mut foreign = self.foreign_rules(ctx, groups).await?;
        for (r, l) in requests.iter().zip(found.iter_mut()) {
            if let (true, Some(l)) = (watched(r), l.as_mut()) {
                l.attributes.foreign_rules = Some(foreign.remove(&l.id).unwrap_or_default());
            }
        }
        Ok(found)
    }

    async fn create(&self, _: &Context, desired: &Self::Attrs) -> Outcome<Self> {
        let out = self
            .0
            .ec2
            .create_security_group()
            .group_name(&desired.name)
            .description(&desired.description)
            .vpc_id(&desired.vpc_id)
            .tag_specifications(tag_spec(ResourceType::SecurityGroup, &desired.tags))
            .send()
            .await
            .api("ec2:CreateSecurityGroup")?;
        let id = required(out.group_id(), "ec2:CreateSecurityGroup: GroupId")?;
        settle(|| self.revoke_default_egress(id)).await?;
        let mut group =
            read_back_id("security group", "group-id", id, |f| self.describe(f)).await?;
        group.attributes.foreign_rules = desired.foreign_rules.clone();
        Ok(group)
    }

    async fn update(&self, _: &Context, update: Update<'_, Self>) -> Outcome<Self> {
        let Update { current, desired, changes } = update;
        if changes.foreign_rules {
            let foreign = current.attributes.foreign_rules.as_deref().unwrap_or_default();
            self.revoke(&current.id, foreign).await?;
        }
        if changes.tags {
            let current_tags = &current.attributes.tags;
            retag(&Ec2Tags(&self.0.ec2), &current.id, current_tags, &desired.tags).await?;
        }
        let mut group = desired.clone();
        group.arn = current.attributes.arn.clone();
        Ok(Live::new(&current.id, group))
    }

    async fn delete(&self, _: &Context, current: &LiveOf<Self>) -> KindResult<()> {
        let call = self.0.ec2.delete_security_group().group_id(&current.id);
        call.send().await.or_gone("ec2:DeleteSecurityGroup", &["InvalidGroup.NotFound"])
    }
}
