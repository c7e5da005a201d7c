//! The contract every resource kind implements.
//!
//! Kinds are written against [`TypedKind`] (attributes as a Rust struct with a derived field
//! table); the engine drives them through the dynamic [`Kind`] that [`Typed`] adapts them to.

mod context;
mod error;
mod field;
mod typed;

pub use context::{Context, RunReads};
pub use error::KindError;
pub use field::{Field, FieldUpdate, Normalize, is_redacted, redact};
pub(crate) use typed::changed_fields;
pub use typed::{
    Attributes, Changes, Found, KindResult, LiveOf, Outcome, ReadResult, Requests, Typed,
    TypedKind, Update, decode, encode,
};

use crate::{Address, Attrs, RetryPolicy};
use async_trait::async_trait;

/// A resource as it exists in the cloud: its id and its attributes, as JSON ([`Attrs`], what
/// the engine diffs and stores) or as a kind's own struct ([`TypedKind::Attrs`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Live<A = Attrs> {
    /// The cloud id (or a composite id for sub-resources).
    pub id: String,
    /// Attributes read back: inputs in the same shape as desired, plus outputs.
    pub attributes: A,
}

impl<A> Live<A> {
    pub fn new(id: impl Into<String>, attributes: A) -> Self {
        Live { id: id.into(), attributes }
    }
}

/// One resource whose live state a refresh wants.
#[derive(Debug, Clone)]
pub struct ReadRequest<A = Attrs> {
    pub address: Address,
    /// The id recorded in state, if any.
    pub id: Option<String>,
    /// The desired attributes, if the resource is in the spec: those already known (parents'
    /// ids resolved from what is live). Lets sub-resources without tags (routes, associations)
    /// and resources named by the spec be found.
    pub desired: Option<A>,
    /// Desired attributes known only after apply (references to what does not exist yet).
    pub unknown: Vec<String>,
    /// A create of this resource began and its outcome was never recorded (a run died, or an
    /// answer was lost): found by the name the spec gives it and carrying no ownership tags, it
    /// is what that create made before it could tag it (see `ownership::untagged_but_begun`).
    pub create_began: bool,
}

/// A kind of cloud resource: how to read, create, update and delete it. The engine's dynamic
/// view; kinds implement [`TypedKind`] and are wrapped in [`Typed`].
///
/// `read` is batched: it receives every resource of this kind that a refresh wants at once and
/// should answer with as few calls as possible (one filtered `Describe*`), finding resources by
/// id when known and otherwise by the engine's ownership tags, so a resource created by a run that
/// died before writing state is adopted instead of created twice.
#[async_trait]
pub trait Kind: Send + Sync {
    /// The kind's name, e.g. `aws_subnet`.
    fn name(&self) -> &'static str;

    /// The fields the planner diffs and how each is changed.
    fn fields(&self) -> &'static [Field];

    /// How the executor retries this kind's retryable errors (`None`: the engine's default).
    fn retry_policy(&self) -> Option<RetryPolicy> {
        None
    }

    /// Reads the live state of `requests`; the answer is aligned with them (`None`: not found).
    async fn read(
        &self,
        ctx: &Context,
        requests: &[ReadRequest],
    ) -> Result<Vec<Option<Live>>, KindError>;

    /// Creates the resource and returns it as read back.
    async fn create(
        &self,
        ctx: &Context,
        address: &Address,
        desired: &Attrs,
    ) -> Result<Live, KindError>;

    /// Changes the in-place fields that differ and returns the resource as read back.
    async fn update(
        &self,
        ctx: &Context,
        address: &Address,
        current: &Live,
        desired: &Attrs,
    ) -> Result<Live, KindError>;

    /// Deletes the resource, waiting until the cloud lets its dependencies go.
    async fn delete(
        &self,
        ctx: &Context,
        address: &Address,
        current: &Live,
    ) -> Result<(), KindError>;
}
