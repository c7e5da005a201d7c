//! The network stage (`[network]`): VPC, subnets, gateways, routes, endpoint, security group,
//! DNS zone, flow logs. The section (`spec.rs`) and its expansion (`expand.rs`) only; the kinds
//! live by service (`crate::ec2`, `crate::route53`, ...).

mod expand;
pub mod spec;

pub use expand::STAGE;

use engine::ResourceSpec;
use engine::spec::{FieldPath, Globals, SpecErrors, SpecSource};

/// Validates `[network]` (if present) and expands it.
pub fn expand(spec: &SpecSource, globals: &Globals) -> Result<Vec<ResourceSpec>, SpecErrors> {
    let Some(net) = spec.section::<spec::NetworkSpec>("network")? else {
        return Ok(vec![]);
    };
    let mut errors = spec::validate(spec, globals, &net);
    if globals.cloud != "aws" {
        errors.push(spec.error(
            &FieldPath::root("globals").key("cloud"),
            "`[network]` here is the AWS network",
        ));
    }
    spec.errors(errors).into_result()?;
    Ok(expand::resources(&spec.name(), globals, &net))
}
