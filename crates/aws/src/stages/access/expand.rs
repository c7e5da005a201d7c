//! Expansion of `[access]` into resources.

use super::boot_script::{BootScript, render};
use super::spec::{AccessSpec, key_description};
use crate::stages::network::spec::NetworkSpec;
use crate::stages::service_trust;
use crate::tagging as tags;
use engine::spec::Globals;
use engine::{Address, ResourceSpec, Value};
use serde_json::json;
use std::collections::BTreeMap;

/// Stage prefix of every private-access resource.
pub const STAGE: &str = "aws.access";

/// The tag other stacks find the router's security group by (the reference's).
const ROUTER_TAG: (&str, &str) = ("app", "tailscale");

fn addr(rest: &str) -> Address {
    Address::new(format!("{STAGE}.{rest}"))
}

fn network(rest: &str) -> Address {
    Address::new(format!("{}.{rest}", crate::stages::network::STAGE))
}

/// What the engine's own path to private endpoints is made of, when `[access]` says the engine
/// reaches them through the tailnet: the router and the split DNS of each domain. Empty
/// otherwise.
pub fn private_path(globals: &Globals, net: &NetworkSpec, access: &AccessSpec) -> Vec<Address> {
    if !access.engine_through_tailnet {
        return vec![];
    }
    let mut path = vec![addr("autoscaling_group.router")];
    path.extend(access.domains(globals, net).iter().map(|d| addr("tailscale_dns_split").index(d)));
    path
}

/// The VPC's resolver: its primary range's base address + 2.
pub fn vpc_resolver(net: &NetworkSpec) -> Option<String> {
    let range: ipnet::Ipv4Net = net.vpc_cidr.parse().ok()?;
    Some(std::net::Ipv4Addr::from(u32::from(range.network()) + 2).to_string())
}

