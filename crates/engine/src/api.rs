//! `Engine`: the library's entry point. Plan, apply, drift and destroy one spec.

use crate::apply::{ExecSettings, execute};
use crate::diff::{delete_change, order_deletes, plan_changes};
use crate::graph::ResourceGraph;
use crate::selection::{GATED_SECTIONS, SHARED_LANE};
use crate::spec::{FieldPath, SpecErrors, SpecSource};
use crate::{
    Action, Address, ApiCalls, ApplyReport, Context, DriftAgainst, DriftReport, EngineError, Event,
    Interrupt, Kind, Lane, Live, NullObserver, Observer, Plan, PlanMode, Provider, ResourceChange,
    RetryPolicy, Selection, drift, refresh,
};
use engine_state::{Backend, HeldLock, Journal, LocalBackend, StateDocument};
use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Builds an [`Engine`].
pub struct EngineBuilder {
    spec_path: Option<PathBuf>,
    spec: Option<SpecSource>,
    providers: Vec<Arc<dyn Provider>>,
    state: Option<Arc<dyn Backend>>,
    selection: Selection,
    targets: Vec<String>,
    excludes: Vec<String>,
    parallelism: usize,
    observer: Arc<dyn Observer>,
    confirm_protected: bool,
    delete_retained: bool,
    retry: RetryPolicy,
    drain: RetryPolicy,
    interrupt: Interrupt,
}

/// Default number of concurrent steps: matches OpenTofu's default and stays well under EC2's
/// mutating-call token bucket.
pub const DEFAULT_PARALLELISM: usize = 10;

