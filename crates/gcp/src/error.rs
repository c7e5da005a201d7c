//! GCP client errors to [`KindError`]: the HTTP status names the error (`404`, `409`), transport
//! failures, timeouts, throttling and server errors are retryable, and "not found" means absent
//! on reads and done on deletes.

use engine::KindError;
use google_cloud_gax::error::Error;
use google_cloud_gax::error::rpc::Code;

/// A call's result with the error mapped for the engine.
pub(crate) trait GcpResult<T> {
    /// The value, or the error as a [`KindError`] naming `op`.
    fn api(self, op: &str) -> Result<T, KindError>;
    /// `None` when the resource does not exist (404).
    fn or_absent(self, op: &str) -> Result<Option<T>, KindError>;
}

impl<T> GcpResult<T> for Result<T, Error> {
    fn api(self, op: &str) -> Result<T, KindError> {
        self.map_err(|e| kind_error(op, &e))
    }

    fn or_absent(self, op: &str) -> Result<Option<T>, KindError> {
        match self {
            Ok(v) => Ok(Some(v)),
            Err(e) if e.http_status_code() == Some(404) => Ok(None),
            Err(e) => Err(kind_error(op, &e)),
        }
    }
}

/// The error of `op` as the engine sees it: the HTTP status as its code; retryable when trying
/// again may succeed (throttling, server errors, the network); a call whose answer was lost
/// may have taken effect (the executor then looks for what it made); "already exists" is
/// marked so the executor can take over what an earlier try made.
pub(crate) fn kind_error(op: &str, e: &Error) -> KindError {
    let status = e.http_status_code();
    let message = match e.status() {
        Some(s) if !s.message.is_empty() => format!("{op}: {}", s.message),
        _ => format!("{op}: {e}"),
    };
    let lost =
        (e.is_transport() || e.is_timeout() || e.is_io()) && !e.is_transient_and_before_rpc();
    // Another operation holds the resource (GKE: "the cluster is running an incompatible
    // operation"; Compute: a resource not ready yet): it passes once that one ends.
    let busy = e.status().is_some_and(|s| s.code == Code::FailedPrecondition);
    let mut error = if lost {
        KindError::outcome_unknown(message)
    } else if busy
        || e.is_connect()
        || e.is_transient_and_before_rpc()
        || matches!(status, Some(429 | 500..=599))
    {
        KindError::retryable(message)
    } else {
        KindError::new(message)
    };
    if let Some(code) = status {
        error = error.with_code(code.to_string());
    }
    error.already_exists = status == Some(409);
    error
}
