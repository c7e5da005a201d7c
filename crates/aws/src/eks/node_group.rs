//! `aws_eks_node_group`: a managed node group. Named by the spec within its cluster, so one
//! whose create timed out is found again by name (and adopted with its address tag).
//! Scaling, labels and taints change with `UpdateNodegroupConfig`, the Kubernetes version with
//! `UpdateNodegroupVersion` (after the control plane: the resource depends on the cluster),
//! each waited for with `DescribeUpdate`. AMI type, capacity type, instance types, role and
//! subnets are fixed at creation.
//!
//! A node group with `max_pods` boots from a launch template of its own (`aws_launch_template`,
//! Bottlerocket settings as user data) and names the version it runs. A change of `max_pods`
//! makes a new template version first (the node group depends on the template); the node group
//! then moves to it with `UpdateNodegroupVersion`. `max_pods` is read back from the user data of
//! the version the node group runs. The template itself is fixed at creation (EKS cannot move a
//! node group to another template, nor add one later).

use super::cluster::{UpdateOf, retag, tag_map, wait_update};
use crate::AwsClients;
use crate::eks::wait::{Poll, timeout_of, wait_for};
use crate::error::{api_error, has_code};
use crate::lookup_json::{live, read_by_key, str_attr};
use async_trait::async_trait;
use aws_sdk_eks::types::{
    AmiTypes, CapacityTypes, LaunchTemplateSpecification, NodegroupScalingConfig, Taint,
    TaintEffect, UpdateLabelsPayload, UpdateTaintsPayload,
};
use engine::{Address, Attrs, Context, Field, Kind, KindError, Live, ReadRequest};
use serde_json::{Value as Json, json};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

pub(crate) struct EksNodeGroup(pub Arc<AwsClients>);

const FIELDS: &[Field] = &[
    Field::replace("cluster_name"),
    Field::replace("name"),
    Field::in_place("version"),
    Field::replace("node_role_arn"),
    Field::replace("subnet_ids").unordered(),
    Field::replace("ami_type"),
    Field::replace("capacity_type"),
    Field::replace("instance_types").unordered(),
    Field::in_place("min_size"),
    Field::in_place("max_size"),
    Field::in_place("desired_size"),
    Field::in_place("labels"),
    Field::in_place("taints").unordered(),
    Field::replace("launch_template_id"),
    Field::in_place("launch_template_version"),
    Field::in_place("max_pods"),
    Field::in_place("tags"),
    Field::computed("id"),
    Field::computed("arn"),
    Field::computed("status"),
];

const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30 * 60);

fn strings(attrs: &Attrs, name: &str) -> Vec<String> {
    attrs
        .get(name)
        .and_then(Json::as_array)
        .map(|a| a.iter().filter_map(Json::as_str).map(str::to_string).collect())
        .unwrap_or_default()
}

fn int(attrs: &Attrs, name: &str) -> Result<i32, KindError> {
    attrs
        .get(name)
        .and_then(Json::as_i64)
        .and_then(|v| i32::try_from(v).ok())
        .ok_or_else(|| KindError::new(format!("attribute `{name}` is missing or not a number")))
}

fn labels(attrs: &Attrs) -> HashMap<String, String> {
    attrs
        .get("labels")
        .and_then(Json::as_object)
        .map(|m| {
            m.iter().map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string())).collect()
        })
        .unwrap_or_default()
}

fn taints(attrs: &Attrs) -> Vec<Taint> {
    attrs
        .get("taints")
        .and_then(Json::as_array)
        .map(|a| {
            a.iter()
                .map(|t| {
                    let s = |k: &str| t.get(k).and_then(Json::as_str).unwrap_or_default();
                    Taint::builder()
                        .key(s("key"))
                        .value(s("value"))
                        .effect(TaintEffect::from(s("effect")))
                        .build()
                })
                .collect()
        })
        .unwrap_or_default()
}

