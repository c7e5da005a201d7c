//! `aws_autoscaling_group`: the OpenBao nodes, in the private subnets, registered in the load
//! balancer's target group. Tags (but the engine's own) propagate to the instances: raft
//! auto-join finds its peers by one of them.

use crate::AwsClients;
use crate::error::{api_error, has_code};
use crate::lookup_json::{
    int_attr, live, match_requests, missing_ids, still_there, str_attr, strings_attr,
};
use crate::settle::read_back;
use async_trait::async_trait;
use aws_sdk_autoscaling::types::{
    AutoScalingGroup as Asg, Filter, LaunchTemplateSpecification, Tag,
};
use engine::{Address, Attrs, Context, Field, Kind, KindError, Live, ReadRequest, TAG_SPEC};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

pub(crate) struct AutoscalingGroup(pub Arc<AwsClients>);

const FIELDS: &[Field] = &[
    Field::replace("name"),
    Field::in_place("launch_template_id"),
    Field::in_place("launch_template_version"),
    Field::in_place("min_size"),
    Field::in_place("max_size"),
    Field::in_place("desired_capacity"),
    Field::in_place("subnet_ids").unordered(),
    Field::in_place("target_group_arns").unordered(),
    Field::in_place("health_check_type"),
    Field::in_place("health_check_grace_period"),
    Field::in_place("tags"),
    Field::computed("id"),
    Field::computed("arn"),
];

/// The group's tags for AWS: the engine's ownership tags stay on the group, the others
/// propagate to the instances it launches.
fn asg_tags(name: &str, attrs: &Attrs) -> Vec<Tag> {
    crate::tags::from_attrs(attrs)
        .into_iter()
        .map(|(k, v)| {
            let propagate = !k.starts_with("engine:");
            Tag::builder()
                .resource_id(name)
                .resource_type("auto-scaling-group")
                .key(k)
                .value(v)
                .propagate_at_launch(propagate)
                .build()
        })
        .collect()
}

fn to_live(g: &Asg) -> Live {
    let name = g.auto_scaling_group_name().unwrap_or_default();
    let mut subnets: Vec<&str> = g
        .vpc_zone_identifier()
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect();
    subnets.sort();
    let mut groups: Vec<&str> = g.target_group_arns().iter().map(String::as_str).collect();
    groups.sort();
    let lt = g.launch_template();
    live(
        name,
        [
            ("name", json!(name)),
            ("launch_template_id", json!(lt.and_then(|t| t.launch_template_id()))),
            ("launch_template_version", json!(lt.and_then(|t| t.version()))),
            ("min_size", json!(g.min_size())),
            ("max_size", json!(g.max_size())),
            ("desired_capacity", json!(g.desired_capacity())),
            ("subnet_ids", json!(subnets)),
            ("target_group_arns", json!(groups)),
            ("health_check_type", json!(g.health_check_type())),
            ("health_check_grace_period", json!(g.health_check_grace_period())),
            (
                "tags",
                crate::tags::to_json(
                    g.tags()
                        .iter()
                        .map(|t| (t.key().unwrap_or_default(), t.value().unwrap_or_default())),
                ),
            ),
            ("arn", json!(g.auto_scaling_group_arn())),
        ],
    )
}

impl AutoscalingGroup {
    fn client(&self) -> Result<&aws_sdk_autoscaling::Client, KindError> {
        Ok(&self.0.autoscaling)
    }

    async fn describe(
        &self,
        filter: Option<Filter>,
        names: Vec<String>,
    ) -> Result<Vec<Live>, KindError> {
        let groups: Vec<Asg> = self
            .client()?
            .describe_auto_scaling_groups()
            .set_filters(filter.map(|f| vec![f]))
            .set_auto_scaling_group_names((!names.is_empty()).then_some(names))
            .into_paginator()
            .items()
            .send()
            .collect::<Result<_, _>>()
            .await
            .map_err(|e| api_error("autoscaling:DescribeAutoScalingGroups", e))?;
        // A group being deleted is on its way out: neither adopted nor updated.
        Ok(groups
            .iter()
            .filter(|g| g.status().is_none_or(|s| !s.starts_with("Delete")))
            .map(to_live)
            .collect())
    }

    async fn by_name(&self, name: &str) -> Result<Option<Live>, KindError> {
        Ok(self.describe(None, vec![name.to_string()]).await?.into_iter().next())
    }

    fn launch_template(desired: &Attrs) -> Result<LaunchTemplateSpecification, KindError> {
        Ok(LaunchTemplateSpecification::builder()
            .launch_template_id(str_attr(desired, "launch_template_id")?)
            .version(str_attr(desired, "launch_template_version")?)
            .build())
    }
}

