//! An in-memory cloud for tests of the engine and of code built on it.
//!
//! [`FakeProvider`] expands a `[fake]` spec section into `fake_item` resources kept in a
//! [`FakeCloud`]. The cloud logs every operation in order, counts them as API calls, and fails
//! on demand ([`FakeCloud::fail`]): retryable errors a few times, a permanent error, or a panic.
//! Changes made behind the engine's back ([`FakeCloud::edit`], [`FakeCloud::remove`]) show up
//! as drift.
//!
//! ```toml
//! [fake.items.net]
//! size = 1
//!
//! [fake.items.subnet]
//! parent = "net"          # a reference to the item `net`'s id: an edge of the graph
//! labels = ["b", "a"]     # compared as a set
//! secret = "hunter2"      # sensitive: never in plans or state
//! protected = true        # kept by destroy unless confirmed
//! retained = true         # forgotten by destroy (left in place) unless deleting is asked
//! ```

use crate::spec::{FieldPath, SpecErrors, SpecSource};
use crate::{
    Address, ApiCall, ApiCallCounter, ApiCalls, Context, Found, Kind, KindError, KindResult, Live,
    LiveOf, MANAGED_BY, Outcome, Provider, Requests, ResourceSpec, TAG_ADDRESS, TAG_MANAGED_BY,
    TAG_SPEC, Tags, Typed, TypedKind, Update, Value,
};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

#[cfg(test)]
mod core_tests;

/// The kind's name.
pub const FAKE_ITEM: &str = "fake_item";

/// The fields the planner sees change between a kind's `live` and `desired` attributes, each
/// with whether it forces a replacement: the engine's own diff, for kinds' unit tests.
pub fn changed_fields<A: crate::Attributes>(live: &A, desired: &A) -> Vec<(&'static str, bool)> {
    let (Ok(live), Ok(desired)) = (crate::encode("test", live), crate::encode("test", desired))
    else {
        return vec![];
    };
    crate::kind::changed_fields(A::FIELDS, &live, &desired)
        .map(|f| (f.name, f.update == crate::FieldUpdate::Replace))
        .collect()
}

/// The attributes of a `fake_item`.
#[derive(crate::Attributes, Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct Item {
    #[attr(replace)]
    pub name: String,
    #[attr(in_place)]
    #[serde(default)]
    pub size: i64,
    #[attr(in_place, unordered)]
    #[serde(default)]
    pub labels: Vec<String>,
    /// Another item's id.
    #[attr(replace)]
    pub parent: Option<String>,
    #[attr(in_place, sensitive)]
    pub secret: Option<String>,
    #[attr(in_place, tags)]
    #[serde(default)]
    pub tags: Tags,
    /// Set by the cloud.
    #[attr(computed)]
    pub arn: Option<String>,
}

/// An operation of the fake cloud.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Op {
    Read,
    Create,
    Update,
    Delete,
}

impl Op {
    fn name(self) -> &'static str {
        match self {
            Op::Read => "ListItems",
            Op::Create => "CreateItem",
            Op::Update => "UpdateItem",
            Op::Delete => "DeleteItem",
        }
    }
}

/// How an operation on one address fails.
#[derive(Debug, Clone, PartialEq)]
pub enum Fault {
    /// Retryable errors (code `Busy`) for the next `n` tries, then success.
    Busy(u32),
    /// Errors of dependents still letting go (code `InUse`, draining) for the next `n` tries,
    /// then success.
    InUse(u32),
    /// A permanent error (code `Denied`) every time.
    Denied,
    /// The kind panics.
    Panic,
    /// The operation takes effect but its answer is lost (an error whose outcome is unknown),
    /// for the next `n` tries.
    AnswerLost(u32),
    /// A create makes the item without its tags (as a cloud that tags in a second call does)
    /// and its answer is lost, for the next `n` tries.
    MadeUntagged(u32),
}

#[derive(Default)]
struct Cloud {
    /// Items by id.
    items: BTreeMap<String, Item>,
    next_id: u64,
    faults: HashMap<(String, Op), Fault>,
    log: Vec<(Op, String)>,
}

