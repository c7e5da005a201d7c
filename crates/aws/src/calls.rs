//! Counts every API call (each attempt) sent by the SDK clients.

use aws_smithy_runtime_api::box_error::BoxError;
use aws_smithy_runtime_api::client::interceptors::Intercept;
use aws_smithy_runtime_api::client::interceptors::context::BeforeTransmitInterceptorContextRef;
use aws_smithy_runtime_api::client::orchestrator::Metadata;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_types::config_bag::ConfigBag;
use engine::{ApiCall, ApiCallCounter};

/// An SDK interceptor recording `service:Operation` for every attempt sent.
#[derive(Debug, Clone)]
pub(crate) struct CountCalls(pub ApiCallCounter);

impl Intercept for CountCalls {
    fn name(&self) -> &'static str {
        "CountCalls"
    }

    fn read_before_transmit(
        &self,
        _context: &BeforeTransmitInterceptorContextRef<'_>,
        _runtime_components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        if let Some(meta) = cfg.load::<Metadata>() {
            let service = meta.service().to_ascii_lowercase();
            let service = match service.as_str() {
                "amazonec2" | "ec2" => "ec2".to_string(),
                other => other.replace(' ', ""),
            };
            self.0.record(&ApiCall { service, operation: meta.name().to_string() });
        }
        Ok(())
    }
}
