//! Expansion of the GCP `[network]` into resources.

use super::spec::NetworkSpec;
use crate::labels;
use engine::spec::Globals;
use engine::{Address, ResourceSpec, Value};
use serde_json::json;

/// Stage prefix of every GCP network resource.
pub const STAGE: &str = "gcp.network";

fn addr(rest: &str) -> Address {
    Address::new(format!("{STAGE}.{rest}"))
}

/// The router's and NAT's names: `vpc-europe-west4-dev` gives `router-europe-west4-dev` and
/// `nat-europe-west4-dev`, as the reference's modules name them.
fn after_vpc(name: &str, prefix: &str) -> String {
    format!("{prefix}-{}", name.strip_prefix("vpc-").unwrap_or(name))
}

/// Builds the resources of a validated network spec.
pub fn resources(spec_name: &str, globals: &Globals, net: &NetworkSpec) -> Vec<ResourceSpec> {
    let region = globals.region.as_str();
    let mut out = Vec::new();

    let network = addr("network.main");
    out.push(
        ResourceSpec::new(network.clone(), "gcp_compute_network")
            .attr("name", net.name.as_str())
            .attr("auto_create_subnetworks", false)
            .attr("routing_mode", net.routing_mode.as_str()),
    );
    let network_link = Value::reference(&network, "self_link");

    let subnetwork = addr("subnetwork.nodes");
    let subnet_name = format!("{}-nodes", net.name);
    let ranges = json!([
        { "range_name": format!("{subnet_name}-pods"), "ip_cidr_range": net.pods_cidr },
        { "range_name": format!("{subnet_name}-services"), "ip_cidr_range": net.services_cidr },
    ]);
    let logs = net.flow_logs.as_ref().map_or(Value::Null, |l| {
        Value::Json(json!({ "flow_sampling": l.sampling, "metadata": l.metadata }))
    });
    out.push(
        ResourceSpec::new(subnetwork.clone(), "gcp_compute_subnetwork")
            .attr("name", subnet_name.as_str())
            .attr("region", region)
            .attr("network", network_link.clone())
            .attr("ip_cidr_range", net.subnet_cidr.as_str())
            .attr("private_ip_google_access", true)
            .attr("secondary_ip_ranges", Value::Json(ranges))
            .attr("flow_logs", logs),
    );

    if let Some(nat) = &net.nat {
        let router = addr("router.main");
        out.push(
            ResourceSpec::new(router.clone(), "gcp_compute_router")
                .attr("name", after_vpc(&net.name, "router"))
                .attr("region", region)
                .attr("network", network_link.clone()),
        );
        out.push(
            ResourceSpec::new(addr("router_nat.main"), "gcp_compute_router_nat")
                .attr("name", after_vpc(&net.name, "nat"))
                .attr("router", Value::reference(&router, "name"))
                .attr("region", region)
                .attr("nat_ip_allocate_option", "AUTO_ONLY")
                .attr("source_subnetwork_ip_ranges_to_nat", "ALL_SUBNETWORKS_ALL_IP_RANGES")
                .attr("log_filter", nat.log_filter.as_deref().map_or(Value::Null, Value::from))
                // NAT for every subnetwork: the nodes' must exist first.
                .after(&subnetwork),
        );
    }

    if let Some(zone) = &net.private_zone {
        let domain = zone.name.trim_end_matches('.');
        let address = addr("dns_managed_zone.private");
        let labels = labels::desired(spec_name, &address, &[&globals.tags, &net.labels]);
        out.push(
            ResourceSpec::new(address, "gcp_dns_managed_zone")
                .attr("name", domain.replace('.', "-"))
                .attr("dns_name", format!("{domain}."))
                .attr("description", format!("Private zone of {}", net.name))
                .attr("visibility", "private")
                .attr("networks", Value::List(vec![network_link.clone()]))
                .attr("labels", labels),
        );
    }

    if net.dns_inbound_forwarding {
        out.push(
            ResourceSpec::new(addr("dns_policy.inbound"), "gcp_dns_policy")
                .attr("name", format!("{}-inbound", net.name))
                .attr("description", format!("Inbound DNS forwarding into {}", net.name))
                .attr("enable_inbound_forwarding", true)
                .attr("networks", Value::List(vec![network_link.clone()]))
                // Its forwarder gets an address in the subnetwork, read back with it.
                .after(&subnetwork),
        );
    }

    for (name, rule) in &net.firewalls {
        let allow: Vec<serde_json::Value> = rule
            .allow
            .iter()
            .map(|a| json!({ "protocol": a.protocol, "ports": a.ports }))
            .collect();
        out.push(
            ResourceSpec::new(addr("firewall").index(name), "gcp_compute_firewall")
                .attr("name", name.as_str())
                .attr("network", network_link.clone())
                .attr("direction", "INGRESS")
                .attr("priority", rule.priority)
                .attr("source_ranges", Value::Json(json!(rule.source_ranges)))
                .attr("source_tags", Value::Json(json!(rule.source_tags)))
                .attr("target_tags", Value::Json(json!(rule.target_tags)))
                .attr("allow", Value::Json(json!(allow))),
        );
    }
    out
}
