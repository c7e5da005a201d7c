//! `aws_s3files_file_system`: an S3 Files file system over a bucket (made elsewhere and looked
//! up: `aws_s3_bucket_lookup`).
//!
//! Its id is the file system's. One made by a run that died before recording it is found among
//! the bucket's file systems by its address and lineage tags (given in the create call itself),
//! and a create retried after a lost answer sends the same client token, so S3 Files answers
//! with the file system the first try made. Nothing of it changes in place but its tags.

use super::{
    NOT_FOUND, S3FilesTags, client_token, gone, read_recorded_then_tagged, s3files_tags,
    status_text, tags_of,
};
use crate::AwsClients;
use crate::eks::retryable_if;
use crate::error::{SdkResult, required};
use crate::lookup::still_there;
use crate::tagging::retag;
use aws_sdk_s3files::types::LifeCycleState;
use engine::prelude::*;
use engine::wait::{Poll, Wait};
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::time::Duration;

#[derive(Attributes, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct FileSystem {
    /// The bucket's name (S3 Files takes and answers its ARN).
    #[attr(replace)]
    pub bucket: String,
    /// The role S3 Files takes to keep the file system and the bucket in sync.
    #[attr(replace)]
    pub role_arn: String,
    #[attr(in_place, tags)]
    pub tags: Tags,
    #[attr(computed)]
    pub arn: Option<String>,
}

pub(crate) struct FileSystemKind(pub Arc<AwsClients>);

/// How long a file system may take to become available, or to go.
const TIMEOUT: Duration = Duration::from_secs(10 * 60);

fn bucket_arn(bucket: &str) -> String {
    format!("arn:aws:s3:::{bucket}")
}

impl FileSystemKind {
    /// The file system `id` and its status; absent when S3 Files does not know it or it is
    /// being deleted.
    async fn read_one(&self, id: &str) -> KindResult<Option<(Live<FileSystem>, LifeCycleState)>> {
        let call = self.0.s3files.get_file_system().file_system_id(id);
        let Some(out) = call.send().await.or_absent("s3files:GetFileSystem", NOT_FOUND)? else {
            return Ok(None);
        };
        if gone(out.status()) {
            return Ok(None);
        }
        let bucket = out.bucket().unwrap_or_default();
        let file_system = FileSystem {
            bucket: bucket.strip_prefix("arn:aws:s3:::").unwrap_or(bucket).to_string(),
            role_arn: out.role_arn().unwrap_or_default().to_string(),
            tags: tags_of(out.tags()),
            arn: out.file_system_arn().map(str::to_string),
        };
        let status = out.status().cloned().unwrap_or(LifeCycleState::Creating);
        Ok(Some((Live::new(id, file_system), status)))
    }

    /// The file systems of `bucket` (ids), listed once per run.
    async fn of_bucket(&self, ctx: &Context, bucket: &str) -> KindResult<Arc<Vec<String>>> {
        ctx.memo(&format!("s3files:file-systems:{bucket}"), || async {
            let call = self.0.s3files.list_file_systems().bucket(bucket_arn(bucket));
            let pages = call.into_paginator().send().collect::<Result<Vec<_>, _>>().await;
            let pages = pages.api("s3files:ListFileSystems")?;
            let ids = pages.iter().flat_map(|p| p.file_systems());
            Ok(ids.map(|f| f.file_system_id().to_string()).collect())
        })
        .await
    }

    /// Waits until the file system `id` is available.
    async fn available(&self, ctx: &Context, id: &str) -> Outcome<Self> {
        Wait::new(format!("file system {id}"), TIMEOUT)
            .until(ctx, || async {
                match self.read_one(id).await? {
                    Some((live, LifeCycleState::Available)) => Ok(Poll::Done(live)),
                    Some((_, LifeCycleState::Error | LifeCycleState::Misconfigured)) => {
                        Err(KindError::new(format!(
                            "file system {id} failed: check its role's trust and the bucket"
                        )))
                    }
                    Some((_, status)) => Ok(Poll::Pending(status_text(Some(&status)))),
                    None => Ok(Poll::Pending("not visible yet".into())),
                }
            })
            .await
    }
}

impl TypedKind for FileSystemKind {
    type Attrs = FileSystem;
    const NAME: &'static str = "aws_s3files_file_system";

    async fn read(&self, ctx: &Context, requests: &Requests<Self>) -> Found<Self> {
        let read_one = |id: String| async move { Ok(self.read_one(&id).await?.map(|(l, _)| l)) };
        let listed = |d: &FileSystem| {
            let bucket = d.bucket.clone();
            async move { self.of_bucket(ctx, &bucket).await }
        };
        read_recorded_then_tagged(requests, read_one, listed).await
    }

    async fn create(&self, ctx: &Context, desired: &Self::Attrs) -> Outcome<Self> {
        let call = self
            .0
            .s3files
            .create_file_system()
            .bucket(bucket_arn(&desired.bucket))
            .role_arn(&desired.role_arn)
            .accept_bucket_warning(true)
            .client_token(client_token(&desired.tags))
            .set_tags(Some(s3files_tags(&desired.tags)?));
        // A role IAM has not propagated yet: nothing was made, tried again.
        let out = call.send().await.api("s3files:CreateFileSystem");
        let out = out.map_err(|e| retryable_if(e, "ValidationException", &["role"]))?;
        ctx.forget(&format!("s3files:file-systems:{}", desired.bucket));
        let id = required(out.file_system_id(), "s3files:CreateFileSystem: fileSystemId")?;
        self.available(ctx, id).await
    }

    async fn update(&self, _: &Context, update: Update<'_, Self>) -> Outcome<Self> {
        let Update { current, desired, .. } = update;
        let tags = (&current.attributes.tags, &desired.tags);
        retag(&S3FilesTags(&self.0.s3files), &current.id, tags.0, tags.1).await?;
        let found = self.read_one(&current.id).await?.map(|(live, _)| live);
        still_there(&format!("file system {}", current.id), found)
    }

    async fn delete(&self, ctx: &Context, current: &LiveOf<Self>) -> KindResult<()> {
        let id = &current.id;
        let call = self.0.s3files.delete_file_system().file_system_id(id);
        match call.send().await.or_gone("s3files:DeleteFileSystem", NOT_FOUND) {
            // Its mount targets and access points go first, as resources of their own.
            Err(e) if e.has_code("ConflictException") => {
                return Err(KindError { retryable: true, ..e });
            }
            done => done?,
        }
        Wait::new(format!("file system {id} to go"), TIMEOUT)
            .until(ctx, || async {
                Ok(match self.read_one(id).await? {
                    None => Poll::Done(()),
                    Some((_, status)) => Poll::Pending(status_text(Some(&status))),
                })
            })
            .await
    }
}
