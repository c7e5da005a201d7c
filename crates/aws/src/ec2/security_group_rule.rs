//! `aws_security_group_rule`: one ingress or egress rule, with its own id and tags.

use crate::AwsClients;
use crate::error::{api_error, has_code};
use crate::lookup_json::{address_tag, filter, live, str_attr};
use crate::tags;
use async_trait::async_trait;
use aws_sdk_ec2::types::{
    IpPermission, IpRange, ResourceType, SecurityGroupRule as Ec2Rule, SecurityGroupRuleRequest,
    SecurityGroupRuleUpdate, UserIdGroupPair,
};
use engine::{Address, Attrs, Context, Field, Kind, KindError, Live, ReadRequest};
use serde_json::{Value as Json, json};
use std::sync::Arc;

pub(crate) struct SecurityGroupRule(pub Arc<AwsClients>);

const FIELDS: &[Field] = &[
    Field::replace("security_group_id"),
    Field::replace("direction"),
    Field::replace("protocol"),
    Field::replace("from_port"),
    Field::replace("to_port"),
    Field::replace("cidr_ipv4"),
    Field::replace("referenced_security_group_id"),
    Field::in_place("description"),
    Field::in_place("tags"),
    Field::computed("id"),
];

fn to_live(r: &Ec2Rule) -> Live {
    let mut l = live(
        r.security_group_rule_id().unwrap_or_default(),
        [
            ("security_group_id", json!(r.group_id().unwrap_or_default())),
            ("direction", json!(if r.is_egress() == Some(true) { "egress" } else { "ingress" })),
            ("protocol", json!(r.ip_protocol().unwrap_or("-1"))),
            ("from_port", json!(r.from_port().unwrap_or(-1))),
            ("to_port", json!(r.to_port().unwrap_or(-1))),
            ("description", json!(r.description().unwrap_or_default())),
            ("tags", tags::ec2_to_json(r.tags())),
        ],
    );
    if let Some(c) = r.cidr_ipv4() {
        l.attributes.insert("cidr_ipv4".into(), json!(c));
    }
    if let Some(g) = r.referenced_group_info().and_then(|g| g.group_id()) {
        l.attributes.insert("referenced_security_group_id".into(), json!(g));
    }
    l
}

/// The rule as an IpPermission for authorize/revoke calls.
fn permission(desired: &Attrs) -> Result<IpPermission, KindError> {
    let int = |n: &str| desired.get(n).and_then(Json::as_i64).unwrap_or(-1) as i32;
    let mut p = IpPermission::builder()
        .ip_protocol(str_attr(desired, "protocol")?)
        .from_port(int("from_port"))
        .to_port(int("to_port"));
    let description = desired.get("description").and_then(Json::as_str).map(str::to_string);
    if let Some(c) = desired.get("cidr_ipv4").and_then(Json::as_str) {
        p = p.ip_ranges(IpRange::builder().cidr_ip(c).set_description(description.clone()).build());
    }
    if let Some(g) = desired.get("referenced_security_group_id").and_then(Json::as_str) {
        p = p.user_id_group_pairs(
            UserIdGroupPair::builder().group_id(g).set_description(description).build(),
        );
    }
    Ok(p.build())
}

/// Same rule content (what identifies a rule when its id and tags are unknown).
fn same_rule(live: &Live, desired: &Attrs) -> bool {
    [
        "security_group_id",
        "direction",
        "protocol",
        "from_port",
        "to_port",
        "cidr_ipv4",
        "referenced_security_group_id",
    ]
    .iter()
    .all(|k| live.attributes.get(*k) == desired.get(*k))
}

impl SecurityGroupRule {
    async fn describe(&self, filter: aws_sdk_ec2::types::Filter) -> Result<Vec<Live>, KindError> {
        let ec2 = &self.0.ec2;
        let rules: Vec<_> = ec2
            .describe_security_group_rules()
            .filters(filter)
            .into_paginator()
            .items()
            .send()
            .collect::<Result<_, _>>()
            .await
            .map_err(|e| api_error("ec2:DescribeSecurityGroupRules", e))?;
        Ok(rules.iter().map(to_live).collect())
    }
}

