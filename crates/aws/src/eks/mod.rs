//! EKS kinds: the cluster, managed node groups, addons, access entries and their policy
//! associations, pod identity associations; EKS bearer tokens for the cluster's API server.

mod access_entry;
mod addon;
pub mod cluster;
mod node_group;
mod pod_identity;
pub mod token;
pub(crate) mod wait;

use crate::AwsClients;
use engine::Kind;
use std::sync::Arc;

pub(crate) fn kinds(shared: &Arc<AwsClients>) -> Vec<Arc<dyn Kind>> {
    vec![
        Arc::new(cluster::EksCluster(shared.clone())),
        Arc::new(node_group::EksNodeGroup(shared.clone())),
        Arc::new(addon::EksAddon(shared.clone())),
        Arc::new(access_entry::EksAccessEntry(shared.clone())),
        Arc::new(access_entry::EksAccessPolicyAssociation(shared.clone())),
        Arc::new(pod_identity::EksPodIdentityAssociation(shared.clone())),
    ]
}

/// The (cluster, name) a read of a per-cluster resource (addon, node group) is about: from the
/// spec, else the recorded id `<cluster>:<name>`.
pub(crate) fn cluster_and_name(r: &engine::ReadRequest) -> Option<(String, String)> {
    let from_desired = r.desired.as_ref().and_then(|d| {
        Some((d.get("cluster_name")?.as_str()?.to_string(), d.get("name")?.as_str()?.to_string()))
    });
    from_desired.or_else(|| {
        r.id.as_ref().and_then(|id| id.split_once(':')).map(|(c, n)| (c.to_string(), n.to_string()))
    })
}
