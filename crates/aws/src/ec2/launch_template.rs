//! `aws_launch_template`: what an OpenBao node boots with. A change of the launch data makes a
//! new version (made the default); the autoscaling group uses `$Latest`, so new nodes get it.
//! The user data holds no secret: nodes fetch their TLS material from Secrets Manager at boot.
//! EKS node groups use it too, with only user data, security groups and metadata options (EKS
//! picks the image and instance profile); they name the version they run, so a new version
//! reaches them through `UpdateNodegroupVersion`.

use super::{Ec2Tags, tag_spec, tags_of};
use crate::AwsClients;
use crate::error::{SdkResult, required};
use crate::lookup::{match_requests, missing_ids, owned_filter, still_there};
use crate::tagging::retag;
use aws_sdk_ec2::types::{
    Filter, InstanceType, LaunchTemplateBlockDeviceMappingRequest,
    LaunchTemplateEbsBlockDeviceRequest, LaunchTemplateHttpTokensState,
    LaunchTemplateIamInstanceProfileSpecificationRequest as Profile,
    LaunchTemplateInstanceMetadataEndpointState, LaunchTemplateInstanceMetadataOptionsRequest,
    LaunchTemplateInstanceMetadataTagsState, LaunchTemplatesMonitoringRequest,
    RequestLaunchTemplateData, ResourceType, VolumeType,
};
use aws_smithy_types::base64;
use engine::Changes;
use engine::prelude::*;
use engine::retry::read_back;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// The template and its latest version's launch data. The image, instance type and instance
/// profile are optional: an EKS node group's template leaves them to EKS.
#[derive(Attributes, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct LaunchTemplate {
    #[attr(replace)]
    pub name: String,
    #[attr(in_place)]
    pub image_id: Option<String>,
    #[attr(in_place)]
    pub instance_type: Option<String>,
    #[attr(in_place)]
    pub iam_instance_profile_arn: Option<String>,
    #[attr(in_place, unordered)]
    #[serde(default)]
    pub security_group_ids: Vec<String>,
    #[attr(in_place)]
    pub user_data: String,
    #[attr(in_place)]
    pub http_tokens: String,
    /// IMDS hops (1: only the instance itself reaches the metadata service).
    #[attr(in_place)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_put_response_hop_limit: Option<i64>,
    /// The instance's tags readable through the metadata service.
    #[attr(in_place)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance_metadata_tags: Option<bool>,
    /// Detailed (one-minute) CloudWatch monitoring.
    #[attr(in_place)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub monitoring: Option<bool>,
    /// The root volume (absent: the image's).
    #[attr(in_place)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root_volume: Option<RootVolume>,
    #[attr(in_place, tags)]
    pub tags: Tags,
    #[attr(computed)]
    pub latest_version: Option<i64>,
}

/// The root volume of the template's instances.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct RootVolume {
    /// The image's root device (`/dev/sda1` on Ubuntu's images).
    pub device_name: String,
    pub size_gib: i64,
    pub volume_type: String,
    pub encrypted: bool,
}

/// The launch data of the desired attributes.
fn launch_data(d: &LaunchTemplate) -> RequestLaunchTemplateData {
    let metadata = LaunchTemplateInstanceMetadataOptionsRequest::builder()
        .http_endpoint(LaunchTemplateInstanceMetadataEndpointState::Enabled)
        .http_tokens(LaunchTemplateHttpTokensState::from(d.http_tokens.as_str()))
        .set_http_put_response_hop_limit(d.http_put_response_hop_limit.map(|h| h as i32))
        .set_instance_metadata_tags(d.instance_metadata_tags.map(|on| match on {
            true => LaunchTemplateInstanceMetadataTagsState::Enabled,
            false => LaunchTemplateInstanceMetadataTagsState::Disabled,
        }))
        .build();
    let root = d.root_volume.as_ref().map(|v| {
        let ebs = LaunchTemplateEbsBlockDeviceRequest::builder()
            .volume_size(v.size_gib as i32)
            .volume_type(VolumeType::from(v.volume_type.as_str()))
            .encrypted(v.encrypted)
            .delete_on_termination(true)
            .build();
        vec![
            LaunchTemplateBlockDeviceMappingRequest::builder()
                .device_name(&v.device_name)
                .ebs(ebs)
                .build(),
        ]
    });
    RequestLaunchTemplateData::builder()
        .set_block_device_mappings(root)
        .set_monitoring(
            d.monitoring.map(|on| LaunchTemplatesMonitoringRequest::builder().enabled(on).build()),
        )
        .set_image_id(d.image_id.clone())
        .set_instance_type(d.instance_type.as_deref().map(InstanceType::from))
        .set_iam_instance_profile(
            d.iam_instance_profile_arn.as_ref().map(|arn| Profile::builder().arn(arn).build()),
        )
        .set_security_group_ids(Some(d.security_group_ids.clone()).filter(|g| !g.is_empty()))
        .user_data(base64::encode(&d.user_data))
        .metadata_options(metadata)
        .build()
}

