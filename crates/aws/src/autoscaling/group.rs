//! `aws_autoscaling_group`: the OpenBao nodes, in the private subnets, registered in the load
//! balancer's target group. Tags (but the engine's own) propagate to the instances: raft
//! auto-join finds its peers by one of them. Its id is its name. A group being deleted is
//! neither adopted nor updated; deleting one waits until its instances are gone (the subnets and
//! security groups are free only then).

use super::{AsgTags, asg_tags};
use crate::AwsClients;
use crate::error::{Listing, SdkResult, required};
use crate::lookup::{match_requests, missing_ids, still_there};
use crate::tagging::{from_pairs, retag};
use aws_sdk_autoscaling::types::{AutoScalingGroup as Asg, Filter, LaunchTemplateSpecification};
use engine::prelude::*;
use engine::retry::read_back;
use engine::wait::{Poll, Wait};
use engine::{Changes, TAG_SPEC};
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::time::Duration;

/// How long a delete waits for the instances to terminate.
const DELETE_TIMEOUT: Duration = Duration::from_secs(600);

#[derive(Attributes, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct AutoscalingGroup {
    #[attr(replace)]
    pub name: String,
    #[attr(in_place)]
    pub launch_template_id: String,
    #[attr(in_place)]
    pub launch_template_version: String,
    #[attr(in_place)]
    pub min_size: i32,
    #[attr(in_place)]
    pub max_size: i32,
    #[attr(in_place)]
    pub desired_capacity: i32,
    #[attr(in_place, unordered)]
    pub subnet_ids: Vec<String>,
    #[attr(in_place, unordered)]
    pub target_group_arns: Vec<String>,
    #[attr(in_place)]
    pub health_check_type: String,
    #[attr(in_place)]
    pub health_check_grace_period: i32,
    #[attr(in_place, tags)]
    pub tags: Tags,
    #[attr(computed)]
    pub arn: Option<String>,
}

impl AutoscalingGroup {
    fn launch_template(&self) -> LaunchTemplateSpecification {
        let spec = LaunchTemplateSpecification::builder();
        let spec = spec.launch_template_id(&self.launch_template_id);
        spec.version(&self.launch_template_version).build()
    }
}

/// Sets the group's settings on a CreateAutoScalingGroup or an UpdateAutoScalingGroup call:
/// the two builders have the same setters but no common type.
macro_rules! with_settings {
    ($call:expr, $group:expr) => {{
        let g: &AutoscalingGroup = $group;
        $call
            .launch_template(g.launch_template())
            .min_size(g.min_size)
            .max_size(g.max_size)
            .desired_capacity(g.desired_capacity)
            .vpc_zone_identifier(g.subnet_ids.join(","))
            .health_check_type(&g.health_check_type)
            .health_check_grace_period(g.health_check_grace_period)
    }};
}

fn live(g: &Asg) -> KindResult<Live<AutoscalingGroup>> {
    let name = g.auto_scaling_group_name();
    let name = required(name, "autoscaling:DescribeAutoScalingGroups: AutoScalingGroupName")?;
    let text = |s: Option<&str>| s.unwrap_or_default().to_string();
    let subnets = g.vpc_zone_identifier().unwrap_or_default().split(',').map(str::trim);
    let tags =
        g.tags().iter().map(|t| (t.key().unwrap_or_default(), t.value().unwrap_or_default()));
    let lt = g.launch_template();
    let group = AutoscalingGroup {
        name: name.to_string(),
        launch_template_id: text(lt.and_then(|t| t.launch_template_id())),
        launch_template_version: text(lt.and_then(|t| t.version())),
        min_size: g.min_size().unwrap_or_default(),
        max_size: g.max_size().unwrap_or_default(),
        desired_capacity: g.desired_capacity().unwrap_or_default(),
        subnet_ids: subnets.filter(|s| !s.is_empty()).map(str::to_string).collect(),
        target_group_arns: g.target_group_arns().to_vec(),
        health_check_type: text(g.health_check_type()),
        health_check_grace_period: g.health_check_grace_period().unwrap_or_default(),
        tags: from_pairs(tags),
        arn: g.auto_scaling_group_arn().map(str::to_string),
    };
    Ok(Live::new(name, group))
}

pub(crate) struct AutoscalingGroupKind(pub Arc<AwsClients>);

impl AutoscalingGroupKind {
    /// The groups `filter` or `names` select, those being deleted included.
    async fn groups(&self, filter: Option<Filter>, names: Vec<String>) -> KindResult<Vec<Asg>> {
        let call = self.0.autoscaling.describe_auto_scaling_groups();
        let call = call.set_filters(filter.map(|f| vec![f]));
        let call = call.set_auto_scaling_group_names((!names.is_empty()).then_some(names));
        let pages = call.into_paginator().items().send();
        pages.all("autoscaling:DescribeAutoScalingGroups").await
    }

