//! Expansion of `[openbao.server]` into OpenBao's lineage on GCP.

use super::spec::{MirrorSpec, ServerSpec, bucket_name, seal_location};
use super::startup_script::{self, StartupScript};
use crate::labels;
use crate::stages::network::spec::NetworkSpec;
use crate::stages::project::GcpSection;
use engine::spec::Globals;
use engine::{Address, ResourceSpec, Value};
use serde_json::json;
use std::collections::BTreeMap;

/// Stage prefix of every OpenBao resource on GCP.
pub const STAGE: &str = "gcp.openbao";

fn addr(rest: &str) -> Address {
    Address::new(format!("{STAGE}.{rest}"))
}

/// What OpenBao's configuration waits for when the spec makes it: the snapshot bucket a new
/// server restores from, the servers, and the load balancer and DNS name they answer on.
pub fn serving() -> Vec<Address> {
    vec![
        addr("storage_bucket.snapshots"),
        addr("instance_group.server"),
        addr("forwarding_rule.api"),
        addr("dns_record_set.api"),
    ]
}

fn network(rest: &str) -> Address {
    Address::new(format!("{}.{rest}", crate::stages::network::STAGE))
}

/// Google's health checkers' ranges.
const HEALTH_CHECKERS: [&str; 2] = ["130.211.0.0/22", "35.191.0.0/16"];
/// The network tag of OpenBao's nodes, which its firewalls target.
const NODE_TAG: &str = "openbao";
/// OpenBao's API port.
const API_PORT: i64 = 8200;

/// Builds the resources of a validated `[openbao.server]`.
pub fn resources(
    spec_name: &str,
    globals: &Globals,
    gcp: &GcpSection,
    server: &ServerSpec,
    net: &NetworkSpec,
) -> Vec<ResourceSpec> {
    let mut out = lineage(spec_name, globals, gcp, server);
    out.extend(servers(spec_name, globals, gcp, server, net));
    out
}

/// What outlives the servers (protected): the seal key ring and key, the snapshot bucket, the
/// nodes' service account.
fn lineage(
    spec_name: &str,
    globals: &Globals,
    gcp: &GcpSection,
    server: &ServerSpec,
) -> Vec<ResourceSpec> {
    let mut out = Vec::new();
    let ring = addr("kms_key_ring.seal");
    let mut r = ResourceSpec::new(ring.clone(), "gcp_kms_key_ring")
        .attr("name", server.seal.key_ring.as_str())
        .attr("location", seal_location(globals, server));
    r.protected = true;
    out.push(r);

    let key = addr("kms_crypto_key.seal");
    let rotation = server.seal.rotation_days.map_or(Value::Null, |d| Value::from(d * 86_400));
    let mut k = ResourceSpec::new(key.clone(), "gcp_kms_crypto_key")
        .attr("name", server.seal.key.as_str())
        .attr("key_ring", Value::reference(&ring, "id"))
        .attr("purpose", "ENCRYPT_DECRYPT")
        .attr("rotation_seconds", rotation)
        .attr("labels", labels::desired(spec_name, &key, &[&globals.tags]));
    k.protected = true;
    out.push(k);

    let bucket = addr("storage_bucket.snapshots");
    let snaps = &server.snapshots;
    let lifecycle = json!([
        {"action": {"type": "Delete"}, "condition": {"age": snaps.retention_days}},
        {
            "action": {"type": "Delete"},
            "condition": {"daysSinceNoncurrentTime": snaps.noncurrent_retention_days},
        },
    ]);
    let mut b = ResourceSpec::new(bucket.clone(), "gcp_storage_bucket")
        .attr("name", bucket_name(&gcp.project, globals, server))
        .attr("location", globals.region.to_uppercase())
        .attr("uniform_access", true)
        .attr("public_access_prevention", "enforced")
        .attr("versioning", true)
        .attr("lifecycle", Value::Json(lifecycle))
        .attr("labels", labels::desired(spec_name, &bucket, &[&globals.tags]));
    b.protected = true;
    out.push(b);

    let sa = addr("service_account.node");
    let mut a = ResourceSpec::new(sa, "gcp_service_account")
        .attr("account_id", server.service_account.as_str())
        .attr("display_name", "OpenBao node")
        .attr(
            "description",
            format!("The identity of OpenBao's nodes of {}", globals.cluster_name),
        );
    a.protected = true;
    out.push(a);

    // The restore drill's identity, which reads the snapshots.
    let drill = addr("service_account.drill");
    let mut d = ResourceSpec::new(drill.clone(), "gcp_service_account")
        .attr("account_id", server.drill_service_account.as_str())
        .attr("display_name", "OpenBao restore drill")
        .attr("description", "Restores OpenBao's newest snapshot in a drill");
    d.protected = true;
    out.push(d);
    let drill_email =
        format!("{}@{}.iam.gserviceaccount.com", server.drill_service_account, gcp.project);
    let mut g = ResourceSpec::new(addr("iam_member").index("drill-snapshots"), "gcp_iam_member")
        .attr(
            "resource",
            format!("projects/_/buckets/{}", bucket_name(&gcp.project, globals, server)),
        )
        .attr("role", "roles/storage.objectViewer")
        .attr("member", format!("serviceAccount:{drill_email}"))
        .after(&bucket)
        .after(&drill);
    g.protected = true;
    out.push(g);
    if let Some(mirror) = &server.snapshots.mirror {
        out.extend(snapshot_mirror(gcp, globals, server, mirror, &bucket));
    }
    out
}

