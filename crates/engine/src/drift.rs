//! Drift: live state compared with what was last applied, with the spec, or both. Read-only.

use crate::{Address, ApiCalls, Kind, Live, Plan};
use engine_state::StateDocument;
use serde::Serialize;
use serde_json::Value as Json;
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

/// What `engine drift` compares the live resources with.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum DriftAgainst {
    /// What was last applied (the state): changes made outside the engine.
    #[default]
    Applied,
    /// The spec, as `plan --detailed-exitcode` does: also edits of the spec not applied yet.
    Spec,
    /// Both, from one refresh.
    Both,
}

impl DriftAgainst {
    pub fn compares_applied(self) -> bool {
        matches!(self, DriftAgainst::Applied | DriftAgainst::Both)
    }

    pub fn compares_spec(self) -> bool {
        matches!(self, DriftAgainst::Spec | DriftAgainst::Both)
    }
}

/// How a resource drifted.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "status", rename_all = "kebab-case")]
pub enum DriftStatus {
    /// Deleted by someone else.
    Deleted,
    /// Fields changed by someone else.
    Modified { fields: Vec<FieldDrift> },
}

/// One drifted field.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FieldDrift {
    pub name: String,
    /// As last applied.
    pub applied: Json,
    /// As found now.
    pub live: Json,
}

/// One drifted resource.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ResourceDrift {
    pub address: Address,
    pub kind: String,
    pub id: String,
    #[serde(flatten)]
    pub status: DriftStatus,
}

/// The result of `engine drift`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct DriftReport {
    pub against: DriftAgainst,
    /// Resources compared.
    pub checked: usize,
    /// Live resources that differ from what was last applied (when compared with it).
    pub drifted: Vec<ResourceDrift>,
    /// What an apply would change to make the live resources match the spec (when compared
    /// with the spec): the plan, with its no-op entries. (Its JSON is the CLI's to write.)
    #[serde(skip)]
    pub spec_plan: Option<Plan>,
    /// Spec resources never applied (not drift; listed for information).
    pub not_applied: Vec<Address>,
    pub api_calls: ApiCalls,
}

impl DriftReport {
    /// No resource drifted, and (when compared with the spec) the spec needs no change.
    pub fn is_clean(&self) -> bool {
        self.drifted.is_empty() && !self.spec_plan.as_ref().is_some_and(Plan::has_changes)
    }
}

/// Compares every recorded resource in `scope` with its live state.
pub(crate) fn compare(
    state: &StateDocument,
    scope: &BTreeSet<Address>,
    live: &HashMap<Address, Live>,
    kinds: &HashMap<String, Arc<dyn Kind>>,
) -> Vec<ResourceDrift> {
    let mut out = Vec::new();
    for address in scope {
        let Some(applied) = state.get(address.as_str()) else {
            continue;
        };
        let Some(now) = live.get(address) else {
            out.push(ResourceDrift {
                address: address.clone(),
                kind: applied.kind.clone(),
                id: applied.id.clone(),
                status: DriftStatus::Deleted,
            });
            continue;
        };
        let Some(kind) = kinds.get(&applied.kind) else {
            continue;
        };
        let mut fields = Vec::new();
        for f in kind.fields().iter().filter(|f| f.is_diffed()) {
            let Some(was) = applied.attributes.get(f.name) else {
                continue;
            };
            let is = now.attributes.get(f.name).cloned().unwrap_or(Json::Null);
            if !f.matches_recorded(was, &is) {
                fields.push(FieldDrift {
                    name: f.name.to_string(),
                    applied: was.clone(),
                    live: f.shown(&is),
                });
            }
        }
        if !fields.is_empty() {
            out.push(ResourceDrift {
                address: address.clone(),
                kind: applied.kind.clone(),
                id: now.id.clone(),
                status: DriftStatus::Modified { fields },
            });
        }
    }
    out
}
