//! Several specs run as one invocation (`engine apply specs/shared.toml specs/aws.toml
//! specs/gcp.toml --cloud all`). Each spec keeps its own graph, providers and state; the specs
//! plan, apply, drift and destroy at the same time. Two things order one spec's steps after
//! another's: `[globals.after]` (its resources under the named address prefixes start once the
//! other spec's apply has finished; on destroy the other spec's steps start once this spec's
//! destroy has finished), and a reference to another spec's resource
//! ([`crate::Value::reference_in`]: the step waits for that resource's step only; see
//! [`crate::cross_spec`]). No other edge joins two specs, so a lane never waits for another
//! lane's unrelated work.

use crate::cross_spec::{CrossSpec, SpecAddress};
use crate::{
    Action, Address, ApplyReport, DriftAgainst, DriftReport, Engine, EngineError, Live, Plan,
    PlanMode, Reference,
};
use async_trait::async_trait;
use futures::future::join_all;
use petgraph::graph::{DiGraph, NodeIndex};
use serde_json::Value as Json;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;
use tokio::sync::watch;

/// What a step waits for outside its own plan, and how its spec meets the others of the run.
#[async_trait]
pub trait Gate: Send + Sync {
    /// Returns once the step of `address` may start; `Err(why)` leaves it not started (and so
    /// what depends on it).
    async fn open(&self, address: &Address) -> Result<(), String>;

    /// Another spec's value, for a reference across specs; `None` when not known.
    fn value(&self, _reference: &Reference) -> Option<Json> {
        None
    }

    /// A step of this spec just made the resource at `address` (created, updated or adopted).
    fn made(&self, _address: &Address, _live: &Live) {}
}

/// The specs of one invocation.
pub struct Workspace {
    engines: Vec<Engine>,
    /// What the members know of each other's resources (each member holds it too).
    cross: Arc<CrossSpec>,
}

/// A reference across specs: the member whose resource at the address holds it, and the
/// reference.
type CrossReference = (usize, Address, Reference);

/// One order between members: `waiting`'s resources under `prefixes` wait for `awaited`.
struct Order {
    waiting: usize,
    prefixes: Vec<String>,
    awaited: usize,
}

/// How each member's apply ended: `None` while it runs, then whether every step succeeded.
type Finished = watch::Receiver<Option<bool>>;

/// The gate of one member: the other members' runs and resources its steps wait for.
struct Waits {
    /// (address prefixes that wait, or every address when `None`; the awaited spec's name and
    /// how its run ends).
    on: Vec<(Option<Vec<String>>, String, Finished)>,
    mode: PlanMode,
    /// This member's name.
    spec: String,
    cross: Arc<CrossSpec>,
    /// Per address of this member: the other specs' resources this run makes that it needs,
    /// and how their spec's run ends.
    needs: HashMap<Address, Vec<(SpecAddress, Finished)>>,
}

#[async_trait]
impl Gate for Waits {
    async fn open(&self, address: &Address) -> Result<(), String> {
        for (prefixes, name, finished) in &self.on {
            let applies =
                prefixes.as_ref().is_none_or(|ps| ps.iter().any(|p| address.matches_prefix(p)));
            if !applies {
                continue;
            }
            let mut finished = finished.clone();
            let ended = finished.wait_for(Option::is_some).await.map(|v| *v);
            let verb = match self.mode {
                PlanMode::Apply => "apply",
                PlanMode::Destroy => "destroy",
            };
            match ended {
                Ok(Some(true)) => {}
                _ => {
                    return Err(format!("it waits for spec `{name}`, whose {verb} did not finish"));
                }
            }
        }
        for (needed, finished) in self.needs.get(address).into_iter().flatten() {
            let mut made = self.cross.made_signal();
            let mut finished = finished.clone();
            while !self.cross.was_made(needed) {
                let gone = || {
                    format!(
                        "it needs {}'s {}, which that spec's apply did not make",
                        needed.0, needed.1
                    )
                };
                if finished.borrow_and_update().is_some() {
                    return Err(gone());
                }
                tokio::select! {
                    changed = made.changed() => changed.map_err(|_| gone())?,
                    changed = finished.changed() => changed.map_err(|_| gone())?,
                }
            }
        }
        Ok(())
    }

    fn value(&self, reference: &Reference) -> Option<Json> {
        self.cross.value(reference)
    }

    fn made(&self, address: &Address, live: &Live) {
        self.cross.made(&self.spec, address, live);
    }
}

