//! KMS kinds: keys (multi-region primaries too), their replicas in the secondary region,
//! aliases; and the calls the key and replica kinds share.

mod alias;
mod key;
mod replica_key;

pub(crate) fn kinds(
    shared: &std::sync::Arc<crate::AwsClients>,
) -> Vec<std::sync::Arc<dyn engine::Kind>> {
    vec![
        std::sync::Arc::new(key::KmsKey(shared.clone())),
        std::sync::Arc::new(replica_key::KmsReplicaKey(shared.clone())),
        std::sync::Arc::new(alias::KmsAlias(shared.clone())),
    ]
}

use crate::error::{api_error, has_code};
use crate::lookup_json::str_attr;
use aws_sdk_kms::types::{KeyMetadata, KeyState, Tag};
use engine::{Attrs, KindError};
use serde_json::Value as Json;

/// The key's metadata, or `None` when it does not exist or is being deleted.
pub(crate) async fn describe(
    kms: &aws_sdk_kms::Client,
    key_id: &str,
) -> Result<Option<KeyMetadata>, KindError> {
    match kms.describe_key().key_id(key_id).send().await {
        Ok(out) => Ok(out.key_metadata.filter(|m| !is_going(m))),
        Err(e) if has_code(&e, "NotFoundException") => Ok(None),
        Err(e) => Err(api_error("kms:DescribeKey", e)),
    }
}

/// A key scheduled for deletion is as good as gone: it is never adopted nor updated.
pub(crate) fn is_going(m: &KeyMetadata) -> bool {
    matches!(m.key_state(), Some(KeyState::PendingDeletion | KeyState::PendingReplicaDeletion))
}

/// The key's tags as an attribute value.
pub(crate) async fn tags(kms: &aws_sdk_kms::Client, key_id: &str) -> Result<Json, KindError> {
    let mut pairs: Vec<(String, String)> = Vec::new();
    let mut marker: Option<String> = None;
    loop {
        let out = kms
            .list_resource_tags()
            .key_id(key_id)
            .set_marker(marker.clone())
            .send()
            .await
            .map_err(|e| api_error("kms:ListResourceTags", e))?;
        pairs.extend(
            out.tags().iter().map(|t| (t.tag_key().to_string(), t.tag_value().to_string())),
        );
        match out.next_marker() {
            Some(m) if out.truncated() => marker = Some(m.to_string()),
            _ => break,
        }
    }
    Ok(crate::tags::to_json(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str()))))
}

/// The desired tags as KMS tags.
pub(crate) fn kms_tags(attrs: &Attrs) -> Result<Vec<Tag>, KindError> {
    crate::tags::build(attrs, |k, v| Tag::builder().tag_key(k).tag_value(v).build())
}

/// Brings the key's tags from `current` to `desired`.
pub(crate) async fn retag(
    kms: &aws_sdk_kms::Client,
    key_id: &str,
    current: &Attrs,
    desired: &Attrs,
) -> Result<(), KindError> {
    crate::tags::update(
        current,
        desired,
        |keys| async move {
            kms.untag_resource()
                .key_id(key_id)
                .set_tag_keys(Some(keys))
                .send()
                .await
                .map(|_| ())
                .map_err(|e| api_error("kms:UntagResource", e))
        },
        || async move {
            kms.tag_resource()
                .key_id(key_id)
                .set_tags(Some(kms_tags(desired)?))
                .send()
                .await
                .map(|_| ())
                .map_err(|e| api_error("kms:TagResource", e))
        },
    )
    .await
}

/// Sets the key's description when `desired` has another one than `current`.
pub(crate) async fn update_description(
    kms: &aws_sdk_kms::Client,
    key_id: &str,
    current: &Attrs,
    desired: &Attrs,
) -> Result<(), KindError> {
    if current.get("description") == desired.get("description") {
        return Ok(());
    }
    kms.update_key_description()
        .key_id(key_id)
        .description(str_attr(desired, "description")?)
        .send()
        .await
        .map(|_| ())
        .map_err(|e| api_error("kms:UpdateKeyDescription", e))
}

/// Turns the key's automatic rotation on or off.
pub(crate) async fn set_rotation(
    kms: &aws_sdk_kms::Client,
    key_id: &str,
    enabled: bool,
) -> Result<(), KindError> {
    if enabled {
        kms.enable_key_rotation()
            .key_id(key_id)
            .send()
            .await
            .map(|_| ())
            .map_err(|e| api_error("kms:EnableKeyRotation", e))
    } else {
        kms.disable_key_rotation()
            .key_id(key_id)
            .send()
            .await
            .map(|_| ())
            .map_err(|e| api_error("kms:DisableKeyRotation", e))
    }
}

/// Schedules the key's deletion after the longest waiting period KMS allows (30 days), so a
/// mistaken destroy of the seal key can still be cancelled.
pub(crate) async fn schedule_deletion(
    kms: &aws_sdk_kms::Client,
    key_id: &str,
) -> Result<(), KindError> {
    match kms.schedule_key_deletion().key_id(key_id).pending_window_in_days(30).send().await {
        Ok(_) => Ok(()),
        Err(e) if has_code(&e, "NotFoundException") => Ok(()),
        // Already pending deletion.
        Err(e) if has_code(&e, "KMSInvalidStateException") => Ok(()),
        Err(e) => Err(api_error("kms:ScheduleKeyDeletion", e)),
    }
}
