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
//! ```no_run
//! # async fn demo(provider: std::sync::Arc<dyn engine::Provider>) -> Result<(), engine::EngineError> {
//! use engine::{Engine, LocalBackend};
//!
//! let engine = Engine::builder()
//!     .spec_file("specs/aws.toml")
//!     .provider(provider)
//!     .state(LocalBackend::new("/tmp/aws.state.json"))
//!     .build()?;
//! let plan = engine.plan().await?;
//! println!("{} to add", plan.summary().add);
//! let report = engine.apply(&plan).await?;
//! assert!(report.is_success());
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