impl Workspace {
    /// The specs of one run. Refuses two specs of one name (they would share state and tags),
    /// a cycle of `[globals.after]` orders between them, a reference to a resource another
    /// spec of the run does not define, and a cycle that references across specs make.
    pub fn new(mut engines: Vec<Engine>) -> Result<Workspace, EngineError> {
        let mut names: Vec<&str> = engines.iter().map(|e| e.name()).collect();
        names.sort();
        if let Some(w) = names.windows(2).find(|w| w[0] == w[1]) {
            return Err(EngineError::Builder(format!(
                "two specs are named `{}`: each spec of a run needs its own name",
                w[0]
            )));
        }
        let cross = Arc::new(CrossSpec::default());
        for e in &mut engines {
            e.cross = cross.clone();
        }
        let workspace = Workspace { engines, cross };
        workspace.check_acyclic()?;
        workspace.check_cross_references()?;
        Ok(workspace)
    }

    /// Every reference across specs of the members' resources.
    fn cross_references(&self) -> Vec<CrossReference> {
        let mut out = Vec::new();
        for (i, e) in self.engines.iter().enumerate() {
            for r in e.graph().resources() {
                for reference in r.cross_references() {
                    out.push((i, r.address.clone(), reference.clone()));
                }
            }
        }
        out
    }

    /// A reference across specs names a resource its spec defines, when that spec is in the
    /// run, and no chain of references and orders comes back to where it started.
    fn check_cross_references(&self) -> Result<(), EngineError> {
        let refs = self.cross_references();
        if refs.is_empty() {
            return Ok(());
        }
        for (m, address, r) in &refs {
            let spec = r.spec.as_deref().unwrap_or_default();
            let here = self.engines[*m].name();
            if spec == here {
                return Err(EngineError::Builder(format!(
                    "{address} of spec `{here}` refers to its own spec by name: refer to \
                     {} as a resource of the same spec",
                    r.address
                )));
            }
            if let Some(s) = self.index_of(spec)
                && self.engines[s].graph().get(&r.address).is_none()
            {
                return Err(EngineError::Builder(format!(
                    "{address} of spec `{here}` refers to {r}, which spec `{spec}` does not define"
                )));
            }
        }
        // One graph of every member's resources, and per member a node "its apply has
        // finished" that its resources lead to and what `[globals.after]` orders after it
        // waits for.
        let mut graph: DiGraph<String, ()> = DiGraph::new();
        let mut nodes: HashMap<(usize, Address), NodeIndex> = HashMap::new();
        let mut ends = Vec::new();
        for (i, e) in self.engines.iter().enumerate() {
            let end = graph.add_node(format!("the end of spec `{}`'s apply", e.name()));
            ends.push(end);
            for r in e.graph().resources() {
                let n = graph.add_node(format!("{}'s {}", e.name(), r.address));
                nodes.insert((i, r.address.clone()), n);
                graph.add_edge(n, end, ());
            }
        }
        for (i, e) in self.engines.iter().enumerate() {
            for r in e.graph().resources() {
                let to = nodes[&(i, r.address.clone())];
                for d in e.graph().dependencies_of(&r.address) {
                    graph.add_edge(nodes[&(i, d)], to, ());
                }
            }
        }
        for (m, address, r) in &refs {
            let spec = r.spec.as_deref().unwrap_or_default();
            if let Some(from) = self.index_of(spec).and_then(|s| nodes.get(&(s, r.address.clone())))
            {
                graph.add_edge(*from, nodes[&(*m, address.clone())], ());
            }
        }
        for o in self.orders() {
            for r in self.engines[o.waiting].graph().resources() {
                if o.prefixes.iter().any(|p| r.address.matches_prefix(p)) {
                    graph.add_edge(ends[o.awaited], nodes[&(o.waiting, r.address.clone())], ());
                }
            }
        }
        if petgraph::algo::toposort(&graph, None).is_ok() {
            return Ok(());
        }
        let cycle = petgraph::algo::tarjan_scc(&graph)
            .into_iter()
            .find(|scc| scc.len() > 1)
            .unwrap_or_default();
        let mut names: Vec<&str> = cycle.iter().map(|n| graph[*n].as_str()).collect();
        names.sort();
        Err(EngineError::Builder(format!(
            "references across specs and [globals.after] orders make a cycle through: {}",
            names.join(", ")
        )))
    }

