//! [`Blocking`]: async cloud calls made from synchronous code.
//!
//! The engine's journal saves state synchronously, from inside the executor's async tasks and
//! from the lease's heartbeat thread. A state store's calls therefore run on a one-thread
//! runtime of their own and the caller waits for the answer, so a save works from any thread,
//! in any runtime or none (`Handle::block_on` would panic inside the executor's runtime).

use std::future::Future;

/// A runtime of its own for blocking callers, started at the first call and shut down without
/// waiting when dropped.
pub struct Blocking {
    name: &'static str,
    runtime: std::sync::OnceLock<tokio::runtime::Runtime>,
}

impl Blocking {
    /// A runtime whose thread is named `name`, started at the first call.
    pub fn new(name: &'static str) -> Self {
        Blocking { name, runtime: std::sync::OnceLock::new() }
    }

    /// Runs `call` on the runtime and waits for its answer (`stopped` if it never comes).
    pub fn run<T: Send + 'static, E: Send + 'static>(
        &self,
        call: impl Future<Output = Result<T, E>> + Send + 'static,
        stopped: E,
    ) -> Result<T, E> {
        let runtime = match self.runtime.get() {
            Some(runtime) => runtime,
            None => {
                let Ok(made) = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(1)
                    .thread_name(self.name)
                    .enable_all()
                    .build()
                else {
                    return Err(stopped);
                };
                self.runtime.get_or_init(|| made)
            }
        };
        let (answer, answered) = std::sync::mpsc::sync_channel(1);
        runtime.spawn(async move {
            let _ = answer.send(call.await);
        });
        answered.recv().unwrap_or(Err(stopped))
    }
}

impl Drop for Blocking {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}