impl EngineBuilder {
    /// Reads the spec from a file.
    pub fn spec_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.spec_path = Some(path.into());
        self
    }

    /// Uses a spec already read (with its overlay, if any: [`SpecSource::with_overlay`]).
    pub fn spec(mut self, source: SpecSource) -> Self {
        self.spec = Some(source);
        self
    }

    /// Uses spec text directly; `file` names it in errors, `name` is the spec name.
    pub fn spec_str(mut self, file: &str, name: &str, text: &str) -> Self {
        self.spec = Some(SpecSource::from_text(file, name, text));
        self
    }

    /// Registers a provider (e.g. AWS).
    pub fn provider(mut self, provider: Arc<dyn Provider>) -> Self {
        self.providers.push(provider);
        self
    }

    /// Where state is kept. Default: `.engine/<spec-name>.state.json` beside the spec file.
    pub fn state(self, backend: impl Backend + 'static) -> Self {
        self.shared_state(Arc::new(backend))
    }

    /// Where state is kept, a backend shared with its caller (e.g. one the lane made from the
    /// spec's `[state]`).
    pub fn shared_state(mut self, backend: Arc<dyn Backend>) -> Self {
        self.state = Some(backend);
        self
    }

    /// Which lanes and feature gates run.
    pub fn selection(mut self, selection: Selection) -> Self {
        self.selection = selection;
        self
    }

    /// Restricts runs to resources under `prefix` and what they depend on (repeatable).
    pub fn target(mut self, prefix: impl Into<String>) -> Self {
        self.targets.push(prefix.into());
        self
    }

    /// Leaves out resources under `prefix` and their dependents (repeatable).
    pub fn exclude(mut self, prefix: impl Into<String>) -> Self {
        self.excludes.push(prefix.into());
        self
    }

    /// How many steps run at once.
    pub fn parallelism(mut self, n: usize) -> Self {
        self.parallelism = n.max(1);
        self
    }

    /// Receives progress events.
    pub fn observer(mut self, observer: Arc<dyn Observer>) -> Self {
        self.observer = observer;
        self
    }

    /// Lets destroy delete protected resources.
    pub fn confirm_protected(mut self, yes: bool) -> Self {
        self.confirm_protected = yes;
        self
    }

    /// Lets destroy delete retained resources (which it otherwise only forgets).
    pub fn delete_retained(mut self, yes: bool) -> Self {
        self.delete_retained = yes;
        self
    }

    /// First pause before retrying a retryable step error (doubles each time).
    pub fn retry_backoff(mut self, first: Duration) -> Self {
        self.retry.first_delay = first;
        self
    }

    /// How errors of dependents still letting go (`KindError::draining`) are retried (default
    /// [`RetryPolicy::DRAIN`], minutes).
    pub fn drain_policy(mut self, policy: RetryPolicy) -> Self {
        self.drain = policy;
        self
    }

    /// The handle that stops this engine's runs (in-flight steps finish and are recorded).
    pub fn interrupt(mut self, interrupt: Interrupt) -> Self {
        self.interrupt = interrupt;
        self
    }

    /// How steps of kinds without a policy of their own are retried.
    pub fn retry_policy(mut self, policy: RetryPolicy) -> Self {
        self.retry = policy;
        self
    }

    /// Reads and validates the spec and expands it into the resource graph. Makes no API call.
    pub fn build(self) -> Result<Engine, EngineError> {
        let spec = match (self.spec, &self.spec_path) {
            (Some(spec), _) => spec,
            (None, Some(path)) => SpecSource::from_file(path).map_err(|source| {
                EngineError::SpecFile { path: path.display().to_string(), source }
            })?,
            (None, None) => return Err(EngineError::Builder("no spec given".into())),
        };
        let mut sections: Vec<&str> = Vec::new();
        for p in &self.providers {
            sections.extend(p.sections());
        }
        sections.extend(GATED_SECTIONS.iter().map(|(section, _)| *section));
        sections.sort();
        sections.dedup();
        spec.check_sections(&sections)?;
        let globals = spec.globals()?;
        spec.state_location(None)?;
        spec.state_encryption()?;
        let lane = Lane::parse(&globals.cloud).ok_or_else(|| {
            spec.errors(vec![spec.error(
                &crate::spec::FieldPath::root("globals").key("cloud"),
                format!("unknown cloud `{}` (expected aws or gcp)", globals.cloud),
            )])
        })?;
        // Every provider of the lane expands its sections (several may share a lane: the cloud's
        // own resources and what goes inside its clusters).
        let lane_providers: Vec<Arc<dyn Provider>> =
            self.providers.iter().filter(|p| p.lane() == lane.name()).cloned().collect();
        if lane_providers.is_empty() {
            return Err(EngineError::Builder(format!(
                "no provider for the `{}` lane",
                lane.name()
            )));
        }
        let lane_sections: Vec<&str> =
            lane_providers.iter().flat_map(|p| p.sections().iter().copied()).collect();
        let mut errors = SpecErrors { file: spec.file().to_string(), errors: vec![] };
        for other in &self.providers {
            if other.lane() != lane.name() {
                // Sections of another lane's provider have no business in this spec.
                for s in other.sections() {
                    if !lane_sections.contains(s) && spec.has_section(s) {
                        errors.errors.push(spec.error(
                            &crate::spec::FieldPath::root(s),
                            format!("section `{s}` belongs to the {} lane", other.lane()),
                        ));
                    }
                }
            }
        }
        errors.into_result()?;
        // Gated sections: left out (one `[skip]` line each) unless their gate is on; a provider
        // that owns one expands it only when `Engine::feature` says so.
        let notes =
            self.selection.gated_notes(&|s| spec.has_section(s), &|s| lane_sections.contains(&s));
        let mut resources = Vec::new();
        let mut expand_errors: Option<SpecErrors> = None;
        for p in &lane_providers {
            match p.expand(&spec) {
                Ok(r) => resources.extend(r),
                Err(e) => match &mut expand_errors {
                    Some(all) => all.extend(e),
                    None => expand_errors = Some(e),
                },
            }
        }
        if let Some(e) = expand_errors {
            return Err(e.into());
        }
        let gated_off = self.selection.gated_off_stages(lane.name());
        resources.retain(|r| !gated_off.iter().any(|stage| r.address.matches_prefix(stage)));
        crate::ownership::unwatch_shared(&spec, &globals, &mut resources)?;
        let graph = ResourceGraph::build(resources).map_err(|errors| {
            let located =
                errors.into_iter().map(|(address, m)| spec.error(&section_of(&address), m));
            spec.errors(located.collect())
        })?;
        let mut kinds: HashMap<String, Arc<dyn Kind>> = HashMap::new();
        for p in &self.providers {
            for k in p.kinds() {
                kinds.insert(k.name().to_string(), k);
            }
        }
        for r in graph.resources() {
            let Some(kind) = kinds.get(&r.kind) else {
                return Err(EngineError::UnknownKind {
                    kind: r.kind.clone(),
                    address: r.address.clone(),
                });
            };
            // An attribute the kind does not declare is a mistake in an expansion, caught before
            // anything runs.
            if let Some(name) = r
                .attributes
                .keys()
                .find(|name| !kind.fields().iter().any(|f| f.name == name.as_str()))
            {
                return Err(EngineError::UnknownAttribute {
                    kind: r.kind.clone(),
                    address: r.address.clone(),
                    attribute: name.clone(),
                });
            }
        }
        let name = spec.name();
        let state = match self.state {
            Some(s) => s,
            None => Arc::new(LocalBackend::new(state_path_of(&spec))),
        };
        // Alone, a spec knows no other spec's values: what needs one is left out, until a
        // [`crate::Workspace`] of its run gives it what the other specs know.
        let cross = crate::cross_spec::CrossSpec::default();
        for r in graph.resources() {
            for reference in r.cross_references() {
                cross.leave_out(&name, &r.address, crate::cross_spec::not_in_run(reference));
            }
        }
        Ok(Engine {
            name,
            lane,
            serves_every_lane: globals.lane.as_deref() == Some(SHARED_LANE),
            api_group: format!("{}/{}", globals.cloud, globals.region),
            after: globals.after.clone(),
            spec,
            graph,
            providers: lane_providers,
            kinds,
            state,
            selection: self.selection,
            targets: self.targets,
            excludes: self.excludes,
            parallelism: self.parallelism,
            observer: self.observer,
            confirm_protected: self.confirm_protected,
            delete_retained: self.delete_retained,
            retry: self.retry,
            drain: self.drain,
            interrupt: self.interrupt,
            notes,
            gated_off,
            cross: Arc::new(cross),
        })
    }
}

