//! What the two object-set kinds (`helm_release`, `k8s_manifests`) share: ids, reads, deletes.

use super::cluster::Cluster;
use super::object_set::{self, Record, RecordRef};
use super::shared::Shared;
use engine::{Attrs, Context, KindError, Live, ReadRequest};
use serde_json::{Value as Json, json};
use std::sync::Arc;
use std::time::Duration;

pub(crate) fn text(attrs: &Attrs, key: &str) -> String {
    attrs
        .get(key)
        .and_then(Json::as_str)
        .unwrap_or_default()
        .to_string()
}

/// Where the set of `attrs` is recorded; `namespace_key` names the attribute holding the
/// record's namespace.
pub(crate) fn record_ref(set_kind: &'static str, attrs: &Attrs, namespace_key: &str) -> RecordRef {
    RecordRef {
        namespace: text(attrs, namespace_key),
        set_kind,
        name: text(attrs, "name"),
    }
}

/// The id kept in state: `<cluster>|<record namespace>|<name>`.
pub(crate) fn state_id(cluster: &str, at: &RecordRef) -> String {
    format!("{cluster}|{}|{}", at.namespace, at.name)
}

/// The cluster name and record of a state id.
pub(crate) fn parse_state_id(set_kind: &'static str, id: &str) -> Option<(String, RecordRef)> {
    let mut parts = id.splitn(3, '|');
    let cluster = parts.next()?.to_string();
    let namespace = parts.next()?.to_string();
    let name = parts.next()?.to_string();
    Some((
        cluster,
        RecordRef {
            namespace,
            set_kind,
            name,
        },
    ))
}

/// The cluster and record a read or delete is about: from desired attributes when the resource
/// is in the spec, from the state id otherwise.
pub(crate) async fn locate(
    shared: &Shared,
    set_kind: &'static str,
    namespace_key: &str,
    desired: Option<&Attrs>,
    id: Option<&str>,
) -> Result<Option<(Arc<Cluster>, String, RecordRef)>, KindError> {
    let (attrs, at) = match (desired, id) {
        (Some(d), _) => (d.clone(), record_ref(set_kind, d, namespace_key)),
        (None, Some(id)) => {
            let (cluster, at) = parse_state_id(set_kind, id)
                .ok_or_else(|| KindError::new(format!("bad id `{id}` in state")))?;
            let mut a = Attrs::new();
            a.insert("cluster".into(), json!(cluster));
            (a, at)
        }
        (None, None) => return Ok(None),
    };
    let target = shared.target(&attrs)?;
    let cluster = shared.cluster(&target).await?;
    Ok(Some((cluster, target.name, at)))
}

/// Reads one set: its record and how the cluster differs from it.
pub(crate) async fn read_one(
    shared: &Shared,
    set_kind: &'static str,
    namespace_key: &str,
    r: &ReadRequest,
    live_attrs: fn(&Record, &Attrs) -> Attrs,
) -> Result<Option<Live>, KindError> {
    let Some((cluster, cluster_name, at)) = locate(
        shared,
        set_kind,
        namespace_key,
        r.desired.as_ref(),
        r.id.as_deref(),
    )
    .await?
    else {
        return Ok(None);
    };
    let Some(record) = object_set::read_record(&cluster, &at).await? else {
        return Ok(None);
    };
    let out_of_sync = object_set::check(&cluster, &record).await?;
    Ok(Some(live(
        &cluster_name,
        &at,
        &record,
        out_of_sync,
        live_attrs,
    )))
}

/// The live view of a set.
pub(crate) fn live(
    cluster: &str,
    at: &RecordRef,
    record: &Record,
    out_of_sync: Vec<String>,
    live_attrs: fn(&Record, &Attrs) -> Attrs,
) -> Live {
    let mut common = Attrs::new();
    common.insert("cluster".into(), json!(cluster));
    common.insert("name".into(), json!(at.name));
    common.insert(
        "objects".into(),
        json!(record.ids().iter().map(|i| i.key()).collect::<Vec<_>>()),
    );
    common.insert("out_of_sync".into(), json!(out_of_sync));
    Live {
        id: state_id(cluster, at),
        attributes: live_attrs(record, &common),
    }
}

/// Deletes a set found by its state id.
pub(crate) async fn delete(
    shared: &Shared,
    ctx: &Context,
    set_kind: &'static str,
    current: &Live,
) -> Result<(), KindError> {
    let Some((cluster, _, at)) = locate(shared, set_kind, "", None, Some(&current.id)).await?
    else {
        return Ok(());
    };
    object_set::delete(
        ctx,
        &cluster,
        &at,
        shared.wait_timeout,
        shared.poll_interval,
    )
    .await
}

/// `timeout_seconds` of the attributes, else the default.
pub(crate) fn timeout(shared: &Shared, attrs: &Attrs) -> Duration {
    attrs
        .get("timeout_seconds")
        .and_then(Json::as_u64)
        .map(Duration::from_secs)
        .unwrap_or(shared.wait_timeout)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_ids_round_trip() {
        let at = RecordRef {
            namespace: "kube-system".into(),
            set_kind: "release",
            name: "cilium".into(),
        };
        let id = state_id("aws-0", &at);
        let (c, back) = parse_state_id("release", &id).unwrap();
        assert_eq!(
            (c.as_str(), back.namespace.as_str(), back.name.as_str()),
            ("aws-0", "kube-system", "cilium")
        );
    }
}
