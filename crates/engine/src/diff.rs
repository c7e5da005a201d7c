//! Diffing desired against live: the plan's actions and field changes.

use crate::graph::ResourceGraph;
use crate::{
    Action, Address, Field, FieldChange, FieldUpdate, Kind, Live, PlannedValue, Reference,
    ResourceChange, ResourceSpec, TAG_LINEAGE, TAG_MANAGED_BY,
};
use engine_state::StateDocument;
use serde_json::Value as Json;
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

/// Desired attributes after resolving what can be resolved; `None` = known after apply.
pub(crate) type Resolved = Vec<(String, Option<Json>)>;

/// What the planner knows about each resource while walking in dependency order.
struct Planned {
    action: Action,
    resolved: HashMap<String, Option<Json>>,
}

/// Value of `reference` from live/state data only (for resources outside the plan).
pub(crate) fn live_lookup(
    live: &HashMap<Address, Live>,
    state: &StateDocument,
    r: &Reference,
) -> Option<Json> {
    if let Some(l) = live.get(&r.address) {
        return attribute_of(l, &r.attribute);
    }
    let s = state
        .get(r.address.as_str())
        .or_else(|| state.handed_over.get(r.address.as_str()).map(|h| &h.resource))?;
    if r.attribute == "id" {
        return Some(Json::String(s.id.clone()));
    }
    s.attributes.get(&r.attribute).cloned()
}

/// An attribute of a live resource; `id` is the resource id.
pub(crate) fn attribute_of(live: &Live, attribute: &str) -> Option<Json> {
    if attribute == "id" {
        return Some(Json::String(live.id.clone()));
    }
    live.attributes.get(attribute).cloned()
}

/// Resolves a resource's desired attributes with `lookup`. The tag map that carries the
/// engine's ownership tags (whatever its name) also gets the state's `lineage` tag.
pub(crate) fn resolve(
    spec: &ResourceSpec,
    lineage: &str,
    lookup: &dyn Fn(&Reference) -> Option<Json>,
) -> Resolved {
    spec.attributes
        .iter()
        .map(|(k, v)| {
            let mut value = v.resolve(lookup);
            // The tag map (AWS `tags`, GCP `labels`): whichever carries the ownership tags.
            if let Some(Json::Object(tags)) = &mut value
                && tags.contains_key(TAG_MANAGED_BY)
            {
                tags.insert(TAG_LINEAGE.to_string(), Json::String(lineage.to_string()));
            }
            (k.clone(), value)
        })
        .collect()
}

/// Plans every selected desired resource, then deletes for state resources the spec dropped.
/// What is `held` by another manager (handed over, not read) is left as it is, unless something
/// it needs is created or replaced: then it is created again. `cross` answers references to
/// other specs of the run.
#[allow(clippy::too_many_arguments)]
pub(crate) fn plan_changes(
    graph: &ResourceGraph,
    selected: &BTreeSet<Address>,
    orphans: &[Address],
    state: &StateDocument,
    live: &HashMap<Address, Live>,
    kinds: &HashMap<String, Arc<dyn Kind>>,
    held: &BTreeSet<Address>,
    cross: &dyn Fn(&Reference) -> Option<Json>,
) -> Vec<ResourceChange> {
    let mut planned: HashMap<Address, Planned> = HashMap::new();
    let mut changes = Vec::new();
    for spec in graph.resources() {
        if !selected.contains(&spec.address) {
            continue;
        }
        let made_again = graph.dependencies_of(&spec.address).iter().any(|d| {
            planned.get(d).is_some_and(|p| matches!(p.action, Action::Create | Action::Replace))
        });
        if held.contains(&spec.address) && !made_again {
            let id = state.handed_over.get(spec.address.as_str()).map(|h| h.resource.id.clone());
            planned.insert(
                spec.address.clone(),
                Planned { action: Action::NoOp, resolved: HashMap::new() },
            );
            changes.push(ResourceChange {
                address: spec.address.clone(),
                kind: spec.kind.clone(),
                action: Action::NoOp,
                id,
                fields: vec![],
                dependencies: graph.dependencies_of(&spec.address),
                protected: spec.protected,
                retained: spec.retained,
            });
            continue;
        }
        let lookup = |r: &Reference| -> Option<Json> {
            if r.spec.is_some() {
                return cross(r);
            }
            match planned.get(&r.address) {
                Some(p) => match p.action {
                    Action::Create | Action::Replace => {
                        p.resolved.get(&r.attribute).cloned().flatten()
                    }
                    Action::Update => match p.resolved.get(&r.attribute) {
                        Some(v) => v.clone(),
                        None => live_lookup(live, state, r),
                    },
                    _ => live_lookup(live, state, r),
                },
                None => live_lookup(live, state, r),
            }
        };
        let resolved = resolve(spec, &state.lineage, &lookup);
        let kind = &kinds[&spec.kind];
        let mut change = diff_one(spec, kind.as_ref(), &resolved, live.get(&spec.address), graph);
        if change.action == Action::NoOp && state.get(spec.address.as_str()).is_none() {
            change.action = Action::Adopt;
        }
        planned.insert(
            spec.address.clone(),
            Planned { action: change.action, resolved: resolved.into_iter().collect() },
        );
        changes.push(change);
    }
    changes.sort_by(|a, b| a.address.cmp(&b.address));
    // Deletes of resources no longer in the spec, dependents first.
    let mut deletes: Vec<ResourceChange> =
        orphans.iter().filter_map(|a| delete_change(a, state, live, kinds)).collect();
    order_deletes(&mut deletes);
    changes.extend(deletes);
    changes
}

