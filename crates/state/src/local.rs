//! The local file backend: `<dir>/<spec>.state.json`, saved atomically, locked by the kernel.

use crate::backend::{parse_document, serial_of};
use crate::{Backend, Encryption, HeldLock, LockStatus, RunLock, StateDocument, StateError};
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A state file on the local disk.
#[derive(Debug, Clone)]
pub struct LocalBackend {
    path: PathBuf,
    encryption: Arc<Encryption>,
}

impl LocalBackend {
    /// A backend keeping the state at `path` (the file need not exist yet).
    pub fn new(path: impl Into<PathBuf>) -> Self {
        LocalBackend { path: path.into(), encryption: Arc::default() }
    }

    /// This backend, storing documents as `encryption` says (default: clear JSON).
    pub fn encrypted(mut self, encryption: Arc<Encryption>) -> Self {
        self.encryption = encryption;
        self
    }

    /// Where the state file is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Where the lock file is: the state path with `.lock` appended.
    pub fn lock_path(&self) -> PathBuf {
        let mut name = self.path.as_os_str().to_owned();
        name.push(".lock");
        PathBuf::from(name)
    }

    /// The path as a user writes it.
    fn shown(&self) -> String {
        self.path.display().to_string()
    }

    /// The stored bytes; `None` when the file does not exist yet.
    fn read(&self) -> Result<Option<Vec<u8>>, StateError> {
        match fs::read(&self.path) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(StateError::Read { path: self.path.clone(), source }),
        }
    }

    /// Loads the state; `None` when the file does not exist yet.
    pub fn load(&self) -> Result<Option<StateDocument>, StateError> {
        self.read()?
            .map(|bytes| parse_document(&self.shown(), &bytes, &self.encryption))
            .transpose()
    }

    /// The serial of the state on disk (0 when there is none yet).
    fn serial_on_disk(&self) -> Result<u64, StateError> {
        self.read()?.map_or(Ok(0), |bytes| serial_of(&self.shown(), &bytes))
    }

    /// [`LocalBackend::save`], only over the version of serial `previous` (0: none yet): a file
    /// that another writer changed (one that ignored the lock) is refused, never overwritten.
    pub fn save_over(&self, doc: &StateDocument, previous: u64) -> Result<(), StateError> {
        let found = self.serial_on_disk()?;
        if found != previous {
            return Err(StateError::Changed { location: self.shown(), expected: previous, found });
        }
        self.save(doc)
    }

    /// Loads the state of `spec`, or a new empty one; refuses a state made for another spec.
    pub fn load_or_new(&self, spec: &str) -> Result<StateDocument, StateError> {
        Backend::load_or_new(self, spec)
    }

    /// Where the previous version of the state is kept: the state path with `.backup` appended.
    pub fn backup_path(&self) -> PathBuf {
        let mut name = self.path.as_os_str().to_owned();
        name.push(".backup");
        PathBuf::from(name)
    }

    /// Saves atomically: write a temporary file beside the target (owner-only), fsync it, keep
    /// the current file as the backup, rename the new one over the target, fsync the directory.
    /// A crash at any point leaves either the old or the new file.
    pub fn save(&self, doc: &StateDocument) -> Result<(), StateError> {
        let err = |source| StateError::Write { path: self.path.clone(), source };
        let dir =
            self.path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        fs::create_dir_all(dir).map_err(err)?;
        let mut tmp_name = self.path.as_os_str().to_owned();
        tmp_name.push(format!(".tmp.{}", std::process::id()));
        let tmp = PathBuf::from(tmp_name);
        let text = self.encryption.encode(&self.shown(), doc)?;
        {
            let mut options = OpenOptions::new();
            options.write(true).create(true).truncate(true).mode(0o600);
            let mut file = options.open(&tmp).map_err(err)?;
            file.write_all(&text).map_err(err)?;
            file.sync_all().map_err(err)?;
        }
        if self.path.exists() {
            // The previous version, as a second name for the same file (no copy).
            let backup = self.backup_path();
            match fs::remove_file(&backup) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(err(e)),
                _ => {}
            }
            if fs::hard_link(&self.path, &backup).is_err() {
                fs::copy(&self.path, &backup).map_err(err)?;
            }
        }
        fs::rename(&tmp, &self.path).map_err(err)?;
        File::open(dir).and_then(|d| d.sync_all()).map_err(err)?;
        Ok(())
    }

    /// Takes the run lock; fails with [`StateError::Locked`] naming the holder if another run has it.
    pub fn lock(&self, operation: &str) -> Result<RunLock, StateError> {
        RunLock::acquire(self.lock_path(), operation)
    }

    /// Removes a lock left by a run that is gone, if its id matches.
    pub fn force_unlock(&self, id: &str) -> Result<(), StateError> {
        RunLock::force_remove(&self.lock_path(), id)
    }
}

