//! `aws_launch_template`: what an OpenBao node boots with. A change of the launch data makes a
//! new version (made the default); the autoscaling group uses `$Latest`, so new nodes get it.
//! The user data holds no secret: nodes fetch their TLS material from Secrets Manager at boot.
//! EKS node groups use it too, with only user data and metadata options (EKS picks the image
//! and instance profile); they name the version they run, so a new version reaches them through
//! `UpdateNodegroupVersion`.

use crate::AwsClients;
use crate::error::{api_error, has_code};
use crate::lookup_json::{
    live, match_requests, missing_ids, owned_filter, still_there, str_attr, strings_attr,
};
use crate::settle::read_back;
use crate::tags;
use async_trait::async_trait;
use aws_sdk_ec2::types::{
    InstanceType, LaunchTemplateHttpTokensState,
    LaunchTemplateIamInstanceProfileSpecificationRequest,
    LaunchTemplateInstanceMetadataEndpointState, LaunchTemplateInstanceMetadataOptionsRequest,
    RequestLaunchTemplateData, ResourceType,
};
use engine::{Address, Attrs, Context, Field, Kind, KindError, Live, ReadRequest};
use serde_json::json;
use std::sync::Arc;

pub(crate) struct LaunchTemplate(pub Arc<AwsClients>);

const FIELDS: &[Field] = &[
    Field::replace("name"),
    Field::in_place("image_id"),
    Field::in_place("instance_type"),
    Field::in_place("iam_instance_profile_arn"),
    Field::in_place("security_group_ids").unordered(),
    Field::in_place("user_data"),
    Field::in_place("http_tokens"),
    Field::in_place("tags"),
    Field::computed("id"),
    Field::computed("latest_version"),
];

/// The fields of a version's launch data. Only `user_data` and `http_tokens` are required: an
/// EKS node group's template leaves the image, instance type and instance profile to EKS.
const DATA_FIELDS: &[&str] = &[
    "image_id",
    "instance_type",
    "iam_instance_profile_arn",
    "security_group_ids",
    "user_data",
    "http_tokens",
];

/// A string attribute that may be absent (or null).
fn opt_str<'a>(attrs: &'a Attrs, name: &str) -> Option<&'a str> {
    attrs.get(name).and_then(serde_json::Value::as_str)
}

/// Whether the launch data of `current` differs from `desired` (absent, null and an empty list
/// are the same: the read gives null or `[]` for what a template does not set).
fn data_changed(current: &Attrs, desired: &Attrs) -> bool {
    let get = |attrs: &Attrs, f: &str| {
        attrs.get(f).filter(|v| !v.is_null() && v.as_array().is_none_or(|a| !a.is_empty())).cloned()
    };
    DATA_FIELDS.iter().any(|f| get(current, f) != get(desired, f))
}

/// The launch data of the desired attributes.
fn launch_data(desired: &Attrs) -> Result<RequestLaunchTemplateData, KindError> {
    Ok(RequestLaunchTemplateData::builder()
        .set_image_id(opt_str(desired, "image_id").map(str::to_string))
        .set_instance_type(opt_str(desired, "instance_type").map(InstanceType::from))
        .set_iam_instance_profile(opt_str(desired, "iam_instance_profile_arn").map(|arn| {
            LaunchTemplateIamInstanceProfileSpecificationRequest::builder().arn(arn).build()
        }))
        .set_security_group_ids(
            desired
                .contains_key("security_group_ids")
                .then(|| strings_attr(desired, "security_group_ids")),
        )
        .user_data(aws_smithy_types::base64::encode(str_attr(desired, "user_data")?))
        .metadata_options(
            LaunchTemplateInstanceMetadataOptionsRequest::builder()
                .http_endpoint(LaunchTemplateInstanceMetadataEndpointState::Enabled)
                .http_tokens(LaunchTemplateHttpTokensState::from(str_attr(desired, "http_tokens")?))
                .build(),
        )
        .build())
}

impl LaunchTemplate {
    fn ec2(&self) -> Result<&aws_sdk_ec2::Client, KindError> {
        Ok(&self.0.ec2)
    }

    /// Templates matching `filter` or `ids`, each with its latest version's launch data.
    async fn describe(
        &self,
        filter: Option<aws_sdk_ec2::types::Filter>,
        ids: Vec<String>,
    ) -> Result<Vec<Live>, KindError> {
        let ec2 = self.ec2()?;
        let templates = match ec2
            .describe_launch_templates()
            .set_filters(filter.map(|f| vec![f]))
            .set_launch_template_ids((!ids.is_empty()).then_some(ids))
            .send()
            .await
        {
            Ok(out) => out.launch_templates().to_vec(),
            Err(e) if has_code(&e, "InvalidLaunchTemplateId.NotFound") => vec![],
            Err(e) => return Err(api_error("ec2:DescribeLaunchTemplates", e)),
        };
        let mut out = Vec::new();
        for t in templates {
            let Some(id) = t.launch_template_id() else {
                continue;
            };
            let versions = ec2
                .describe_launch_template_versions()
                .launch_template_id(id)
                .versions("$Latest")
                .send()
                .await
                .map_err(|e| api_error("ec2:DescribeLaunchTemplateVersions", e))?;
            let data =
                versions.launch_template_versions().first().and_then(|v| v.launch_template_data());
            let user_data = data
                .and_then(|d| d.user_data())
                .and_then(|u| aws_smithy_types::base64::decode(u).ok())
                .map(|b| String::from_utf8_lossy(&b).into_owned());
            let mut groups: Vec<&str> = data
                .map(|d| d.security_group_ids().iter().map(String::as_str).collect())
                .unwrap_or_default();
            groups.sort();
            out.push(live(
                id,
                [
                    ("name", json!(t.launch_template_name())),
                    ("image_id", json!(data.and_then(|d| d.image_id()))),
                    (
                        "instance_type",
                        json!(data.and_then(|d| d.instance_type()).map(|i| i.as_str())),
                    ),
                    (
                        "iam_instance_profile_arn",
                        json!(data.and_then(|d| d.iam_instance_profile()).and_then(|p| p.arn())),
                    ),
                    ("security_group_ids", json!(groups)),
                    ("user_data", json!(user_data)),
                    (
                        "http_tokens",
                        json!(
                            data.and_then(|d| d.metadata_options())
                                .and_then(|m| m.http_tokens())
                                .map(|t| t.as_str())
                        ),
                    ),
                    ("tags", tags::ec2_to_json(t.tags())),
                    ("latest_version", json!(t.latest_version_number())),
                ],
            ));
        }
        Ok(out)
    }

