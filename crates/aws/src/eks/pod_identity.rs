//! `aws_eks_pod_identity_association`: an IAM role for one Kubernetes service account. An
//! association is unique by namespace and service account within its cluster; one made by a
//! run that died is adopted by its address tag. The role changes in place.

use super::cluster::{retag, tag_map};
use crate::AwsClients;
use crate::error::{api_error, has_code};
use crate::lookup_json::{live, ours_by_name, str_attr};
use async_trait::async_trait;
use engine::{Address, Attrs, Context, Field, Kind, KindError, Live, ReadRequest};
use serde_json::json;
use std::sync::Arc;

pub(crate) struct EksPodIdentityAssociation(pub Arc<AwsClients>);

const FIELDS: &[Field] = &[
    Field::replace("cluster_name"),
    Field::replace("namespace"),
    Field::replace("service_account"),
    Field::in_place("role_arn"),
    Field::in_place("tags"),
    Field::computed("id"),
    Field::computed("arn"),
];

impl EksPodIdentityAssociation {
    fn eks(&self) -> Result<&aws_sdk_eks::Client, KindError> {
        Ok(&self.0.eks)
    }

    /// (association id, namespace, service account) of every association of `cluster`, read
    /// once per run.
    async fn list(
        &self,
        ctx: &Context,
        cluster: &str,
    ) -> Result<Arc<Vec<(String, String, String)>>, KindError> {
        ctx.memo(&format!("eks:pod-identities:{cluster}"), || async {
            let pages: Vec<_> = match self
                .eks()?
                .list_pod_identity_associations()
                .cluster_name(cluster)
                .into_paginator()
                .send()
                .collect::<Vec<_>>()
                .await
                .into_iter()
                .collect::<Result<Vec<_>, _>>()
            {
                Ok(p) => p,
                Err(e) if has_code(&e, "ResourceNotFoundException") => return Ok(vec![]),
                Err(e) => return Err(api_error("eks:ListPodIdentityAssociations", e)),
            };
            Ok(pages
                .iter()
                .flat_map(|p| p.associations())
                .map(|a| {
                    (
                        a.association_id().unwrap_or_default().to_string(),
                        a.namespace().unwrap_or_default().to_string(),
                        a.service_account().unwrap_or_default().to_string(),
                    )
                })
                .collect())
        })
        .await
    }

    async fn read_one(&self, cluster: &str, id: &str) -> Result<Option<Live>, KindError> {
        let out = match self
            .eks()?
            .describe_pod_identity_association()
            .cluster_name(cluster)
            .association_id(id)
            .send()
            .await
        {
            Ok(out) => out,
            Err(e) if has_code(&e, "ResourceNotFoundException") => return Ok(None),
            Err(e) => return Err(api_error("eks:DescribePodIdentityAssociation", e)),
        };
        let Some(a) = out.association() else {
            return Ok(None);
        };
        let mut tags: Vec<(&str, &str)> = a
            .tags()
            .map(|t| t.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect())
            .unwrap_or_default();
        tags.sort();
        Ok(Some(live(
            format!("{cluster}:{id}"),
            [
                ("cluster_name", json!(cluster)),
                ("namespace", json!(a.namespace())),
                ("service_account", json!(a.service_account())),
                ("role_arn", json!(a.role_arn())),
                ("tags", crate::tags::to_json(tags)),
                ("arn", json!(a.association_arn())),
            ],
        )))
    }
}

#[async_trait]
impl Kind for EksPodIdentityAssociation {
    fn name(&self) -> &'static str {
        "aws_eks_pod_identity_association"
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
            let recorded = r.id.as_deref().and_then(|id| id.split_once(':'));
            let desired = r.desired.as_ref().and_then(|d| {
                Some((
                    d.get("cluster_name")?.as_str()?,
                    d.get("namespace")?.as_str()?,
                    d.get("service_account")?.as_str()?,
                ))
            });
            let found = match (recorded, desired) {
                (Some((cluster, id)), _) => self.read_one(cluster, id).await?,
                (None, Some((cluster, ns, sa))) => {
                    let all = self.list(ctx, cluster).await?;
                    match all.iter().find(|(_, n, s)| n == ns && s == sa) {
                        Some((id, _, _)) => self.read_one(cluster, id).await?,
                        None => None,
                    }
                }
                (None, None) => None,
            };
            out.push(ours_by_name(r, found));
        }
        Ok(out)
    }

    #[tracing::instrument(skip_all, fields(%address))]
    async fn create(
        &self,
        ctx: &Context,
        address: &Address,
        desired: &Attrs,
    ) -> Result<Live, KindError> {
        let cluster = str_attr(desired, "cluster_name")?;
        let out = match self
            .eks()?
            .create_pod_identity_association()
            .cluster_name(cluster)
            .namespace(str_attr(desired, "namespace")?)
            .service_account(str_attr(desired, "service_account")?)
            .role_arn(str_attr(desired, "role_arn")?)
            .set_tags(Some(tag_map(desired)))
            .send()
            .await
        {
            Ok(out) => out,
            Err(e) => {
                let mut err = api_error("eks:CreatePodIdentityAssociation", e);
                // A role IAM has not propagated yet: nothing was created.
                err.retryable |= err.code.as_deref() == Some("InvalidParameterException")
                    && err.message.contains("role");
                return Err(err);
            }
        };
        ctx.forget(&format!("eks:pod-identities:{cluster}"));
        let id = out
            .association()
            .and_then(|a| a.association_id())
            .ok_or_else(|| KindError::new("eks:CreatePodIdentityAssociation returned no id"))?
            .to_string();
        crate::settle::read_back(&format!("pod identity association {id}"), || {
            self.read_one(cluster, &id)
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
        let (cluster, id) = current
            .id
            .split_once(':')
            .ok_or_else(|| KindError::new(format!("bad association id {}", current.id)))?;
        let have = &current.attributes;
        if have.get("role_arn") != desired.get("role_arn") {
            eks.update_pod_identity_association()
                .cluster_name(cluster)
                .association_id(id)
                .role_arn(str_attr(desired, "role_arn")?)
                .send()
                .await
                .map_err(|e| api_error("eks:UpdatePodIdentityAssociation", e))?;
        }
        if have.get("tags") != desired.get("tags") {
            retag(eks, str_attr(have, "arn")?, have, desired).await?;
        }
        self.read_one(cluster, id)
            .await?
            .ok_or_else(|| KindError::new(format!("pod identity association {id} vanished")))
    }

    async fn delete(
        &self,
        _ctx: &Context,
        _address: &Address,
        current: &Live,
    ) -> Result<(), KindError> {
        let (cluster, id) = current
            .id
            .split_once(':')
            .ok_or_else(|| KindError::new(format!("bad association id {}", current.id)))?;
        crate::error::deleted(
            "eks:DeletePodIdentityAssociation",
            self.eks()?
                .delete_pod_identity_association()
                .cluster_name(cluster)
                .association_id(id)
                .send()
                .await,
            &["ResourceNotFoundException"],
        )
    }
}
