//! `openbao_raft_autopilot`: Raft autopilot's configuration
//! (`sys/storage/raft/autopilot/configuration`), as the reference sets it in `ha` mode: dead
//! servers cleaned up after a while, never below a quorum.
//!
//! One per server, id `raft-autopilot`. A write sends the whole desired configuration; a read
//! gives OpenBao's (its thresholds as Go durations, `30m0s`, read as seconds). A delete calls
//! nothing: OpenBao keeps the last configuration, which only matters while the cluster exists.

use crate::shared::{Shared, flag, int, read_each};
use crate::spec::Ttl;
use engine::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::{Value as Json, json};
use std::sync::Arc;

#[derive(Attributes, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct Autopilot {
    #[attr(in_place)]
    pub cleanup_dead_servers: bool,
    /// Seconds without contact before a server counts as dead.
    #[attr(in_place)]
    pub dead_server_last_contact_threshold: i64,
    #[attr(in_place)]
    pub min_quorum: i64,
}

pub(crate) struct AutopilotKind(pub Arc<Shared>);

const ID: &str = "raft-autopilot";
const PATH: &str = "sys/storage/raft/autopilot/configuration";

/// Seconds of a Go duration (`30m0s`), or of plain seconds.
fn seconds(value: Option<&Json>) -> i64 {
    match value {
        Some(Json::String(text)) => Ttl::parse(text).map_or(0, |t| t.0),
        other => int(other),
    }
}

impl AutopilotKind {
    async fn read_config(&self) -> KindResult<Option<Live<Autopilot>>> {
        let Some(client) = self.0.reader("GetRaftAutopilotConfiguration").await? else {
            return Ok(None);
        };
        let data = self.0.read_data(&client, "GetRaftAutopilotConfiguration", PATH).await?;
        Ok(data.map(|d| {
            Live::new(
                ID,
                Autopilot {
                    cleanup_dead_servers: flag(d.get("cleanup_dead_servers")),
                    dead_server_last_contact_threshold: seconds(
                        d.get("dead_server_last_contact_threshold"),
                    ),
                    min_quorum: int(d.get("min_quorum")),
                },
            )
        }))
    }

    async fn write(&self, desired: &Autopilot) -> KindResult<Live<Autopilot>> {
        let op = "PutRaftAutopilotConfiguration";
        let client = self.0.client(op).await?;
        let body = json!({
            "cleanup_dead_servers": desired.cleanup_dead_servers,
            "dead_server_last_contact_threshold": format!("{}s", desired.dead_server_last_contact_threshold),
            "min_quorum": desired.min_quorum,
        });
        client.write(op, PATH, &body).await?;
        let found = self.read_config().await?;
        found.ok_or_else(|| KindError::retryable("Raft autopilot's configuration not readable"))
    }
}

impl TypedKind for AutopilotKind {
    type Attrs = Autopilot;
    const NAME: &'static str = "openbao_raft_autopilot";

    async fn read(&self, _: &Context, requests: &Requests<Self>) -> Found<Self> {
        // Always there once OpenBao runs on raft: recorded, or the spec's to set.
        read_each(requests, |_| ID.to_string(), |_, _| async move { self.read_config().await })
            .await
    }

    async fn create(&self, _: &Context, desired: &Self::Attrs) -> Outcome<Self> {
        self.write(desired).await
    }

    async fn update(&self, _: &Context, update: Update<'_, Self>) -> Outcome<Self> {
        self.write(update.desired).await
    }

    async fn delete(&self, _: &Context, _: &LiveOf<Self>) -> KindResult<()> {
        Ok(())
    }
}
