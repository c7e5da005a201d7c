//! Expansion of `[gke]` into the cluster and its node pools.

use super::spec::GkeSpec;
use crate::labels;
use crate::stages::network::spec::NetworkSpec;
use crate::stages::project::GcpSection;
use engine::spec::Globals;
use engine::{Address, ResourceSpec, Value};
use serde_json::json;

/// Stage prefix of every GKE resource.
pub const STAGE: &str = "gcp.gke";

fn addr(rest: &str) -> Address {
    Address::new(format!("{STAGE}.{rest}"))
}

/// Builds the resources of a validated `[gke]` on the network of `net`.
pub fn resources(
    spec_name: &str,
    globals: &Globals,
    gcp: &GcpSection,
    gke: &GkeSpec,
    net: &NetworkSpec,
) -> Vec<ResourceSpec> {
    let name = gke.name.clone().unwrap_or_else(|| globals.cluster_name.clone());
    let network = Address::new(format!("{}.network.main", crate::stages::network::STAGE));
    let subnetwork = Address::new(format!("{}.subnetwork.nodes", crate::stages::network::STAGE));
    let subnet_name = format!("{}-nodes", net.name);
    let cluster = addr("cluster.main");
    let labels = labels::desired(spec_name, &cluster, &[&globals.tags, &gke.labels]);
    let authorized: Vec<serde_json::Value> = gke
        .authorized_networks
        .iter()
        .map(|a| json!({ "cidr_block": a.cidr, "display_name": a.name }))
        .collect();
    let service = |s: &str| if s == "none" { "none" } else { "" };
    let datapath = if gke.datapath == "legacy" {
        "DATAPATH_PROVIDER_UNSPECIFIED"
    } else {
        "ADVANCED_DATAPATH"
    };
    let version = match gke.version.as_deref() {
        None | Some("latest") => Value::Null,
        Some(v) => Value::from(v),
    };
    let mut out = vec![
        ResourceSpec::new(cluster.clone(), "gcp_container_cluster")
            .attr("name", name.as_str())
            .attr("location", gcp.zone.as_str())
            .attr("network", Value::reference(&network, "name"))
            .attr("subnetwork", Value::reference(&subnetwork, "name"))
            .attr("pods_range_name", format!("{subnet_name}-pods"))
            .attr("services_range_name", format!("{subnet_name}-services"))
            .attr("private_nodes", true)
            .attr("private_endpoint", gke.private_endpoint)
            .attr("master_ipv4_cidr", gke.master_cidr.as_str())
            .attr("authorized_networks", Value::Json(json!(authorized)))
            .attr("release_channel", gke.release_channel.as_str())
            .attr("datapath_provider", datapath)
            .attr("network_policy", gke.network_policy)
            .attr("workload_pool", format!("{}.svc.id.goog", gcp.project))
            .attr("logging_service", service(&gke.logging))
            .attr("monitoring_service", service(&gke.monitoring))
            .attr("labels", labels)
            .attr("version", version.clone()),
    ];
    for (pool, p) in &gke.node_pools {
        let taints: Vec<serde_json::Value> = p
            .taints
            .iter()
            .map(|t| json!({ "key": t.key, "value": t.value, "effect": t.effect }))
            .collect();
        out.push(
            ResourceSpec::new(addr("node_pool").index(pool), "gcp_container_node_pool")
                .attr("name", pool.as_str())
                .attr("cluster", Value::reference(&cluster, "name"))
                .attr("location", gcp.zone.as_str())
                .attr("machine_type", p.machine_type.as_str())
                .attr("image_type", p.image_type.as_str())
                .attr("disk_size_gb", p.disk_size_gb)
                .attr("disk_type", p.disk_type.as_str())
                .attr("spot", p.spot)
                .attr(
                    "oauth_scopes",
                    Value::Json(json!(["https://www.googleapis.com/auth/cloud-platform"])),
                )
                .attr("initial_node_count", p.initial_nodes.unwrap_or(p.min_nodes))
                .attr("min_node_count", p.min_nodes)
                .attr("max_node_count", p.max_nodes)
                .attr("taints", Value::Json(json!(taints)))
                .attr("node_labels", Value::Json(json!(p.labels)))
                .attr("workload_metadata", "GKE_METADATA")
                .attr("auto_repair", p.auto_repair)
                .attr("auto_upgrade", p.auto_upgrade)
                .attr("version", version.clone()),
        );
    }
    out
}