fn taint_json(t: &Taint) -> Json {
    json!({
        "key": t.key().unwrap_or_default(),
        "value": t.value().unwrap_or_default(),
        "effect": t.effect().map(|e| e.as_str()).unwrap_or_default(),
    })
}

/// The launch template of the desired attributes (id and version), if the node group has one.
fn launch_template(desired: &Attrs) -> Option<LaunchTemplateSpecification> {
    let id = desired.get("launch_template_id")?.as_str()?;
    let version = desired.get("launch_template_version").and_then(version_text)?;
    Some(LaunchTemplateSpecification::builder().id(id).version(version).build())
}

/// A launch template version (a number in the template's attributes, a string in EKS's API).
fn version_text(v: &Json) -> Option<String> {
    match v {
        Json::Number(n) => Some(n.to_string()),
        Json::String(s) => Some(s.clone()),
        _ => None,
    }
}

/// EKS's version string as the template's number (kept as given when it is not a number).
fn version_json(v: &str) -> Json {
    v.parse::<i64>().map_or_else(|_| json!(v), |n| json!(n))
}

fn scaling(desired: &Attrs) -> Result<NodegroupScalingConfig, KindError> {
    Ok(NodegroupScalingConfig::builder()
        .min_size(int(desired, "min_size")?)
        .max_size(int(desired, "max_size")?)
        .desired_size(int(desired, "desired_size")?)
        .build())
}

impl EksNodeGroup {
    fn eks(&self) -> Result<&aws_sdk_eks::Client, KindError> {
        Ok(&self.0.eks)
    }

    /// `max-pods` of the user data of launch template `id` at `version` (None: not set, or the
    /// version is gone).
    async fn max_pods_of(&self, id: &str, version: &str) -> Result<Option<i64>, KindError> {
        let out = match self
            .0
            .ec2
            .describe_launch_template_versions()
            .launch_template_id(id)
            .versions(version)
            .send()
            .await
        {
            Ok(out) => out,
            Err(e)
                if has_code(&e, "InvalidLaunchTemplateId.NotFound")
                    || has_code(&e, "InvalidLaunchTemplateId.VersionNotFound")
                    || has_code(&e, "InvalidLaunchTemplateName.NotFoundException") =>
            {
                return Ok(None);
            }
            Err(e) => return Err(api_error("ec2:DescribeLaunchTemplateVersions", e)),
        };
        Ok(out
            .launch_template_versions()
            .first()
            .and_then(|v| v.launch_template_data())
            .and_then(|d| d.user_data())
            .and_then(|u| aws_smithy_types::base64::decode(u).ok())
            .and_then(|b| crate::stages::eks::bottlerocket::max_pods(&String::from_utf8_lossy(&b))))
    }