/// The default state path of spec `name` whose file is in `dir`.
pub fn default_state_path(dir: &std::path::Path, name: &str) -> PathBuf {
    dir.join(".engine").join(format!("{name}.state.json"))
}

/// The default state path of `spec`: `.engine/<name>.state.json` beside the spec file, however
/// the spec was given.
pub fn state_path_of(spec: &SpecSource) -> PathBuf {
    default_state_path(&spec.directory(), &spec.name())
}

/// What a spec's change since an earlier version asks a run to cover.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChangedScope {
    /// Nothing changed that makes resources.
    Nothing,
    /// These stages' address prefixes (`aws.network`, `aws.eks`, ...).
    Stages(Vec<String>),
    /// Something spec-wide changed.
    Everything,
}

/// One spec, its providers and its state: plan, apply, drift, destroy.
pub struct Engine {
    name: String,
    lane: Lane,
    /// A `shared` spec: run whatever lanes are selected.
    serves_every_lane: bool,
    /// `cloud/region`: the specs of a run that read the same API share their batched reads.
    api_group: String,
    /// `[globals.after]`: spec name → this spec's address prefixes that wait for it.
    after: std::collections::BTreeMap<String, Vec<String>>,
    spec: SpecSource,
    graph: ResourceGraph,
    /// The providers of the spec's lane.
    providers: Vec<Arc<dyn Provider>>,
    kinds: HashMap<String, Arc<dyn Kind>>,
    state: Arc<dyn Backend>,
    selection: Selection,
    targets: Vec<String>,
    excludes: Vec<String>,
    parallelism: usize,
    observer: Arc<dyn Observer>,
    confirm_protected: bool,
    delete_retained: bool,
    retry: RetryPolicy,
    drain: RetryPolicy,
    interrupt: Interrupt,
    /// What the run leaves out or cannot do, one line each (gated sections).
    notes: Vec<String>,
    /// The stages of gated sections whose gate is off (`aws.llm_platform`): not expanded, and
    /// what state records of them is left as it is (not deleted) by plan, apply and drift. A
    /// destroy removes them with the rest.
    gated_off: Vec<String>,
    /// What this spec knows of the other specs of its run (references across specs); set by
    /// the [`crate::Workspace`].
    pub(crate) cross: Arc<crate::cross_spec::CrossSpec>,
}

