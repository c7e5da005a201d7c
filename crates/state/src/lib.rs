//! State of the infrastructure engine: what was last applied, where it is kept, and who may write it.
//!
//! - [`StateDocument`] is the JSON document: one [`ResourceState`] per resource address.
//! - [`LocalBackend`] keeps it in an owner-only file, written atomically (temp file, fsync,
//!   rename), the previous version kept as `<state>.backup`.
//! - [`RunLock`] is the lock file a writing run holds under a kernel lock; a second run reports
//!   its holder and refuses; a killed run's lock is released by the kernel.
//! - [`Journal`] is the only writer during a run: one atomic save after every completed step.

mod backend;
mod document;
mod journal;
mod lock;

pub use backend::LocalBackend;
pub use document::{FORMAT_VERSION, ResourceState, StateDocument};
pub use journal::Journal;
pub use lock::{LockHolder, RunLock};

use std::path::PathBuf;

/// Errors of the state crate.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    #[error("cannot read state file {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("cannot write state file {path}: {source}")]
    Write { path: PathBuf, source: std::io::Error },
    #[error("state file {path} is not valid: {source}")]
    Parse { path: PathBuf, source: serde_json::Error },
    #[error("state file {path} has format version {found}; this engine reads version {expected}")]
    Version { path: PathBuf, found: u32, expected: u32 },
    #[error("state {path} belongs to spec `{found}`, not `{expected}`; pass another --state path")]
    SpecMismatch { path: PathBuf, found: String, expected: String },
    #[error("state is locked by {holder} (lock file {path}); if that run is gone, remove the lock with `engine force-unlock {id}`", id = holder.id)]
    Locked { path: PathBuf, holder: Box<LockHolder> },
    #[error("lock file {path} is held by lock {found}, not {expected}")]
    LockMismatch { path: PathBuf, found: String, expected: String },
    #[error("cannot take lock {path}: {source}")]
    Lock { path: PathBuf, source: std::io::Error },
    #[error(
        "state file {path} changed under this run (serial {found} on disk, {expected} expected): something wrote it without the lock; nothing was overwritten, run again"
    )]
    Changed { path: PathBuf, expected: u64, found: u64 },
}
