//! A resource as the spec wants it.

use crate::{Address, Value};
use std::collections::{BTreeMap, BTreeSet};

/// One desired resource: produced by a provider's expansion of the spec.
#[derive(Debug, Clone, PartialEq)]
pub struct ResourceSpec {
    pub address: Address,
    /// The kind that manages it, e.g. `aws_subnet`.
    pub kind: String,
    /// Desired attributes; references to other resources become graph edges.
    pub attributes: BTreeMap<String, Value>,
    /// Extra ordering edges that no attribute expresses.
    pub depends_on: Vec<Address>,
    /// Ordering after resources another provider may or may not define (OpenBao's
    /// configuration after its server, when the spec makes the server): kept only for the
    /// addresses the graph has.
    pub after_if_present: Vec<Address>,
    /// Refuses destroy unless the run confirms protected resources.
    pub protected: bool,
    /// A destroy removes it from state and leaves it in place (deleting it loses data), unless
    /// the run asks to delete what is retained. Unlike `protected`, what it needs still goes.
    pub retained: bool,
    /// Handed over to another manager once a resource is applied (see [`HandOver`]).
    pub hand_over: Option<HandOver>,
}

/// A resource the engine creates and then hands over, as the reference hands the Flux
/// Operator's release to Flux by removing it from its state: once `after` is applied in the
/// same run, the state moves the resource to its `handed_over` list. From then on plans neither
/// read nor change it, unless something it needs is created again (a new cluster), which makes
/// it again; a destroy deletes it with the rest. A spec that stops handing it over takes it back: the next
/// plan reads it by its recorded id and records it again.
#[derive(Debug, Clone, PartialEq)]
pub struct HandOver {
    pub after: Address,
    /// Who manages it then, e.g. `Flux`.
    pub to: String,
}

impl ResourceSpec {
    /// A resource of `kind` at `address` with no attributes yet.
    pub fn new(address: Address, kind: &str) -> Self {
        ResourceSpec {
            address,
            kind: kind.to_string(),
            attributes: BTreeMap::new(),
            depends_on: Vec::new(),
            after_if_present: Vec::new(),
            protected: false,
            retained: false,
            hand_over: None,
        }
    }

    /// Hands this resource over to `to` once `after` is applied (builder style; see
    /// [`HandOver`]).
    pub fn hand_over_after(mut self, after: &Address, to: &str) -> Self {
        self.hand_over = Some(HandOver { after: after.clone(), to: to.to_string() });
        self
    }

    /// Sets an attribute (builder style).
    pub fn attr(mut self, name: &str, value: impl Into<Value>) -> Self {
        self.attributes.insert(name.to_string(), value.into());
        self
    }

    /// Adds an ordering dependency (builder style).
    pub fn after(mut self, address: &Address) -> Self {
        self.depends_on.push(address.clone());
        self
    }

    /// Orders this resource after `address` when the graph holds it, and ignores it otherwise.
    pub fn after_if_present(mut self, address: &Address) -> Self {
        self.after_if_present.push(address.clone());
        self
    }

    /// Every address of this spec this resource depends on: references and explicit edges.
    pub fn dependencies(&self) -> BTreeSet<Address> {
        self.attributes
            .values()
            .flat_map(|v| v.references())
            .filter(|r| r.spec.is_none())
            .map(|r| r.address.clone())
            .chain(self.depends_on.iter().cloned())
            .collect()
    }

    /// References to other specs of the run ([`Value::reference_in`]).
    pub fn cross_references(&self) -> Vec<&crate::value::Reference> {
        self.attributes.values().flat_map(|v| v.references()).filter(|r| r.spec.is_some()).collect()
    }
}
