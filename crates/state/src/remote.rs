//! The remote backend: the state as one object in a bucket, its lock as a lease object beside
//! it (`<key>.lock`), every write conditional on the version read.
//!
//! The object store (S3, GCS) is behind [`ObjectStore`], four calls that every bucket service
//! offers with preconditions: S3's `If-None-Match: *` / `If-Match: <etag>`, GCS's
//! `ifGenerationMatch`. The version token is the ETag or the generation.

use crate::backend::{parse_document, serial_of};
use crate::lease::Lease;
use crate::{Backend, Encryption, HeldLock, LockStatus, StateDocument, StateError};
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// An object's bytes and the version token that a conditional write names.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredObject {
    pub bytes: Vec<u8>,
    pub version: String,
}

/// The precondition of a write.
#[derive(Debug, Clone, PartialEq)]
pub enum Condition {
    /// Only if no object has the key (a create).
    Absent,
    /// Only if the object is still at this version.
    Version(String),
}

/// Why a call to the store failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The precondition did not hold: another writer was first.
    #[error("another client changed it first")]
    Conflict,
    /// A write at a version of an object that is gone.
    #[error("it is gone")]
    Missing,
    /// Anything else (network, permissions, throttling past the client's retries).
    #[error("{0}")]
    Failed(String),
}

/// A bucket with conditional writes. Calls block until the store answered.
pub trait ObjectStore: Send + Sync + fmt::Debug {
    /// `key` as a user writes it (`s3://bucket/key`).
    fn location(&self, key: &str) -> String;

    /// The object at `key`; `None` when there is none.
    fn get(&self, key: &str) -> Result<Option<StoredObject>, StoreError>;

    /// Writes `bytes` at `key` if `condition` holds; answers the new version.
    fn put(&self, key: &str, bytes: &[u8], condition: Condition) -> Result<String, StoreError>;

    /// Deletes the object at `key` if it is still at `version`.
    fn delete(&self, key: &str, version: &str) -> Result<(), StoreError>;

    /// Whether the bucket keeps the versions an overwrite replaces (S3 versioning, GCS object
    /// versioning); `None` when that cannot be read.
    fn keeps_old_versions(&self) -> Option<bool>;
}

/// The state as an object in a bucket, locked by a lease.
#[derive(Clone)]
pub struct RemoteBackend {
    store: Arc<dyn ObjectStore>,
    key: String,
    lease: Duration,
    encryption: Arc<Encryption>,
    /// The serial and version of the object this backend last read or wrote: a save over that
    /// serial is conditional on that version.
    last: Arc<Mutex<Option<(u64, String)>>>,
}

impl fmt::Debug for RemoteBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RemoteBackend").field("location", &self.location()).finish()
    }
}

impl RemoteBackend {
    /// The state at `key` in `store`, locked by leases of `lease` ([`crate::DEFAULT_LEASE`]).
    pub fn new(store: Arc<dyn ObjectStore>, key: &str, lease: Duration) -> Self {
        RemoteBackend {
            store,
            key: key.to_string(),
            lease,
            encryption: Arc::default(),
            last: Arc::new(Mutex::new(None)),
        }
    }

    /// This backend, storing documents as `encryption` says (default: clear JSON).
    pub fn encrypted(mut self, encryption: Arc<Encryption>) -> Self {
        self.encryption = encryption;
        self
    }

    /// The key of the lease object: the state's key with `.lock` appended.
    pub fn lock_key(&self) -> String {
        format!("{}.lock", self.key)
    }

    fn store_error(&self, key: &str, e: StoreError) -> StateError {
        StateError::Store { location: self.store.location(key), message: e.to_string() }
    }

    fn remember(&self, serial: u64, version: String) {
        *self.last.lock().unwrap_or_else(|p| p.into_inner()) = Some((serial, version));
    }

    /// The version to write over when the state stored has serial `previous`: known from the
    /// last read or write, or read now (and checked).
    fn version_of(&self, previous: u64) -> Result<Condition, StateError> {
        if let Some((serial, version)) = self.last.lock().unwrap_or_else(|p| p.into_inner()).clone()
            && serial == previous
        {
            return Ok(Condition::Version(version));
        }
        let location = self.location();
        match self.store.get(&self.key).map_err(|e| self.store_error(&self.key, e))? {
            None if previous == 0 => Ok(Condition::Absent),
            None => Err(StateError::Changed { location, expected: previous, found: 0 }),
            Some(object) => {
                let found = serial_of(&location, &object.bytes)?;
                if found != previous {
                    return Err(StateError::Changed { location, expected: previous, found });
                }
                Ok(Condition::Version(object.version))
            }
        }
    }
}

impl Backend for RemoteBackend {
    fn location(&self) -> String {
        self.store.location(&self.key)
    }

    fn load(&self) -> Result<Option<StateDocument>, StateError> {
        let Some(object) = self.store.get(&self.key).map_err(|e| self.store_error(&self.key, e))?
        else {
            return Ok(None);
        };
        let doc = parse_document(&self.location(), &object.bytes, &self.encryption)?;
        self.remember(doc.serial, object.version);
        Ok(Some(doc))
    }

    fn save_over(&self, doc: &StateDocument, previous: u64) -> Result<(), StateError> {
        let condition = self.version_of(previous)?;
        let bytes = self.encryption.encode(&self.location(), doc)?;
        let written = self.store.put(&self.key, &bytes, condition);
        match written {
            Ok(version) => {
                self.remember(doc.serial, version);
                Ok(())
            }
            Err(StoreError::Conflict | StoreError::Missing) => {
                // Someone else wrote (or removed) it: say which version is there now.
                let found = match self.store.get(&self.key) {
                    Ok(Some(object)) => serial_of(&self.location(), &object.bytes).unwrap_or(0),
                    _ => 0,
                };
                Err(StateError::Changed { location: self.location(), expected: previous, found })
            }
            Err(e) => Err(self.store_error(&self.key, e)),
        }
    }

