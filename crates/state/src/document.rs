//! The state document: the last applied attributes of every resource, by address.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Version of the on-disk format. Bumped on incompatible changes.
pub const FORMAT_VERSION: u32 = 1;

/// The whole state of one spec.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StateDocument {
    /// On-disk format version ([`FORMAT_VERSION`]).
    pub version: u32,
    /// Name of the spec this state belongs to (the file stem of the spec, e.g. `aws`).
    pub spec: String,
    /// Incremented on every save.
    pub serial: u64,
    /// Random identifier given when the state is first created; never changes afterwards.
    pub lineage: String,
    /// Resources by address, sorted for stable diffs of the file.
    #[serde(default)]
    pub resources: BTreeMap<String, ResourceState>,
    /// Creates begun and not yet recorded, by address (the value is the kind): a run that died
    /// or lost an answer may have made these resources before it could tag or record them.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub creating: BTreeMap<String, String>,
    /// Resources the engine made and then handed over to another manager (the Flux Operator's
    /// release, to Flux), by address: no longer the engine's, never read, changed or deleted by
    /// it but by a destroy; kept so they are not created again, and so a spec that takes one
    /// back finds it.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub handed_over: BTreeMap<String, HandedOver>,
}

/// A resource handed over to another manager.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HandedOver {
    /// Who manages it now, e.g. `Flux`.
    pub to: String,
    /// The resource as the engine last recorded it.
    pub resource: ResourceState,
}

/// One resource as last applied.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResourceState {
    /// Resource kind, e.g. `aws_subnet`.
    pub kind: String,
    /// Cloud identifier (e.g. `subnet-0abc`), or a composite one for sub-resources.
    pub id: String,
    /// Attributes as read back from the cloud after the last apply (inputs and outputs).
    #[serde(default)]
    pub attributes: serde_json::Map<String, serde_json::Value>,
    /// Addresses this resource depended on when applied: deletes run in the reverse order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dependencies: Vec<String>,
    /// Guarded against destroy unless explicitly confirmed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub protected: bool,
    /// Removed from state, not deleted, by a destroy (unless it asks to delete it).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub retained: bool,
}

impl StateDocument {
    /// An empty state for `spec`, with a fresh lineage.
    pub fn new(spec: &str) -> Self {
        StateDocument {
            version: FORMAT_VERSION,
            spec: spec.to_string(),
            serial: 0,
            lineage: uuid::Uuid::new_v4().to_string(),
            resources: BTreeMap::new(),
            creating: BTreeMap::new(),
            handed_over: BTreeMap::new(),
        }
    }

    /// The resource at `address`, if any.
    pub fn get(&self, address: &str) -> Option<&ResourceState> {
        self.resources.get(address)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_through_json() {
        let mut doc = StateDocument::new("aws");
        doc.resources.insert(
            "aws.network.vpc.main".into(),
            ResourceState {
                kind: "aws_vpc".into(),
                id: "vpc-1".into(),
                attributes: serde_json::json!({"cidr_block": "10.0.0.0/16"})
                    .as_object()
                    .cloned()
                    .unwrap(),
                dependencies: vec![],
                protected: false,
                retained: false,
            },
        );
        let text = serde_json::to_string(&doc).unwrap();
        let back: StateDocument = serde_json::from_str(&text).unwrap();
        assert_eq!(doc, back);
        assert!(!text.contains("dependencies"), "empty lists are omitted");
        assert!(!text.contains("creating"), "no create under way: nothing written");
    }
}
