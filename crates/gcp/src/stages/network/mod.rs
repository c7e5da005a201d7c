//! The GCP network stage (`[network]` in a `cloud = "gcp"` spec): the VPC, the nodes'
//! subnetwork with GKE's secondary ranges, Cloud Router and Cloud NAT, the private Cloud DNS
//! zone and its inbound DNS policy, and firewall rules. The section (`spec.rs`) and its
//! expansion (`expand.rs`) only; the kinds live in `crate::compute` and `crate::dns`.

mod expand;
pub mod spec;

pub use expand::STAGE;

use super::project::{self, GcpSection};
use engine::ResourceSpec;
use engine::spec::{Globals, SpecErrors, SpecSource};

/// Validates `[network]` (if present) and expands it.
pub fn expand(
    spec: &SpecSource,
    globals: &Globals,
    gcp: &GcpSection,
) -> Result<Vec<ResourceSpec>, SpecErrors> {
    let Some(net) = spec.section::<spec::NetworkSpec>("network")? else {
        return Ok(vec![]);
    };
    let mut errors = project::validate(spec, globals, gcp);
    errors.extend(spec::validate(spec, &net));
    spec.errors(errors).into_result()?;
    Ok(expand::resources(&spec.name(), globals, &net))
}
