//! Providers: what a cloud plugs into the engine.

use crate::spec::{SpecErrors, SpecSource};
use crate::{ApiCalls, Kind, ResourceSpec};
use std::sync::Arc;

/// A cloud (or in-cluster) provider: expands its sections of the spec into resources and supplies
/// the kinds that manage them.
pub trait Provider: Send + Sync {
    /// The lane this provider serves (`aws`, `gcp`).
    fn lane(&self) -> &'static str;

    /// The top-level spec sections it owns (e.g. `network`).
    fn sections(&self) -> &'static [&'static str];

    /// Validates its sections of the spec and expands them into resources. Must not call any API.
    fn expand(&self, spec: &SpecSource) -> Result<Vec<ResourceSpec>, SpecErrors>;

    /// The kinds it implements.
    fn kinds(&self) -> Vec<Arc<dyn Kind>>;

    /// API calls made through this provider so far.
    fn api_calls(&self) -> ApiCalls;
}
