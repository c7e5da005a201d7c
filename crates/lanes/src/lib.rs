//! The one wiring of a lane: which providers make it, how they reach their clouds, OpenBao
//! and the new cluster, and the bridges between them (AWS Secrets Manager as OpenBao's secret
//! store and the bootstrap's Secret source, the S3 snapshot bucket as OpenBao's snapshot
//! store, EKS tokens for the cluster's API server, what the bootstrap does on EKS).
//!
//! The `engine` binary, library users and every end-to-end test build their providers here,
//! with [`LaneBuilder`]; tests override only how the peers are reached:
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use engine::spec::SpecSource;
//! use engine_lanes::LaneBuilder;
//!
//! let spec = SpecSource::from_file(std::path::Path::new("specs/aws.toml"))?;
//! let lane = LaneBuilder::new(&spec).build().await;
//! let engine = lane.add_to(engine::Engine::builder().spec(spec)).build()?;
//! let plan = engine.plan().await?;
//! # Ok(()) }
//! ```
//!
//! The crates the lane joins do not depend on each other; only this one knows them all.

mod bridges;
mod builder;
pub mod profiles;

pub use bridges::{GcpSecretManager, SecretsManager};
pub use builder::{
    BOOTSTRAP_PREFIX, GCP_ENDPOINT_ENV, GCP_OPENBAO_PREFIX, Lane, LaneBuilder, OPENBAO_PREFIX,
    SecretStore, StateAccess, state_backend,
};
