//! OpenBao on GCP (`[openbao.server]`): its lineage, what outlives its servers and is
//! protected from destroy as on AWS: the Cloud KMS key ring and key of the `gcpckms` seal and
//! the raft snapshot bucket (versioned, with a lifecycle). OpenBao's configuration through its
//! API is `engine-openbao`'s, on the lane's Secret Manager and this bucket.

mod expand;
pub mod spec;
pub mod startup_script;

pub use expand::{STAGE, serving};

use super::network::spec::NetworkSpec;
use super::project::GcpSection;
use engine::ResourceSpec;
use engine::spec::{FieldPath, Globals, SpecErrors, SpecSource};

/// Validates `[openbao.server]` (if present) and expands it.
pub fn expand(
    spec: &SpecSource,
    globals: &Globals,
    gcp: &GcpSection,
) -> Result<Vec<ResourceSpec>, SpecErrors> {
    let Some(server) = server(spec)? else {
        return Ok(vec![]);
    };
    let net = spec.section::<NetworkSpec>("network")?;
    let Some(net) = net.filter(|n| n.private_zone.is_some()) else {
        let message = "OpenBao's servers run on the lane's network and are named in its private \
                       zone: `[network]` with `private_zone` is needed";
        return Err(
            spec.errors(vec![spec.error(&FieldPath::root("openbao").key("server"), message)])
        );
    };
    spec.errors(spec::validate(spec, globals, gcp, &server)).into_result()?;
    Ok(expand::resources(&spec.name(), globals, gcp, &server, &net))
}

fn server(spec: &SpecSource) -> Result<Option<spec::ServerSpec>, SpecErrors> {
    Ok(spec.section::<spec::OpenBaoSection>("openbao")?.and_then(|s| s.server))
}

/// The snapshot bucket and object prefix of a spec that makes OpenBao's lineage on GCP: where
/// a new server looks for the newest snapshot to restore.
pub fn snapshot_location(spec: &SpecSource) -> Option<(String, String)> {
    let globals = spec.globals().ok()?;
    let gcp = super::project::section(spec).ok()?;
    let server = server(spec).ok()??;
    Some((spec::bucket_name(&gcp.project, &globals, &server), server.snapshots.prefix.clone()))
}
