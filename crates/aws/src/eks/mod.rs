//! EKS kinds: the cluster, managed node groups, addons, access entries and their policy
//! associations, pod identity associations; EKS bearer tokens for the cluster's API server.
//!
//! Shared here: tagging (by ARN), the ids of per-cluster resources (`<cluster>:<name>`, or
//! `#`-joined where a part is an ARN), and the waits on EKS's long operations: a resource
//! reaching a status, an update (`DescribeUpdate`) finishing, a resource going away.

pub(crate) mod access_entry;
pub(crate) mod access_policy_association;
pub(crate) mod addon;
pub(crate) mod cluster;
pub(crate) mod controller_sweep;
pub(crate) mod node_group;
pub(crate) mod pod_identity;
pub mod token;

use crate::error::{SdkResult, required};
use crate::tagging::TagApi;
use async_trait::async_trait;
use aws_sdk_eks::types::{Update, UpdateStatus};
use base64::Engine as _;
use engine::wait::{Poll, Wait};
use engine::{Context, KindError, KindResult, Live, ReadRequest, Tags};
use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::time::Duration;

/// What EKS answers when there is no such resource.
pub(crate) const NOT_FOUND: &[&str] = &["ResourceNotFoundException"];

/// EKS's tagging calls (by ARN).
pub(crate) struct EksTags<'a>(pub &'a aws_sdk_eks::Client);

#[async_trait]
impl TagApi for EksTags<'_> {
    async fn untag(&self, arn: &str, keys: Vec<String>) -> KindResult<()> {
        let call = self.0.untag_resource().resource_arn(arn).set_tag_keys(Some(keys));
        call.send().await.api("eks:UntagResource").map(|_| ())
    }

    async fn tag(&self, arn: &str, tags: Tags) -> KindResult<()> {
        let call = self.0.tag_resource().resource_arn(arn).set_tags(Some(eks_map(&tags)));
        call.send().await.api("eks:TagResource").map(|_| ())
    }
}

/// Brings the tags of the EKS resource `arn` (as read) from `current` to `desired`.
pub(crate) async fn retag(
    eks: &aws_sdk_eks::Client,
    arn: Option<&str>,
    current: &Tags,
    desired: &Tags,
) -> KindResult<()> {
    let arn = required(arn, "the resource's ARN (to tag it)")?;
    crate::tagging::retag(&EksTags(eks), arn, current, desired).await
}

/// Tags (or labels) as EKS takes them.
pub(crate) fn eks_map(map: &BTreeMap<String, String>) -> HashMap<String, String> {
    map.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
}

/// Tags (or labels) as EKS returns them.
pub(crate) fn map_of(map: Option<&HashMap<String, String>>) -> BTreeMap<String, String> {
    map.map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect()).unwrap_or_default()
}

/// The `N` parts of an id joined with `sep` (`<cluster>:<name>`, `<cluster>#<principal>`).
pub(crate) fn id_parts<const N: usize>(id: &str, sep: char) -> KindResult<[&str; N]> {
    let parts: Vec<&str> = id.split(sep).collect();
    parts.try_into().map_err(|_| KindError::new(format!("bad EKS id {id}")))
}

/// The parts of the key a read of a per-cluster resource is about: from the spec (`of`), else
/// the recorded id (the parts joined with `sep`).
pub(crate) fn request_key<A, const N: usize>(
    r: &ReadRequest<A>,
    sep: char,
    of: impl Fn(&A) -> [&str; N],
) -> Option<[String; N]> {
    let parts = match (&r.desired, &r.id) {
        (Some(d), _) => of(d),
        (None, Some(id)) => id_parts(id, sep).ok()?,
        (None, None) => return None,
    };
    Some(parts.map(str::to_string))
}

/// The (cluster, name) a read of an addon or a node group is about: from the spec (`of`), else
/// the recorded id `<cluster>:<name>`.
pub(crate) fn cluster_and_name<A>(
    r: &ReadRequest<A>,
    of: impl Fn(&A) -> [&str; 2],
) -> Option<[String; 2]> {
    request_key(r, ':', of)
}

/// `e`, retryable when its code is `code` and its message mentions one of `hints` (any
/// message when there are none): an IAM role not propagated yet, a dependency still going.
pub(crate) fn retryable_if(mut e: KindError, code: &str, hints: &[&str]) -> KindError {
    e.retryable |= e.code.as_deref() == Some(code)
        && (hints.is_empty() || hints.iter().any(|h| e.message.contains(h)));
    e
}

/// An EKS resource's status (`ACTIVE`, `CREATING`, ...), as read.
pub(crate) trait Status {
    fn status(&self) -> Option<&str>;
}

/// Waits until `read` finds `what` in one of the `done` statuses; one of `failed` is an error.
pub(crate) async fn wait_status<A: Status, F, Fut>(
    ctx: &Context,
    what: &str,
    timeout: Duration,
    done: &[&str],
    failed: &[&str],
    read: F,
) -> KindResult<Live<A>>
where
    F: Fn() -> Fut,
    Fut: Future<Output = KindResult<Option<Live<A>>>>,
{
    Wait::new(what, timeout)
        .until(ctx, || {
            let found = read();
            async move {
                let Some(live) = found.await? else {
                    return Ok(Poll::Pending("not visible yet".into()));
                };
                let status = live.attributes.status().unwrap_or("unknown").to_string();
                if done.contains(&status.as_str()) {
                    Ok(Poll::Done(live))
                } else if failed.contains(&status.as_str()) {
                    Err(KindError::new(format!("{what} is {status}")))
                } else {
                    Ok(Poll::Pending(status))
                }
            }
        })
        .await
}

