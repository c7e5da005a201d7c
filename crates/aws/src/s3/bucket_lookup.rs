//! `aws_s3_bucket_lookup`: a bucket that something else makes and owns (the reference's
//! Crossplane makes the LLM models bucket), looked up, never created, changed or deleted, like
//! a Terraform data source. A plan stops when it does not exist, naming it, before anything
//! changes; what depends on it gets its ARN. Its id is its name; a destroy only forgets it.

use crate::AwsClients;
use crate::error::SdkResult;
use engine::prelude::*;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

#[derive(Attributes, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct BucketLookup {
    #[attr(replace)]
    pub bucket: String,
    #[attr(computed)]
    pub arn: Option<String>,
}

pub(crate) struct BucketLookupKind(pub Arc<AwsClients>);

impl BucketLookupKind {
    async fn exists(&self, bucket: &str) -> KindResult<bool> {
        let call = self.0.s3.head_bucket().bucket(bucket);
        let found = call.send().await.or_absent("s3:HeadBucket", &["NotFound", "NoSuchBucket"])?;
        Ok(found.is_some())
    }

    fn missing(bucket: &str) -> KindError {
        KindError::new(format!(
            "the S3 bucket `{bucket}` does not exist: it is made outside this spec (looked up, \
             never created); make it first"
        ))
    }
}

fn found(bucket: &str) -> Live<BucketLookup> {
    let arn = Some(format!("arn:aws:s3:::{bucket}"));
    Live::new(bucket, BucketLookup { bucket: bucket.to_string(), arn })
}

impl TypedKind for BucketLookupKind {
    type Attrs = BucketLookup;
    const NAME: &'static str = "aws_s3_bucket_lookup";

    /// The spec's bucket must exist; one the spec no longer names is only forgotten.
    async fn read(&self, _: &Context, requests: &Requests<Self>) -> Found<Self> {
        let mut out = Vec::new();
        for r in requests {
            let bucket = r.desired.as_ref().map(|d| d.bucket.clone()).or_else(|| r.id.clone());
            let Some(bucket) = bucket else {
                out.push(None);
                continue;
            };
            match (self.exists(&bucket).await?, &r.desired) {
                (true, _) => out.push(Some(found(&bucket))),
                (false, Some(_)) => return Err(Self::missing(&bucket)),
                (false, None) => out.push(None),
            }
        }
        Ok(out)
    }

    /// Reached only when the bucket appeared between the plan and the apply, or went.
    async fn create(&self, _: &Context, desired: &Self::Attrs) -> Outcome<Self> {
        match self.exists(&desired.bucket).await? {
            true => Ok(found(&desired.bucket)),
            false => Err(Self::missing(&desired.bucket)),
        }
    }

    async fn update(&self, _: &Context, update: Update<'_, Self>) -> Outcome<Self> {
        Ok(found(&update.desired.bucket))
    }

    /// Never deletes what it did not make.
    async fn delete(&self, _: &Context, _: &LiveOf<Self>) -> KindResult<()> {
        Ok(())
    }
}
