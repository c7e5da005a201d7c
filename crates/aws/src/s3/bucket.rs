//! `aws_s3_bucket`: a private, encrypted, versioned bucket with lifecycle rules.
//!
//! Public-access block, default encryption, versioning and lifecycle are fields of the bucket
//! rather than kinds of their own: none has an identity or a life apart from its bucket, each is
//! one whole-document `Put*` call, and reading them is per bucket anyway. Separate kinds would
//! only add state entries and dependency edges. Tags too are one whole-set `Put*`.
//!
//! Buckets are named by the spec; one found by name is ours only when recorded in state, tagged
//! with this resource's address and lineage, or untagged while state records its create as
//! begun: `CreateBucket` may not apply tags (moto ignores them), so a run killed between it and
//! `PutBucketTagging` leaves a bucket that only the journaled create marks as ours.

use crate::AwsClients;
use crate::error::{SdkResult, built};
use crate::lookup::{read_named, still_there};
use crate::tagging::from_pairs;
use aws_sdk_s3::types::{
    AbortIncompleteMultipartUpload, BucketLifecycleConfiguration, BucketLocationConstraint,
    BucketVersioningStatus, CreateBucketConfiguration, ExpirationStatus, LifecycleExpiration,
    LifecycleRule, LifecycleRuleFilter, NoncurrentVersionExpiration,
    PublicAccessBlockConfiguration, ServerSideEncryption, ServerSideEncryptionByDefault,
    ServerSideEncryptionConfiguration, ServerSideEncryptionRule, Tag, Tagging,
    VersioningConfiguration,
};
use engine::Changes;
use engine::prelude::*;
use engine::retry::{read_back, settle};
use engine::{Tags, TypedKind};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

#[derive(Attributes, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct Bucket {
    #[attr(replace)]
    pub bucket: String,
    /// `Enabled` or `Suspended` (read as `Disabled` when never set).
    #[attr(in_place)]
    pub versioning: String,
    #[attr(in_place)]
    pub sse_algorithm: Option<String>,
    #[attr(in_place)]
    pub kms_key_arn: Option<String>,
    #[attr(in_place)]
    #[serde(default)]
    pub bucket_key_enabled: bool,
    #[attr(in_place)]
    pub public_access_block: Option<PublicAccessBlock>,
    #[attr(in_place)]
    #[serde(default)]
    pub lifecycle_rules: Vec<Rule>,
    #[attr(in_place, tags)]
    pub tags: Tags,
    #[attr(computed)]
    pub arn: Option<String>,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(default)]
pub(crate) struct PublicAccessBlock {
    pub block_public_acls: bool,
    pub block_public_policy: bool,
    pub ignore_public_acls: bool,
    pub restrict_public_buckets: bool,
}

/// A lifecycle rule: objects under `prefix` expire, and so do their old versions and
/// unfinished uploads.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct Rule {
    #[serde(default)]
    pub id: String,
    #[serde(default = "enabled")]
    pub enabled: bool,
    #[serde(default)]
    pub prefix: String,
    pub expiration_days: Option<i32>,
    pub noncurrent_expiration_days: Option<i32>,
    pub abort_multipart_days: Option<i32>,
}

fn enabled() -> bool {
    true
}

impl PublicAccessBlock {
    fn of(c: &PublicAccessBlockConfiguration) -> Self {
        PublicAccessBlock {
            block_public_acls: c.block_public_acls().unwrap_or(false),
            block_public_policy: c.block_public_policy().unwrap_or(false),
            ignore_public_acls: c.ignore_public_acls().unwrap_or(false),
            restrict_public_buckets: c.restrict_public_buckets().unwrap_or(false),
        }
    }

    fn to_sdk(&self) -> PublicAccessBlockConfiguration {
        PublicAccessBlockConfiguration::builder()
            .block_public_acls(self.block_public_acls)
            .block_public_policy(self.block_public_policy)
            .ignore_public_acls(self.ignore_public_acls)
            .restrict_public_buckets(self.restrict_public_buckets)
            .build()
    }
}