/// The addresses recorded in `state` that `keep` keeps.
fn recorded_where(state: &StateDocument, keep: impl Fn(&Address) -> bool) -> BTreeSet<Address> {
    state.resources.keys().map(|a| Address::new(a.clone())).filter(|a| keep(a)).collect()
}

impl Engine {
    /// A builder with defaults: no providers, AWS lane selected, parallelism 10.
    pub fn builder() -> EngineBuilder {
        EngineBuilder {
            spec_path: None,
            spec: None,
            providers: Vec::new(),
            state: None,
            selection: Selection::default(),
            targets: Vec::new(),
            excludes: Vec::new(),
            parallelism: DEFAULT_PARALLELISM,
            observer: Arc::new(NullObserver),
            confirm_protected: false,
            delete_retained: false,
            retry: RetryPolicy::STEP,
            drain: RetryPolicy::DRAIN,
            interrupt: Interrupt::new(),
        }
    }

    /// The spec name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The spec.
    pub fn spec(&self) -> &SpecSource {
        &self.spec
    }

    /// The desired resource graph.
    pub fn graph(&self) -> &ResourceGraph {
        &self.graph
    }

    /// The state backend.
    pub fn state_backend(&self) -> &Arc<dyn Backend> {
        &self.state
    }

    /// The current state document (empty if never applied).
    pub fn state_document(&self) -> Result<StateDocument, EngineError> {
        Ok(self.state.load_or_new(&self.name)?)
    }

    /// What this run should cover when only `sections` of the spec changed (`--changed`): the
    /// stages those sections expand to, nothing when they expand to no resource and are gated
    /// off, or everything when one of them is spec-wide (`[globals]`, `[state]`, a provider's
    /// own settings).
    pub fn changed_scope(&self, sections: &BTreeSet<String>) -> ChangedScope {
        let mut prefixes = BTreeSet::new();
        for section in sections {
            let stage: BTreeSet<String> = self
                .graph
                .resources()
                .filter_map(|r| {
                    let mut parts = r.address.as_str().splitn(3, '.');
                    let (lane, stage) = (parts.next()?, parts.next()?);
                    let stage_name = stage.split('[').next()?;
                    (stage_name == section).then(|| format!("{lane}.{stage_name}"))
                })
                .collect();
            let gated = GATED_SECTIONS.iter().any(|(s, _)| s == section);
            match (stage.is_empty(), gated) {
                (false, _) => prefixes.extend(stage),
                (true, true) => {}
                (true, false) => return ChangedScope::Everything,
            }
        }
        match prefixes.is_empty() {
            true => ChangedScope::Nothing,
            false => ChangedScope::Stages(prefixes.into_iter().collect()),
        }
    }

    /// This engine with its run narrowed to `prefixes` (as `--target` each), e.g. the stages
    /// [`Engine::changed_scope`] found.
    pub fn narrowed_to(mut self, prefixes: &[String]) -> Engine {
        self.targets.extend(prefixes.iter().cloned());
        self
    }

    /// Lines for the user about what this run leaves out (a gated section whose gate is off).
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// `cloud/region`: the API this spec's resources are read from.
    pub(crate) fn api_group(&self) -> &str {
        &self.api_group
    }

    /// `[globals.after]`: other spec's name → this spec's address prefixes that wait for it.
    pub fn after(&self) -> &std::collections::BTreeMap<String, Vec<String>> {
        &self.after
    }

    /// The lane a run selects this spec by: `shared`, or its cloud's.
    pub fn lane_name(&self) -> &str {
        if self.serves_every_lane { SHARED_LANE } else { self.lane.name() }
    }

    /// Whether the feature gate is on for this run.
    pub fn feature(&self, name: &str) -> bool {
        self.selection.has_feature(name)
    }

    /// API calls made through the lane's providers so far.
    pub fn api_calls(&self) -> ApiCalls {
        let mut all = ApiCalls::default();
        for p in &self.providers {
            all.add(&p.api_calls());
        }
        all
    }

