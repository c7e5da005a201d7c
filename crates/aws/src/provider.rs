//! The AWS provider: spec sections, expansion, kinds, and the clients they share.

use crate::clients::AwsClients;
use crate::{eks, network, openbao};
use aws_config::SdkConfig;
use aws_config::retry::RetryConfig;
use engine::spec::{SpecErrors, SpecSource};
use engine::{ApiCallCounter, ApiCalls, Kind, Provider, ResourceSpec};
use std::sync::{Arc, OnceLock};

/// Clients are made when the spec's region is known (at expansion); kinds share them.
#[derive(Debug, Default)]
pub(crate) struct Shared {
    clients: OnceLock<AwsClients>,
}

impl Shared {
    pub(crate) fn clients(&self) -> Result<&AwsClients, engine::KindError> {
        self.clients
            .get()
            .ok_or_else(|| engine::KindError::new("AWS clients used before the spec was expanded"))
    }
}

/// The `aws` lane.
pub struct AwsProvider {
    base: SdkConfig,
    counter: ApiCallCounter,
    shared: Arc<Shared>,
}

impl AwsProvider {
    /// A provider using `base` for credentials, endpoint (`AWS_ENDPOINT_URL`) and retries. The
    /// region comes from the spec's `[globals] region`.
    pub fn new(base: SdkConfig) -> Self {
        AwsProvider {
            base,
            counter: ApiCallCounter::default(),
            shared: Arc::new(Shared::default()),
        }
    }

    /// A provider configured from the environment: the usual credential chain and profile,
    /// `AWS_ENDPOINT_URL`, adaptive retries for throttling.
    pub async fn from_env() -> Self {
        Self::new(sdk_config_from_env(None).await)
    }

    /// The clients, once the spec has been expanded (for tests and tools that inspect the cloud).
    pub fn clients(&self) -> Option<&AwsClients> {
        self.shared.clients.get()
    }
}

impl Provider for AwsProvider {
    fn lane(&self) -> &'static str {
        "aws"
    }

    fn sections(&self) -> &'static [&'static str] {
        &["network", "openbao", "eks"]
    }

    fn expand(&self, spec: &SpecSource) -> Result<Vec<ResourceSpec>, SpecErrors> {
        let globals = spec.globals()?;
        let mut resources = network::expand(spec, &globals)?;
        resources.extend(openbao::expand(spec, &globals)?);
        resources.extend(eks::expand(spec, &globals)?);
        let _ = self.shared.clients.set(AwsClients::new(
            &self.base,
            &globals.region,
            globals.secondary_region.as_deref(),
            &self.counter,
        ));
        Ok(resources)
    }

    fn kinds(&self) -> Vec<Arc<dyn Kind>> {
        let mut kinds = network::kinds(&self.shared);
        kinds.extend(openbao::kinds(&self.shared));
        kinds.extend(eks::kinds(&self.shared));
        kinds
    }

    fn api_calls(&self) -> ApiCalls {
        self.counter.snapshot()
    }
}

/// The SDK configuration from the environment's credential chain, with the engine's retry
/// settings, in `region` when given.
pub async fn sdk_config_from_env(region: Option<&str>) -> aws_config::SdkConfig {
    let mut loader = aws_config::defaults(aws_config::BehaviorVersion::latest())
        .retry_config(RetryConfig::adaptive().with_max_attempts(8));
    if let Some(region) = region.filter(|r| !r.is_empty()) {
        loader = loader.region(aws_config::Region::new(region.to_string()));
    }
    loader.load().await
}
