//! State of the infrastructure engine: what was last applied, where it is kept, and who may write it.
//!
//! - [`StateDocument`] is the JSON document: one [`ResourceState`] per resource address.
//! - [`Backend`] is where a document is kept and how a run holds it; every save names the
//!   version it replaces, so two writers never silently overwrite each other.
//! - [`LocalBackend`] keeps it in an owner-only file, written atomically (temp file, fsync,
//!   rename), the previous version kept as `<state>.backup`; its [`RunLock`] is a lock file
//!   under a kernel lock that a killed run cannot leave behind.
//! - [`RemoteBackend`] keeps it as an object in a bucket ([`ObjectStore`]: S3, GCS), written
//!   with conditional requests; its lock is a [`Lease`] object that the holder renews while it
//!   runs and that another run takes over once it expired.
//! - [`Encryption`] seals what a backend stores (AES-256-GCM under a data key from a
//!   passphrase or a cloud KMS), or stores clear JSON.
//! - [`Journal`] is the only writer during a run: one save after every completed step, refused
//!   once the run's lock is no longer held.

mod backend;
mod document;
mod encryption;
mod journal;
mod lease;
mod local;
mod lock;
mod remote;

pub use backend::{Backend, HeldLock, LockStatus};
pub use document::{FORMAT_VERSION, HandedOver, ResourceState, StateDocument};
pub use encryption::{
    DataKey, Encryption, KeySource, PASSPHRASE_MIN_LEN, PBKDF2_ITERATIONS, Passphrase,
};
pub use journal::Journal;
pub use lease::{DEFAULT_LEASE, Lease};
pub use local::LocalBackend;
pub use lock::{LockHolder, RunLock};
pub use remote::{Condition, ObjectStore, RemoteBackend, StoreError, StoredObject};

use std::path::PathBuf;

/// Errors of the state crate. `location` is where the state or its lock is, as a user writes it
/// (a path, or `s3://bucket/key`).
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    #[error("cannot read state file {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("cannot write state file {path}: {source}")]
    Write { path: PathBuf, source: std::io::Error },
    #[error("state {location} is not valid: {source}")]
    Parse { location: String, source: serde_json::Error },
    #[error("state {location} has format version {found}; this engine reads version {expected}")]
    Version { location: String, found: u32, expected: u32 },
    #[error("state {location} belongs to spec `{found}`, not `{expected}`; pass another --state")]
    SpecMismatch { location: String, found: String, expected: String },
    #[error("state is locked by {holder} (lock {location}); if that run is gone, remove the lock with `engine force-unlock {id}`", id = holder.id)]
    Locked { location: String, holder: Box<LockHolder> },
    #[error("lock {location} is held by lock {found}, not {expected}")]
    LockMismatch { location: String, found: String, expected: String },
    #[error("cannot take lock {path}: {source}")]
    Lock { path: PathBuf, source: std::io::Error },
    #[error(
        "state {location} changed under this run (serial {found} stored, {expected} expected): something wrote it without the lock; nothing was overwritten, run again"
    )]
    Changed { location: String, expected: u64, found: u64 },
    #[error("{location}: {message}")]
    Store { location: String, message: String },
    #[error(
        "the lock on {location} is no longer this run's ({why}); nothing more is written: run again once the other run is done"
    )]
    LeaseLost { location: String, why: String },
    #[error("state {location} cannot be read or sealed: {message}")]
    Encryption { location: String, message: String },
    #[error("no lock on {location}")]
    NotLocked { location: String },
}
