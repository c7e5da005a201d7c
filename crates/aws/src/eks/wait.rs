//! Waiting on EKS's long operations: poll until done, report progress, give up after a
//! deadline with an error that says what was still pending.

use engine::{Context, KindError};
use std::future::Future;
use std::time::Duration;
use tokio::time::Instant;

/// One look at a long operation.
pub(crate) enum Poll<T> {
    Done(T),
    /// Not yet; the operation's current status.
    Pending(String),
}

/// The timeout of a resource: its `timeout_seconds` attribute, else `default`.
pub(crate) fn timeout_of(attrs: &engine::Attrs, default: Duration) -> Duration {
    attrs
        .get("timeout_seconds")
        .and_then(serde_json::Value::as_u64)
        .filter(|s| *s > 0)
        .map(Duration::from_secs)
        .unwrap_or(default)
}

/// Polls `check` until it is done, at growing intervals (first look at once), reporting each
/// pending status through `ctx.waiting`. After `timeout` the error is permanent: the
/// operation goes on in the cloud, and the next run finds the resource again.
pub(crate) async fn wait_for<T, F, Fut>(
    ctx: &Context,
    what: &str,
    timeout: Duration,
    mut check: F,
) -> Result<T, KindError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<Poll<T>, KindError>>,
{
    let deadline = Instant::now() + timeout;
    let mut pause = Duration::from_secs(2);
    let started = Instant::now();
    loop {
        let status = match check().await {
            Ok(Poll::Done(v)) => return Ok(v),
            Ok(Poll::Pending(status)) => status,
            // A transient error while polling is one more pending look.
            Err(e) if e.retryable => e.message,
            Err(mut e) => {
                e.retryable = false;
                return Err(e);
            }
        };
        let now = Instant::now();
        if now >= deadline {
            return Err(KindError::new(format!(
                "{what}: still {status} after {}s (timeout); the operation goes on in AWS and the next run picks it up",
                timeout.as_secs()
            )));
        }
        ctx.waiting(format!("{what}: {status} ({}s)", now.duration_since(started).as_secs()));
        tokio::time::sleep(pause.min(deadline - now)).await;
        pause = (pause * 2).min(Duration::from_secs(30));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU32, Ordering};

    fn ctx() -> Context {
        Context::new("test", Arc::new(engine::NullObserver))
            .for_resource(&engine::Address::new("a.b.c"))
    }

    #[tokio::test(start_paused = true)]
    async fn polls_until_done() {
        let n = AtomicU32::new(0);
        let v = wait_for(&ctx(), "cluster", Duration::from_secs(600), || async {
            Ok(if n.fetch_add(1, Ordering::SeqCst) < 3 {
                Poll::Pending("CREATING".into())
            } else {
                Poll::Done(7)
            })
        })
        .await
        .unwrap();
        assert_eq!(v, 7);
        assert_eq!(n.load(Ordering::SeqCst), 4);
    }

    #[tokio::test(start_paused = true)]
    async fn times_out_with_a_permanent_error_naming_the_status() {
        let e = wait_for::<(), _, _>(&ctx(), "cluster aws-0", Duration::from_secs(60), || async {
            Ok(Poll::Pending("CREATING".into()))
        })
        .await
        .unwrap_err();
        assert!(!e.retryable);
        assert!(e.message.contains("still CREATING"), "{}", e.message);
        assert!(e.message.contains("timeout"), "{}", e.message);
    }

    #[test]
    fn timeouts_come_from_the_attribute() {
        let mut attrs = engine::Attrs::new();
        assert_eq!(timeout_of(&attrs, Duration::from_secs(5)), Duration::from_secs(5));
        attrs.insert("timeout_seconds".into(), serde_json::json!(90));
        assert_eq!(timeout_of(&attrs, Duration::from_secs(5)), Duration::from_secs(90));
    }
}