    /// Loads what the members' states record of the resources other specs refer to.
    fn load_cross(&self, refs: &[CrossReference]) {
        let wanted: HashSet<SpecAddress> = refs
            .iter()
            .map(|(_, _, r)| (r.spec.clone().unwrap_or_default(), r.address.clone()))
            .collect();
        let referenced: BTreeSet<&str> = wanted.iter().map(|(s, _)| s.as_str()).collect();
        // A state that cannot be read knows nothing here; that spec's own plan reports why.
        let states: Vec<(String, crate::StateDocument)> = self
            .engines
            .iter()
            .filter(|e| referenced.contains(e.name()))
            .filter_map(|e| e.state_document().ok().map(|s| (e.name().to_string(), s)))
            .collect();
        self.cross.load(&states, &wanted);
    }

    /// After the members planned: what the run makes again is not known before it is made
    /// (its members plan again), and what needs a value no spec of the run has or makes is
    /// left out (its member plans again). The members to plan again.
    fn settle(&self, refs: &[CrossReference], plans: &[Result<Plan, EngineError>]) -> Vec<usize> {
        let action_of = |member: usize, address: &Address| {
            plans[member]
                .as_ref()
                .ok()
                .and_then(|p| p.changes.iter().find(|c| &c.address == address))
                .map(|c| c.action)
        };
        let mut again = BTreeSet::new();
        for (m, address, r) in refs {
            let here = self.engines[*m].name();
            if action_of(*m, address).is_none() || self.cross.is_left_out(here, address) {
                continue; // not in this member's plan
            }
            let spec = r.spec.clone().unwrap_or_default();
            let member = self.index_of(&spec);
            let at = (spec.clone(), r.address.clone());
            let made_again = member.and_then(|s| action_of(s, &r.address));
            if matches!(made_again, Some(Action::Create | Action::Replace)) {
                if self.cross.knows(&at) {
                    self.cross.forget(&at);
                    again.insert(*m);
                }
                continue;
            }
            if self.cross.knows(&at) {
                continue;
            }
            // Found by the other spec's refresh and taken into its state by this run (adopted).
            let read = member.and_then(|s| plans[s].as_ref().ok()?.prior.get(&r.address));
            if let Some(live) = read {
                self.cross.know(&at, live);
                again.insert(*m);
                continue;
            }
            let why = match member {
                None => crate::cross_spec::not_in_run(r),
                Some(_) => format!("needs {r}, which that spec has not made nor makes in this run"),
            };
            self.cross.leave_out(here, address, why);
            again.insert(*m);
        }
        again.into_iter().collect()
    }

    /// The members, in the order given.
    pub fn engines(&self) -> &[Engine] {
        &self.engines
    }

    fn index_of(&self, name: &str) -> Option<usize> {
        self.engines.iter().position(|e| e.name() == name)
    }

    /// The orders between members; an `after` naming a spec outside the run orders nothing.
    fn orders(&self) -> Vec<Order> {
        let mut orders = Vec::new();
        for (waiting, e) in self.engines.iter().enumerate() {
            for (name, prefixes) in e.after() {
                if let Some(awaited) = self.index_of(name) {
                    orders.push(Order { waiting, prefixes: prefixes.clone(), awaited });
                }
            }
        }
        orders
    }

    fn check_acyclic(&self) -> Result<(), EngineError> {
        let orders = self.orders();
        // Depth-first from each member along "waits for": a member met again on the path is a
        // cycle.
        fn visit(at: usize, orders: &[Order], path: &mut Vec<usize>) -> Option<Vec<usize>> {
            if let Some(start) = path.iter().position(|&p| p == at) {
                return Some(path[start..].to_vec());
            }
            path.push(at);
            for o in orders.iter().filter(|o| o.waiting == at) {
                if let Some(cycle) = visit(o.awaited, orders, path) {
                    return Some(cycle);
                }
            }
            path.pop();
            None
        }
        for start in 0..self.engines.len() {
            if let Some(cycle) = visit(start, &orders, &mut Vec::new()) {
                let names: Vec<&str> = cycle.iter().map(|&i| self.engines[i].name()).collect();
                return Err(EngineError::Builder(format!(
                    "the specs' [globals.after] orders make a cycle: {} → {}",
                    names.join(" → "),
                    names[0]
                )));
            }
        }
        Ok(())
    }

    /// Every member's plan, refreshed at the same time. With references across specs, a
    /// member whose plan depends on what another plans is planned again (rarely: when another
    /// spec makes again what it refers to, or what it refers to exists nowhere yet).
    pub async fn plan(&self) -> Vec<Result<Plan, EngineError>> {
        let refs = self.cross_references();
        self.load_cross(&refs);
        self.cross.share_reads(&self.api_groups());
        let mut plans = join_all(self.engines.iter().map(|e| e.plan())).await;
        // Each round learns, forgets or leaves out at least one value, each at most once or
        // twice, so this settles; the bound only guards against a member whose plans disagree
        // from one refresh to the next.
        for _ in 0..=2 * refs.len() {
            let again = self.settle(&refs, &plans);
            if again.is_empty() {
                break;
            }
            let replanned = join_all(again.iter().map(|&i| self.engines[i].plan())).await;
            for (i, plan) in again.into_iter().zip(replanned) {
                plans[i] = plan;
            }
        }
        self.cross.end_shared_reads();
        plans
    }

