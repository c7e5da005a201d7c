//! The object-set kinds (`helm_release`, `k8s_manifests`): one [`TypedKind`] implementation,
//! [`SetKind`], over a [`SetSource`] that says where the objects come from and what the
//! attributes look like.

use super::cluster::Cluster;
use super::object_set::{self, ApplyOptions, Record, RecordRef};
use super::shared::Shared;
use async_trait::async_trait;
use engine::TypedKind;
use engine::prelude::*;
use std::sync::Arc;
use std::time::Duration;

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

/// A resource's `timeout_seconds`, else the kinds' default.
pub(crate) fn timeout(shared: &Shared, seconds: Option<u64>) -> Duration {
    engine::wait::timeout_or(seconds, shared.wait_timeout)
}

/// Where an object-set kind's objects come from.
#[async_trait]
pub(crate) trait SetSource: Send + Sync + 'static {
    type Attrs: Attributes;
    /// The kind's name.
    const NAME: &'static str;
    /// The record's kind (`release`, `manifests`).
    const SET_KIND: &'static str;

    /// The cluster the set is in: its name, and the endpoint and CA of a cluster the spec makes.
    fn cluster(attrs: &Self::Attrs) -> (&str, Option<&str>, Option<&str>);

    /// Where the set's record is kept.
    fn record_ref(attrs: &Self::Attrs) -> RecordRef;

    /// The attributes of a set as its record says, with how the cluster differs from it.
    fn live(
        cluster: &str,
        at: &RecordRef,
        record: &Record,
        out_of_sync: Vec<String>,
    ) -> Self::Attrs;

    /// The record to apply for `desired` (`old` is the one applied before, if any) and how.
    async fn build(
        &self,
        ctx: &Context,
        shared: &Shared,
        cluster: &Arc<Cluster>,
        at: &RecordRef,
        desired: &Self::Attrs,
        old: Option<&Record>,
    ) -> KindResult<(Record, ApplyOptions)>;
}

/// An object-set kind.
pub(crate) struct SetKind<S>(pub Arc<Shared>, pub S);

impl<S: SetSource> SetKind<S> {
    /// The cluster and record a read or delete is about: from desired attributes when the
    /// resource is in the spec, from the state id otherwise.
    async fn locate(
        &self,
        desired: Option<&S::Attrs>,
        id: Option<&str>,
    ) -> KindResult<Option<(Arc<Cluster>, String, RecordRef)>> {
        let (target, at) = match (desired, id) {
            (Some(d), _) => {
                let (name, endpoint, ca) = S::cluster(d);
                if endpoint.is_none() && self.0.connector.needs_outputs() {
                    // The spec's cluster is still to be made: nothing is in it yet.
                    return Ok(None);
                }
                (self.0.target(name, endpoint, ca), S::record_ref(d))
            }
            (None, Some(id)) => {
                let (cluster, at) = parse_state_id(S::SET_KIND, id)
                    .ok_or_else(|| KindError::new(format!("bad id `{id}` in state")))?;
                (self.0.target(&cluster, None, None), at)
            }
            (None, None) => return Ok(None),
        };
        let cluster = self.0.cluster(&target).await?;
        Ok(Some((cluster, target.name, at)))
    }

    /// Reads one set: its record and how the cluster differs from it.
    async fn read_one(&self, r: &ReadRequest<S::Attrs>) -> KindResult<Option<Live<S::Attrs>>> {
        let Some((cluster, name, at)) = self.locate(r.desired.as_ref(), r.id.as_deref()).await?
        else {
            return Ok(None);
        };
        let Some(record) = object_set::read_record(&cluster, &at).await? else {
            return Ok(None);
        };
        let out_of_sync = object_set::check(&cluster, &record).await?;
        Ok(Some(Live::new(state_id(&name, &at), S::live(&name, &at, &record, out_of_sync))))
    }

    async fn install(&self, ctx: &Context, desired: &S::Attrs) -> KindResult<Live<S::Attrs>> {
        let (name, endpoint, ca) = S::cluster(desired);
        let target = self.0.target(name, endpoint, ca);
        let cluster = self.0.cluster(&target).await?;
        let at = S::record_ref(desired);
        let old = object_set::read_record(&cluster, &at).await?;
        let (record, options) =
            self.1.build(ctx, &self.0, &cluster, &at, desired, old.as_ref()).await?;
        let applied = object_set::apply(ctx, &cluster, &at, record, old.as_ref(), &options).await?;
        let live = S::live(&target.name, &at, &applied, vec![]);
        Ok(Live::new(state_id(&target.name, &at), live))
    }
}

impl<S: SetSource> TypedKind for SetKind<S> {
    type Attrs = S::Attrs;
    const NAME: &'static str = S::NAME;

    async fn read(&self, _: &Context, requests: &Requests<Self>) -> Found<Self> {
        futures::future::try_join_all(requests.iter().map(|r| engine::bounded(self.read_one(r))))
            .await
    }

    async fn create(&self, ctx: &Context, desired: &Self::Attrs) -> Outcome<Self> {
        self.install(ctx, desired).await
    }

    async fn update(&self, ctx: &Context, update: Update<'_, Self>) -> Outcome<Self> {
        self.install(ctx, update.desired).await
    }

    async fn delete(&self, ctx: &Context, current: &LiveOf<Self>) -> KindResult<()> {
        let Some((cluster, _, at)) = self.locate(None, Some(&current.id)).await? else {
            return Ok(());
        };
        let (timeout, interval) = (self.0.wait_timeout, self.0.poll_interval);
        object_set::delete(ctx, &cluster, &at, timeout, interval).await
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
