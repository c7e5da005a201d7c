//! `KindError`: how a kind's operation failed, with the cloud's error code and the error it
//! came from.

use std::sync::Arc;

/// A failure of a kind's operation.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct KindError {
    /// What failed, for people: names the operation and the cloud's message.
    pub message: String,
    /// The cloud's error code, if any (e.g. `DependencyViolation`).
    pub code: Option<String>,
    /// Worth trying again after a pause (eventual consistency, a dependency still draining).
    pub retryable: bool,
    /// Something that depends on the resource is still letting go of it (a network interface
    /// of a deleted load balancer, an attachment), or the server is away in a way that mends
    /// itself (an auto-unseal OpenBao sealed by a restart): retried for minutes
    /// ([`crate::RetryPolicy::DRAIN`]), not seconds.
    pub draining: bool,
    /// The call may have taken effect though no answer came back (the connection dropped or
    /// timed out after the request was sent): before trying a create again, the executor looks
    /// for what it may have made.
    pub outcome_unknown: bool,
    /// The cloud says the resource exists already: it may be the one a create of an earlier
    /// run made (its request still in flight when that run died). The executor takes it when
    /// its ownership tags say it is this resource, and fails otherwise.
    pub already_exists: bool,
    /// The error this one came from (an SDK or HTTP error), for callers that inspect it.
    #[source]
    pub source: Option<Arc<dyn std::error::Error + Send + Sync>>,
}

impl KindError {
    /// A permanent error.
    pub fn new(message: impl Into<String>) -> Self {
        KindError {
            message: message.into(),
            code: None,
            retryable: false,
            draining: false,
            outcome_unknown: false,
            already_exists: false,
            source: None,
        }
    }

    /// An error that may pass if tried again.
    pub fn retryable(message: impl Into<String>) -> Self {
        KindError { retryable: true, ..KindError::new(message) }
    }

    /// An error that passes once dependents have let go: retried for minutes.
    pub fn draining(message: impl Into<String>) -> Self {
        KindError { draining: true, ..KindError::retryable(message) }
    }

    /// A call that may have taken effect without its answer arriving: retryable, once what it
    /// may have made has been looked for.
    pub fn outcome_unknown(message: impl Into<String>) -> Self {
        KindError { outcome_unknown: true, ..KindError::retryable(message) }
    }

    /// The same error with the cloud's error code.
    pub fn with_code(mut self, code: impl Into<String>) -> Self {
        self.code = Some(code.into());
        self
    }

    /// The same error, keeping `source` as its cause.
    pub fn with_source(mut self, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        self.source = Some(Arc::new(source));
        self
    }

    /// The same error, not to be retried.
    pub fn permanent(mut self) -> Self {
        self.retryable = false;
        self.draining = false;
        self.outcome_unknown = false;
        self
    }

    /// Whether the cloud answered with `code`.
    pub fn has_code(&self, code: &str) -> bool {
        self.code.as_deref() == Some(code)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error;

    #[test]
    fn keeps_code_and_source() {
        let io = std::io::Error::other("connection reset");
        let e = KindError::retryable("ec2:CreateVpc: failed")
            .with_code("RequestLimitExceeded")
            .with_source(io);
        assert!(e.retryable);
        assert!(e.has_code("RequestLimitExceeded"));
        assert_eq!(e.to_string(), "ec2:CreateVpc: failed");
        assert_eq!(e.source().unwrap().to_string(), "connection reset");
        assert!(!e.permanent().retryable);
    }
}