pub(crate) struct LaunchTemplateKind(pub Arc<AwsClients>);

impl LaunchTemplateKind {
    /// Templates matching `filter` or `ids`, each with its latest version's launch data.
    async fn describe(
        &self,
        filter: Option<Filter>,
        ids: Vec<String>,
    ) -> KindResult<Vec<Live<LaunchTemplate>>> {
        let ec2 = &self.0.ec2;
        let call = ec2.describe_launch_templates().set_filters(filter.map(|f| vec![f]));
        let call = call.set_launch_template_ids(Some(ids).filter(|i| !i.is_empty()));
        let op = "ec2:DescribeLaunchTemplates";
        let out = call.send().await.or_absent(op, &["InvalidLaunchTemplateId.NotFound"])?;
        let mut found = Vec::new();
        for t in out.as_ref().map_or(&[][..], |o| o.launch_templates()) {
            let id = required(t.launch_template_id(), "ec2:DescribeLaunchTemplates: Id")?;
            let call = ec2.describe_launch_template_versions().launch_template_id(id);
            let versions = call.versions("$Latest").send().await;
            let versions = versions.api("ec2:DescribeLaunchTemplateVersions")?;
            let data = versions.launch_template_versions().first();
            let data = data.and_then(|v| v.launch_template_data());
            let user_data = data.and_then(|d| d.user_data()).and_then(|u| base64::decode(u).ok());
            let metadata = data.and_then(|d| d.metadata_options());
            let template = LaunchTemplate {
                name: t.launch_template_name().unwrap_or_default().to_string(),
                image_id: data.and_then(|d| d.image_id()).map(str::to_string),
                instance_type: data.and_then(|d| d.instance_type()).map(|i| i.as_str().into()),
                iam_instance_profile_arn: data
                    .and_then(|d| d.iam_instance_profile())
                    .and_then(|p| p.arn())
                    .map(str::to_string),
                security_group_ids: data
                    .map(|d| d.security_group_ids().to_vec())
                    .unwrap_or_default(),
                user_data: String::from_utf8_lossy(&user_data.unwrap_or_default()).into_owned(),
                http_tokens: metadata
                    .and_then(|m| m.http_tokens())
                    .map_or("", |t| t.as_str())
                    .into(),
                http_put_response_hop_limit: metadata
                    .and_then(|m| m.http_put_response_hop_limit())
                    .map(i64::from),
                instance_metadata_tags: metadata
                    .and_then(|m| m.instance_metadata_tags())
                    .map(|t| t == &LaunchTemplateInstanceMetadataTagsState::Enabled),
                monitoring: data.and_then(|d| d.monitoring()).and_then(|m| m.enabled()),
                root_volume: data.and_then(|d| {
                    let mapping = d.block_device_mappings().first()?;
                    let ebs = mapping.ebs()?;
                    Some(RootVolume {
                        device_name: mapping.device_name()?.to_string(),
                        size_gib: i64::from(ebs.volume_size()?),
                        volume_type: ebs.volume_type().map_or("", |t| t.as_str()).to_string(),
                        encrypted: ebs.encrypted().unwrap_or(false),
                    })
                }),
                tags: tags_of(t.tags()),
                latest_version: t.latest_version_number(),
            };
            found.push(Live::new(id, template));
        }
        Ok(found)
    }