/// The daily copy of the AWS lane's snapshots: the project's Storage Transfer service agent
/// (whose subject id the AWS role trusts), its write access to the bucket, and the job.
fn snapshot_mirror(
    gcp: &GcpSection,
    globals: &Globals,
    server: &ServerSpec,
    mirror: &MirrorSpec,
    bucket: &Address,
) -> Vec<ResourceSpec> {
    let agent = addr("storage_transfer_agent");
    let mut a = ResourceSpec::new(agent.clone(), "gcp_storage_transfer_agent")
        .attr("project", gcp.project.as_str());
    a.protected = true;
    let writer = addr("iam_member").index("transfer-agent-snapshots");
    let mut w = ResourceSpec::new(writer.clone(), "gcp_iam_member")
        .attr(
            "resource",
            format!("projects/_/buckets/{}", bucket_name(&gcp.project, globals, server)),
        )
        .attr("role", "roles/storage.legacyBucketWriter")
        .attr("member", Value::reference(&agent, "member"))
        .after(bucket);
    w.protected = true;
    let sink_path = mirror.sink_path.clone().unwrap_or_else(|| server.snapshots.prefix.clone());
    let mut j = ResourceSpec::new(addr("storage_transfer_job.mirror"), "gcp_storage_transfer_job")
        .attr("name", format!("transferJobs/{}", mirror.job))
        .attr("description", "Daily copy of the AWS lane's OpenBao snapshots")
        .attr("source_bucket", mirror.source_bucket.as_str())
        .attr("role_arn", mirror.role_arn.value())
        .attr("sink_bucket", bucket_name(&gcp.project, globals, server))
        .attr("sink_path", sink_path)
        .attr("overwrite_when", "NEVER")
        .attr("delete_unique_in_sink", false)
        .attr("delete_from_source", false)
        .attr("start_date", mirror.start_date.as_str())
        .attr("repeat_seconds", 86_400i64)
        .attr("status", "ENABLED")
        .after(&writer);
    j.protected = true;
    vec![a, w, j]
}