    async fn read_one(&self, cluster: &str, name: &str) -> Result<Option<Live>, KindError> {
        let out = match self
            .eks()?
            .describe_nodegroup()
            .cluster_name(cluster)
            .nodegroup_name(name)
            .send()
            .await
        {
            Ok(out) => out,
            Err(e) if has_code(&e, "ResourceNotFoundException") => return Ok(None),
            Err(e) => return Err(api_error("eks:DescribeNodegroup", e)),
        };
        let Some(n) = out.nodegroup() else {
            return Ok(None);
        };
        let scaling = n.scaling_config();
        let mut subnets = n.subnets().to_vec();
        subnets.sort();
        let mut tags: Vec<(&str, &str)> = n
            .tags()
            .map(|t| t.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect())
            .unwrap_or_default();
        tags.sort();
        let template = n.launch_template();
        let template_id = template.and_then(|t| t.id());
        let template_version = template.and_then(|t| t.version());
        let max_pods = match (template_id, template_version) {
            (Some(id), Some(version)) => self.max_pods_of(id, version).await?,
            _ => None,
        };
        let labels: serde_json::Map<String, Json> = n
            .labels()
            .map(|l| {
                let mut pairs: Vec<_> = l.iter().collect();
                pairs.sort();
                pairs.into_iter().map(|(k, v)| (k.clone(), json!(v))).collect()
            })
            .unwrap_or_default();
        Ok(Some(live(
            format!("{cluster}:{name}"),
            [
                ("cluster_name", json!(cluster)),
                ("name", json!(name)),
                ("version", json!(n.version())),
                ("node_role_arn", json!(n.node_role())),
                ("subnet_ids", json!(subnets)),
                ("ami_type", json!(n.ami_type().map(|a| a.as_str()))),
                ("capacity_type", json!(n.capacity_type().map(|c| c.as_str()))),
                ("instance_types", json!(n.instance_types())),
                ("min_size", json!(scaling.and_then(|s| s.min_size()))),
                ("max_size", json!(scaling.and_then(|s| s.max_size()))),
                ("desired_size", json!(scaling.and_then(|s| s.desired_size()))),
                ("labels", Json::Object(labels)),
                ("taints", Json::Array(n.taints().iter().map(taint_json).collect())),
                ("launch_template_id", json!(template_id)),
                ("launch_template_version", template_version.map_or(Json::Null, version_json)),
                ("max_pods", json!(max_pods)),
                ("tags", crate::tags::to_json(tags)),
                ("arn", json!(n.nodegroup_arn())),
                ("status", json!(n.status().map(|s| s.as_str()))),
            ],
        )))
    }

    async fn wait_active(
        &self,
        ctx: &Context,
        cluster: &str,
        name: &str,
        timeout: Duration,
    ) -> Result<Live, KindError> {
        wait_for(ctx, &format!("node group {name}"), timeout, || async {
            let Some(l) = self.read_one(cluster, name).await? else {
                return Ok(Poll::Pending("not visible yet".into()));
            };
            match l.attributes.get("status").and_then(Json::as_str) {
                Some("ACTIVE") => Ok(Poll::Done(l)),
                Some(s @ ("CREATE_FAILED" | "DEGRADED")) => {
                    Err(KindError::new(format!("node group {name} of {cluster} is {s}")))
                }
                other => Ok(Poll::Pending(other.unwrap_or("unknown").to_string())),
            }
        })
        .await
    }
}

