//! `aws_iam_role` and `aws_iam_role_policy` (inline policy). IAM is global; roles are named by
//! the spec, so a role made by a run that died before recording it is found by its name.

use crate::AwsClients;
use crate::error::{api_error, has_code};
use crate::lookup_json::{desired_str, live, read_by_name, read_each, still_there, str_attr};
use crate::settle::settle;
use async_trait::async_trait;
use engine::{Address, Attrs, Context, Field, Kind, KindError, Live, ReadRequest};
use serde_json::{Value as Json, json};
use std::sync::Arc;

pub(crate) struct IamRole(pub Arc<AwsClients>);
pub(crate) struct IamRolePolicy(pub Arc<AwsClients>);

const ROLE_FIELDS: &[Field] = &[
    Field::replace("name"),
    Field::in_place("assume_role_policy"),
    Field::in_place("tags"),
    Field::computed("id"),
    Field::computed("arn"),
];

const POLICY_FIELDS: &[Field] = &[
    Field::replace("role_name"),
    Field::replace("name"),
    Field::in_place("policy"),
    Field::computed("id"),
];

/// IAM returns policy documents URL-encoded; compare them as JSON.
fn policy_document(text: &str) -> Json {
    let decoded = percent_encoding::percent_decode_str(text).decode_utf8_lossy();
    serde_json::from_str(&decoded).unwrap_or(Json::String(decoded.into_owned()))
}

impl IamRole {
    async fn read_one(&self, name: &str) -> Result<Option<Live>, KindError> {
        let iam = &self.0.iam;
        let role = match iam.get_role().role_name(name).send().await {
            Ok(out) => out.role,
            Err(e) if has_code(&e, "NoSuchEntity") => return Ok(None),
            Err(e) => return Err(api_error("iam:GetRole", e)),
        };
        let Some(role) = role else { return Ok(None) };
        let tags = crate::tags::to_json(role.tags().iter().map(|t| (t.key(), t.value())));
        Ok(Some(live(
            name,
            [
                ("name", json!(role.role_name())),
                (
                    "assume_role_policy",
                    policy_document(role.assume_role_policy_document().unwrap_or_default()),
                ),
                ("tags", tags),
                ("arn", json!(role.arn())),
            ],
        )))
    }
}

#[async_trait]
impl Kind for IamRole {
    fn name(&self) -> &'static str {
        "aws_iam_role"
    }

    fn fields(&self) -> &'static [Field] {
        ROLE_FIELDS
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
        _address: &Address,
        desired: &Attrs,
    ) -> Result<Live, KindError> {
        let iam = &self.0.iam;
        let name = str_attr(desired, "name")?;
        let policy = desired.get("assume_role_policy").cloned().unwrap_or_default().to_string();
        iam.create_role()
            .role_name(name)
            .assume_role_policy_document(policy)
            .set_tags(Some(crate::tags::iam(desired)?))
            .send()
            .await
            .map_err(|e| api_error("iam:CreateRole", e))?;
        settle(|| async {
            self.read_one(name)
                .await?
                .ok_or_else(|| KindError::retryable(format!("role {name} not visible yet")))
        })
        .await
    }

    async fn update(
        &self,
        _ctx: &Context,
        _address: &Address,
        current: &Live,
        desired: &Attrs,
    ) -> Result<Live, KindError> {
        let iam = &self.0.iam;
        let name = str_attr(desired, "name")?;
        if current.attributes.get("assume_role_policy") != desired.get("assume_role_policy") {
            iam.update_assume_role_policy()
                .role_name(name)
                .policy_document(
                    desired.get("assume_role_policy").cloned().unwrap_or_default().to_string(),
                )
                .send()
                .await
                .map_err(|e| api_error("iam:UpdateAssumeRolePolicy", e))?;
        }
        crate::tags::update(
            &current.attributes,
            desired,
            |keys| async move {
                iam.untag_role()
                    .role_name(name)
                    .set_tag_keys(Some(keys))
                    .send()
                    .await
                    .map(|_| ())
                    .map_err(|e| api_error("iam:UntagRole", e))
            },
            || async move {
                iam.tag_role()
                    .role_name(name)
                    .set_tags(Some(crate::tags::iam(desired)?))
                    .send()
                    .await
                    .map(|_| ())
                    .map_err(|e| api_error("iam:TagRole", e))
            },
        )
        .await?;
        still_there(&format!("role {name}"), self.read_one(name).await?)
    }

    async fn delete(
        &self,
        _ctx: &Context,
        _address: &Address,
        current: &Live,
    ) -> Result<(), KindError> {
        let iam = &self.0.iam;
        match iam.delete_role().role_name(&current.id).send().await {
            Ok(_) => Ok(()),
            Err(e) if has_code(&e, "NoSuchEntity") => Ok(()),
            // Inline policies are deleted first by their own resources; retry while they go.
            Err(e) if has_code(&e, "DeleteConflict") => Err(KindError::retryable(format!(
                "iam:DeleteRole: {} still has policies",
                current.id
            ))),
            Err(e) => Err(api_error("iam:DeleteRole", e)),
        }
    }
}