/// Builds the resources of a validated `[access]`.
pub fn resources(
    spec_name: &str,
    globals: &Globals,
    net: &NetworkSpec,
    access: &AccessSpec,
) -> Vec<ResourceSpec> {
    let router = &access.router;
    let base = format!("{router}-tailscale");
    let router_tags = BTreeMap::from([(ROUTER_TAG.0.to_string(), ROUTER_TAG.1.to_string())]);
    let layers = [&globals.tags, &net.tags, &router_tags];
    let tag = |address: &Address, name: &str| tags::desired(spec_name, address, name, &layers);
    let secret = access.key_secret();
    let routes = access.routes(net);
    let vpc_id = Value::reference(&network("vpc.main"), "id");
    let mut out = Vec::new();

    // The key, kept only in Secrets Manager.
    let key = addr("tailscale_auth_key.router");
    out.push(
        ResourceSpec::new(key.clone(), "tailscale_auth_key")
            .attr("description", key_description(router))
            .attr("reusable", true)
            .attr("ephemeral", false)
            .attr("preauthorized", true)
            .attr("tags", strings(&access.key_tags))
            .attr("expiry_seconds", access.key_expiry_days * 86_400)
            .attr("secret", secret.as_str()),
    );

    // Security group: egress all; node_exporter from the VPC.
    let sg = addr("security_group.router");
    out.push(
        ResourceSpec::new(sg.clone(), "aws_security_group")
            .attr("foreign_rules", Value::List(vec![]))
            .attr("name", base.as_str())
            .attr("description", "Tailscale subnet router")
            .attr("vpc_id", vpc_id.clone())
            .attr("tags", tag(&sg, &base)),
    );
    let rule = |a: Address, direction: &str, port: i64, cidr: &str, desc: &str| {
        ResourceSpec::new(a.clone(), "aws_security_group_rule")
            .attr("security_group_id", Value::reference(&sg, "id"))
            .attr("direction", direction)
            .attr("protocol", if port < 0 { "-1" } else { "tcp" })
            .attr("from_port", port)
            .attr("to_port", port)
            .attr("cidr_ipv4", cidr)
            .attr("description", desc)
            .attr("tags", tag(&a, desc))
    };
    out.push(rule(
        addr("security_group_rule.router_egress_all"),
        "egress",
        -1,
        "0.0.0.0/0",
        "all egress",
    ));
    if access.node_exporter {
        let a = addr("security_group_rule.router_node_exporter");
        out.push(rule(a, "ingress", 9100, &net.vpc_cidr, "node_exporter"));
    }

    // Instance role: the key's secret, and SSM.
    let role = addr("iam_role.router");
    out.push(
        ResourceSpec::new(role.clone(), "aws_iam_role")
            .attr("name", base.as_str())
            .attr("assume_role_policy", service_trust("ec2.amazonaws.com", &["sts:AssumeRole"]))
            .attr("tags", tag(&role, &base)),
    );
    let policy = addr("iam_role_policy.router");
    out.push(
        ResourceSpec::new(policy.clone(), "aws_iam_role_policy")
            .attr("role_name", Value::reference(&role, "name"))
            .attr("name", "tailnet-key")
            .attr(
                "policy",
                Value::Json(json!({
                    "Version": "2012-10-17",
                    "Statement": [{
                        "Sid": "TailnetKey",
                        "Effect": "Allow",
                        "Action": ["secretsmanager:GetSecretValue"],
                        "Resource": [format!(
                            "arn:aws:secretsmanager:{}:*:secret:{secret}-*",
                            globals.region
                        )]
                    }]
                })),
            ),
    );
    out.push(
        ResourceSpec::new(
            addr("iam_role_policy_attachment.router_ssm"),
            "aws_iam_role_policy_attachment",
        )
        .attr("role_name", Value::reference(&role, "name"))
        .attr("policy_arn", "arn:aws:iam::aws:policy/AmazonSSMManagedInstanceCore"),
    );
    let profile = addr("iam_instance_profile.router");
    out.push(
        ResourceSpec::new(profile.clone(), "aws_iam_instance_profile")
            .attr("name", base.as_str())
            .attr("role_name", Value::reference(&role, "name"))
            .attr("tags", tag(&profile, &base)),
    );

    // The router: one instance in the private subnets, kept by its group.
    let mut groups = vec![Value::reference(&sg, "id")];
    if net.private_access.is_some() {
        // The security group the cluster's API and OpenBao let in.
        groups.push(Value::reference(&network("security_group.private_access"), "id"));
    }
    let script = render(&BootScript {
        router,
        region: &globals.region,
        key_secret: &secret,
        routes: &routes,
        ssh: access.ssh,
        node_exporter: access.node_exporter,
    });
    let lt = addr("launch_template.router");
    out.push(
        ResourceSpec::new(lt.clone(), "aws_launch_template")
            .attr("name", base.as_str())
            .attr("image_id", access.image.as_str())
            .attr("instance_type", access.instance_type.as_str())
            .attr("iam_instance_profile_arn", Value::reference(&profile, "arn"))
            .attr("security_group_ids", Value::List(groups))
            .attr("user_data", script)
            .attr("http_tokens", "required")
            .attr("http_put_response_hop_limit", 1i64)
            .attr("instance_metadata_tags", false)
            .attr("monitoring", false)
            .attr(
                "root_volume",
                Value::Json(json!({
                    "device_name": "/dev/sda1",
                    "size_gib": access.root_volume_gib,
                    "volume_type": "gp3",
                    "encrypted": true,
                })),
            )
            .attr("tags", tag(&lt, &base)),
    );
    let private_subnets: Vec<Value> = net
        .azs
        .iter()
        .map(|az| Value::reference(&network("subnet.private").index(az), "id"))
        .collect();
    let asg = addr("autoscaling_group.router");
    out.push(
        ResourceSpec::new(asg.clone(), "aws_autoscaling_group")
            .attr("name", base.as_str())
            .attr("launch_template_id", Value::reference(&lt, "id"))
            .attr("launch_template_version", "$Latest")
            .attr("min_size", 1i64)
            .attr("max_size", 1i64)
            .attr("desired_capacity", 1i64)
            .attr("subnet_ids", Value::List(private_subnets))
            .attr("target_group_arns", Value::List(vec![]))
            .attr("health_check_type", "EC2")
            .attr("health_check_grace_period", 300i64)
            .attr("tags", tag(&asg, router))
            // It boots reading the key with the role: both exist first.
            .after(&policy)
            .after(&key),
    );

    // Split DNS: the VPC's private domains through its resolver.
    if let Some(resolver) = vpc_resolver(net) {
        for domain in access.domains(globals, net) {
            out.push(
                ResourceSpec::new(
                    addr("tailscale_dns_split").index(&domain),
                    "tailscale_dns_split",
                )
                .attr("domain", domain.as_str())
                .attr("nameservers", Value::List(vec![Value::from(resolver.as_str())]))
                // Answered once the router forwards to the resolver.
                .after(&asg),
            );
        }
    }
    out
}

fn strings(items: &[String]) -> Value {
    Value::List(items.iter().map(|s| Value::from(s.as_str())).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_resolver_is_the_vpc_base_plus_two() {
        let net: NetworkSpec = toml::from_str(
            "vpc_cidr = \"10.0.0.0/16\"\nazs = [\"eu-west-3a\"]\n[subnets.private]\ncidrs = [\"10.0.0.0/20\"]\n",
        )
        .unwrap();
        assert_eq!(vpc_resolver(&net).as_deref(), Some("10.0.0.2"));
    }
}
