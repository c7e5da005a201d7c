//! `aws_security_group_rule`: one ingress or egress rule, with its own id and tags. Read by the
//! groups the spec names; a rule without tags (made by hand) that is exactly the one the spec
//! wants is taken as it. The authorize call's answer leaves fields out: a new rule is recorded
//! as asked, with the id the answer gives.

use super::{Ec2Tags, tag_spec, tags_of};
use crate::AwsClients;
use crate::error::{Listing, SdkResult, required};
use crate::lookup::{address_tag, filter, match_requests, missing_ids};
use crate::tagging::retag;
use aws_sdk_ec2::types::{
    Filter, IpPermission, IpRange, ResourceType, SecurityGroupRuleRequest, SecurityGroupRuleUpdate,
    UserIdGroupPair,
};
use engine::prelude::*;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

#[derive(Attributes, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct SecurityGroupRule {
    #[attr(replace)]
    pub security_group_id: String,
    /// `ingress` or `egress`.
    #[attr(replace)]
    pub direction: String,
    #[attr(replace)]
    pub protocol: String,
    #[attr(replace)]
    pub from_port: i32,
    #[attr(replace)]
    pub to_port: i32,
    #[attr(replace, normalize = engine::normalize::cidr)]
    pub cidr_ipv4: Option<String>,
    #[attr(replace)]
    pub referenced_security_group_id: Option<String>,
    #[attr(in_place)]
    pub description: Option<String>,
    #[attr(in_place, tags)]
    pub tags: Tags,
}

impl SecurityGroupRule {
    fn egress(&self) -> bool {
        self.direction == "egress"
    }

    /// Whether `other` is the same rule but for its description and tags (what identifies a
    /// rule without id and tags).
    fn same_rule(&self, other: &Self) -> bool {
        let bare =
            |r: &Self| SecurityGroupRule { description: None, tags: Tags::new(), ..r.clone() };
        bare(self) == bare(other)
    }

    /// The rule as an IpPermission for the authorize calls.
    fn permission(&self) -> IpPermission {
        let p = IpPermission::builder().ip_protocol(&self.protocol);
        let mut p = p.from_port(self.from_port).to_port(self.to_port);
        if let Some(c) = &self.cidr_ipv4 {
            let range = IpRange::builder().cidr_ip(c).set_description(self.description.clone());
            p = p.ip_ranges(range.build());
        }
        if let Some(g) = &self.referenced_security_group_id {
            let pair = UserIdGroupPair::builder().group_id(g);
            p = p.user_id_group_pairs(pair.set_description(self.description.clone()).build());
        }
        p.build()
    }
}

pub(crate) struct SecurityGroupRuleKind(pub Arc<AwsClients>);

/// What the revoke calls answer when the rule is already gone.
const GONE: &[&str] =
    &["InvalidGroup.NotFound", "InvalidPermission.NotFound", "InvalidSecurityGroupRuleId.NotFound"];

impl SecurityGroupRuleKind {
    async fn describe(&self, filter: Filter) -> KindResult<Vec<Live<SecurityGroupRule>>> {
        let pages = self.0.ec2.describe_security_group_rules().filters(filter).into_paginator();
        let rules: Vec<_> = pages.items().send().all("ec2:DescribeSecurityGroupRules").await?;
        rules
            .iter()
            .map(|r| {
                let rule = SecurityGroupRule {
                    security_group_id: r.group_id().unwrap_or_default().to_string(),
                    direction: if r.is_egress() == Some(true) { "egress" } else { "ingress" }
                        .into(),
                    protocol: r.ip_protocol().unwrap_or("-1").to_string(),
                    from_port: r.from_port().unwrap_or(-1),
                    to_port: r.to_port().unwrap_or(-1),
                    cidr_ipv4: r.cidr_ipv4().map(str::to_string),
                    referenced_security_group_id: r
                        .referenced_group_info()
                        .and_then(|g| g.group_id())
                        .map(str::to_string),
                    description: r.description().map(str::to_string),
                    tags: tags_of(r.tags()),
                };
                let id =
                    required(r.security_group_rule_id(), "ec2:DescribeSecurityGroupRules: Id")?;
                Ok(Live::new(id, rule))
            })
            .collect()
    }
}

impl SecurityGroupRuleKind {
    /// The untagged rule of the group that is `desired`, described and tagged as the spec wants.
    async fn take_bare(
        &self,
        ctx: &Context,
        desired: &SecurityGroupRule,
    ) -> KindResult<Option<Live<SecurityGroupRule>>> {
        let group = vec![desired.security_group_id.clone()];
        let found = self.describe(filter("group-id", group)).await?;
        let bare = |l: &&Live<_>| address_tag(&l.attributes).is_none();
        let Some(bare) = found.iter().filter(bare).find(|l| l.attributes.same_rule(desired)) else {
            return Ok(None);
        };
        let changes =
            SecurityGroupRuleChanges { description: true, tags: true, ..Default::default() };
        let update = Update { current: bare, desired, changes: &changes };
        self.update(ctx, update).await.map(Some)
    }
}

