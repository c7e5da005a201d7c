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
//! A runnable example with a provider that keeps its resources in memory (a real provider, such
//! as `engine_aws::AwsProvider`, plugs in the same way):
//!
//! ```
//! use async_trait::async_trait;
//! use engine::spec::{SpecErrors, SpecSource};
//! use engine::*;
//! use std::collections::HashMap;
//! use std::sync::{Arc, Mutex};
//!
//! /// A kind whose "cloud" is a map: id -> attributes.
//! #[derive(Default)]
//! struct Memory(Mutex<HashMap<String, Attrs>>);
//!
//! #[async_trait]
//! impl Kind for Memory {
//!     fn name(&self) -> &'static str { "memory_bucket" }
//!     fn fields(&self) -> &'static [Field] {
//!         const FIELDS: &[Field] = &[Field::replace("name"), Field::in_place("size"), Field::computed("id")];
//!         FIELDS
//!     }
//!     async fn read(&self, _: &Context, reqs: &[ReadRequest]) -> Result<Vec<Option<Live>>, KindError> {
//!         let cloud = self.0.lock().unwrap();
//!         Ok(reqs.iter().map(|r| {
//!             let id = r.id.clone().unwrap_or_else(|| r.address.to_string());
//!             cloud.get(&id).map(|a| Live { id, attributes: a.clone() })
//!         }).collect())
//!     }
//!     async fn create(&self, _: &Context, address: &Address, desired: &Attrs) -> Result<Live, KindError> {
//!         self.0.lock().unwrap().insert(address.to_string(), desired.clone());
//!         Ok(Live { id: address.to_string(), attributes: desired.clone() })
//!     }
//!     async fn update(&self, c: &Context, address: &Address, _: &Live, desired: &Attrs) -> Result<Live, KindError> {
//!         self.create(c, address, desired).await
//!     }
//!     async fn delete(&self, _: &Context, _: &Address, current: &Live) -> Result<(), KindError> {
//!         self.0.lock().unwrap().remove(&current.id);
//!         Ok(())
//!     }
//! }
//!
//! /// Expands `[buckets] sizes = [..]` into one resource per size.
//! struct MemoryProvider(Arc<Memory>);
//!
//! impl Provider for MemoryProvider {
//!     fn lane(&self) -> &'static str { "aws" }
//!     fn sections(&self) -> &'static [&'static str] { &["buckets"] }
//!     fn expand(&self, spec: &SpecSource) -> Result<Vec<ResourceSpec>, SpecErrors> {
//!         #[derive(serde::Deserialize)]
//!         struct Buckets { sizes: Vec<i64> }
//!         let b: Buckets = spec.section("buckets")?.expect("[buckets]");
//!         Ok(b.sizes.iter().enumerate().map(|(i, size)| {
//!             ResourceSpec::new(Address::new("aws.demo.bucket").index(&i.to_string()), "memory_bucket")
//!                 .attr("name", format!("bucket-{i}"))
//!                 .attr("size", *size)
//!         }).collect())
//!     }
//!     fn kinds(&self) -> Vec<Arc<dyn Kind>> { vec![self.0.clone()] }
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
//! let cloud = Arc::new(Memory::default());
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
//! cloud.0.lock().unwrap().get_mut("aws.demo.bucket[\"0\"]").unwrap().insert("size".into(), 9.into());
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
mod apply;
mod calls;
mod diff;
mod drift;
mod engine;
mod error;
mod graph;
mod kind;
mod observer;
mod plan;
mod provider;
mod refresh;
mod resource;
mod selection;
pub mod spec;
mod value;

pub use address::Address;
pub use apply::{ApplyReport, StepOutcome, StepResult};
pub use calls::{ApiCall, ApiCallCounter, ApiCalls};
pub use drift::{DriftReport, DriftStatus, FieldDrift, ResourceDrift};
pub use engine::{Engine, EngineBuilder};
pub use engine_state::{LocalBackend, StateDocument};
pub use error::EngineError;
pub use graph::{GraphFormat, ResourceGraph};
pub use kind::{Context, Field, FieldUpdate, Kind, KindError, Live, ReadRequest};
pub use observer::{Event, NullObserver, Observer};
pub use plan::{Action, FieldChange, Plan, PlanMode, PlannedValue, ResourceChange, Summary};
pub use provider::Provider;
pub use resource::ResourceSpec;
pub use selection::{Lane, Selection};
pub use value::{Attrs, Reference, Value};

/// Ownership tag: marks a resource as made by this engine.
pub const TAG_MANAGED_BY: &str = "engine:managed-by";
/// Ownership tag: the spec name that made the resource.
pub const TAG_SPEC: &str = "engine:spec";
/// Ownership tag: the resource's address in that spec.
pub const TAG_ADDRESS: &str = "engine:address";
/// Value of [`TAG_MANAGED_BY`].
pub const MANAGED_BY: &str = "engine";
