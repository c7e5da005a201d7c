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

    /// What an OpenTofu resource instance of `resource_type` (id `id`, attributes as its state
    /// records them) is in this provider's kinds: the kind, the id as the kind records it and
    /// the attributes under the kind's field names (several resources when the engine splits
    /// it: an internet gateway and its attachment). `None` for a type it does not know.
    fn tofu_resources(
        &self,
        resource_type: &str,
        id: &str,
        attributes: &serde_json::Value,
    ) -> Option<Vec<crate::tofu_import::TofuResource>> {
        let _ = (resource_type, id, attributes);
        None
    }
}
