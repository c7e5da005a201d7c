//! One bound on the reads a refresh has in flight, however its kinds fan out. A refresh runs
//! its kinds at the same time, and a kind that reads one resource per call (by name: IAM
//! roles, EKS node groups, GCP resources) runs those calls at the same time too; each such
//! call waits for a slot ([`bounded`]), and a refresh has as many slots as the run's
//! parallelism, as an apply has steps.

use std::future::Future;
use std::sync::Arc;
use tokio::sync::Semaphore;

tokio::task_local! {
    static SLOTS: Arc<Semaphore>;
}

/// Runs `reads`, with every [`bounded`] call under it taking one of `slots`.
pub(crate) async fn within<F: Future>(slots: Arc<Semaphore>, reads: F) -> F::Output {
    SLOTS.scope(slots, reads).await
}

/// Awaits `read` once a slot of the refresh it belongs to is free (at once outside a refresh).
pub async fn bounded<F: Future>(read: F) -> F::Output {
    let slots = SLOTS.try_with(Arc::clone).ok();
    let _slot = match &slots {
        Some(slots) => slots.acquire().await.ok(),
        None => None,
    };
    read.await
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    #[tokio::test]
    async fn no_more_reads_in_flight_than_slots() {
        let (now, most) = (AtomicUsize::new(0), AtomicUsize::new(0));
        let read = || async {
            let n = now.fetch_add(1, Ordering::SeqCst) + 1;
            most.fetch_max(n, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(5)).await;
            now.fetch_sub(1, Ordering::SeqCst);
        };
        let reads = futures::future::join_all((0..12).map(|_| bounded(read())));
        within(Arc::new(Semaphore::new(3)), reads).await;
        assert_eq!(most.load(Ordering::SeqCst), 3);
        // Outside a refresh nothing waits.
        most.store(0, Ordering::SeqCst);
        futures::future::join_all((0..5).map(|_| bounded(read()))).await;
        assert_eq!(most.load(Ordering::SeqCst), 5);
    }
}