    /// Reads `wanted` for a plan or a drift check (references to other specs answered by what
    /// the run knows of them).
    async fn refresh_wanted(
        &self,
        view: &StateDocument,
        wanted: &BTreeSet<Address>,
    ) -> Result<HashMap<Address, Live>, EngineError> {
        self.observer.event(Event::RefreshStarted { count: wanted.len() });
        let cross = |r: &crate::Reference| self.cross.value(r);
        let ctx = self.refresh_context(view);
        let graph = Some(&self.graph);
        refresh::refresh(&ctx, &self.kinds, graph, view, wanted, &cross, self.parallelism).await
    }

    /// The context of a plan's or drift check's refresh: it shares its batched reads with the
    /// other specs of the run while their workspace plans them together.
    fn refresh_context(&self, state: &StateDocument) -> Context {
        let ctx = self.context(state);
        match self.cross.shared_reads(&self.name) {
            Some(run) => ctx.with_run(run),
            None => ctx,
        }
    }

    fn context(&self, state: &StateDocument) -> Context {
        Context::new(&self.name, self.observer.clone())
            .with_lineage(&state.lineage)
            .with_recorded(state.resources.values().map(|r| (r.kind.clone(), r.id.clone())))
    }

    /// Whether `--target`/`--exclude` and the feature gates let this run touch `address`.
    fn in_scope(&self, address: &Address) -> bool {
        self.targeted(address) && !self.gated_off.iter().any(|g| address.matches_prefix(g))
    }

    /// Whether `--target`/`--exclude` let this run touch `address`.
    fn targeted(&self, address: &Address) -> bool {
        (self.targets.is_empty() || self.targets.iter().any(|t| address.matches_prefix(t)))
            && !self.excludes.iter().any(|e| address.matches_prefix(e))
    }

    /// Addresses recorded in `state` that this run may touch ([`Engine::in_scope`]).
    fn recorded_in_scope(&self, state: &StateDocument) -> BTreeSet<Address> {
        recorded_where(state, |a| self.in_scope(a))
    }

    /// Refreshes and diffs: what `apply` would do.
    pub async fn plan(&self) -> Result<Plan, EngineError> {
        let state = self.state.load_or_new(&self.name)?;
        let before = self.api_calls();
        let (selected, orphans) = self.plan_scope(&state);
        let (view, held) = self.hand_over_view(&state);
        let wanted: BTreeSet<Address> =
            selected.iter().chain(orphans.iter()).filter(|a| !held.contains(*a)).cloned().collect();
        let live = self.refresh_wanted(&view, &wanted).await?;
        Ok(self.plan_from(&state, &view, &held, &selected, &orphans, live, before))
    }

    /// The state as a plan sees it, and the addresses still handed over to another manager
    /// ([`crate::resource::HandOver`]): a resource the spec no longer hands over is the
    /// engine's again, read by its recorded id (the plan records it again).
    fn hand_over_view(&self, state: &StateDocument) -> (StateDocument, BTreeSet<Address>) {
        let mut view = state.clone();
        let mut held = BTreeSet::new();
        for (address, handed) in &state.handed_over {
            let address = Address::new(address.clone());
            match self.graph.get(&address).map(|r| r.hand_over.is_some()) {
                Some(true) => {
                    held.insert(address);
                }
                // Taken back by the spec, or gone from it (then deleted like any orphan).
                _ => {
                    view.resources.insert(address.to_string(), handed.resource.clone());
                }
            }
        }
        (view, held)
    }

    /// What a plan reads: the selected spec resources, and the recorded ones in scope that the
    /// spec no longer has (deleted by the plan).
    fn plan_scope(&self, state: &StateDocument) -> (BTreeSet<Address>, Vec<Address>) {
        // What needs another spec's value that no spec of the run has is left out, with what
        // needs it (the graph's selection drops dependents of an exclusion).
        let mut excludes = self.excludes.clone();
        excludes.extend(self.cross.left_out(&self.name).into_keys().map(|a| a.to_string()));
        let selected = self.graph.select(&self.targets, &excludes);
        let orphans = state
            .resources
            .keys()
            .chain(state.handed_over.keys())
            .map(|a| Address::new(a.clone()))
            .filter(|a| self.graph.get(a).is_none() && self.in_scope(a))
            .collect();
        (selected, orphans)
    }

