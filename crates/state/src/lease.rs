//! The lock of a remote state: a lease object that names its holder and when it expires.
//!
//! - Taken with a conditional create: of two runs, exactly one creates the object.
//! - Renewed by its holder every third of its length (a heartbeat thread), each renewal
//!   conditional on the version the holder wrote last.
//! - An expired lease (its holder was killed, or lost its network) is taken over with a write
//!   conditional on the version read: of several runs taking it over, exactly one wins.
//! - A holder that finds its lease taken or removed, or that could not renew it before it
//!   expired, has lost it: [`HeldLock::still_held`] fails and the journal writes nothing more.
//!
//! Expiry times are wall-clock times written by the holder; the clocks of the machines that
//! share a state must agree to well within a lease's length (NTP does).

use crate::remote::{Condition, ObjectStore, StoreError};
use crate::{HeldLock, LockHolder, LockStatus, StateError};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// How long a lease lasts unless renewed (`[state] lease_seconds`).
pub const DEFAULT_LEASE: Duration = Duration::from_secs(60);

/// How many times a contended acquisition reads and tries again before giving up.
const ATTEMPTS: usize = 8;

/// A held lease. Dropping it stops the heartbeat and deletes the lease object.
#[derive(Debug)]
pub struct Lease {
    shared: Arc<Shared>,
    stop: Option<mpsc::Sender<()>>,
    heartbeat: Option<JoinHandle<()>>,
}

#[derive(Debug)]
struct Shared {
    store: Arc<dyn ObjectStore>,
    key: String,
    length: Duration,
    holder: LockHolder,
    held: Mutex<Held>,
}

#[derive(Debug)]
struct Held {
    /// The version of the lease object this holder wrote last.
    version: String,
    /// Until when the lease is surely this holder's (measured from before the write).
    valid_until: Instant,
    /// Why the lease is no longer this holder's.
    lost: Option<String>,
}

/// `length` from now, as the lease object writes it.
fn expiry_after(length: Duration) -> String {
    (OffsetDateTime::now_utc() + length).format(&Rfc3339).unwrap_or_default()
}

/// Whether a lease held by `holder` has expired (one without a readable expiry never does).
fn expired(holder: &LockHolder) -> bool {
    holder
        .expires
        .as_deref()
        .and_then(|t| OffsetDateTime::parse(t, &Rfc3339).ok())
        .is_some_and(|until| until <= OffsetDateTime::now_utc())
}

fn parse_holder(bytes: &[u8]) -> LockHolder {
    serde_json::from_slice(bytes).unwrap_or_else(|_| LockHolder::unknown())
}

impl Lease {
    /// Takes the lease at `key` for `operation`, lasting `length` unless renewed.
    pub(crate) fn acquire(
        store: Arc<dyn ObjectStore>,
        key: &str,
        length: Duration,
        operation: &str,
    ) -> Result<Lease, StateError> {
        let location = store.location(key);
        let failed = |e: StoreError| StateError::Store {
            location: location.clone(),
            message: e.to_string(),
        };
        let mut holder = LockHolder::this_process(operation);
        for _ in 0..ATTEMPTS {
            let started = Instant::now();
            holder.expires = Some(expiry_after(length));
            let body = serde_json::to_vec_pretty(&holder).unwrap_or_default();
            match store.put(key, &body, Condition::Absent) {
                Ok(version) => {
                    return Ok(Lease::start(store, key, length, holder, version, started));
                }
                Err(StoreError::Conflict) => {}
                Err(e) => return Err(failed(e)),
            }
            let Some(current) = store.get(key).map_err(failed)? else {
                continue; // released between our write and our read
            };
            let theirs = parse_holder(&current.bytes);
            if !expired(&theirs) {
                return Err(StateError::Locked { location, holder: Box::new(theirs) });
            }
            let started = Instant::now();
            holder.expires = Some(expiry_after(length));
            let body = serde_json::to_vec_pretty(&holder).unwrap_or_default();
            match store.put(key, &body, Condition::Version(current.version)) {
                Ok(version) => {
                    tracing::warn!(%location, holder = %theirs, "took over a lease that expired");
                    return Ok(Lease::start(store, key, length, holder, version, started));
                }
                // Another run took it over first, or its holder released it: look again.
                Err(StoreError::Conflict | StoreError::Missing) => {}
                Err(e) => return Err(failed(e)),
            }
        }
        Err(failed(StoreError::Failed(format!(
            "the lock kept changing under {ATTEMPTS} attempts to take it"
        ))))
    }

    fn start(
        store: Arc<dyn ObjectStore>,
        key: &str,
        length: Duration,
        holder: LockHolder,
        version: String,
        started: Instant,
    ) -> Lease {
        tracing::debug!(location = %store.location(key), id = %holder.id, "lease taken");
        let shared = Arc::new(Shared {
            store,
            key: key.to_string(),
            length,
            holder,
            held: Mutex::new(Held { version, valid_until: started + length, lost: None }),
        });
        let (stop, stopped) = mpsc::channel();
        let beating = shared.clone();
        let heartbeat = std::thread::Builder::new()
            .name("state-lease".into())
            .spawn(move || {
                while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(length / 3) {
                    if !beating.renew() {
                        break;
                    }
                }
            })
            .ok();
        Lease { shared, stop: Some(stop), heartbeat }
    }

