//! Private access from the tailnet (`[access]`, the reference's subnet router and per-cloud
//! tailnet pieces of `aws/network`): a subnet router (launch template, autoscaling group of one,
//! security group, instance role with SSM) that advertises the VPC's ranges to the tailnet, the
//! reusable pre-authorised key it joins with (made through Tailscale's API and kept only in
//! Secrets Manager, where its boot script reads it), and split DNS sending the VPC's private
//! domains to the VPC's resolver. The section (`spec.rs`), its expansion (`expand.rs`) and the
//! router's boot script (`boot_script.rs`); the kinds are the EC2/IAM/autoscaling ones and
//! `engine-tailscale`'s.

mod boot_script;
mod expand;
pub mod spec;

pub use expand::{STAGE, vpc_resolver};

use crate::stages::network::spec::NetworkSpec;
use engine::spec::{Globals, SpecErrors, SpecSource};
use engine::{Address, ResourceSpec};

/// Validates `[access]` (if present) against `[network]` and expands it.
pub fn expand(spec: &SpecSource, globals: &Globals) -> Result<Vec<ResourceSpec>, SpecErrors> {
    let Some(access) = spec.section::<spec::AccessSpec>("access")? else {
        return Ok(vec![]);
    };
    let net = spec.section::<NetworkSpec>("network").ok().flatten();
    let errors = spec::validate(spec, globals, net.as_ref(), &access);
    spec.errors(errors).into_result()?;
    let net = net.expect("validated: [network] is there");
    Ok(expand::resources(&spec.name(), globals, &net, &access))
}

/// What the engine's own path to OpenBao and the cluster's API is made of, when `[access]`
/// says the engine reaches them through the tailnet (`engine_through_tailnet`): the router and
/// the split DNS of each domain. Empty otherwise, or when the sections do not read (their
/// expansion reports why).
pub fn engine_path(spec: &SpecSource) -> Vec<Address> {
    sections(spec).map_or_else(Vec::new, |(g, net, access)| expand::private_path(&g, &net, &access))
}

/// The globals, `[network]` and `[access]`, when all three read.
fn sections(spec: &SpecSource) -> Option<(Globals, NetworkSpec, spec::AccessSpec)> {
    let net = spec.section::<NetworkSpec>("network").ok()??;
    Some((spec.globals().ok()?, net, spec.section::<spec::AccessSpec>("access").ok()??))
}

/// How the engine reaches OpenBao and the cluster's API when `[access]` says it goes through the
/// tailnet: said in the error when they cannot be reached.
pub fn route(spec: &SpecSource) -> Option<String> {
    let (globals, net, access) = sections(spec)?;
    access.engine_through_tailnet.then(|| {
        format!(
            "it answers only inside the VPC, which this engine reaches through the tailnet's \
             subnet router `{}` ({STAGE}.autoscaling_group.router): is this machine on the \
             tailnet, with the router's routes ({}) approved and split DNS for {}?",
            access.router,
            access.routes(&net).join(", "),
            access.domains(&globals, &net).join(", "),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(through: bool) -> SpecSource {
        let text = format!(
            "[globals]\ncloud = \"aws\"\nregion = \"eu-west-3\"\ncluster_name = \"aws-0\"\ndomain = \"ogenki.io\"\n\
             [network]\nvpc_cidr = \"10.0.0.0/16\"\nazs = [\"eu-west-3a\"]\nprivate_zone = {{ name = \"priv.aws.ogenki.io\" }}\n\
             [network.subnets.private]\ncidrs = [\"10.0.0.0/20\"]\n\
             [access]\nrouter = \"ogenki\"\nengine_through_tailnet = {through}\n"
        );
        SpecSource::from_text("specs/aws.toml", "aws", &text)
    }

    #[test]
    fn the_engines_path_through_the_tailnet_is_the_router_and_its_split_dns() {
        let path: Vec<String> = engine_path(&spec(true)).iter().map(|a| a.to_string()).collect();
        assert_eq!(
            path,
            [
                "aws.access.autoscaling_group.router",
                "aws.access.tailscale_dns_split[\"priv.aws.ogenki.io\"]",
                "aws.access.tailscale_dns_split[\"eu-west-3.compute.internal\"]",
            ]
        );
        let route = route(&spec(true)).unwrap();
        assert!(
            route.contains("subnet router `ogenki`") && route.contains("10.0.0.0/16"),
            "{route}"
        );
        assert!(engine_path(&spec(false)).is_empty() && super::route(&spec(false)).is_none());
    }

    #[test]
    fn mistakes_name_their_field() {
        let text = "[globals]\ncloud = \"aws\"\nregion = \"eu-west-3\"\ncluster_name = \"aws-0\"\ndomain = \"ogenki.io\"\n\
             [network]\nvpc_cidr = \"10.0.0.0/16\"\nazs = [\"eu-west-3a\"]\n\
             [network.subnets.public]\ncidrs = [\"10.0.0.0/24\"]\n\
             [access]\nrouter = \"bad name\"\nkey_tags = [\"router\"]\nkey_expiry_days = 365\n";
        let spec = SpecSource::from_text("specs/aws.toml", "aws", text);
        let errors = expand(&spec, &spec.globals().unwrap()).unwrap_err();
        let shown = format!("{errors:?}");
        for expected in [
            "runs in `[network.subnets.private]`",
            "`bad name` is not a machine name",
            "`router` is not a tag",
            "365 days",
            "there is no `[network] private_zone`",
        ] {
            assert!(shown.contains(expected), "{expected}: {shown}");
        }
    }
}
