//! The core of the infrastructure engine.
//!
//! A spec (TOML) is expanded by [`Provider`]s into [`ResourceSpec`]s, which form a
//! [`ResourceGraph`] through their references. A run refreshes the live state of every resource
//! through the providers' [`Kind`]s, diffs it against the spec into a typed [`Plan`], and executes
//! the plan in dependency order with bounded concurrency, journaling each step into the state.
//! [`Engine::drift`] is the same refresh compared with what was last applied, read-only.
//!
//! This crate knows no cloud and no terminal: clouds come in as [`Provider`] implementations,
//! terminals as an [`Observer`].
//!
//! A runnable example: a kind whose "cloud" is a map, and a provider that expands a section of
//! the spec into resources of that kind (a real provider, such as the AWS one, plugs in the same
//! way; [`testing`] has a fuller in-memory provider for tests):
//!
//! ```
//! use async_trait::async_trait;
//! use engine::spec::{SpecErrors, SpecSource};
//! use engine::*;
//! use serde::{Deserialize, Serialize};
//! use std::collections::HashMap;
//! use std::sync::{Arc, Mutex};
//!
//! /// A bucket's attributes, declared once: how each field changes.
//! #[derive(Attributes, Serialize, Deserialize, Clone, Debug, PartialEq)]
//! struct Bucket {
//!     #[attr(replace)]
//!     name: String,
//!     #[attr(in_place)]
//!     size: i64,
//! }
//!
//! /// The "cloud": id -> bucket.
//! type Cloud = Arc<Mutex<HashMap<String, Bucket>>>;
//!
//! struct Buckets(Cloud);
//!
//! impl TypedKind for Buckets {
//!     type Attrs = Bucket;
//!     const NAME: &'static str = "memory_bucket";
//!
//!     async fn read(&self, _: &Context, reqs: &Requests<Self>) -> Found<Self> {
//!         let cloud = self.0.lock().unwrap();
//!         Ok(reqs.iter().map(|r| {
//!             let id = r.id.clone().unwrap_or_else(|| r.address.to_string());
//!             cloud.get(&id).map(|b| Live::new(id, b.clone()))
//!         }).collect())
//!     }
//!     async fn create(&self, ctx: &Context, desired: &Self::Attrs) -> Outcome<Self> {
//!         let id = ctx.address().unwrap().to_string();
//!         self.0.lock().unwrap().insert(id.clone(), desired.clone());
//!         Ok(Live::new(id, desired.clone()))
//!     }
//!     async fn update(&self, _: &Context, update: Update<'_, Self>) -> Outcome<Self> {
//!         let Update { current, desired, changes } = update;
//!         assert!(changes.size && !changes.name, "only the changed fields are marked");
//!         self.0.lock().unwrap().get_mut(&current.id).unwrap().size = desired.size;
//!         Ok(Live::new(current.id.clone(), desired.clone()))
//!     }
//!     async fn delete(&self, _: &Context, current: &LiveOf<Self>) -> KindResult<()> {
//!         self.0.lock().unwrap().remove(&current.id);
//!         Ok(())
//!     }
//! }
//!
//! /// Expands `[buckets] sizes = [..]` into one resource per size.
//! struct MemoryProvider(Cloud);
//!
//! impl Provider for MemoryProvider {
//!     fn lane(&self) -> &'static str { "aws" }
//!     fn sections(&self) -> &'static [&'static str] { &["buckets"] }
//!     fn expand(&self, spec: &SpecSource) -> Result<Vec<ResourceSpec>, SpecErrors> {
//!         #[derive(serde::Deserialize)]
//!         struct Section { sizes: Vec<i64> }
//!         let b: Section = spec.section("buckets")?.expect("[buckets]");
//!         Ok(b.sizes.iter().enumerate().map(|(i, size)| {
//!             ResourceSpec::new(Address::new("aws.demo.bucket").index(&i.to_string()), "memory_bucket")
//!                 .attr("name", format!("bucket-{i}"))
//!                 .attr("size", *size)
//!         }).collect())
//!     }
//!     fn kinds(&self) -> Vec<Arc<dyn Kind>> { vec![Typed::arc(Buckets(self.0.clone()))] }
//!     fn api_calls(&self) -> ApiCalls { ApiCalls::default() }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), EngineError> {
//! let spec = r#"
//! [globals]
//! cloud = "aws"
//! region = "eu-west-3"
//! cluster_name = "demo"
//! domain = "example.org"
//!
//! [buckets]
//! sizes = [1, 2]
//! "#;
//! let dir = tempfile::tempdir().unwrap();
//! let cloud = Cloud::default();
//! let engine = Engine::builder()
//!     .spec_str("demo.toml", "demo", spec)
//!     .provider(Arc::new(MemoryProvider(cloud.clone())))
//!     .state(LocalBackend::new(dir.path().join("demo.state.json")))
//!     .build()?;
//!
//! let plan = engine.plan().await?;
//! assert_eq!(plan.summary().add, 2);
//! let report = engine.apply(&plan).await?;
//! assert!(report.is_success());
//! assert!(!engine.plan().await?.has_changes());
//!
//! // Someone resizes a bucket behind the engine's back: drift names the field.
//! cloud.lock().unwrap().get_mut("aws.demo.bucket[\"0\"]").unwrap().size = 9;
//! let drift = engine.drift().await?;
//! assert_eq!(drift.drifted.len(), 1);
//! assert!(matches!(&drift.drifted[0].status, DriftStatus::Modified { fields } if fields[0].name == "size"));
//! // Apply puts it back.
//! let repair = engine.plan().await?;
//! assert_eq!(repair.summary().change, 1);
//! engine.apply(&repair).await?;
//! assert!(engine.drift().await?.is_clean());
//! # Ok(()) }
//! ```

