//! Waiting for applied objects to be ready: CRDs `Established`, workloads rolled out, custom
//! resources `Ready`. A timeout reports every object still waited for, and why.

use super::cluster::Cluster;
use super::object_id::ObjectId;
use engine::{Context, KindError};
use serde_json::Value as Json;
use std::time::{Duration, Instant};

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

/// Polls `ids` until each is ready or `timeout` passes; then fails naming what is not ready.
pub async fn wait_for(
    ctx: &Context,
    cluster: &Cluster,
    ids: &[ObjectId],
    timeout: Duration,
    interval: Duration,
) -> Result<(), KindError> {
    let start = Instant::now();
    let mut pending: Vec<ObjectId> = ids.iter().filter(|id| is_tracked(id)).cloned().collect();
    loop {
        let mut still = Vec::new();
        for id in &pending {
            let state = match cluster.get(id).await? {
                Some(obj) => readiness(id, &obj),
                None => Readiness::Waiting("not found".into()),
            };
            if let Readiness::Waiting(why) = state {
                still.push((id.clone(), why));
            }
        }
        if still.is_empty() {
            return Ok(());
        }
        if start.elapsed() >= timeout {
            let lines: Vec<String> =
                still.iter().map(|(id, why)| format!("  {id}: {why}")).collect();
            return Err(KindError::new(format!(
                "{} object(s) not ready after {}s:\n{}",
                still.len(),
                timeout.as_secs(),
                lines.join("\n")
            )));
        }
        ctx.waiting(format!(
            "{} of {} object(s) ready; waiting for {}",
            pending.len() - still.len(),
            pending.len(),
            still[0].0
        ));
        pending = still.into_iter().map(|(id, _)| id).collect();
        tokio::time::sleep(interval).await;
    }
}

/// Polls until every one of `ids` is gone (finalizers done), or fails naming what is left.
pub async fn wait_gone(
    ctx: &Context,
    cluster: &Cluster,
    ids: &[ObjectId],
    timeout: Duration,
    interval: Duration,
) -> Result<(), KindError> {
    let start = Instant::now();
    let mut left: Vec<ObjectId> = ids.to_vec();
    loop {
        let mut still = Vec::new();
        for id in left {
            if cluster.get(&id).await?.is_some() {
                still.push(id);
            }
        }
        let Some(first) = still.first() else {
            return Ok(());
        };
        if start.elapsed() >= timeout {
            let names: Vec<String> = still.iter().map(|i| format!("  {i}")).collect();
            return Err(KindError::new(format!(
                "{} object(s) still terminating after {}s:\n{}",
                still.len(),
                timeout.as_secs(),
                names.join("\n")
            )));
        }
        ctx.waiting(format!("{} object(s) terminating, e.g. {first}", still.len()));
        left = still;
        tokio::time::sleep(interval).await;
    }
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