impl Rule {
    fn of(r: &LifecycleRule) -> Self {
        Rule {
            id: r.id().unwrap_or_default().to_string(),
            enabled: r.status() == &ExpirationStatus::Enabled,
            prefix: r.filter().and_then(|f| f.prefix()).unwrap_or_default().to_string(),
            expiration_days: r.expiration().and_then(|e| e.days()),
            noncurrent_expiration_days: r
                .noncurrent_version_expiration()
                .and_then(|e| e.noncurrent_days()),
            abort_multipart_days: r
                .abort_incomplete_multipart_upload()
                .and_then(|a| a.days_after_initiation()),
        }
    }

    fn to_sdk(&self) -> KindResult<LifecycleRule> {
        let status =
            if self.enabled { ExpirationStatus::Enabled } else { ExpirationStatus::Disabled };
        let filter = LifecycleRuleFilter::builder().prefix(&self.prefix).build();
        let rule = LifecycleRule::builder().id(&self.id).status(status).filter(filter);
        let expiration = self.expiration_days.map(|d| LifecycleExpiration::builder().days(d));
        let noncurrent = self.noncurrent_expiration_days;
        let noncurrent =
            noncurrent.map(|d| NoncurrentVersionExpiration::builder().noncurrent_days(d));
        let abort = self.abort_multipart_days;
        let abort =
            abort.map(|d| AbortIncompleteMultipartUpload::builder().days_after_initiation(d));
        let rule = rule.set_expiration(expiration.map(|e| e.build()));
        let rule = rule.set_noncurrent_version_expiration(noncurrent.map(|n| n.build()));
        built(rule.set_abort_incomplete_multipart_upload(abort.map(|a| a.build())).build())
    }
}

pub(crate) struct BucketKind(pub Arc<AwsClients>);

/// An error after `CreateBucket` succeeded: the bucket is made, only not yet as the spec says.
fn made(mut error: KindError) -> KindError {
    error.outcome_unknown = true;
    error
}

fn s3_tags(tags: &Tags) -> KindResult<Vec<Tag>> {
    tags.iter().map(|(k, v)| built(Tag::builder().key(k).value(v).build())).collect()
}

impl BucketKind {
    /// The bucket and its configuration, or `None` when it does not exist.
    async fn read_one(&self, name: &str) -> KindResult<Option<Live<Bucket>>> {
        let s3 = &self.0.s3;
        let call = s3.get_bucket_tagging().bucket(name);
        let tags = match call.send().await.api("s3:GetBucketTagging") {
            Ok(out) => from_pairs(out.tag_set().iter().map(|t| (t.key(), t.value()))),
            Err(e) if e.has_code("NoSuchBucket") => return Ok(None),
            Err(e) if e.has_code("NoSuchTagSet") => Tags::new(),
            Err(e) => return Err(e),
        };
        let (versioning, encryption, pab, lifecycle) = futures::join!(
            s3.get_bucket_versioning().bucket(name).send(),
            s3.get_bucket_encryption().bucket(name).send(),
            s3.get_public_access_block().bucket(name).send(),
            s3.get_bucket_lifecycle_configuration().bucket(name).send(),
        );
        let versioning = versioning.api("s3:GetBucketVersioning")?;
        let no_encryption = ["ServerSideEncryptionConfigurationNotFoundError"];
        let encryption = encryption.or_absent("s3:GetBucketEncryption", &no_encryption)?;
        let rule = encryption.as_ref().and_then(|o| o.server_side_encryption_configuration());
        let rule = rule.and_then(|c| c.rules().first());
        let by_default = rule.and_then(|r| r.apply_server_side_encryption_by_default());
        let no_pab = ["NoSuchPublicAccessBlockConfiguration"];
        let pab = pab.or_absent("s3:GetPublicAccessBlock", &no_pab)?;
        let pab = pab.as_ref().and_then(|o| o.public_access_block_configuration());
        let no_lifecycle = ["NoSuchLifecycleConfiguration"];
        let lifecycle = lifecycle.or_absent("s3:GetBucketLifecycleConfiguration", &no_lifecycle)?;
        let bucket = Bucket {
            bucket: name.to_string(),
            versioning: versioning.status().map_or("Disabled", |s| s.as_str()).to_string(),
            sse_algorithm: by_default.map(|d| d.sse_algorithm().as_str().to_string()),
            kms_key_arn: by_default.and_then(|d| d.kms_master_key_id()).map(str::to_string),
            bucket_key_enabled: rule.and_then(|r| r.bucket_key_enabled()).unwrap_or(false),
            public_access_block: pab.map(PublicAccessBlock::of),
            lifecycle_rules: lifecycle.iter().flat_map(|o| o.rules()).map(Rule::of).collect(),
            tags,
            arn: Some(format!("arn:aws:s3:::{name}")),
        };
        Ok(Some(Live::new(name, bucket)))
    }