#[async_trait]
impl Kind for SecurityGroupRule {
    fn name(&self) -> &'static str {
        "aws_security_group_rule"
    }

    fn fields(&self) -> &'static [Field] {
        FIELDS
    }

    async fn read(
        &self,
        _ctx: &Context,
        requests: &[ReadRequest],
    ) -> Result<Vec<Option<Live>>, KindError> {
        let mut groups: Vec<String> = requests
            .iter()
            .filter_map(|r| {
                r.desired.as_ref()?.get("security_group_id")?.as_str().map(str::to_string)
            })
            .collect();
        groups.sort();
        groups.dedup();
        let mut found = if groups.is_empty() {
            vec![]
        } else {
            self.describe(filter("group-id", groups)).await?
        };
        let missing: Vec<String> = requests
            .iter()
            .filter_map(|r| r.id.clone())
            .filter(|id| !found.iter().any(|l| &l.id == id))
            .collect();
        if !missing.is_empty() {
            found.extend(self.describe(filter("security-group-rule-id", missing)).await?);
        }
        Ok(requests
            .iter()
            .map(|r| {
                r.id.as_ref()
                    .and_then(|id| found.iter().find(|l| &l.id == id))
                    .or_else(|| found.iter().find(|l| address_tag(l) == Some(r.address.as_str())))
                    .or_else(|| {
                        r.desired.as_ref().and_then(|d| {
                            found.iter().find(|l| address_tag(l).is_none() && same_rule(l, d))
                        })
                    })
                    .cloned()
            })
            .collect())
    }

    async fn create(
        &self,
        _ctx: &Context,
        _address: &Address,
        desired: &Attrs,
    ) -> Result<Live, KindError> {
        let ec2 = &self.0.ec2;
        let group = str_attr(desired, "security_group_id")?;
        let tag_spec = tags::ec2_spec(ResourceType::SecurityGroupRule, desired);
        let rules = if str_attr(desired, "direction")? == "egress" {
            ec2.authorize_security_group_egress()
                .group_id(group)
                .ip_permissions(permission(desired)?)
                .tag_specifications(tag_spec)
                .send()
                .await
                .map_err(|e| api_error("ec2:AuthorizeSecurityGroupEgress", e))?
                .security_group_rules()
                .to_vec()
        } else {
            ec2.authorize_security_group_ingress()
                .group_id(group)
                .ip_permissions(permission(desired)?)
                .tag_specifications(tag_spec)
                .send()
                .await
                .map_err(|e| api_error("ec2:AuthorizeSecurityGroupIngress", e))?
                .security_group_rules()
                .to_vec()
        };
        let rule = rules
            .first()
            .ok_or_else(|| KindError::new("authorize returned no security group rule"))?;
        let mut l = to_live(rule);
        // Echo what was asked for where the response leaves fields out.
        for k in ["description", "tags", "cidr_ipv4", "referenced_security_group_id"] {
            if let Some(v) = desired.get(k) {
                l.attributes.insert(k.into(), v.clone());
            }
        }
        Ok(l)
    }

    async fn update(
        &self,
        _ctx: &Context,
        _address: &Address,
        current: &Live,
        desired: &Attrs,
    ) -> Result<Live, KindError> {
        let ec2 = &self.0.ec2;
        if current.attributes.get("description") != desired.get("description") {
            let int = |n: &str| desired.get(n).and_then(Json::as_i64).unwrap_or(-1) as i32;
            let request = SecurityGroupRuleRequest::builder()
                .ip_protocol(str_attr(desired, "protocol")?)
                .from_port(int("from_port"))
                .to_port(int("to_port"))
                .set_cidr_ipv4(desired.get("cidr_ipv4").and_then(Json::as_str).map(str::to_string))
                .set_referenced_group_id(
                    desired
                        .get("referenced_security_group_id")
                        .and_then(Json::as_str)
                        .map(str::to_string),
                )
                .set_description(
                    desired.get("description").and_then(Json::as_str).map(str::to_string),
                )
                .build();
            ec2.modify_security_group_rules()
                .group_id(str_attr(desired, "security_group_id")?)
                .security_group_rules(
                    SecurityGroupRuleUpdate::builder()
                        .security_group_rule_id(&current.id)
                        .security_group_rule(request)
                        .build(),
                )
                .send()
                .await
                .map_err(|e| api_error("ec2:ModifySecurityGroupRules", e))?;
        }
        tags::ec2_update(ec2, &current.id, &current.attributes, desired).await?;
        let mut l = current.clone();
        for k in ["description", "tags"] {
            if let Some(v) = desired.get(k) {
                l.attributes.insert(k.into(), v.clone());
            }
        }
        Ok(l)
    }

    async fn delete(
        &self,
        _ctx: &Context,
        _address: &Address,
        current: &Live,
    ) -> Result<(), KindError> {
        let ec2 = &self.0.ec2;
        let group =
            current.attributes.get("security_group_id").and_then(Json::as_str).unwrap_or_default();
        let result = if current.attributes.get("direction").and_then(Json::as_str) == Some("egress")
        {
            ec2.revoke_security_group_egress()
                .group_id(group)
                .security_group_rule_ids(&current.id)
                .send()
                .await
                .map(|_| ())
                .map_err(|e| {
                    (
                        has_code(&e, "InvalidGroup.NotFound")
                            || has_code(&e, "InvalidPermission.NotFound")
                            || has_code(&e, "InvalidSecurityGroupRuleId.NotFound"),
                        api_error("ec2:RevokeSecurityGroupEgress", e),
                    )
                })
        } else {
            ec2.revoke_security_group_ingress()
                .group_id(group)
                .security_group_rule_ids(&current.id)
                .send()
                .await
                .map(|_| ())
                .map_err(|e| {
                    (
                        has_code(&e, "InvalidGroup.NotFound")
                            || has_code(&e, "InvalidPermission.NotFound")
                            || has_code(&e, "InvalidSecurityGroupRuleId.NotFound"),
                        api_error("ec2:RevokeSecurityGroupIngress", e),
                    )
                })
        };
        match result {
            Ok(()) | Err((true, _)) => Ok(()),
            Err((false, e)) => Err(e),
        }
    }
}
