//! Progress events of a run, for whoever displays them (the CLI draws progress bars).

use crate::{Action, Address};
use std::time::Duration;

/// Something that happened during a run.
#[derive(Debug, Clone)]
pub enum Event {
    /// The live state of `count` resources is being read.
    RefreshStarted { count: usize },
    /// An operation on a resource started.
    StepStarted { address: Address, action: Action },
    /// A long operation is waiting on the cloud (e.g. a NAT gateway becoming available).
    Waiting { address: Address, message: String },
    /// A retryable failure; the step will be tried again.
    Retrying { address: Address, attempt: u32, error: String },
    /// An operation finished.
    StepFinished { address: Address, action: Action, elapsed: Duration, id: Option<String> },
    /// An operation failed for good.
    StepFailed { address: Address, error: String },
}

/// Receives run events. Must be cheap: it is called from the executor's tasks.
pub trait Observer: Send + Sync {
    fn event(&self, event: Event);
}

/// Ignores every event.
pub struct NullObserver;

impl Observer for NullObserver {
    fn event(&self, _event: Event) {}
}
