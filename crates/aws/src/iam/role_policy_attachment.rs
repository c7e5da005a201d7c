//! `aws_iam_role_policy_attachment`: a managed policy (an AWS managed one such as
//! `AmazonEKSClusterPolicy`, or any existing policy) attached to a role. Attaching is
//! idempotent and an attachment is identified by role and policy, so there is nothing to adopt.
//! A role's attachments are listed once per run, whatever the number of its attachments.

use crate::AwsClients;
use crate::error::SdkResult;
use crate::lookup::read_each;
use engine::prelude::*;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

#[derive(Attributes, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct RolePolicyAttachment {
    #[attr(replace)]
    pub role_name: String,
    #[attr(replace)]
    pub policy_arn: String,
}

pub(crate) struct RolePolicyAttachmentKind(pub Arc<AwsClients>);

impl RolePolicyAttachmentKind {
    /// The policy ARNs attached to `role` (`None`: no such role), read once per run and role.
    async fn attached(&self, ctx: &Context, role: &str) -> KindResult<Arc<Option<Vec<String>>>> {
        super::attached_policies(&self.0, ctx, role).await
    }
}

fn to_live(role: &str, policy: &str) -> Live<RolePolicyAttachment> {
    let attrs = RolePolicyAttachment { role_name: role.into(), policy_arn: policy.into() };
    Live::new(format!("{role}|{policy}"), attrs)
}

impl TypedKind for RolePolicyAttachmentKind {
    type Attrs = RolePolicyAttachment;
    const NAME: &'static str = "aws_iam_role_policy_attachment";

    async fn read(&self, ctx: &Context, requests: &Requests<Self>) -> Found<Self> {
        let key_of = |r: &ReadRequest<RolePolicyAttachment>| match &r.desired {
            Some(d) => Some((d.role_name.clone(), d.policy_arn.clone())),
            None => r.id.as_ref()?.split_once('|').map(|(a, b)| (a.to_string(), b.to_string())),
        };
        read_each(requests, key_of, |(role, policy)| async move {
            let attached = self.attached(ctx, &role).await?;
            let found = attached.as_ref().as_ref().is_some_and(|arns| arns.contains(&policy));
            Ok(found.then(|| to_live(&role, &policy)))
        })
        .await
    }

    async fn create(&self, ctx: &Context, desired: &Self::Attrs) -> Outcome<Self> {
        let (role, policy) = (&desired.role_name, &desired.policy_arn);
        let call = self.0.iam.attach_role_policy().role_name(role).policy_arn(policy);
        call.send().await.api("iam:AttachRolePolicy")?;
        ctx.forget(&super::attached_key(role));
        Ok(to_live(role, policy))
    }

    async fn delete(&self, ctx: &Context, current: &LiveOf<Self>) -> KindResult<()> {
        let RolePolicyAttachment { role_name, policy_arn } = &current.attributes;
        ctx.forget(&super::attached_key(role_name));
        let call = self.0.iam.detach_role_policy().role_name(role_name).policy_arn(policy_arn);
        call.send().await.or_gone("iam:DetachRolePolicy", &["NoSuchEntity"])
    }
}
