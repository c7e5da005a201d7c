//! Follow-up calls after a create, retried in place.
//!
//! The executor retries a failed `create` only when its error is retryable, which would create a
//! second resource if the first call had succeeded. So once a resource exists, the calls that
//! complete it (attributes, reading it back) retry here, and a final failure is permanent.

use engine::KindError;
use std::future::Future;
use std::time::Duration;

const ATTEMPTS: u32 = 10;

/// Runs `op` until it succeeds or fails with a non-retryable error; after `ATTEMPTS` the error
/// is returned as permanent.
pub(crate) async fn settle<T, F, Fut>(mut op: F) -> Result<T, KindError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, KindError>>,
{
    let mut pause = Duration::from_millis(200);
    for attempt in 1..=ATTEMPTS {
        match op().await {
            Ok(v) => return Ok(v),
            Err(e) if e.retryable && attempt < ATTEMPTS => {
                tracing::debug!(attempt, error = %e, "settling");
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_secs(5));
            }
            Err(mut e) => {
                e.retryable = false;
                return Err(e);
            }
        }
    }
    unreachable!("the last attempt returns")
}

/// Reads a just-created resource back, waiting while it is not visible yet.
pub(crate) async fn read_back<T, F, Fut>(what: &str, mut read: F) -> Result<T, KindError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<Option<T>, KindError>>,
{
    settle(|| {
        let fut = read();
        async move {
            fut.await?.ok_or_else(|| KindError::retryable(format!("{what} is not visible yet")))
        }
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    #[tokio::test]
    async fn retries_retryable_errors_then_gives_a_permanent_one() {
        let calls = AtomicU32::new(0);
        let r = settle(|| async {
            if calls.fetch_add(1, Ordering::SeqCst) < 2 {
                Err(KindError::retryable("not yet"))
            } else {
                Ok(7)
            }
        })
        .await;
        assert_eq!(r.unwrap(), 7);
        assert_eq!(calls.load(Ordering::SeqCst), 3);

        let r: Result<(), _> = settle(|| async { Err(KindError::new("nope")) }).await;
        assert!(!r.unwrap_err().retryable);
    }
}
