//! `aws_kms_replica_key`: the replica of a multi-region key in `[globals] secondary_region`.
//! A replica has its primary's key id, so it is found by that id in the other region; the
//! replica of our primary key is ours, it cannot be anyone else's.

use super::{KmsTags, describe, kms_tags, schedule_deletion, set_description, tags_of};
use crate::AwsClients;
use crate::error::SdkResult;
use crate::lookup::{read_each, still_there};
use crate::tagging::retag;
use engine::prelude::*;
use engine::retry::{read_back, settle};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

#[derive(Attributes, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct ReplicaKey {
    #[attr(replace)]
    pub primary_key_id: String,
    #[attr(replace)]
    pub region: String,
    #[attr(in_place)]
    pub description: String,
    #[attr(in_place, tags)]
    pub tags: Tags,
    #[attr(computed)]
    pub arn: Option<String>,
}

pub(crate) struct ReplicaKeyKind(pub Arc<AwsClients>);

impl ReplicaKeyKind {
    /// The KMS client of the secondary region, checked against the region asked for.
    fn kms(&self, region: Option<&str>) -> KindResult<&aws_sdk_kms::Client> {
        let client = self.0.kms_secondary.as_ref();
        let client = client
            .ok_or_else(|| KindError::new("a replica key needs `[globals] secondary_region`"))?;
        match (region, self.0.secondary_region.as_deref()) {
            (Some(want), Some(have)) if want != have => Err(KindError::new(format!(
                "replica region {want} is not the spec's secondary region {have}"
            ))),
            _ => Ok(client),
        }
    }

    async fn read_one(&self, key_id: &str) -> KindResult<Option<Live<ReplicaKey>>> {
        let kms = self.kms(None)?;
        let Some(meta) = describe(kms, key_id).await? else { return Ok(None) };
        let replica = ReplicaKey {
            primary_key_id: meta.key_id().to_string(),
            region: self.0.secondary_region.clone().unwrap_or_default(),
            description: meta.description().unwrap_or_default().to_string(),
            tags: tags_of(kms, meta.key_id()).await?,
            arn: meta.arn().map(str::to_string),
        };
        Ok(Some(Live::new(meta.key_id(), replica)))
    }
}

impl TypedKind for ReplicaKeyKind {
    type Attrs = ReplicaKey;
    const NAME: &'static str = "aws_kms_replica_key";

    async fn read(&self, _: &Context, requests: &Requests<Self>) -> Found<Self> {
        let id_of = |r: &ReadRequest<ReplicaKey>| {
            r.id.clone().or_else(|| r.desired.as_ref().map(|d| d.primary_key_id.clone()))
        };
        read_each(requests, id_of, |id| async move { self.read_one(&id).await }).await
    }

    async fn create(&self, _: &Context, desired: &Self::Attrs) -> Outcome<Self> {
        let (primary, region) = (desired.primary_key_id.as_str(), desired.region.as_str());
        let kms = self.kms(Some(region))?;
        let call = self.0.kms.replicate_key().key_id(primary).replica_region(region);
        let call = call.description(&desired.description);
        let call = call.set_tags(Some(kms_tags(&desired.tags)?));
        call.send().await.api("kms:ReplicateKey")?;
        let what = format!("replica of {primary} in {region}");
        let found = read_back(&what, || self.read_one(primary)).await?;
        // The replica may come with its primary's description and tags: give it its own.
        settle(|| set_description(kms, primary, &desired.description)).await?;
        let (api, have) = (KmsTags(kms), &found.attributes.tags);
        settle(|| retag(&api, primary, have, &desired.tags)).await?;
        read_back(&what, || self.read_one(primary)).await
    }

    async fn update(&self, _: &Context, update: Update<'_, Self>) -> Outcome<Self> {
        let Update { current, desired, changes } = update;
        let (kms, id) = (self.kms(None)?, current.id.as_str());
        if changes.description {
            set_description(kms, id, &desired.description).await?;
        }
        if changes.tags {
            retag(&KmsTags(kms), id, &current.attributes.tags, &desired.tags).await?;
        }
        still_there(&format!("replica key {id}"), self.read_one(id).await?)
    }

    async fn delete(&self, _: &Context, current: &LiveOf<Self>) -> KindResult<()> {
        schedule_deletion(self.kms(None)?, &current.id).await
    }
}
