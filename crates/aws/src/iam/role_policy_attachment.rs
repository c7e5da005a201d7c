//! `aws_iam_role_policy_attachment`: a managed policy (an AWS managed one such as
//! `AmazonEKSClusterPolicy`, or any existing policy) attached to a role. Attaching is
//! idempotent and an attachment is identified by role and policy, so there is nothing to adopt.

use crate::AwsClients;
use crate::error::{api_error, has_code};
use crate::lookup_json::{live, str_attr};
use async_trait::async_trait;
use engine::{Address, Attrs, Context, Field, Kind, KindError, Live, ReadRequest};
use serde_json::{Value as Json, json};
use std::sync::Arc;

pub(crate) struct IamRolePolicyAttachment(pub Arc<AwsClients>);

const FIELDS: &[Field] =
    &[Field::replace("role_name"), Field::replace("policy_arn"), Field::computed("id")];

impl IamRolePolicyAttachment {
    /// The policy ARNs attached to `role` (`None`: no such role), read once per run and role.
    async fn attached(
        &self,
        ctx: &Context,
        role: &str,
    ) -> Result<Arc<Option<Vec<String>>>, KindError> {
        ctx.memo(&format!("iam:attached:{role}"), || async {
            let iam = &self.0.iam;
            let mut arns = Vec::new();
            let mut pages =
                iam.list_attached_role_policies().role_name(role).into_paginator().send();
            while let Some(page) = pages.next().await {
                match page {
                    Ok(p) => arns.extend(
                        p.attached_policies()
                            .iter()
                            .filter_map(|a| a.policy_arn().map(str::to_string)),
                    ),
                    Err(e) if has_code(&e, "NoSuchEntity") => return Ok(None),
                    Err(e) => return Err(api_error("iam:ListAttachedRolePolicies", e)),
                }
            }
            Ok(Some(arns))
        })
        .await
    }
}

fn to_live(role: &str, policy: &str) -> Live {
    live(format!("{role}|{policy}"), [("role_name", json!(role)), ("policy_arn", json!(policy))])
}

#[async_trait]
impl Kind for IamRolePolicyAttachment {
    fn name(&self) -> &'static str {
        "aws_iam_role_policy_attachment"
    }

    fn fields(&self) -> &'static [Field] {
        FIELDS
    }

    async fn read(
        &self,
        ctx: &Context,
        requests: &[ReadRequest],
    ) -> Result<Vec<Option<Live>>, KindError> {
        let mut out = Vec::new();
        for r in requests {
            let from_desired = r.desired.as_ref().and_then(|d| {
                Some((
                    d.get("role_name")?.as_str()?.to_string(),
                    d.get("policy_arn")?.as_str()?.to_string(),
                ))
            });
            let from_id =
                r.id.as_ref()
                    .and_then(|id| id.split_once('|'))
                    .map(|(a, b)| (a.to_string(), b.to_string()));
            let Some((role, policy)) = from_desired.or(from_id) else {
                out.push(None);
                continue;
            };
            let attached = self.attached(ctx, &role).await?;
            out.push(
                attached
                    .as_ref()
                    .as_ref()
                    .filter(|arns| arns.contains(&policy))
                    .map(|_| to_live(&role, &policy)),
            );
        }
        Ok(out)
    }

    async fn create(
        &self,
        ctx: &Context,
        _address: &Address,
        desired: &Attrs,
    ) -> Result<Live, KindError> {
        let role = str_attr(desired, "role_name")?;
        let policy = str_attr(desired, "policy_arn")?;
        self.0
            .iam
            .attach_role_policy()
            .role_name(role)
            .policy_arn(policy)
            .send()
            .await
            .map_err(|e| api_error("iam:AttachRolePolicy", e))?;
        ctx.forget(&format!("iam:attached:{role}"));
        Ok(to_live(role, policy))
    }

    async fn update(
        &self,
        ctx: &Context,
        address: &Address,
        _current: &Live,
        desired: &Attrs,
    ) -> Result<Live, KindError> {
        self.create(ctx, address, desired).await
    }

    async fn delete(
        &self,
        ctx: &Context,
        _address: &Address,
        current: &Live,
    ) -> Result<(), KindError> {
        let role = current.attributes.get("role_name").and_then(Json::as_str).unwrap_or_default();
        let policy =
            current.attributes.get("policy_arn").and_then(Json::as_str).unwrap_or_default();
        ctx.forget(&format!("iam:attached:{role}"));
        crate::error::deleted(
            "iam:DetachRolePolicy",
            self.0.iam.detach_role_policy().role_name(role).policy_arn(policy).send().await,
            &["NoSuchEntity"],
        )
    }
}
