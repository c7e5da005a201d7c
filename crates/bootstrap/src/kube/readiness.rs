//! Waiting for applied objects to be ready: CRDs `Established`, workloads rolled out, custom
//! resources `Ready`; and for deleted ones to be gone. Both are [`Wait`]s at the kinds' poll
//! interval; a timeout reports every object still waited for, and why.

use super::cluster::Cluster;
use super::object_id::ObjectId;
use engine::wait::{Poll, Wait};
use engine::{Context, KindError};
use serde_json::Value as Json;
use std::sync::Mutex;
use std::time::Duration;

/// Whether an object is ready, as far as the engine can tell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Readiness {
    Ready,
    /// Not yet, and why.
    Waiting(String),
    /// Nothing to wait for (ConfigMaps, Services, ...).
    Untracked,
}

const WORKLOADS: &[&str] = &["Deployment", "DaemonSet", "StatefulSet"];

/// Whether `id` is a kind the engine waits for: workloads, CRDs, and custom resources.
pub fn is_tracked(id: &ObjectId) -> bool {
    WORKLOADS.contains(&id.kind.as_str()) || id.kind == "CustomResourceDefinition" || is_custom(id)
}

/// Groups that hold no custom resources.
fn is_custom(id: &ObjectId) -> bool {
    let group = id.group();
    !(group.is_empty()
        || group.ends_with(".k8s.io")
        || matches!(group, "apps" | "batch" | "policy" | "autoscaling" | "apiregistration.k8s.io"))
}

/// The readiness of `obj` (whose identity is `id`).
pub fn readiness(id: &ObjectId, obj: &Json) -> Readiness {
    let status = obj.get("status").cloned().unwrap_or(Json::Null);
    let int = |v: &Json, p: &str| v.pointer(p).and_then(Json::as_i64).unwrap_or(0);
    let generation = int(obj, "/metadata/generation");
    let observed = int(&status, "/observedGeneration");
    if WORKLOADS.contains(&id.kind.as_str()) && observed < generation {
        return Readiness::Waiting(format!(
            "generation {generation} not yet observed by its controller"
        ));
    }
    match id.kind.as_str() {
        "Deployment" | "StatefulSet" => {
            let want = obj.pointer("/spec/replicas").and_then(Json::as_i64).unwrap_or(1);
            let updated = int(&status, "/updatedReplicas");
            let ready = if id.kind == "Deployment" {
                int(&status, "/availableReplicas")
            } else {
                int(&status, "/readyReplicas")
            };
            if updated >= want && ready >= want {
                Readiness::Ready
            } else {
                Readiness::Waiting(format!(
                    "{ready}/{want} replicas ready, {updated}/{want} updated"
                ))
            }
        }
        "DaemonSet" => {
            let want = int(&status, "/desiredNumberScheduled");
            let ready = int(&status, "/numberReady");
            let updated = int(&status, "/updatedNumberScheduled");
            if ready >= want && updated >= want {
                Readiness::Ready
            } else {
                Readiness::Waiting(format!("{ready}/{want} pods ready, {updated}/{want} updated"))
            }
        }
        "CustomResourceDefinition" => condition(&status, "Established"),
        _ if is_custom(id) => condition(&status, "Ready"),
        _ => Readiness::Untracked,
    }
}

fn condition(status: &Json, wanted: &str) -> Readiness {
    let conditions = status.get("conditions").and_then(Json::as_array).cloned().unwrap_or_default();
    match conditions.iter().find(|c| c.get("type").and_then(Json::as_str) == Some(wanted)) {
        Some(c) if c.get("status").and_then(Json::as_str) == Some("True") => Readiness::Ready,
        Some(c) => {
            let text = |k: &str| c.get(k).and_then(Json::as_str).unwrap_or("").to_string();
            Readiness::Waiting(format!(
                "{wanted}={} {}: {}",
                text("status"),
                text("reason"),
                text("message")
            ))
        }
        None => Readiness::Waiting(format!("no {wanted} condition yet")),
    }
}