/// The fake cloud: items by id, faults, and a log of operations.
#[derive(Default)]
pub struct FakeCloud {
    cloud: Mutex<Cloud>,
    calls: ApiCallCounter,
}

impl FakeCloud {
    fn with<T>(&self, f: impl FnOnce(&mut Cloud) -> T) -> T {
        f(&mut self.cloud.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// Makes `op` on the item at `address` fail as `fault` says.
    pub fn fail(&self, address: &str, op: Op, fault: Fault) {
        self.with(|c| c.faults.insert((address.to_string(), op), fault));
    }

    /// Lets `op` on the item at `address` succeed again.
    pub fn heal(&self, address: &str, op: Op) {
        self.with(|c| c.faults.remove(&(address.to_string(), op)));
    }

    /// Operations so far, in order, with the address they were for (reads: the kind's name).
    pub fn log(&self) -> Vec<(Op, String)> {
        self.with(|c| c.log.clone())
    }

    /// Forgets the log.
    pub fn clear_log(&self) {
        self.with(|c| c.log.clear());
    }

    /// The addresses of the items that exist, in id order.
    pub fn addresses(&self) -> Vec<String> {
        self.with(|c| c.items.values().filter_map(|i| i.tags.get(TAG_ADDRESS).cloned()).collect())
    }

    /// How many items exist, tagged or not.
    pub fn len(&self) -> usize {
        self.with(|c| c.items.len())
    }

    /// Whether no item exists.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The item at `address`, if it exists.
    pub fn item(&self, address: &str) -> Option<Item> {
        self.with(|c| {
            c.items
                .values()
                .find(|i| i.tags.get(TAG_ADDRESS).map(String::as_str) == Some(address))
                .cloned()
        })
    }

    /// Changes the item at `address` behind the engine's back.
    pub fn edit(&self, address: &str, change: impl FnOnce(&mut Item)) {
        self.with(|c| {
            if let Some(item) = c
                .items
                .values_mut()
                .find(|i| i.tags.get(TAG_ADDRESS).map(String::as_str) == Some(address))
            {
                change(item);
            }
        });
    }

    /// Deletes the item at `address` behind the engine's back.
    pub fn remove(&self, address: &str) {
        self.with(|c| {
            c.items.retain(|_, i| i.tags.get(TAG_ADDRESS).map(String::as_str) != Some(address))
        });
    }

    /// Logs and counts `op`, then applies its fault, if any.
    fn call(&self, op: Op, address: &str) -> Result<(), KindError> {
        self.calls.record(&ApiCall { service: "fake".into(), operation: op.name().into() });
        let fault = self.with(|c| {
            c.log.push((op, address.to_string()));
            let key = (address.to_string(), op);
            match c.faults.get_mut(&key) {
                Some(Fault::Busy(0)) => {
                    c.faults.remove(&key);
                    None
                }
                Some(Fault::Busy(n)) => {
                    *n -= 1;
                    Some(Fault::Busy(*n))
                }
                Some(Fault::InUse(0)) => {
                    c.faults.remove(&key);
                    None
                }
                Some(Fault::InUse(n)) => {
                    *n -= 1;
                    Some(Fault::InUse(*n))
                }
                Some(Fault::AnswerLost(_) | Fault::MadeUntagged(_)) | None => None,
                Some(other) => Some(other.clone()),
            }
        });
        match fault {
            None => Ok(()),
            Some(Fault::Busy(_)) => {
                Err(KindError::retryable(format!("fake:{}: {address} is busy", op.name()))
                    .with_code("Busy"))
            }
            Some(Fault::InUse(_)) => {
                Err(KindError::draining(format!("fake:{}: {address} is still in use", op.name()))
                    .with_code("InUse"))
            }
            Some(Fault::Denied) => {
                Err(KindError::new(format!("fake:{}: {address}: access denied", op.name()))
                    .with_code("Denied"))
            }
            Some(Fault::Panic) => panic!("fake cloud: {} of {address} panics", op.name()),
            Some(Fault::AnswerLost(_) | Fault::MadeUntagged(_)) => Ok(()),
        }
    }

    /// After `op` took effect: an error whose outcome is unknown when its answer is to be lost.
    fn answer(&self, op: Op, address: &str) -> Result<(), KindError> {
        let lost = self.with(|c| {
            let key = (address.to_string(), op);
            match c.faults.get_mut(&key) {
                Some(Fault::AnswerLost(0) | Fault::MadeUntagged(0)) => {
                    c.faults.remove(&key);
                    false
                }
                Some(Fault::AnswerLost(n) | Fault::MadeUntagged(n)) => {
                    *n -= 1;
                    true
                }
                _ => false,
            }
        });
        if lost {
            return Err(KindError::outcome_unknown(format!(
                "fake:{}: {address}: connection reset before the answer",
                op.name()
            )));
        }
        Ok(())
    }
}

/// The `fake_item` kind on a [`FakeCloud`].
pub struct FakeItems(pub Arc<FakeCloud>);

impl TypedKind for FakeItems {
    type Attrs = Item;
    const NAME: &'static str = FAKE_ITEM;

    async fn read(&self, _: &Context, requests: &Requests<Self>) -> Found<Self> {
        self.0.call(Op::Read, FAKE_ITEM)?;
        let items = self.0.with(|c| c.items.clone());
        Ok(requests
            .iter()
            .map(|r| {
                let by_id = r.id.as_ref().and_then(|id| items.get_key_value(id));
                let by_tag = || items.iter().find(|(_, i)| crate::ownership::adoptable(r, i));
                // What a create that never ended made before it could tag it, by name.
                let named = |i: &Item| r.desired.as_ref().is_some_and(|d| d.name == i.name);
                let begun = |i: &Item| crate::ownership::untagged_but_begun(r, i);
                let by_name = || items.iter().find(|(_, i)| named(i) && begun(i));
                let found = by_id.or_else(by_tag).or_else(by_name);
                found.map(|(id, i)| Live::new(id.clone(), i.clone()))
            })
            .collect())
    }

    async fn create(&self, ctx: &Context, desired: &Self::Attrs) -> Outcome<Self> {
        let address = ctx.address().map(Address::as_str).unwrap_or_default();
        self.0.call(Op::Create, address)?;
        if let Some(parent) = &desired.parent
            && !self.0.with(|c| c.items.contains_key(parent))
        {
            return Err(KindError::new(format!("fake:CreateItem: parent {parent} does not exist")));
        }
        let untagged = self.0.with(|c| {
            let fault = c.faults.get(&(address.to_string(), Op::Create));
            matches!(fault, Some(Fault::MadeUntagged(n)) if *n > 0)
        });
        let live = self.0.with(|c| {
            c.next_id += 1;
            let id = format!("item-{}", c.next_id);
            let mut item = desired.clone();
            item.arn = Some(format!("fake:item/{id}"));
            if untagged {
                item.tags.clear();
            }
            c.items.insert(id.clone(), item.clone());
            Live::new(id, item)
        });
        self.0.answer(Op::Create, address)?;
        Ok(live)
    }

    async fn update(&self, ctx: &Context, update: Update<'_, Self>) -> Outcome<Self> {
        let Update { current, desired, changes } = update;
        self.0.call(Op::Update, ctx.address().map(Address::as_str).unwrap_or_default())?;
        self.0.with(|c| {
            let item = c.items.get_mut(&current.id).ok_or_else(|| {
                KindError::new(format!("fake:UpdateItem: {} is gone", current.id))
            })?;
            if changes.size {
                item.size = desired.size;
            }
            if changes.labels {
                item.labels = desired.labels.clone();
            }
            if changes.secret {
                item.secret = desired.secret.clone();
            }
            if changes.tags {
                item.tags = desired.tags.clone();
            }
            Ok(Live::new(current.id.clone(), item.clone()))
        })
    }

    async fn delete(&self, ctx: &Context, current: &LiveOf<Self>) -> KindResult<()> {
        self.0.call(Op::Delete, ctx.address().map(Address::as_str).unwrap_or_default())?;
        self.0.with(|c| {
            if c.items.values().any(|i| i.parent.as_deref() == Some(current.id.as_str())) {
                return Err(KindError::retryable(format!(
                    "fake:DeleteItem: {} still has children",
                    current.id
                ))
                .with_code("DependencyViolation"));
            }
            c.items.remove(&current.id);
            Ok(())
        })
    }
}

/// One item of the `[fake.items.<name>]` section.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ItemSpec {
    #[serde(default)]
    size: i64,
    #[serde(default)]
    labels: Vec<String>,
    #[serde(default)]
    parent: Option<String>,
    /// The parent in another spec of the run: `SPEC/ITEM`.
    #[serde(default)]
    parent_in: Option<String>,
    #[serde(default)]
    secret: Option<String>,
    #[serde(default)]
    protected: bool,
    #[serde(default)]
    retained: bool,
    /// Handed over to "Flux" once the named item is applied.
    #[serde(default)]
    hand_over_after: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FakeSection {
    #[serde(default)]
    items: BTreeMap<String, ItemSpec>,
}

/// The address of the item named `name`.
pub fn item_address(name: &str) -> Address {
    Address::new(format!("fake.item.{name}"))
}

/// Expands `[fake]` into `fake_item` resources on a [`FakeCloud`].
pub struct FakeProvider {
    lane: &'static str,
    cloud: Arc<FakeCloud>,
}

impl FakeProvider {
    /// A provider of `lane` (`aws` or `gcp`) on `cloud`.
    pub fn new(lane: &'static str, cloud: Arc<FakeCloud>) -> Self {
        FakeProvider { lane, cloud }
    }
}

impl Provider for FakeProvider {
    fn lane(&self) -> &'static str {
        self.lane
    }

    fn sections(&self) -> &'static [&'static str] {
        &["fake"]
    }

