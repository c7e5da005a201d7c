//! `aws_iam_instance_profile`: the EC2 instance profile carrying one role. Named by the spec; a
//! profile found by name is ours only when recorded in state or tagged with this address.

use super::{InstanceProfileTags, iam_tags, tags_of};
use crate::AwsClients;
use crate::error::SdkResult;
use crate::lookup::{read_named, still_there};
use crate::tagging::retag;
use engine::prelude::*;
use engine::retry::{read_back, settle};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

#[derive(Attributes, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct InstanceProfile {
    #[attr(replace)]
    pub name: String,
    #[attr(in_place)]
    pub role_name: Option<String>,
    #[attr(in_place, tags)]
    pub tags: Tags,
    #[attr(computed)]
    pub arn: Option<String>,
}

pub(crate) struct InstanceProfileKind(pub Arc<AwsClients>);

impl InstanceProfileKind {
    async fn read_one(&self, name: &str) -> KindResult<Option<Live<InstanceProfile>>> {
        let call = self.0.iam.get_instance_profile().instance_profile_name(name);
        let found = call.send().await.or_absent("iam:GetInstanceProfile", &["NoSuchEntity"])?;
        let Some(p) = found.and_then(|out| out.instance_profile) else { return Ok(None) };
        let profile = InstanceProfile {
            name: p.instance_profile_name().to_string(),
            role_name: p.roles().first().map(|r| r.role_name().to_string()),
            tags: tags_of(p.tags()),
            arn: Some(p.arn().to_string()),
        };
        Ok(Some(Live::new(name, profile)))
    }

    async fn add_role(&self, name: &str, role: &str) -> KindResult<()> {
        let call = self.0.iam.add_role_to_instance_profile().instance_profile_name(name);
        match call.role_name(role).send().await.api("iam:AddRoleToInstanceProfile") {
            // A retry after a success: the role is there.
            Err(e) if e.has_code("LimitExceeded") => Ok(()),
            // The role was just made and is not visible yet.
            Err(e) if e.has_code("NoSuchEntity") => Err(KindError { retryable: true, ..e }),
            result => result.map(|_| ()),
        }
    }

    async fn remove_role(&self, name: &str, role: &str) -> KindResult<()> {
        let call = self.0.iam.remove_role_from_instance_profile().instance_profile_name(name);
        let call = call.role_name(role);
        call.send().await.or_gone("iam:RemoveRoleFromInstanceProfile", &["NoSuchEntity"])
    }
}

impl TypedKind for InstanceProfileKind {
    type Attrs = InstanceProfile;
    const NAME: &'static str = "aws_iam_instance_profile";

    async fn read(&self, _: &Context, requests: &Requests<Self>) -> Found<Self> {
        read_named(requests, |d| d.name.clone(), |n| async move { self.read_one(&n).await }).await
    }

    async fn create(&self, _: &Context, desired: &Self::Attrs) -> Outcome<Self> {
        let name = &desired.name;
        let call = self.0.iam.create_instance_profile().instance_profile_name(name);
        let call = call.set_tags(Some(iam_tags(&desired.tags)?));
        call.send().await.api("iam:CreateInstanceProfile")?;
        if let Some(role) = &desired.role_name {
            settle(|| self.add_role(name, role)).await?;
        }
        read_back(&format!("instance profile {name}"), || self.read_one(name)).await
    }

    async fn update(&self, _: &Context, update: Update<'_, Self>) -> Outcome<Self> {
        let Update { current, desired, changes } = update;
        let name = &current.id;
        if changes.role_name {
            if let Some(old) = &current.attributes.role_name {
                self.remove_role(name, old).await?;
            }
            if let Some(new) = &desired.role_name {
                self.add_role(name, new).await?;
            }
        }
        if changes.tags {
            let iam = InstanceProfileTags(&self.0.iam);
            retag(&iam, name, &current.attributes.tags, &desired.tags).await?;
        }
        still_there(&format!("instance profile {name}"), self.read_one(name).await?)
    }

    async fn delete(&self, _: &Context, current: &LiveOf<Self>) -> KindResult<()> {
        let name = &current.id;
        if let Some(role) = &current.attributes.role_name {
            self.remove_role(name, role).await?;
        }
        let call = self.0.iam.delete_instance_profile().instance_profile_name(name);
        call.send().await.or_gone("iam:DeleteInstanceProfile", &["NoSuchEntity"])
    }
}