/// Waits until `read` no longer finds `what`.
pub(crate) async fn wait_gone<A: Status, F, Fut>(
    ctx: &Context,
    what: &str,
    timeout: Duration,
    read: F,
) -> KindResult<()>
where
    F: Fn() -> Fut,
    Fut: Future<Output = KindResult<Option<Live<A>>>>,
{
    Wait::new(format!("{what} deletion"), timeout)
        .until(ctx, || {
            let found = read();
            async move {
                Ok(match found.await? {
                    None => Poll::Done(()),
                    Some(l) => Poll::Pending(l.attributes.status().unwrap_or("DELETING").into()),
                })
            }
        })
        .await
}

/// What an update belongs to (`DescribeUpdate` needs it).
#[derive(Clone, Copy)]
pub(crate) enum UpdateOf<'a> {
    Cluster,
    NodeGroup(&'a str),
    Addon(&'a str),
}

/// Waits until the update that `operation` started (`started`) on `cluster` has succeeded.
pub(crate) async fn wait_update(
    ctx: &Context,
    eks: &aws_sdk_eks::Client,
    cluster: &str,
    of: UpdateOf<'_>,
    operation: &str,
    started: Option<&Update>,
    timeout: Duration,
) -> KindResult<()> {
    let id = required(started.and_then(|u| u.id()), &format!("{operation}: update id"))?;
    tracing::info!(cluster, update = id, "{operation} started");
    Wait::new(format!("update {id} of {cluster}"), timeout)
        .until(ctx, || async {
            let call = eks.describe_update().name(cluster).update_id(id);
            let call = match of {
                UpdateOf::Cluster => call,
                UpdateOf::NodeGroup(n) => call.nodegroup_name(n),
                UpdateOf::Addon(a) => call.addon_name(a),
            };
            let out = call.send().await.api("eks:DescribeUpdate")?;
            let update =
                out.update().ok_or_else(|| KindError::new("eks:DescribeUpdate: no update"))?;
            let status = update.status().map_or("unknown", |s| s.as_str());
            match update.status() {
                Some(UpdateStatus::Successful) => Ok(Poll::Done(())),
                Some(UpdateStatus::Failed | UpdateStatus::Cancelled) => {
                    let errors = update.errors().iter().filter_map(|e| e.error_message());
                    let errors = errors.collect::<Vec<_>>().join("; ");
                    Err(KindError::new(format!("update {id} of {cluster} {status}: {errors}")))
                }
                _ => Ok(Poll::Pending(status.to_string())),
            }
        })
        .await
}

/// The PEM text of a cluster's `certificateAuthority.data` (base64 of the PEM).
pub fn decode_ca(data: &str) -> Result<String, String> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data.trim())
        .map_err(|e| format!("the cluster CA is not base64: {e}"))?;
    let pem = String::from_utf8(bytes).map_err(|_| "the cluster CA is not PEM text".to_string())?;
    if !pem.trim_start().starts_with("-----BEGIN CERTIFICATE-----") {
        return Err("the cluster CA is not a PEM certificate".into());
    }
    Ok(pem)
}

/// The host of an endpoint URL (`https://ABC.gr7.eu-west-3.eks.amazonaws.com` -> the host).
pub fn endpoint_host(endpoint: &str) -> String {
    let rest = endpoint.split_once("://").map_or(endpoint, |(_, rest)| rest);
    let authority = rest.split('/').next().unwrap_or_default();
    authority
        .rsplit_once(':')
        .filter(|(_, port)| port.chars().all(|c| c.is_ascii_digit()))
        .map_or(authority, |(host, _)| host)
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ca_is_decoded_to_pem() {
        let pem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
        let data = base64::engine::general_purpose::STANDARD.encode(pem);
        assert_eq!(decode_ca(&data).unwrap(), pem);
        assert!(decode_ca("not base64!").unwrap_err().contains("base64"));
        let garbage = base64::engine::general_purpose::STANDARD.encode("hello");
        assert!(decode_ca(&garbage).unwrap_err().contains("PEM"));
    }

    #[test]
    fn endpoint_hosts() {
        assert_eq!(
            endpoint_host("https://ABC123.gr7.eu-west-3.eks.amazonaws.com"),
            "ABC123.gr7.eu-west-3.eks.amazonaws.com"
        );
        assert_eq!(endpoint_host("https://10.0.0.1:6443/"), "10.0.0.1");
        assert_eq!(endpoint_host("example.org"), "example.org");
    }

    #[test]
    fn ids_split_into_their_parts() {
        assert_eq!(id_parts::<2>("aws-0:main", ':').unwrap(), ["aws-0", "main"]);
        let arn = "arn:aws:iam::1:role/ops";
        assert_eq!(id_parts::<2>(&format!("aws-0#{arn}"), '#').unwrap(), ["aws-0", arn]);
        assert!(id_parts::<3>("aws-0#x", '#').is_err());
    }
}
