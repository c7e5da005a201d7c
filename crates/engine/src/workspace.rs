//! Several specs run as one invocation (`engine apply specs/shared.toml specs/aws.toml
//! specs/gcp.toml --cloud all`). Each spec keeps its own graph, providers and state; the specs
//! plan, apply, drift and destroy at the same time. The only order between two specs is what
//! one declares in `[globals.after]`: its resources under the named address prefixes start once
//! the other spec's apply has finished, and on destroy the other spec's steps start once this
//! spec's destroy has finished. No other edge joins two specs, so a lane never waits for
//! another lane's unrelated work.

use crate::{Address, ApplyReport, DriftAgainst, DriftReport, Engine, EngineError, Plan, PlanMode};
use async_trait::async_trait;
use futures::future::join_all;
use std::sync::Arc;
use tokio::sync::watch;

/// What a step waits for outside its own plan.
#[async_trait]
pub trait Gate: Send + Sync {
    /// Returns once the step of `address` may start; `Err(why)` leaves it not started (and so
    /// what depends on it).
    async fn open(&self, address: &Address) -> Result<(), String>;
}

/// The specs of one invocation.
pub struct Workspace {
    engines: Vec<Engine>,
}

/// One order between members: `waiting`'s resources under `prefixes` wait for `awaited`.
struct Order {
    waiting: usize,
    prefixes: Vec<String>,
    awaited: usize,
}

/// How each member's apply ended: `None` while it runs, then whether every step succeeded.
type Finished = watch::Receiver<Option<bool>>;

/// The gate of one member: the other members' runs its steps wait for.
struct Waits {
    /// (address prefixes that wait, or every address when `None`; the awaited spec's name and
    /// how its run ends).
    on: Vec<(Option<Vec<String>>, String, Finished)>,
    mode: PlanMode,
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
        Ok(())
    }
}

impl Workspace {
    /// The specs of one run. Refuses two specs of one name (they would share state and tags)
    /// and a cycle of `[globals.after]` orders between them.
    pub fn new(engines: Vec<Engine>) -> Result<Workspace, EngineError> {
        let mut names: Vec<&str> = engines.iter().map(|e| e.name()).collect();
        names.sort();
        if let Some(w) = names.windows(2).find(|w| w[0] == w[1]) {
            return Err(EngineError::Builder(format!(
                "two specs are named `{}`: each spec of a run needs its own name",
                w[0]
            )));
        }
        let workspace = Workspace { engines };
        workspace.check_acyclic()?;
        Ok(workspace)
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

    /// Every member's plan, refreshed at the same time.
    pub async fn plan(&self) -> Vec<Result<Plan, EngineError>> {
        join_all(self.engines.iter().map(|e| e.plan())).await
    }

    /// Every member's destroy plan.
    pub async fn plan_destroy(&self) -> Vec<Result<Plan, EngineError>> {
        join_all(self.engines.iter().map(|e| e.plan_destroy())).await
    }

    /// Every member's drift report.
    pub async fn drift(&self, against: DriftAgainst) -> Vec<Result<DriftReport, EngineError>> {
        join_all(self.engines.iter().map(|e| e.drift_against(against))).await
    }

    /// Applies `plans[i]` with `engines()[i]`, all at the same time, each step waiting only for
    /// what `[globals.after]` orders. A member whose plan has no changes is not run (its
    /// report is empty); one whose run fails leaves what waits for it not started.
    pub async fn apply(&self, plans: &[Plan]) -> Vec<Result<ApplyReport, EngineError>> {
        assert_eq!(plans.len(), self.engines.len(), "one plan per member");
        let (senders, receivers): (Vec<_>, Vec<_>) =
            self.engines.iter().map(|_| watch::channel(None)).unzip();
        let orders = self.orders();
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
            let gate: Option<Arc<dyn Gate>> =
                (!on.is_empty()).then(|| Arc::new(Waits { on, mode: plan.mode }) as Arc<dyn Gate>);
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
