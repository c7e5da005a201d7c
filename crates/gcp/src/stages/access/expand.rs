//! Expansion of the GCP `[access]` into resources.

use super::spec::AccessSpec;
use super::startup_script::{StartupScript, render};
use crate::labels;
use crate::stages::gke::spec::GkeSpec;
use crate::stages::network::spec::NetworkSpec;
use crate::stages::project::GcpSection;
use engine::spec::Globals;
use engine::{Address, ResourceSpec, Value};
use serde_json::json;

/// Stage prefix of every GCP private-access resource.
pub const STAGE: &str = "gcp.access";

/// The network tag of the router, which its firewall names as the source.
const ROUTER_TAG: &str = "tailscale-subnet-router";

fn addr(rest: &str) -> Address {
    Address::new(format!("{STAGE}.{rest}"))
}

fn network(rest: &str) -> Address {
    Address::new(format!("{}.{rest}", crate::stages::network::STAGE))
}

/// The ranges the router advertises: as the spec says, else the nodes', pods', services' and
/// the control plane's (the reference's `advertised_routes`).
fn routes(net: &NetworkSpec, gke: Option<&GkeSpec>, access: &AccessSpec) -> Vec<String> {
    access.advertise_routes.clone().unwrap_or_else(|| {
        let mut all =
            vec![net.subnet_cidr.clone(), net.pods_cidr.clone(), net.services_cidr.clone()];
        all.extend(gke.map(|g| g.master_cidr.clone()));
        all
    })
}

/// Builds the resources of a validated `[access]`.
pub fn resources(
    spec_name: &str,
    globals: &Globals,
    gcp: &GcpSection,
    net: &NetworkSpec,
    gke: Option<&GkeSpec>,
    access: &AccessSpec,
) -> Vec<ResourceSpec> {
    let router = &access.router;
    let secret = access.key_secret();
    let email = format!("{}@{}.iam.gserviceaccount.com", access.service_account, gcp.project);
    let network_link = Value::reference(&network("network.main"), "self_link");
    let mut out = Vec::new();

    out.push(
        ResourceSpec::new(addr("service_account.router"), "gcp_service_account")
            .attr("account_id", access.service_account.as_str())
            .attr("display_name", "Tailscale subnet router")
            .attr("description", format!("The identity of the subnet router {router}")),
    );

    // The key, kept only in Secret Manager, readable by the router's account.
    let key = addr("tailscale_auth_key.router");
    out.push(
        ResourceSpec::new(key.clone(), "tailscale_auth_key")
            .attr("description", access.key_description())
            .attr("reusable", true)
            .attr("ephemeral", false)
            .attr("preauthorized", true)
            .attr("tags", Value::Json(json!(access.key_tags)))
            .attr("expiry_seconds", access.key_expiry_days * 86_400)
            .attr("secret", secret.as_str()),
    );
    let reader = addr("iam_member.router_key");
    out.push(
        ResourceSpec::new(reader.clone(), "gcp_iam_member")
            .attr("resource", format!("projects/{}/secrets/{secret}", gcp.project))
            .attr("role", "roles/secretmanager.secretAccessor")
            .attr("member", format!("serviceAccount:{email}"))
            .after(&key)
            .after(&addr("service_account.router")),
    );

    // The router: one shielded instance with IP forwarding, kept by its group.
    let script = render(&StartupScript {
        router,
        project: &gcp.project,
        key_secret: &secret,
        routes: &routes(net, gke, access),
        ssh: access.ssh,
    });
    let group = addr("instance_group.router");
    let template = Value::Map(
        [
            ("machine_type", Value::from(access.machine_type.as_str())),
            ("image", Value::from(access.image.as_str())),
            ("boot_disk_gb", Value::from(access.boot_disk_gb)),
            ("service_account", Value::from(email.as_str())),
            ("network", network_link.clone()),
            ("subnetwork", Value::reference(&network("subnetwork.nodes"), "self_link")),
            ("tags", Value::Json(json!([ROUTER_TAG]))),
            (
                "metadata",
                Value::Json(json!({
                    "startup-script": script,
                    "enable-oslogin": "TRUE",
                    "block-project-ssh-keys": "TRUE",
                })),
            ),
            ("labels", labels::desired(spec_name, &group, &[&globals.tags])),
            ("can_ip_forward", Value::Bool(true)),
            ("shielded_vm", Value::Bool(true)),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect(),
    );
    out.push(
        ResourceSpec::new(group.clone(), "gcp_compute_region_instance_group_manager")
            .attr("name", router.as_str())
            .attr("base_instance_name", router.as_str())
            .attr("target_size", 1)
            .attr("template", template)
            // It boots reading the key, and reaches Tailscale through the NAT.
            .after(&reader)
            .after_if_present(&network("router_nat.main")),
    );

    // Split DNS: the private zone through the inbound forwarder, once the router forwards.
    if let (true, Some(zone)) = (access.split_dns, &net.private_zone) {
        let domain = zone.name.trim_end_matches('.');
        out.push(
            ResourceSpec::new(addr("tailscale_dns_split").index(domain), "tailscale_dns_split")
                .attr("domain", domain)
                .attr(
                    "nameservers",
                    Value::reference(&network("dns_policy.inbound"), "inbound_addresses"),
                )
                .after(&group),
        );
    }

    // What the router forwards from the tailnet comes in from the router.
    out.push(
        ResourceSpec::new(addr("firewall.router_ingress"), "gcp_compute_firewall")
            .attr("name", format!("{}-tailscale-ingress", net.name))
            .attr("network", network_link)
            .attr("direction", "INGRESS")
            .attr("priority", 1000)
            .attr("source_ranges", Value::Json(json!([])))
            .attr("source_tags", Value::Json(json!([ROUTER_TAG])))
            .attr("target_tags", Value::Json(json!([])))
            .attr("allow", Value::Json(json!([{ "protocol": "all", "ports": [] }]))),
    );
    out
}