    /// Who holds the lease at `key`, and whether it is still live (not expired).
    pub(crate) fn status(
        store: &dyn ObjectStore,
        key: &str,
    ) -> Result<Option<LockStatus>, StateError> {
        let location = store.location(key);
        let current =
            store.get(key).map_err(|e| StateError::Store { location, message: e.to_string() })?;
        Ok(current.map(|object| {
            let holder = parse_holder(&object.bytes);
            let live = !expired(&holder);
            LockStatus { holder, live }
        }))
    }

    /// Deletes the lease at `key` if it is lock `id`, at the version read (a renewal in between
    /// makes it fail: run it again).
    pub(crate) fn force_remove(
        store: &dyn ObjectStore,
        key: &str,
        id: &str,
    ) -> Result<(), StateError> {
        let location = store.location(key);
        let failed = |e: StoreError| StateError::Store {
            location: location.clone(),
            message: e.to_string(),
        };
        let Some(current) = store.get(key).map_err(failed)? else {
            return Err(StateError::NotLocked { location });
        };
        let holder = parse_holder(&current.bytes);
        if holder.id != id {
            return Err(StateError::LockMismatch {
                location,
                found: holder.id,
                expected: id.into(),
            });
        }
        match store.delete(key, &current.version) {
            Ok(()) | Err(StoreError::Missing) => Ok(()),
            Err(StoreError::Conflict) => Err(failed(StoreError::Failed(
                "its holder renewed it while it was being removed; run force-unlock again".into(),
            ))),
            Err(e) => Err(failed(e)),
        }
    }
}

impl Shared {
    /// Renews the lease once; `false` when it is lost (the heartbeat then stops).
    fn renew(&self) -> bool {
        let started = Instant::now();
        let mut holder = self.holder.clone();
        holder.expires = Some(expiry_after(self.length));
        let body = serde_json::to_vec_pretty(&holder).unwrap_or_default();
        let version = self.held.lock().unwrap_or_else(|p| p.into_inner()).version.clone();
        let renewed = match self.store.put(&self.key, &body, Condition::Version(version)) {
            Err(StoreError::Conflict) => self.still_ours(&body),
            other => other,
        };
        let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        match renewed {
            Ok(version) => {
                held.version = version;
                held.valid_until = started + self.length;
                true
            }
            Err(StoreError::Conflict | StoreError::Missing) => {
                held.lost = Some("another client took it over or removed it".into());
                tracing::error!(location = %self.store.location(&self.key), "the state lease was lost");
                false
            }
            Err(StoreError::Failed(why)) if Instant::now() >= held.valid_until => {
                held.lost = Some(format!("it could not be renewed before it expired: {why}"));
                tracing::error!(location = %self.store.location(&self.key), %why, "the state lease expired");
                false
            }
            Err(StoreError::Failed(why)) => {
                tracing::warn!(location = %self.store.location(&self.key), %why, "renewing the state lease failed; trying again");
                true
            }
        }
    }

    /// After a conflicting renewal: whether the lease object is still this holder's (an earlier
    /// renewal was written but its answer lost); if so, renews it at the version found.
    fn still_ours(&self, body: &[u8]) -> Result<String, StoreError> {
        match self.store.get(&self.key)? {
            Some(current) if parse_holder(&current.bytes).id == self.holder.id => {
                self.store.put(&self.key, body, Condition::Version(current.version))
            }
            Some(_) => Err(StoreError::Conflict),
            None => Err(StoreError::Missing),
        }
    }
}

impl HeldLock for Lease {
    fn holder(&self) -> &LockHolder {
        &self.shared.holder
    }