    async fn put_tags(&self, name: &str, tags: &Tags) -> KindResult<()> {
        let tagging = built(Tagging::builder().set_tag_set(Some(s3_tags(tags)?)).build())?;
        let call = self.0.s3.put_bucket_tagging().bucket(name).tagging(tagging);
        call.send().await.api("s3:PutBucketTagging").map(|_| ())
    }

    async fn put_public_access_block(&self, name: &str, desired: &Bucket) -> KindResult<()> {
        let block = desired.public_access_block.clone().unwrap_or_default().to_sdk();
        let call = self.0.s3.put_public_access_block().bucket(name);
        let call = call.public_access_block_configuration(block);
        call.send().await.api("s3:PutPublicAccessBlock").map(|_| ())
    }

    async fn put_encryption(&self, name: &str, desired: &Bucket) -> KindResult<()> {
        let algorithm = desired.sse_algorithm.as_deref();
        let algorithm = algorithm.ok_or_else(|| KindError::new("`sse_algorithm` is required"))?;
        let by_default = ServerSideEncryptionByDefault::builder()
            .sse_algorithm(ServerSideEncryption::from(algorithm))
            .set_kms_master_key_id(desired.kms_key_arn.clone());
        let rule = ServerSideEncryptionRule::builder()
            .apply_server_side_encryption_by_default(built(by_default.build())?)
            .bucket_key_enabled(desired.bucket_key_enabled)
            .build();
        let config = built(ServerSideEncryptionConfiguration::builder().rules(rule).build())?;
        let call = self.0.s3.put_bucket_encryption().bucket(name);
        let call = call.server_side_encryption_configuration(config);
        call.send().await.api("s3:PutBucketEncryption").map(|_| ())
    }

    async fn put_versioning(&self, name: &str, desired: &Bucket) -> KindResult<()> {
        let status = match desired.versioning.as_str() {
            "Enabled" => BucketVersioningStatus::Enabled,
            "Suspended" => BucketVersioningStatus::Suspended,
            other => {
                let why = format!("versioning `{other}`: expected Enabled or Suspended");
                return Err(KindError::new(why));
            }
        };
        let config = VersioningConfiguration::builder().status(status).build();
        let call = self.0.s3.put_bucket_versioning().bucket(name).versioning_configuration(config);
        call.send().await.api("s3:PutBucketVersioning").map(|_| ())
    }

    async fn put_lifecycle(&self, name: &str, desired: &Bucket) -> KindResult<()> {
        let s3 = &self.0.s3;
        if desired.lifecycle_rules.is_empty() {
            let call = s3.delete_bucket_lifecycle().bucket(name);
            return call.send().await.api("s3:DeleteBucketLifecycle").map(|_| ());
        }
        let rules = desired.lifecycle_rules.iter().map(Rule::to_sdk).collect::<Result<_, _>>()?;
        let config = BucketLifecycleConfiguration::builder().set_rules(Some(rules)).build();
        let call = s3.put_bucket_lifecycle_configuration().bucket(name);
        let call = call.lifecycle_configuration(built(config)?);
        call.send().await.api("s3:PutBucketLifecycleConfiguration").map(|_| ())
    }