    async fn by_id(&self, id: &str) -> KindResult<Option<Live<LaunchTemplate>>> {
        Ok(self.describe(None, vec![id.to_string()]).await?.pop())
    }
}

impl TypedKind for LaunchTemplateKind {
    type Attrs = LaunchTemplate;
    const NAME: &'static str = "aws_launch_template";

    async fn read(&self, ctx: &Context, requests: &Requests<Self>) -> Found<Self> {
        let mut found = self.describe(Some(owned_filter(ctx)), vec![]).await?;
        for id in missing_ids(requests, &found) {
            found.extend(self.by_id(&id).await?);
        }
        Ok(match_requests(requests, &found))
    }

    async fn create(&self, _: &Context, desired: &Self::Attrs) -> Outcome<Self> {
        let tags = tag_spec(ResourceType::LaunchTemplate, &desired.tags);
        let call = self.0.ec2.create_launch_template().launch_template_name(&desired.name);
        let call = call.launch_template_data(launch_data(desired)).tag_specifications(tags);
        let out = call.send().await.api("ec2:CreateLaunchTemplate")?;
        let id = out.launch_template().and_then(|t| t.launch_template_id());
        let id = required(id, "ec2:CreateLaunchTemplate: LaunchTemplateId")?;
        read_back(&format!("launch template {id}"), || self.by_id(id)).await
    }

    async fn update(&self, _: &Context, update: Update<'_, Self>) -> Outcome<Self> {
        let Update { current, desired, changes } = update;
        let (ec2, id) = (&self.0.ec2, &current.id);
        // Everything but the tags is launch data: a new version, made the default.
        if (LaunchTemplateChanges { tags: false, ..*changes }).any() {
            let call = ec2.create_launch_template_version().launch_template_id(id);
            let call = call.launch_template_data(launch_data(desired));
            let out = call.send().await.api("ec2:CreateLaunchTemplateVersion")?;
            let version = out.launch_template_version().and_then(|v| v.version_number());
            let version = version.ok_or_else(|| {
                KindError::new("ec2:CreateLaunchTemplateVersion: VersionNumber is missing")
            })?;
            let call = ec2.modify_launch_template().launch_template_id(id);
            call.default_version(version.to_string())
                .send()
                .await
                .api("ec2:ModifyLaunchTemplate")?;
        }
        if changes.tags {
            retag(&Ec2Tags(ec2), id, &current.attributes.tags, &desired.tags).await?;
        }
        still_there(&format!("launch template {id}"), self.by_id(id).await?)
    }

    async fn delete(&self, _: &Context, current: &LiveOf<Self>) -> KindResult<()> {
        let call = self.0.ec2.delete_launch_template().launch_template_id(&current.id);
        call.send().await.or_gone("ec2:DeleteLaunchTemplate", &["InvalidLaunchTemplateId.NotFound"])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use engine::testing::changed_fields;

    #[test]
    fn absent_launch_data_fields_are_not_sent_and_not_a_change() {
        let desired = LaunchTemplate {
            name: "aws-0-main".into(),
            image_id: None,
            instance_type: None,
            iam_instance_profile_arn: None,
            security_group_ids: vec![],
            user_data: "[settings.kubernetes]\nmax-pods = 110\n".into(),
            http_tokens: "required".into(),
            http_put_response_hop_limit: None,
            instance_metadata_tags: None,
            monitoring: None,
            root_volume: None,
            tags: Tags::new(),
            latest_version: None,
        };
        let data = launch_data(&desired);
        assert!(data.image_id().is_none());
        assert!(data.instance_type().is_none());
        assert!(data.iam_instance_profile().is_none());
        assert!(data.security_group_ids().is_empty());
        let live = LaunchTemplate { latest_version: Some(1), ..desired.clone() };
        assert!(changed_fields(&live, &desired).is_empty());
        let other = LaunchTemplate {
            user_data: "[settings.kubernetes]\nmax-pods = 50\n".into(),
            security_group_ids: vec!["sg-2".into(), "sg-1".into()],
            ..desired.clone()
        };
        let live =
            LaunchTemplate { security_group_ids: vec!["sg-1".into(), "sg-2".into()], ..live };
        assert_eq!(changed_fields(&live, &other), [("user_data", false)]);
    }
}
