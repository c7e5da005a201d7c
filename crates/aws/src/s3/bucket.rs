//! `aws_s3_bucket`: a private, encrypted, versioned bucket with lifecycle rules.
//!
//! Public-access block, default encryption, versioning and lifecycle are fields of the bucket
//! rather than kinds of their own: none has an identity or a life apart from its bucket, each is
//! one whole-document `Put*` call, and reading them is per bucket anyway. Separate kinds would
//! only add state entries and dependency edges.
//!
//! Buckets are named by the spec; one found by name is ours only when recorded in state or
//! tagged with this resource's address.

use crate::AwsClients;
use crate::error::{api_error, has_code};
use crate::lookup_json::{live, read_by_name, still_there, str_attr};
use crate::settle::{read_back, settle};
use async_trait::async_trait;
use aws_sdk_s3::types::{
    AbortIncompleteMultipartUpload, BucketLifecycleConfiguration, BucketLocationConstraint,
    BucketVersioningStatus, CreateBucketConfiguration, ExpirationStatus, LifecycleExpiration,
    LifecycleRule, LifecycleRuleFilter, NoncurrentVersionExpiration,
    PublicAccessBlockConfiguration, ServerSideEncryption, ServerSideEncryptionByDefault,
    ServerSideEncryptionConfiguration, ServerSideEncryptionRule, Tag, Tagging,
    VersioningConfiguration,
};
use engine::{Address, Attrs, Context, Field, Kind, KindError, Live, ReadRequest};
use serde_json::{Value as Json, json};
use std::sync::Arc;

pub(crate) struct S3Bucket(pub Arc<AwsClients>);

const FIELDS: &[Field] = &[
    Field::replace("bucket"),
    Field::in_place("versioning"),
    Field::in_place("sse_algorithm"),
    Field::in_place("kms_key_arn"),
    Field::in_place("bucket_key_enabled"),
    Field::in_place("public_access_block"),
    Field::in_place("lifecycle_rules"),
    Field::in_place("tags"),
    Field::computed("id"),
    Field::computed("arn"),
];

fn build_err(e: aws_smithy_types::error::operation::BuildError) -> KindError {
    KindError::new(e.to_string())
}

fn int(v: &Json, key: &str) -> Option<i32> {
    v.get(key).and_then(Json::as_i64).map(|n| n as i32)
}

fn flag(v: Option<&Json>, key: &str) -> bool {
    v.and_then(|v| v.get(key)).and_then(Json::as_bool).unwrap_or(false)
}

/// A lifecycle rule as an attribute value (the shape the expansion writes).
fn rule_to_json(r: &LifecycleRule) -> Json {
    let prefix = r.filter().and_then(|f| f.prefix()).unwrap_or_default();
    json!({
        "id": r.id().unwrap_or_default(),
        "enabled": r.status() == &ExpirationStatus::Enabled,
        "prefix": prefix,
        "expiration_days": r.expiration().and_then(|e| e.days()),
        "noncurrent_expiration_days": r.noncurrent_version_expiration().and_then(|e| e.noncurrent_days()),
        "abort_multipart_days": r.abort_incomplete_multipart_upload().and_then(|a| a.days_after_initiation()),
    })
}

/// An attribute value as a lifecycle rule.
fn rule_from_json(v: &Json) -> Result<LifecycleRule, KindError> {
    let enabled = v.get("enabled").and_then(Json::as_bool).unwrap_or(true);
    let mut b = LifecycleRule::builder()
        .id(v.get("id").and_then(Json::as_str).unwrap_or_default())
        .status(if enabled { ExpirationStatus::Enabled } else { ExpirationStatus::Disabled })
        .filter(
            LifecycleRuleFilter::builder()
                .prefix(v.get("prefix").and_then(Json::as_str).unwrap_or_default())
                .build(),
        );
    if let Some(days) = int(v, "expiration_days") {
        b = b.expiration(LifecycleExpiration::builder().days(days).build());
    }
    if let Some(days) = int(v, "noncurrent_expiration_days") {
        b = b.noncurrent_version_expiration(
            NoncurrentVersionExpiration::builder().noncurrent_days(days).build(),
        );
    }
    if let Some(days) = int(v, "abort_multipart_days") {
        b = b.abort_incomplete_multipart_upload(
            AbortIncompleteMultipartUpload::builder().days_after_initiation(days).build(),
        );
    }
    b.build().map_err(build_err)
}