mod address;
mod api;
mod apply;
mod blocking;
mod calls;
mod cross_spec;
mod diff;
mod drift;
mod error;
mod graph;
mod interrupt;
mod kind;
pub mod normalize;
mod observer;
pub mod ownership;
mod plan;
mod provider;
mod read_slots;
mod refresh;
mod resource;
pub mod retry;
mod secret;
mod selection;
pub mod tofu_import;
/// What a resource kind's file needs, in one line: `use engine::prelude::*;`.
pub mod prelude {
    pub use crate::{
        Attributes, Context, Found, KindError, KindResult, Live, LiveOf, Outcome, ReadRequest,
        Requests, Secret, Tags, TypedKind, Update,
    };
}
pub mod spec;
pub mod testing;
mod value;
pub mod wait;
mod workspace;

// The derive macro's generated code names `::engine::...`, also inside this crate.
extern crate self as engine;

pub use address::Address;
pub use api::{ChangedScope, Engine, EngineBuilder, state_path_of};
pub use apply::{ApplyReport, StepOutcome, StepResult};
pub use blocking::Blocking;
pub use calls::{ApiCall, ApiCallCounter, ApiCalls};
pub use drift::{DriftAgainst, DriftReport, DriftStatus, FieldDrift, ResourceDrift};
pub use engine_derive::Attributes;
pub use engine_state::{Backend, DEFAULT_LEASE, LocalBackend, RemoteBackend, StateDocument};
pub use error::EngineError;
pub use graph::{GraphFormat, ResourceGraph};
pub use interrupt::Interrupt;
pub use kind::{
    Attributes, Changes, Context, Field, FieldUpdate, Found, Kind, KindError, KindResult, Live,
    LiveOf, Normalize, Outcome, ReadRequest, ReadResult, Requests, RunReads, Typed, TypedKind,
    Update, decode, encode, is_redacted, redact,
};
pub use observer::{Event, NullObserver, Observer};
pub use plan::{Action, FieldChange, Plan, PlanMode, PlannedValue, ResourceChange, Summary};
pub use provider::Provider;
pub use read_slots::bounded;
pub use resource::ResourceSpec;
pub use retry::RetryPolicy;
pub use secret::Secret;
pub use selection::{Lane, Selection};
pub use value::{Attrs, Reference, Tags, Value};
pub use workspace::{Gate, Workspace};

/// Ownership tag: marks a resource as made by this engine.
pub const TAG_MANAGED_BY: &str = "engine:managed-by";
/// Ownership tag: the spec name that made the resource.
pub const TAG_SPEC: &str = "engine:spec";
/// Ownership tag: the resource's address in that spec.
pub const TAG_ADDRESS: &str = "engine:address";
/// Ownership tag: the lineage of the state that made the resource (created at first apply and
/// kept in state). Adoption of a resource that state does not record requires it, so two
/// deployments from specs of the same name never take over each other's resources.
pub const TAG_LINEAGE: &str = "engine:lineage";
/// Value of [`TAG_MANAGED_BY`].
pub const MANAGED_BY: &str = "engine";