    /// Writes the documents of the fields marked in `changes`.
    async fn apply(&self, name: &str, desired: &Bucket, changes: &BucketChanges) -> KindResult<()> {
        if changes.tags {
            self.put_tags(name, &desired.tags).await?;
        }
        if changes.public_access_block {
            self.put_public_access_block(name, desired).await?;
        }
        if changes.sse_algorithm || changes.kms_key_arn || changes.bucket_key_enabled {
            self.put_encryption(name, desired).await?;
        }
        if changes.versioning {
            self.put_versioning(name, desired).await?;
        }
        if changes.lifecycle_rules {
            self.put_lifecycle(name, desired).await?;
        }
        Ok(())
    }
}

impl TypedKind for BucketKind {
    type Attrs = Bucket;
    const NAME: &'static str = "aws_s3_bucket";

    async fn read(&self, _: &Context, requests: &Requests<Self>) -> Found<Self> {
        read_named(requests, |d| d.bucket.clone(), |n| async move { self.read_one(&n).await }).await
    }

    async fn create(&self, _: &Context, desired: &Self::Attrs) -> Outcome<Self> {
        let name = &desired.bucket;
        let region = self.0.region.as_str();
        let tags = Some(s3_tags(&desired.tags)?);
        let config = CreateBucketConfiguration::builder().set_tags(tags);
        // us-east-1 is the default location, and the one S3 refuses to be told.
        let config = match region {
            "us-east-1" => config,
            _ => config.location_constraint(BucketLocationConstraint::from(region)),
        };
        let call = self.0.s3.create_bucket().bucket(name);
        let call = call.create_bucket_configuration(config.build());
        match call.send().await.api("s3:CreateBucket") {
            Err(e) if e.has_code("BucketAlreadyOwnedByYou") => {
                let mut refused = KindError::new(format!(
                    "s3:CreateBucket: {name} already exists in this account without this \
                     resource's ownership tags; it is not adopted"
                ));
                refused.already_exists = true;
                return Err(refused);
            }
            result => result?,
        };
        // The bucket exists from here on: a failure to configure it leaves it made, and the
        // next try (or run) takes it over by name (the create is journaled as begun).
        let mut everything = BucketChanges::default();
        for field in Bucket::FIELDS {
            everything.mark(field.name);
        }
        settle(|| self.apply(name, desired, &everything)).await.map_err(made)?;
        read_back(&format!("bucket {name}"), || self.read_one(name)).await.map_err(made)
    }

    async fn update(&self, _: &Context, update: Update<'_, Self>) -> Outcome<Self> {
        let Update { current, desired, changes } = update;
        self.apply(&current.id, desired, changes).await?;
        still_there(&format!("bucket {}", current.id), self.read_one(&current.id).await?)
    }

    async fn delete(&self, _: &Context, current: &LiveOf<Self>) -> KindResult<()> {
        let call = self.0.s3.delete_bucket().bucket(&current.id);
        match call.send().await.or_gone("s3:DeleteBucket", &["NoSuchBucket"]) {
            Err(e) if e.has_code("BucketNotEmpty") => Err(KindError::new(format!(
                "s3:DeleteBucket: {} still holds objects (snapshots); copy what must be kept, \
                 empty it (every version) and destroy again",
                current.id
            ))),
            done => done,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn lifecycle_rules_round_trip() {
        let v = json!({
            "id": "snapshots",
            "enabled": true,
            "prefix": "snapshots/",
            "expiration_days": 30,
            "noncurrent_expiration_days": 7,
            "abort_multipart_days": 1,
        });
        let rule: Rule = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(serde_json::to_value(Rule::of(&rule.to_sdk().unwrap())).unwrap(), v);
    }
}
