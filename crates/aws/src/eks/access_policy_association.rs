//! `aws_eks_access_policy_association`: an EKS access policy for a principal, cluster-wide.
//! It is identified by cluster, principal and policy (the id joins them with `#`, which ARNs do
//! not contain); it has no tags, and associating it again is harmless.

use super::{NOT_FOUND, id_parts, request_key};
use crate::AwsClients;
use crate::error::SdkResult;
use crate::lookup::{ours_by_value, read_each};
use aws_sdk_eks::types::{AccessScope, AccessScopeType};
use engine::prelude::*;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

#[derive(Attributes, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct EksAccessPolicyAssociation {
    #[attr(replace)]
    pub cluster_name: String,
    #[attr(replace)]
    pub principal_arn: String,
    #[attr(replace)]
    pub policy_arn: String,
    /// The access scope's type: `cluster` (or `namespace`).
    #[attr(replace)]
    pub scope: String,
}

pub(crate) struct EksAccessPolicyAssociationKind(pub Arc<AwsClients>);

impl EksAccessPolicyAssociationKind {
    /// The policies associated with a principal (policy ARN, scope type), read once per run
    /// and principal.
    async fn associated(
        &self,
        ctx: &Context,
        cluster: &str,
        principal: &str,
    ) -> KindResult<Arc<Vec<(String, String)>>> {
        ctx.memo(&format!("eks:access-policies:{cluster}#{principal}"), || async {
            let call = self.0.eks.list_associated_access_policies().cluster_name(cluster);
            let out = call.principal_arn(principal).send().await;
            let out = out.or_absent("eks:ListAssociatedAccessPolicies", NOT_FOUND)?;
            let policies = out.as_ref().map_or(&[][..], |o| o.associated_access_policies());
            let scope = |p: &aws_sdk_eks::types::AssociatedAccessPolicy| {
                p.access_scope().and_then(|s| s.r#type()).map_or("", |t| t.as_str()).to_string()
            };
            Ok(policies
                .iter()
                .map(|p| (p.policy_arn().unwrap_or_default().to_string(), scope(p)))
                .collect())
        })
        .await
    }
}

fn association(a: EksAccessPolicyAssociation) -> Live<EksAccessPolicyAssociation> {
    Live::new(format!("{}#{}#{}", a.cluster_name, a.principal_arn, a.policy_arn), a)
}

impl TypedKind for EksAccessPolicyAssociationKind {
    type Attrs = EksAccessPolicyAssociation;
    const NAME: &'static str = "aws_eks_access_policy_association";

    async fn read(&self, ctx: &Context, requests: &Requests<Self>) -> Found<Self> {
        let key_of = |r: &ReadRequest<EksAccessPolicyAssociation>| {
            request_key(r, '#', |d| [&d.cluster_name, &d.principal_arn, &d.policy_arn])
        };
        let found = read_each(requests, key_of, |[cluster, principal, policy]| async move {
            let associated = self.associated(ctx, &cluster, &principal).await?;
            let scope = associated.iter().find(|(p, _)| *p == policy).map(|(_, s)| s.clone());
            let found = scope.map(|scope| EksAccessPolicyAssociation {
                cluster_name: cluster,
                principal_arn: principal,
                policy_arn: policy,
                scope,
            });
            Ok(found.map(association))
        })
        .await?;
        // Untagged: ours when recorded, or when it already is what the spec wants.
        Ok(requests.iter().zip(found).map(|(r, l)| ours_by_value(r, l, PartialEq::eq)).collect())
    }

    async fn create(&self, ctx: &Context, desired: &Self::Attrs) -> Outcome<Self> {
        let (cluster, principal) = (&desired.cluster_name, &desired.principal_arn);
        let scope = AccessScope::builder().r#type(AccessScopeType::from(desired.scope.as_str()));
        let call = self.0.eks.associate_access_policy().cluster_name(cluster);
        let call = call.principal_arn(principal).policy_arn(&desired.policy_arn);
        call.access_scope(scope.build()).send().await.api("eks:AssociateAccessPolicy")?;
        ctx.forget(&format!("eks:access-policies:{cluster}#{principal}"));
        Ok(association(desired.clone()))
    }

    async fn delete(&self, _: &Context, current: &LiveOf<Self>) -> KindResult<()> {
        let [cluster, principal, policy] = id_parts(&current.id, '#')?;
        let call = self.0.eks.disassociate_access_policy().cluster_name(cluster);
        let call = call.principal_arn(principal).policy_arn(policy);
        call.send().await.or_gone("eks:DisassociateAccessPolicy", NOT_FOUND)
    }
}