    fn expand(&self, spec: &SpecSource) -> Result<Vec<ResourceSpec>, SpecErrors> {
        let Some(section) = spec.section::<FakeSection>("fake")? else {
            return Ok(vec![]);
        };
        let mut errors = Vec::new();
        let mut out = Vec::new();
        for (name, item) in &section.items {
            let address = item_address(name);
            let tags: Tags = BTreeMap::from([
                (TAG_MANAGED_BY.to_string(), MANAGED_BY.to_string()),
                (TAG_SPEC.to_string(), spec.name()),
                (TAG_ADDRESS.to_string(), address.to_string()),
            ]);
            let mut r = ResourceSpec::new(address, FAKE_ITEM)
                .attr("name", name.as_str())
                .attr("size", item.size)
                .attr(
                    "labels",
                    Value::List(item.labels.iter().map(|l| Value::from(l.as_str())).collect()),
                )
                .attr("tags", Value::string_map(tags.iter()));
            if let Some(secret) = &item.secret {
                r = r.attr("secret", secret.as_str());
            }
            if let Some(parent) = &item.parent {
                if !section.items.contains_key(parent) {
                    errors.push(spec.error(
                        &FieldPath::root("fake").key("items").key(name).key("parent"),
                        format!("no item `{parent}`"),
                    ));
                }
                r = r.attr("parent", Value::reference(&item_address(parent), "id"));
            }
            if let Some((other, parent)) = item.parent_in.as_deref().and_then(|p| p.split_once('/'))
            {
                r = r.attr("parent", Value::reference_in(other, &item_address(parent), "id"));
            }
            r.protected = item.protected;
            r.retained = item.retained;
            if let Some(after) = &item.hand_over_after {
                r = r.hand_over_after(&item_address(after), "Flux");
            }
            out.push(r);
        }
        if errors.is_empty() { Ok(out) } else { Err(spec.errors(errors)) }
    }

    fn kinds(&self) -> Vec<Arc<dyn Kind>> {
        vec![Typed::arc(FakeItems(self.cloud.clone()))]
    }

    fn api_calls(&self) -> ApiCalls {
        self.cloud.calls.snapshot()
    }
}
