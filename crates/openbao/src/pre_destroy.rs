//! `openbao_pre_destroy_snapshot`: a raft snapshot of OpenBao put in the lineage's snapshot
//! bucket before a destroy takes anything away, as the reference's teardown does.
//!
//! The resource depends on every other OpenBao resource of the spec, so a destroy deletes it
//! first, and its delete is the snapshot. Creating it calls nothing. A delete that cannot take
//! or keep the snapshot fails, and the destroy then deletes nothing it comes before;
//! `engine destroy --skip-snapshot` destroys without one.

use crate::shared::Shared;
use engine::prelude::*;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

#[derive(Attributes, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct PreDestroySnapshot {
    /// The object's name before its time stamp: `<prefix><unix seconds>.snap`.
    #[attr(in_place)]
    pub prefix: String,
}

pub(crate) struct PreDestroySnapshotKind(pub Arc<Shared>);

/// The prefix of the snapshots a destroy takes.
pub(crate) const PREFIX: &str = "pre-destroy-";

impl TypedKind for PreDestroySnapshotKind {
    type Attrs = PreDestroySnapshot;
    const NAME: &'static str = "openbao_pre_destroy_snapshot";

    async fn read(&self, _: &Context, requests: &Requests<Self>) -> Found<Self> {
        // Nothing in OpenBao: it exists once recorded.
        Ok(requests
            .iter()
            .map(|r| {
                let prefix = r.desired.as_ref().map_or(PREFIX.to_string(), |d| d.prefix.clone());
                r.id.clone().map(|id| Live::new(id, PreDestroySnapshot { prefix }))
            })
            .collect())
    }

    async fn create(&self, _: &Context, desired: &Self::Attrs) -> Outcome<Self> {
        Ok(Live::new("pre-destroy", desired.clone()))
    }

    async fn update(&self, _: &Context, update: Update<'_, Self>) -> Outcome<Self> {
        Ok(Live::new(update.current.id.clone(), update.desired.clone()))
    }

    async fn delete(&self, _: &Context, current: &LiveOf<Self>) -> KindResult<()> {
        if !self.0.snapshot_before_destroy {
            tracing::warn!("destroying OpenBao without a snapshot (--skip-snapshot)");
            return Ok(());
        }
        let skip = "`engine destroy --skip-snapshot` destroys without one";
        let Some(sink) = &self.0.snapshot_sink else {
            return Err(KindError::new(format!(
                "no snapshot bucket to keep OpenBao's snapshot; {skip}"
            )));
        };
        let client = self.0.client("Snapshot").await?;
        let data = client.read_bytes("Snapshot", "sys/storage/raft/snapshot").await?;
        let seconds = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or_default();
        let name = format!("{}{seconds}.snap", current.attributes.prefix);
        let at = sink.put(&name, data).await.map_err(|e| {
            KindError::retryable(format!(
                "keeping OpenBao's snapshot before the destroy: {e}; {skip}"
            ))
        })?;
        tracing::info!(snapshot = %at, "OpenBao's snapshot kept before the destroy");
        Ok(())
    }
}
