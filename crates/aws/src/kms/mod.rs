//! KMS kinds: keys (multi-region primaries too), their replicas in the secondary region,
//! aliases; and the calls the key and replica kinds share (KMS tags by key id).

pub(crate) mod alias;
pub(crate) mod key;
pub(crate) mod replica_key;

use crate::error::{Listing, SdkResult, built};
use crate::tagging::{TagApi, from_pairs};
use async_trait::async_trait;
use aws_sdk_kms::Client;
use aws_sdk_kms::types::{KeyMetadata, KeyState, Tag};
use engine::{KindError, KindResult, Tags};

/// The key's metadata, or `None` when it does not exist or is being deleted (a key scheduled
/// for deletion is as good as gone: it is never adopted nor updated).
pub(crate) async fn describe(kms: &Client, key_id: &str) -> KindResult<Option<KeyMetadata>> {
    let call = kms.describe_key().key_id(key_id);
    let out = call.send().await.or_absent("kms:DescribeKey", &["NotFoundException"])?;
    let going = |m: &KeyMetadata| {
        matches!(m.key_state(), Some(KeyState::PendingDeletion | KeyState::PendingReplicaDeletion))
    };
    Ok(out.and_then(|o| o.key_metadata).filter(|m| !going(m)))
}

/// The key's tags.
pub(crate) async fn tags_of(kms: &Client, key_id: &str) -> KindResult<Tags> {
    let pages = kms.list_resource_tags().key_id(key_id).into_paginator().items().send();
    let tags: Vec<Tag> = pages.all("kms:ListResourceTags").await?;
    Ok(from_pairs(tags.iter().map(|t| (t.tag_key(), t.tag_value()))))
}

/// Tags as KMS tags.
pub(crate) fn kms_tags(tags: &Tags) -> KindResult<Vec<Tag>> {
    tags.iter().map(|(k, v)| built(Tag::builder().tag_key(k).tag_value(v).build())).collect()
}

/// KMS's tagging calls (by key id).
pub(crate) struct KmsTags<'a>(pub &'a Client);

#[async_trait]
impl TagApi for KmsTags<'_> {
    async fn untag(&self, key_id: &str, keys: Vec<String>) -> Result<(), KindError> {
        let call = self.0.untag_resource().key_id(key_id).set_tag_keys(Some(keys));
        call.send().await.api("kms:UntagResource").map(|_| ())
    }

    async fn tag(&self, key_id: &str, tags: Tags) -> Result<(), KindError> {
        let call = self.0.tag_resource().key_id(key_id).set_tags(Some(kms_tags(&tags)?));
        call.send().await.api("kms:TagResource").map(|_| ())
    }
}

/// Sets the key's description.
pub(crate) async fn set_description(kms: &Client, key_id: &str, text: &str) -> KindResult<()> {
    let call = kms.update_key_description().key_id(key_id).description(text);
    call.send().await.api("kms:UpdateKeyDescription").map(|_| ())
}

/// Schedules the key's deletion after the longest waiting period KMS allows (30 days), so a
/// mistaken destroy of the seal key can still be cancelled. A key already pending deletion
/// (`KMSInvalidStateException`) counts as done.
pub(crate) async fn schedule_deletion(kms: &Client, key_id: &str) -> KindResult<()> {
    let call = kms.schedule_key_deletion().key_id(key_id).pending_window_in_days(30);
    let gone = ["NotFoundException", "KMSInvalidStateException"];
    call.send().await.or_gone("kms:ScheduleKeyDeletion", &gone)
}