    /// The members' names, each with the API it reads (`cloud/region`).
    fn api_groups(&self) -> Vec<(String, String)> {
        self.engines.iter().map(|e| (e.name().to_string(), e.api_group().to_string())).collect()
    }

    /// Every member's destroy plan.
    pub async fn plan_destroy(&self) -> Vec<Result<Plan, EngineError>> {
        join_all(self.engines.iter().map(|e| e.plan_destroy())).await
    }

    /// Every member's drift report. A resource that needs another spec's value no state
    /// records is left out of the comparison with the spec, as a plan leaves it out.
    pub async fn drift(&self, against: DriftAgainst) -> Vec<Result<DriftReport, EngineError>> {
        let refs = self.cross_references();
        self.load_cross(&refs);
        for (m, address, r) in &refs {
            let spec = r.spec.clone().unwrap_or_default();
            if !self.cross.knows(&(spec.clone(), r.address.clone())) {
                let why = format!("needs {r}, which no spec of this run has made");
                self.cross.leave_out(self.engines[*m].name(), address, why);
            }
        }
        self.cross.share_reads(&self.api_groups());
        let reports = join_all(self.engines.iter().map(|e| e.drift_against(against))).await;
        self.cross.end_shared_reads();
        reports
    }

    /// Applies `plans[i]` with `engines()[i]`, all at the same time, each step waiting only for
    /// what `[globals.after]` orders. A member whose plan has no changes is not run (its
    /// report is empty); one whose run fails leaves what waits for it not started.
    pub async fn apply(&self, plans: &[Plan]) -> Vec<Result<ApplyReport, EngineError>> {
        assert_eq!(plans.len(), self.engines.len(), "one plan per member");
        let (senders, receivers): (Vec<_>, Vec<_>) =
            self.engines.iter().map(|_| watch::channel(None)).unzip();
        let orders = self.orders();
        let refs = self.cross_references();
        self.load_cross(&refs);
        let changing = |member: usize, address: &Address| {
            plans[member].changes.iter().any(|c| &c.address == address && c.action != Action::NoOp)
        };
        let runs = self.engines.iter().zip(plans).enumerate().map(|(i, (engine, plan))| {
            let mut on = Vec::new();
            for o in &orders {
                match plan.mode {
                    // On apply, the waiting spec's prefixes wait for the awaited spec.
                    PlanMode::Apply if o.waiting == i => on.push((
                        Some(o.prefixes.clone()),
                        self.engines[o.awaited].name().to_string(),
                        receivers[o.awaited].clone(),
                    )),
                    // On destroy, the awaited spec waits for the waiting one to be gone.
                    PlanMode::Destroy if o.awaited == i => on.push((
                        None,
                        self.engines[o.waiting].name().to_string(),
                        receivers[o.waiting].clone(),
                    )),
                    _ => {}
                }
            }
            // A step that writes a value of another spec's resource this run makes waits for
            // that resource's step.
            let mut needs: HashMap<Address, Vec<(SpecAddress, Finished)>> = HashMap::new();
            for (m, address, r) in refs.iter().filter(|(m, ..)| *m == i) {
                let writes = plans[*m].changes.iter().any(|c| {
                    &c.address == address
                        && matches!(c.action, Action::Create | Action::Update | Action::Replace)
                });
                let spec = r.spec.clone().unwrap_or_default();
                if let Some(s) = self.index_of(&spec)
                    && plan.mode == PlanMode::Apply
                    && writes
                    && changing(s, &r.address)
                {
                    let needed = ((spec, r.address.clone()), receivers[s].clone());
                    needs.entry(address.clone()).or_default().push(needed);
                }
            }
            let gate: Arc<dyn Gate> = Arc::new(Waits {
                on,
                mode: plan.mode,
                spec: engine.name().to_string(),
                cross: self.cross.clone(),
                needs,
            });
            let gate = Some(gate);
            let done = &senders[i];
            async move {
                let result = if plan.has_changes() {
                    engine.apply_gated(plan, gate).await
                } else {
                    Ok(ApplyReport::default())
                };
                let _ = done.send(Some(result.as_ref().is_ok_and(ApplyReport::is_success)));
                result
            }
        });
        join_all(runs).await
    }
}
