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

use super::{NOT_FOUND, Status, UpdateOf, cluster_and_name, eks_map, id_parts, map_of};
use super::{retag, retryable_if, wait_gone, wait_status, wait_update};
use crate::AwsClients;
use crate::error::SdkResult;
use crate::lookup::read_by_key;
use crate::stages::eks::bottlerocket;
use aws_sdk_eks::types::{
    AmiTypes, CapacityTypes, LaunchTemplateSpecification, NodegroupScalingConfig, Taint,
    TaintEffect, UpdateLabelsPayload, UpdateTaintsPayload,
};
use engine::prelude::*;
use engine::wait::timeout_or;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

#[derive(Attributes, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct EksNodeGroup {
    #[attr(replace)]
    pub cluster_name: String,
    #[attr(replace)]
    pub name: String,
    #[attr(in_place)]
    pub version: String,
    /// The AMI release the nodes run (`1.54.0-5043decc` for Bottlerocket); absent: EKS's
    /// newest for the version, not diffed.
    #[attr(in_place)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub release_version: Option<String>,
    #[attr(replace)]
    pub node_role_arn: String,
    #[attr(replace, unordered)]
    pub subnet_ids: Vec<String>,
    #[attr(replace)]
    pub ami_type: String,
    #[attr(replace)]
    pub capacity_type: String,
    #[attr(replace, unordered)]
    pub instance_types: Vec<String>,
    #[attr(in_place)]
    pub min_size: i32,
    #[attr(in_place)]
    pub max_size: i32,
    #[attr(in_place)]
    pub desired_size: i32,
    #[attr(in_place)]
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    #[attr(in_place, unordered)]
    #[serde(default)]
    pub taints: Vec<NodeTaint>,
    #[attr(replace)]
    pub launch_template_id: Option<String>,
    #[attr(in_place)]
    pub launch_template_version: Option<i64>,
    #[attr(in_place)]
    pub max_pods: Option<i64>,
    #[attr(in_place, tags)]
    pub tags: Tags,
    #[attr(setting)]
    pub timeout_seconds: Option<u64>,
    #[attr(computed)]
    pub arn: Option<String>,
    #[attr(computed)]
    pub status: Option<String>,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct NodeTaint {
    pub key: String,
    #[serde(default)]
    pub value: String,
    /// `NO_SCHEDULE`, `NO_EXECUTE` or `PREFER_NO_SCHEDULE`.
    pub effect: String,
}

impl Status for EksNodeGroup {
    fn status(&self) -> Option<&str> {
        self.status.as_deref()
    }
}

pub(crate) struct EksNodeGroupKind(pub Arc<AwsClients>);

const TIMEOUT: Duration = Duration::from_secs(30 * 60);
/// What EC2 answers when a launch template or its version is gone.
const TEMPLATE_GONE: &[&str] = &[
    "InvalidLaunchTemplateId.NotFound",
    "InvalidLaunchTemplateId.VersionNotFound",
    "InvalidLaunchTemplateName.NotFoundException",
];

fn taint(t: &NodeTaint) -> Taint {
    let effect = TaintEffect::from(t.effect.as_str());
    Taint::builder().key(&t.key).value(&t.value).effect(effect).build()
}

fn scaling(desired: &EksNodeGroup) -> NodegroupScalingConfig {
    NodegroupScalingConfig::builder()
        .min_size(desired.min_size)
        .max_size(desired.max_size)
        .desired_size(desired.desired_size)
        .build()
}

/// The launch template of the desired attributes (id and version), if the node group has one.
fn launch_template(desired: &EksNodeGroup) -> Option<LaunchTemplateSpecification> {
    let (id, version) = (desired.launch_template_id.as_ref()?, desired.launch_template_version?);
    Some(LaunchTemplateSpecification::builder().id(id).version(version.to_string()).build())
}

