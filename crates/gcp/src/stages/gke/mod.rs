//! The GKE stage (`[gke]`): the cluster on the network stage's subnetwork and ranges, and its
//! node pools. The section (`spec.rs`) and its expansion (`expand.rs`) only; the kinds live in
//! `crate::container`.

mod expand;
pub mod spec;

pub use expand::STAGE;

use super::network::spec::NetworkSpec;
use super::project::GcpSection;
use engine::ResourceSpec;
use engine::spec::{FieldPath, Globals, SpecErrors, SpecSource};

/// Validates `[gke]` (if present) against `[network]` and expands it.
pub fn expand(
    spec: &SpecSource,
    globals: &Globals,
    gcp: &GcpSection,
) -> Result<Vec<ResourceSpec>, SpecErrors> {
    let Some(gke) = spec.section::<spec::GkeSpec>("gke")? else {
        return Ok(vec![]);
    };
    let Some(net) = spec.section::<NetworkSpec>("network")? else {
        let message = "`[gke]` runs on the lane's network: `[network]` is missing";
        return Err(spec.errors(vec![spec.error(&FieldPath::root("gke"), message)]));
    };
    spec.errors(spec::validate(spec, globals, &gke, &net)).into_result()?;
    Ok(expand::resources(&spec.name(), globals, gcp, &gke, &net))
}