/// The delete of the recorded resource at `address`: its live fields go away.
pub(crate) fn delete_change(
    address: &Address,
    state: &StateDocument,
    live: &HashMap<Address, Live>,
    kinds: &HashMap<String, Arc<dyn Kind>>,
) -> Option<ResourceChange> {
    let recorded = state.get(address.as_str())?;
    let current = live.get(address);
    let fields = kinds.get(&recorded.kind).map(|k| k.fields()).unwrap_or(&[]);
    Some(ResourceChange {
        address: address.clone(),
        kind: recorded.kind.clone(),
        action: Action::Delete,
        id: Some(current.map_or_else(|| recorded.id.clone(), |l| l.id.clone())),
        fields: current
            .map(|l| {
                l.attributes
                    .iter()
                    .map(|(k, v)| FieldChange {
                        name: k.clone(),
                        before: Some(shown(fields, k, v)),
                        after: PlannedValue::Known(Json::Null),
                        forces_replacement: false,
                    })
                    .collect()
            })
            .unwrap_or_default(),
        dependencies: recorded.dependencies.iter().map(|d| Address::new(d.clone())).collect(),
        protected: recorded.protected,
        retained: recorded.retained,
    })
}

/// Sorts deletes so that a resource comes before what it depends on.
pub(crate) fn order_deletes(deletes: &mut Vec<ResourceChange>) {
    let mut ordered = Vec::with_capacity(deletes.len());
    let mut remaining: Vec<ResourceChange> = std::mem::take(deletes);
    while !remaining.is_empty() {
        let needed: BTreeSet<Address> =
            remaining.iter().flat_map(|c| c.dependencies.iter().cloned()).collect();
        let (ready, rest): (Vec<_>, Vec<_>) =
            remaining.into_iter().partition(|c| !needed.contains(&c.address));
        if ready.is_empty() {
            // A cycle in recorded dependencies: keep the rest as it is.
            ordered.extend(rest);
            break;
        }
        ordered.extend(ready);
        remaining = rest;
    }
    *deletes = ordered;
}

/// A value as a plan shows it: sensitive fields as their digest.
fn shown(fields: &[Field], name: &str, value: &Json) -> Json {
    match fields.iter().find(|f| f.name == name) {
        Some(f) => f.shown(value),
        None => value.clone(),
    }
}

fn planned(fields: &[Field], name: &str, value: &Option<Json>) -> PlannedValue {
    value
        .as_ref()
        .map(|v| PlannedValue::Known(shown(fields, name, v)))
        .unwrap_or(PlannedValue::Unknown)
}

fn diff_one(
    spec: &ResourceSpec,
    kind: &dyn Kind,
    resolved: &Resolved,
    live: Option<&Live>,
    graph: &ResourceGraph,
) -> ResourceChange {
    let dependencies = graph.dependencies_of(&spec.address);
    let mut change = ResourceChange {
        address: spec.address.clone(),
        kind: spec.kind.clone(),
        action: Action::NoOp,
        id: live.map(|l| l.id.clone()),
        fields: Vec::new(),
        dependencies,
        protected: spec.protected,
        retained: spec.retained,
    };
    let Some(live) = live else {
        change.action = Action::Create;
        for (name, value) in resolved {
            change.fields.push(FieldChange {
                name: name.clone(),
                before: None,
                after: planned(kind.fields(), name, value),
                forces_replacement: false,
            });
        }
        for f in kind.fields().iter().filter(|f| f.update == FieldUpdate::Computed) {
            if !resolved.iter().any(|(n, _)| n == f.name) {
                change.fields.push(FieldChange {
                    name: f.name.to_string(),
                    before: None,
                    after: PlannedValue::Unknown,
                    forces_replacement: false,
                });
            }
        }
        return change;
    };
    let mut replace = false;
    for field in kind.fields().iter().filter(|f| f.is_diffed()) {
        let Some((_, desired)) = resolved.iter().find(|(n, _)| n == field.name) else {
            continue;
        };
        let before = live.attributes.get(field.name).cloned().unwrap_or(Json::Null);
        let differs = match desired {
            None => true,
            Some(d) => !field.same(d, &before),
        };
        if differs {
            let forces = field.update == FieldUpdate::Replace;
            replace |= forces;
            change.fields.push(FieldChange {
                name: field.name.to_string(),
                before: Some(field.shown(&before)),
                after: planned(kind.fields(), field.name, desired),
                forces_replacement: forces,
            });
        }
    }
    change.action = if replace {
        Action::Replace
    } else if change.fields.is_empty() {
        Action::NoOp
    } else {
        Action::Update
    };
    change
}
