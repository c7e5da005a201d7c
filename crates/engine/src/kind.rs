//! The contract every resource kind implements.

use crate::{Address, Attrs, Event, Observer};
use async_trait::async_trait;
use std::any::Any;
use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};

/// How a change of a field is applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldUpdate {
    /// Changed on the existing resource.
    InPlace,
    /// The cloud cannot change it: the resource is replaced.
    Replace,
    /// Set by the cloud (ids, ARNs); never diffed, shown as "known after apply" on create.
    Computed,
}

/// A field of a kind that the planner diffs.
#[derive(Debug, Clone, Copy)]
pub struct Field {
    pub name: &'static str,
    pub update: FieldUpdate,
    /// A list whose order does not matter (compared sorted).
    pub unordered: bool,
}

impl Field {
    pub const fn in_place(name: &'static str) -> Field {
        Field {
            name,
            update: FieldUpdate::InPlace,
            unordered: false,
        }
    }
    pub const fn replace(name: &'static str) -> Field {
        Field {
            name,
            update: FieldUpdate::Replace,
            unordered: false,
        }
    }
    pub const fn computed(name: &'static str) -> Field {
        Field {
            name,
            update: FieldUpdate::Computed,
            unordered: false,
        }
    }
    pub const fn unordered(mut self) -> Field {
        self.unordered = true;
        self
    }
}

/// A resource as it exists in the cloud.
#[derive(Debug, Clone, PartialEq)]
pub struct Live {
    /// The cloud id (or a composite id for sub-resources).
    pub id: String,
    /// Attributes read back: inputs in the same shape as desired, plus outputs.
    pub attributes: Attrs,
}

/// One resource whose live state a refresh wants.
#[derive(Debug, Clone)]
pub struct ReadRequest {
    pub address: Address,
    /// The id recorded in state, if any.
    pub id: Option<String>,
    /// The desired attributes that are already known (parents' ids resolved), if the resource is
    /// in the spec. Lets sub-resources without tags (routes, associations) be found.
    pub desired: Option<Attrs>,
}

/// A failure of a kind's operation.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct KindError {
    pub message: String,
    /// The cloud's error code, if any (e.g. `DependencyViolation`).
    pub code: Option<String>,
    /// Worth trying again after a pause (eventual consistency, throttling, dependency still
    /// draining).
    pub retryable: bool,
}

impl KindError {
    /// A permanent error.
    pub fn new(message: impl Into<String>) -> Self {
        KindError {
            message: message.into(),
            code: None,
            retryable: false,
        }
    }

    /// An error that may pass if tried again.
    pub fn retryable(message: impl Into<String>) -> Self {
        KindError {
            message: message.into(),
            code: None,
            retryable: true,
        }
    }
}

/// What a kind's operation gets from the engine: who it works for, a place to report progress,
/// and a per-run memo so several kinds can share one batched read.
#[derive(Clone)]
pub struct Context {
    spec_name: String,
    address: Option<Address>,
    observer: Arc<dyn Observer>,
    memo: Arc<Mutex<HashMap<String, Arc<dyn Any + Send + Sync>>>>,
    memo_locks: Arc<tokio::sync::Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>>,
}

impl Context {
    /// A context for the spec `spec_name`, reporting to `observer`.
    pub fn new(spec_name: &str, observer: Arc<dyn Observer>) -> Self {
        Context {
            spec_name: spec_name.to_string(),
            address: None,
            observer,
            memo: Default::default(),
            memo_locks: Default::default(),
        }
    }

    /// The spec name (value of the `engine:spec` ownership tag).
    pub fn spec_name(&self) -> &str {
        &self.spec_name
    }

    /// The same context for an operation on `address`.
    pub fn for_resource(&self, address: &Address) -> Context {
        let mut c = self.clone();
        c.address = Some(address.clone());
        c
    }

    /// Reports a wait on a long operation.
    pub fn waiting(&self, message: impl Into<String>) {
        if let Some(address) = &self.address {
            self.observer.event(Event::Waiting {
                address: address.clone(),
                message: message.into(),
            });
        }
    }

    /// Runs `load` once per `key` for the life of this context and shares its result: the way
    /// several kinds read one batched `Describe*` response.
    pub async fn memo<T, F, Fut>(&self, key: &str, load: F) -> Result<Arc<T>, KindError>
    where
        T: Send + Sync + 'static,
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<T, KindError>>,
    {
        let key_lock = {
            let mut locks = self.memo_locks.lock().await;
            locks.entry(key.to_string()).or_default().clone()
        };
        let _guard = key_lock.lock().await;
        if let Some(hit) = self.memo_get::<T>(key) {
            return Ok(hit);
        }
        let value = Arc::new(load().await?);
        self.memo
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key.to_string(), value.clone());
        Ok(value)
    }

    fn memo_get<T: Send + Sync + 'static>(&self, key: &str) -> Option<Arc<T>> {
        let memo = self.memo.lock().unwrap_or_else(|p| p.into_inner());
        memo.get(key).cloned().and_then(|v| v.downcast::<T>().ok())
    }

    /// Forgets memoised reads (after writes, the next read must see them).
    pub fn forget(&self, key_prefix: &str) {
        self.memo
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|k, _| !k.starts_with(key_prefix));
    }
}

/// A kind of cloud resource: how to read, create, update and delete it.
///
/// `read` is batched: it receives every resource of this kind that a refresh wants at once and
/// should answer with as few calls as possible (one filtered `Describe*`), finding resources by
/// id when known and otherwise by the engine's ownership tags, so a resource created by a run that
/// died before writing state is adopted instead of created twice.
#[async_trait]
pub trait Kind: Send + Sync {
    /// The kind's name, e.g. `aws_subnet`.
    fn name(&self) -> &'static str;

    /// The fields the planner diffs and how each is changed.
    fn fields(&self) -> &'static [Field];

    /// Reads the live state of `requests`; the answer is aligned with them (`None`: not found).
    async fn read(
        &self,
        ctx: &Context,
        requests: &[ReadRequest],
    ) -> Result<Vec<Option<Live>>, KindError>;

    /// Creates the resource and returns it as read back.
    async fn create(
        &self,
        ctx: &Context,
        address: &Address,
        desired: &Attrs,
    ) -> Result<Live, KindError>;

    /// Changes the in-place fields that differ and returns the resource as read back.
    async fn update(
        &self,
        ctx: &Context,
        address: &Address,
        current: &Live,
        desired: &Attrs,
    ) -> Result<Live, KindError>;

    /// Deletes the resource, waiting until the cloud lets its dependencies go.
    async fn delete(
        &self,
        ctx: &Context,
        address: &Address,
        current: &Live,
    ) -> Result<(), KindError>;
}
