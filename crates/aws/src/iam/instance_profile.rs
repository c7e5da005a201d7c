//! `aws_iam_instance_profile`: the EC2 instance profile carrying one role. Named by the spec; a
//! profile found by name is ours only when recorded in state or tagged with this address.

use crate::AwsClients;
use crate::error::{api_error, has_code};
use crate::lookup_json::{live, read_by_name, still_there, str_attr};
use crate::settle::{read_back, settle};
use async_trait::async_trait;
use engine::{Address, Attrs, Context, Field, Kind, KindError, Live, ReadRequest};
use serde_json::{Value as Json, json};
use std::sync::Arc;

pub(crate) struct IamInstanceProfile(pub Arc<AwsClients>);

const FIELDS: &[Field] = &[
    Field::replace("name"),
    Field::in_place("role_name"),
    Field::in_place("tags"),
    Field::computed("id"),
    Field::computed("arn"),
];

impl IamInstanceProfile {
    fn iam(&self) -> Result<&aws_sdk_iam::Client, KindError> {
        Ok(&self.0.iam)
    }

    async fn read_one(&self, name: &str) -> Result<Option<Live>, KindError> {
        let profile =
            match self.iam()?.get_instance_profile().instance_profile_name(name).send().await {
                Ok(out) => out.instance_profile,
                Err(e) if has_code(&e, "NoSuchEntity") => return Ok(None),
                Err(e) => return Err(api_error("iam:GetInstanceProfile", e)),
            };
        let Some(p) = profile else { return Ok(None) };
        let role = p.roles().first().map(|r| r.role_name().to_string());
        Ok(Some(live(
            p.instance_profile_name(),
            [
                ("name", json!(p.instance_profile_name())),
                ("role_name", json!(role)),
                ("tags", crate::tags::to_json(p.tags().iter().map(|t| (t.key(), t.value())))),
                ("arn", json!(p.arn())),
            ],
        )))
    }

    async fn add_role(&self, name: &str, role: &str) -> Result<(), KindError> {
        match self
            .iam()?
            .add_role_to_instance_profile()
            .instance_profile_name(name)
            .role_name(role)
            .send()
            .await
        {
            Ok(_) => Ok(()),
            // A retry after a success: the role is there.
            Err(e) if has_code(&e, "LimitExceeded") => Ok(()),
            Err(e) if has_code(&e, "NoSuchEntity") => Err(KindError::retryable(format!(
                "iam:AddRoleToInstanceProfile: role {role} not visible yet"
            ))),
            Err(e) => Err(api_error("iam:AddRoleToInstanceProfile", e)),
        }
    }

    async fn remove_role(&self, name: &str, role: &str) -> Result<(), KindError> {
        let result = self
            .iam()?
            .remove_role_from_instance_profile()
            .instance_profile_name(name)
            .role_name(role)
            .send()
            .await;
        crate::error::deleted("iam:RemoveRoleFromInstanceProfile", result, &["NoSuchEntity"])
    }
}

#[async_trait]
impl Kind for IamInstanceProfile {
    fn name(&self) -> &'static str {
        "aws_iam_instance_profile"
    }

    fn fields(&self) -> &'static [Field] {
        FIELDS
    }

    async fn read(
        &self,
        _ctx: &Context,
        requests: &[ReadRequest],
    ) -> Result<Vec<Option<Live>>, KindError> {
        read_by_name(requests, "name", |n| async move { self.read_one(&n).await }).await
    }

    async fn create(
        &self,
        _ctx: &Context,
        address: &Address,
        desired: &Attrs,
    ) -> Result<Live, KindError> {
        let name = str_attr(desired, "name")?;
        self.iam()?
            .create_instance_profile()
            .instance_profile_name(name)
            .set_tags(Some(crate::tags::iam(desired)?))
            .send()
            .await
            .map_err(|e| api_error("iam:CreateInstanceProfile", e))?;
        tracing::info!(%address, name, "created instance profile");
        if let Some(role) = desired.get("role_name").and_then(Json::as_str) {
            settle(|| self.add_role(name, role)).await?;
        }
        read_back(&format!("instance profile {name}"), || self.read_one(name)).await
    }

    async fn update(
        &self,
        _ctx: &Context,
        _address: &Address,
        current: &Live,
        desired: &Attrs,
    ) -> Result<Live, KindError> {
        let name = &current.id;
        let iam = self.iam()?;
        if current.attributes.get("role_name") != desired.get("role_name") {
            if let Some(old) = current.attributes.get("role_name").and_then(Json::as_str) {
                self.remove_role(name, old).await?;
            }
            if let Some(new) = desired.get("role_name").and_then(Json::as_str) {
                self.add_role(name, new).await?;
            }
        }
        crate::tags::update(
            &current.attributes,
            desired,
            |keys| async move {
                iam.untag_instance_profile()
                    .instance_profile_name(name)
                    .set_tag_keys(Some(keys))
                    .send()
                    .await
                    .map(|_| ())
                    .map_err(|e| api_error("iam:UntagInstanceProfile", e))
            },
            || async move {
                iam.tag_instance_profile()
                    .instance_profile_name(name)
                    .set_tags(Some(crate::tags::iam(desired)?))
                    .send()
                    .await
                    .map(|_| ())
                    .map_err(|e| api_error("iam:TagInstanceProfile", e))
            },
        )
        .await?;
        still_there(&format!("instance profile {name}"), self.read_one(name).await?)
    }

    async fn delete(
        &self,
        _ctx: &Context,
        _address: &Address,
        current: &Live,
    ) -> Result<(), KindError> {
        let name = &current.id;
        if let Some(role) = current.attributes.get("role_name").and_then(Json::as_str) {
            self.remove_role(name, role).await?;
        }
        let result = self.iam()?.delete_instance_profile().instance_profile_name(name).send().await;
        crate::error::deleted("iam:DeleteInstanceProfile", result, &["NoSuchEntity"])
    }
}