/// The servers: the nodes' grants, an instance group of one, the internal load balancer on
/// 8200, its firewalls and its DNS record.
fn servers(
    spec_name: &str,
    globals: &Globals,
    gcp: &GcpSection,
    server: &ServerSpec,
    net: &NetworkSpec,
) -> Vec<ResourceSpec> {
    let mut out = Vec::new();
    let stem = server.name.as_str();
    let sa = addr("service_account.node");
    let email = format!("{}@{}.iam.gserviceaccount.com", server.service_account, gcp.project);
    let member = format!("serviceAccount:{email}");
    let key = Value::reference(&addr("kms_crypto_key.seal"), "id");
    let tls = Address::new(format!("{STAGE}.config.tls"));
    let grants = [
        ("seal-encrypter", key.clone(), "roles/cloudkms.cryptoKeyEncrypterDecrypter"),
        ("seal-viewer", key, "roles/cloudkms.viewer"),
        (
            "tls-secret",
            Value::from(format!("projects/{}/secrets/{}", gcp.project, server.tls_secret)),
            "roles/secretmanager.secretAccessor",
        ),
    ];
    let mut granted = Vec::new();
    for (name, resource, role) in grants {
        let a = addr("iam_member").index(name);
        out.push(
            ResourceSpec::new(a.clone(), "gcp_iam_member")
                .attr("resource", resource)
                .attr("role", role)
                .attr("member", member.as_str())
                .after(&sa)
                // The secret exists once the configuration has issued the certificate into it.
                .after_if_present(&tls),
        );
        granted.push(a);
    }

    let network_link = Value::reference(&network("network.main"), "self_link");
    let subnetwork_link = Value::reference(&network("subnetwork.nodes"), "self_link");
    let script = startup_script::render(&StartupScript {
        version: &server.version,
        project: &gcp.project,
        seal_location: &seal_location(globals, server),
        key_ring: &server.seal.key_ring,
        crypto_key: &server.seal.key,
        tls_secret: &server.tls_secret,
        data_disk: "openbao-data",
        cluster_name: &globals.cluster_name,
    });
    let group = addr("instance_group.server");
    let template = Value::Map(BTreeMap::from([
        ("machine_type".into(), Value::from(server.machine_type.as_str())),
        ("image".into(), Value::from(server.image.as_str())),
        ("boot_disk_gb".into(), Value::from(server.boot_disk_gb)),
        (
            "data_disk".into(),
            Value::Json(json!({
                "name": "openbao-data",
                "size_gb": server.data_disk_gb,
                "type": server.data_disk_type,
            })),
        ),
        ("service_account".into(), Value::from(email.as_str())),
        ("network".into(), network_link.clone()),
        ("subnetwork".into(), subnetwork_link.clone()),
        ("tags".into(), Value::Json(json!([NODE_TAG]))),
        ("metadata".into(), Value::Json(json!({"startup-script": script}))),
        ("labels".into(), labels::desired(spec_name, &group, &[&globals.tags])),
    ]));
    let mut ig = ResourceSpec::new(group.clone(), "gcp_compute_region_instance_group_manager")
        .attr("name", stem)
        .attr("base_instance_name", stem)
        .attr("target_size", 1)
        .attr("template", template)
        .after_if_present(&tls);
    for g in &granted {
        ig = ig.after(g);
    }
    out.push(ig);

    let address = addr("address.api");
    out.push(
        ResourceSpec::new(address.clone(), "gcp_compute_address")
            .attr("name", stem)
            .attr("subnetwork", subnetwork_link.clone())
            .attr("address_type", "INTERNAL"),
    );
    let check = addr("health_check.api");
    out.push(
        ResourceSpec::new(check.clone(), "gcp_compute_region_health_check")
            .attr("name", stem)
            .attr("port", API_PORT)
            .attr("check_interval_sec", 10)
            .attr("timeout_sec", 5)
            .attr("healthy_threshold", 2)
            .attr("unhealthy_threshold", 3),
    );
    let backend = addr("backend_service.api");
    out.push(
        ResourceSpec::new(backend.clone(), "gcp_compute_region_backend_service")
            .attr("name", stem)
            .attr("load_balancing_scheme", "INTERNAL")
            .attr("protocol", "TCP")
            .attr("network", network_link.clone())
            .attr("health_checks", Value::List(vec![Value::reference(&check, "self_link")]))
            .attr("groups", Value::List(vec![Value::reference(&group, "instance_group")])),
    );
    out.push(
        ResourceSpec::new(addr("forwarding_rule.api"), "gcp_compute_forwarding_rule")
            .attr("name", stem)
            .attr("load_balancing_scheme", "INTERNAL")
            .attr("ip_address", Value::reference(&address, "address"))
            .attr("ports", Value::Json(json!([API_PORT.to_string()])))
            .attr("backend_service", Value::reference(&backend, "self_link"))
            .attr("network", network_link.clone())
            .attr("subnetwork", subnetwork_link),
    );

    let api_sources = server
        .api_sources
        .clone()
        .unwrap_or_else(|| vec![net.subnet_cidr.clone(), net.pods_cidr.clone()]);
    for (name, sources) in [
        ("health-check", HEALTH_CHECKERS.iter().map(|s| s.to_string()).collect::<Vec<_>>()),
        ("api", api_sources),
    ] {
        let firewall = format!("{stem}-{name}");
        out.push(
            ResourceSpec::new(addr("firewall").index(name), "gcp_compute_firewall")
                .attr("name", firewall.as_str())
                .attr("network", network_link.clone())
                .attr("direction", "INGRESS")
                .attr("priority", 1000)
                .attr("source_ranges", Value::Json(json!(sources)))
                .attr("source_tags", Value::Json(json!([])))
                .attr("target_tags", Value::Json(json!([NODE_TAG])))
                .attr(
                    "allow",
                    Value::Json(json!([{"protocol": "tcp", "ports": [API_PORT.to_string()]}])),
                ),
        );
    }

    let zone = net.private_zone.as_ref().map(|z| z.name.trim_end_matches('.')).unwrap_or_default();
    out.push(
        ResourceSpec::new(addr("dns_record_set.api"), "gcp_dns_record_set")
            .attr("zone", Value::reference(&network("dns_managed_zone.private"), "name"))
            .attr("name", format!("{}.{zone}.", server.hostname))
            .attr("record_type", "A")
            .attr("ttl", 60)
            .attr("rrdatas", Value::List(vec![Value::reference(&address, "address")])),
    );
    out
}

