//! Stopping a run cleanly: [`Interrupt`] asks an apply or destroy to stop. Steps in flight
//! finish and are recorded in state; steps not started are skipped; the run then returns (and
//! releases its lock), reporting what it did not do.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// A handle that stops a run when interrupted (the CLI interrupts on SIGINT and SIGTERM).
#[derive(Debug, Clone, Default)]
pub struct Interrupt(Arc<AtomicBool>);

impl Interrupt {
    /// A handle not interrupted yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Asks the run to stop: no new step starts.
    pub fn interrupt(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    /// Whether the run was asked to stop.
    pub fn is_interrupted(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}
