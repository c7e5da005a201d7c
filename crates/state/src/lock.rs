//! The run lock: a lock file under an exclusive kernel lock (`flock`), holding who took it.
//!
//! The kernel releases the lock when its process ends, however it ends: a run killed with
//! SIGKILL leaves its lock file (with the holder it names) but not the lock, and the next run
//! takes it over at once, with no guess about whether the holder still lives. Released on drop:
//! the file is removed while still locked, and a run that locked a file already removed (it
//! opened it just before) sees the path now names another file and starts over.

use crate::{HeldLock, LockStatus, StateError};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::fs::{self, File, OpenOptions, TryLockError};
use std::io::Write;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Who holds a lock: written into the lock file, reported to a second run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LockHolder {
    /// Random id, used by `force-unlock`.
    pub id: String,
    pub pid: u32,
    pub host: String,
    /// RFC 3339 time the lock was taken.
    pub created: String,
    /// The operation holding it (`apply`, `destroy`).
    pub operation: String,
    /// RFC 3339 time a lease ends unless its holder renews it (remote locks only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires: Option<String>,
}

impl LockHolder {
    /// A holder for `operation` in this process, with a new id.
    pub fn this_process(operation: &str) -> Self {
        LockHolder {
            id: uuid::Uuid::new_v4().to_string(),
            pid: std::process::id(),
            host: hostname::get()
                .map(|h| h.to_string_lossy().into_owned())
                .unwrap_or_else(|_| "unknown".into()),
            created: now_rfc3339(),
            operation: operation.to_string(),
            expires: None,
        }
    }

    /// A holder that could not be read (a lock file or object that does not parse).
    pub(crate) fn unknown() -> Self {
        LockHolder {
            id: "unknown".into(),
            pid: 0,
            host: "unknown".into(),
            created: "unknown".into(),
            operation: "unknown".into(),
            expires: None,
        }
    }
}

/// The current time in RFC 3339 (UTC).
pub(crate) fn now_rfc3339() -> String {
    time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

impl fmt::Display for LockHolder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "`{}` (pid {} on {}, since {}",
            self.operation, self.pid, self.host, self.created
        )?;
        match &self.expires {
            Some(until) => write!(f, ", lease until {until})"),
            None => write!(f, ")"),
        }
    }
}

/// A held lock. Dropping it removes the lock file, then lets the kernel lock go.
#[derive(Debug)]
pub struct RunLock {
    path: PathBuf,
    holder: LockHolder,
    /// The open lock file: the kernel lock lives as long as it is open.
    file: File,
}

/// The lock file at `path`, opened (created owner-only if missing) and locked exclusively;
/// `None` when another process holds it.
fn open_locked(path: &Path) -> Result<Option<File>, StateError> {
    let err = |source| StateError::Lock { path: path.to_path_buf(), source };
    loop {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(path)
            .map_err(err)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => return Ok(None),
            Err(TryLockError::Error(e)) => return Err(err(e)),
        }
        // Locked, but the file may have been removed (and the path taken by a new one) by the
        // holder releasing it between our open and our lock: then it locks nothing.
        let ours = file.metadata().map_err(err)?;
        match fs::metadata(path) {
            Ok(now) if now.dev() == ours.dev() && now.ino() == ours.ino() => return Ok(Some(file)),
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(err(e)),
        }
    }
}

impl RunLock {
    pub(crate) fn acquire(path: PathBuf, operation: &str) -> Result<RunLock, StateError> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            fs::create_dir_all(parent)
                .map_err(|source| StateError::Lock { path: path.clone(), source })?;
        }
        let holder = LockHolder::this_process(operation);
        let Some(mut file) = open_locked(&path)? else {
            let holder = read_holder(&path).unwrap_or_else(LockHolder::unknown);
            let location = path.display().to_string();
            return Err(StateError::Locked { location, holder: Box::new(holder) });
        };
        if let Some(gone) = read_holder(&path) {
            // Its process ended without releasing it (killed): the kernel already let it go.
            tracing::warn!(path = %path.display(), holder = %gone, "taking over a lock whose run ended");
        }
        let text = serde_json::to_vec_pretty(&holder).unwrap_or_default();
        // Owner-only, also when a file left by an older run was not.
        file.set_permissions(fs::Permissions::from_mode(0o600))
            .and_then(|_| file.set_len(0))
            .and_then(|_| file.write_all(&text))
            .and_then(|_| file.sync_all())
            .map_err(|source| StateError::Lock { path: path.clone(), source })?;
        tracing::debug!(path = %path.display(), id = %holder.id, "lock taken");
        Ok(RunLock { path, holder, file })
    }

    /// Removes the lock file a run that ended left behind, if it names lock `id`. A lock still
    /// held by a running process is not removed: it ends when that process ends.
    pub(crate) fn force_remove(path: &Path, id: &str) -> Result<(), StateError> {
        let holder = read_holder(path).ok_or_else(|| StateError::Lock {
            path: path.to_path_buf(),
            source: std::io::Error::new(std::io::ErrorKind::NotFound, "no lock file"),
        })?;
        if holder.id != id {
            return Err(StateError::LockMismatch {
                location: path.display().to_string(),
                found: holder.id,
                expected: id.to_string(),
            });
        }
        let Some(_file) = open_locked(path)? else {
            return Err(StateError::Lock {
                path: path.to_path_buf(),
                source: std::io::Error::other(format!(
                    "lock {id} is held by a run still going, {holder}: it is released when \
                     that process ends"
                )),
            });
        };
        fs::remove_file(path)
            .map_err(|source| StateError::Lock { path: path.to_path_buf(), source })
    }

    /// Who holds the lock file at `path`, if there is one, and whether a process still holds
    /// its kernel lock.
    pub(crate) fn status(path: &Path) -> Result<Option<LockStatus>, StateError> {
        let Some(holder) = read_holder(path) else {
            return Ok(None);
        };
        // Probing takes the kernel lock for a moment when it is free; the file stays as it was.
        let file = match File::open(path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(StateError::Lock { path: path.to_path_buf(), source }),
        };
        let live = match file.try_lock() {
            Ok(()) => false,
            Err(TryLockError::WouldBlock) => true,
            Err(TryLockError::Error(source)) => {
                return Err(StateError::Lock { path: path.to_path_buf(), source });
            }
        };
        Ok(Some(LockStatus { holder, live }))
    }

    /// Who holds this lock (this process).
    pub fn holder(&self) -> &LockHolder {
        &self.holder
    }
}

