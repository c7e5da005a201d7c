//! `aws_s3files_file_system_policy`: the resource policy of a file system (who may mount it,
//! write to it). A file system has one; the policy of a file system that is ours is ours. Its id
//! is the file system's; the document compares as an IAM policy and is written whole.

use super::NOT_FOUND;
use crate::AwsClients;
use crate::error::SdkResult;
use crate::iam::{policy_document, policy_text};
use crate::lookup::read_each;
use engine::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;
use std::sync::Arc;

#[derive(Attributes, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct FileSystemPolicy {
    #[attr(replace)]
    pub file_system_id: String,
    #[attr(in_place, normalize = engine::normalize::iam_policy)]
    pub policy: Json,
}

pub(crate) struct FileSystemPolicyKind(pub Arc<AwsClients>);

impl FileSystemPolicyKind {
    async fn read_one(&self, file_system: &str) -> KindResult<Option<Live<FileSystemPolicy>>> {
        let call = self.0.s3files.get_file_system_policy().file_system_id(file_system);
        let found = call.send().await.or_absent("s3files:GetFileSystemPolicy", NOT_FOUND)?;
        Ok(found.filter(|out| !out.policy().is_empty()).map(|out| {
            let policy = policy_document(out.policy());
            Live::new(file_system, FileSystemPolicy { file_system_id: file_system.into(), policy })
        }))
    }

    /// Writes the whole document (a retry cannot make a second one).
    async fn put(&self, desired: &FileSystemPolicy) -> Outcome<Self> {
        let call = self.0.s3files.put_file_system_policy().file_system_id(&desired.file_system_id);
        call.policy(policy_text(&desired.policy))
            .send()
            .await
            .api("s3files:PutFileSystemPolicy")?;
        Ok(Live::new(&desired.file_system_id, desired.clone()))
    }
}

impl TypedKind for FileSystemPolicyKind {
    type Attrs = FileSystemPolicy;
    const NAME: &'static str = "aws_s3files_file_system_policy";

    async fn read(&self, _: &Context, requests: &Requests<Self>) -> Found<Self> {
        let key_of = |r: &ReadRequest<FileSystemPolicy>| {
            r.desired.as_ref().map(|d| d.file_system_id.clone()).or_else(|| r.id.clone())
        };
        read_each(requests, key_of, |fs| async move { self.read_one(&fs).await }).await
    }

    async fn create(&self, _: &Context, desired: &Self::Attrs) -> Outcome<Self> {
        self.put(desired).await
    }

    async fn update(&self, _: &Context, update: Update<'_, Self>) -> Outcome<Self> {
        self.put(update.desired).await
    }

    async fn delete(&self, _: &Context, current: &LiveOf<Self>) -> KindResult<()> {
        let call = self.0.s3files.delete_file_system_policy().file_system_id(&current.id);
        call.send().await.or_gone("s3files:DeleteFileSystemPolicy", NOT_FOUND)
    }
}
