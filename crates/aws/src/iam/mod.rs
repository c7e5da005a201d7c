//! IAM kinds: roles and their inline policies, managed policies and their attachments, instance
//! profiles, OIDC providers; IAM's tagging calls (one pair per resource type) and policy documents.

pub(crate) mod instance_profile;
pub(crate) mod oidc_provider;
pub(crate) mod policy;
pub(crate) mod role;
pub(crate) mod role_policy;
pub(crate) mod role_policy_attachment;

use crate::error::{SdkResult, built};
use crate::tagging::{TagApi, from_pairs};
use async_trait::async_trait;
use aws_sdk_iam::types::Tag;
use engine::{KindError, KindResult, Tags};
use serde_json::Value as Json;

/// Tags as IAM tags.
pub(crate) fn iam_tags(tags: &Tags) -> KindResult<Vec<Tag>> {
    tags.iter().map(|(k, v)| built(Tag::builder().key(k).value(v).build())).collect()
}

/// IAM tags as tags.
pub(crate) fn tags_of(tags: &[Tag]) -> Tags {
    from_pairs(tags.iter().map(|t| (t.key(), t.value())))
}

/// A policy document as IAM reads it back: URL-encoded JSON text, as a JSON value.
pub(crate) fn policy_document(text: &str) -> Json {
    let decoded = percent_encoding::percent_decode_str(text).decode_utf8_lossy();
    serde_json::from_str(&decoded).unwrap_or_else(|_| Json::String(decoded.into_owned()))
}

/// A policy document as IAM takes it: JSON text.
pub(crate) fn policy_text(document: &Json) -> String {
    match document {
        Json::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// Tagging calls of roles (by name).
pub(crate) struct RoleTags<'a>(pub &'a aws_sdk_iam::Client);

#[async_trait]
impl TagApi for RoleTags<'_> {
    async fn untag(&self, name: &str, keys: Vec<String>) -> Result<(), KindError> {
        let call = self.0.untag_role().role_name(name).set_tag_keys(Some(keys));
        call.send().await.api("iam:UntagRole").map(|_| ())
    }

    async fn tag(&self, name: &str, tags: Tags) -> Result<(), KindError> {
        let call = self.0.tag_role().role_name(name).set_tags(Some(iam_tags(&tags)?));
        call.send().await.api("iam:TagRole").map(|_| ())
    }
}

/// Tagging calls of instance profiles (by name).
pub(crate) struct InstanceProfileTags<'a>(pub &'a aws_sdk_iam::Client);

#[async_trait]
impl TagApi for InstanceProfileTags<'_> {
    async fn untag(&self, name: &str, keys: Vec<String>) -> Result<(), KindError> {
        let call = self.0.untag_instance_profile().instance_profile_name(name);
        call.set_tag_keys(Some(keys)).send().await.api("iam:UntagInstanceProfile").map(|_| ())
    }

    async fn tag(&self, name: &str, tags: Tags) -> Result<(), KindError> {
        let call = self.0.tag_instance_profile().instance_profile_name(name);
        let call = call.set_tags(Some(iam_tags(&tags)?));
        call.send().await.api("iam:TagInstanceProfile").map(|_| ())
    }
}

/// Tagging calls of OIDC providers (by ARN).
pub(crate) struct OidcProviderTags<'a>(pub &'a aws_sdk_iam::Client);

#[async_trait]
impl TagApi for OidcProviderTags<'_> {
    async fn untag(&self, arn: &str, keys: Vec<String>) -> Result<(), KindError> {
        let call = self.0.untag_open_id_connect_provider().open_id_connect_provider_arn(arn);
        let call = call.set_tag_keys(Some(keys));
        call.send().await.api("iam:UntagOpenIDConnectProvider").map(|_| ())
    }

    async fn tag(&self, arn: &str, tags: Tags) -> Result<(), KindError> {
        let call = self.0.tag_open_id_connect_provider().open_id_connect_provider_arn(arn);
        let call = call.set_tags(Some(iam_tags(&tags)?));
        call.send().await.api("iam:TagOpenIDConnectProvider").map(|_| ())
    }
}

/// The memo key of a role's attached managed policies.
pub(crate) fn attached_key(role: &str) -> String {
    format!("iam:attached:{role}")
}

/// The managed policies attached to `role` (`None`: no such role), listed once per run and
/// role, shared by the role (what is foreign) and its attachments (what is there).
pub(crate) async fn attached_policies(
    clients: &crate::AwsClients,
    ctx: &engine::Context,
    role: &str,
) -> KindResult<std::sync::Arc<Option<Vec<String>>>> {
    ctx.memo(&attached_key(role), || async {
        let pages = clients.iam.list_attached_role_policies().role_name(role).into_paginator();
        let pages: Option<Vec<_>> = pages
            .send()
            .collect::<Result<_, _>>()
            .await
            .or_absent("iam:ListAttachedRolePolicies", &["NoSuchEntity"])?;
        Ok(pages.map(|pages| {
            let attached = pages.iter().flat_map(|p| p.attached_policies());
            attached.filter_map(|a| a.policy_arn().map(str::to_string)).collect()
        }))
    })
    .await
}

/// The names of `role`'s inline policies.
pub(crate) async fn inline_policies(
    clients: &crate::AwsClients,
    role: &str,
) -> KindResult<Vec<String>> {
    let pages = clients.iam.list_role_policies().role_name(role).into_paginator();
    let pages: Option<Vec<_>> = pages
        .send()
        .collect::<Result<_, _>>()
        .await
        .or_absent("iam:ListRolePolicies", &["NoSuchEntity"])?;
    Ok(pages.into_iter().flatten().flat_map(|p| p.policy_names().to_vec()).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn policy_documents_are_decoded_and_sent_as_text() {
        let read =
            policy_document("%7B%22Version%22%3A%222012-10-17%22%2C%22Statement%22%3A%5B%5D%7D");
        assert_eq!(read, json!({"Version": "2012-10-17", "Statement": []}));
        assert_eq!(policy_text(&read), r#"{"Version":"2012-10-17","Statement":[]}"#);
        assert_eq!(policy_text(&json!("{}")), "{}");
        assert_eq!(policy_document("not json"), json!("not json"));
    }
}
