//! The GCP lane's sections and their expansion (pure: no API call): `[gcp]` (the project and
//! zone every stage uses), `[network]`, `[access]`, `[gke]` and `[openbao.server]`.

pub mod access;
pub mod gke;
pub mod network;
pub mod openbao;
pub mod project;

use engine::spec::SpecSource;
use engine::{Address, Value};

/// The keys of the cluster's vars ConfigMap (`gke-<cluster>-vars`) that come from the GCP
/// stages, as the reference's Kustomizations substitute them: values of the spec, and
/// references to the cluster's outputs. Sections that do not read give no keys (the expansion
/// reports their errors).
pub fn flux_vars(spec: &SpecSource) -> Vec<(String, Value)> {
    let mut vars: Vec<(String, Value)> = vec![("cloud".into(), Value::from("gcp"))];
    let str_var = |k: &str, v: &str| (k.to_string(), Value::from(v));
    if let Ok(gcp) = project::section(spec) {
        vars.push(str_var("project_id", &gcp.project));
        vars.push(str_var("zone", &gcp.zone));
        vars.push(str_var("workload_pool", &format!("{}.svc.id.goog", gcp.project)));
        if let Some(n) = &gcp.project_number {
            vars.push(str_var("project_number", n));
        }
    }
    if let Ok(Some(net)) = spec.section::<network::spec::NetworkSpec>("network") {
        vars.push(str_var("network_name", &net.name));
        vars.push(str_var("node_cidr", &net.subnet_cidr));
        vars.push(str_var("openbao_cidr", &net.subnet_cidr));
        vars.push(str_var("pod_cidr", &net.pods_cidr));
        vars.push(str_var("service_cidr", &net.services_cidr));
        if let Some(zone) = &net.private_zone {
            vars.push(str_var("private_domain_name", zone.name.trim_end_matches('.')));
        }
    }
    if spec.has_section("gke") {
        let cluster = gke_cluster();
        vars.push(("cluster_endpoint".into(), Value::reference(&cluster, "endpoint")));
        vars.push(("oidc_issuer_url".into(), Value::reference(&cluster, "issuer")));
        vars.push(str_var("oidc_jwks_host", "container.googleapis.com"));
    }
    vars
}

/// The GKE cluster's address.
pub fn gke_cluster() -> Address {
    Address::new(format!("{}.cluster.main", gke::STAGE))
}
