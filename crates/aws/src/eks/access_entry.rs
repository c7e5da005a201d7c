//! `aws_eks_access_entry` (an IAM principal's entry in a cluster with API authentication) and
//! `aws_eks_access_policy_association` (an EKS access policy for that principal, cluster-wide).
//! Entries are unique by principal within a cluster and adopted by their address tag; an
//! association is identified by cluster, principal and policy (it has no tags).

use super::cluster::{retag, tag_map};
use crate::AwsClients;
use crate::error::{api_error, has_code};
use crate::lookup_json::{live, ours_by_name, str_attr};
use async_trait::async_trait;
use aws_sdk_eks::types::{AccessScope, AccessScopeType};
use engine::{Address, Attrs, Context, Field, Kind, KindError, Live, ReadRequest};
use serde_json::{Value as Json, json};
use std::sync::Arc;

pub(crate) struct EksAccessEntry(pub Arc<AwsClients>);
pub(crate) struct EksAccessPolicyAssociation(pub Arc<AwsClients>);

const ENTRY_FIELDS: &[Field] = &[
    Field::replace("cluster_name"),
    Field::replace("principal_arn"),
    Field::replace("type"),
    Field::in_place("tags"),
    Field::computed("id"),
    Field::computed("arn"),
];

const ASSOCIATION_FIELDS: &[Field] = &[
    Field::replace("cluster_name"),
    Field::replace("principal_arn"),
    Field::replace("policy_arn"),
    Field::replace("scope"),
    Field::computed("id"),
];

/// Ids join cluster and principal (and policy) with `#`, which ARNs do not contain.
fn split_id(id: &str) -> Vec<&str> {
    id.split('#').collect()
}

fn field(r: &ReadRequest, name: &str) -> Option<String> {
    r.desired.as_ref().and_then(|d| d.get(name)).and_then(Json::as_str).map(str::to_string)
}

impl EksAccessEntry {
    fn eks(&self) -> Result<&aws_sdk_eks::Client, KindError> {
        Ok(&self.0.eks)
    }

    async fn read_one(&self, cluster: &str, principal: &str) -> Result<Option<Live>, KindError> {
        let out = match self
            .eks()?
            .describe_access_entry()
            .cluster_name(cluster)
            .principal_arn(principal)
            .send()
            .await
        {
            Ok(out) => out,
            Err(e) if has_code(&e, "ResourceNotFoundException") => return Ok(None),
            Err(e) => return Err(api_error("eks:DescribeAccessEntry", e)),
        };
        let Some(e) = out.access_entry() else {
            return Ok(None);
        };
        let mut tags: Vec<(&str, &str)> = e
            .tags()
            .map(|t| t.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect())
            .unwrap_or_default();
        tags.sort();
        Ok(Some(live(
            format!("{cluster}#{principal}"),
            [
                ("cluster_name", json!(cluster)),
                ("principal_arn", json!(principal)),
                ("type", json!(e.r#type())),
                ("tags", crate::tags::to_json(tags)),
                ("arn", json!(e.access_entry_arn())),
            ],
        )))
    }
}

#[async_trait]
impl Kind for EksAccessEntry {
    fn name(&self) -> &'static str {
        "aws_eks_access_entry"
    }

    fn fields(&self) -> &'static [Field] {
        ENTRY_FIELDS
    }

    async fn read(
        &self,
        _ctx: &Context,
        requests: &[ReadRequest],
    ) -> Result<Vec<Option<Live>>, KindError> {
        let mut out = Vec::new();
        for r in requests {
            let key = match (field(r, "cluster_name"), field(r, "principal_arn")) {
                (Some(c), Some(p)) => Some((c, p)),
                _ => r.id.as_deref().map(split_id).and_then(|parts| match parts[..] {
                    [c, p] => Some((c.to_string(), p.to_string())),
                    _ => None,
                }),
            };
            out.push(match key {
                Some((c, p)) => ours_by_name(r, self.read_one(&c, &p).await?),
                None => None,
            });
        }
        Ok(out)
    }