impl S3Bucket {
    fn s3(&self) -> Result<&aws_sdk_s3::Client, KindError> {
        Ok(&self.0.s3)
    }

    /// The bucket and its configuration, or `None` when it does not exist.
    async fn read_one(&self, bucket: &str) -> Result<Option<Live>, KindError> {
        let s3 = self.s3()?;
        let tags = match s3.get_bucket_tagging().bucket(bucket).send().await {
            Ok(out) => crate::tags::to_json(out.tag_set().iter().map(|t| (t.key(), t.value()))),
            Err(e) if has_code(&e, "NoSuchBucket") => return Ok(None),
            Err(e) if has_code(&e, "NoSuchTagSet") => json!({}),
            Err(e) => return Err(api_error("s3:GetBucketTagging", e)),
        };
        let (versioning, encryption, pab, lifecycle) = futures::join!(
            s3.get_bucket_versioning().bucket(bucket).send(),
            s3.get_bucket_encryption().bucket(bucket).send(),
            s3.get_public_access_block().bucket(bucket).send(),
            s3.get_bucket_lifecycle_configuration().bucket(bucket).send(),
        );
        let versioning = versioning
            .map_err(|e| api_error("s3:GetBucketVersioning", e))?
            .status()
            .map(|s| s.as_str().to_string())
            .unwrap_or_else(|| "Disabled".into());
        let default_rule = match encryption {
            Ok(out) => {
                out.server_side_encryption_configuration().and_then(|c| c.rules().first().cloned())
            }
            Err(e) if has_code(&e, "ServerSideEncryptionConfigurationNotFoundError") => None,
            Err(e) => return Err(api_error("s3:GetBucketEncryption", e)),
        };
        let by_default =
            default_rule.as_ref().and_then(|r| r.apply_server_side_encryption_by_default());
        let pab = match pab {
            Ok(out) => out.public_access_block_configuration().map(|c| {
                json!({
                    "block_public_acls": c.block_public_acls().unwrap_or(false),
                    "block_public_policy": c.block_public_policy().unwrap_or(false),
                    "ignore_public_acls": c.ignore_public_acls().unwrap_or(false),
                    "restrict_public_buckets": c.restrict_public_buckets().unwrap_or(false),
                })
            }),
            Err(e) if has_code(&e, "NoSuchPublicAccessBlockConfiguration") => None,
            Err(e) => return Err(api_error("s3:GetPublicAccessBlock", e)),
        };
        let rules: Vec<Json> = match lifecycle {
            Ok(out) => out.rules().iter().map(rule_to_json).collect(),
            Err(e) if has_code(&e, "NoSuchLifecycleConfiguration") => vec![],
            Err(e) => return Err(api_error("s3:GetBucketLifecycleConfiguration", e)),
        };
        Ok(Some(live(
            bucket,
            [
                ("bucket", json!(bucket)),
                ("versioning", json!(versioning)),
                ("sse_algorithm", json!(by_default.map(|d| d.sse_algorithm().as_str()))),
                ("kms_key_arn", json!(by_default.and_then(|d| d.kms_master_key_id()))),
                (
                    "bucket_key_enabled",
                    json!(
                        default_rule.as_ref().and_then(|r| r.bucket_key_enabled()).unwrap_or(false)
                    ),
                ),
                ("public_access_block", pab.unwrap_or(Json::Null)),
                ("lifecycle_rules", Json::Array(rules)),
                ("tags", tags),
                ("arn", json!(format!("arn:aws:s3:::{bucket}"))),
            ],
        )))
    }