#[async_trait]
impl Kind for AutoscalingGroup {
    fn name(&self) -> &'static str {
        "aws_autoscaling_group"
    }

    fn fields(&self) -> &'static [Field] {
        FIELDS
    }

    async fn read(
        &self,
        ctx: &Context,
        requests: &[ReadRequest],
    ) -> Result<Vec<Option<Live>>, KindError> {
        let owned =
            Filter::builder().name(format!("tag:{TAG_SPEC}")).values(ctx.spec_name()).build();
        let mut found = self.describe(Some(owned), vec![]).await?;
        let missing = missing_ids(requests, &found);
        if !missing.is_empty() {
            found.extend(self.describe(None, missing).await?);
        }
        Ok(match_requests(requests, &found))
    }

    async fn create(
        &self,
        _ctx: &Context,
        address: &Address,
        desired: &Attrs,
    ) -> Result<Live, KindError> {
        let name = str_attr(desired, "name")?;
        self.client()?
            .create_auto_scaling_group()
            .auto_scaling_group_name(name)
            .launch_template(Self::launch_template(desired)?)
            .min_size(int_attr(desired, "min_size")?)
            .max_size(int_attr(desired, "max_size")?)
            .desired_capacity(int_attr(desired, "desired_capacity")?)
            .vpc_zone_identifier(strings_attr(desired, "subnet_ids").join(","))
            .set_target_group_arns(Some(strings_attr(desired, "target_group_arns")))
            .health_check_type(str_attr(desired, "health_check_type")?)
            .health_check_grace_period(int_attr(desired, "health_check_grace_period")?)
            .set_tags(Some(asg_tags(name, desired)))
            .send()
            .await
            .map_err(|e| api_error("autoscaling:CreateAutoScalingGroup", e))?;
        tracing::info!(%address, name, "created autoscaling group");
        read_back(&format!("autoscaling group {name}"), || self.by_name(name)).await
    }

    async fn update(
        &self,
        _ctx: &Context,
        _address: &Address,
        current: &Live,
        desired: &Attrs,
    ) -> Result<Live, KindError> {
        let client = self.client()?;
        let name = &current.id;
        let differs = |f: &str| current.attributes.get(f) != desired.get(f);
        let group_fields = [
            "launch_template_id",
            "launch_template_version",
            "min_size",
            "max_size",
            "desired_capacity",
            "subnet_ids",
            "health_check_type",
            "health_check_grace_period",
        ];
        if group_fields.iter().any(|f| differs(f)) {
            client
                .update_auto_scaling_group()
                .auto_scaling_group_name(name)
                .launch_template(Self::launch_template(desired)?)
                .min_size(int_attr(desired, "min_size")?)
                .max_size(int_attr(desired, "max_size")?)
                .desired_capacity(int_attr(desired, "desired_capacity")?)
                .vpc_zone_identifier(strings_attr(desired, "subnet_ids").join(","))
                .health_check_type(str_attr(desired, "health_check_type")?)
                .health_check_grace_period(int_attr(desired, "health_check_grace_period")?)
                .send()
                .await
                .map_err(|e| api_error("autoscaling:UpdateAutoScalingGroup", e))?;
        }
        let have = strings_attr(&current.attributes, "target_group_arns");
        let want = strings_attr(desired, "target_group_arns");
        let detach: Vec<String> = have.iter().filter(|a| !want.contains(a)).cloned().collect();
        let attach: Vec<String> = want.iter().filter(|a| !have.contains(a)).cloned().collect();
        if !attach.is_empty() {
            client
                .attach_load_balancer_target_groups()
                .auto_scaling_group_name(name)
                .set_target_group_arns(Some(attach))
                .send()
                .await
                .map_err(|e| api_error("autoscaling:AttachLoadBalancerTargetGroups", e))?;
        }
        if !detach.is_empty() {
            client
                .detach_load_balancer_target_groups()
                .auto_scaling_group_name(name)
                .set_target_group_arns(Some(detach))
                .send()
                .await
                .map_err(|e| api_error("autoscaling:DetachLoadBalancerTargetGroups", e))?;
        }
        if differs("tags") {
            let stale: Vec<Tag> = crate::tags::diff(&current.attributes, desired)
                .removed
                .into_iter()
                .map(|k| {
                    Tag::builder()
                        .resource_id(name)
                        .resource_type("auto-scaling-group")
                        .key(k)
                        .build()
                })
                .collect();
            if !stale.is_empty() {
                client
                    .delete_tags()
                    .set_tags(Some(stale))
                    .send()
                    .await
                    .map_err(|e| api_error("autoscaling:DeleteTags", e))?;
            }
            client
                .create_or_update_tags()
                .set_tags(Some(asg_tags(name, desired)))
                .send()
                .await
                .map_err(|e| api_error("autoscaling:CreateOrUpdateTags", e))?;
        }
        still_there(&format!("autoscaling group {name}"), self.by_name(name).await?)
    }

    async fn delete(
        &self,
        ctx: &Context,
        _address: &Address,
        current: &Live,
    ) -> Result<(), KindError> {
        let client = self.client()?;
        let name = &current.id;
        match client
            .delete_auto_scaling_group()
            .auto_scaling_group_name(name)
            .force_delete(true)
            .send()
            .await
        {
            Ok(_) => {}
            Err(e) if has_code(&e, "ValidationError") && self.by_name(name).await?.is_none() => {
                return Ok(());
            }
            Err(e) => return Err(api_error("autoscaling:DeleteAutoScalingGroup", e)),
        }
        // Instances terminate first; the subnets and security groups are free only after.
        for _ in 0..120 {
            let still: Vec<Asg> = client
                .describe_auto_scaling_groups()
                .auto_scaling_group_names(name)
                .send()
                .await
                .map_err(|e| api_error("autoscaling:DescribeAutoScalingGroups", e))?
                .auto_scaling_groups()
                .to_vec();
            if still.is_empty() {
                return Ok(());
            }
            ctx.waiting(format!("autoscaling group {name} terminating its instances"));
            tokio::time::sleep(Duration::from_secs(5)).await;
        }
        Err(KindError::retryable(format!("autoscaling group {name} is still being deleted")))
    }
}
