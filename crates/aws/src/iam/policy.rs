//! `aws_iam_policy`: a customer managed policy (e.g. a permissions boundary), named by the
//! spec. Its id is its ARN. The account's own policies are listed once per run to find one by
//! name (its ARN holds the account id, which the spec does not know); one made by a run that
//! died before recording it is adopted by its tags. A changed document becomes a new default
//! version (the oldest other version goes first when IAM's five are taken); a delete removes
//! the other versions first, as IAM wants.

use super::{iam_tags, policy_document, policy_text, tags_of};
use crate::AwsClients;
use crate::error::{SdkResult, required};
use crate::lookup::{read_by_key, still_there};
use crate::tagging::{TagApi, retag};
use async_trait::async_trait;
use aws_sdk_iam::types::PolicyScopeType;
use engine::prelude::*;
use engine::retry::read_back;
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;
use std::collections::BTreeMap;
use std::sync::Arc;

#[derive(Attributes, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct Policy {
    #[attr(replace)]
    pub name: String,
    #[attr(replace)]
    pub description: String,
    #[attr(in_place, normalize = engine::normalize::iam_policy)]
    pub policy: Json,
    #[attr(in_place, tags)]
    pub tags: Tags,
    #[attr(computed)]
    pub arn: Option<String>,
}

pub(crate) struct PolicyKind(pub Arc<AwsClients>);

/// IAM's limit on the versions of a managed policy.
const MAX_VERSIONS: usize = 5;

const LISTING: &str = "iam:local-policies";

impl PolicyKind {
    /// The account's own policies, name → ARN, listed once per run.
    async fn local(&self, ctx: &Context) -> KindResult<Arc<BTreeMap<String, String>>> {
        ctx.memo(LISTING, || async {
            let call = self.0.iam.list_policies().scope(PolicyScopeType::Local);
            let pages = call.into_paginator().send().collect::<Result<Vec<_>, _>>().await;
            let pages = pages.api("iam:ListPolicies")?;
            let all = pages.iter().flat_map(|p| p.policies());
            let named =
                all.filter_map(|p| Some((p.policy_name()?.to_string(), p.arn()?.to_string())));
            Ok(named.collect())
        })
        .await
    }

    async fn read_arn(&self, arn: &str) -> KindResult<Option<Live<Policy>>> {
        let call = self.0.iam.get_policy().policy_arn(arn);
        let found = call.send().await.or_absent("iam:GetPolicy", &["NoSuchEntity"])?;
        let Some(p) = found.and_then(|out| out.policy) else { return Ok(None) };
        let version = required(p.default_version_id(), "iam:GetPolicy: DefaultVersionId")?;
        let call = self.0.iam.get_policy_version().policy_arn(arn).version_id(version);
        let out = call.send().await.api("iam:GetPolicyVersion")?;
        let document = out.policy_version().and_then(|v| v.document()).unwrap_or_default();
        let policy = Policy {
            name: p.policy_name().unwrap_or_default().to_string(),
            description: p.description().unwrap_or_default().to_string(),
            policy: policy_document(document),
            tags: tags_of(p.tags()),
            arn: Some(arn.to_string()),
        };
        Ok(Some(Live::new(arn, policy)))
    }

    /// The versions of `arn` that are not its default, oldest first.
    async fn other_versions(&self, arn: &str) -> KindResult<Vec<String>> {
        let out = self.0.iam.list_policy_versions().policy_arn(arn).send().await;
        let out = out.api("iam:ListPolicyVersions")?;
        let mut versions: Vec<_> =
            out.versions().iter().filter(|v| !v.is_default_version()).collect();
        versions.sort_by_key(|v| v.create_date().map(|d| d.secs()));
        Ok(versions.iter().filter_map(|v| v.version_id().map(str::to_string)).collect())
    }

    async fn delete_version(&self, arn: &str, version: &str) -> KindResult<()> {
        let call = self.0.iam.delete_policy_version().policy_arn(arn).version_id(version);
        call.send().await.or_gone("iam:DeletePolicyVersion", &["NoSuchEntity"])
    }
}

