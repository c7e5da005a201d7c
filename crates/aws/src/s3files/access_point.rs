//! `aws_s3files_access_point`: an application's entry into a file system, with the POSIX
//! identity it acts as and the directory it sees as its root (made with the owner and mode
//! given when it does not exist). Nothing of it changes in place but its tags.
//!
//! Its id is the access point's. One made by a run that died before recording it is found among
//! the file system's access points by its address and lineage tags (given in the create call),
//! and a retried create sends the same client token.

use super::{
    NOT_FOUND, S3FilesTags, client_token, gone, read_recorded_then_tagged, s3files_tags,
    status_text, tags_of,
};
use crate::AwsClients;
use crate::error::{SdkResult, built};
use crate::lookup::still_there;
use crate::tagging::retag;
use aws_sdk_s3files::operation::get_access_point::GetAccessPointOutput;
use aws_sdk_s3files::types::{self as api, LifeCycleState};
use engine::prelude::*;
use engine::wait::{Poll, Wait};
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::time::Duration;

#[derive(Attributes, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct AccessPoint {
    #[attr(replace)]
    pub file_system_id: String,
    /// The identity every request through the access point acts as.
    #[attr(replace)]
    pub posix_user: PosixUser,
    #[attr(replace)]
    pub root_directory: RootDirectory,
    #[attr(in_place, tags)]
    pub tags: Tags,
    #[attr(computed)]
    pub arn: Option<String>,
    /// What a Kubernetes volume of the CSI driver names: `s3files:<file system>::<access point>`.
    #[attr(computed)]
    pub volume_handle: Option<String>,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct PosixUser {
    pub uid: i64,
    pub gid: i64,
}

/// The directory the access point exposes as `/`, and how it is made when missing.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct RootDirectory {
    pub path: String,
    pub owner_uid: i64,
    pub owner_gid: i64,
    /// Octal mode, e.g. `0775`.
    pub permissions: String,
}

pub(crate) struct AccessPointKind(pub Arc<AwsClients>);

/// How long an access point may take to become available.
const TIMEOUT: Duration = Duration::from_secs(5 * 60);

fn listing_key(file_system: &str) -> String {
    format!("s3files:access-points:{file_system}")
}

fn access_point_of(out: &GetAccessPointOutput) -> AccessPoint {
    let posix = out.posix_user();
    let root = out.root_directory();
    let made = root.and_then(|r| r.creation_permissions());
    AccessPoint {
        file_system_id: out.file_system_id().to_string(),
        posix_user: PosixUser {
            uid: posix.map_or(0, |p| p.uid()),
            gid: posix.map_or(0, |p| p.gid()),
        },
        root_directory: RootDirectory {
            path: root.and_then(|r| r.path()).unwrap_or("/").to_string(),
            owner_uid: made.map_or(0, |m| m.owner_uid()),
            owner_gid: made.map_or(0, |m| m.owner_gid()),
            permissions: made.map(|m| m.permissions().to_string()).unwrap_or_default(),
        },
        tags: tags_of(out.tags()),
        arn: Some(out.access_point_arn().to_string()),
        volume_handle: Some(format!("s3files:{}::{}", out.file_system_id(), out.access_point_id())),
    }
}

impl AccessPointKind {
    /// The access point `id` and its status; absent when unknown or going.
    async fn read_one(&self, id: &str) -> KindResult<Option<(Live<AccessPoint>, LifeCycleState)>> {
        let call = self.0.s3files.get_access_point().access_point_id(id);
        let Some(out) = call.send().await.or_absent("s3files:GetAccessPoint", NOT_FOUND)? else {
            return Ok(None);
        };
        if gone(Some(out.status())) {
            return Ok(None);
        }
        Ok(Some((Live::new(id, access_point_of(&out)), out.status().clone())))
    }

    /// The ids of the file system's access points, listed once per run.
    async fn of_file_system(
        &self,
        ctx: &Context,
        file_system: &str,
    ) -> KindResult<Arc<Vec<String>>> {
        ctx.memo(&listing_key(file_system), || async {
            let call = self.0.s3files.list_access_points().file_system_id(file_system);
            let pages = call.into_paginator().send().collect::<Result<Vec<_>, _>>().await;
            let pages = pages.or_absent("s3files:ListAccessPoints", NOT_FOUND)?;
            let all = pages.iter().flatten().flat_map(|p| p.access_points());
            Ok(all.map(|a| a.access_point_id().to_string()).collect())
        })
        .await
    }
}

impl TypedKind for AccessPointKind {
    type Attrs = AccessPoint;
    const NAME: &'static str = "aws_s3files_access_point";

    async fn read(&self, ctx: &Context, requests: &Requests<Self>) -> Found<Self> {
        let read_one = |id: String| async move { Ok(self.read_one(&id).await?.map(|(l, _)| l)) };
        let listed = |d: &AccessPoint| {
            let file_system = d.file_system_id.clone();
            async move { self.of_file_system(ctx, &file_system).await }
        };
        read_recorded_then_tagged(requests, read_one, listed).await
    }

    async fn create(&self, ctx: &Context, desired: &Self::Attrs) -> Outcome<Self> {
        let (user, root) = (&desired.posix_user, &desired.root_directory);
        let posix = built(api::PosixUser::builder().uid(user.uid).gid(user.gid).build())?;
        let made = api::CreationPermissions::builder()
            .owner_uid(root.owner_uid)
            .owner_gid(root.owner_gid)
            .permissions(&root.permissions)
            .build();
        let root_directory = api::RootDirectory::builder()
            .path(&root.path)
            .creation_permissions(built(made)?)
            .build();
        let call = self
            .0
            .s3files
            .create_access_point()
            .file_system_id(&desired.file_system_id)
            .posix_user(posix)
            .root_directory(root_directory)
            .client_token(client_token(&desired.tags))
            .set_tags(Some(s3files_tags(&desired.tags)?));
        let out = call.send().await.api("s3files:CreateAccessPoint")?;
        ctx.forget(&listing_key(&desired.file_system_id));
        let id = out.access_point_id().to_string();
        // Its file system is available already (its create waits for it, where the reference
        // sleeps two minutes); the access point itself becomes available shortly.
        Wait::new(format!("access point {id}"), TIMEOUT)
            .until(ctx, || async {
                match self.read_one(&id).await? {
                    Some((live, LifeCycleState::Available)) => Ok(Poll::Done(live)),
                    Some((_, LifeCycleState::Error)) => {
                        Err(KindError::new(format!("access point {id} failed")))
                    }
                    Some((_, status)) => Ok(Poll::Pending(status_text(Some(&status)))),
                    None => Ok(Poll::Pending("not visible yet".into())),
                }
            })
            .await
    }

    async fn update(&self, _: &Context, update: Update<'_, Self>) -> Outcome<Self> {
        let Update { current, desired, .. } = update;
        let tags = (&current.attributes.tags, &desired.tags);
        retag(&S3FilesTags(&self.0.s3files), &current.id, tags.0, tags.1).await?;
        let found = self.read_one(&current.id).await?.map(|(live, _)| live);
        still_there(&format!("access point {}", current.id), found)
    }

    async fn delete(&self, ctx: &Context, current: &LiveOf<Self>) -> KindResult<()> {
        let call = self.0.s3files.delete_access_point().access_point_id(&current.id);
        call.send().await.or_gone("s3files:DeleteAccessPoint", NOT_FOUND)?;
        ctx.forget(&listing_key(&current.attributes.file_system_id));
        Ok(())
    }
}
