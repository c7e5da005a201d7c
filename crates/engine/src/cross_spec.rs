//! References across the specs of one run ([`crate::Value::reference_in`]): the shared spec's
//! AWS role that trusts a service account the GCP lane makes, by its unique id.
//!
//! Such a reference is no edge of either spec's graph. The run's [`crate::Workspace`] resolves
//! it from what it knows of the other spec's resources ([`CrossSpec`]): what that spec's state
//! records, then what its apply makes in the same run. A plan shows the value when the other
//! spec has it and does not make it again, "known after apply" when the other spec's plan makes
//! it; a resource whose value no spec of the run has or makes is left out of the run with the
//! reason, as an unselected lane is, until a run makes it. At apply time the step waits for the
//! other spec's step that makes the value, and only for that step.

use crate::diff::attribute_of;
use crate::{Address, Live, Reference};
use engine_state::StateDocument;
use serde_json::Value as Json;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use tokio::sync::watch;

/// A resource of one spec of the run, as other specs name it.
pub(crate) type SpecAddress = (String, Address);

/// Why a resource that needs `reference` is left out when the other spec is not in the run.
pub(crate) fn not_in_run(reference: &Reference) -> String {
    let spec = reference.spec.as_deref().unwrap_or_default();
    format!("needs {reference}, and spec `{spec}` is not in this run")
}

/// What the specs of a run know of each other's resources; shared by the members of a
/// [`crate::Workspace`] (each [`crate::Engine`] holds it, empty outside a workspace).
pub(crate) struct CrossSpec {
    inner: Mutex<Inner>,
    /// The reads the members' refreshes share while the workspace plans or checks drift: per
    /// member, the reads of the members of its cloud and region.
    run_reads: Mutex<HashMap<String, Arc<crate::RunReads>>>,
    /// Bumped each time a step makes a resource another spec may wait for.
    made_signal: watch::Sender<u64>,
}

#[derive(Default)]
struct Inner {
    /// The referenced resources as last known: recorded in their spec's state, then as this
    /// run's steps made them.
    values: HashMap<SpecAddress, Live>,
    /// Made (created, updated, adopted) by this run's apply.
    made: HashSet<SpecAddress>,
    /// Per spec: its resources left out of this run, and why.
    left_out: HashMap<String, BTreeMap<Address, String>>,
}

impl Default for CrossSpec {
    fn default() -> Self {
        CrossSpec {
            inner: Mutex::new(Inner::default()),
            run_reads: Mutex::new(HashMap::new()),
            made_signal: watch::channel(0).0,
        }
    }
}

