//! `aws_iam_role` and `aws_iam_role_policy` (an inline policy of a role). IAM is global; roles
//! are named by the spec, so a role made by a run that died before recording it is found by its
//! name and adopted when it carries the address tag. Policy documents compare as IAM policies.

use super::{RoleTags, iam_tags, policy_document, policy_text, tags_of};
use crate::AwsClients;
use crate::error::SdkResult;
use crate::lookup::{read_by_key, read_each, still_there, wanted};
use crate::tagging::retag;
use async_trait::async_trait;
use engine::retry::read_back;
use engine::{
    Attributes, Context, Found, KindError, KindResult, Live, LiveOf, Outcome, ReadRequest,
    Requests, Tags, TypedKind, Update,
};
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;
use std::sync::Arc;

#[derive(Attributes, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct Role {
    #[attr(replace)]
    pub name: String,
    #[attr(in_place, normalize = engine::normalize::iam_policy)]
    pub assume_role_policy: Json,
    #[attr(in_place, tags)]
    pub tags: Tags,
    #[attr(computed)]
    pub arn: Option<String>,
}

#[derive(Attributes, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct RolePolicy {
    #[attr(replace)]
    pub role_name: String,
    #[attr(replace)]
    pub name: String,
    #[attr(in_place, normalize = engine::normalize::iam_policy)]
    pub policy: Json,
}

pub(crate) struct RoleKind(pub Arc<AwsClients>);
pub(crate) struct RolePolicyKind(pub Arc<AwsClients>);

impl RoleKind {
    async fn read_one(&self, name: &str) -> KindResult<Option<Live<Role>>> {
        let call = self.0.iam.get_role().role_name(name);
        let found = call.send().await.or_absent("iam:GetRole", &["NoSuchEntity"])?;
        let Some(role) = found.and_then(|out| out.role) else { return Ok(None) };
        let document = role.assume_role_policy_document().unwrap_or_default();
        let role = Role {
            name: role.role_name().to_string(),
            assume_role_policy: policy_document(document),
            tags: tags_of(role.tags()),
            arn: Some(role.arn().to_string()),
        };
        Ok(Some(Live::new(name, role)))
    }
}

#[async_trait]
impl TypedKind for RoleKind {
    type Attrs = Role;
    const NAME: &'static str = "aws_iam_role";

    async fn read(&self, _: &Context, requests: &Requests<Self>) -> Found<Self> {
        let name_of = |r: &ReadRequest<Role>| wanted(r, |d| d.name.clone());
        read_by_key(requests, name_of, |n| async move { self.read_one(&n).await }).await
    }

    async fn create(&self, _: &Context, desired: &Self::Attrs) -> Outcome<Self> {
        let name = &desired.name;
        let tags = Some(iam_tags(&desired.tags)?);
        let call = self.0.iam.create_role().role_name(name).set_tags(tags);
        let call = call.assume_role_policy_document(policy_text(&desired.assume_role_policy));
        call.send().await.api("iam:CreateRole")?;
        read_back(&format!("role {name}"), || self.read_one(name)).await
    }

    async fn update(&self, _: &Context, update: Update<'_, Self>) -> Outcome<Self> {
        let Update { current, desired, changes } = update;
        let name = &current.id;
        if changes.assume_role_policy {
            let call = self.0.iam.update_assume_role_policy().role_name(name);
            let call = call.policy_document(policy_text(&desired.assume_role_policy));
            call.send().await.api("iam:UpdateAssumeRolePolicy")?;
        }
        if changes.tags {
            retag(&RoleTags(&self.0.iam), name, &current.attributes.tags, &desired.tags).await?;
        }
        still_there(&format!("role {name}"), self.read_one(name).await?)
    }

