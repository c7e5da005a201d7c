//! The run lock: a file created exclusively, holding who took it. Released on drop.

use crate::StateError;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::fs::{self, OpenOptions};
use std::io::Write;
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
}

impl fmt::Display for LockHolder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "`{}` (pid {} on {}, since {})",
            self.operation, self.pid, self.host, self.created
        )
    }
}

/// A held lock. Dropping it removes the lock file.
#[derive(Debug)]
pub struct RunLock {
    path: PathBuf,
    holder: LockHolder,
}

impl RunLock {
    pub(crate) fn acquire(path: PathBuf, operation: &str) -> Result<RunLock, StateError> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            fs::create_dir_all(parent)
                .map_err(|source| StateError::Lock { path: path.clone(), source })?;
        }
        let holder = LockHolder {
            id: uuid::Uuid::new_v4().to_string(),
            pid: std::process::id(),
            host: hostname::get()
                .map(|h| h.to_string_lossy().into_owned())
                .unwrap_or_else(|_| "unknown".into()),
            created: time::OffsetDateTime::now_utc()
                .format(&time::format_description::well_known::Rfc3339)
                .unwrap_or_default(),
            operation: operation.to_string(),
        };
        match OpenOptions::new().write(true).create_new(true).open(&path) {
            Ok(mut file) => {
                let text = serde_json::to_vec_pretty(&holder).unwrap_or_default();
                file.write_all(&text)
                    .and_then(|_| file.sync_all())
                    .map_err(|source| StateError::Lock { path: path.clone(), source })?;
                tracing::debug!(path = %path.display(), id = %holder.id, "lock taken");
                Ok(RunLock { path, holder })
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                if let Some(stale) =
                    read_holder(&path).filter(|h| h.host == holder.host && !process_alive(h.pid))
                {
                    // The holder ran on this machine and is gone (killed): its lock protects
                    // nothing. Take it over, once.
                    tracing::warn!(
                        path = %path.display(),
                        holder = %stale,
                        "taking over a lock whose process is gone"
                    );
                    if fs::remove_file(&path).is_ok() {
                        return Self::acquire(path, operation);
                    }
                }
                let holder = read_holder(&path).unwrap_or(LockHolder {
                    id: "unknown".into(),
                    pid: 0,
                    host: "unknown".into(),
                    created: "unknown".into(),
                    operation: "unknown".into(),
                });
                Err(StateError::Locked { path, holder: Box::new(holder) })
            }
            Err(source) => Err(StateError::Lock { path, source }),
        }
    }

    pub(crate) fn force_remove(path: &Path, id: &str) -> Result<(), StateError> {
        let holder = read_holder(path).ok_or_else(|| StateError::Lock {
            path: path.to_path_buf(),
            source: std::io::Error::new(std::io::ErrorKind::NotFound, "no lock file"),
        })?;
        if holder.id != id {
            return Err(StateError::LockMismatch {
                path: path.to_path_buf(),
                found: holder.id,
                expected: id.to_string(),
            });
        }
        fs::remove_file(path)
            .map_err(|source| StateError::Lock { path: path.to_path_buf(), source })
    }

    /// Who holds this lock (this process).
    pub fn holder(&self) -> &LockHolder {
        &self.holder
    }
}

/// Whether a process with `pid` runs on this machine. Only answers "no" where it can know
/// (Linux's /proc); elsewhere every holder is assumed alive.
fn process_alive(pid: u32) -> bool {
    let proc_root = Path::new("/proc/self");
    if !proc_root.exists() {
        return true;
    }
    if pid == std::process::id() {
        return true;
    }
    Path::new(&format!("/proc/{pid}")).exists()
}

fn read_holder(path: &Path) -> Option<LockHolder> {
    let text = fs::read_to_string(path).ok()?;
    serde_json::from_str(&text).ok()
}

impl Drop for RunLock {
    fn drop(&mut self) {
        if let Err(e) = fs::remove_file(&self.path) {
            tracing::warn!(path = %self.path.display(), error = %e, "could not remove lock file");
        }
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

    #[test]
    fn a_lock_left_by_a_dead_process_on_this_host_is_taken_over() {
        let dir = tempfile::tempdir().unwrap();
        let backend = LocalBackend::new(dir.path().join("aws.state.json"));
        let held = backend.lock("apply").unwrap();
        let mut holder = held.holder().clone();
        std::mem::forget(held);
        // Rewrite the holder as a process that cannot exist.
        holder.pid = u32::MAX - 1;
        fs::write(backend.lock_path(), serde_json::to_vec(&holder).unwrap()).unwrap();
        let taken = backend.lock("apply").expect("stale lock taken over");
        assert_eq!(taken.holder().pid, std::process::id());
        // A holder on another host is never presumed dead.
        holder.host = "elsewhere".into();
        drop(taken);
        fs::write(backend.lock_path(), serde_json::to_vec(&holder).unwrap()).unwrap();
        assert!(matches!(backend.lock("apply"), Err(StateError::Locked { .. })));
    }

    #[test]
    fn force_unlock_needs_the_right_id() {
        let dir = tempfile::tempdir().unwrap();
        let backend = LocalBackend::new(dir.path().join("aws.state.json"));
        let held = backend.lock("apply").unwrap();
        let id = held.holder().id.clone();
        std::mem::forget(held); // as if the process had been killed
        assert!(backend.force_unlock("wrong").is_err());
        backend.force_unlock(&id).unwrap();
        backend.lock("apply").unwrap();
    }
}