    async fn by_id(&self, id: &str) -> Result<Option<Live>, KindError> {
        Ok(self.describe(None, vec![id.to_string()]).await?.into_iter().next())
    }
}

#[async_trait]
impl Kind for LaunchTemplate {
    fn name(&self) -> &'static str {
        "aws_launch_template"
    }

    fn fields(&self) -> &'static [Field] {
        FIELDS
    }

    async fn read(
        &self,
        ctx: &Context,
        requests: &[ReadRequest],
    ) -> Result<Vec<Option<Live>>, KindError> {
        let mut found = self.describe(Some(owned_filter(ctx)), vec![]).await?;
        for id in missing_ids(requests, &found) {
            found.extend(self.by_id(&id).await?);
        }
        Ok(match_requests(requests, &found))
    }

    async fn create(
        &self,
        _ctx: &Context,
        address: &Address,
        desired: &Attrs,
    ) -> Result<Live, KindError> {
        let out = self
            .ec2()?
            .create_launch_template()
            .launch_template_name(str_attr(desired, "name")?)
            .launch_template_data(launch_data(desired)?)
            .tag_specifications(tags::ec2_spec(ResourceType::LaunchTemplate, desired))
            .send()
            .await
            .map_err(|e| api_error("ec2:CreateLaunchTemplate", e))?;
        let id = out
            .launch_template()
            .and_then(|t| t.launch_template_id())
            .ok_or_else(|| KindError::new("ec2:CreateLaunchTemplate returned no id"))?
            .to_string();
        tracing::info!(%address, %id, "created launch template");
        read_back(&format!("launch template {id}"), || self.by_id(&id)).await
    }

    async fn update(
        &self,
        _ctx: &Context,
        _address: &Address,
        current: &Live,
        desired: &Attrs,
    ) -> Result<Live, KindError> {
        let ec2 = self.ec2()?;
        let id = &current.id;
        if data_changed(&current.attributes, desired) {
            let out = ec2
                .create_launch_template_version()
                .launch_template_id(id)
                .launch_template_data(launch_data(desired)?)
                .send()
                .await
                .map_err(|e| api_error("ec2:CreateLaunchTemplateVersion", e))?;
            let version =
                out.launch_template_version().and_then(|v| v.version_number()).ok_or_else(
                    || KindError::new("ec2:CreateLaunchTemplateVersion returned no version"),
                )?;
            ec2.modify_launch_template()
                .launch_template_id(id)
                .default_version(version.to_string())
                .send()
                .await
                .map_err(|e| api_error("ec2:ModifyLaunchTemplate", e))?;
        }
        tags::ec2_update(ec2, id, &current.attributes, desired).await?;
        still_there(&format!("launch template {id}"), self.by_id(id).await?)
    }

    async fn delete(
        &self,
        _ctx: &Context,
        _address: &Address,
        current: &Live,
    ) -> Result<(), KindError> {
        let result =
            self.ec2()?.delete_launch_template().launch_template_id(&current.id).send().await;
        crate::error::deleted(
            "ec2:DeleteLaunchTemplate",
            result,
            &["InvalidLaunchTemplateId.NotFound"],
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn attrs(v: serde_json::Value) -> Attrs {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn absent_launch_data_fields_are_not_sent_and_not_a_change() {
        let desired = attrs(json!({
            "name": "aws-0-main",
            "user_data": "[settings.kubernetes]\nmax-pods = 110\n",
            "http_tokens": "required",
        }));
        let data = launch_data(&desired).unwrap();
        assert!(data.image_id().is_none());
        assert!(data.instance_type().is_none());
        assert!(data.iam_instance_profile().is_none());
        assert!(data.security_group_ids().is_empty());
        let live = attrs(json!({
            "name": "aws-0-main",
            "image_id": null,
            "instance_type": null,
            "iam_instance_profile_arn": null,
            "security_group_ids": [],
            "user_data": "[settings.kubernetes]\nmax-pods = 110\n",
            "http_tokens": "required",
        }));
        assert!(!data_changed(&live, &desired));
        let mut other = desired.clone();
        other.insert("user_data".into(), json!("[settings.kubernetes]\nmax-pods = 50\n"));
        assert!(data_changed(&live, &other));
    }
}