#[cfg(test)]
mod tests {
    use crate::stages::openbao::expand as expand_stage;
    use crate::stages::project;
    use engine::spec::SpecSource;

    const SPEC: &str = r#"
[globals]
cloud = "gcp"
region = "europe-west4"
cluster_name = "gcp-0"
domain = "ogenki.io"

[gcp]
project = "ogenki-435905"
zone = "europe-west4-a"

[network]
name = "vpc-europe-west4-dev"
subnet_cidr = "10.10.0.0/16"
pods_cidr = "100.65.0.0/16"
services_cidr = "10.11.0.0/20"
private_zone = { name = "priv.gcp.ogenki.io" }

[openbao.server]
tls_secret = "openbao-priv-gcp-server-cert"

[openbao.server.snapshots]
bucket = "ogenki-435905-ogenki-openbao-snapshot"

[openbao.server.seal]
key_ring = "openbao-dev"
key = "openbao-unseal"
"#;

    fn expand(text: &str) -> Result<Vec<engine::ResourceSpec>, String> {
        let spec = SpecSource::from_text("specs/gcp.toml", "gcp", text);
        let globals = spec.globals().unwrap();
        let gcp = project::section(&spec).unwrap();
        expand_stage(&spec, &globals, &gcp).map_err(|e| {
            e.errors
                .iter()
                .map(|e| format!("{}:{} {}: {}", e.file, e.line, e.field, e.message))
                .collect::<Vec<_>>()
                .join("\n")
        })
    }