    async fn put_tags(&self, bucket: &str, desired: &Attrs) -> Result<(), KindError> {
        let tags = s3_tags(desired)?;
        self.s3()?
            .put_bucket_tagging()
            .bucket(bucket)
            .tagging(Tagging::builder().set_tag_set(Some(tags)).build().map_err(build_err)?)
            .send()
            .await
            .map(|_| ())
            .map_err(|e| api_error("s3:PutBucketTagging", e))
    }

    async fn put_public_access_block(
        &self,
        bucket: &str,
        desired: &Attrs,
    ) -> Result<(), KindError> {
        let want = desired.get("public_access_block");
        self.s3()?
            .put_public_access_block()
            .bucket(bucket)
            .public_access_block_configuration(
                PublicAccessBlockConfiguration::builder()
                    .block_public_acls(flag(want, "block_public_acls"))
                    .block_public_policy(flag(want, "block_public_policy"))
                    .ignore_public_acls(flag(want, "ignore_public_acls"))
                    .restrict_public_buckets(flag(want, "restrict_public_buckets"))
                    .build(),
            )
            .send()
            .await
            .map(|_| ())
            .map_err(|e| api_error("s3:PutPublicAccessBlock", e))
    }

    async fn put_encryption(&self, bucket: &str, desired: &Attrs) -> Result<(), KindError> {
        let algorithm = ServerSideEncryption::from(str_attr(desired, "sse_algorithm")?);
        let key = desired.get("kms_key_arn").and_then(Json::as_str).map(str::to_string);
        let rule = ServerSideEncryptionRule::builder()
            .apply_server_side_encryption_by_default(
                ServerSideEncryptionByDefault::builder()
                    .sse_algorithm(algorithm)
                    .set_kms_master_key_id(key)
                    .build()
                    .map_err(build_err)?,
            )
            .bucket_key_enabled(
                desired.get("bucket_key_enabled").and_then(Json::as_bool).unwrap_or(false),
            )
            .build();
        self.s3()?
            .put_bucket_encryption()
            .bucket(bucket)
            .server_side_encryption_configuration(
                ServerSideEncryptionConfiguration::builder()
                    .rules(rule)
                    .build()
                    .map_err(build_err)?,
            )
            .send()
            .await
            .map(|_| ())
            .map_err(|e| api_error("s3:PutBucketEncryption", e))
    }

    async fn put_versioning(&self, bucket: &str, desired: &Attrs) -> Result<(), KindError> {
        let status = match str_attr(desired, "versioning")? {
            "Enabled" => BucketVersioningStatus::Enabled,
            "Suspended" => BucketVersioningStatus::Suspended,
            other => {
                return Err(KindError::new(format!(
                    "versioning `{other}`: expected Enabled or Suspended"
                )));
            }
        };
        self.s3()?
            .put_bucket_versioning()
            .bucket(bucket)
            .versioning_configuration(VersioningConfiguration::builder().status(status).build())
            .send()
            .await
            .map(|_| ())
            .map_err(|e| api_error("s3:PutBucketVersioning", e))
    }

    async fn put_lifecycle(&self, bucket: &str, desired: &Attrs) -> Result<(), KindError> {
        let rules: Vec<LifecycleRule> = desired
            .get("lifecycle_rules")
            .and_then(Json::as_array)
            .map(|rs| rs.iter().map(rule_from_json).collect::<Result<_, _>>())
            .transpose()?
            .unwrap_or_default();
        let s3 = self.s3()?;
        if rules.is_empty() {
            return s3
                .delete_bucket_lifecycle()
                .bucket(bucket)
                .send()
                .await
                .map(|_| ())
                .map_err(|e| api_error("s3:DeleteBucketLifecycle", e));
        }
        s3.put_bucket_lifecycle_configuration()
            .bucket(bucket)
            .lifecycle_configuration(
                BucketLifecycleConfiguration::builder()
                    .set_rules(Some(rules))
                    .build()
                    .map_err(build_err)?,
            )
            .send()
            .await
            .map(|_| ())
            .map_err(|e| api_error("s3:PutBucketLifecycleConfiguration", e))
    }

