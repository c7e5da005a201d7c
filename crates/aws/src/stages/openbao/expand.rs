//! Expansion of `[openbao.server]` into resources.

use super::spec::{ServerSpec, bucket_name, zone_name};
use super::user_data::{UserData, render};
use crate::stages::network::spec::NetworkSpec;
use crate::tagging as tags;
use engine::spec::Globals;
use engine::{Address, ResourceSpec, Value};
use serde_json::json;
use std::collections::BTreeMap;

/// Stage prefix of every OpenBao server resource.
pub const STAGE: &str = "aws.openbao";

/// The instance tag raft auto-join looks for (its value is the cluster name).
pub const JOIN_TAG: &str = "openbao-cluster";

/// OpenBao's API and cluster ports.
const API_PORT: i64 = 8200;
const CLUSTER_PORT: i64 = 8201;
/// The load balancer's health check, the reference's.
const HEALTH_PATH: &str = "/v1/sys/health?standbyok=true&uninitcode=200&sealedcode=200\
                           &drsecondarycode=200&performancestandbyok=true";

fn addr(rest: &str) -> Address {
    Address::new(format!("{STAGE}.{rest}"))
}

/// What OpenBao's configuration through its API waits for, when the spec makes them: the
/// servers (their autoscaling group) and the DNS name the engine reaches them by.
pub fn serving() -> Vec<Address> {
    vec![addr("autoscaling_group.server"), addr("route53_record.api")]
}

fn network(rest: &str) -> Address {
    Address::new(format!("{}.{rest}", crate::stages::network::STAGE))
}

/// A JSON document whose values may reference other resources.
fn doc(v: serde_json::Value) -> Value {
    Value::Json(v)
}

fn statement(sid: &str, actions: &[&str], resources: Vec<Value>) -> Value {
    let mut m = BTreeMap::new();
    m.insert("Sid".to_string(), Value::from(sid));
    m.insert("Effect".to_string(), Value::from("Allow"));
    m.insert("Action".to_string(), Value::List(actions.iter().map(|a| Value::from(*a)).collect()));
    m.insert("Resource".to_string(), Value::List(resources));
    Value::Map(m)
}