impl TypedKind for SecurityGroupRuleKind {
    type Attrs = SecurityGroupRule;
    const NAME: &'static str = "aws_security_group_rule";

    async fn read(&self, _: &Context, requests: &Requests<Self>) -> Found<Self> {
        let mut groups: Vec<String> = requests
            .iter()
            .filter_map(|r| Some(r.desired.as_ref()?.security_group_id.clone()))
            .collect();
        groups.sort();
        groups.dedup();
        let mut found = if groups.is_empty() {
            vec![]
        } else {
            self.describe(filter("group-id", groups)).await?
        };
        let missing = missing_ids(requests, &found);
        if !missing.is_empty() {
            found.extend(self.describe(filter("security-group-rule-id", missing)).await?);
        }
        // An untagged rule is not taken here: the group it is in calls it foreign and revokes
        // it (or, in a shared group, the create takes it: `take_bare`).
        Ok(match_requests(requests, &found))
    }

    async fn create(&self, ctx: &Context, desired: &Self::Attrs) -> Outcome<Self> {
        let ec2 = &self.0.ec2;
        let (group, permission) = (&desired.security_group_id, desired.permission());
        let tags = tag_spec(ResourceType::SecurityGroupRule, &desired.tags);
        let authorized = if desired.egress() {
            let call = ec2.authorize_security_group_egress().group_id(group);
            let call = call.ip_permissions(permission).tag_specifications(tags);
            let out = call.send().await.api("ec2:AuthorizeSecurityGroupEgress");
            out.map(|o| o.security_group_rules)
        } else {
            let call = ec2.authorize_security_group_ingress().group_id(group);
            let call = call.ip_permissions(permission).tag_specifications(tags);
            let out = call.send().await.api("ec2:AuthorizeSecurityGroupIngress");
            out.map(|o| o.security_group_rules)
        };
        let rules = match authorized {
            Ok(rules) => rules,
            // The same rule, untagged, already in the group (the group's default egress, left by
            // a group create whose answer was lost): it is the one the spec wants; take it.
            Err(e) if e.has_code("InvalidPermission.Duplicate") => {
                return self.take_bare(ctx, desired).await?.ok_or(e);
            }
            Err(e) => return Err(e),
        };
        let id = rules.as_deref().and_then(|r| r.first()).and_then(|r| r.security_group_rule_id());
        let id = required(id, "ec2:AuthorizeSecurityGroup*: SecurityGroupRuleId")?;
        Ok(Live::new(id, desired.clone()))
    }

    async fn update(&self, _: &Context, update: Update<'_, Self>) -> Outcome<Self> {
        let Update { current, desired, changes } = update;
        let ec2 = &self.0.ec2;
        if changes.description {
            let d = desired;
            let request = SecurityGroupRuleRequest::builder()
                .ip_protocol(&d.protocol)
                .from_port(d.from_port)
                .to_port(d.to_port)
                .set_cidr_ipv4(d.cidr_ipv4.clone())
                .set_referenced_group_id(d.referenced_security_group_id.clone())
                .set_description(d.description.clone())
                .build();
            let update = SecurityGroupRuleUpdate::builder().security_group_rule_id(&current.id);
            let update = update.security_group_rule(request).build();
            let call = ec2.modify_security_group_rules().group_id(&d.security_group_id);
            call.security_group_rules(update).send().await.api("ec2:ModifySecurityGroupRules")?;
        }
        if changes.tags {
            retag(&Ec2Tags(ec2), &current.id, &current.attributes.tags, &desired.tags).await?;
        }
        Ok(Live::new(&current.id, desired.clone()))
    }

    async fn delete(&self, _: &Context, current: &LiveOf<Self>) -> KindResult<()> {
        let ec2 = &self.0.ec2;
        let (group, id) = (&current.attributes.security_group_id, &current.id);
        if current.attributes.egress() {
            let call =
                ec2.revoke_security_group_egress().group_id(group).security_group_rule_ids(id);
            call.send().await.or_gone("ec2:RevokeSecurityGroupEgress", GONE)
        } else {
            let call =
                ec2.revoke_security_group_ingress().group_id(group).security_group_rule_ids(id);
            call.send().await.or_gone("ec2:RevokeSecurityGroupIngress", GONE)
        }
    }
}