    #[test]
    fn the_lineage_is_protected_and_named_as_the_reference_names_it() {
        let out = expand(SPEC).unwrap();
        let protected: Vec<&str> =
            out.iter().filter(|r| r.protected).map(|r| r.address.as_str()).collect();
        assert_eq!(
            protected,
            [
                "gcp.openbao.kms_key_ring.seal",
                "gcp.openbao.kms_crypto_key.seal",
                "gcp.openbao.storage_bucket.snapshots",
                "gcp.openbao.service_account.node",
                "gcp.openbao.service_account.drill",
                "gcp.openbao.iam_member[\"drill-snapshots\"]",
            ]
        );

        let get = |a: &str| &out.iter().find(|r| r.address.as_str() == a).unwrap().attributes;
        let drill = get("gcp.openbao.iam_member[\"drill-snapshots\"]");
        assert_eq!(
            drill["resource"],
            engine::Value::from("projects/_/buckets/ogenki-435905-ogenki-openbao-snapshot")
        );
        assert_eq!(drill["role"], engine::Value::from("roles/storage.objectViewer"));
        assert_eq!(
            drill["member"],
            engine::Value::from(
                "serviceAccount:openbao-drill@ogenki-435905.iam.gserviceaccount.com"
            )
        );
        let bucket = get("gcp.openbao.storage_bucket.snapshots");
        assert_eq!(bucket["name"], engine::Value::from("ogenki-435905-ogenki-openbao-snapshot"));
        assert_eq!(bucket["location"], engine::Value::from("EUROPE-WEST4"));
        assert_eq!(
            get("gcp.openbao.kms_key_ring.seal")["location"],
            engine::Value::from("europe-west4")
        );
    }

    #[test]
    fn the_servers_sit_behind_an_internal_load_balancer_named_in_the_private_zone() {
        let out = expand(SPEC).unwrap();
        let get = |a: &str| &out.iter().find(|r| r.address.as_str() == a).unwrap().attributes;
        let record = get("gcp.openbao.dns_record_set.api");
        assert_eq!(record["name"], engine::Value::from("bao.priv.gcp.ogenki.io."));
        assert_eq!(record["ttl"], engine::Value::from(60));
        let firewall = get("gcp.openbao.firewall[\"health-check\"]");
        assert_eq!(firewall["name"], engine::Value::from("openbao-dev-health-check"));
        let api = get("gcp.openbao.firewall[\"api\"]");
        assert_eq!(
            api["source_ranges"],
            engine::Value::Json(serde_json::json!(["10.10.0.0/16", "100.65.0.0/16"]))
        );
        let member = get("gcp.openbao.iam_member[\"tls-secret\"]");
        assert_eq!(
            member["member"],
            engine::Value::from(
                "serviceAccount:openbao-node@ogenki-435905.iam.gserviceaccount.com"
            )
        );
        assert_eq!(
            member["resource"],
            engine::Value::from("projects/ogenki-435905/secrets/openbao-priv-gcp-server-cert")
        );
        let group =
            out.iter().find(|r| r.address.as_str() == "gcp.openbao.instance_group.server").unwrap();
        assert_eq!(group.attributes["target_size"], engine::Value::from(1));
        let engine::Value::Map(template) = &group.attributes["template"] else { panic!() };
        let engine::Value::Json(metadata) = &template["metadata"] else { panic!() };
        assert!(metadata["startup-script"].as_str().unwrap().contains("seal \"gcpckms\""));
        // The nodes wait for their grants; the configuration waits for what `serving` names.
        assert!(
            group
                .depends_on
                .iter()
                .any(|a| a.as_str() == "gcp.openbao.iam_member[\"seal-encrypter\"]")
        );
        for a in crate::stages::openbao::serving() {
            assert!(out.iter().any(|r| r.address == a), "{a} is made");
        }
    }

    const MIRROR: &str = r#"
[openbao.server.snapshots.mirror]
source_bucket = "eu-west-3-ogenki-openbao-snapshot"
role_arn = { spec = "aws-gcp-federation", address = 'aws.federation.iam_role["m"]', attribute = "arn" }
start_date = "2026-01-01"
"#;

