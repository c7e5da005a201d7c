//! The executor: runs a plan's steps in dependency order, concurrently, journaling each one.
//!
//! A replace becomes two steps (delete, then create). Creates and updates wait for the creates
//! and updates of what they depend on; deletes wait for the deletes of what depends on them. A
//! failed step skips its dependents; independent branches go on.

use crate::diff::{attribute_of, resolve};
use crate::graph::ResourceGraph;
use crate::{
    Action, Address, ApiCalls, Attrs, Context, Event, Interrupt, Kind, KindError, Live, Observer,
    Plan, ReadRequest, ResourceChange, RetryPolicy,
};
use engine_state::{Journal, ResourceState};
use serde::Serialize;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tracing::Instrument;

/// How one step ended.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "outcome", content = "reason", rename_all = "kebab-case")]
pub enum StepOutcome {
    Done,
    Failed(String),
    /// Not run because something it needed failed.
    Skipped(String),
}

/// One executed (or skipped) step.
#[derive(Debug, Clone, Serialize)]
pub struct StepResult {
    pub address: Address,
    /// `create`, `update` or `delete` (a replace is a delete and a create).
    pub action: Action,
    #[serde(flatten)]
    pub outcome: StepOutcome,
    /// The cloud's error code of a failed step, when it gave one (e.g. `DependencyViolation`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    pub id: Option<String>,
    #[serde(serialize_with = "secs")]
    pub elapsed: Duration,
}

fn secs<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

/// The result of an apply or destroy.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ApplyReport {
    pub steps: Vec<StepResult>,
    pub api_calls: ApiCalls,
    #[serde(serialize_with = "secs")]
    pub elapsed: Duration,
}

impl ApplyReport {
    /// Every step succeeded.
    pub fn is_success(&self) -> bool {
        self.steps.iter().all(|s| s.outcome == StepOutcome::Done)
    }

    /// Steps that failed.
    pub fn failures(&self) -> impl Iterator<Item = &StepResult> {
        self.steps.iter().filter(|s| matches!(s.outcome, StepOutcome::Failed(_)))
    }

    /// Number of successful steps of `action`.
    pub fn count(&self, action: Action) -> usize {
        self.steps.iter().filter(|s| s.action == action && s.outcome == StepOutcome::Done).count()
    }
}

