//! `aws_kms_key`: a symmetric KMS key (optionally multi-region) with rotation on. Keys have no
//! name: a key is found by its recorded id, else by the engine's address tag (a scan of the
//! account's keys, once per run, only for keys not in state yet).

use super::{KmsTags, describe, kms_tags, schedule_deletion, set_description, tags_of};
use crate::AwsClients;
use crate::error::{Listing, SdkResult, required};
use crate::lookup::still_there;
use crate::tagging::retag;
use aws_sdk_kms::types::{KeySpec, KeyUsageType};
use engine::TAG_ADDRESS;
use engine::prelude::*;
use engine::retry::{read_back, settle};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

#[derive(Attributes, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct Key {
    #[attr(in_place)]
    pub description: String,
    #[attr(replace)]
    pub multi_region: bool,
    #[attr(replace)]
    pub key_spec: String,
    #[attr(replace)]
    pub key_usage: String,
    #[attr(in_place)]
    pub enable_key_rotation: bool,
    #[attr(in_place, tags)]
    pub tags: Tags,
    #[attr(computed)]
    pub arn: Option<String>,
}

pub(crate) struct KeyKind(pub Arc<AwsClients>);

impl KeyKind {
    /// The key, or `None` when it is gone (or going).
    async fn read_one(&self, key_id: &str) -> KindResult<Option<Live<Key>>> {
        let kms = &self.0.kms;
        let Some(meta) = describe(kms, key_id).await? else { return Ok(None) };
        let id = meta.key_id();
        let call = kms.get_key_rotation_status().key_id(id);
        let rotation = call.send().await.api("kms:GetKeyRotationStatus")?;
        let key = Key {
            description: meta.description().unwrap_or_default().to_string(),
            multi_region: meta.multi_region().unwrap_or(false),
            key_spec: meta.key_spec().map(|s| s.as_str().to_string()).unwrap_or_default(),
            key_usage: meta.key_usage().map(|u| u.as_str().to_string()).unwrap_or_default(),
            enable_key_rotation: rotation.key_rotation_enabled(),
            tags: tags_of(kms, id).await?,
            arn: meta.arn().map(str::to_string),
        };
        Ok(Some(Live::new(id, key)))
    }

    /// (key id, address tag) of the account's keys that carry one.
    async fn scan(&self, ctx: &Context) -> KindResult<Arc<Vec<(String, String)>>> {
        ctx.memo("kms:tagged-keys", || async {
            let kms = &self.0.kms;
            let pages = kms.list_keys().into_paginator().items().send();
            let keys: Vec<_> = pages.all("kms:ListKeys").await?;
            let mut out = Vec::new();
            for id in keys.iter().filter_map(|k| k.key_id()) {
                // Keys of other services, or without permission to read their tags: not ours.
                let Ok(tags) = tags_of(kms, id).await else { continue };
                if let Some(address) = tags.get(TAG_ADDRESS) {
                    out.push((id.to_string(), address.clone()));
                }
            }
            Ok(out)
        })
        .await
    }

    /// The key of a request: its recorded one, else a live one carrying its address tag.
    async fn find(&self, ctx: &Context, r: &ReadRequest<Key>) -> KindResult<Option<Live<Key>>> {
        if let Some(id) = &r.id
            && let Some(found) = self.read_one(id).await?
        {
            return Ok(Some(found));
        }
        let scan = self.scan(ctx).await?;
        for (id, _) in scan.iter().filter(|(_, a)| a == r.address.as_str()) {
            // The scan lists keys pending deletion too; read_one skips them.
            if let Some(found) = self.read_one(id).await?
                && engine::ownership::adoptable(r, &found.attributes)
            {
                return Ok(Some(found));
            }
        }
        Ok(None)
    }

    async fn set_rotation(&self, key_id: &str, enabled: bool) -> KindResult<()> {
        let kms = &self.0.kms;
        if enabled {
            let call = kms.enable_key_rotation().key_id(key_id);
            call.send().await.api("kms:EnableKeyRotation").map(|_| ())
        } else {
            let call = kms.disable_key_rotation().key_id(key_id);
            call.send().await.api("kms:DisableKeyRotation").map(|_| ())
        }
    }
}

impl TypedKind for KeyKind {
    type Attrs = Key;
    const NAME: &'static str = "aws_kms_key";

    async fn read(&self, ctx: &Context, requests: &Requests<Self>) -> Found<Self> {
        futures::future::try_join_all(requests.iter().map(|r| engine::bounded(self.find(ctx, r))))
            .await
    }

    async fn create(&self, _: &Context, desired: &Self::Attrs) -> Outcome<Self> {
        let call = self.0.kms.create_key().description(&desired.description);
        let call = call.multi_region(desired.multi_region).set_tags(Some(kms_tags(&desired.tags)?));
        let call = call.key_spec(KeySpec::from(desired.key_spec.as_str()));
        let call = call.key_usage(KeyUsageType::from(desired.key_usage.as_str()));
        let out = call.send().await.api("kms:CreateKey")?;
        let id = required(out.key_metadata().map(|m| m.key_id()), "kms:CreateKey: KeyId")?;
        if desired.enable_key_rotation {
            settle(|| self.set_rotation(id, true)).await?;
        }
        read_back(&format!("KMS key {id}"), || self.read_one(id)).await
    }

    async fn update(&self, _: &Context, update: Update<'_, Self>) -> Outcome<Self> {
        let Update { current, desired, changes } = update;
        let (kms, id) = (&self.0.kms, current.id.as_str());
        if changes.description {
            set_description(kms, id, &desired.description).await?;
        }
        if changes.enable_key_rotation {
            self.set_rotation(id, desired.enable_key_rotation).await?;
        }
        if changes.tags {
            retag(&KmsTags(kms), id, &current.attributes.tags, &desired.tags).await?;
        }
        still_there(&format!("KMS key {id}"), self.read_one(id).await?)
    }

    async fn delete(&self, _: &Context, current: &LiveOf<Self>) -> KindResult<()> {
        schedule_deletion(&self.0.kms, &current.id).await
    }
}
