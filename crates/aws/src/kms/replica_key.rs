//! `aws_kms_replica_key`: the replica of a multi-region key in `[globals] secondary_region`.
//! A replica has its primary's key id, so it is found by that id in the other region.

use super::{describe, kms_tags, retag, schedule_deletion, tags, update_description};
use crate::AwsClients;
use crate::error::api_error;
use crate::lookup_json::{desired_str, live, read_each, still_there, str_attr};
use crate::settle::{read_back, settle};
use async_trait::async_trait;
use engine::{Address, Attrs, Context, Field, Kind, KindError, Live, ReadRequest};
use serde_json::json;
use std::sync::Arc;

pub(crate) struct KmsReplicaKey(pub Arc<AwsClients>);

const FIELDS: &[Field] = &[
    Field::replace("primary_key_id"),
    Field::replace("region"),
    Field::in_place("description"),
    Field::in_place("tags"),
    Field::computed("id"),
    Field::computed("arn"),
];

impl KmsReplicaKey {
    /// The KMS client of the secondary region, checked against the region asked for.
    fn kms(&self, region: Option<&str>) -> Result<&aws_sdk_kms::Client, KindError> {
        let clients = &self.0;
        let client = clients
            .kms_secondary
            .as_ref()
            .ok_or_else(|| KindError::new("a replica key needs `[globals] secondary_region`"))?;
        match (region, clients.secondary_region.as_deref()) {
            (Some(want), Some(have)) if want != have => Err(KindError::new(format!(
                "replica region {want} is not the spec's secondary region {have}"
            ))),
            _ => Ok(client),
        }
    }

    async fn read_one(&self, key_id: &str) -> Result<Option<Live>, KindError> {
        let kms = self.kms(None)?;
        let Some(meta) = describe(kms, key_id).await? else {
            return Ok(None);
        };
        let region = self.0.secondary_region.clone().unwrap_or_default();
        Ok(Some(live(
            meta.key_id(),
            [
                ("primary_key_id", json!(meta.key_id())),
                ("region", json!(region)),
                ("description", json!(meta.description().unwrap_or_default())),
                ("tags", tags(kms, meta.key_id()).await?),
                ("arn", json!(meta.arn().unwrap_or_default())),
            ],
        )))
    }
}

#[async_trait]
impl Kind for KmsReplicaKey {
    fn name(&self) -> &'static str {
        "aws_kms_replica_key"
    }

    fn fields(&self) -> &'static [Field] {
        FIELDS
    }

    async fn read(
        &self,
        _ctx: &Context,
        requests: &[ReadRequest],
    ) -> Result<Vec<Option<Live>>, KindError> {
        // The replica of our primary key is ours: it cannot be anyone else's.
        let id_of = |r: &ReadRequest| r.id.clone().or_else(|| desired_str(r, "primary_key_id"));
        read_each(requests, id_of, |id| async move { self.read_one(&id).await }).await
    }

    async fn create(
        &self,
        _ctx: &Context,
        address: &Address,
        desired: &Attrs,
    ) -> Result<Live, KindError> {
        let region = str_attr(desired, "region")?;
        let kms = self.kms(Some(region))?;
        let primary = str_attr(desired, "primary_key_id")?;
        self.0
            .kms
            .replicate_key()
            .key_id(primary)
            .replica_region(region)
            .description(str_attr(desired, "description")?)
            .set_tags(Some(kms_tags(desired)?))
            .send()
            .await
            .map_err(|e| api_error("kms:ReplicateKey", e))?;
        tracing::info!(%address, key_id = %primary, region, "replicated KMS key");
        let found =
            read_back(&format!("replica of {primary} in {region}"), || self.read_one(primary))
                .await?;
        // Make sure the replica carries its own description and ownership tags.
        if found.attributes.get("tags") != desired.get("tags")
            || found.attributes.get("description") != desired.get("description")
        {
            settle(|| self.converge(kms, &found, desired)).await?;
            return read_back(&format!("replica of {primary} in {region}"), || {
                self.read_one(primary)
            })
            .await;
        }
        Ok(found)
    }

    async fn update(
        &self,
        _ctx: &Context,
        _address: &Address,
        current: &Live,
        desired: &Attrs,
    ) -> Result<Live, KindError> {
        let kms = self.kms(None)?;
        self.converge(kms, current, desired).await?;
        let found = self.read_one(&current.id).await?;
        still_there(&format!("replica key {}", current.id), found)
    }

    async fn delete(
        &self,
        _ctx: &Context,
        _address: &Address,
        current: &Live,
    ) -> Result<(), KindError> {
        schedule_deletion(self.kms(None)?, &current.id).await
    }
}

impl KmsReplicaKey {
    /// Sets the in-place fields (description, tags) that differ.
    async fn converge(
        &self,
        kms: &aws_sdk_kms::Client,
        current: &Live,
        desired: &Attrs,
    ) -> Result<(), KindError> {
        update_description(kms, &current.id, &current.attributes, desired).await?;
        retag(kms, &current.id, &current.attributes, desired).await
    }
}