    /// The plan from what the refresh found (`live` covers `selected` and `orphans`, but for
    /// what is `held` by another manager). `view` is `state` with what the spec takes back.
    #[allow(clippy::too_many_arguments)]
    fn plan_from(
        &self,
        state: &StateDocument,
        view: &StateDocument,
        held: &BTreeSet<Address>,
        selected: &BTreeSet<Address>,
        orphans: &[Address],
        live: HashMap<Address, Live>,
        before: ApiCalls,
    ) -> Plan {
        let cross = |r: &crate::Reference| self.cross.value(r);
        let mut changes =
            plan_changes(&self.graph, selected, orphans, view, &live, &self.kinds, held, &cross);
        for c in changes.iter_mut() {
            // Taken back as it is: recorded again, no call.
            if c.action == Action::NoOp
                && !held.contains(&c.address)
                && state.handed_over.contains_key(c.address.as_str())
            {
                c.action = Action::Adopt;
            }
        }
        // What this apply hands over: in the plan with what it waits for, not handed over yet.
        let in_plan: BTreeSet<&Address> = changes.iter().map(|c| &c.address).collect();
        let handing_over = self
            .graph
            .resources()
            .filter_map(|r| r.hand_over.as_ref().map(|h| (r, h)))
            .filter(|(r, h)| {
                !held.contains(&r.address)
                    && in_plan.contains(&r.address)
                    && in_plan.contains(&h.after)
            })
            .map(|(r, h)| (r.address.clone(), h.to.clone()))
            .collect();
        Plan {
            spec: self.name.clone(),
            mode: PlanMode::Apply,
            state_serial: state.serial,
            state_lineage: state.lineage.clone(),
            changes,
            kept: vec![],
            refreshed: selected.len() + orphans.len(),
            api_calls: self.api_calls().since(&before),
            handing_over,
            left_out: self.cross.left_out(&self.name).into_iter().collect(),
            prior: live,
        }
    }

    /// What `destroy` would do: every recorded resource in scope deleted, dependents first.
    /// Protected resources (and what they need) are kept unless confirmed.
    pub async fn plan_destroy(&self) -> Result<Plan, EngineError> {
        // What was handed over to another manager is deleted with the rest of what the engine
        // made (the other manager, Flux, is suspended first).
        let mut state = self.state.load_or_new(&self.name)?;
        for (address, handed) in std::mem::take(&mut state.handed_over) {
            state.resources.insert(address, handed.resource);
        }
        let before = self.api_calls();
        // A gate that is off does not keep its stage's resources from a destroy: the network
        // under them goes too.
        let scope = recorded_where(&state, |a| self.targeted(a));
        let mut kept: BTreeSet<Address> = BTreeSet::new();
        if !self.confirm_protected {
            let mut stack: Vec<Address> = scope
                .iter()
                .filter(|a| state.get(a.as_str()).is_some_and(|s| s.protected))
                .cloned()
                .collect();
            while let Some(a) = stack.pop() {
                if kept.insert(a.clone())
                    && let Some(s) = state.get(a.as_str())
                {
                    stack.extend(s.dependencies.iter().map(|d| Address::new(d.clone())));
                }
            }
        }
        let wanted: BTreeSet<Address> = scope.difference(&kept).cloned().collect();
        self.observer.event(Event::RefreshStarted { count: wanted.len() });
        let live = refresh::refresh(
            &self.context(&state),
            &self.kinds,
            None,
            &state,
            &wanted,
            &|_| None,
            self.parallelism,
        )
        .await?;
        let mut changes: Vec<ResourceChange> =
            wanted.iter().filter_map(|a| delete_change(a, &state, &live, &self.kinds)).collect();
        if !self.delete_retained {
            for c in changes.iter_mut().filter(|c| c.retained) {
                c.action = Action::Forget;
            }
        }
        order_deletes(&mut changes);
        Ok(Plan {
            spec: self.name.clone(),
            mode: PlanMode::Destroy,
            state_serial: state.serial,
            state_lineage: state.lineage.clone(),
            changes,
            kept: kept.into_iter().collect(),
            refreshed: wanted.len(),
            api_calls: self.api_calls().since(&before),
            handing_over: vec![],
            left_out: vec![],
            prior: live,
        })
    }

