//! `aws_eks_access_entry`: an IAM principal's entry in a cluster with API authentication.
//! Entries are unique by principal within a cluster and adopted by their address tag. The id is
//! `cluster#principal` (ARNs do not contain `#`).

use super::{NOT_FOUND, eks_map, id_parts, map_of, request_key, retag};
use crate::AwsClients;
use crate::error::SdkResult;
use crate::lookup::{read_by_key, still_there};
use engine::prelude::*;
use engine::retry::read_back;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

#[derive(Attributes, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct EksAccessEntry {
    #[attr(replace)]
    pub cluster_name: String,
    #[attr(replace)]
    pub principal_arn: String,
    /// `STANDARD`, `EC2_LINUX`, ...
    #[attr(replace)]
    #[serde(rename = "type")]
    pub entry_type: String,
    #[attr(in_place, tags)]
    pub tags: Tags,
    #[attr(computed)]
    pub arn: Option<String>,
}

pub(crate) struct EksAccessEntryKind(pub Arc<AwsClients>);

impl EksAccessEntryKind {
    async fn read_one(
        &self,
        cluster: &str,
        principal: &str,
    ) -> KindResult<Option<Live<EksAccessEntry>>> {
        let call = self.0.eks.describe_access_entry().cluster_name(cluster);
        let out = call.principal_arn(principal).send().await;
        let out = out.or_absent("eks:DescribeAccessEntry", NOT_FOUND)?;
        let Some(e) = out.and_then(|o| o.access_entry) else {
            return Ok(None);
        };
        let entry = EksAccessEntry {
            cluster_name: cluster.to_string(),
            principal_arn: principal.to_string(),
            entry_type: e.r#type().unwrap_or_default().to_string(),
            tags: map_of(e.tags()),
            arn: e.access_entry_arn().map(str::to_string),
        };
        Ok(Some(Live::new(format!("{cluster}#{principal}"), entry)))
    }
}

impl TypedKind for EksAccessEntryKind {
    type Attrs = EksAccessEntry;
    const NAME: &'static str = "aws_eks_access_entry";

    async fn read(&self, _: &Context, requests: &Requests<Self>) -> Found<Self> {
        let key_of = |r: &ReadRequest<EksAccessEntry>| {
            request_key(r, '#', |d| [&d.cluster_name, &d.principal_arn])
        };
        read_by_key(requests, key_of, |[c, p]| async move { self.read_one(&c, &p).await }).await
    }

    async fn create(&self, _: &Context, desired: &Self::Attrs) -> Outcome<Self> {
        let (cluster, principal) = (&desired.cluster_name, &desired.principal_arn);
        let call = self.0.eks.create_access_entry().cluster_name(cluster).principal_arn(principal);
        let call = call.r#type(&desired.entry_type).set_tags(Some(eks_map(&desired.tags)));
        call.send().await.api("eks:CreateAccessEntry")?;
        read_back(&format!("access entry {principal}"), || self.read_one(cluster, principal)).await
    }

    async fn update(&self, _: &Context, update: Update<'_, Self>) -> Outcome<Self> {
        let Update { current, desired, .. } = update;
        // Only the tags change in place.
        let have = &current.attributes;
        retag(&self.0.eks, have.arn.as_deref(), &have.tags, &desired.tags).await?;
        let found = self.read_one(&have.cluster_name, &have.principal_arn).await?;
        still_there(&format!("access entry {}", have.principal_arn), found)
    }

    async fn delete(&self, _: &Context, current: &LiveOf<Self>) -> KindResult<()> {
        let [cluster, principal] = id_parts(&current.id, '#')?;
        let call = self.0.eks.delete_access_entry().cluster_name(cluster).principal_arn(principal);
        call.send().await.or_gone("eks:DeleteAccessEntry", NOT_FOUND)
    }
}
