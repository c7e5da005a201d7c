//! GKE kinds: the cluster (labelled, so ownership works as on AWS) and its node pools (found
//! by name inside their cluster), and the wait on Container's operations.

pub(crate) mod cluster;
pub(crate) mod node_pool;

use crate::GcpClients;
use crate::error::GcpResult;
use engine::wait::{Poll, Wait};
use engine::{Context, KindError, KindResult};
use google_cloud_container_v1::model::Operation;
use google_cloud_container_v1::model::operation::Status;
use std::time::Duration;

/// How long a GKE operation may take (a cluster create is 5 to 15 minutes).
const TIMEOUT: Duration = Duration::from_secs(45 * 60);

/// A live GKE version as the spec asks for it: `None` when the spec pins none (the release
/// channel moves it), the spec's own text when the live version is that version or a patch of
/// it (`1.34` for `1.34.5-gke.1200`), else the live version in full (drift).
pub(crate) fn shown_version(live: &str, wanted: Option<&str>) -> Option<String> {
    let wanted = wanted?;
    let matches = live == wanted
        || live
            .strip_prefix(wanted)
            .is_some_and(|rest| rest.starts_with('.') || rest.starts_with('-'));
    Some(if matches { wanted.to_string() } else { live.to_string() })
}

/// `projects/P/locations/L`.
pub(crate) fn parent(clients: &GcpClients, location: &str) -> String {
    format!("projects/{}/locations/{location}", clients.project)
}

/// `projects/P/locations/L/clusters/C`.
pub(crate) fn cluster_path(clients: &GcpClients, location: &str, cluster: &str) -> String {
    format!("{}/clusters/{cluster}", parent(clients, location))
}

/// Waits until the Container operation `op` of `what` in `location` is done, reporting its
/// progress; one that failed is an error with GKE's message.
pub(crate) async fn finish(
    clients: &GcpClients,
    ctx: &Context,
    location: &str,
    what: &str,
    op: Operation,
) -> KindResult<()> {
    let name = format!("{}/operations/{}", parent(clients, location), op.name);
    let op = if op.status == Status::Done {
        op
    } else {
        let wait =
            Wait::new(what, TIMEOUT).every(Duration::from_millis(500), Duration::from_secs(15));
        wait.until(ctx, || async {
            clients.count("container", "GetOperation");
            let op = clients.clusters.get_operation().set_name(&name).send().await;
            let op = op.api("container:GetOperation")?;
            Ok(if op.status == Status::Done {
                Poll::Done(op)
            } else {
                let detail = if op.detail.is_empty() {
                    op.status.name().unwrap_or("RUNNING").to_string()
                } else {
                    op.detail.clone()
                };
                Poll::Pending(format!(
                    "{} ({detail})",
                    op.operation_type.name().unwrap_or("operation")
                ))
            })
        })
        .await?
    };
    match &op.error {
        Some(e) if e.code != 0 => {
            Err(KindError::new(format!("{what}: {}", e.message)).with_code(e.code.to_string()))
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_compare_at_the_precision_the_spec_asks() {
        assert_eq!(shown_version("1.34.5-gke.1200", Some("1.34")), Some("1.34".into()));
        assert_eq!(shown_version("1.34.5-gke.1200", Some("1.34.5")), Some("1.34.5".into()));
        assert_eq!(shown_version("1.34.5-gke.1200", Some("1.3")), Some("1.34.5-gke.1200".into()));
        assert_eq!(shown_version("1.33.9-gke.1", Some("1.34")), Some("1.33.9-gke.1".into()));
        assert_eq!(shown_version("1.33.9-gke.1", None), None);
    }
}
