//! The GCP API clients every kind shares, made once per run for the spec's project and region,
//! and the counting of their calls.

use engine::{ApiCall, ApiCallCounter};
use google_cloud_compute_v1::client as compute;
use google_cloud_container_v1::client as container;
use google_cloud_dns_v1::client as dns;
use google_cloud_iam_admin_v1::client as iam;
use google_cloud_kms_v1::client as kms;
use google_cloud_secretmanager_v1::client as secretmanager;
use google_cloud_storagetransfer_v1::client as storagetransfer;

/// Where and how the clients reach GCP.
#[derive(Debug, Clone, Default)]
pub struct GcpConfig {
    /// The project every resource lives in, e.g. `ogenki-435905`.
    pub project: String,
    /// The region of regional resources, e.g. `europe-west4`.
    pub region: String,
    /// One endpoint for every service instead of Google's (a local fake): the services are
    /// told apart by their paths, and requests carry no credentials.
    pub endpoint: Option<String>,
}

/// A client could not be made (bad credentials file, no default credentials).
#[derive(Debug, thiserror::Error)]
#[error("making the GCP {service} client: {message}")]
pub struct ClientError {
    pub service: &'static str,
    pub message: String,
}

/// The clients, the project and region they serve, and the call counter.
pub struct GcpClients {
    pub project: String,
    pub region: String,
    pub networks: compute::Networks,
    pub subnetworks: compute::Subnetworks,
    pub routers: compute::Routers,
    pub firewalls: compute::Firewalls,
    pub addresses: compute::Addresses,
    pub region_health_checks: compute::RegionHealthChecks,
    pub region_backend_services: compute::RegionBackendServices,
    pub forwarding_rules: compute::ForwardingRules,
    pub instance_templates: compute::InstanceTemplates,
    pub region_instance_group_managers: compute::RegionInstanceGroupManagers,
    pub managed_zones: dns::ManagedZones,
    pub policies: dns::Policies,
    pub record_sets: dns::ResourceRecordSets,
    pub clusters: container::ClusterManager,
    pub kms: kms::KeyManagementService,
    pub secrets: secretmanager::SecretManagerService,
    pub iam: iam::Iam,
    pub transfer: storagetransfer::StorageTransferService,
    /// Cloud Storage's JSON API (its bucket calls have no REST client in Google's crates).
    pub storage: crate::storage::JsonApi,
    calls: ApiCallCounter,
}

/// Builds one client with the config's endpoint and, for a local endpoint, no credentials;
/// otherwise Application Default Credentials, as every Google tool finds them.
macro_rules! client {
    ($type:ty, $service:literal, $config:expr) => {{
        let mut builder = <$type>::builder();
        if let Some(endpoint) = &$config.endpoint {
            let anonymous = google_cloud_auth::credentials::anonymous::Builder::new().build();
            builder = builder.with_endpoint(endpoint.clone()).with_credentials(anonymous);
        }
        builder
            .build()
            .await
            .map_err(|e| ClientError { service: $service, message: e.to_string() })?
    }};
}

impl GcpClients {
    /// Clients for `config`, counting into `calls`. Makes no API call.
    pub async fn new(config: &GcpConfig, calls: ApiCallCounter) -> Result<Self, ClientError> {
        Ok(GcpClients {
            project: config.project.clone(),
            region: config.region.clone(),
            networks: client!(compute::Networks, "compute", config),
            subnetworks: client!(compute::Subnetworks, "compute", config),
            routers: client!(compute::Routers, "compute", config),
            firewalls: client!(compute::Firewalls, "compute", config),
            addresses: client!(compute::Addresses, "compute", config),
            region_health_checks: client!(compute::RegionHealthChecks, "compute", config),
            region_backend_services: client!(compute::RegionBackendServices, "compute", config),
            forwarding_rules: client!(compute::ForwardingRules, "compute", config),
            instance_templates: client!(compute::InstanceTemplates, "compute", config),
            region_instance_group_managers: client!(
                compute::RegionInstanceGroupManagers,
                "compute",
                config
            ),
            managed_zones: client!(dns::ManagedZones, "dns", config),
            policies: client!(dns::Policies, "dns", config),
            record_sets: client!(dns::ResourceRecordSets, "dns", config),
            clusters: client!(container::ClusterManager, "container", config),
            kms: client!(kms::KeyManagementService, "cloudkms", config),
            secrets: client!(secretmanager::SecretManagerService, "secretmanager", config),
            iam: client!(iam::Iam, "iam", config),
            transfer: client!(storagetransfer::StorageTransferService, "storagetransfer", config),
            storage: crate::storage::JsonApi::new(config.endpoint.as_deref())
                .map_err(|message| ClientError { service: "storage", message })?,
            calls,
        })
    }

    /// Counts one call of `service` (`compute`, `dns`), e.g. `InsertNetwork` or `ListRouters`.
    pub(crate) fn count(&self, service: &str, operation: &str) {
        self.calls.record(&ApiCall { service: service.into(), operation: operation.into() });
    }
}
