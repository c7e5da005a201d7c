//! `aws_eks_pod_identity_association`: an IAM role for one Kubernetes service account. An
//! association is unique by namespace and service account within its cluster (found through
//! one listing of the cluster's associations per run); one made by a run that died is adopted
//! by its address tag. The role changes in place. Its id is `<cluster>:<association id>`.

use super::{NOT_FOUND, eks_map, id_parts, map_of, retag, retryable_if};
use crate::AwsClients;
use crate::error::{SdkResult, required};
use crate::lookup::{read_by_key, still_there};
use engine::prelude::*;
use engine::retry::read_back;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

#[derive(Attributes, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct EksPodIdentityAssociation {
    #[attr(replace)]
    pub cluster_name: String,
    #[attr(replace)]
    pub namespace: String,
    #[attr(replace)]
    pub service_account: String,
    #[attr(in_place)]
    pub role_arn: String,
    #[attr(in_place, tags)]
    pub tags: Tags,
    #[attr(computed)]
    pub arn: Option<String>,
}

pub(crate) struct EksPodIdentityAssociationKind(pub Arc<AwsClients>);

type FoundOne = KindResult<Option<Live<EksPodIdentityAssociation>>>;

impl EksPodIdentityAssociationKind {
    /// (association id, namespace, service account) of every association of `cluster`, read
    /// once per run.
    async fn list(
        &self,
        ctx: &Context,
        cluster: &str,
    ) -> KindResult<Arc<Vec<(String, String, String)>>> {
        ctx.memo(&format!("eks:pod-identities:{cluster}"), || async {
            let call = self.0.eks.list_pod_identity_associations().cluster_name(cluster);
            let pages = call.into_paginator().items().send().collect::<Result<Vec<_>, _>>().await;
            let pages = pages.or_absent("eks:ListPodIdentityAssociations", NOT_FOUND)?;
            let text = |v: Option<&str>| v.unwrap_or_default().to_string();
            Ok(pages
                .unwrap_or_default()
                .iter()
                .map(|a| (text(a.association_id()), text(a.namespace()), text(a.service_account())))
                .collect())
        })
        .await
    }

    async fn read_one(&self, cluster: &str, id: &str) -> FoundOne {
        let call = self.0.eks.describe_pod_identity_association().cluster_name(cluster);
        let out = call.association_id(id).send().await;
        let out = out.or_absent("eks:DescribePodIdentityAssociation", NOT_FOUND)?;
        let Some(a) = out.and_then(|o| o.association) else {
            return Ok(None);
        };
        let association = EksPodIdentityAssociation {
            cluster_name: cluster.to_string(),
            namespace: a.namespace().unwrap_or_default().to_string(),
            service_account: a.service_account().unwrap_or_default().to_string(),
            role_arn: a.role_arn().unwrap_or_default().to_string(),
            tags: map_of(a.tags()),
            arn: a.association_arn().map(str::to_string),
        };
        Ok(Some(Live::new(format!("{cluster}:{id}"), association)))
    }

    /// The association a request is about: by its recorded id, else by namespace and service
    /// account in the cluster's listing.
    async fn find(&self, ctx: &Context, r: &ReadRequest<EksPodIdentityAssociation>) -> FoundOne {
        if let Some(id) = &r.id {
            let [cluster, id] = id_parts(id, ':')?;
            return self.read_one(cluster, id).await;
        }
        let Some(d) = &r.desired else {
            return Ok(None);
        };
        let all = self.list(ctx, &d.cluster_name).await?;
        let wanted = |(_, ns, sa): &&(String, String, String)| {
            *ns == d.namespace && *sa == d.service_account
        };
        match all.iter().find(wanted) {
            Some((id, _, _)) => self.read_one(&d.cluster_name, id).await,
            None => Ok(None),
        }
    }
}

impl TypedKind for EksPodIdentityAssociationKind {
    type Attrs = EksPodIdentityAssociation;
    const NAME: &'static str = "aws_eks_pod_identity_association";

    async fn read(&self, ctx: &Context, requests: &Requests<Self>) -> Found<Self> {
        let find = |r: ReadRequest<_>| async move { self.find(ctx, &r).await };
        read_by_key(requests, |r| Some(r.clone()), find).await
    }

    async fn create(&self, ctx: &Context, desired: &Self::Attrs) -> Outcome<Self> {
        let cluster = &desired.cluster_name;
        let call = self
            .0
            .eks
            .create_pod_identity_association()
            .cluster_name(cluster)
            .namespace(&desired.namespace)
            .service_account(&desired.service_account)
            .role_arn(&desired.role_arn)
            .set_tags(Some(eks_map(&desired.tags)));
        // A role IAM has not propagated yet: nothing was created, tried again.
        let out = call.send().await.api("eks:CreatePodIdentityAssociation");
        let out = out.map_err(|e| retryable_if(e, "InvalidParameterException", &["role"]))?;
        ctx.forget(&format!("eks:pod-identities:{cluster}"));
        let id = out.association().and_then(|a| a.association_id());
        let id = required(id, "eks:CreatePodIdentityAssociation: associationId")?;
        read_back(&format!("pod identity association {id}"), || self.read_one(cluster, id)).await
    }

    async fn update(&self, _: &Context, update: Update<'_, Self>) -> Outcome<Self> {
        let Update { current, desired, changes } = update;
        let (eks, have) = (&self.0.eks, &current.attributes);
        let [cluster, id] = id_parts(&current.id, ':')?;
        if changes.role_arn {
            let call = eks.update_pod_identity_association().cluster_name(cluster);
            let call = call.association_id(id).role_arn(&desired.role_arn);
            call.send().await.api("eks:UpdatePodIdentityAssociation")?;
        }
        if changes.tags {
            retag(eks, have.arn.as_deref(), &have.tags, &desired.tags).await?;
        }
        still_there(&format!("pod identity association {id}"), self.read_one(cluster, id).await?)
    }

    async fn delete(&self, _: &Context, current: &LiveOf<Self>) -> KindResult<()> {
        let [cluster, id] = id_parts(&current.id, ':')?;
        let call = self.0.eks.delete_pod_identity_association().cluster_name(cluster);
        let call = call.association_id(id);
        call.send().await.or_gone("eks:DeletePodIdentityAssociation", NOT_FOUND)
    }
}
