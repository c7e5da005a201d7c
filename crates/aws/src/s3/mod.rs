//! S3 kinds: buckets (public-access block, encryption, versioning, lifecycle); and the newest
//! raft snapshot in a bucket, for OpenBao's rehydration.

mod bucket;
pub mod snapshots;

use crate::AwsClients;
use engine::{Kind, Typed};
use std::sync::Arc;

pub(crate) fn kinds(shared: &Arc<AwsClients>) -> Vec<Arc<dyn Kind>> {
    vec![Typed::arc(bucket::BucketKind(shared.clone()))]
}
