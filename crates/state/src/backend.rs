//! [`Backend`]: where a state document is kept and how a run holds it.
//!
//! Calls are blocking: a save is one step of the journal and must be done before the step
//! counts as done. A backend that talks to a cloud runs its calls on its own runtime.

use crate::{Encryption, FORMAT_VERSION, LockHolder, StateDocument, StateError};
use std::fmt;

/// A place a state document is kept: a local file, an object in a bucket.
pub trait Backend: Send + Sync + fmt::Debug {
    /// Where the state is, as a user writes it (`specs/.engine/aws.state.json`,
    /// `s3://bucket/key`).
    fn location(&self) -> String;

    /// Loads the state; `None` when none was saved yet.
    fn load(&self) -> Result<Option<StateDocument>, StateError>;

    /// Saves `doc` only over the version of serial `previous` (0: none saved yet): a state that
    /// another writer changed is refused with [`StateError::Changed`], never overwritten. The
    /// version replaced is kept (a `.backup` file, the bucket's versioning).
    fn save_over(&self, doc: &StateDocument, previous: u64) -> Result<(), StateError>;

    /// Takes the run lock for `operation` (`apply`, `destroy`); fails with
    /// [`StateError::Locked`] naming the holder when another run has it. Dropping the lock
    /// releases it.
    fn lock(&self, operation: &str) -> Result<Box<dyn HeldLock>, StateError>;

    /// Who holds the lock now, if anyone.
    fn lock_status(&self) -> Result<Option<LockStatus>, StateError>;

    /// Removes the lock named `id` that a run left behind (or, for a lease, one whose holder
    /// must be stopped: it stops writing at its next renewal).
    fn force_unlock(&self, id: &str) -> Result<(), StateError>;

    /// Loads the state of `spec`, or a new empty one; refuses a state made for another spec.
    fn load_or_new(&self, spec: &str) -> Result<StateDocument, StateError> {
        match self.load()? {
            Some(doc) if doc.spec != spec => Err(StateError::SpecMismatch {
                location: self.location(),
                found: doc.spec,
                expected: spec.to_string(),
            }),
            Some(doc) => Ok(doc),
            None => Ok(StateDocument::new(spec)),
        }
    }
}

/// A lock a run holds. Dropping it releases it.
pub trait HeldLock: Send + Sync + fmt::Debug {
    /// Who holds it (this run).
    fn holder(&self) -> &LockHolder;

    /// `Ok` while the lock is still this run's; [`StateError::LeaseLost`] once it is not (a
    /// lease that expired or that another client took or removed). Checked before every save.
    fn still_held(&self) -> Result<(), StateError>;
}

/// The lock of a state as another client sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct LockStatus {
    pub holder: LockHolder,
    /// Whether its holder still holds it: a process that still runs (local), a lease that has
    /// not expired (remote). A lock not live is taken over by the next run.
    pub live: bool,
}

/// Reads stored state bytes (opening an envelope), checking the format version.
pub(crate) fn parse_document(
    location: &str,
    bytes: &[u8],
    encryption: &Encryption,
) -> Result<StateDocument, StateError> {
    let doc = encryption.decode(location, bytes)?;
    if doc.version != FORMAT_VERSION {
        return Err(StateError::Version {
            location: location.to_string(),
            found: doc.version,
            expected: FORMAT_VERSION,
        });
    }
    Ok(doc)
}

/// The serial of stored state bytes, reading nothing else (so a state of a newer format still
/// reports whose version it is).
pub(crate) fn serial_of(location: &str, bytes: &[u8]) -> Result<u64, StateError> {
    #[derive(serde::Deserialize)]
    struct Head {
        serial: u64,
    }
    serde_json::from_slice::<Head>(bytes)
        .map(|h| h.serial)
        .map_err(|source| StateError::Parse { location: location.to_string(), source })
}