/// The labels to remove and to add or change.
fn labels_update(
    have: &BTreeMap<String, String>,
    want: &BTreeMap<String, String>,
) -> UpdateLabelsPayload {
    let remove: Vec<String> = have.keys().filter(|k| !want.contains_key(*k)).cloned().collect();
    let mut add = eks_map(want);
    add.retain(|k, v| have.get(k) != Some(v));
    UpdateLabelsPayload::builder()
        .set_add_or_update_labels((!add.is_empty()).then_some(add))
        .set_remove_labels((!remove.is_empty()).then_some(remove))
        .build()
}

/// The taints to remove (no longer wanted by key and effect) and to add or change.
fn taints_update(have: &[NodeTaint], want: &[NodeTaint]) -> UpdateTaintsPayload {
    let kept = |h: &&NodeTaint| want.iter().any(|w| w.key == h.key && w.effect == h.effect);
    let remove: Vec<Taint> = have.iter().filter(|h| !kept(h)).map(taint).collect();
    let add: Vec<Taint> = want.iter().filter(|w| !have.contains(w)).map(taint).collect();
    UpdateTaintsPayload::builder()
        .set_add_or_update_taints((!add.is_empty()).then_some(add))
        .set_remove_taints((!remove.is_empty()).then_some(remove))
        .build()
}

impl EksNodeGroupKind {
    /// `max-pods` of the user data of launch template `id` at `version` (None: not set, or the
    /// version is gone).
    async fn max_pods_of(&self, id: &str, version: &str) -> KindResult<Option<i64>> {
        let call = self.0.ec2.describe_launch_template_versions().launch_template_id(id);
        let out = call.versions(version).send().await;
        let out = out.or_absent("ec2:DescribeLaunchTemplateVersions", TEMPLATE_GONE)?;
        let data = out.as_ref().and_then(|o| o.launch_template_versions().first());
        let data = data.and_then(|v| v.launch_template_data()?.user_data());
        let text = data.and_then(|u| aws_smithy_types::base64::decode(u).ok());
        Ok(text.and_then(|t| bottlerocket::max_pods(&String::from_utf8_lossy(&t))))
    }

    async fn read_one(&self, cluster: &str, name: &str) -> KindResult<Option<Live<EksNodeGroup>>> {
        let call = self.0.eks.describe_nodegroup().cluster_name(cluster).nodegroup_name(name);
        let out = call.send().await.or_absent("eks:DescribeNodegroup", NOT_FOUND)?;
        let Some(n) = out.and_then(|o| o.nodegroup) else {
            return Ok(None);
        };
        let scaling = n.scaling_config();
        let template = n.launch_template();
        let (template_id, version) =
            (template.and_then(|t| t.id()), template.and_then(|t| t.version()));
        let max_pods = match (template_id, version) {
            (Some(id), Some(version)) => self.max_pods_of(id, version).await?,
            _ => None,
        };
        let taints = n.taints().iter().map(|t| NodeTaint {
            key: t.key().unwrap_or_default().to_string(),
            value: t.value().unwrap_or_default().to_string(),
            effect: t.effect().map_or("", |e| e.as_str()).to_string(),
        });
        let group = EksNodeGroup {
            cluster_name: cluster.to_string(),
            name: name.to_string(),
            version: n.version().unwrap_or_default().to_string(),
            release_version: n.release_version().map(str::to_string),
            node_role_arn: n.node_role().unwrap_or_default().to_string(),
            subnet_ids: n.subnets().to_vec(),
            ami_type: n.ami_type().map_or("", |a| a.as_str()).to_string(),
            capacity_type: n.capacity_type().map_or("", |c| c.as_str()).to_string(),
            instance_types: n.instance_types().to_vec(),
            min_size: scaling.and_then(|s| s.min_size()).unwrap_or_default(),
            max_size: scaling.and_then(|s| s.max_size()).unwrap_or_default(),
            desired_size: scaling.and_then(|s| s.desired_size()).unwrap_or_default(),
            labels: map_of(n.labels()),
            taints: taints.collect(),
            launch_template_id: template_id.map(str::to_string),
            launch_template_version: version.and_then(|v| v.parse().ok()),
            max_pods,
            tags: map_of(n.tags()),
            timeout_seconds: None,
            arn: n.nodegroup_arn().map(str::to_string),
            status: n.status().map(|s| s.as_str().to_string()),
        };
        Ok(Some(Live::new(format!("{cluster}:{name}"), group)))
    }

