//! The journal: the single writer of state during a run. Every completed step is saved at once,
//! each save only over the version the journal wrote last (see [`Backend::save_over`]) and
//! only while the run still holds its lock.

use crate::{Backend, HeldLock, ResourceState, StateDocument, StateError};
use std::sync::{Arc, Mutex};

/// Records completed steps into the state document and saves it after each one.
#[derive(Debug)]
pub struct Journal {
    backend: Arc<dyn Backend>,
    lock: Option<Arc<dyn HeldLock>>,
    doc: Mutex<StateDocument>,
}

impl Journal {
    /// A journal writing `doc` through `backend`. The caller holds the run lock.
    pub fn new(backend: Arc<dyn Backend>, doc: StateDocument) -> Self {
        Journal { backend, lock: None, doc: Mutex::new(doc) }
    }

    /// Saves only while `lock` is held: once it is lost, every save fails and nothing is written.
    pub fn guarded_by(mut self, lock: Arc<dyn HeldLock>) -> Self {
        self.lock = Some(lock);
        self
    }

    /// Records that `address` now is `resource` (or is gone when `None`), then saves. A create
    /// begun for `address` is over.
    /// A resource handed over (see [`StateDocument::handed_over`]) is the engine's again.
    pub fn record(&self, address: &str, resource: Option<ResourceState>) -> Result<(), StateError> {
        let mut doc = self.doc.lock().unwrap_or_else(|p| p.into_inner());
        doc.creating.remove(address);
        doc.handed_over.remove(address);
        match resource {
            Some(r) => {
                doc.resources.insert(address.to_string(), r);
            }
            None => {
                doc.resources.remove(address);
            }
        }
        self.save(&mut doc)
    }

    /// `Ok` while the run's lock is held (always, for a journal without one).
    pub fn still_held(&self) -> Result<(), StateError> {
        self.lock.as_ref().map_or(Ok(()), |lock| lock.still_held())
    }

    /// Saves `doc` as the next version, over the one this journal wrote (or loaded) last.
    fn save(&self, doc: &mut StateDocument) -> Result<(), StateError> {
        self.still_held()?;
        doc.serial += 1;
        let saved = self.backend.save_over(doc, doc.serial - 1);
        if saved.is_err() {
            doc.serial -= 1;
        }
        saved
    }

    /// Records, before its first call, that the create of `address` (a `kind`) begins, then
    /// saves. Answers whether an earlier create of it had begun and never ended.
    pub fn begin_create(&self, address: &str, kind: &str) -> Result<bool, StateError> {
        let mut doc = self.doc.lock().unwrap_or_else(|p| p.into_inner());
        if doc.creating.contains_key(address) {
            return Ok(true);
        }
        doc.creating.insert(address.to_string(), kind.to_string());
        self.save(&mut doc).map(|()| false)
    }

    /// Records that the create of `address` ended having made nothing, then saves.
    pub fn abandon_create(&self, address: &str) -> Result<(), StateError> {
        let mut doc = self.doc.lock().unwrap_or_else(|p| p.into_inner());
        if doc.creating.remove(address).is_none() {
            return Ok(());
        }
        self.save(&mut doc)
    }

    /// A copy of the current document.
    pub fn snapshot(&self) -> StateDocument {
        self.doc.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::LocalBackend;

    #[test]
    fn every_record_is_on_disk() {
        let dir = tempfile::tempdir().unwrap();
        let backend = LocalBackend::new(dir.path().join("aws.state.json"));
        let journal = Journal::new(Arc::new(backend.clone()), StateDocument::new("aws"));
        let r = ResourceState {
            kind: "aws_vpc".into(),
            id: "vpc-1".into(),
            attributes: Default::default(),
            dependencies: vec![],
            protected: false,
            retained: false,
        };
        journal.record("a", Some(r)).unwrap();
        assert_eq!(backend.load().unwrap().unwrap().resources.len(), 1);
        journal.record("a", None).unwrap();
        let on_disk = backend.load().unwrap().unwrap();
        assert!(on_disk.resources.is_empty());
        assert_eq!(on_disk.serial, 2);
    }

    #[test]
    fn a_state_written_under_the_journal_is_never_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        let backend = LocalBackend::new(dir.path().join("aws.state.json"));
        let journal = Journal::new(Arc::new(backend.clone()), StateDocument::new("aws"));
        journal.begin_create("a", "aws_vpc").unwrap();
        let mut theirs = backend.load().unwrap().unwrap();
        theirs.serial = 40;
        backend.save(&theirs).unwrap();
        let err = journal.abandon_create("a").unwrap_err();
        assert!(matches!(err, StateError::Changed { expected: 1, found: 40, .. }), "{err}");
        assert_eq!(backend.load().unwrap().unwrap().serial, 40);
        assert_eq!(journal.snapshot().serial, 1, "the failed save is not counted");
    }

    #[test]
    fn a_begun_create_is_on_disk_until_recorded_or_abandoned() {
        let dir = tempfile::tempdir().unwrap();
        let backend = LocalBackend::new(dir.path().join("aws.state.json"));
        let journal = Journal::new(Arc::new(backend.clone()), StateDocument::new("aws"));
        assert!(!journal.begin_create("a", "aws_s3_bucket").unwrap(), "first begin");
        assert!(journal.begin_create("a", "aws_s3_bucket").unwrap(), "begun before");
        assert!(!journal.begin_create("b", "aws_s3_bucket").unwrap());
        let on_disk = backend.load().unwrap().unwrap();
        assert_eq!(on_disk.creating.keys().collect::<Vec<_>>(), ["a", "b"]);
        let r = ResourceState {
            kind: "aws_s3_bucket".into(),
            id: "snapshots".into(),
            attributes: Default::default(),
            dependencies: vec![],
            protected: false,
            retained: false,
        };
        journal.record("a", Some(r)).unwrap();
        journal.abandon_create("b").unwrap();
        let on_disk = backend.load().unwrap().unwrap();
        assert!(on_disk.creating.is_empty());
        assert_eq!(on_disk.resources.len(), 1);
    }

    #[derive(Debug)]
    struct Lost(crate::LockHolder);

    impl HeldLock for Lost {
        fn holder(&self) -> &crate::LockHolder {
            &self.0
        }
        fn still_held(&self) -> Result<(), StateError> {
            Err(StateError::LeaseLost { location: "here".into(), why: "taken".into() })
        }
    }

    #[test]
    fn nothing_is_written_once_the_lock_is_lost() {
        let dir = tempfile::tempdir().unwrap();
        let backend = LocalBackend::new(dir.path().join("aws.state.json"));
        let journal = Journal::new(Arc::new(backend.clone()), StateDocument::new("aws"))
            .guarded_by(Arc::new(Lost(crate::LockHolder::this_process("apply"))));
        let err = journal.begin_create("a", "aws_vpc").unwrap_err();
        assert!(matches!(err, StateError::LeaseLost { .. }), "{err}");
        assert!(backend.load().unwrap().is_none(), "nothing written");
    }
}
