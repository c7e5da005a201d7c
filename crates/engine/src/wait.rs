//! Waiting on long operations (a NAT gateway, an EKS cluster, an autoscaling group, objects in
//! a cluster becoming ready, OpenBao becoming active): poll until done, report progress, give up
//! at a deadline with an error that says what was still pending.

use crate::{Context, KindError};
use std::future::Future;
use std::time::Duration;
use tokio::time::Instant;

/// One look at a long operation.
#[derive(Debug)]
pub enum Poll<T> {
    Done(T),
    /// Not yet; the operation's current status, for progress and the timeout error.
    Pending(String),
}

/// How to wait: what for, how long at most, how often to look.
#[derive(Debug, Clone)]
pub struct Wait {
    what: String,
    timeout: Duration,
    first: Duration,
    max: Duration,
}

impl Wait {
    /// Waits on `what` (named in progress and errors) for at most `timeout`, looking at once,
    /// then after 2 s, doubling up to 30 s.
    pub fn new(what: impl Into<String>, timeout: Duration) -> Self {
        Wait {
            what: what.into(),
            timeout,
            first: Duration::from_secs(2),
            max: Duration::from_secs(30),
        }
    }

    /// Looks every `first`, doubling up to `max` (a fixed interval when they are equal).
    pub fn every(mut self, first: Duration, max: Duration) -> Self {
        self.first = first;
        self.max = max.max(first);
        self
    }

    /// Polls `check` until it is done, reporting each pending status through `ctx.waiting`.
    /// A retryable error while polling counts as one more pending look. After the timeout the
    /// error is permanent: the operation goes on in the cloud, and the next run finds it.
    pub async fn until<T, F, Fut>(&self, ctx: &Context, mut check: F) -> Result<T, KindError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<Poll<T>, KindError>>,
    {
        let started = Instant::now();
        let deadline = started + self.timeout;
        let mut pause = self.first;
        loop {
            let status = match check().await {
                Ok(Poll::Done(v)) => return Ok(v),
                Ok(Poll::Pending(status)) => status,
                Err(e) if e.retryable => e.message,
                Err(e) => return Err(e.permanent()),
            };
            let now = Instant::now();
            if now >= deadline {
                return Err(KindError::new(format!(
                    "{}: still {status} after {}s (timeout); the operation goes on, and the next \
                     run picks it up",
                    self.what,
                    self.timeout.as_secs()
                )));
            }
            ctx.waiting(format!(
                "{}: {status} ({}s)",
                self.what,
                now.duration_since(started).as_secs()
            ));
            let jittered = pause.mul_f64(0.8 + 0.2 * fastrand::f64());
            tokio::time::sleep(jittered.min(deadline - now)).await;
            pause = (pause * 2).min(self.max);
        }
    }
}

/// The timeout a resource asks for in its `timeout_seconds` setting, else `default`.
pub fn timeout_or(seconds: Option<u64>, default: Duration) -> Duration {
    seconds.filter(|s| *s > 0).map(Duration::from_secs).unwrap_or(default)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU32, Ordering};

    fn ctx() -> Context {
        Context::new("test", Arc::new(crate::NullObserver))
            .for_resource(&crate::Address::new("a.b.c"))
    }

    #[tokio::test(start_paused = true)]
    async fn polls_until_done() {
        let n = AtomicU32::new(0);
        let v = Wait::new("cluster", Duration::from_secs(600))
            .until(&ctx(), || async {
                Ok(match n.fetch_add(1, Ordering::SeqCst) {
                    0..3 => Poll::Pending("CREATING".into()),
                    _ => Poll::Done(7),
                })
            })
            .await
            .unwrap();
        assert_eq!(v, 7);
        assert_eq!(n.load(Ordering::SeqCst), 4);
    }

    #[tokio::test(start_paused = true)]
    async fn retryable_errors_are_pending_looks() {
        let n = AtomicU32::new(0);
        let v = Wait::new("cluster", Duration::from_secs(600))
            .until(&ctx(), || async {
                if n.fetch_add(1, Ordering::SeqCst) == 0 {
                    Err(KindError::retryable("throttled"))
                } else {
                    Ok(Poll::Done(1))
                }
            })
            .await;
        assert_eq!(v.unwrap(), 1);
        let e = Wait::new("cluster", Duration::from_secs(600))
            .until::<(), _, _>(&ctx(), || async { Err(KindError::new("denied")) })
            .await
            .unwrap_err();
        assert_eq!(e.message, "denied");
    }

    #[tokio::test(start_paused = true)]
    async fn times_out_with_a_permanent_error_naming_the_status() {
        let e = Wait::new("cluster aws-0", Duration::from_secs(60))
            .until::<(), _, _>(&ctx(), || async { Ok(Poll::Pending("CREATING".into())) })
            .await
            .unwrap_err();
        assert!(!e.retryable);
        assert!(e.message.contains("still CREATING"), "{}", e.message);
        assert!(e.message.contains("timeout"), "{}", e.message);
    }

    #[test]
    fn timeouts() {
        let d = Duration::from_secs(5);
        assert_eq!(timeout_or(None, d), d);
        assert_eq!(timeout_or(Some(0), d), d);
        assert_eq!(timeout_or(Some(90), d), Duration::from_secs(90));
    }
}
