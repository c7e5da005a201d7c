//! Compute's long-running operations: a write answers with an operation, which is polled until
//! it is `DONE`; an operation that ends with errors fails the step with GCP's own message.

use engine::wait::{Poll, Wait};
use engine::{Context, KindError, KindResult};
use google_cloud_compute_v1::model::Operation;
use google_cloud_compute_v1::model::operation::Status;
use std::future::Future;
use std::time::Duration;

/// How long a Compute write may take (Cloud NAT and routers take a few minutes at worst).
const TIMEOUT: Duration = Duration::from_secs(900);

/// Waits until `op` (the answer of a write of `what`) is done: `poll(name)` reads it again.
/// An operation that failed is an error carrying its first error's code and message.
pub(crate) async fn finish<F, Fut>(
    ctx: &Context,
    what: &str,
    op: Operation,
    poll: F,
) -> KindResult<()>
where
    F: Fn(String) -> Fut,
    Fut: Future<Output = KindResult<Operation>>,
{
    let op = if op.status == Some(Status::Done) {
        op
    } else {
        let name =
            op.name.clone().ok_or_else(|| KindError::new(format!("{what}: no operation name")))?;
        let wait =
            Wait::new(what, TIMEOUT).every(Duration::from_millis(500), Duration::from_secs(10));
        wait.until(ctx, || async {
            let op = poll(name.clone()).await?;
            Ok(match op.status {
                Some(Status::Done) => Poll::Done(op),
                ref status => Poll::Pending(format!(
                    "operation {name}: {}",
                    status.as_ref().and_then(|s| s.name()).unwrap_or("PENDING")
                )),
            })
        })
        .await?
    };
    failed(what, &op).map_or(Ok(()), Err)
}

/// The error of a finished operation, if it failed.
fn failed(what: &str, op: &Operation) -> Option<KindError> {
    let first = op.error.as_ref()?.errors.first()?;
    let code = first.code.clone().unwrap_or_default();
    let message = first.message.clone().unwrap_or_default();
    let error = KindError::new(format!("{what}: {message} ({code})")).with_code(code.clone());
    let mut error = if code == "RESOURCE_NOT_READY" || code == "RESOURCE_IN_USE_BY_ANOTHER_RESOURCE"
    {
        // Dependents still letting go (a subnetwork's router, a firewall's network).
        KindError::draining(error.message.clone()).with_code(code)
    } else {
        error
    };
    error.already_exists = first.code.as_deref() == Some("ALREADY_EXISTS");
    Some(error)
}