/// Polls `ids` at `interval` until none is pending, for at most `timeout`: `pending` says why
/// an object (as read, `None` when absent) is still waited for. Each look reads only the objects
/// still pending; the status (and the timeout error) names every one of them and why.
async fn wait_each(
    ctx: &Context,
    cluster: &Cluster,
    what: &str,
    ids: Vec<ObjectId>,
    (timeout, interval): (Duration, Duration),
    pending: impl Fn(&ObjectId, Option<Json>) -> Option<String>,
) -> Result<(), KindError> {
    let total = ids.len();
    let left = Mutex::new(ids);
    Wait::new(what, timeout)
        .every(interval, interval)
        .until(ctx, || async {
            let ids = left.lock().unwrap_or_else(|p| p.into_inner()).clone();
            let mut still = Vec::new();
            for id in ids {
                if let Some(why) = pending(&id, cluster.get(&id).await?) {
                    still.push((id, why));
                }
            }
            if still.is_empty() {
                return Ok(Poll::Done(()));
            }
            let lines: Vec<String> = still.iter().map(|(id, why)| format!("{id}: {why}")).collect();
            let status = format!("{} of {total} object(s): {}", still.len(), lines.join("; "));
            *left.lock().unwrap_or_else(|p| p.into_inner()) =
                still.into_iter().map(|(id, _)| id).collect();
            Ok(Poll::Pending(status))
        })
        .await
}

/// Polls `ids` until each is ready or `timeout` passes; then fails naming every object not
/// ready and why.
pub async fn wait_for(
    ctx: &Context,
    cluster: &Cluster,
    ids: &[ObjectId],
    timeout: Duration,
    interval: Duration,
) -> Result<(), KindError> {
    let tracked: Vec<ObjectId> = ids.iter().filter(|id| is_tracked(id)).cloned().collect();
    wait_each(ctx, cluster, "not ready", tracked, (timeout, interval), |id, obj| match obj {
        Some(obj) => match readiness(id, &obj) {
            Readiness::Waiting(why) => Some(why),
            Readiness::Ready | Readiness::Untracked => None,
        },
        None => Some("not found".into()),
    })
    .await
}

/// Polls until every one of `ids` is gone (finalizers done), or fails naming what is left.
pub async fn wait_gone(
    ctx: &Context,
    cluster: &Cluster,
    ids: &[ObjectId],
    timeout: Duration,
    interval: Duration,
) -> Result<(), KindError> {
    let ids = ids.to_vec();
    wait_each(ctx, cluster, "deleting", ids, (timeout, interval), |_, obj| {
        obj.map(|_| "terminating".to_string())
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn id(api_version: &str, kind: &str) -> ObjectId {
        ObjectId {
            api_version: api_version.into(),
            kind: kind.into(),
            namespace: "ns".into(),
            name: "x".into(),
        }
    }

    #[test]
    fn deployments_wait_for_available_replicas_of_the_current_generation() {
        let d = id("apps/v1", "Deployment");
        let old = json!({"metadata": {"generation": 2}, "spec": {"replicas": 2},
            "status": {"observedGeneration": 1, "updatedReplicas": 2, "availableReplicas": 2}});
        assert!(matches!(readiness(&d, &old), Readiness::Waiting(w) if w.contains("generation 2")));
        let half = json!({"metadata": {"generation": 2}, "spec": {"replicas": 2},
            "status": {"observedGeneration": 2, "updatedReplicas": 2, "availableReplicas": 1}});
        assert_eq!(
            readiness(&d, &half),
            Readiness::Waiting("1/2 replicas ready, 2/2 updated".into())
        );
        let done = json!({"metadata": {"generation": 2}, "spec": {"replicas": 2},
            "status": {"observedGeneration": 2, "updatedReplicas": 2, "availableReplicas": 2}});
        assert_eq!(readiness(&d, &done), Readiness::Ready);
    }

    #[test]
    fn custom_resources_wait_for_ready_and_say_why_not() {
        let fi = id("fluxcd.controlplane.io/v1", "FluxInstance");
        let failing = json!({"status": {"conditions": [{"type": "Ready", "status": "False",
            "reason": "ReconciliationFailed", "message": "sync source unreachable"}]}});
        assert_eq!(
            readiness(&fi, &failing),
            Readiness::Waiting("Ready=False ReconciliationFailed: sync source unreachable".into())
        );
        assert_eq!(readiness(&fi, &json!({})), Readiness::Waiting("no Ready condition yet".into()));
        assert_eq!(readiness(&id("v1", "ConfigMap"), &json!({})), Readiness::Untracked);
        assert!(!is_tracked(&id("rbac.authorization.k8s.io/v1", "ClusterRole")));
        assert!(is_tracked(&id("apiextensions.k8s.io/v1", "CustomResourceDefinition")));
    }
}
