//! The GCP provider: its sections, expansion and kinds, and the clients they share.

use crate::clients::{ClientError, GcpClients, GcpConfig};
use crate::stages;
use engine::spec::{FieldPath, SpecErrors, SpecSource};
use engine::{ApiCallCounter, ApiCalls, Kind, Provider, ResourceSpec};
use std::sync::Arc;

/// The `gcp` lane's cloud resources. Its clients are made for the spec's project and region
/// when it is built, so expanding the spec is pure.
pub struct GcpProvider {
    counter: ApiCallCounter,
    /// The clients, or why they could not be made (a damaged credentials file): then the
    /// expansion reports it, before any call.
    clients: Result<Arc<GcpClients>, ClientError>,
}

impl GcpProvider {
    /// A provider with clients for `config`.
    pub async fn new(config: &GcpConfig) -> Self {
        let counter = ApiCallCounter::default();
        let clients = GcpClients::new(config, counter.clone()).await.map(Arc::new);
        GcpProvider { counter, clients }
    }

    /// The config of `spec`'s project and region (empty when they do not read: the engine then
    /// reports the spec's errors before any call), reaching GCP at `endpoint` when given.
    pub fn config_for(spec: &SpecSource, endpoint: Option<String>) -> GcpConfig {
        let region = spec.globals().map(|g| g.region).unwrap_or_default();
        let project = stages::project::section(spec).map(|g| g.project).unwrap_or_default();
        GcpConfig { project, region, endpoint }
    }

    /// The clients (for tests and tools that inspect the cloud).
    pub fn clients(&self) -> Result<&Arc<GcpClients>, &ClientError> {
        self.clients.as_ref()
    }
}

impl Provider for GcpProvider {
    fn lane(&self) -> &'static str {
        "gcp"
    }

    fn sections(&self) -> &'static [&'static str] {
        &["gcp", "network", "access", "gke", "openbao"]
    }

    fn expand(&self, spec: &SpecSource) -> Result<Vec<ResourceSpec>, SpecErrors> {
        let globals = spec.globals()?;
        let gcp = stages::project::section(spec)?;
        if let Err(e) = &self.clients {
            return Err(spec.errors(vec![spec.error(&FieldPath::root("gcp"), e.to_string())]));
        }
        // Every stage's errors at once.
        let mut resources = Vec::new();
        let mut errors: Option<SpecErrors> = None;
        for stage in [
            stages::network::expand(spec, &globals, &gcp),
            stages::access::expand(spec, &globals, &gcp),
            stages::gke::expand(spec, &globals, &gcp),
            stages::openbao::expand(spec, &globals, &gcp),
        ] {
            match (stage, &mut errors) {
                (Ok(r), _) => resources.extend(r),
                (Err(e), Some(all)) => all.extend(e),
                (Err(e), None) => errors = Some(e),
            }
        }
        match errors {
            Some(e) => Err(e),
            None => Ok(resources),
        }
    }

    fn kinds(&self) -> Vec<Arc<dyn Kind>> {
        self.clients.as_ref().map(crate::kinds::all).unwrap_or_default()
    }

    fn api_calls(&self) -> ApiCalls {
        self.counter.snapshot()
    }
}
