//! Expansion of `[network]` into resources.

use super::spec::{NatMode, NetworkSpec};
use crate::tagging as tags;
use engine::spec::Globals;
use engine::{Address, ResourceSpec, Value};
use serde_json::json;
use std::collections::BTreeMap;

/// Stage prefix of every network resource.
pub const STAGE: &str = "aws.network";

fn addr(rest: &str) -> Address {
    Address::new(format!("{STAGE}.{rest}"))
}

/// Builds the resources of a validated network spec.
pub fn resources(spec_name: &str, globals: &Globals, net: &NetworkSpec) -> Vec<ResourceSpec> {
    let cluster = &globals.cluster_name;
    let common = [&globals.tags, &net.tags];
    let tag = |address: &Address, name: &str, extra: Option<&BTreeMap<String, String>>| {
        let mut layers: Vec<&BTreeMap<String, String>> = common.to_vec();
        if let Some(e) = extra {
            layers.push(e);
        }
        tags::desired(spec_name, address, name, &layers)
    };
    let mut out = Vec::new();

    let vpc = addr("vpc.main");
    out.push(
        ResourceSpec::new(vpc.clone(), "aws_vpc")
            .attr("cidr_block", net.vpc_cidr.as_str())
            .attr("enable_dns_hostnames", true)
            .attr("enable_dns_support", true)
            .attr("tags", tag(&vpc, cluster, None)),
    );
    let vpc_id = Value::reference(&vpc, "id");
    let mut cidr_assocs = Vec::new();
    for c in &net.secondary_cidrs {
        let a = addr("vpc_cidr").index(c);
        out.push(
            ResourceSpec::new(a.clone(), "aws_vpc_cidr_association")
                .attr("vpc_id", vpc_id.clone())
                .attr("cidr_block", c.as_str()),
        );
        cidr_assocs.push(a);
    }

    // Subnets, per tier and AZ.
    let mut subnets: BTreeMap<(&str, &str), Address> = BTreeMap::new();
    for (tier_name, tier) in net.subnets.tiers() {
        for (az, cidr) in net.azs.iter().zip(&tier.cidrs) {
            let a = addr(&format!("subnet.{tier_name}")).index(az);
            let mut r = ResourceSpec::new(a.clone(), "aws_subnet")
                .attr("vpc_id", vpc_id.clone())
                .attr("cidr_block", cidr.as_str())
                .attr("availability_zone", az.as_str())
                .attr("map_public_ip_on_launch", tier_name == "public")
                .attr("tags", tag(&a, &format!("{cluster}-{tier_name}-{az}"), Some(&tier.tags)));
            // A subnet in a secondary CIDR needs the association first.
            let in_primary =
                match (cidr.parse::<ipnet::Ipv4Net>(), net.vpc_cidr.parse::<ipnet::Ipv4Net>()) {
                    (Ok(s), Ok(v)) => v.contains(&s),
                    _ => true,
                };
            if !in_primary {
                for assoc in &cidr_assocs {
                    r = r.after(assoc);
                }
            }
            out.push(r);
            subnets.insert((tier_name, az.as_str()), a);
        }
    }

    // Internet access for the public tier.
    let mut igw_attachment = None;
    if net.subnets.public.is_some() {
        let igw = addr("internet_gateway.main");
        out.push(
            ResourceSpec::new(igw.clone(), "aws_internet_gateway")
                .attr("tags", tag(&igw, cluster, None)),
        );
        let att = addr("internet_gateway_attachment.main");
        out.push(
            ResourceSpec::new(att.clone(), "aws_internet_gateway_attachment")
                .attr("internet_gateway_id", Value::reference(&igw, "id"))
                .attr("vpc_id", vpc_id.clone()),
        );
        let rt = addr("route_table.public");
        out.push(
            ResourceSpec::new(rt.clone(), "aws_route_table")
                .attr("vpc_id", vpc_id.clone())
                .attr("tags", tag(&rt, &format!("{cluster}-public"), None)),
        );
        out.push(
            ResourceSpec::new(addr("route.public_internet"), "aws_route")
                .attr("route_table_id", Value::reference(&rt, "id"))
                .attr("destination_cidr_block", "0.0.0.0/0")
                .attr("gateway_id", Value::reference(&igw, "id"))
                .after(&att),
        );
        igw_attachment = Some(att);
    }

    // NAT gateways: one in the first AZ, or one per AZ.
    let nat_azs: Vec<&String> = match net.nat {
        NatMode::Single => net.azs.iter().take(1).collect(),
        NatMode::PerAz => net.azs.iter().collect(),
        NatMode::None => vec![],
    };
    let mut nats: BTreeMap<&str, Address> = BTreeMap::new();
    for az in &nat_azs {
        let eip = addr("eip.nat").index(az);
        out.push(
            ResourceSpec::new(eip.clone(), "aws_eip")
                .attr("domain", "vpc")
                .attr("tags", tag(&eip, &format!("{cluster}-nat-{az}"), None)),
        );
        let nat = addr("nat_gateway.main").index(az);
        let mut r = ResourceSpec::new(nat.clone(), "aws_nat_gateway")
            .attr("subnet_id", Value::reference(&subnets[&("public", az.as_str())], "id"))
            .attr("allocation_id", Value::reference(&eip, "id"))
            .attr("connectivity_type", "public")
            .attr("tags", tag(&nat, &format!("{cluster}-{az}"), None));
        if let Some(att) = &igw_attachment {
            r = r.after(att);
        }
        out.push(r);
        nats.insert(az.as_str(), nat);
    }

    // Private route tables: one shared (single NAT) or one per AZ, each with a default route.
    let per_az_private = net.nat == NatMode::PerAz;
    let private_rt = |az: &str| -> Address {
        if per_az_private {
            addr("route_table.private").index(az)
        } else {
            addr("route_table.private")
        }
    };
    let needs_private_rt = net.subnets.private.is_some() || net.subnets.pod.is_some();
    let mut private_tables: Vec<Address> = Vec::new();
    if needs_private_rt {
        let keys: Vec<&String> = if per_az_private {
            net.azs.iter().collect()
        } else {
            net.azs.iter().take(1).collect()
        };
        for az in keys {
            let rt = private_rt(az);
            let name = if per_az_private {
                format!("{cluster}-private-{az}")
            } else {
                format!("{cluster}-private")
            };
            out.push(
                ResourceSpec::new(rt.clone(), "aws_route_table")
                    .attr("vpc_id", vpc_id.clone())
                    .attr("tags", tag(&rt, &name, None)),
            );
            let nat = if per_az_private { nats.get(az.as_str()) } else { nats.values().next() };
            if let Some(nat) = nat {
                let route = if per_az_private {
                    addr("route.private_nat").index(az)
                } else {
                    addr("route.private_nat")
                };
                out.push(
                    ResourceSpec::new(route, "aws_route")
                        .attr("route_table_id", Value::reference(&rt, "id"))
                        .attr("destination_cidr_block", "0.0.0.0/0")
                        .attr("nat_gateway_id", Value::reference(nat, "id")),
                );
            }
            private_tables.push(rt);
        }
    }
    let intra_rt = addr("route_table.intra");
    if net.subnets.intra.is_some() {
        out.push(
            ResourceSpec::new(intra_rt.clone(), "aws_route_table")
                .attr("vpc_id", vpc_id.clone())
                .attr("tags", tag(&intra_rt, &format!("{cluster}-intra"), None)),
        );
    }

    // Associations.
    for ((tier_name, az), subnet) in &subnets {
        let rt = match *tier_name {
            "public" => addr("route_table.public"),
            "intra" => intra_rt.clone(),
            _ => private_rt(az),
        };
        let a = addr(&format!("route_table_association.{tier_name}")).index(az);
        out.push(
            ResourceSpec::new(a, "aws_route_table_association")
                .attr("subnet_id", Value::reference(subnet, "id"))
                .attr("route_table_id", Value::reference(&rt, "id")),
        );
    }

    // S3 gateway endpoint on the private (and intra) route tables.
    if net.s3_gateway_endpoint {
        let ep = addr("vpc_endpoint.s3");
        let mut tables: Vec<Value> =
            private_tables.iter().map(|t| Value::reference(t, "id")).collect();
        if net.subnets.intra.is_some() {
            tables.push(Value::reference(&intra_rt, "id"));
        }
        out.push(
            ResourceSpec::new(ep.clone(), "aws_vpc_endpoint")
                .attr("vpc_id", vpc_id.clone())
                .attr("service_name", format!("com.amazonaws.{}.s3", globals.region))
                .attr("vpc_endpoint_type", "Gateway")
                .attr("route_table_ids", Value::List(tables))
                .attr("tags", tag(&ep, &format!("{cluster}-s3"), None)),
        );
    }

    // The private-access security group.
    if let Some(pa) = &net.private_access {
        let sg = addr("security_group.private_access");
        let sg_name = format!("{cluster}-private-access");
        out.push(
            ResourceSpec::new(sg.clone(), "aws_security_group")
                .attr("foreign_rules", Value::List(vec![]))
                .attr("name", sg_name.as_str())
                .attr("description", "Private access to the VPC from the operator network")
                .attr("vpc_id", vpc_id.clone())
                .attr("tags", tag(&sg, &sg_name, None)),
        );
        let egress = addr("security_group_rule.private_access_egress_all");
        out.push(
            ResourceSpec::new(egress.clone(), "aws_security_group_rule")
                .attr("security_group_id", Value::reference(&sg, "id"))
                .attr("direction", "egress")
                .attr("protocol", "-1")
                .attr("from_port", -1i64)
                .attr("to_port", -1i64)
                .attr("cidr_ipv4", "0.0.0.0/0")
                .attr("description", "all egress")
                .attr("tags", tag(&egress, "egress-all", None)),
        );
        for (i, c) in pa.allowed_cidrs.iter().enumerate() {
            let r = addr("security_group_rule.private_access_ingress").index(&i.to_string());
            out.push(
                ResourceSpec::new(r.clone(), "aws_security_group_rule")
                    .attr("security_group_id", Value::reference(&sg, "id"))
                    .attr("direction", "ingress")
                    .attr("protocol", "-1")
                    .attr("from_port", -1i64)
                    .attr("to_port", -1i64)
                    .attr("cidr_ipv4", c.as_str())
                    .attr("description", "operator network")
                    .attr("tags", tag(&r, "operator-network", None)),
            );
        }
    }

    // Private DNS zone.
    if let Some(z) = &net.private_zone {
        let zone = addr("route53_zone.private");
        let name = z.name.clone().unwrap_or_else(|| format!("priv.aws.{}", globals.domain));
        out.push(
            ResourceSpec::new(zone.clone(), "aws_route53_zone")
                .attr("name", name.as_str())
                .attr("vpc_id", vpc_id.clone())
                .attr("vpc_region", globals.region.as_str())
                .attr("comment", format!("{cluster} private zone"))
                .attr("tags", tag(&zone, &name, None)),
        );
    }

    // Flow logs to CloudWatch Logs.
    if let Some(fl) = net.flow_logs.as_ref().filter(|f| f.enabled) {
        let group = addr("log_group.flow_logs");
        let group_name = format!("/aws/vpc/{cluster}/flow-logs");
        out.push(
            ResourceSpec::new(group.clone(), "aws_cloudwatch_log_group")
                .attr("name", group_name.as_str())
                .attr("retention_in_days", fl.retention_days)
                .attr("tags", tag(&group, &group_name, None)),
        );
        let role = addr("iam_role.flow_logs");
        let role_name = format!("{cluster}-vpc-flow-logs");
        out.push(
            ResourceSpec::new(role.clone(), "aws_iam_role")
                .attr("name", role_name.as_str())
                .attr(
                    "assume_role_policy",
                    Value::Json(json!({
                        "Version": "2012-10-17",
                        "Statement": [{
                            "Effect": "Allow",
                            "Principal": {"Service": "vpc-flow-logs.amazonaws.com"},
                            "Action": "sts:AssumeRole"
                        }]
                    })),
                )
                .attr("tags", tag(&role, &role_name, None)),
        );
        let policy = addr("iam_role_policy.flow_logs");
        out.push(
            ResourceSpec::new(policy, "aws_iam_role_policy")
                .attr("role_name", Value::reference(&role, "name"))
                .attr("name", "flow-logs-to-cloudwatch")
                .attr(
                    "policy",
                    Value::Json(json!({
                        "Version": "2012-10-17",
                        "Statement": [{
                            "Effect": "Allow",
                            "Action": [
                                "logs:CreateLogStream",
                                "logs:PutLogEvents",
                                "logs:DescribeLogGroups",
                                "logs:DescribeLogStreams"
                            ],
                            "Resource": "*"
                        }]
                    })),
                ),
        );
        let flow = addr("flow_log.vpc");
        out.push(
            ResourceSpec::new(flow.clone(), "aws_flow_log")
                .attr("resource_id", vpc_id.clone())
                .attr("traffic_type", fl.traffic_type.as_str())
                .attr("log_group_name", Value::reference(&group, "name"))
                .attr("deliver_logs_permission_arn", Value::reference(&role, "arn"))
                .attr("tags", tag(&flow, &format!("{cluster}-flow-logs"), None)),
        );
    }
    out
}