#[async_trait]
impl Kind for EksNodeGroup {
    fn name(&self) -> &'static str {
        "aws_eks_node_group"
    }

    fn fields(&self) -> &'static [Field] {
        FIELDS
    }

    async fn read(
        &self,
        _ctx: &Context,
        requests: &[ReadRequest],
    ) -> Result<Vec<Option<Live>>, KindError> {
        read_by_key(requests, super::cluster_and_name, |(c, n)| async move {
            self.read_one(&c, &n).await
        })
        .await
    }

    #[tracing::instrument(skip_all, fields(%address))]
    async fn create(
        &self,
        ctx: &Context,
        address: &Address,
        desired: &Attrs,
    ) -> Result<Live, KindError> {
        let cluster = str_attr(desired, "cluster_name")?;
        let name = str_attr(desired, "name")?;
        let result = self
            .eks()?
            .create_nodegroup()
            .cluster_name(cluster)
            .nodegroup_name(name)
            .version(str_attr(desired, "version")?)
            .node_role(str_attr(desired, "node_role_arn")?)
            .set_subnets(Some(strings(desired, "subnet_ids")))
            .ami_type(AmiTypes::from(str_attr(desired, "ami_type")?))
            .capacity_type(CapacityTypes::from(str_attr(desired, "capacity_type")?))
            .set_instance_types(Some(strings(desired, "instance_types")))
            .scaling_config(scaling(desired)?)
            .set_labels(Some(labels(desired)))
            .set_taints(Some(taints(desired)))
            .set_launch_template(launch_template(desired))
            .set_tags(Some(tag_map(desired)))
            .send()
            .await;
        if let Err(e) = result {
            let mut err = api_error("eks:CreateNodegroup", e);
            // The node role not assumable yet: nothing was created.
            err.retryable |= err.code.as_deref() == Some("InvalidParameterException")
                && err.message.contains("role");
            return Err(err);
        }
        tracing::info!(cluster, node_group = name, "created node group, waiting until ACTIVE");
        self.wait_active(ctx, cluster, name, timeout_of(desired, DEFAULT_TIMEOUT)).await
    }

    #[tracing::instrument(skip_all, fields(%address))]
    async fn update(
        &self,
        ctx: &Context,
        address: &Address,
        current: &Live,
        desired: &Attrs,
    ) -> Result<Live, KindError> {
        let eks = self.eks()?;
        let cluster = str_attr(desired, "cluster_name")?;
        let name = str_attr(desired, "name")?;
        let timeout = timeout_of(desired, DEFAULT_TIMEOUT);
        let have = &current.attributes;
        if have.get("status").and_then(Json::as_str) != Some("ACTIVE") {
            self.wait_active(ctx, cluster, name, timeout).await?;
        }
        // The Kubernetes version and the launch template version move with one call.
        let new_template = desired.get("launch_template_id").is_some_and(Json::is_string)
            && have.get("launch_template_version").and_then(version_text)
                != desired.get("launch_template_version").and_then(version_text);
        if have.get("version") != desired.get("version") || new_template {
            let out = eks
                .update_nodegroup_version()
                .cluster_name(cluster)
                .nodegroup_name(name)
                .version(str_attr(desired, "version")?)
                .set_launch_template(launch_template(desired).filter(|_| new_template))
                .send()
                .await
                .map_err(|e| api_error("eks:UpdateNodegroupVersion", e))?;
            let id = out
                .update()
                .and_then(|u| u.id())
                .ok_or_else(|| KindError::new("eks:UpdateNodegroupVersion returned no update"))?;
            tracing::info!(
                cluster,
                node_group = name,
                update = id,
                new_template,
                "node group version update started"
            );
            wait_update(ctx, eks, cluster, UpdateOf::NodeGroup(name), id, timeout).await?;
        }
        let mut call = eks.update_nodegroup_config().cluster_name(cluster).nodegroup_name(name);
        let mut any = false;
        if ["min_size", "max_size", "desired_size"].iter().any(|f| have.get(*f) != desired.get(*f))
        {
            call = call.scaling_config(scaling(desired)?);
            any = true;
        }
        let (have_labels, want_labels) = (labels(have), labels(desired));
        if have_labels != want_labels {
            let remove: Vec<String> =
                have_labels.keys().filter(|k| !want_labels.contains_key(*k)).cloned().collect();
            let add: HashMap<String, String> =
                want_labels.into_iter().filter(|(k, v)| have_labels.get(k) != Some(v)).collect();
            call = call.labels(
                UpdateLabelsPayload::builder()
                    .set_add_or_update_labels((!add.is_empty()).then_some(add))
                    .set_remove_labels((!remove.is_empty()).then_some(remove))
                    .build(),
            );
            any = true;
        }
        let (have_taints, want_taints) = (taints(have), taints(desired));
        let same_key = |a: &Taint, b: &Taint| a.key() == b.key() && a.effect() == b.effect();
        let remove: Vec<Taint> = have_taints
            .iter()
            .filter(|t| !want_taints.iter().any(|w| same_key(t, w)))
            .cloned()
            .collect();
        let add: Vec<Taint> =
            want_taints.iter().filter(|w| !have_taints.contains(w)).cloned().collect();
        if !remove.is_empty() || !add.is_empty() {
            call = call.taints(
                UpdateTaintsPayload::builder()
                    .set_add_or_update_taints((!add.is_empty()).then_some(add))
                    .set_remove_taints((!remove.is_empty()).then_some(remove))
                    .build(),
            );
            any = true;
        }
        if any {
            let out = call.send().await.map_err(|e| api_error("eks:UpdateNodegroupConfig", e))?;
            let id = out
                .update()
                .and_then(|u| u.id())
                .ok_or_else(|| KindError::new("eks:UpdateNodegroupConfig returned no update"))?;
            wait_update(ctx, eks, cluster, UpdateOf::NodeGroup(name), id, timeout).await?;
        }
        if have.get("tags") != desired.get("tags") {
            retag(eks, str_attr(have, "arn")?, have, desired).await?;
        }
        self.wait_active(ctx, cluster, name, timeout).await
    }

    #[tracing::instrument(skip_all, fields(%address))]
    async fn delete(
        &self,
        ctx: &Context,
        address: &Address,
        current: &Live,
    ) -> Result<(), KindError> {
        let (cluster, name) = current
            .id
            .split_once(':')
            .ok_or_else(|| KindError::new(format!("bad node group id {}", current.id)))?;
        match self.eks()?.delete_nodegroup().cluster_name(cluster).nodegroup_name(name).send().await
        {
            Ok(_) => {}
            Err(e) if has_code(&e, "ResourceNotFoundException") => return Ok(()),
            Err(e) if has_code(&e, "ResourceInUseException") => {
                return Err(KindError::retryable(format!("eks:DeleteNodegroup: {name} is busy")));
            }
            Err(e) => return Err(api_error("eks:DeleteNodegroup", e)),
        }
        wait_for(ctx, &format!("node group {name} deletion"), DEFAULT_TIMEOUT, || async {
            Ok(match self.read_one(cluster, name).await? {
                None => Poll::Done(()),
                Some(_) => Poll::Pending("DELETING".into()),
            })
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stages::eks::changed_fields;

    fn group(max_pods: Json, template: Json, version: Json) -> Json {
        json!({
            "cluster_name": "aws-0",
            "name": "main",
            "version": "1.36",
            "min_size": 2,
            "launch_template_id": template,
            "launch_template_version": version,
            "max_pods": max_pods,
        })
    }

    #[test]
    fn a_new_pod_limit_is_an_update_in_place() {
        let live = group(json!(110), json!("lt-1"), json!(1));
        // Planned: the template's new version is not known yet, the limit is.
        let desired = group(json!(120), json!("lt-1"), json!(1));
        assert_eq!(changed_fields(FIELDS, &live, &desired), [("max_pods", false)]);
        // Applied: the template has its new version.
        let applied = group(json!(120), json!("lt-1"), json!(2));
        assert_eq!(
            changed_fields(FIELDS, &live, &applied),
            [("launch_template_version", false), ("max_pods", false)]
        );
    }

    #[test]
    fn adding_or_dropping_the_template_replaces_the_node_group() {
        let plain = group(Json::Null, Json::Null, Json::Null);
        let with = group(json!(110), json!("lt-1"), json!(1));
        assert!(changed_fields(FIELDS, &plain, &plain).is_empty());
        assert!(
            changed_fields(FIELDS, &plain, &with)
                .iter()
                .any(|(f, replace)| *f == "launch_template_id" && *replace)
        );
        assert!(
            changed_fields(FIELDS, &with, &plain)
                .iter()
                .any(|(f, replace)| *f == "launch_template_id" && *replace)
        );
    }

    #[test]
    fn the_template_is_sent_with_its_version_as_text() {
        let desired = group(json!(110), json!("lt-1"), json!(3));
        let spec = launch_template(desired.as_object().unwrap()).unwrap();
        assert_eq!((spec.id(), spec.version()), (Some("lt-1"), Some("3")));
        let plain = group(Json::Null, Json::Null, Json::Null);
        assert!(launch_template(plain.as_object().unwrap()).is_none());
        assert_eq!(version_json("7"), json!(7));
        assert_eq!(version_json("$Default"), json!("$Default"));
    }
}