    async fn wait_active(
        &self,
        ctx: &Context,
        cluster: &str,
        name: &str,
        timeout: Duration,
    ) -> KindResult<Live<EksNodeGroup>> {
        let what = format!("node group {name} of {cluster}");
        let failed = ["CREATE_FAILED", "DEGRADED"];
        wait_status(ctx, &what, timeout, &["ACTIVE"], &failed, || self.read_one(cluster, name))
            .await
    }
}

impl TypedKind for EksNodeGroupKind {
    type Attrs = EksNodeGroup;
    const NAME: &'static str = "aws_eks_node_group";

    async fn read(&self, _: &Context, requests: &Requests<Self>) -> Found<Self> {
        let key =
            |r: &ReadRequest<EksNodeGroup>| cluster_and_name(r, |d| [&d.cluster_name, &d.name]);
        read_by_key(requests, key, |[c, n]| async move { self.read_one(&c, &n).await }).await
    }

    async fn create(&self, ctx: &Context, desired: &Self::Attrs) -> Outcome<Self> {
        let (cluster, name) = (&desired.cluster_name, &desired.name);
        let call = self
            .0
            .eks
            .create_nodegroup()
            .cluster_name(cluster)
            .nodegroup_name(name)
            .version(&desired.version)
            .set_release_version(desired.release_version.clone())
            .node_role(&desired.node_role_arn)
            .set_subnets(Some(desired.subnet_ids.clone()))
            .ami_type(AmiTypes::from(desired.ami_type.as_str()))
            .capacity_type(CapacityTypes::from(desired.capacity_type.as_str()))
            .set_instance_types(Some(desired.instance_types.clone()))
            .scaling_config(scaling(desired))
            .set_labels(Some(eks_map(&desired.labels)))
            .set_taints(Some(desired.taints.iter().map(taint).collect()))
            .set_launch_template(launch_template(desired))
            .set_tags(Some(eks_map(&desired.tags)));
        // The node role not assumable yet: nothing was created, tried again.
        let created = call.send().await.api("eks:CreateNodegroup");
        created.map_err(|e| retryable_if(e, "InvalidParameterException", &["role"]))?;
        tracing::info!(cluster, node_group = name, "created node group, waiting until ACTIVE");
        let timeout = timeout_or(desired.timeout_seconds, TIMEOUT);
        self.wait_active(ctx, cluster, name, timeout).await
    }

    async fn update(&self, ctx: &Context, update: Update<'_, Self>) -> Outcome<Self> {
        let Update { current, desired, changes } = update;
        let (eks, have) = (&self.0.eks, &current.attributes);
        let [cluster, name] = id_parts(&current.id, ':')?;
        let timeout = timeout_or(desired.timeout_seconds, TIMEOUT);
        if have.status.as_deref() != Some("ACTIVE") {
            self.wait_active(ctx, cluster, name, timeout).await?;
        }
        let of = UpdateOf::NodeGroup(name);
        // The Kubernetes version and the launch template version move with one call.
        let new_template = changes.launch_template_version && desired.launch_template_id.is_some();
        if changes.version || changes.release_version || new_template {
            let call = eks.update_nodegroup_version().cluster_name(cluster).nodegroup_name(name);
            let template = launch_template(desired).filter(|_| new_template);
            let call = call.version(&desired.version).set_launch_template(template);
            let call = call.set_release_version(desired.release_version.clone());
            let out = call.send().await.api("eks:UpdateNodegroupVersion")?;
            let op = "eks:UpdateNodegroupVersion";
            wait_update(ctx, eks, cluster, of, op, out.update(), timeout).await?;
        }
        let scale = changes.min_size || changes.max_size || changes.desired_size;
        if scale || changes.labels || changes.taints {
            let call = eks.update_nodegroup_config().cluster_name(cluster).nodegroup_name(name);
            let call = call
                .set_scaling_config(scale.then(|| scaling(desired)))
                .set_labels(changes.labels.then(|| labels_update(&have.labels, &desired.labels)))
                .set_taints(changes.taints.then(|| taints_update(&have.taints, &desired.taints)));
            let out = call.send().await.api("eks:UpdateNodegroupConfig")?;
            let op = "eks:UpdateNodegroupConfig";
            wait_update(ctx, eks, cluster, of, op, out.update(), timeout).await?;
        }
        if changes.tags {
            retag(eks, have.arn.as_deref(), &have.tags, &desired.tags).await?;
        }
        self.wait_active(ctx, cluster, name, timeout).await
    }

