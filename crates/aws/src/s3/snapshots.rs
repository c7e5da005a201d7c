//! Raft snapshots in the snapshot bucket: find the newest under a prefix and download it.

use crate::clients::AwsClients;
use crate::error::SdkResult;
use engine::KindError;

/// One snapshot object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    pub key: String,
    pub size: i64,
    /// Last modification, seconds since the epoch.
    pub last_modified: i64,
}

/// The newest object under `prefix` in `bucket` (latest modification, then greatest key), or
/// `None` when there is none.
#[tracing::instrument(skip(clients))]
pub async fn newest(
    clients: &AwsClients,
    bucket: &str,
    prefix: &str,
) -> Result<Option<Snapshot>, KindError> {
    let objects: Vec<_> = clients
        .s3
        .list_objects_v2()
        .bucket(bucket)
        .prefix(prefix)
        .into_paginator()
        .send()
        .collect::<Result<Vec<_>, _>>()
        .await
        .api("s3:ListObjectsV2")?;
    let newest = objects
        .iter()
        .flat_map(|page| page.contents())
        .filter(|o| o.key().is_some_and(|k| !k.ends_with('/')))
        .map(|o| Snapshot {
            key: o.key().unwrap_or_default().to_string(),
            size: o.size().unwrap_or(0),
            last_modified: o.last_modified().map(|t| t.secs()).unwrap_or(0),
        })
        .max_by(|a, b| a.last_modified.cmp(&b.last_modified).then_with(|| a.key.cmp(&b.key)));
    Ok(newest)
}

/// The bytes of object `key` in `bucket`.
#[tracing::instrument(skip(clients))]
pub async fn download(clients: &AwsClients, bucket: &str, key: &str) -> Result<Vec<u8>, KindError> {
    let call = clients.s3.get_object().bucket(bucket).key(key);
    let Some(out) = call.send().await.or_absent("s3:GetObject", &["NoSuchKey"])? else {
        return Err(KindError::new(format!("s3:GetObject: no object {key} in {bucket}")));
    };
    let body = out
        .body
        .collect()
        .await
        .map_err(|e| KindError::retryable(format!("s3:GetObject: reading {key}: {e}")))?;
    Ok(body.into_bytes().to_vec())
}

/// Puts `data` in `bucket` as `key` (a snapshot taken before a destroy).
#[tracing::instrument(skip(clients, data))]
pub async fn upload(
    clients: &AwsClients,
    bucket: &str,
    key: &str,
    data: Vec<u8>,
) -> Result<(), KindError> {
    let body = aws_smithy_types::byte_stream::ByteStream::from(data);
    let call = clients.s3.put_object().bucket(bucket).key(key).body(body);
    call.send().await.api("s3:PutObject")?;
    Ok(())
}

/// The newest snapshot under `prefix` and its bytes, or `None` when the bucket holds none.
pub async fn download_newest(
    clients: &AwsClients,
    bucket: &str,
    prefix: &str,
) -> Result<Option<(Snapshot, Vec<u8>)>, KindError> {
    let Some(snapshot) = newest(clients, bucket, prefix).await? else {
        return Ok(None);
    };
    let bytes = download(clients, bucket, &snapshot.key).await?;
    Ok(Some((snapshot, bytes)))
}
