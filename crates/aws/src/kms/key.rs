//! `aws_kms_key`: a symmetric KMS key (optionally multi-region) with rotation on. Keys have no
//! name: a key is found by its recorded id, else by the engine's address tag (a scan of the
//! account's keys, only for keys not in state yet).

use super::{describe, kms_tags, retag, schedule_deletion, set_rotation, tags, update_description};
use crate::AwsClients;
use crate::error::api_error;
use crate::lookup_json::{address_tag, bool_attr, live, still_there, str_attr};
use crate::settle::{read_back, settle};
use async_trait::async_trait;
use aws_sdk_kms::types::{KeySpec, KeyUsageType};
use engine::{Address, Attrs, Context, Field, Kind, KindError, Live, ReadRequest};
use serde_json::json;
use std::sync::Arc;

pub(crate) struct KmsKey(pub Arc<AwsClients>);

const FIELDS: &[Field] = &[
    Field::in_place("description"),
    Field::replace("multi_region"),
    Field::replace("key_spec"),
    Field::replace("key_usage"),
    Field::in_place("enable_key_rotation"),
    Field::in_place("tags"),
    Field::computed("id"),
    Field::computed("arn"),
];

impl KmsKey {
    fn kms(&self) -> Result<&aws_sdk_kms::Client, KindError> {
        Ok(&self.0.kms)
    }

    /// The key as an attribute set, or `None` when it is gone.
    async fn read_one(&self, key_id: &str) -> Result<Option<Live>, KindError> {
        let kms = self.kms()?;
        let Some(meta) = describe(kms, key_id).await? else {
            return Ok(None);
        };
        let rotation = kms
            .get_key_rotation_status()
            .key_id(meta.key_id())
            .send()
            .await
            .map_err(|e| api_error("kms:GetKeyRotationStatus", e))?
            .key_rotation_enabled();
        Ok(Some(live(
            meta.key_id(),
            [
                ("description", json!(meta.description().unwrap_or_default())),
                ("multi_region", json!(meta.multi_region().unwrap_or(false))),
                ("key_spec", json!(meta.key_spec().map(|s| s.as_str()).unwrap_or_default())),
                ("key_usage", json!(meta.key_usage().map(|s| s.as_str()).unwrap_or_default())),
                ("enable_key_rotation", json!(rotation)),
                ("tags", tags(kms, meta.key_id()).await?),
                ("arn", json!(meta.arn().unwrap_or_default())),
            ],
        )))
    }

    /// Ids of live keys of this account carrying `address` as their address tag (once per run:
    /// the scan is shared by every key without a recorded id).
    async fn scan(&self, ctx: &Context) -> Result<Arc<Vec<(String, String)>>, KindError> {
        ctx.memo("kms:tagged-keys", || async {
            let kms = self.kms()?;
            let keys: Vec<_> = kms
                .list_keys()
                .into_paginator()
                .items()
                .send()
                .collect::<Result<_, _>>()
                .await
                .map_err(|e| api_error("kms:ListKeys", e))?;
            let mut out = Vec::new();
            for k in keys {
                let Some(id) = k.key_id() else { continue };
                let tags = match tags(kms, id).await {
                    Ok(t) => t,
                    // Keys of other services or without permission: not ours.
                    Err(_) => continue,
                };
                let l = live(id, [("tags", tags)]);
                if let Some(a) = address_tag(&l) {
                    out.push((id.to_string(), a.to_string()));
                }
            }
            Ok(out)
        })
        .await
    }
}

#[async_trait]
impl Kind for KmsKey {
    fn name(&self) -> &'static str {
        "aws_kms_key"
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
            let found = match &r.id {
                Some(id) => self.read_one(id).await?,
                None => None,
            };
            let found = match found {
                Some(l) => Some(l),
                None => {
                    let scan = self.scan(ctx).await?;
                    let mut adopted = None;
                    for (id, _) in scan.iter().filter(|(_, a)| a == r.address.as_str()) {
                        // The scan lists keys pending deletion too; read_one skips them.
                        if let Some(l) = self.read_one(id).await? {
                            adopted = Some(l);
                            break;
                        }
                    }
                    adopted
                }
            };
            out.push(found);
        }
        Ok(out)
    }

    async fn create(
        &self,
        _ctx: &Context,
        address: &Address,
        desired: &Attrs,
    ) -> Result<Live, KindError> {
        let kms = self.kms()?;
        let out = kms
            .create_key()
            .description(str_attr(desired, "description")?)
            .multi_region(bool_attr(desired, "multi_region"))
            .key_spec(KeySpec::from(str_attr(desired, "key_spec")?))
            .key_usage(KeyUsageType::from(str_attr(desired, "key_usage")?))
            .set_tags(Some(kms_tags(desired)?))
            .send()
            .await
            .map_err(|e| api_error("kms:CreateKey", e))?;
        let id = out
            .key_metadata()
            .map(|m| m.key_id().to_string())
            .ok_or_else(|| KindError::new("kms:CreateKey returned no key id"))?;
        tracing::info!(%address, key_id = %id, "created KMS key");
        if bool_attr(desired, "enable_key_rotation") {
            settle(|| set_rotation(kms, &id, true)).await?;
        }
        read_back(&format!("KMS key {id}"), || self.read_one(&id)).await
    }

    async fn update(
        &self,
        _ctx: &Context,
        _address: &Address,
        current: &Live,
        desired: &Attrs,
    ) -> Result<Live, KindError> {
        let kms = self.kms()?;
        let id = &current.id;
        update_description(kms, id, &current.attributes, desired).await?;
        if current.attributes.get("enable_key_rotation") != desired.get("enable_key_rotation") {
            set_rotation(kms, id, bool_attr(desired, "enable_key_rotation")).await?;
        }
        retag(kms, id, &current.attributes, desired).await?;
        still_there(&format!("KMS key {id}"), self.read_one(id).await?)
    }

    async fn delete(
        &self,
        _ctx: &Context,
        _address: &Address,
        current: &Live,
    ) -> Result<(), KindError> {
        schedule_deletion(self.kms()?, &current.id).await
    }
}
