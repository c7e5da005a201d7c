//! `aws_iam_role` (its inline policies are `aws_iam_role_policy`). IAM is global; roles
//! are named by the spec, so a role made by a run that died before recording it is found by its
//! name and adopted when it carries the address tag. Policy documents compare as IAM policies.
//!
//! The engine owns a role whole: `declared_policies` (filled by the expansion from the spec's
//! attachments and inline policies of the role) says what may be on it, and `foreign_policies`
//! lists what else is (`arn:...` attached, `inline:<name>`). The spec wants none, so a policy
//! attached out of band is drift and `apply` removes it, unless `[globals] shared` names the role.

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
    /// The managed policy that bounds what the role's policies may grant.
    #[attr(in_place)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permissions_boundary: Option<String>,
    #[attr(in_place, tags)]
    pub tags: Tags,
    #[attr(computed)]
    pub arn: Option<String>,
    /// The managed policy ARNs the spec attaches and its inline policies (`inline:<name>`).
    #[attr(setting)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub declared_policies: Option<Vec<String>>,
    /// Policies on the role the spec does not declare; `None` for a shared role (not watched).
    #[attr(in_place, unordered)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub foreign_policies: Option<Vec<String>>,
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
            permissions_boundary: role
                .permissions_boundary()
                .and_then(|b| b.permissions_boundary_arn())
                .map(str::to_string),
            tags: tags_of(role.tags()),
            arn: Some(role.arn().to_string()),
            declared_policies: None,
            foreign_policies: None,
        };
        Ok(Some(Live::new(name, role)))
    }

    /// What is on `role` that `declared` does not list.
    async fn foreign(
        &self,
        ctx: &Context,
        role: &str,
        declared: &[String],
    ) -> KindResult<Vec<String>> {
        let attached = super::attached_policies(&self.0, ctx, role).await?;
        let inline = super::inline_policies(&self.0, role).await?;
        let on_role = attached.iter().flatten().cloned();
        let on_role = on_role.chain(inline.into_iter().map(|name| format!("inline:{name}")));
        Ok(on_role.filter(|p| !declared.contains(p)).collect())
    }

    /// Removes the foreign policies `foreign` from `role`.
    async fn remove(&self, ctx: &Context, role: &str, foreign: &[String]) -> KindResult<()> {
        let iam = &self.0.iam;
        for policy in foreign {
            match policy.strip_prefix("inline:") {
                Some(name) => {
                    let call = iam.delete_role_policy().role_name(role).policy_name(name);
                    call.send().await.or_gone("iam:DeleteRolePolicy", &["NoSuchEntity"])?;
                }
                None => {
                    let call = iam.detach_role_policy().role_name(role).policy_arn(policy);
                    call.send().await.or_gone("iam:DetachRolePolicy", &["NoSuchEntity"])?;
                }
            }
        }
        ctx.forget(&super::attached_key(role));
        Ok(())
    }
}

impl TypedKind for RoleKind {
    type Attrs = Role;
    const NAME: &'static str = "aws_iam_role";

    async fn read(&self, ctx: &Context, requests: &Requests<Self>) -> Found<Self> {
        let mut found =
            read_named(requests, |d| d.name.clone(), |n| async move { self.read_one(&n).await })
                .await?;
        // What else is on the roles the spec watches whole.
        let foreign = futures::future::try_join_all(requests.iter().zip(&found).map(|(r, l)| {
            let watched = r.desired.as_ref().filter(|d| d.foreign_policies.is_some());
            async move {
                match (watched.map(|d| &d.declared_policies), l) {
                    (Some(Some(declared)), Some(l)) => {
                        engine::bounded(self.foreign(ctx, &l.id, declared)).await.map(Some)
                    }
                    // What the spec declares is not known yet (a policy still to make): nothing
                    // is called foreign.
                    (Some(None), Some(_)) => Ok(Some(vec![])),
                    _ => Ok(None),
                }
            }
        }))
        .await?;
        for (l, foreign) in found.iter_mut().zip(foreign) {
            if let Some(l) = l {
                l.attributes.foreign_policies = foreign;
            }
        }
        Ok(found)
    }

    async fn create(&self, _: &Context, desired: &Self::Attrs) -> Outcome<Self> {
        let name = &desired.name;
        let tags = Some(iam_tags(&desired.tags)?);
        let call = self.0.iam.create_role().role_name(name).set_tags(tags);
        let call = call.set_permissions_boundary(desired.permissions_boundary.clone());
        let call = call.assume_role_policy_document(policy_text(&desired.assume_role_policy));
        call.send().await.api("iam:CreateRole")?;
        let mut role = read_back(&format!("role {name}"), || self.read_one(name)).await?;
        role.attributes.declared_policies = desired.declared_policies.clone();
        role.attributes.foreign_policies = desired.foreign_policies.clone();
        Ok(role)
    }

    async fn update(&self, ctx: &Context, update: Update<'_, Self>) -> Outcome<Self> {
        let Update { current, desired, changes } = update;
        let name = &current.id;
        if changes.foreign_policies {
            let foreign = current.attributes.foreign_policies.as_deref().unwrap_or_default();
            self.remove(ctx, name, foreign).await?;
        }
        if changes.assume_role_policy {
            let call = self.0.iam.update_assume_role_policy().role_name(name);
            let call = call.policy_document(policy_text(&desired.assume_role_policy));
            call.send().await.api("iam:UpdateAssumeRolePolicy")?;
        }
        if changes.permissions_boundary {
            match &desired.permissions_boundary {
                Some(boundary) => {
                    let call = self.0.iam.put_role_permissions_boundary().role_name(name);
                    let call = call.permissions_boundary(boundary);
                    call.send().await.api("iam:PutRolePermissionsBoundary")?;
                }
                None => {
                    let call = self.0.iam.delete_role_permissions_boundary().role_name(name);
                    call.send().await.api("iam:DeleteRolePermissionsBoundary")?;
                }
            }
        }
        if changes.tags {
            retag(&RoleTags(&self.0.iam), name, &current.attributes.tags, &desired.tags).await?;
        }
        let mut role = still_there(&format!("role {name}"), self.read_one(name).await?)?;
        role.attributes.declared_policies = desired.declared_policies.clone();
        role.attributes.foreign_policies = desired.foreign_policies.clone();
        Ok(role)
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
            permissions_boundary: None,
            tags: Tags::new(),
            arn: None,
            declared_policies: None,
            foreign_policies: None,
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
