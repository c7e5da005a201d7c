//! Turning SDK errors into the engine's `KindError`, deciding what is worth retrying, and the
//! two answers every kind gives the same way: "not found" on a read is absence, "not found" on
//! a delete is done.
//!
//! Retries: the SDK retries throttling and transient failures of one call itself (adaptive
//! mode, see `provider.rs`), but not a mutating call whose answer was lost: that one is marked
//! `outcome_unknown` here (see `lost_answer.rs`). What is marked retryable here are the codes of eventual
//! consistency (an id not visible yet, a role not propagated) and of dependencies still
//! draining, which the executor retries as a step (`engine::retry`).

use aws_sdk_ec2::error::ProvideErrorMetadata;
use aws_smithy_async::future::pagination_stream::PaginationStream;
use aws_smithy_runtime_api::client::orchestrator::HttpResponse;
use aws_smithy_runtime_api::client::result::SdkError;
use aws_smithy_types::error::display::DisplayErrorContext;
use engine::KindError;

/// Error codes that pass if tried again: eventual consistency after a create, dependencies
/// still draining on delete. (Throttling is the SDK's to retry.)
const RETRYABLE: &[&str] = &[
    "DependencyViolation",
    "IncorrectState",
    "InvalidVpcID.NotFound",
    "InvalidSubnetID.NotFound",
    "InvalidRouteTableID.NotFound",
    "InvalidInternetGatewayID.NotFound",
    "InvalidAllocationID.NotFound",
    "InvalidNatGatewayID.NotFound",
    "InvalidGroup.NotFound",
    "InvalidGatewayID.NotFound",
    "InvalidVpcEndpointId.NotFound",
    "MalformedPolicyDocument",
    "ConcurrentModification",
    "OperationAbortedException",
];

/// Error codes of dependents still letting go: retried for minutes (`RetryPolicy::DRAIN`).
const DRAINING: &[&str] = &["DependencyViolation", "ResourceInUse", "ResourceInUseException"];

/// Error codes of a create whose resource exists already (the executor looks for it by its
/// ownership tags before giving up).
const ALREADY_EXISTS: &[&str] = &[
    "ResourceAlreadyExistsException",
    "EntityAlreadyExists",
    "AlreadyExistsException",
    "ResourceExistsException",
    "HostedZoneAlreadyExists",
    "DuplicateTargetGroupName",
    "DuplicateLoadBalancerName",
    "InvalidGroup.Duplicate",
    "BucketAlreadyOwnedByYou",
];

/// An SDK error as a [`KindError`] naming the operation, the code and the message.
pub(crate) fn api_error<E>(operation: &str, err: SdkError<E, HttpResponse>) -> KindError
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    let code = err.code().map(str::to_string);
    let message = match (&code, err.message(), err.raw_response()) {
        (Some(code), Some(msg), _) => format!("{operation}: {code}: {msg}"),
        (Some(code), None, _) => format!("{operation}: {code}"),
        // Not an AWS error document: e.g. an emulator that lacks the operation.
        (None, _, Some(raw)) => format!(
            "{operation}: HTTP {} from the endpoint, not an AWS error response: {}",
            raw.status().as_u16(),
            body_excerpt(raw.body().bytes().unwrap_or_default())
        ),
        _ => format!("{operation}: {}", DisplayErrorContext(&err)),
    };
    let retryable = code.as_deref().is_some_and(|c| RETRYABLE.contains(&c))
        || matches!(err, SdkError::TimeoutError(_));
    // No answer to a call that changes something: it may have taken effect
    // (`crate::lost_answer`).
    let no_answer = matches!(
        err,
        SdkError::DispatchFailure(_) | SdkError::TimeoutError(_) | SdkError::ResponseError(_)
    );
    let mutating = crate::lost_answer::is_mutating(operation.rsplit(':').next().unwrap_or(""));
    let mut error = if no_answer && mutating {
        KindError::outcome_unknown(message)
    } else if retryable {
        KindError::retryable(message)
    } else {
        KindError::new(message)
    };
    // A deleted resource's dependents (a load balancer's interfaces, an attachment) can take
    // minutes to let go.
    error.draining = code.as_deref().is_some_and(|c| DRAINING.contains(&c));
    error.retryable |= error.draining;
    error.already_exists = code.as_deref().is_some_and(|c| ALREADY_EXISTS.contains(&c));
    error.code = code;
    error.with_source(err)
}