impl Backend for LocalBackend {
    fn location(&self) -> String {
        self.shown()
    }

    fn load(&self) -> Result<Option<StateDocument>, StateError> {
        LocalBackend::load(self)
    }

    fn save_over(&self, doc: &StateDocument, previous: u64) -> Result<(), StateError> {
        LocalBackend::save_over(self, doc, previous)
    }

    fn lock(&self, operation: &str) -> Result<Box<dyn HeldLock>, StateError> {
        Ok(Box::new(LocalBackend::lock(self, operation)?))
    }

    fn lock_status(&self) -> Result<Option<LockStatus>, StateError> {
        RunLock::status(&self.lock_path())
    }

    fn force_unlock(&self, id: &str) -> Result<(), StateError> {
        LocalBackend::force_unlock(self, id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_file_loads_as_none_and_save_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let backend = LocalBackend::new(dir.path().join("nested/aws.state.json"));
        assert!(backend.load().unwrap().is_none());
        let mut doc = StateDocument::new("aws");
        doc.serial = 7;
        backend.save(&doc).unwrap();
        assert_eq!(backend.load().unwrap().unwrap(), doc);
        let leftovers: Vec<_> = fs::read_dir(dir.path().join("nested"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(leftovers.len(), 1, "no temporary file left: {leftovers:?}");
    }

    #[test]
    fn the_previous_version_is_kept_and_both_are_owner_only() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        let backend = LocalBackend::new(dir.path().join("aws.state.json"));
        let mut doc = StateDocument::new("aws");
        backend.save(&doc).unwrap();
        assert!(!backend.backup_path().exists(), "nothing before the first save");
        doc.serial = 1;
        backend.save(&doc).unwrap();
        doc.serial = 2;
        backend.save(&doc).unwrap();
        let backup = LocalBackend::new(backend.backup_path()).load().unwrap().unwrap();
        assert_eq!((backend.load().unwrap().unwrap().serial, backup.serial), (2, 1));
        for path in [backend.path().to_path_buf(), backend.backup_path()] {
            assert_eq!(fs::metadata(&path).unwrap().mode() & 0o777, 0o600, "{}", path.display());
        }
    }

    #[test]
    fn a_save_over_a_version_another_writer_changed_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let backend = LocalBackend::new(dir.path().join("aws.state.json"));
        let mut doc = StateDocument::new("aws");
        doc.serial = 1;
        backend.save_over(&doc, 0).unwrap();
        let mut theirs = doc.clone();
        theirs.serial = 5;
        backend.save(&theirs).unwrap();
        doc.serial = 2;
        let err = backend.save_over(&doc, 1).unwrap_err();
        assert!(matches!(err, StateError::Changed { expected: 1, found: 5, .. }), "{err}");
        assert_eq!(backend.load().unwrap().unwrap().serial, 5, "theirs is kept");
    }

    #[test]
    fn state_of_another_spec_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let backend = LocalBackend::new(dir.path().join("s.json"));
        backend.save(&StateDocument::new("gcp")).unwrap();
        let err = backend.load_or_new("aws").unwrap_err();
        assert!(matches!(err, StateError::SpecMismatch { .. }), "{err}");
    }

    #[test]
    fn corrupt_file_is_an_error_naming_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.json");
        fs::write(&path, "{not json").unwrap();
        let err = LocalBackend::new(&path).load().unwrap_err();
        assert!(err.to_string().contains("s.json"), "{err}");
    }
}
