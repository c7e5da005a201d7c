//! S3 kinds: buckets (public-access block, encryption, versioning, lifecycle), buckets made
//! elsewhere and looked up; and the newest
//! raft snapshot in a bucket, for OpenBao's rehydration.

pub(crate) mod bucket;
pub(crate) mod bucket_lookup;
pub mod snapshots;
