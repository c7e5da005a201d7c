//! S3 Files kinds (a file system on an S3 bucket, its mount targets, access points and
//! file-system policy), S3 Files' tagging calls and what they share.

pub(crate) mod access_point;
pub(crate) mod file_system;
pub(crate) mod file_system_policy;
pub(crate) mod mount_target;

use crate::error::{SdkResult, built};
use crate::lookup::match_requests;
use crate::tagging::{TagApi, from_pairs};
use async_trait::async_trait;
use aws_sdk_s3files::types::{LifeCycleState, Tag};
use engine::{Attributes, KindError, KindResult, Live, ReadRequest, Tags};
use sha2::{Digest, Sha256};
use std::future::Future;
use std::sync::Arc;

/// S3 Files' answer for an id that names nothing.
pub(crate) const NOT_FOUND: &[&str] = &["ResourceNotFoundException"];

/// Tags as S3 Files tags.
pub(crate) fn s3files_tags(tags: &Tags) -> KindResult<Vec<Tag>> {
    tags.iter().map(|(k, v)| built(Tag::builder().key(k).value(v).build())).collect()
}

/// S3 Files tags as tags.
pub(crate) fn tags_of(tags: &[Tag]) -> Tags {
    from_pairs(tags.iter().map(|t| (t.key(), t.value())))
}

/// The idempotency token of a create: the same for every try of one resource of one state (its
/// address and lineage tags), so a create retried after a lost answer returns what the first
/// made instead of a second one.
pub(crate) fn client_token(tags: &Tags) -> String {
    let mut hash = Sha256::new();
    for key in [engine::TAG_ADDRESS, engine::TAG_LINEAGE] {
        hash.update(tags.get(key).map(String::as_str).unwrap_or_default());
        hash.update([0]);
    }
    let hex: String = hash.finalize().iter().map(|b| format!("{b:02x}")).collect();
    hex[..64].to_string()
}

/// Whether a resource in this state is gone, or going (a read then finds it absent).
pub(crate) fn gone(status: Option<&LifeCycleState>) -> bool {
    matches!(status, Some(LifeCycleState::Deleting | LifeCycleState::Deleted))
}

/// A status's text, for waits and errors.
pub(crate) fn status_text(status: Option<&LifeCycleState>) -> String {
    status.map_or_else(|| "unknown".to_string(), |s| s.as_str().to_string())
}

/// Reads tagged S3 Files resources (file systems, access points): each recorded one by its id
/// (`read_one`), then, for the requests state does not record, the ids their parent lists
/// (`listed`: a bucket's file systems, a file system's access points), matched by their address
/// and lineage tags.
pub(crate) async fn read_recorded_then_tagged<A, R, RFut, L, LFut>(
    requests: &[ReadRequest<A>],
    read_one: R,
    listed: L,
) -> KindResult<Vec<Option<Live<A>>>>
where
    A: Attributes,
    R: Fn(String) -> RFut,
    RFut: Future<Output = KindResult<Option<Live<A>>>>,
    L: Fn(&A) -> LFut,
    LFut: Future<Output = KindResult<Arc<Vec<String>>>>,
{
    let mut found: Vec<Live<A>> = Vec::new();
    for id in requests.iter().filter_map(|r| r.id.clone()) {
        found.extend(read_one(id).await?);
    }
    let unrecorded: Vec<&A> = requests
        .iter()
        .filter(|r| !found.iter().any(|l| Some(&l.id) == r.id.as_ref()))
        .filter_map(|r| r.desired.as_ref())
        .collect();
    for desired in unrecorded {
        for id in listed(desired).await?.iter() {
            if !found.iter().any(|l| &l.id == id) {
                found.extend(read_one(id.clone()).await?);
            }
        }
    }
    Ok(match_requests(requests, &found))
}

/// Tagging calls of file systems and access points (by id).
pub(crate) struct S3FilesTags<'a>(pub &'a aws_sdk_s3files::Client);

#[async_trait]
impl TagApi for S3FilesTags<'_> {
    async fn untag(&self, id: &str, keys: Vec<String>) -> Result<(), KindError> {
        let call = self.0.untag_resource().resource_id(id).set_tag_keys(Some(keys));
        call.send().await.api("s3files:UntagResource").map(|_| ())
    }

    async fn tag(&self, id: &str, tags: Tags) -> Result<(), KindError> {
        let call = self.0.tag_resource().resource_id(id).set_tags(Some(s3files_tags(&tags)?));
        call.send().await.api("s3files:TagResource").map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_resource_keeps_its_token_across_tries_and_states_do_not_share_one() {
        let tags = |address: &str, lineage: &str| {
            Tags::from([
                (engine::TAG_ADDRESS.to_string(), address.to_string()),
                (engine::TAG_LINEAGE.to_string(), lineage.to_string()),
            ])
        };
        let first = client_token(&tags("aws.llm_platform.s3files_file_system.models", "l1"));
        assert_eq!(first.len(), 64);
        assert_eq!(first, client_token(&tags("aws.llm_platform.s3files_file_system.models", "l1")));
        assert_ne!(first, client_token(&tags("aws.llm_platform.s3files_file_system.models", "l2")));
        assert_ne!(
            first,
            client_token(&tags("aws.llm_platform.s3files_access_point.shared", "l1"))
        );
    }
}