    async fn delete(&self, _: &Context, current: &LiveOf<Self>) -> KindResult<()> {
        let call = self.0.iam.delete_role().role_name(&current.id);
        match call.send().await.or_gone("iam:DeleteRole", &["NoSuchEntity"]) {
            // Its policies go first, as resources of their own: retry while they do.
            Err(e) if e.has_code("DeleteConflict") => Err(KindError { retryable: true, ..e }),
            done => done,
        }
    }
}

impl RolePolicyKind {
    async fn read_one(&self, role: &str, name: &str) -> KindResult<Option<Live<RolePolicy>>> {
        let call = self.0.iam.get_role_policy().role_name(role).policy_name(name);
        let found = call.send().await.or_absent("iam:GetRolePolicy", &["NoSuchEntity"])?;
        Ok(found.map(|out| {
            let policy = policy_document(out.policy_document());
            let attrs = RolePolicy { role_name: role.into(), name: name.into(), policy };
            Live::new(format!("{role}:{name}"), attrs)
        }))
    }

    /// Writes the whole document (idempotent: a retry cannot make a second policy); the policy
    /// then is what was written.
    async fn put(&self, desired: &RolePolicy) -> KindResult<Live<RolePolicy>> {
        let (role, name) = (&desired.role_name, &desired.name);
        let call = self.0.iam.put_role_policy().role_name(role).policy_name(name);
        let call = call.policy_document(policy_text(&desired.policy));
        call.send().await.api("iam:PutRolePolicy")?;
        Ok(Live::new(format!("{role}:{name}"), desired.clone()))
    }
}

#[async_trait]
impl TypedKind for RolePolicyKind {
    type Attrs = RolePolicy;
    const NAME: &'static str = "aws_iam_role_policy";

    /// An inline policy of a role that is ours is ours: no tags to check.
    async fn read(&self, _: &Context, requests: &Requests<Self>) -> Found<Self> {
        let key_of = |r: &ReadRequest<RolePolicy>| match &r.desired {
            Some(d) => Some((d.role_name.clone(), d.name.clone())),
            None => r.id.as_ref()?.split_once(':').map(|(a, b)| (a.to_string(), b.to_string())),
        };
        read_each(requests, key_of, |(role, name)| async move { self.read_one(&role, &name).await })
            .await
    }

    async fn create(&self, _: &Context, desired: &Self::Attrs) -> Outcome<Self> {
        self.put(desired).await
    }

    async fn update(&self, _: &Context, update: Update<'_, Self>) -> Outcome<Self> {
        let Update { desired, .. } = update;
        self.put(desired).await
    }

    async fn delete(&self, _: &Context, current: &LiveOf<Self>) -> KindResult<()> {
        let RolePolicy { role_name, name, .. } = &current.attributes;
        let call = self.0.iam.delete_role_policy().role_name(role_name).policy_name(name);
        call.send().await.or_gone("iam:DeleteRolePolicy", &["NoSuchEntity"])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use engine::testing::changed_fields;
    use serde_json::json;

    #[test]
    fn trust_policies_compare_by_meaning() {
        let role = |policy: Json| Role {
            name: "r".into(),
            assume_role_policy: policy,
            tags: Tags::new(),
            arn: None,
        };
        let spec = role(json!({"Version": "2012-10-17", "Statement": [{"Effect": "Allow",
            "Principal": {"Service": "ec2.amazonaws.com"}, "Action": "sts:AssumeRole"}]}));
        let read = role(policy_document(
            "%7B%22Statement%22%3A%7B%22Action%22%3A%5B%22sts%3AAssumeRole%22%5D%2C%22Effect%22%3A\
             %22Allow%22%2C%22Principal%22%3A%7B%22Service%22%3A%22ec2.amazonaws.com%22%7D%7D%2C\
             %22Version%22%3A%222012-10-17%22%7D",
        ));
        assert_eq!(changed_fields(&read, &spec), []);
        let mut other = spec.clone();
        other.assume_role_policy["Statement"][0]["Effect"] = json!("Deny");
        assert_eq!(changed_fields(&read, &other), [("assume_role_policy", false)]);
    }
}
