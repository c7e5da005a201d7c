//! The object-set kinds (`helm_release`, `k8s_manifests`): one [`Kind`] implementation,
//! [`SetKind`], over a [`SetSource`] that says where the objects come from.

use super::cluster::Cluster;
use super::object_set::{self, ApplyOptions, Record, RecordRef};
use super::shared::Shared;
use async_trait::async_trait;
use engine::{Address, Attrs, Context, Field, Kind, KindError, Live, ReadRequest};
use serde_json::{Value as Json, json};
use std::sync::Arc;
use std::time::Duration;

pub(crate) fn text(attrs: &Attrs, key: &str) -> String {
    attrs.get(key).and_then(Json::as_str).unwrap_or_default().to_string()
}

/// Where the set of `attrs` is recorded; `namespace_key` names the attribute holding the
/// record's namespace.
pub(crate) fn record_ref(set_kind: &'static str, attrs: &Attrs, namespace_key: &str) -> RecordRef {
    RecordRef { namespace: text(attrs, namespace_key), set_kind, name: text(attrs, "name") }
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
    Some((cluster, RecordRef { namespace, set_kind, name }))
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
    let Some((cluster, cluster_name, at)) =
        locate(shared, set_kind, namespace_key, r.desired.as_ref(), r.id.as_deref()).await?
    else {
        return Ok(None);
    };
    let Some(record) = object_set::read_record(&cluster, &at).await? else {
        return Ok(None);
    };
    let out_of_sync = object_set::check(&cluster, &record).await?;
    Ok(Some(live(&cluster_name, &at, &record, out_of_sync, live_attrs)))
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
    common
        .insert("objects".into(), json!(record.ids().iter().map(|i| i.key()).collect::<Vec<_>>()));
    common.insert("out_of_sync".into(), json!(out_of_sync));
    Live { id: state_id(cluster, at), attributes: live_attrs(record, &common) }
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
    object_set::delete(ctx, &cluster, &at, shared.wait_timeout, shared.poll_interval).await
}

/// `timeout_seconds` of the attributes, else the default.
pub(crate) fn timeout(shared: &Shared, attrs: &Attrs) -> Duration {
    attrs
        .get("timeout_seconds")
        .and_then(Json::as_u64)
        .map(Duration::from_secs)
        .unwrap_or(shared.wait_timeout)
}

/// Where an object-set kind's objects come from.
#[async_trait]
pub(crate) trait SetSource: Send + Sync {
    /// The kind's name.
    const NAME: &'static str;
    /// The record's kind (`release`, `manifests`).
    const SET_KIND: &'static str;
    /// The attribute naming the record's namespace.
    const NAMESPACE_KEY: &'static str;
    const FIELDS: &'static [Field];

    /// Live attributes from a record, added to the common ones.
    fn live_attrs(record: &Record, common: &Attrs) -> Attrs;

    /// The record to apply for `desired` (`old` is the one applied before, if any) and how.
    async fn build(
        &self,
        ctx: &Context,
        shared: &Shared,
        cluster: &Arc<Cluster>,
        at: &RecordRef,
        desired: &Attrs,
        old: Option<&Record>,
    ) -> Result<(Record, ApplyOptions), KindError>;
}

/// An object-set kind.
pub(crate) struct SetKind<S>(pub Arc<Shared>, pub S);

impl<S: SetSource> SetKind<S> {
    async fn install(&self, ctx: &Context, desired: &Attrs) -> Result<Live, KindError> {
        let target = self.0.target(desired)?;
        let cluster = self.0.cluster(&target).await?;
        let at = record_ref(S::SET_KIND, desired, S::NAMESPACE_KEY);
        let old = object_set::read_record(&cluster, &at).await?;
        let (record, options) =
            self.1.build(ctx, &self.0, &cluster, &at, desired, old.as_ref()).await?;
        let applied = object_set::apply(ctx, &cluster, &at, record, old.as_ref(), &options).await?;
        let mut live = live(&target.name, &at, &applied, vec![], S::live_attrs);
        live.attributes.insert(S::NAMESPACE_KEY.into(), json!(at.namespace));
        Ok(live)
    }
}

#[async_trait]
impl<S: SetSource> Kind for SetKind<S> {
    fn name(&self) -> &'static str {
        S::NAME
    }

    fn fields(&self) -> &'static [Field] {
        S::FIELDS
    }

    async fn read(
        &self,
        _ctx: &Context,
        requests: &[ReadRequest],
    ) -> Result<Vec<Option<Live>>, KindError> {
        futures::future::try_join_all(requests.iter().map(|r| async move {
            let found = read_one(&self.0, S::SET_KIND, S::NAMESPACE_KEY, r, S::live_attrs).await?;
            Ok::<_, KindError>(found.map(|mut l| {
                let ns = parse_state_id(S::SET_KIND, &l.id)
                    .map(|(_, at)| at.namespace)
                    .unwrap_or_default();
                l.attributes.insert(S::NAMESPACE_KEY.into(), json!(ns));
                l
            }))
        }))
        .await
    }

    async fn create(
        &self,
        ctx: &Context,
        _address: &Address,
        desired: &Attrs,
    ) -> Result<Live, KindError> {
        self.install(ctx, desired).await
    }

    async fn update(
        &self,
        ctx: &Context,
        _address: &Address,
        _current: &Live,
        desired: &Attrs,
    ) -> Result<Live, KindError> {
        self.install(ctx, desired).await
    }

    async fn delete(
        &self,
        ctx: &Context,
        _address: &Address,
        current: &Live,
    ) -> Result<(), KindError> {
        delete(&self.0, ctx, S::SET_KIND, current).await
    }
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
