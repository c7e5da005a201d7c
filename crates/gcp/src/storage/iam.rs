//! A bucket's IAM policy through the JSON API (`b/<bucket>/iam`), for `gcp_iam_member` on
//! `projects/_/buckets/<bucket>` (Google's name for a bucket as an IAM resource).

use super::bucket::failure;
use crate::GcpClients;
use engine::{KindError, KindResult};
use serde_json::Value as Json;

/// The bucket named by an IAM resource name `projects/_/buckets/<bucket>`, if it is one.
pub(crate) fn bucket_of(resource: &str) -> Option<&str> {
    resource.strip_prefix("projects/_/buckets/").filter(|b| !b.is_empty() && !b.contains('/'))
}

/// The bucket's policy (with its etag); `None` when there is no such bucket.
pub(crate) async fn policy(clients: &GcpClients, bucket: &str) -> KindResult<Option<Json>> {
    let op = "storage:BucketsGetIamPolicy";
    clients.count("storage", "BucketsGetIamPolicy");
    let api = &clients.storage;
    let url = api.url(&["b", bucket, "iam"]).map_err(KindError::new)?;
    let answer = api.send(reqwest::Method::GET, url, None).await.map_err(KindError::retryable)?;
    match answer.status().as_u16() {
        404 => Ok(None),
        s if (200..300).contains(&s) => answer
            .json()
            .await
            .map(Some)
            .map_err(|e| KindError::retryable(format!("{op}: reading the answer: {e}"))),
        _ => Err(failure(op, answer).await),
    }
}

/// Writes `policy` (carrying the etag it was read with: a policy changed meanwhile is refused,
/// and the refusal is worth trying again from a fresh read).
pub(crate) async fn set_policy(
    clients: &GcpClients,
    bucket: &str,
    policy: &Json,
) -> KindResult<()> {
    let op = "storage:BucketsSetIamPolicy";
    clients.count("storage", "BucketsSetIamPolicy");
    let api = &clients.storage;
    let url = api.url(&["b", bucket, "iam"]).map_err(KindError::new)?;
    let answer = api
        .send(reqwest::Method::PUT, url, Some(policy))
        .await
        .map_err(|e| KindError::retryable(format!("{op}: {e}")))?;
    if answer.status().is_success() {
        return Ok(());
    }
    let stale = matches!(answer.status().as_u16(), 409 | 412);
    let error = failure(op, answer).await;
    Err(if stale { KindError::retryable(error.message) } else { error })
}