/// Execution settings.
pub(crate) struct ExecSettings {
    pub parallelism: usize,
    /// How steps of kinds without a policy of their own are retried.
    pub retry: RetryPolicy,
    /// Once interrupted, steps not started are skipped.
    pub interrupt: Interrupt,
    /// How errors of dependents still letting go are retried.
    pub drain: RetryPolicy,
    /// What steps wait for outside this plan (another spec's run), if anything.
    pub gate: Option<Arc<dyn crate::workspace::Gate>>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum StepKind {
    Create,
    Update,
    Delete,
    Adopt,
    /// Removed from state only (a retained resource on destroy).
    Forget,
}

struct Step {
    change: usize,
    kind: StepKind,
}

struct Shared {
    ctx: Context,
    kinds: HashMap<String, Arc<dyn Kind>>,
    graph: ResourceGraph,
    journal: Journal,
    observer: Arc<dyn Observer>,
    /// Current attributes (with `id`) of every resource, updated as steps complete.
    outputs: Mutex<HashMap<Address, Live>>,
    settings: ExecSettings,
}

/// Runs `plan`; each completed step is recorded in `journal` at once.
pub(crate) async fn execute(
    plan: &Plan,
    ctx: Context,
    kinds: HashMap<String, Arc<dyn Kind>>,
    graph: ResourceGraph,
    journal: Journal,
    observer: Arc<dyn Observer>,
    settings: ExecSettings,
) -> Vec<StepResult> {
    let (steps, waits_on) = build_steps(plan);
    let parallelism = settings.parallelism.max(1);
    let shared = Arc::new(Shared {
        ctx,
        kinds,
        graph,
        journal,
        observer,
        outputs: Mutex::new(plan.prior.clone()),
        settings,
    });
    let changes: Arc<Vec<ResourceChange>> = Arc::new(plan.changes.clone());

    let mut dependents: Vec<Vec<usize>> = vec![Vec::new(); steps.len()];
    let mut pending: Vec<usize> = vec![0; steps.len()];
    for (step, deps) in waits_on.iter().enumerate() {
        pending[step] = deps.len();
        for &d in deps {
            dependents[d].push(step);
        }
    }
    let semaphore = Arc::new(Semaphore::new(parallelism));
    let mut results: Vec<Option<StepResult>> = (0..steps.len()).map(|_| None).collect();
    let mut running = JoinSet::new();
    let mut tasks: HashMap<tokio::task::Id, usize> = HashMap::new();
    let mut ready: Vec<usize> = (0..steps.len()).filter(|s| pending[*s] == 0).collect();
    let steps = Arc::new(steps);

    loop {
        for step in ready.drain(..) {
            let shared = shared.clone();
            let changes = changes.clone();
            let steps = steps.clone();
            let semaphore = semaphore.clone();
            let task = running.spawn(async move {
                let s = &steps[step];
                if let Some(gate) = &shared.settings.gate
                    && let Err(why) = gate.open(&changes[s.change].address).await
                {
                    return not_started(&changes[s.change], s.kind, &why);
                }
                let _permit = semaphore.acquire_owned().await;
                if shared.settings.interrupt.is_interrupted() {
                    return not_started(&changes[s.change], s.kind, "the run was interrupted");
                }
                if let Err(lost) = shared.journal.still_held() {
                    return not_started(&changes[s.change], s.kind, &lost.to_string());
                }
                run_step(&shared, &changes[s.change], s.kind).await
            });
            tasks.insert(task.id(), step);
        }
        let Some(joined) = running.join_next_with_id().await else {
            break;
        };
        let (step, result) = match joined {
            Ok((id, result)) => (tasks[&id], result),
            // A kind that panics fails its step; the run goes on.
            Err(e) => {
                let step = tasks[&e.id()];
                let change = &changes[steps[step].change];
                let message = format!("{} panicked: {}", change.address, panic_text(e));
                tracing::error!(address = %change.address, error = %message, "failed");
                shared.observer.event(Event::StepFailed {
                    address: change.address.clone(),
                    error: message.clone(),
                });
                let result = StepResult {
                    address: change.address.clone(),
                    action: step_action(steps[step].kind),
                    outcome: StepOutcome::Failed(message),
                    code: None,
                    id: change.id.clone(),
                    elapsed: Duration::ZERO,
                };
                (step, result)
            }
        };
        let ok = result.outcome == StepOutcome::Done;
        let address = result.address.clone();
        results[step] = Some(result);
        for &d in &dependents[step] {
            if ok {
                pending[d] -= 1;
                if pending[d] == 0 && results[d].is_none() {
                    ready.push(d);
                }
            } else {
                skip_downstream(d, &steps, &changes, &dependents, &mut results, &address);
            }
        }
    }
    results.into_iter().flatten().collect()
}

/// A step skipped because the run was interrupted (or lost its state lock) before it started.
fn not_started(change: &ResourceChange, kind: StepKind, why: &str) -> StepResult {
    StepResult {
        address: change.address.clone(),
        action: step_action(kind),
        outcome: StepOutcome::Skipped(format!("not started: {why}")),
        code: None,
        id: change.id.clone(),
        elapsed: Duration::ZERO,
    }
}

/// What a panicking step said, for its failure message.
fn panic_text(e: tokio::task::JoinError) -> String {
    match e.try_into_panic() {
        Ok(payload) => payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic without a message".into()),
        Err(e) => e.to_string(),
    }
}

fn skip_downstream(
    start: usize,
    steps: &[Step],
    changes: &[ResourceChange],
    dependents: &[Vec<usize>],
    results: &mut [Option<StepResult>],
    cause: &Address,
) {
    let mut stack = vec![start];
    while let Some(s) = stack.pop() {
        if results[s].is_some() {
            continue;
        }
        let change = &changes[steps[s].change];
        results[s] = Some(StepResult {
            address: change.address.clone(),
            action: step_action(steps[s].kind),
            outcome: StepOutcome::Skipped(format!("{cause} failed")),
            code: None,
            id: change.id.clone(),
            elapsed: Duration::ZERO,
        });
        stack.extend(dependents[s].iter().copied());
    }
}

fn step_action(kind: StepKind) -> Action {
    match kind {
        StepKind::Create => Action::Create,
        StepKind::Update => Action::Update,
        StepKind::Delete => Action::Delete,
        StepKind::Adopt => Action::Adopt,
        StepKind::Forget => Action::Forget,
    }
}

/// The steps of a plan and, for each, the steps it waits for.
fn build_steps(plan: &Plan) -> (Vec<Step>, Vec<Vec<usize>>) {
    let mut steps = Vec::new();
    let mut create_or_update: HashMap<&Address, usize> = HashMap::new();
    let mut delete: HashMap<&Address, usize> = HashMap::new();
    for (i, c) in plan.changes.iter().enumerate() {
        let mut add = |kind| {
            steps.push(Step { change: i, kind });
            steps.len() - 1
        };
        match c.action {
            Action::Create => {
                create_or_update.insert(&c.address, add(StepKind::Create));
            }
            Action::Update => {
                create_or_update.insert(&c.address, add(StepKind::Update));
            }
            Action::Delete => {
                delete.insert(&c.address, add(StepKind::Delete));
            }
            Action::Replace => {
                delete.insert(&c.address, add(StepKind::Delete));
                create_or_update.insert(&c.address, add(StepKind::Create));
            }
            Action::Adopt => {
                add(StepKind::Adopt);
            }
            // Ordered as a delete: what it depends on goes after it.
            Action::Forget => {
                delete.insert(&c.address, add(StepKind::Forget));
            }
            Action::NoOp => {}
        }
    }
    let mut waits: Vec<Vec<usize>> = vec![Vec::new(); steps.len()];
    for (s, step) in steps.iter().enumerate() {
        let c = &plan.changes[step.change];
        match step.kind {
            StepKind::Create | StepKind::Update => {
                for d in &c.dependencies {
                    if let Some(&x) = create_or_update.get(d) {
                        waits[s].push(x);
                    }
                }
                if c.action == Action::Replace {
                    waits[s].push(delete[&c.address]);
                }
            }
            StepKind::Adopt => {}
            StepKind::Delete | StepKind::Forget => {
                // The delete of a dependency waits for this delete.
                for d in &c.dependencies {
                    if let Some(&x) = delete.get(d) {
                        waits[x].push(s);
                    }
                }
            }
        }
    }
    (steps, waits)
}

async fn run_step(shared: &Shared, change: &ResourceChange, kind: StepKind) -> StepResult {
    let action = step_action(kind);
    let span = tracing::info_span!("step", address = %change.address, kind = %change.kind, action = ?action);
    run_step_traced(shared, change, kind, action).instrument(span).await
}

async fn run_step_traced(
    shared: &Shared,
    change: &ResourceChange,
    kind: StepKind,
    action: Action,
) -> StepResult {
    let started = Instant::now();
    shared.observer.event(Event::StepStarted { address: change.address.clone(), action });
    let outcome = run_step_inner(shared, change, kind).await;
    let elapsed = started.elapsed();
    match outcome {
        Ok(id) => {
            tracing::info!(id = id.as_deref().unwrap_or(""), elapsed = ?elapsed, "done");
            shared.observer.event(Event::StepFinished {
                address: change.address.clone(),
                action,
                elapsed,
                id: id.clone(),
            });
            StepResult {
                address: change.address.clone(),
                action,
                outcome: StepOutcome::Done,
                code: None,
                id,
                elapsed,
            }
        }
        Err(error) => {
            tracing::error!(error = %error.message, code = error.code.as_deref().unwrap_or(""), "failed");
            shared.observer.event(Event::StepFailed {
                address: change.address.clone(),
                error: error.message.clone(),
            });
            StepResult {
                address: change.address.clone(),
                action,
                outcome: StepOutcome::Failed(error.message),
                code: error.code,
                id: change.id.clone(),
                elapsed,
            }
        }
    }
}

async fn run_step_inner(
    shared: &Shared,
    change: &ResourceChange,
    kind: StepKind,
) -> Result<Option<String>, KindError> {
    let kind_impl = shared
        .kinds
        .get(&change.kind)
        .cloned()
        .ok_or_else(|| KindError::new(format!("no provider handles kind `{}`", change.kind)))?;
    let ctx = shared.ctx.for_resource(&change.address);
    let current =
        shared.outputs.lock().unwrap_or_else(|p| p.into_inner()).get(&change.address).cloned();
    match kind {
        StepKind::Adopt => {
            let live = current
                .ok_or_else(|| KindError::new(format!("{} is no longer found", change.address)))?;
            record(shared, change, kind_impl.as_ref(), &live)?;
            if let Some(gate) = &shared.settings.gate {
                gate.made(&change.address, &live);
            }
            Ok(Some(live.id))
        }
        StepKind::Forget => {
            // Left in place: only the state lets go of it.
            shared.outputs.lock().unwrap_or_else(|p| p.into_inner()).remove(&change.address);
            shared.journal.record(change.address.as_str(), None).map_err(journal_error)?;
            Ok(None)
        }
        StepKind::Delete => {
            if let Some(current) = current {
                retry(shared, change, kind_impl.as_ref(), || {
                    kind_impl.delete(&ctx, &change.address, &current)
                })
                .await?;
            }
            shared.outputs.lock().unwrap_or_else(|p| p.into_inner()).remove(&change.address);
            shared.journal.record(change.address.as_str(), None).map_err(journal_error)?;
            Ok(None)
        }
        StepKind::Create | StepKind::Update => {
            let desired = resolve_now(shared, change)?;
            let live = match (kind, &current) {
                (StepKind::Update, Some(current)) => {
                    retry(shared, change, kind_impl.as_ref(), || {
                        kind_impl.update(&ctx, &change.address, current, &desired)
                    })
                    .await?
                }
                _ => create(shared, change, kind_impl.as_ref(), &ctx, &desired).await?,
            };
            let id = live.id.clone();
            record(shared, change, kind_impl.as_ref(), &live)?;
            if let Some(gate) = &shared.settings.gate {
                gate.made(&change.address, &live);
            }
            shared
                .outputs
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(change.address.clone(), live);
            Ok(Some(id))
        }
    }
}

/// A create, journaled as begun before its first call and retried by the kind's policy. Until
/// the resource is recorded the mark stays in state, so what a create made before it could tag
/// the resource (the run died, the answer was lost) is found by name and taken over
/// ([`crate::ownership::untagged_but_begun`]). A create whose every try was answered, none
/// having made anything, drops the mark.
async fn create(
    shared: &Shared,
    change: &ResourceChange,
    kind: &dyn Kind,
    ctx: &Context,
    desired: &Attrs,
) -> Result<Live, KindError> {
    let address = change.address.as_str();
    let began_before = shared.journal.begin_create(address, &change.kind).map_err(journal_error)?;
    let began = AtomicBool::new(began_before);
    let result =
        retry(shared, change, kind, || create_once(kind, ctx, &change.address, desired, &began))
            .await;
    if result.is_err() && !began.load(Ordering::SeqCst) {
        shared.journal.abandon_create(address).map_err(journal_error)?;
    }
    result
}

/// One try of a create. When the answer was lost (the call may have made the resource), or the
/// cloud says the resource exists (a create of a run that died may have landed since), the
/// resource is looked for by its ownership tags, or by name without tags when a create of it
/// began (`began`: in an earlier run, or an earlier try whose outcome is unknown): found, it is
/// brought to the spec and is the create's result, so a lost answer never makes a duplicate nor
/// a failed run.
async fn create_once(
    kind: &dyn Kind,
    ctx: &Context,
    address: &Address,
    desired: &Attrs,
    began: &AtomicBool,
) -> Result<Live, KindError> {
    let error = match kind.create(ctx, address, desired).await {
        Err(e) if e.outcome_unknown || e.already_exists => e,
        other => return other,
    };
    if error.outcome_unknown {
        began.store(true, Ordering::SeqCst);
    }
    let request = ReadRequest {
        address: address.clone(),
        id: None,
        desired: Some(desired.clone()),
        unknown: vec![],
        create_began: began.load(Ordering::SeqCst),
    };
    let found = match kind.read(ctx, std::slice::from_ref(&request)).await {
        Ok(mut found) => found.pop().flatten(),
        Err(_) => None,
    };
    let Some(live) = found else {
        // Someone else's: trying again would only say the same.
        return Err(if error.already_exists { error.permanent() } else { error });
    };
    tracing::info!(%address, id = %live.id, "found what an earlier create made");
    let fields = kind.fields();
    if crate::kind::changed_fields(fields, &live.attributes, desired).next().is_some() {
        kind.update(ctx, address, &live, desired).await
    } else {
        Ok(live)
    }
}

/// Journals the resource as it now is, sensitive fields as their digest.
fn record(
    shared: &Shared,
    change: &ResourceChange,
    kind: &dyn Kind,
    live: &Live,
) -> Result<(), KindError> {
    let mut attributes = live.attributes.clone();
    for f in kind.fields().iter().filter(|f| f.sensitive) {
        if let Some(v) = attributes.get_mut(f.name) {
            *v = f.shown(v);
        }
    }
    shared
        .journal
        .record(
            change.address.as_str(),
            Some(ResourceState {
                kind: change.kind.clone(),
                id: live.id.clone(),
                attributes,
                dependencies: change.dependencies.iter().map(|d| d.to_string()).collect(),
                protected: change.protected,
                retained: change.retained,
            }),
        )
        .map_err(journal_error)
}

fn journal_error(e: engine_state::StateError) -> KindError {
    KindError::new(format!("writing state: {e}")).with_source(e)
}

/// The desired attributes with every reference resolved against current outputs.
fn resolve_now(shared: &Shared, change: &ResourceChange) -> Result<Attrs, KindError> {
    let spec = shared
        .graph
        .get(&change.address)
        .ok_or_else(|| KindError::new(format!("{} is not in the spec", change.address)))?;
    let outputs = shared.outputs.lock().unwrap_or_else(|p| p.into_inner());
    let missing = std::cell::RefCell::new(Vec::new());
    let resolved = resolve(spec, shared.ctx.lineage(), &|r| {
        let v = match &r.spec {
            // Another spec's value, which the gate waited for.
            Some(_) => shared.settings.gate.as_ref().and_then(|g| g.value(r)),
            None => outputs.get(&r.address).and_then(|l| attribute_of(l, &r.attribute)),
        };
        if v.is_none() {
            missing.borrow_mut().push(r.to_string());
        }
        v
    });
    let missing = missing.into_inner();
    drop(outputs);
    if !missing.is_empty() {
        return Err(KindError::new(format!("unresolved references: {}", missing.join(", "))));
    }
    Ok(resolved.into_iter().filter_map(|(k, v)| v.map(|v| (k, v))).collect())
}

/// Runs `op` under the kind's retry policy (else the engine's), reporting each retry.
async fn retry<T, F, Fut>(
    shared: &Shared,
    change: &ResourceChange,
    kind: &dyn Kind,
    op: F,
) -> Result<T, KindError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, KindError>>,
{
    let policy = kind.retry_policy().unwrap_or(shared.settings.retry);
    let drain = shared.settings.drain;
    let policy_for = |e: &KindError| if e.draining { drain } else { policy };
    crate::retry::run_with(op, policy_for, |attempt, e| {
        tracing::warn!(attempt, error = %e, "retrying");
        shared.observer.event(Event::Retrying {
            address: change.address.clone(),
            attempt,
            error: e.message.clone(),
        });
    })
    .await
}