impl IamRolePolicy {
    async fn read_one(&self, role: &str, name: &str) -> Result<Option<Live>, KindError> {
        let iam = &self.0.iam;
        match iam.get_role_policy().role_name(role).policy_name(name).send().await {
            Ok(out) => Ok(Some(live(
                format!("{role}:{name}"),
                [
                    ("role_name", json!(role)),
                    ("name", json!(name)),
                    ("policy", policy_document(out.policy_document())),
                ],
            ))),
            Err(e) if has_code(&e, "NoSuchEntity") => Ok(None),
            Err(e) => Err(api_error("iam:GetRolePolicy", e)),
        }
    }

    async fn put(&self, desired: &Attrs) -> Result<Live, KindError> {
        let iam = &self.0.iam;
        let role = str_attr(desired, "role_name")?;
        let name = str_attr(desired, "name")?;
        iam.put_role_policy()
            .role_name(role)
            .policy_name(name)
            .policy_document(desired.get("policy").cloned().unwrap_or_default().to_string())
            .send()
            .await
            .map_err(|e| api_error("iam:PutRolePolicy", e))?;
        Ok(live(
            format!("{role}:{name}"),
            [
                ("role_name", json!(role)),
                ("name", json!(name)),
                ("policy", desired.get("policy").cloned().unwrap_or_default()),
            ],
        ))
    }
}

#[async_trait]
impl Kind for IamRolePolicy {
    fn name(&self) -> &'static str {
        "aws_iam_role_policy"
    }

    fn fields(&self) -> &'static [Field] {
        POLICY_FIELDS
    }

    async fn read(
        &self,
        _ctx: &Context,
        requests: &[ReadRequest],
    ) -> Result<Vec<Option<Live>>, KindError> {
        let key_of = |r: &ReadRequest| {
            let from_desired = desired_str(r, "role_name").zip(desired_str(r, "name"));
            let from_id =
                r.id.as_ref()
                    .and_then(|id| id.split_once(':'))
                    .map(|(a, b)| (a.to_string(), b.to_string()));
            from_desired.or(from_id)
        };
        read_each(requests, key_of, |(role, name)| async move { self.read_one(&role, &name).await })
            .await
    }

    async fn create(
        &self,
        _ctx: &Context,
        _address: &Address,
        desired: &Attrs,
    ) -> Result<Live, KindError> {
        // PutRolePolicy is idempotent: retrying it cannot make a second policy.
        self.put(desired).await
    }

    async fn update(
        &self,
        _ctx: &Context,
        _address: &Address,
        _current: &Live,
        desired: &Attrs,
    ) -> Result<Live, KindError> {
        self.put(desired).await
    }

    async fn delete(
        &self,
        _ctx: &Context,
        _address: &Address,
        current: &Live,
    ) -> Result<(), KindError> {
        let iam = &self.0.iam;
        let (role, name) = current
            .id
            .split_once(':')
            .ok_or_else(|| KindError::new(format!("bad role policy id {}", current.id)))?;
        match iam.delete_role_policy().role_name(role).policy_name(name).send().await {
            Ok(_) => Ok(()),
            Err(e) if has_code(&e, "NoSuchEntity") => Ok(()),
            Err(e) => Err(api_error("iam:DeleteRolePolicy", e)),
        }
    }
}