    async fn delete(&self, ctx: &Context, current: &LiveOf<Self>) -> KindResult<()> {
        let [cluster, name] = id_parts(&current.id, ':')?;
        let call = self.0.eks.delete_nodegroup().cluster_name(cluster).nodegroup_name(name);
        // Busy with an update: tried again.
        let deleting = call
            .send()
            .await
            .or_absent("eks:DeleteNodegroup", NOT_FOUND)
            .map_err(|e| retryable_if(e, "ResourceInUseException", &[]))?;
        if deleting.is_none() {
            return Ok(());
        }
        let what = format!("node group {name} of {cluster}");
        wait_gone(ctx, &what, TIMEOUT, || self.read_one(cluster, name)).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use engine::testing::changed_fields;

    fn group(max_pods: Option<i64>, template: Option<&str>, version: Option<i64>) -> EksNodeGroup {
        EksNodeGroup {
            cluster_name: "aws-0".into(),
            name: "main".into(),
            version: "1.36".into(),
            release_version: None,
            node_role_arn: "arn:aws:iam::1:role/node".into(),
            subnet_ids: vec!["subnet-1".into()],
            ami_type: "BOTTLEROCKET_x86_64".into(),
            capacity_type: "SPOT".into(),
            instance_types: vec!["m7i.large".into()],
            min_size: 2,
            max_size: 3,
            desired_size: 2,
            labels: BTreeMap::new(),
            taints: vec![],
            launch_template_id: template.map(str::to_string),
            launch_template_version: version,
            max_pods,
            tags: Tags::new(),
            timeout_seconds: None,
            arn: None,
            status: None,
        }
    }

    #[test]
    fn a_new_pod_limit_is_an_update_in_place() {
        let live = group(Some(110), Some("lt-1"), Some(1));
        // Planned: the template's new version is not known yet, the limit is.
        let desired = group(Some(120), Some("lt-1"), Some(1));
        assert_eq!(changed_fields(&live, &desired), [("max_pods", false)]);
        // Applied: the template has its new version.
        let applied = group(Some(120), Some("lt-1"), Some(2));
        assert_eq!(
            changed_fields(&live, &applied),
            [("launch_template_version", false), ("max_pods", false)]
        );
    }

    #[test]
    fn adding_or_dropping_the_template_replaces_the_node_group() {
        let plain = group(None, None, None);
        let with = group(Some(110), Some("lt-1"), Some(1));
        assert!(changed_fields(&plain, &plain).is_empty());
        assert!(changed_fields(&plain, &with).contains(&("launch_template_id", true)));
        assert!(changed_fields(&with, &plain).contains(&("launch_template_id", true)));
    }

    #[test]
    fn the_template_is_sent_with_its_version_as_text() {
        let spec = launch_template(&group(Some(110), Some("lt-1"), Some(3))).unwrap();
        assert_eq!((spec.id(), spec.version()), (Some("lt-1"), Some("3")));
        assert!(launch_template(&group(None, None, None)).is_none());
    }

    #[test]
    fn taints_are_removed_by_key_and_effect_and_added_when_new_or_changed() {
        let t = |key: &str, value: &str| NodeTaint {
            key: key.into(),
            value: value.into(),
            effect: "NO_SCHEDULE".into(),
        };
        let update = taints_update(&[t("a", "1"), t("b", "1")], &[t("a", "2")]);
        let keys =
            |ts: &[Taint]| ts.iter().map(|t| t.key().unwrap().to_string()).collect::<Vec<_>>();
        assert_eq!(keys(update.remove_taints()), ["b"]);
        assert_eq!(keys(update.add_or_update_taints()), ["a"]);
    }
}
