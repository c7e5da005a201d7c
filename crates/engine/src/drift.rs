//! Drift: live state compared with what was last applied. Read-only.

use crate::{Address, ApiCalls, Kind, Live};
use engine_state::StateDocument;
use serde::Serialize;
use serde_json::Value as Json;
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

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
    /// Resources compared.
    pub checked: usize,
    pub drifted: Vec<ResourceDrift>,
    /// Spec resources never applied (not drift; listed for information).
    pub not_applied: Vec<Address>,
    pub api_calls: ApiCalls,
}

impl DriftReport {
    /// No resource drifted.
    pub fn is_clean(&self) -> bool {
        self.drifted.is_empty()
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