    /// Executes `plan` under the state lock. Refuses if the state changed since the plan.
    pub async fn apply(&self, plan: &Plan) -> Result<ApplyReport, EngineError> {
        self.apply_gated(plan, None).await
    }

    /// `apply`, with steps waiting on `gate` before they start (another spec's run).
    pub(crate) async fn apply_gated(
        &self,
        plan: &Plan,
        gate: Option<Arc<dyn crate::workspace::Gate>>,
    ) -> Result<ApplyReport, EngineError> {
        let started = Instant::now();
        let lock: Arc<dyn HeldLock> = Arc::from(self.state.lock(match plan.mode {
            PlanMode::Apply => "apply",
            PlanMode::Destroy => "destroy",
        })?);
        let mut state = self.state.load_or_new(&self.name)?;
        if state.serial == 0 {
            // Never saved: the plan's fresh lineage becomes the state's.
            state.lineage = plan.state_lineage.clone();
        }
        if state.serial != plan.state_serial || state.lineage != plan.state_lineage {
            return Err(EngineError::StalePlan {
                planned: plan.state_serial,
                current: state.serial,
            });
        }
        if plan.mode == PlanMode::Destroy && !self.confirm_protected {
            let protected: Vec<String> =
                plan.actions().filter(|c| c.protected).map(|c| c.address.to_string()).collect();
            if !protected.is_empty() {
                return Err(EngineError::Protected { addresses: protected });
            }
        }
        if state.serial == 0 && plan.actions().next().is_some() {
            // The lineage reaches disk before the first resource carries it: a run killed
            // after its first create finds that resource again on the next run.
            state.serial = 1;
            lock.still_held()?;
            self.state.save_over(&state, 0)?;
        }
        let before = self.api_calls();
        let ctx = self.context(&state);
        let journal = Journal::new(self.state.clone(), state).guarded_by(lock.clone());
        let steps = execute(
            plan,
            ctx,
            self.kinds.clone(),
            self.graph.clone(),
            journal,
            self.observer.clone(),
            ExecSettings {
                parallelism: self.parallelism,
                retry: self.retry,
                drain: self.drain,
                interrupt: self.interrupt.clone(),
                gate,
            },
        )
        .await;
        if plan.mode == PlanMode::Apply {
            self.hand_over(plan, &steps, lock.as_ref())?;
        }
        Ok(ApplyReport {
            steps,
            api_calls: self.api_calls().since(&before),
            elapsed: started.elapsed(),
        })
    }

    /// After an apply: each resource to hand over whose `after` this run applied (both in the
    /// plan, neither failed, both recorded) moves to the state's `handed_over` list.
    fn hand_over(
        &self,
        plan: &Plan,
        steps: &[crate::StepResult],
        lock: &dyn HeldLock,
    ) -> Result<(), EngineError> {
        let failed: BTreeSet<&Address> = steps
            .iter()
            .filter(|s| s.outcome != crate::StepOutcome::Done)
            .map(|s| &s.address)
            .collect();
        let in_plan: BTreeSet<&Address> = plan.changes.iter().map(|c| &c.address).collect();
        let applied = |a: &Address| in_plan.contains(a) && !failed.contains(a);
        let ready: Vec<(&Address, &crate::resource::HandOver)> = self
            .graph
            .resources()
            .filter_map(|r| r.hand_over.as_ref().map(|h| (&r.address, h)))
            .filter(|(address, h)| applied(address) && applied(&h.after))
            .collect();
        if ready.is_empty() {
            return Ok(());
        }
        let mut state = self.state.load_or_new(&self.name)?;
        let previous = state.serial;
        let mut moved = false;
        for (address, h) in ready {
            if state.get(h.after.as_str()).is_none() {
                continue;
            }
            if let Some(resource) = state.resources.remove(address.as_str()) {
                tracing::info!(%address, to = %h.to, "handed over");
                let handed = engine_state::HandedOver { to: h.to.clone(), resource };
                state.handed_over.insert(address.to_string(), handed);
                moved = true;
            }
        }
        if moved {
            state.serial += 1;
            lock.still_held()?;
            self.state.save_over(&state, previous)?;
        }
        Ok(())
    }