    fn still_held(&self) -> Result<(), StateError> {
        let held = self.shared.held.lock().unwrap_or_else(|p| p.into_inner());
        let why = match &held.lost {
            Some(why) => why.clone(),
            None if Instant::now() >= held.valid_until => "it expired before it was renewed".into(),
            None => return Ok(()),
        };
        Err(StateError::LeaseLost { location: self.shared.store.location(&self.shared.key), why })
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(heartbeat) = self.heartbeat.take() {
            let _ = heartbeat.join();
        }
        let held = self.shared.held.lock().unwrap_or_else(|p| p.into_inner());
        if held.lost.is_some() {
            return;
        }
        let (store, key) = (&self.shared.store, &self.shared.key);
        if let Err(e) = store.delete(key, &held.version) {
            tracing::warn!(location = %store.location(key), error = %e, "could not release the state lease; it expires by itself");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::remote::memory::MemoryStore;
    use std::sync::atomic::{AtomicUsize, Ordering};

    const KEY: &str = "aws.json.lock";

    fn take(store: &Arc<MemoryStore>, length: Duration) -> Result<Lease, StateError> {
        Lease::acquire(store.clone(), KEY, length, "apply")
    }

    #[test]
    fn a_second_run_is_refused_naming_the_holder_until_the_first_releases() {
        let store = Arc::new(MemoryStore::default());
        let first = take(&store, Duration::from_secs(30)).unwrap();
        match take(&store, Duration::from_secs(30)).unwrap_err() {
            StateError::Locked { holder, .. } => assert_eq!(holder.id, first.holder().id),
            other => panic!("expected Locked, got {other}"),
        }
        let status = Lease::status(store.as_ref(), KEY).unwrap().unwrap();
        assert!(status.live && status.holder.expires.is_some(), "{status:?}");
        drop(first);
        assert!(store.get(KEY).unwrap().is_none(), "released on drop");
        take(&store, Duration::from_secs(30)).expect("free again");
    }

    #[test]
    fn a_lease_whose_holder_stopped_renewing_is_taken_over_once_expired() {
        let store = Arc::new(MemoryStore::default());
        let dead = LockHolder {
            expires: Some(expiry_after(Duration::from_millis(300))),
            ..LockHolder::this_process("apply")
        };
        store.put(KEY, &serde_json::to_vec(&dead).unwrap(), Condition::Absent).unwrap();
        assert!(matches!(take(&store, Duration::from_secs(30)), Err(StateError::Locked { .. })));
        std::thread::sleep(Duration::from_millis(1100));
        let status = Lease::status(store.as_ref(), KEY).unwrap().unwrap();
        assert!(!status.live, "expired");
        let taken = take(&store, Duration::from_secs(30)).expect("expired: taken over");
        assert_ne!(taken.holder().id, dead.id);
    }

    #[test]
    fn the_holder_renews_its_lease_while_it_runs() {
        let store = Arc::new(MemoryStore::default());
        let held = take(&store, Duration::from_millis(1500)).unwrap();
        std::thread::sleep(Duration::from_millis(2500));
        held.still_held().expect("renewed past its first expiry");
        assert!(matches!(take(&store, Duration::from_secs(1)), Err(StateError::Locked { .. })));
    }

    #[test]
    fn a_lease_removed_by_another_client_is_lost_and_says_so() {
        let store = Arc::new(MemoryStore::default());
        let held = take(&store, Duration::from_millis(900)).unwrap();
        store.remove(KEY);
        std::thread::sleep(Duration::from_millis(700));
        let err = held.still_held().unwrap_err();
        assert!(err.to_string().contains("took it over or removed it"), "{err}");
    }

    #[test]
    fn a_lease_that_cannot_be_renewed_is_lost_when_it_expires() {
        let store = Arc::new(MemoryStore::default());
        let held = take(&store, Duration::from_millis(900)).unwrap();
        store.down.store(true, Ordering::SeqCst);
        held.still_held().expect("still valid for now");
        std::thread::sleep(Duration::from_millis(1300));
        let err = held.still_held().unwrap_err();
        assert!(matches!(err, StateError::LeaseLost { .. }), "{err}");
    }

    #[test]
    fn force_unlock_checks_the_id() {
        let store = Arc::new(MemoryStore::default());
        let held = take(&store, Duration::from_secs(30)).unwrap();
        let err = Lease::force_remove(store.as_ref(), KEY, "wrong").unwrap_err();
        assert!(matches!(err, StateError::LockMismatch { .. }), "{err}");
        Lease::force_remove(store.as_ref(), KEY, &held.holder().id.clone()).unwrap();
        assert!(store.get(KEY).unwrap().is_none());
        let err = Lease::force_remove(store.as_ref(), KEY, "any").unwrap_err();
        assert!(matches!(err, StateError::NotLocked { .. }), "{err}");
    }

    #[test]
    fn of_many_contenders_for_an_expired_lease_exactly_one_wins_each_round() {
        let store = Arc::new(MemoryStore::default());
        for _ in 0..50 {
            let expired = LockHolder {
                expires: Some(expiry_after(Duration::ZERO)),
                ..LockHolder::this_process("apply")
            };
            store.remove(KEY);
            store.put(KEY, &serde_json::to_vec(&expired).unwrap(), Condition::Absent).unwrap();
            let won = Arc::new(AtomicUsize::new(0));
            let barrier = Arc::new(std::sync::Barrier::new(4));
            let leases: Vec<_> = (0..4)
                .map(|_| {
                    let (store, won, barrier) = (store.clone(), won.clone(), barrier.clone());
                    std::thread::spawn(move || {
                        barrier.wait();
                        let lease = take(&store, Duration::from_secs(30)).ok();
                        if lease.is_some() {
                            won.fetch_add(1, Ordering::SeqCst);
                        }
                        lease
                    })
                })
                .collect();
            let leases: Vec<_> = leases.into_iter().map(|t| t.join().unwrap()).collect();
            assert_eq!(won.load(Ordering::SeqCst), 1, "exactly one winner");
            drop(leases);
        }
    }
}
