//! The one list of every GCP kind.

use crate::GcpClients;
use crate::compute::{
    address, backend_service, firewall, forwarding_rule, health_check, instance_group, network,
    router, router_nat, subnetwork,
};
use crate::container::{cluster, node_pool};
use crate::dns::{managed_zone, policy, record_set};
use crate::iam::{member, service_account};
use crate::kms::{crypto_key, key_ring};
use crate::storage::bucket;
use crate::storagetransfer::{service_agent, transfer_job};
use engine::{Kind, Typed};
use std::sync::Arc;

pub(crate) fn all(c: &Arc<GcpClients>) -> Vec<Arc<dyn Kind>> {
    vec![
        Arc::new(Typed(network::NetworkKind(c.clone()))),
        Arc::new(Typed(subnetwork::SubnetworkKind(c.clone()))),
        Arc::new(Typed(router::RouterKind(c.clone()))),
        Arc::new(Typed(router_nat::RouterNatKind(c.clone()))),
        Arc::new(Typed(firewall::FirewallKind(c.clone()))),
        Arc::new(Typed(managed_zone::ManagedZoneKind(c.clone()))),
        Arc::new(Typed(policy::PolicyKind(c.clone()))),
        Arc::new(Typed(cluster::ClusterKind(c.clone()))),
        Arc::new(Typed(node_pool::NodePoolKind(c.clone()))),
        Arc::new(Typed(key_ring::KeyRingKind(c.clone()))),
        Arc::new(Typed(crypto_key::CryptoKeyKind(c.clone()))),
        Arc::new(Typed(bucket::BucketKind(c.clone()))),
        Arc::new(Typed(service_account::ServiceAccountKind(c.clone()))),
        Arc::new(Typed(member::MemberKind(c.clone()))),
        Arc::new(Typed(address::AddressKind(c.clone()))),
        Arc::new(Typed(health_check::HealthCheckKind(c.clone()))),
        Arc::new(Typed(backend_service::BackendServiceKind(c.clone()))),
        Arc::new(Typed(forwarding_rule::ForwardingRuleKind(c.clone()))),
        Arc::new(Typed(instance_group::InstanceGroupKind(c.clone()))),
        Arc::new(Typed(record_set::RecordSetKind(c.clone()))),
        Arc::new(Typed(service_agent::ServiceAgentKind(c.clone()))),
        Arc::new(Typed(transfer_job::TransferJobKind(c.clone()))),
    ]
}
