//! One retry policy for every layer of the engine, so retries do not stack.
//!
//! Who retries what:
//!
//! - The cloud SDK retries one HTTP call: throttling, 5xx, broken connections. Its budget is the
//!   cloud crate's client configuration; when it gives up, the error is final for that call and
//!   is not marked retryable again above it.
//! - [`settle`] retries the follow-up calls inside one `create`, once the resource exists
//!   (attributes, reading it back): its last error is permanent, so the executor never repeats a
//!   create that made something.
//! - The executor retries a step whose [`KindError`] is `retryable` (eventual consistency after a
//!   create elsewhere, a dependency still draining), with the kind's policy
//!   ([`crate::Kind::retry_policy`]) or the engine's default.
//! - Waiting on long operations is not retrying: see [`crate::wait`].

use crate::KindError;
use std::future::Future;
use std::time::Duration;

/// How often and how patiently an operation is tried again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Tries in all, the first included.
    pub attempts: u32,
    /// Pause before the second try; doubles each time.
    pub first_delay: Duration,
    /// Longest pause.
    pub max_delay: Duration,
}

impl RetryPolicy {
    /// The executor's default for a step.
    pub const STEP: RetryPolicy = RetryPolicy {
        attempts: 6,
        first_delay: Duration::from_millis(500),
        max_delay: Duration::from_secs(20),
    };

    /// Follow-up calls inside one create ([`settle`]).
    pub const SETTLE: RetryPolicy = RetryPolicy {
        attempts: 10,
        first_delay: Duration::from_millis(200),
        max_delay: Duration::from_secs(5),
    };

    /// A step whose dependents are still letting go (lingering network interfaces take
    /// minutes): about five minutes in all.
    pub const DRAIN: RetryPolicy = RetryPolicy {
        attempts: 16,
        first_delay: Duration::from_secs(2),
        max_delay: Duration::from_secs(30),
    };

    /// The pause before try `attempt + 1` (after `attempt` failures): exponential, capped, with
    /// jitter (between half and all of it), so concurrent steps do not retry in lockstep.
    pub fn delay(&self, attempt: u32) -> Duration {
        let exp = self
            .first_delay
            .saturating_mul(2u32.saturating_pow(attempt.saturating_sub(1)))
            .min(self.max_delay);
        let half = exp / 2;
        half + half.mul_f64(fastrand::f64())
    }

    /// Runs `op` until it succeeds, fails with an error that is not retryable, or has been
    /// tried `attempts` times. `on_retry` hears about each retry (attempt number, error).
    pub async fn run<T, F, Fut>(
        &self,
        op: F,
        on_retry: impl FnMut(u32, &KindError),
    ) -> Result<T, KindError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, KindError>>,
    {
        run_with(op, |_| *self, on_retry).await
    }
}

/// Runs a follow-up call of a create ([`RetryPolicy::SETTLE`]); its last error is permanent.
pub async fn settle<T, F, Fut>(op: F) -> Result<T, KindError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, KindError>>,
{
    RetryPolicy::SETTLE.run(op, |_, _| {}).await.map_err(KindError::permanent)
}

/// Runs `op` like [`RetryPolicy::run`], under the policy `policy_for` gives each error (e.g. a
/// longer one while dependents drain).
pub async fn run_with<T, F, Fut>(
    mut op: F,
    policy_for: impl Fn(&KindError) -> RetryPolicy,
    mut on_retry: impl FnMut(u32, &KindError),
) -> Result<T, KindError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, KindError>>,
{
    let mut attempt = 1;
    loop {
        match op().await {
            Ok(v) => return Ok(v),
            Err(e) if e.retryable && attempt < policy_for(&e).attempts => {
                tracing::debug!(attempt, error = %e, "retrying");
                on_retry(attempt, &e);
                tokio::time::sleep(policy_for(&e).delay(attempt)).await;
                attempt += 1;
            }
            Err(e) => return Err(e),
        }
    }
}

/// Reads a just-created resource back, waiting while it is not visible yet; its last error is
/// permanent.
pub async fn read_back<T, F, Fut>(what: &str, mut read: F) -> Result<T, KindError>
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

    #[tokio::test(start_paused = true)]
    async fn retries_retryable_errors_up_to_the_budget() {
        let calls = AtomicU32::new(0);
        let policy = RetryPolicy {
            attempts: 3,
            first_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(4),
        };
        let mut heard = Vec::new();
        let r: Result<(), _> = policy
            .run(
                || async {
                    calls.fetch_add(1, Ordering::SeqCst);
                    Err(KindError::retryable("not yet"))
                },
                |n, _| heard.push(n),
            )
            .await;
        assert!(r.unwrap_err().retryable);
        assert_eq!(calls.load(Ordering::SeqCst), 3);
        assert_eq!(heard, [1, 2]);

        calls.store(0, Ordering::SeqCst);
        let r: Result<(), _> = policy
            .run(
                || async {
                    calls.fetch_add(1, Ordering::SeqCst);
                    Err(KindError::new("no"))
                },
                |_, _| {},
            )
            .await;
        assert!(r.is_err());
        assert_eq!(calls.load(Ordering::SeqCst), 1, "permanent errors are not retried");
    }

    #[tokio::test(start_paused = true)]
    async fn settle_makes_the_last_error_permanent() {
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
        let r: Result<(), _> = settle(|| async { Err(KindError::retryable("never")) }).await;
        assert!(!r.unwrap_err().retryable);
    }

    #[test]
    fn delays_grow_are_capped_and_jittered() {
        let p = RetryPolicy {
            attempts: 10,
            first_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(8),
        };
        for (attempt, full) in [(1, 1), (2, 2), (3, 4), (4, 8), (9, 8)] {
            let d = p.delay(attempt);
            let full = Duration::from_secs(full);
            assert!(d >= full / 2 && d <= full, "attempt {attempt}: {d:?}");
        }
    }
}