    #[tracing::instrument(skip_all, fields(%address))]
    async fn create(
        &self,
        _ctx: &Context,
        address: &Address,
        desired: &Attrs,
    ) -> Result<Live, KindError> {
        let cluster = str_attr(desired, "cluster_name")?;
        let principal = str_attr(desired, "principal_arn")?;
        self.eks()?
            .create_access_entry()
            .cluster_name(cluster)
            .principal_arn(principal)
            .r#type(str_attr(desired, "type")?)
            .set_tags(Some(tag_map(desired)))
            .send()
            .await
            .map_err(|e| api_error("eks:CreateAccessEntry", e))?;
        crate::settle::read_back(&format!("access entry {principal}"), || {
            self.read_one(cluster, principal)
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
        let eks = self.eks()?;
        retag(eks, str_attr(&current.attributes, "arn")?, &current.attributes, desired).await?;
        let cluster = str_attr(desired, "cluster_name")?;
        let principal = str_attr(desired, "principal_arn")?;
        self.read_one(cluster, principal)
            .await?
            .ok_or_else(|| KindError::new(format!("access entry {principal} vanished")))
    }

    async fn delete(
        &self,
        _ctx: &Context,
        _address: &Address,
        current: &Live,
    ) -> Result<(), KindError> {
        let [cluster, principal] = split_id(&current.id)[..] else {
            return Err(KindError::new(format!("bad access entry id {}", current.id)));
        };
        crate::error::deleted(
            "eks:DeleteAccessEntry",
            self.eks()?
                .delete_access_entry()
                .cluster_name(cluster)
                .principal_arn(principal)
                .send()
                .await,
            &["ResourceNotFoundException"],
        )
    }
}

impl EksAccessPolicyAssociation {
    fn eks(&self) -> Result<&aws_sdk_eks::Client, KindError> {
        Ok(&self.0.eks)
    }

    /// The policies associated with a principal, read once per run and principal.
    async fn associated(
        &self,
        ctx: &Context,
        cluster: &str,
        principal: &str,
    ) -> Result<Arc<Vec<(String, String)>>, KindError> {
        ctx.memo(&format!("eks:access-policies:{cluster}#{principal}"), || async {
            let out = match self
                .eks()?
                .list_associated_access_policies()
                .cluster_name(cluster)
                .principal_arn(principal)
                .send()
                .await
            {
                Ok(out) => out,
                Err(e) if has_code(&e, "ResourceNotFoundException") => return Ok(vec![]),
                Err(e) => return Err(api_error("eks:ListAssociatedAccessPolicies", e)),
            };
            Ok(out
                .associated_access_policies()
                .iter()
                .map(|p| {
                    (
                        p.policy_arn().unwrap_or_default().to_string(),
                        p.access_scope()
                            .and_then(|s| s.r#type())
                            .map(|t| t.as_str().to_string())
                            .unwrap_or_default(),
                    )
                })
                .collect())
        })
        .await
    }

    fn to_live(cluster: &str, principal: &str, policy: &str, scope: &str) -> Live {
        live(
            format!("{cluster}#{principal}#{policy}"),
            [
                ("cluster_name", json!(cluster)),
                ("principal_arn", json!(principal)),
                ("policy_arn", json!(policy)),
                ("scope", json!(scope)),
            ],
        )
    }
}

#[async_trait]
impl Kind for EksAccessPolicyAssociation {
    fn name(&self) -> &'static str {
        "aws_eks_access_policy_association"
    }

    fn fields(&self) -> &'static [Field] {
        ASSOCIATION_FIELDS
    }

    async fn read(
        &self,
        ctx: &Context,
        requests: &[ReadRequest],
    ) -> Result<Vec<Option<Live>>, KindError> {
        let mut out = Vec::new();
        for r in requests {
            let key =
                match (field(r, "cluster_name"), field(r, "principal_arn"), field(r, "policy_arn"))
                {
                    (Some(c), Some(p), Some(a)) => Some((c, p, a)),
                    _ => r.id.as_deref().map(split_id).and_then(|parts| match parts[..] {
                        [c, p, a] => Some((c.to_string(), p.to_string(), a.to_string())),
                        _ => None,
                    }),
                };
            let Some((cluster, principal, policy)) = key else {
                out.push(None);
                continue;
            };
            let found = self.associated(ctx, &cluster, &principal).await?;
            out.push(
                found
                    .iter()
                    .find(|(p, _)| *p == policy)
                    .map(|(p, scope)| Self::to_live(&cluster, &principal, p, scope)),
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
        let cluster = str_attr(desired, "cluster_name")?;
        let principal = str_attr(desired, "principal_arn")?;
        let policy = str_attr(desired, "policy_arn")?;
        let scope = str_attr(desired, "scope")?;
        // Associating again is harmless: it replaces the same association.
        self.eks()?
            .associate_access_policy()
            .cluster_name(cluster)
            .principal_arn(principal)
            .policy_arn(policy)
            .access_scope(AccessScope::builder().r#type(AccessScopeType::from(scope)).build())
            .send()
            .await
            .map_err(|e| api_error("eks:AssociateAccessPolicy", e))?;
        ctx.forget(&format!("eks:access-policies:{cluster}#{principal}"));
        Ok(Self::to_live(cluster, principal, policy, scope))
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
        _ctx: &Context,
        _address: &Address,
        current: &Live,
    ) -> Result<(), KindError> {
        let [cluster, principal, policy] = split_id(&current.id)[..] else {
            return Err(KindError::new(format!("bad association id {}", current.id)));
        };
        crate::error::deleted(
            "eks:DisassociateAccessPolicy",
            self.eks()?
                .disassociate_access_policy()
                .cluster_name(cluster)
                .principal_arn(principal)
                .policy_arn(policy)
                .send()
                .await,
            &["ResourceNotFoundException"],
        )
    }
}