impl CrossSpec {
    fn inner(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// From now on the refreshes of the members of each group (`(name, group)`: specs of one
    /// cloud and region read the same API) share their batched reads, until
    /// [`CrossSpec::end_shared_reads`].
    pub(crate) fn share_reads(&self, members: &[(String, String)]) {
        let mut groups: HashMap<&str, Vec<String>> = HashMap::new();
        for (name, group) in members {
            groups.entry(group).or_default().push(name.clone());
        }
        let groups: HashMap<&str, Arc<crate::RunReads>> = groups
            .into_iter()
            .map(|(g, names)| (g, Arc::new(crate::RunReads::new(names))))
            .collect();
        let mut reads = self.run_reads.lock().unwrap_or_else(|p| p.into_inner());
        *reads = members
            .iter()
            .map(|(name, group)| (name.clone(), groups[group.as_str()].clone()))
            .collect();
    }

    pub(crate) fn end_shared_reads(&self) {
        self.run_reads.lock().unwrap_or_else(|p| p.into_inner()).clear();
    }

    /// The reads `spec` shares, while a workspace plans or checks drift.
    pub(crate) fn shared_reads(&self, spec: &str) -> Option<Arc<crate::RunReads>> {
        self.run_reads.lock().unwrap_or_else(|p| p.into_inner()).get(spec).cloned()
    }

    /// The referenced attribute, when known.
    pub(crate) fn value(&self, reference: &Reference) -> Option<Json> {
        let spec = reference.spec.clone()?;
        let inner = self.inner();
        let live = inner.values.get(&(spec, reference.address.clone()))?;
        attribute_of(live, &reference.attribute)
    }

    /// Whether the resource's value is known.
    pub(crate) fn knows(&self, at: &SpecAddress) -> bool {
        self.inner().values.contains_key(at)
    }

    /// Starts over from what the states record of the resources `wanted`, each `(spec name,
    /// its state)`: nothing made, nothing left out.
    pub(crate) fn load(&self, states: &[(String, StateDocument)], wanted: &HashSet<SpecAddress>) {
        let mut inner = self.inner();
        *inner = Inner::default();
        for (spec, state) in states {
            for (address, recorded) in &state.resources {
                let at = (spec.clone(), Address::new(address.clone()));
                if wanted.contains(&at) {
                    let live = Live::new(recorded.id.clone(), recorded.attributes.clone());
                    inner.values.insert(at, live);
                }
            }
        }
    }

    /// What a plan read of a resource its state does not record yet (adopted by the run).
    pub(crate) fn know(&self, at: &SpecAddress, live: &Live) {
        self.inner().values.insert(at.clone(), live.clone());
    }

    /// The value is not what the state records: the run makes it again.
    pub(crate) fn forget(&self, at: &SpecAddress) {
        self.inner().values.remove(at);
    }

    /// `spec`'s resource at `address` was just made: its value is `live`.
    pub(crate) fn made(&self, spec: &str, address: &Address, live: &Live) {
        let at = (spec.to_string(), address.clone());
        {
            let mut inner = self.inner();
            inner.values.insert(at.clone(), live.clone());
            inner.made.insert(at);
        }
        self.made_signal.send_modify(|n| *n += 1);
    }

    /// Whether this run's apply made the resource.
    pub(crate) fn was_made(&self, at: &SpecAddress) -> bool {
        self.inner().made.contains(at)
    }

    /// A receiver that changes whenever a resource is made.
    pub(crate) fn made_signal(&self) -> watch::Receiver<u64> {
        self.made_signal.subscribe()
    }

    /// Leaves `spec`'s `address` (and what needs it) out of this run; `why` is shown.
    pub(crate) fn leave_out(&self, spec: &str, address: &Address, why: String) {
        self.inner()
            .left_out
            .entry(spec.to_string())
            .or_default()
            .entry(address.clone())
            .or_insert(why);
    }

    /// `spec`'s resources left out of this run, and why.
    pub(crate) fn left_out(&self, spec: &str) -> BTreeMap<Address, String> {
        self.inner().left_out.get(spec).cloned().unwrap_or_default()
    }

    /// Whether `spec`'s `address` is already left out.
    pub(crate) fn is_left_out(&self, spec: &str, address: &Address) -> bool {
        self.inner().left_out.get(spec).is_some_and(|l| l.contains_key(address))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn reference(spec: &str, address: &str, attribute: &str) -> Reference {
        Reference {
            spec: Some(spec.into()),
            address: Address::new(address),
            attribute: attribute.into(),
        }
    }

    #[test]
    fn values_come_from_the_state_then_from_what_the_run_makes() {
        let cross = CrossSpec::default();
        let mut state = StateDocument::new("gcp-0");
        state.resources.insert(
            "gcp.sa.node".into(),
            engine_state::ResourceState {
                kind: "k".into(),
                id: "sa-1".into(),
                attributes: json!({ "unique_id": "111" }).as_object().unwrap().clone(),
                dependencies: vec![],
                protected: false,
                retained: false,
            },
        );
        let at = ("gcp-0".to_string(), Address::new("gcp.sa.node"));
        let other = ("gcp-0".to_string(), Address::new("gcp.sa.other"));
        cross.load(&[("gcp-0".into(), state)], &HashSet::from([at.clone(), other.clone()]));
        assert_eq!(
            cross.value(&reference("gcp-0", "gcp.sa.node", "unique_id")),
            Some(json!("111"))
        );
        assert_eq!(cross.value(&reference("gcp-0", "gcp.sa.node", "id")), Some(json!("sa-1")));
        assert!(!cross.knows(&other));
        // Made again by the run: unknown until made, then the new value.
        cross.forget(&at);
        assert_eq!(cross.value(&reference("gcp-0", "gcp.sa.node", "unique_id")), None);
        let signal = cross.made_signal();
        cross.made(
            "gcp-0",
            &at.1,
            &Live::new("sa-2", json!({ "unique_id": "222" }).as_object().unwrap().clone()),
        );
        assert!(signal.has_changed().unwrap());
        assert!(cross.was_made(&at));
        assert_eq!(
            cross.value(&reference("gcp-0", "gcp.sa.node", "unique_id")),
            Some(json!("222"))
        );
        // A reference within a spec is never answered here.
        let local = Reference { spec: None, address: at.1.clone(), attribute: "id".into() };
        assert_eq!(cross.value(&local), None);
        cross.leave_out("shared", &Address::new("aws.role"), "why".into());
        assert!(cross.is_left_out("shared", &Address::new("aws.role")));
        assert_eq!(cross.left_out("shared").len(), 1);
    }
}