impl HeldLock for RunLock {
    fn holder(&self) -> &LockHolder {
        &self.holder
    }

    /// The kernel lock is held until this process lets it go.
    fn still_held(&self) -> Result<(), StateError> {
        Ok(())
    }
}

fn read_holder(path: &Path) -> Option<LockHolder> {
    let text = fs::read_to_string(path).ok()?;
    serde_json::from_str(&text).ok()
}

impl Drop for RunLock {
    fn drop(&mut self) {
        // Removed while still locked; the kernel lock goes with the file handle after this.
        if let Err(e) = fs::remove_file(&self.path) {
            tracing::warn!(path = %self.path.display(), error = %e, "could not remove lock file");
        }
        let _ = self.file.unlock();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::LocalBackend;

    #[test]
    fn second_lock_is_refused_with_holder_and_released_on_drop() {
        let dir = tempfile::tempdir().unwrap();
        let backend = LocalBackend::new(dir.path().join("aws.state.json"));
        let first = backend.lock("apply").unwrap();
        let err = backend.lock("apply").unwrap_err();
        match &err {
            StateError::Locked { holder, .. } => {
                assert_eq!(holder.pid, std::process::id());
                assert_eq!(holder.id, first.holder().id);
            }
            other => panic!("expected Locked, got {other}"),
        }
        assert!(err.to_string().contains("force-unlock"));
        drop(first);
        backend.lock("apply").expect("lock free again after drop");
    }

    /// A lock file as a killed run leaves it: its holder named, no process holding it.
    fn left_by_a_killed_run(backend: &LocalBackend) -> LockHolder {
        let holder = LockHolder {
            id: "dead-run".into(),
            pid: 1,
            host: "elsewhere".into(),
            created: "2026-01-01T00:00:00Z".into(),
            operation: "apply".into(),
            expires: None,
        };
        fs::write(backend.lock_path(), serde_json::to_vec(&holder).unwrap()).unwrap();
        holder
    }

    #[test]
    fn a_lock_whose_run_ended_is_taken_over_wherever_it_ran() {
        let dir = tempfile::tempdir().unwrap();
        let backend = LocalBackend::new(dir.path().join("aws.state.json"));
        left_by_a_killed_run(&backend);
        let taken = backend.lock("apply").expect("the kernel lock went with its process");
        assert_eq!(taken.holder().pid, std::process::id());
        assert_eq!(read_holder(&backend.lock_path()).unwrap().id, taken.holder().id);
        let mode = fs::metadata(backend.lock_path()).unwrap().mode() & 0o777;
        assert_eq!(mode, 0o600, "owner only");
    }

    #[test]
    fn force_unlock_needs_the_right_id_and_a_run_that_ended() {
        let dir = tempfile::tempdir().unwrap();
        let backend = LocalBackend::new(dir.path().join("aws.state.json"));
        let dead = left_by_a_killed_run(&backend);
        assert!(matches!(backend.force_unlock("wrong"), Err(StateError::LockMismatch { .. })));
        backend.force_unlock(&dead.id).unwrap();
        assert!(!backend.lock_path().exists());
        let held = backend.lock("apply").unwrap();
        let err = backend.force_unlock(&held.holder().id).unwrap_err();
        assert!(err.to_string().contains("still going"), "{err}");
        assert!(backend.lock_path().exists(), "a running holder's lock stays");
    }

    #[test]
    fn a_released_lock_is_never_held_twice() {
        // Many takers at once, each taking and releasing: never two holders at a time.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("aws.state.json");
        let inside = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let (backend, inside) = (LocalBackend::new(&path), inside.clone());
                std::thread::spawn(move || {
                    let mut taken = 0;
                    for _ in 0..200 {
                        if let Ok(lock) = backend.lock("apply") {
                            let now = inside.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                            assert_eq!(now, 0, "two holders at once");
                            inside.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
                            drop(lock);
                            taken += 1;
                        }
                    }
                    taken
                })
            })
            .collect();
        let taken: usize = threads.into_iter().map(|t| t.join().unwrap()).sum();
        assert!(taken > 0);
    }
}
