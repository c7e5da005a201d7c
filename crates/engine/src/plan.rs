//! The typed plan: what a run will do to each resource, field by field.

use crate::{Address, ApiCalls, Live};
use serde::Serialize;
use serde_json::Value as Json;
use std::collections::HashMap;

/// What happens to one resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Action {
    Create,
    /// Changed in place.
    Update,
    /// Deleted, then created again (a field the cloud cannot change differs).
    Replace,
    Delete,
    /// Found in the cloud by its ownership tags but missing from state (a run died between
    /// creating it and recording it): recorded, no API call.
    Adopt,
    /// Removed from state and left in the cloud: what a destroy keeps whole because deleting
    /// it loses data (OpenBao's kv mounts), unless the run asks to delete it. No API call.
    Forget,
    NoOp,
}

impl Action {
    /// The plan symbol: `+`, `~`, `-/+`, `-`, ` `.
    pub fn symbol(self) -> &'static str {
        match self {
            Action::Create => "+",
            Action::Update => "~",
            Action::Replace => "-/+",
            Action::Delete => "-",
            Action::Adopt => "<=",
            Action::Forget => "=>",
            Action::NoOp => " ",
        }
    }
}

/// A field's value after apply.
#[derive(Debug, Clone, PartialEq)]
pub enum PlannedValue {
    Known(Json),
    /// Known only after apply (another resource's output that does not exist yet).
    Unknown,
}

/// One field that changes.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldChange {
    pub name: String,
    /// The live value (`None` on create).
    pub before: Option<Json>,
    pub after: PlannedValue,
    /// This field alone forces the resource to be replaced.
    pub forces_replacement: bool,
}

/// The plan for one resource.
#[derive(Debug, Clone, PartialEq)]
pub struct ResourceChange {
    pub address: Address,
    pub kind: String,
    pub action: Action,
    /// The current cloud id, if the resource exists.
    pub id: Option<String>,
    /// Changed fields (all desired fields on create, the live ones on delete).
    pub fields: Vec<FieldChange>,
    /// What this resource depends on (desired, or recorded in state for deletes).
    pub dependencies: Vec<Address>,
    pub protected: bool,
    /// A destroy forgets it rather than deleting it (see [`Action::Forget`]).
    pub retained: bool,
}

/// Whether a plan builds the spec or tears it down.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PlanMode {
    Apply,
    Destroy,
}

/// Counts of a plan, as in `Plan: 41 to add, 0 to change, 0 to destroy.`
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Summary {
    pub add: usize,
    pub change: usize,
    pub destroy: usize,
    /// Resources found by their ownership tags and recorded into state.
    pub adopt: usize,
    /// Resources a destroy removes from state and leaves in place.
    pub forget: usize,
}

/// A plan: every selected resource with its action, in dependency order.
#[derive(Debug, Clone)]
pub struct Plan {
    pub spec: String,
    pub mode: PlanMode,
    /// Serial and lineage of the state the plan was made from; apply refuses a changed state.
    pub state_serial: u64,
    pub state_lineage: String,
    pub changes: Vec<ResourceChange>,
    /// Resources kept by a destroy because they are protected (or a protected one needs them).
    pub kept: Vec<Address>,
    /// How many resources were read from the cloud for this plan.
    pub refreshed: usize,
    /// API calls the refresh made.
    pub api_calls: ApiCalls,
    /// Resources this apply hands over to another manager once what they wait for is applied
    /// (address, and who manages them then: `Flux`); see [`crate::resource::HandOver`].
    pub handing_over: Vec<(Address, String)>,
    /// Resources left out of this run (with what needs them) because they need a value of
    /// another spec that no spec of the run has or makes, and why ([`crate::Value::reference_in`]).
    pub left_out: Vec<(Address, String)>,
    pub(crate) prior: HashMap<Address, Live>,
}

impl Plan {
    /// Counts: a replace counts as one add and one destroy.
    pub fn summary(&self) -> Summary {
        let mut s = Summary::default();
        for c in &self.changes {
            match c.action {
                Action::Create => s.add += 1,
                Action::Update => s.change += 1,
                Action::Replace => {
                    s.add += 1;
                    s.destroy += 1
                }
                Action::Delete => s.destroy += 1,
                Action::Adopt => s.adopt += 1,
                Action::Forget => s.forget += 1,
                Action::NoOp => {}
            }
        }
        s
    }

    /// Whether applying would change anything.
    pub fn has_changes(&self) -> bool {
        self.changes.iter().any(|c| c.action != Action::NoOp) || !self.handing_over.is_empty()
    }

    /// The change of `address`, if it is in the plan.
    pub fn change(&self, address: &str) -> Option<&ResourceChange> {
        self.changes.iter().find(|c| c.address.as_str() == address)
    }

    /// Changes that do something.
    pub fn actions(&self) -> impl Iterator<Item = &ResourceChange> {
        self.changes.iter().filter(|c| c.action != Action::NoOp)
    }
}
