//! What a kind's operation gets from the engine: who it works for, a place to report progress,
//! and a per-run memo so several kinds can share one batched read.

use crate::{Address, Event, KindError, Observer};
use std::any::Any;
use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::sync::{Arc, Mutex};

/// What a kind's operation gets from the engine: who it works for, a place to report progress,
/// and a per-run memo so several kinds can share one batched read.
#[derive(Clone)]
pub struct Context {
    spec_name: String,
    lineage: String,
    address: Option<Address>,
    observer: Arc<dyn Observer>,
    memo: Arc<Memo>,
    /// Reads shared with the other specs of the run, when this is a refresh of one of several.
    run: Option<Arc<RunReads>>,
    /// The (kind, id) of every resource the state records.
    recorded: Arc<HashSet<(String, String)>>,
}

/// Loaded values by key, each loaded once.
#[derive(Default)]
pub(crate) struct Memo {
    values: Mutex<HashMap<String, Arc<dyn Any + Send + Sync>>>,
    locks: tokio::sync::Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

impl Memo {
    async fn get_or_load<T, F, Fut>(&self, key: &str, load: F) -> Result<Arc<T>, KindError>
    where
        T: Send + Sync + 'static,
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<T, KindError>>,
    {
        let key_lock = {
            let mut locks = self.locks.lock().await;
            locks.entry(key.to_string()).or_default().clone()
        };
        let _guard = key_lock.lock().await;
        if let Some(hit) = self.get::<T>(key) {
            return Ok(hit);
        }
        let value = Arc::new(load().await?);
        self.values
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key.to_string(), value.clone());
        Ok(value)
    }

    fn get<T: Send + Sync + 'static>(&self, key: &str) -> Option<Arc<T>> {
        let values = self.values.lock().unwrap_or_else(|p| p.into_inner());
        values.get(key).cloned().and_then(|v| v.downcast::<T>().ok())
    }
}

/// The refreshes of several specs of one run (a [`crate::Workspace`]'s plan or drift check):
/// the specs' names, and the batched reads they share, so a kind reads once for all of them
/// what each would read for itself (one `Describe*` filtered by every spec's ownership tag).
#[derive(Default)]
pub struct RunReads {
    specs: Vec<String>,
    memo: Memo,
}

impl RunReads {
    /// The reads of one refresh of `specs`.
    pub fn new(specs: Vec<String>) -> RunReads {
        RunReads { specs, memo: Memo::default() }
    }
}

impl Context {
    /// A context for the spec `spec_name`, reporting to `observer`.
    pub fn new(spec_name: &str, observer: Arc<dyn Observer>) -> Self {
        Context {
            spec_name: spec_name.to_string(),
            lineage: String::new(),
            address: None,
            observer,
            memo: Default::default(),
            run: None,
            recorded: Default::default(),
        }
    }

    /// The same context sharing `run`'s reads with the other specs of the run.
    pub fn with_run(mut self, run: Arc<RunReads>) -> Context {
        self.run = Some(run);
        self
    }

    /// The specs whose resources a run-wide read covers: this one, and the others of the run
    /// when their refreshes share reads ([`Context::run_memo`]).
    pub fn run_specs(&self) -> Vec<String> {
        match &self.run {
            Some(run) if run.specs.iter().any(|s| s == &self.spec_name) => run.specs.clone(),
            _ => vec![self.spec_name.clone()],
        }
    }

    /// Like [`Context::memo`], but once for every spec of the run when the run shares its
    /// reads: `load` must then read what [`Context::run_specs`] own, and each caller keeps its
    /// own spec's part.
    pub async fn run_memo<T, F, Fut>(&self, key: &str, load: F) -> Result<Arc<T>, KindError>
    where
        T: Send + Sync + 'static,
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<T, KindError>>,
    {
        match &self.run {
            Some(run) if run.specs.iter().any(|s| s == &self.spec_name) => {
                run.memo.get_or_load(key, load).await
            }
            _ => self.memo(key, load).await,
        }
    }

    /// The same context knowing what the state records: `(kind, id)` of each resource.
    pub fn with_recorded(
        mut self,
        recorded: impl IntoIterator<Item = (String, String)>,
    ) -> Context {
        self.recorded = Arc::new(recorded.into_iter().collect());
        self
    }

    /// Whether the state records a resource of `kind` with cloud id `id` (one the engine took
    /// over is its own before it carries the engine's tags).
    pub fn is_recorded(&self, kind: &str, id: &str) -> bool {
        self.recorded.contains(&(kind.to_string(), id.to_string()))
    }

    /// The spec name (value of the `engine:spec` ownership tag).
    pub fn spec_name(&self) -> &str {
        &self.spec_name
    }

    /// The same context for the state of lineage `lineage` (see [`crate::TAG_LINEAGE`]).
    pub fn with_lineage(mut self, lineage: &str) -> Context {
        self.lineage = lineage.to_string();
        self
    }

    /// The lineage of the state this run works on (value of the `engine:lineage` tag).
    pub fn lineage(&self) -> &str {
        &self.lineage
    }

    /// The resource this context works on, if it is for one.
    pub fn address(&self) -> Option<&Address> {
        self.address.as_ref()
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
            self.observer
                .event(Event::Waiting { address: address.clone(), message: message.into() });
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
        self.memo.get_or_load(key, load).await
    }

    /// Forgets memoised reads (after writes, the next read must see them).
    pub fn forget(&self, key_prefix: &str) {
        self.memo
            .values
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|k, _| !k.starts_with(key_prefix));
    }
}
