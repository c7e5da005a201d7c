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

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str = "[globals]\ncloud = \"gcp\"\nregion = \"europe-west4\"\ncluster_name = \"gcp-0\"\ndomain = \"ogenki.io\"\n\
        [gcp]\nproject = \"ogenki-435905\"\nzone = \"europe-west4-a\"\n\
        [network]\nname = \"vpc-europe-west4-dev\"\nsubnet_cidr = \"10.10.0.0/16\"\npods_cidr = \"100.65.0.0/16\"\nservices_cidr = \"10.11.0.0/20\"\n";

    fn expanded(more: &str) -> Result<Vec<ResourceSpec>, SpecErrors> {
        let spec = SpecSource::from_text("specs/gcp.toml", "gcp", format!("{BASE}{more}"));
        let globals = spec.globals().unwrap();
        expand(&spec, &globals, &super::super::project::section(&spec).unwrap())
    }

    #[test]
    fn the_router_reads_its_key_and_split_dns_follows_the_forwarder() {
        let with_dns = "private_zone = { name = \"priv.gcp.ogenki.io\" }\ndns_inbound_forwarding = true\n\
             [access]\nrouter = \"ogenki-gcp\"\n";
        let out = expanded(with_dns).unwrap();
        let split = out
            .iter()
            .find(|r| r.kind == "tailscale_dns_split")
            .expect("split DNS for the private zone");
        assert_eq!(split.attributes["domain"], engine::Value::from("priv.gcp.ogenki.io"));
        assert_eq!(
            split.attributes["nameservers"],
            engine::Value::reference(
                &engine::Address::new("gcp.network.dns_policy.inbound"),
                "inbound_addresses"
            )
        );
        let reader = out.iter().find(|r| r.kind == "gcp_iam_member").unwrap();
        assert_eq!(
            reader.attributes["resource"],
            engine::Value::from(
                "projects/ogenki-435905/secrets/tailscale-subnet-router-ogenki-gcp"
            )
        );
    }

    #[test]
    fn mistakes_name_their_field() {
        let errors =
            expanded("[access]\nrouter = \"Bad\"\nkey_tags = [\"x\"]\nkey_expiry_days = 0\n")
                .unwrap_err();
        let shown = format!("{errors:?}");
        for expected in ["`Bad` is not a GCP name", "`x` is not a tag", "0 days", "split DNS needs"]
        {
            assert!(shown.contains(expected), "{expected}: {shown}");
        }
        assert!(expanded("[access]\nrouter = \"ogenki-gcp\"\nsplit_dns = false\n").is_ok());
    }
}