    #[test]
    fn the_snapshot_mirror_reads_s3_through_the_shared_specs_role_and_never_deletes() {
        let out = expand(&format!("{SPEC}{MIRROR}")).unwrap();
        let get = |a: &str| out.iter().find(|r| r.address.as_str() == a).unwrap();
        let job = get("gcp.openbao.storage_transfer_job.mirror");
        assert!(job.protected, "the job is lineage");
        let cross = job.cross_references();
        assert_eq!(cross.len(), 1);
        assert_eq!(cross[0].spec.as_deref(), Some("aws-gcp-federation"));
        assert_eq!(cross[0].address.as_str(), "aws.federation.iam_role[\"m\"]");
        let attrs = &job.attributes;
        assert_eq!(attrs["name"], engine::Value::from("transferJobs/openbao-snapshot-mirror"));
        assert_eq!(attrs["sink_path"], engine::Value::from("snapshots/"));
        assert_eq!(attrs["overwrite_when"], engine::Value::from("NEVER"));
        for never in ["delete_unique_in_sink", "delete_from_source"] {
            assert_eq!(attrs[never], engine::Value::from(false));
        }
        // The agent writes into the bucket; the job waits for that grant.
        let writer = get("gcp.openbao.iam_member[\"transfer-agent-snapshots\"]");
        assert_eq!(
            writer.attributes["role"],
            engine::Value::from("roles/storage.legacyBucketWriter")
        );
        assert_eq!(
            writer.attributes["member"],
            engine::Value::reference(
                &engine::Address::new("gcp.openbao.storage_transfer_agent"),
                "member"
            )
        );
        assert!(job.depends_on.contains(&writer.address));
        // Without a mirror: none of the three.
        let plain = expand(SPEC).unwrap();
        assert!(!plain.iter().any(|r| r.address.as_str().contains("transfer")));
        // A role's ARN as text works too; a bad one, job name or date is refused.
        let literal = MIRROR.replace(
            "role_arn = { spec = \"aws-gcp-federation\", address = 'aws.federation.iam_role[\"m\"]', attribute = \"arn\" }",
            "role_arn = \"arn:aws:iam::1:role/m\"",
        );
        assert!(expand(&format!("{SPEC}{literal}")).is_ok());
        let bad = literal
            .replace("arn:aws:iam::1:role/m", "m")
            .replace("2026-01-01", "2026-13-01")
            .replace("start_date", "job = \"OPIx\"\nstart_date");
        let errors = expand(&format!("{SPEC}{bad}")).unwrap_err();
        for expected in [
            "openbao.server.snapshots.mirror.role_arn: an IAM role ARN",
            "openbao.server.snapshots.mirror.job: `OPIx` is not a transfer job name",
            "openbao.server.snapshots.mirror.start_date: `2026-13-01` is not a date",
        ] {
            assert!(errors.contains(expected), "{expected} not in\n{errors}");
        }
    }

    #[test]
    fn bad_names_are_refused_with_their_line() {
        let bad = SPEC
            .replace("ogenki-435905-ogenki-openbao-snapshot", "Bad.Bucket")
            .replace("key = \"openbao-unseal\"", "key = \"no spaces allowed\"\nrotation_days = 0")
            .replace(
                "tls_secret = \"openbao-priv-gcp-server-cert\"",
                "tls_secret = \"a/b\"\nmachine_type = \"big\"",
            );
        let errors = expand(&bad).unwrap_err();
        for expected in [
            "openbao.server.snapshots.bucket: `Bad.Bucket` is not a bucket name",
            "openbao.server.seal.key: `no spaces allowed` is not a Cloud KMS name",
            "openbao.server.seal.rotation_days: rotate at most once a day",
            "openbao.server.tls_secret: `a/b` is not a Secret Manager secret id",
            "openbao.server.machine_type: `big` is not a machine type",
        ] {
            assert!(errors.contains(expected), "{expected} not in\n{errors}");
        }
    }
}