    /// Applies every in-place field of `desired` that differs from `current` (all when `None`).
    async fn converge(
        &self,
        bucket: &str,
        current: Option<&Attrs>,
        desired: &Attrs,
    ) -> Result<(), KindError> {
        let differs = |field: &str| current.is_none_or(|c| c.get(field) != desired.get(field));
        if differs("tags") {
            self.put_tags(bucket, desired).await?;
        }
        if differs("public_access_block") {
            self.put_public_access_block(bucket, desired).await?;
        }
        if differs("sse_algorithm") || differs("kms_key_arn") || differs("bucket_key_enabled") {
            self.put_encryption(bucket, desired).await?;
        }
        if differs("versioning") {
            self.put_versioning(bucket, desired).await?;
        }
        if differs("lifecycle_rules") {
            self.put_lifecycle(bucket, desired).await?;
        }
        Ok(())
    }
}

fn s3_tags(attrs: &Attrs) -> Result<Vec<Tag>, KindError> {
    crate::tags::build(attrs, |k, v| Tag::builder().key(k).value(v).build())
}

#[async_trait]
impl Kind for S3Bucket {
    fn name(&self) -> &'static str {
        "aws_s3_bucket"
    }

    fn fields(&self) -> &'static [Field] {
        FIELDS
    }

    async fn read(
        &self,
        _ctx: &Context,
        requests: &[ReadRequest],
    ) -> Result<Vec<Option<Live>>, KindError> {
        read_by_name(requests, "bucket", |b| async move { self.read_one(&b).await }).await
    }

    async fn create(
        &self,
        _ctx: &Context,
        address: &Address,
        desired: &Attrs,
    ) -> Result<Live, KindError> {
        let s3 = self.s3()?;
        let bucket = str_attr(desired, "bucket")?;
        let region = &self.0.region;
        let mut config = CreateBucketConfiguration::builder().set_tags(Some(s3_tags(desired)?));
        if region != "us-east-1" {
            config = config.location_constraint(BucketLocationConstraint::from(region.as_str()));
        }
        match s3
            .create_bucket()
            .bucket(bucket)
            .create_bucket_configuration(config.build())
            .send()
            .await
        {
            Ok(_) => {}
            Err(e) if has_code(&e, "BucketAlreadyOwnedByYou") => {
                return Err(KindError::new(format!(
                    "s3:CreateBucket: {bucket} already exists in this account without this \
                     resource's address tag; it is not adopted"
                )));
            }
            Err(e) => return Err(api_error("s3:CreateBucket", e)),
        }
        tracing::info!(%address, bucket, "created S3 bucket");
        settle(|| self.converge(bucket, None, desired)).await?;
        read_back(&format!("bucket {bucket}"), || self.read_one(bucket)).await
    }

    async fn update(
        &self,
        _ctx: &Context,
        _address: &Address,
        current: &Live,
        desired: &Attrs,
    ) -> Result<Live, KindError> {
        self.converge(&current.id, Some(&current.attributes), desired).await?;
        let found = self.read_one(&current.id).await?;
        still_there(&format!("bucket {}", current.id), found)
    }

    async fn delete(
        &self,
        _ctx: &Context,
        _address: &Address,
        current: &Live,
    ) -> Result<(), KindError> {
        match self.s3()?.delete_bucket().bucket(&current.id).send().await {
            Ok(_) => Ok(()),
            Err(e) if has_code(&e, "NoSuchBucket") => Ok(()),
            Err(e) if has_code(&e, "BucketNotEmpty") => Err(KindError::new(format!(
                "s3:DeleteBucket: {} still holds objects (snapshots); copy what must be kept, \
                 empty it (every version) and destroy again",
                current.id
            ))),
            Err(e) => Err(api_error("s3:DeleteBucket", e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(rule_to_json(&rule_from_json(&v).unwrap()), v);
    }
}
