//! S3 kinds: buckets (public-access block, encryption, versioning, lifecycle); and the newest
//! raft snapshot in a bucket, for OpenBao's rehydration.

pub(crate) mod bucket;
pub mod snapshots;