impl TypedKind for PolicyKind {
    type Attrs = Policy;
    const NAME: &'static str = "aws_iam_policy";

    async fn read(&self, ctx: &Context, requests: &Requests<Self>) -> Found<Self> {
        // A recorded policy by its ARN; one state does not record by its name, in the listing.
        let local = match requests.iter().any(|r| r.id.is_none() && r.desired.is_some()) {
            true => Some(self.local(ctx).await?),
            false => None,
        };
        let key_of = |r: &ReadRequest<Policy>| match (&r.id, &r.desired, &local) {
            (Some(arn), _, _) => Some(arn.clone()),
            (None, Some(d), Some(local)) => local.get(&d.name).cloned(),
            _ => None,
        };
        read_by_key(requests, key_of, |arn| async move { self.read_arn(&arn).await }).await
    }

    async fn create(&self, ctx: &Context, desired: &Self::Attrs) -> Outcome<Self> {
        let call = self
            .0
            .iam
            .create_policy()
            .policy_name(&desired.name)
            .description(&desired.description)
            .policy_document(policy_text(&desired.policy))
            .set_tags(Some(iam_tags(&desired.tags)?));
        let out = call.send().await.api("iam:CreatePolicy")?;
        ctx.forget(LISTING);
        let arn = required(out.policy().and_then(|p| p.arn()), "iam:CreatePolicy: Arn")?;
        read_back(&format!("policy {}", desired.name), || self.read_arn(arn)).await
    }

    async fn update(&self, _: &Context, update: Update<'_, Self>) -> Outcome<Self> {
        let Update { current, desired, changes } = update;
        let arn = &current.id;
        if changes.policy {
            let others = self.other_versions(arn).await?;
            if others.len() + 1 >= MAX_VERSIONS {
                self.delete_version(arn, &others[0]).await?;
            }
            let call = self.0.iam.create_policy_version().policy_arn(arn).set_as_default(true);
            let call = call.policy_document(policy_text(&desired.policy));
            call.send().await.api("iam:CreatePolicyVersion")?;
        }
        if changes.tags {
            retag(&PolicyTags(&self.0.iam), arn, &current.attributes.tags, &desired.tags).await?;
        }
        still_there(&format!("policy {arn}"), self.read_arn(arn).await?)
    }

    async fn delete(&self, ctx: &Context, current: &LiveOf<Self>) -> KindResult<()> {
        let arn = &current.id;
        for version in
            self.other_versions(arn).await.or_else(|e| match e.has_code("NoSuchEntity") {
                true => Ok(vec![]),
                false => Err(e),
            })?
        {
            self.delete_version(arn, &version).await?;
        }
        let call = self.0.iam.delete_policy().policy_arn(arn);
        let deleted = match call.send().await.or_gone("iam:DeletePolicy", &["NoSuchEntity"]) {
            // Still a boundary or attached: what uses it goes first, as resources of their own.
            Err(e) if e.has_code("DeleteConflict") => Err(KindError { retryable: true, ..e }),
            done => done,
        };
        ctx.forget(LISTING);
        deleted
    }
}

/// Tagging calls of managed policies (by ARN).
struct PolicyTags<'a>(&'a aws_sdk_iam::Client);

#[async_trait]
impl TagApi for PolicyTags<'_> {
    async fn untag(&self, arn: &str, keys: Vec<String>) -> Result<(), KindError> {
        let call = self.0.untag_policy().policy_arn(arn).set_tag_keys(Some(keys));
        call.send().await.api("iam:UntagPolicy").map(|_| ())
    }

    async fn tag(&self, arn: &str, tags: Tags) -> Result<(), KindError> {
        let call = self.0.tag_policy().policy_arn(arn).set_tags(Some(iam_tags(&tags)?));
        call.send().await.api("iam:TagPolicy").map(|_| ())
    }
}
