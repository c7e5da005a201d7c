//! `aws_iam_role` (its inline policies are `aws_iam_role_policy`). IAM is global; roles
//! are named by the spec, so a role made by a run that died before recording it is found by its
//! name and adopted when it carries the address tag. Policy documents compare as IAM policies.

use super::{RoleTags, iam_tags, policy_document, policy_text, tags_of};
use crate::AwsClients;
use crate::error::SdkResult;
use crate::lookup::{read_named, still_there};
use crate::tagging::retag;
use engine::prelude::*;
use engine::retry::read_back;
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

pub(crate) struct RoleKind(pub Arc<AwsClients>);

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

impl TypedKind for RoleKind {
    type Attrs = Role;
    const NAME: &'static str = "aws_iam_role";

    async fn read(&self, _: &Context, requests: &Requests<Self>) -> Found<Self> {
        read_named(requests, |d| d.name.clone(), |n| async move { self.read_one(&n).await }).await
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