    fn lock(&self, operation: &str) -> Result<Box<dyn HeldLock>, StateError> {
        if self.store.keeps_old_versions() == Some(false) {
            tracing::warn!(
                location = %self.location(),
                "the state bucket does not keep old versions: turn on versioning to keep the \
                 version each save replaces"
            );
        }
        let lease = Lease::acquire(self.store.clone(), &self.lock_key(), self.lease, operation)?;
        Ok(Box::new(lease))
    }

    fn lock_status(&self) -> Result<Option<LockStatus>, StateError> {
        Lease::status(self.store.as_ref(), &self.lock_key())
    }

    fn force_unlock(&self, id: &str) -> Result<(), StateError> {
        Lease::force_remove(self.store.as_ref(), &self.lock_key(), id)
    }
}

#[cfg(test)]
pub(crate) mod memory {
    //! A bucket in memory with S3's conditional-write semantics, for the unit tests of the
    //! remote backend and the lease (the end-to-end tests run against moto's S3).

    use super::*;
    use std::collections::HashMap;

    #[derive(Debug, Default)]
    pub struct MemoryStore {
        objects: Mutex<HashMap<String, StoredObject>>,
        next: std::sync::atomic::AtomicU64,
        /// When set, every call fails like a store that cannot be reached.
        pub down: std::sync::atomic::AtomicBool,
    }

    impl MemoryStore {
        fn check_up(&self) -> Result<(), StoreError> {
            if self.down.load(std::sync::atomic::Ordering::SeqCst) {
                return Err(StoreError::Failed("connection refused".into()));
            }
            Ok(())
        }

        /// Removes `key` whatever its version (another client deleting it).
        pub fn remove(&self, key: &str) {
            self.objects.lock().unwrap().remove(key);
        }
    }

    impl ObjectStore for MemoryStore {
        fn location(&self, key: &str) -> String {
            format!("mem://{key}")
        }

        fn get(&self, key: &str) -> Result<Option<StoredObject>, StoreError> {
            self.check_up()?;
            Ok(self.objects.lock().unwrap().get(key).cloned())
        }

        fn put(&self, key: &str, bytes: &[u8], condition: Condition) -> Result<String, StoreError> {
            self.check_up()?;
            let mut objects = self.objects.lock().unwrap();
            match (&condition, objects.get(key)) {
                (Condition::Absent, Some(_)) => return Err(StoreError::Conflict),
                (Condition::Version(_), None) => return Err(StoreError::Missing),
                (Condition::Version(v), Some(o)) if &o.version != v => {
                    return Err(StoreError::Conflict);
                }
                _ => {}
            }
            let version =
                format!("v{}", self.next.fetch_add(1, std::sync::atomic::Ordering::SeqCst));
            objects.insert(
                key.into(),
                StoredObject { bytes: bytes.to_vec(), version: version.clone() },
            );
            Ok(version)
        }

        fn delete(&self, key: &str, version: &str) -> Result<(), StoreError> {
            self.check_up()?;
            let mut objects = self.objects.lock().unwrap();
            match objects.get(key) {
                None => Err(StoreError::Missing),
                Some(o) if o.version != version => Err(StoreError::Conflict),
                Some(_) => {
                    objects.remove(key);
                    Ok(())
                }
            }
        }

        fn keeps_old_versions(&self) -> Option<bool> {
            Some(true)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::memory::MemoryStore;
    use super::*;

    fn backend(store: &Arc<MemoryStore>) -> RemoteBackend {
        RemoteBackend::new(store.clone(), "aws/platform.json", Duration::from_secs(30))
    }

    #[test]
    fn saves_round_trip_and_each_names_the_version_it_replaces() {
        let store = Arc::new(MemoryStore::default());
        let ours = backend(&store);
        assert!(ours.load().unwrap().is_none());
        let mut doc = StateDocument::new("aws");
        doc.serial = 1;
        ours.save_over(&doc, 0).unwrap();
        doc.serial = 2;
        ours.save_over(&doc, 1).unwrap();
        assert_eq!(backend(&store).load().unwrap().unwrap(), doc);
        assert_eq!(ours.location(), "mem://aws/platform.json");
    }

    #[test]
    fn a_state_another_writer_changed_is_never_overwritten() {
        let store = Arc::new(MemoryStore::default());
        let (ours, theirs) = (backend(&store), backend(&store));
        let mut doc = StateDocument::new("aws");
        doc.serial = 1;
        ours.save_over(&doc, 0).unwrap();
        let mut other = theirs.load().unwrap().unwrap();
        other.serial = 2;
        theirs.save_over(&other, 1).unwrap();
        doc.serial = 2;
        let err = ours.save_over(&doc, 1).unwrap_err();
        assert!(matches!(err, StateError::Changed { expected: 1, found: 2, .. }), "{err}");
        let first = backend(&store);
        let mut new = StateDocument::new("aws");
        new.serial = 1;
        let err = first.save_over(&new, 0).unwrap_err();
        assert!(matches!(err, StateError::Changed { expected: 0, found: 2, .. }), "{err}");
    }

    #[test]
    fn a_store_that_fails_is_an_error_naming_the_object() {
        let store = Arc::new(MemoryStore::default());
        store.down.store(true, std::sync::atomic::Ordering::SeqCst);
        let err = backend(&store).load().unwrap_err();
        assert_eq!(err.to_string(), "mem://aws/platform.json: connection refused");
    }
}
