//! `aws_iam_role_policy`: an inline policy of a role, identified by `role:name`. Its document
//! compares as an IAM policy.

use super::{policy_document, policy_text};
use crate::AwsClients;
use crate::error::SdkResult;
use crate::lookup::read_each;
use engine::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;
use std::sync::Arc;

#[derive(Attributes, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct RolePolicy {
    #[attr(replace)]
    pub role_name: String,
    #[attr(replace)]
    pub name: String,
    #[attr(in_place, normalize = engine::normalize::iam_policy)]
    pub policy: Json,
}

pub(crate) struct RolePolicyKind(pub Arc<AwsClients>);

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