/// What every SDK call's result turns into.
pub(crate) trait SdkResult<T> {
    /// The result, an error becoming a [`KindError`] that names `operation`.
    fn api(self, operation: &str) -> Result<T, KindError>;

    /// `None` when the cloud answers with one of `absent` (the resource does not exist).
    fn or_absent(self, operation: &str, absent: &[&str]) -> Result<Option<T>, KindError>;

    /// Done when the cloud answers with one of `gone` (deleting what is already gone).
    fn or_gone(self, operation: &str, gone: &[&str]) -> Result<(), KindError>;
}

impl<T, E> SdkResult<T> for Result<T, SdkError<E, HttpResponse>>
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    fn api(self, operation: &str) -> Result<T, KindError> {
        self.map_err(|e| api_error(operation, e))
    }

    fn or_absent(self, operation: &str, absent: &[&str]) -> Result<Option<T>, KindError> {
        match self {
            Ok(v) => Ok(Some(v)),
            Err(e) if absent.iter().any(|code| has_code(&e, code)) => Ok(None),
            Err(e) => Err(api_error(operation, e)),
        }
    }

    fn or_gone(self, operation: &str, gone: &[&str]) -> Result<(), KindError> {
        self.or_absent(operation, gone).map(|_| ())
    }
}

/// A paginated listing (`….into_paginator().items().send()`) read to its end.
pub(crate) trait Listing<T> {
    /// Every item of the listing; an error names `operation`.
    async fn all(self, operation: &str) -> Result<Vec<T>, KindError>;
}

impl<T, E> Listing<T> for PaginationStream<Result<T, SdkError<E, HttpResponse>>>
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    async fn all(self, operation: &str) -> Result<Vec<T>, KindError> {
        self.collect::<Result<Vec<T>, _>>().await.api(operation)
    }
}

/// A value the cloud must return (an id, an ARN): its absence is an error, never an empty
/// string.
pub(crate) fn required<'a>(value: Option<&'a str>, what: &str) -> Result<&'a str, KindError> {
    value
        .filter(|v| !v.is_empty())
        .ok_or_else(|| KindError::new(format!("{what} is missing from the answer")))
}

/// The readable text of a response body, tags stripped, shortened.
fn body_excerpt(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let mut out = String::new();
    let mut in_tag = false;
    for c in text.chars() {
        match c {
            '<' => in_tag = true,
            '>' => {
                in_tag = false;
                out.push(' ');
            }
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    let words: Vec<&str> = out.split_whitespace().collect();
    let joined = words.join(" ");
    if joined.is_empty() { "(empty body)".into() } else { joined.chars().take(200).collect() }
}

/// Whether an SDK error carries `code`.
pub(crate) fn has_code<E, R>(err: &SdkError<E, R>, code: &str) -> bool
where
    E: ProvideErrorMetadata,
{
    err.code() == Some(code)
}

/// A request part the SDK builds from the spec's values (a tag, a lifecycle rule): a required
/// value it lacks is a permanent error.
pub(crate) fn built<T>(
    part: Result<T, aws_smithy_types::error::operation::BuildError>,
) -> Result<T, KindError> {
    part.map_err(|e| KindError::new(format!("cannot build the request: {e}")))
}

#[cfg(test)]
mod tests {
    use super::body_excerpt;

    #[test]
    fn html_bodies_become_one_readable_line() {
        let body = b"<!doctype html>\n<html lang=en>\n<title>404 Not Found</title>\n<h1>Not Found</h1>\n<p>The requested URL was not found.</p>\n";
        assert_eq!(body_excerpt(body), "404 Not Found Not Found The requested URL was not found.");
        assert_eq!(body_excerpt(b""), "(empty body)");
    }
}
