//! `aws_s3files_mount_target`: a file system's NFS endpoint in one subnet (one per zone). Mount
//! targets carry no tags: one of the spec's file system (which is ours) in the subnet the spec
//! names is ours, found in the file system's listing (one call per file system and run). Its
//! security groups change in place; its id is the mount target's.

use super::{NOT_FOUND, gone, status_text};
use crate::AwsClients;
use crate::error::{SdkResult, required};
use crate::lookup::still_there;
use aws_sdk_s3files::types::LifeCycleState;
use engine::prelude::*;
use engine::wait::{Poll, Wait};
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::time::Duration;

#[derive(Attributes, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct MountTarget {
    #[attr(replace)]
    pub file_system_id: String,
    #[attr(replace)]
    pub subnet_id: String,
    #[attr(in_place, unordered)]
    pub security_groups: Vec<String>,
    #[attr(computed)]
    pub ip_address: Option<String>,
}

pub(crate) struct MountTargetKind(pub Arc<AwsClients>);

/// How long a mount target may take to become available, or to go (its network interface).
const TIMEOUT: Duration = Duration::from_secs(10 * 60);

fn listing_key(file_system: &str) -> String {
    format!("s3files:mount-targets:{file_system}")
}

impl MountTargetKind {
    /// The mount target `id` and its status; absent when unknown or going.
    async fn read_one(&self, id: &str) -> KindResult<Option<(Live<MountTarget>, LifeCycleState)>> {
        let call = self.0.s3files.get_mount_target().mount_target_id(id);
        let Some(out) = call.send().await.or_absent("s3files:GetMountTarget", NOT_FOUND)? else {
            return Ok(None);
        };
        if gone(out.status()) {
            return Ok(None);
        }
        let mount = MountTarget {
            file_system_id: out.file_system_id().unwrap_or_default().to_string(),
            subnet_id: out.subnet_id().to_string(),
            security_groups: out.security_groups().to_vec(),
            ip_address: out.ipv4_address().map(str::to_string),
        };
        let status = out.status().cloned().unwrap_or(LifeCycleState::Creating);
        Ok(Some((Live::new(id, mount), status)))
    }

    /// (mount target id, subnet id) of the file system's mount targets, listed once per run.
    async fn of_file_system(
        &self,
        ctx: &Context,
        file_system: &str,
    ) -> KindResult<Arc<Vec<(String, String)>>> {
        ctx.memo(&listing_key(file_system), || async {
            let call = self.0.s3files.list_mount_targets().file_system_id(file_system);
            let pages = call.into_paginator().send().collect::<Result<Vec<_>, _>>().await;
            let pages = pages.or_absent("s3files:ListMountTargets", NOT_FOUND)?;
            let all = pages.iter().flatten().flat_map(|p| p.mount_targets());
            let live = all.filter(|m| !gone(m.status()));
            Ok(live.map(|m| (m.mount_target_id().to_string(), m.subnet_id().to_string())).collect())
        })
        .await
    }

    /// The mount target a request is about: by its recorded id, else the one of the spec's file
    /// system in the spec's subnet.
    async fn find(
        &self,
        ctx: &Context,
        r: &ReadRequest<MountTarget>,
    ) -> KindResult<Option<Live<MountTarget>>> {
        if let Some(id) = &r.id {
            return Ok(self.read_one(id).await?.map(|(live, _)| live));
        }
        let Some(d) = &r.desired else { return Ok(None) };
        let listed = self.of_file_system(ctx, &d.file_system_id).await?;
        match listed.iter().find(|(_, subnet)| *subnet == d.subnet_id) {
            Some((id, _)) => Ok(self.read_one(id).await?.map(|(live, _)| live)),
            None => Ok(None),
        }
    }

    /// Polls the mount target `id` until `done` says so of its status (`None`: gone).
    async fn wait_for(
        &self,
        ctx: &Context,
        id: &str,
        what: &str,
        done: impl Fn(Option<&LifeCycleState>) -> bool,
    ) -> KindResult<Option<Live<MountTarget>>> {
        Wait::new(format!("mount target {id} {what}"), TIMEOUT)
            .until(ctx, || async {
                let found = self.read_one(id).await?;
                let status = found.as_ref().map(|(_, s)| s.clone());
                match (done(status.as_ref()), status) {
                    (true, _) => Ok(Poll::Done(found.map(|(live, _)| live))),
                    (false, Some(LifeCycleState::Error)) => {
                        Err(KindError::new(format!("mount target {id} failed")))
                    }
                    (false, status) => Ok(Poll::Pending(status_text(status.as_ref()))),
                }
            })
            .await
    }
}

impl TypedKind for MountTargetKind {
    type Attrs = MountTarget;
    const NAME: &'static str = "aws_s3files_mount_target";

    async fn read(&self, ctx: &Context, requests: &Requests<Self>) -> Found<Self> {
        let finds = requests.iter().map(|r| engine::bounded(self.find(ctx, r)));
        futures::future::try_join_all(finds).await
    }

    async fn create(&self, ctx: &Context, desired: &Self::Attrs) -> Outcome<Self> {
        let call = self
            .0
            .s3files
            .create_mount_target()
            .file_system_id(&desired.file_system_id)
            .subnet_id(&desired.subnet_id)
            .set_security_groups(Some(desired.security_groups.clone()));
        let out = call.send().await.api("s3files:CreateMountTarget")?;
        ctx.forget(&listing_key(&desired.file_system_id));
        let id = required(Some(out.mount_target_id()), "s3files:CreateMountTarget: mountTargetId")?;
        let available = |s: Option<&LifeCycleState>| s == Some(&LifeCycleState::Available);
        let found = self.wait_for(ctx, id, "to be available", available).await?;
        still_there(&format!("mount target {id}"), found)
    }

    async fn update(&self, _: &Context, update: Update<'_, Self>) -> Outcome<Self> {
        let Update { current, desired, .. } = update;
        let call = self.0.s3files.update_mount_target().mount_target_id(&current.id);
        let call = call.set_security_groups(Some(desired.security_groups.clone()));
        call.send().await.api("s3files:UpdateMountTarget")?;
        let found = self.read_one(&current.id).await?.map(|(live, _)| live);
        still_there(&format!("mount target {}", current.id), found)
    }

    async fn delete(&self, ctx: &Context, current: &LiveOf<Self>) -> KindResult<()> {
        let id = &current.id;
        let call = self.0.s3files.delete_mount_target().mount_target_id(id);
        call.send().await.or_gone("s3files:DeleteMountTarget", NOT_FOUND)?;
        ctx.forget(&listing_key(&current.attributes.file_system_id));
        // Its network interface holds the subnet and the security groups until it is gone.
        self.wait_for(ctx, id, "to go", |s| s.is_none()).await.map(|_| ())
    }
}