    /// Plans and applies in one call (what `engine apply --auto-approve` does).
    pub async fn plan_and_apply(&self) -> Result<(Plan, ApplyReport), EngineError> {
        let plan = self.plan().await?;
        let report = self.apply(&plan).await?;
        Ok((plan, report))
    }

    /// Takes over what OpenTofu built: matches `instances` (from
    /// [`crate::tofu_import::read_tofu_state`]) to the spec's resources in scope that the state
    /// does not record yet, and records each match by its cloud id, under the state lock. The
    /// next plan then updates those resources in place (tags) instead of creating them. Makes
    /// no API call.
    pub fn import_from_tofu(
        &self,
        instances: &[crate::tofu_import::TofuInstance],
    ) -> Result<crate::tofu_import::Matching, EngineError> {
        let lock = self.state.lock("import")?;
        let mut state = self.state.load_or_new(&self.name)?;
        let scope: Vec<Address> = self
            .graph
            .select(&self.targets, &self.excludes)
            .into_iter()
            .filter(|a| state.get(a.as_str()).is_none())
            .collect();
        let matching = crate::tofu_import::match_instances(
            instances,
            &self.providers,
            &self.kinds,
            &self.graph,
            &scope,
        );
        if matching.matched.is_empty() {
            return Ok(matching);
        }
        let previous = state.serial;
        for (address, found) in &matching.matched {
            let Some(spec) = self.graph.get(address) else { continue };
            let fields = self.kinds.get(&spec.kind).map(|k| k.fields()).unwrap_or_default();
            let attributes = found
                .attributes
                .iter()
                .filter(|(name, _)| fields.iter().any(|f| f.name == name.as_str()))
                .map(|(name, value)| (name.clone(), value.clone()))
                .collect();
            state.resources.insert(
                address.to_string(),
                engine_state::ResourceState {
                    kind: spec.kind.clone(),
                    id: found.id.clone(),
                    attributes,
                    dependencies: self
                        .graph
                        .dependencies_of(address)
                        .iter()
                        .map(|d| d.to_string())
                        .collect(),
                    protected: spec.protected,
                    retained: spec.retained,
                },
            );
        }
        state.serial += 1;
        lock.still_held()?;
        self.state.save_over(&state, previous)?;
        Ok(matching)
    }

    /// Compares live state with what was last applied. Never writes state, never locks.
    pub async fn drift(&self) -> Result<DriftReport, EngineError> {
        self.drift_against(DriftAgainst::Applied).await
    }

    /// Compares live state with what was last applied, with the spec (what `plan` would
    /// change), or both from one refresh. Never writes state, never locks.
    pub async fn drift_against(&self, against: DriftAgainst) -> Result<DriftReport, EngineError> {
        let state = self.state.load_or_new(&self.name)?;
        let before = self.api_calls();
        let recorded = self.recorded_in_scope(&state);
        let (selected, orphans) = self.plan_scope(&state);
        let (view, held) = self.hand_over_view(&state);
        let mut wanted = BTreeSet::new();
        if against.compares_applied() {
            wanted.extend(recorded.iter().cloned());
        }
        if against.compares_spec() {
            let planned = selected.iter().chain(orphans.iter()).filter(|a| !held.contains(*a));
            wanted.extend(planned.cloned());
        }
        let live = self.refresh_wanted(&view, &wanted).await?;
        let drifted = match against.compares_applied() {
            true => drift::compare(&state, &recorded, &live, &self.kinds),
            false => vec![],
        };
        let spec_plan = against.compares_spec().then(|| {
            self.plan_from(&state, &view, &held, &selected, &orphans, live, before.clone())
        });
        let not_applied = selected
            .into_iter()
            .filter(|a| state.get(a.as_str()).is_none() && !held.contains(a))
            .collect();
        Ok(DriftReport {
            against,
            checked: wanted.len(),
            drifted,
            spec_plan,
            not_applied,
            api_calls: self.api_calls().since(&before),
        })
    }
}

/// The spec section a resource comes from (`aws.openbao.config.auth["x"]`: `openbao`), where
/// an error about it points when no field says more.
fn section_of(address: &Address) -> FieldPath {
    let section = address.as_str().split('.').nth(1).unwrap_or_default();
    let section = section.split('[').next().unwrap_or_default();
    FieldPath::root(section)
}
