//! Private access from the tailnet on GCP (`[access]` in a `cloud = "gcp"` spec; the
//! reference's subnet router of `gcp/network`): a subnet router (a managed group of one
//! instance with IP forwarding, shielded, OS Login, no external address, its own service
//! account) advertising the network's ranges, the reusable pre-authorised key it joins with
//! (made through Tailscale's API, kept only in Secret Manager, readable by the router's account
//! alone), and the firewall letting the router's traffic in. The section (`spec.rs`), its
//! expansion (`expand.rs`) and the router's startup script (`startup_script.rs`).

mod expand;
pub mod spec;
mod startup_script;

pub use expand::STAGE;

use super::project::GcpSection;
use engine::ResourceSpec;
use engine::spec::{Globals, SpecErrors, SpecSource};

/// Validates `[access]` (if present) against `[network]` and expands it.
pub fn expand(
    spec: &SpecSource,
    globals: &Globals,
    gcp: &GcpSection,
) -> Result<Vec<ResourceSpec>, SpecErrors> {
    let Some(access) = spec.section::<spec::AccessSpec>("access")? else {
        return Ok(vec![]);
    };
    let net = spec.section::<super::network::spec::NetworkSpec>("network").ok().flatten();
    let gke = spec.section::<super::gke::spec::GkeSpec>("gke").ok().flatten();
    let errors = spec::validate(spec, net.as_ref(), &access);
    spec.errors(errors).into_result()?;
    let net = net.expect("validated: [network] is there");
    Ok(expand::resources(&spec.name(), globals, gcp, &net, gke.as_ref(), &access))
}