    /// The groups `filter` or `names` select but those being deleted (on their way out).
    async fn describe(
        &self,
        filter: Option<Filter>,
        names: Vec<String>,
    ) -> KindResult<Vec<Live<AutoscalingGroup>>> {
        let groups = self.groups(filter, names).await?;
        let deleting = |g: &&Asg| g.status().is_some_and(|s| s.starts_with("Delete"));
        groups.iter().filter(|g| !deleting(g)).map(live).collect()
    }

    async fn by_name(&self, name: &str) -> KindResult<Option<Live<AutoscalingGroup>>> {
        Ok(self.describe(None, vec![name.to_string()]).await?.pop())
    }
}

impl TypedKind for AutoscalingGroupKind {
    type Attrs = AutoscalingGroup;
    const NAME: &'static str = "aws_autoscaling_group";

    async fn read(&self, ctx: &Context, requests: &Requests<Self>) -> Found<Self> {
        let owned =
            Filter::builder().name(format!("tag:{TAG_SPEC}")).values(ctx.spec_name()).build();
        let mut found = self.describe(Some(owned), vec![]).await?;
        let missing = missing_ids(requests, &found);
        if !missing.is_empty() {
            found.extend(self.describe(None, missing).await?);
        }
        Ok(match_requests(requests, &found))
    }

    async fn create(&self, _: &Context, desired: &Self::Attrs) -> Outcome<Self> {
        let name = &desired.name;
        let call = self.0.autoscaling.create_auto_scaling_group().auto_scaling_group_name(name);
        let call = call.set_target_group_arns(Some(desired.target_group_arns.clone()));
        let call = with_settings!(call, desired).set_tags(Some(asg_tags(name, &desired.tags)));
        call.send().await.api("autoscaling:CreateAutoScalingGroup")?;
        read_back(&format!("autoscaling group {name}"), || self.by_name(name)).await
    }

    async fn update(&self, _: &Context, update: Update<'_, Self>) -> Outcome<Self> {
        let Update { current, desired, changes } = update;
        let (asc, name) = (&self.0.autoscaling, &current.id);
        // Every field but the target groups and the tags is UpdateAutoScalingGroup's.
        if changes.names().iter().any(|f| !matches!(*f, "target_group_arns" | "tags")) {
            let call = asc.update_auto_scaling_group().auto_scaling_group_name(name);
            with_settings!(call, desired).send().await.api("autoscaling:UpdateAutoScalingGroup")?;
        }
        if changes.target_group_arns {
            let (have, want) = (&current.attributes.target_group_arns, &desired.target_group_arns);
            let attach: Vec<String> = want.iter().filter(|a| !have.contains(a)).cloned().collect();
            let detach: Vec<String> = have.iter().filter(|a| !want.contains(a)).cloned().collect();
            if !attach.is_empty() {
                let call = asc.attach_load_balancer_target_groups().auto_scaling_group_name(name);
                let call = call.set_target_group_arns(Some(attach));
                call.send().await.api("autoscaling:AttachLoadBalancerTargetGroups")?;
            }
            if !detach.is_empty() {
                let call = asc.detach_load_balancer_target_groups().auto_scaling_group_name(name);
                let call = call.set_target_group_arns(Some(detach));
                call.send().await.api("autoscaling:DetachLoadBalancerTargetGroups")?;
            }
        }
        if changes.tags {
            retag(&AsgTags(asc), name, &current.attributes.tags, &desired.tags).await?;
        }
        still_there(&format!("autoscaling group {name}"), self.by_name(name).await?)
    }

    async fn delete(&self, ctx: &Context, current: &LiveOf<Self>) -> KindResult<()> {
        let name = &current.id;
        let call = self.0.autoscaling.delete_auto_scaling_group().auto_scaling_group_name(name);
        let deleted = call.force_delete(true).send().await;
        // A group already gone (or going) answers with a validation error.
        if let Err(e) = deleted.api("autoscaling:DeleteAutoScalingGroup")
            && (e.code.as_deref() != Some("ValidationError") || self.by_name(name).await?.is_some())
        {
            return Err(e);
        }
        let wait = Wait::new(format!("autoscaling group {name}"), DELETE_TIMEOUT);
        wait.until(ctx, || async {
            let groups = self.groups(None, vec![name.clone()]).await?;
            let status = groups.first().map(|g| g.status().unwrap_or("terminating its instances"));
            Ok(status.map_or(Poll::Done(()), |s| Poll::Pending(s.to_string())))
        })
        .await
    }
}
