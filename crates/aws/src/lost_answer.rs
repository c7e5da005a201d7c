//! A call that changes something is never repeated blindly by the SDK.
//!
//! When a mutating call's answer is lost (the connection dropped, or no byte came back before
//! the read timeout), the cloud may have done it: `CreateVpc` tried again makes a second VPC.
//! [`LostAnswers`] turns such an attempt's transport error into one the SDK does not retry, and
//! [`crate::error::api_error`] marks it `outcome_unknown`: the executor then looks for what the
//! call may have made (by its ownership tags) before it tries the create again. Reads, and
//! errors the cloud answered (throttling, 5xx), are still retried by the SDK.

use aws_smithy_runtime_api::box_error::BoxError;
use aws_smithy_runtime_api::client::interceptors::Intercept;
use aws_smithy_runtime_api::client::interceptors::context::FinalizerInterceptorContextMut;
use aws_smithy_runtime_api::client::orchestrator::{Metadata, OrchestratorError};
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_types::config_bag::ConfigBag;
use engine::ApiCall;

/// Whether the operation `name` (`CreateVpc`, `DescribeVpcs`) changes something.
pub(crate) fn is_mutating(name: &str) -> bool {
    !ApiCall { service: String::new(), operation: name.to_string() }.is_read()
}

/// The answer of a mutating call did not arrive: the call may or may not have taken effect.
#[derive(Debug, thiserror::Error)]
#[error("no answer came back, so the call may have taken effect: {0}")]
pub(crate) struct LostAnswer(#[source] BoxError);

/// An SDK interceptor that stops the SDK's own retries of mutating calls whose answer was lost.
#[derive(Debug, Clone)]
pub(crate) struct LostAnswers;

impl Intercept for LostAnswers {
    fn name(&self) -> &'static str {
        "LostAnswers"
    }

    fn modify_before_attempt_completion(
        &self,
        context: &mut FinalizerInterceptorContextMut<'_>,
        _runtime_components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let mutating = cfg.load::<Metadata>().is_some_and(|m| is_mutating(m.name()));
        let Some(Err(error)) = context.output_or_error_mut() else { return Ok(()) };
        let lost = error.is_timeout_error()
            || error.is_response_error()
            || error.as_connector_error().is_some_and(|c| c.is_io() || c.is_timeout());
        if mutating && lost {
            let original = std::mem::replace(error, OrchestratorError::other("answer lost"));
            *error = OrchestratorError::other(LostAnswer(Box::new(original)));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::is_mutating;

    #[test]
    fn reads_are_not_mutating() {
        assert!(is_mutating("CreateVpc") && is_mutating("AuthorizeSecurityGroupIngress"));
        assert!(!is_mutating("DescribeVpcs") && !is_mutating("ListTagsForResource"));
        assert!(!is_mutating("GetHostedZone"));
    }
}