/// Builds the resources of a validated `[openbao.server]`.
pub fn resources(
    spec_name: &str,
    globals: &Globals,
    net: &NetworkSpec,
    server: &ServerSpec,
) -> Vec<ResourceSpec> {
    let cluster = &globals.cluster_name;
    let base = format!("{cluster}-openbao");
    let common = [&globals.tags, &server.tags];
    let tag = |address: &Address, name: &str| tags::desired(spec_name, address, name, &common);
    let secondary = globals.secondary_region.clone().unwrap_or_default();
    let zone = zone_name(globals, net).unwrap_or_default();
    let fqdn = format!("{}.{zone}", server.hostname);
    let bucket = bucket_name(globals, server);
    let seal_alias = format!("alias/{}", server.seal_key_alias);
    let snapshot_alias = format!("alias/{}", server.snapshot_key_alias);
    let mut out = Vec::new();

    // Lineage: kept by destroy unless confirmed.
    let seal = addr("kms_key.seal");
    out.push(protected(
        ResourceSpec::new(seal.clone(), "aws_kms_key")
            .attr("description", format!("OpenBao auto-unseal key of {cluster}"))
            .attr("multi_region", true)
            .attr("key_spec", "SYMMETRIC_DEFAULT")
            .attr("key_usage", "ENCRYPT_DECRYPT")
            .attr("enable_key_rotation", true)
            .attr("tags", tag(&seal, &format!("{base}-seal"))),
    ));
    let seal_alias_addr = addr("kms_alias.seal");
    out.push(protected(
        ResourceSpec::new(seal_alias_addr, "aws_kms_alias")
            .attr("name", seal_alias.as_str())
            .attr("target_key_id", Value::reference(&seal, "id")),
    ));
    let replica = addr("kms_replica_key.seal");
    out.push(protected(
        ResourceSpec::new(replica.clone(), "aws_kms_replica_key")
            .attr("primary_key_id", Value::reference(&seal, "id"))
            .attr("region", secondary.as_str())
            .attr("description", format!("OpenBao auto-unseal key of {cluster} (replica)"))
            .attr("tags", tag(&replica, &format!("{base}-seal"))),
    ));
    let snap_key = addr("kms_key.snapshots");
    out.push(protected(
        ResourceSpec::new(snap_key.clone(), "aws_kms_key")
            .attr("description", format!("OpenBao snapshots of {cluster}"))
            .attr("multi_region", false)
            .attr("key_spec", "SYMMETRIC_DEFAULT")
            .attr("key_usage", "ENCRYPT_DECRYPT")
            .attr("enable_key_rotation", true)
            .attr("tags", tag(&snap_key, &format!("{base}-snapshots"))),
    ));
    out.push(protected(
        ResourceSpec::new(addr("kms_alias.snapshots"), "aws_kms_alias")
            .attr("name", snapshot_alias.as_str())
            .attr("target_key_id", Value::reference(&snap_key, "id")),
    ));
    let bucket_addr = addr("s3_bucket.snapshots");
    let s = &server.snapshots;
    out.push(protected(
        ResourceSpec::new(bucket_addr.clone(), "aws_s3_bucket")
            .attr("bucket", bucket.as_str())
            .attr("versioning", "Enabled")
            .attr("sse_algorithm", "aws:kms")
            .attr("kms_key_arn", Value::reference(&snap_key, "arn"))
            .attr("bucket_key_enabled", true)
            .attr(
                "public_access_block",
                doc(json!({
                    "block_public_acls": true,
                    "block_public_policy": true,
                    "ignore_public_acls": true,
                    "restrict_public_buckets": true,
                })),
            )
            .attr(
                "lifecycle_rules",
                doc(json!([{
                    "id": "snapshots",
                    "enabled": true,
                    "prefix": s.prefix,
                    "expiration_days": s.retention_days,
                    "noncurrent_expiration_days": s.noncurrent_retention_days,
                    "abort_multipart_days": 1,
                }])),
            )
            .attr("tags", tag(&bucket_addr, &bucket)),
    ));

    // Instance role: raft auto-join, unseal, TLS secret, snapshots.
    let role = addr("iam_role.server");
    out.push(
        ResourceSpec::new(role.clone(), "aws_iam_role")
            .attr("name", base.as_str())
            .attr(
                "assume_role_policy",
                doc(json!({
                    "Version": "2012-10-17",
                    "Statement": [{
                        "Effect": "Allow",
                        "Principal": {"Service": "ec2.amazonaws.com"},
                        "Action": "sts:AssumeRole"
                    }]
                })),
            )
            .attr("tags", tag(&role, &base)),
    );
    let secret_arn =
        format!("arn:aws:secretsmanager:{}:*:secret:{}-*", globals.region, server.tls_secret);
    let mut policy = BTreeMap::new();
    policy.insert("Version".to_string(), Value::from("2012-10-17"));
    policy.insert(
        "Statement".to_string(),
        Value::List(vec![
            statement("RaftAutoJoin", &["ec2:DescribeInstances"], vec![Value::from("*")]),
            statement(
                "Unseal",
                &["kms:Encrypt", "kms:Decrypt", "kms:DescribeKey"],
                vec![Value::reference(&seal, "arn")],
            ),
            statement(
                "TlsSecret",
                &["secretsmanager:GetSecretValue", "secretsmanager:DescribeSecret"],
                vec![Value::from(secret_arn)],
            ),
            statement(
                "SnapshotsWrite",
                &["s3:PutObject", "s3:GetObject", "s3:ListBucket"],
                vec![
                    Value::from(format!("arn:aws:s3:::{bucket}")),
                    Value::from(format!("arn:aws:s3:::{bucket}/{}*", s.prefix)),
                ],
            ),
            statement(
                "SnapshotsKey",
                &["kms:Encrypt", "kms:Decrypt", "kms:GenerateDataKey"],
                vec![Value::reference(&snap_key, "arn")],
            ),
        ]),
    );
    out.push(
        ResourceSpec::new(addr("iam_role_policy.server"), "aws_iam_role_policy")
            .attr("role_name", Value::reference(&role, "name"))
            .attr("name", "openbao-server")
            .attr("policy", Value::Map(policy)),
    );
    if server.ssm {
        let ssm = addr("iam_role_policy_attachment.server_ssm");
        out.push(
            ResourceSpec::new(ssm, "aws_iam_role_policy_attachment")
                .attr("role_name", Value::reference(&role, "name"))
                .attr("policy_arn", "arn:aws:iam::aws:policy/AmazonSSMManagedInstanceCore"),
        );
    }
    let profile = addr("iam_instance_profile.server");
    out.push(
        ResourceSpec::new(profile.clone(), "aws_iam_instance_profile")
            .attr("name", base.as_str())
            .attr("role_name", Value::reference(&role, "name"))
            .attr("tags", tag(&profile, &base)),
    );

    // Security groups: the nodes, and the load balancer.
    let vpc_id = Value::reference(&network("vpc.main"), "id");
    let sg = addr("security_group.server");
    out.push(
        ResourceSpec::new(sg.clone(), "aws_security_group")
            .attr("foreign_rules", Value::List(vec![]))
            .attr("name", base.as_str())
            .attr("description", "OpenBao nodes")
            .attr("vpc_id", vpc_id.clone())
            .attr("tags", tag(&sg, &base)),
    );
    let lb_sg = addr("security_group.lb");
    let lb_sg_name = format!("{base}-lb");
    out.push(
        ResourceSpec::new(lb_sg.clone(), "aws_security_group")
            .attr("foreign_rules", Value::List(vec![]))
            .attr("name", lb_sg_name.as_str())
            .attr("description", "OpenBao load balancer")
            .attr("vpc_id", vpc_id.clone())
            .attr("tags", tag(&lb_sg, &lb_sg_name)),
    );
    // The VPC and its secondary (pod) ranges reach the API, as the reference's 10.0.0.0/16 and
    // 100.64.0.0/16; and the private access (the tailnet's router).
    let mut clients: Vec<&str> = vec![net.vpc_cidr.as_str()];
    clients.extend(net.secondary_cidrs.iter().map(String::as_str));
    if let Some(pa) = &net.private_access {
        clients.extend(pa.allowed_cidrs.iter().map(String::as_str));
    }
    let rule = |a: Address, group: &Address, direction: &str, port: i64, desc: &str| {
        ResourceSpec::new(a.clone(), "aws_security_group_rule")
            .attr("security_group_id", Value::reference(group, "id"))
            .attr("direction", direction)
            .attr("protocol", if port < 0 { "-1" } else { "tcp" })
            .attr("from_port", port)
            .attr("to_port", port)
            .attr("description", desc)
            .attr("tags", tag(&a, desc))
    };
    for (i, cidr) in clients.iter().enumerate() {
        let r = rule(
            addr("security_group_rule.server_api").index(&i.to_string()),
            &sg,
            "ingress",
            API_PORT,
            "OpenBao API",
        );
        out.push(r.attr("cidr_ipv4", *cidr));
        let r = rule(
            addr("security_group_rule.lb_api").index(&i.to_string()),
            &lb_sg,
            "ingress",
            API_PORT,
            "OpenBao API",
        );
        out.push(r.attr("cidr_ipv4", *cidr));
    }
    let r = rule(
        addr("security_group_rule.server_cluster"),
        &sg,
        "ingress",
        CLUSTER_PORT,
        "raft and request forwarding",
    );
    out.push(r.attr("referenced_security_group_id", Value::reference(&sg, "id")));
    let r = rule(
        addr("security_group_rule.server_api_peers"),
        &sg,
        "ingress",
        API_PORT,
        "OpenBao API between nodes",
    );
    out.push(r.attr("referenced_security_group_id", Value::reference(&sg, "id")));
    let r = rule(addr("security_group_rule.server_egress_all"), &sg, "egress", -1, "all egress");
    out.push(r.attr("cidr_ipv4", "0.0.0.0/0"));
    let r = rule(
        addr("security_group_rule.lb_egress_api"),
        &lb_sg,
        "egress",
        API_PORT,
        "to the OpenBao nodes",
    );
    out.push(r.attr("referenced_security_group_id", Value::reference(&sg, "id")));

    // Load balancer, target group, listener.
    let private_subnets: Vec<Value> = net
        .azs
        .iter()
        .map(|az| Value::reference(&network("subnet.private").index(az), "id"))
        .collect();
    let tg = addr("lb_target_group.api");
    out.push(
        ResourceSpec::new(tg.clone(), "aws_lb_target_group")
            .attr("name", base.as_str())
            .attr("port", API_PORT)
            .attr("protocol", "TCP")
            .attr("vpc_id", vpc_id.clone())
            .attr("target_type", "instance")
            .attr(
                "health_check",
                doc(json!({
                    "protocol": "HTTPS",
                    "port": "traffic-port",
                    // The reference's query: standbys, uninitialised and sealed nodes answer 200,
                    // so a node that is still joining or waiting for its init is not recycled.
                    "path": HEALTH_PATH,
                    "interval_seconds": 30,
                    "healthy_threshold": 2,
                    "unhealthy_threshold": 2,
                    "matcher": "200",
                })),
            )
            .attr("tags", tag(&tg, &base)),
    );
    let lb = addr("lb.api");
    let lb_name = format!("{base}-lb");
    out.push(
        ResourceSpec::new(lb.clone(), "aws_lb")
            .attr("name", lb_name.as_str())
            .attr("internal", true)
            .attr("load_balancer_type", "network")
            .attr("subnet_ids", Value::List(private_subnets.clone()))
            .attr("security_group_ids", Value::List(vec![Value::reference(&lb_sg, "id")]))
            .attr("tags", tag(&lb, &lb_name)),
    );
    let listener = addr("lb_listener.api");
    out.push(
        ResourceSpec::new(listener.clone(), "aws_lb_listener")
            .attr("load_balancer_arn", Value::reference(&lb, "arn"))
            .attr("port", API_PORT)
            .attr("protocol", "TCP")
            .attr("target_group_arn", Value::reference(&tg, "arn"))
            .attr("tags", tag(&listener, &format!("{base}-api"))),
    );

    // Nodes.
    let user_data = render(&UserData {
        version: &server.version,
        package_sha256: server.package_sha256.as_deref(),
        plugin_url: &server.kms_plugin_url,
        plugin_sha256: server.kms_plugin_sha256.as_deref(),
        region: &globals.region,
        seal_key: &seal_alias,
        tls_secret: &server.tls_secret,
        join_tag_key: JOIN_TAG,
        join_tag_value: cluster,
        cluster_name: cluster,
        server_name: &fqdn,
    });
    let lt = addr("launch_template.server");
    out.push(
        ResourceSpec::new(lt.clone(), "aws_launch_template")
            .attr("name", base.as_str())
            .attr("image_id", server.image.as_str())
            .attr("instance_type", server.instance_type.as_str())
            .attr("iam_instance_profile_arn", Value::reference(&profile, "arn"))
            .attr("security_group_ids", Value::List(vec![Value::reference(&sg, "id")]))
            .attr("user_data", user_data)
            .attr("http_tokens", "required")
            .attr("http_put_response_hop_limit", 1i64)
            .attr("instance_metadata_tags", true)
            .attr("monitoring", true)
            .attr(
                "root_volume",
                doc(json!({
                    "device_name": server.root_device,
                    "size_gib": server.root_volume_gib,
                    "volume_type": "gp3",
                    "encrypted": true,
                })),
            )
            .attr("tags", tag(&lt, &base))
            // Nodes boot with the TLS certificate the configuration issues into `tls_secret`,
            // when the spec has OpenBao issue it (`[openbao.tls]`).
            .after_if_present(&Address::new(format!("{}.openbao.config.tls", globals.cloud))),
    );
    let asg = addr("autoscaling_group.server");
    let nodes = server.mode.nodes();
    let mut asg_tag_layers: BTreeMap<String, String> = BTreeMap::new();
    asg_tag_layers.insert(JOIN_TAG.to_string(), cluster.clone());
    let asg_tags =
        tags::desired(spec_name, &asg, &base, &[&globals.tags, &server.tags, &asg_tag_layers]);
    out.push(
        ResourceSpec::new(asg.clone(), "aws_autoscaling_group")
            .attr("name", base.as_str())
            .attr("launch_template_id", Value::reference(&lt, "id"))
            .attr("launch_template_version", "$Latest")
            .attr("min_size", nodes)
            .attr("max_size", nodes)
            .attr("desired_capacity", nodes)
            .attr("subnet_ids", Value::List(private_subnets))
            .attr("target_group_arns", Value::List(vec![Value::reference(&tg, "arn")]))
            .attr("health_check_type", "ELB")
            // Long enough for a node to install, join and be initialised.
            .attr("health_check_grace_period", 600i64)
            .attr("tags", asg_tags)
            // The role must be able to read the secret and the keys before a node boots.
            .after(&addr("iam_role_policy.server")),
    );

    // DNS: bao.<private zone> -> the load balancer.
    out.push(
        ResourceSpec::new(addr("route53_record.api"), "aws_route53_record")
            .attr("zone_id", Value::reference(&network("route53_zone.private"), "id"))
            .attr("name", fqdn.to_ascii_lowercase())
            .attr("type", "A")
            .attr(
                "alias",
                Value::Map(BTreeMap::from([
                    ("dns_name".to_string(), Value::reference(&lb, "dns_name")),
                    ("zone_id".to_string(), Value::reference(&lb, "zone_id")),
                    ("evaluate_target_health".to_string(), Value::Bool(true)),
                ])),
            ),
    );
    out
}

fn protected(mut r: ResourceSpec) -> ResourceSpec {
    r.protected = true;
    r
}
