//! Expansion of `[eks]` into resources.
//!
//! Order that attributes do not express is made explicit with edges: node groups after the
//! control plane (a version upgrade goes control plane first) and after the `before_compute`
//! addons (what a node needs to become ready), the other addons after the node groups (then
//! after the upgraded nodes), pod identity associations after the pod identity agent; the
//! controller sweep between the network and the cluster.

use super::spec::{EksSpec, parse_duration};
use crate::stages::network::spec::NetworkSpec;
use crate::tagging as tags;
use engine::spec::Globals;
use engine::{Address, ResourceSpec, Value};
use serde_json::{Value as Json, json};
use std::collections::BTreeMap;

/// Stage prefix of every EKS resource.
pub const STAGE: &str = "aws.eks";

/// The AWS managed policies of the cluster role and of the node role.
const CLUSTER_POLICIES: &[&str] = &["AmazonEKSClusterPolicy"];
const NODE_POLICIES: &[&str] = &[
    "AmazonEKSWorkerNodePolicy",
    "AmazonEC2ContainerRegistryReadOnly",
    "AmazonEKS_CNI_Policy",
    "AmazonSSMManagedInstanceCore",
];

/// The address of the cluster resource.
pub fn cluster_address() -> Address {
    addr("cluster.main")
}

/// The security group the cluster's nodes are in: their own when a node group has a launch
/// template of its own (a pod limit), else EKS's cluster security group.
pub fn node_security_group(eks: &EksSpec) -> Value {
    match nodes_have_their_own_group(eks) {
        true => Value::reference(&addr("security_group.node"), "id"),
        false => Value::reference(&cluster_address(), "cluster_security_group_id"),
    }
}

fn nodes_have_their_own_group(eks: &EksSpec) -> bool {
    eks.node_groups.values().any(|ng| ng.max_pods.is_some())
}

/// What the expansion of `[eks]` gives the parts expanded beside it (pod identities, Karpenter).
pub(super) struct Context<'a> {
    pub cluster: &'a str,
    pub region: &'a str,
    /// The cluster resource's `name` (a reference: what depends on it waits for the cluster).
    pub cluster_name: &'a Value,
    pub cluster_address: &'a Address,
    /// The `eks-pod-identity-agent` addon, if the spec installs it.
    pub pod_identity_agent: Option<&'a Address>,
    /// The desired tags of a resource with a `Name`.
    pub tag: &'a dyn Fn(&Address, &str) -> Value,
    /// Inline policies on every node role, by name.
    pub node_role_policies: &'a [(String, Value)],
}

/// The inline policies every node role gets, on `role` (addressed `<role_key>/<name>`).
pub(super) fn node_role_policies(
    cx: &Context<'_>,
    role_key: &str,
    role: &Address,
) -> Vec<ResourceSpec> {
    cx.node_role_policies
        .iter()
        .map(|(name, document)| {
            ResourceSpec::new(
                addr("iam_role_policy").index(&format!("{role_key}/{name}")),
                "aws_iam_role_policy",
            )
            .attr("role_name", Value::reference(role, "name"))
            .attr("name", name.as_str())
            .attr("policy", document.clone())
        })
        .collect()
}

/// One pod identity of the cluster.
pub(super) struct PodIdentity<'a> {
    /// Its name in addresses; the role is `<cluster>-<name>`.
    pub name: &'a str,
    pub namespace: &'a str,
    pub service_account: &'a str,
    pub managed_policies: &'a [String],
    /// The inline policy's name and document.
    pub inline_policy: Option<(&'a str, Value)>,
    /// More inline policies: name and document.
    pub named_policies: Vec<(String, Value)>,
}

/// A role trusted by EKS Pod Identity, its managed and inline policies, and the association that
/// gives it to the service account (once the policies are in place and the agent runs).
pub(super) fn pod_identity(cx: &Context<'_>, pi: &PodIdentity<'_>) -> Vec<ResourceSpec> {
    let mut out = Vec::new();
    let name = pi.name;
    let role = addr("iam_role").index(&format!("pod-{name}"));
    let role_name = format!("{}-{name}", cx.cluster);
    out.push(
        ResourceSpec::new(role.clone(), "aws_iam_role")
            .attr("name", role_name.as_str())
            .attr(
                "assume_role_policy",
                trust("pods.eks.amazonaws.com", &["sts:AssumeRole", "sts:TagSession"]),
            )
            .attr("tags", (cx.tag)(&role, &role_name)),
    );
    let mut policies = Vec::new();
    for arn in pi.managed_policies {
        let p =
            addr("iam_role_policy_attachment").index(&format!("pod-{name}/{}", policy_name(arn)));
        out.push(
            ResourceSpec::new(p.clone(), "aws_iam_role_policy_attachment")
                .attr("role_name", Value::reference(&role, "name"))
                .attr("policy_arn", arn.as_str()),
        );
        policies.push(p);
    }
    if let Some((policy_name, document)) = &pi.inline_policy {
        let p = addr("iam_role_policy").index(&format!("pod-{name}"));
        out.push(
            ResourceSpec::new(p.clone(), "aws_iam_role_policy")
                .attr("role_name", Value::reference(&role, "name"))
                .attr("name", *policy_name)
                .attr("policy", document.clone()),
        );
        policies.push(p);
    }
    for (policy_name, document) in &pi.named_policies {
        let p = addr("iam_role_policy").index(&format!("pod-{name}/{policy_name}"));
        out.push(
            ResourceSpec::new(p.clone(), "aws_iam_role_policy")
                .attr("role_name", Value::reference(&role, "name"))
                .attr("name", policy_name.as_str())
                .attr("policy", document.clone()),
        );
        policies.push(p);
    }
    let a = addr("pod_identity_association").index(name);
    let mut r = ResourceSpec::new(a.clone(), "aws_eks_pod_identity_association")
        .attr("cluster_name", cx.cluster_name.clone())
        .attr("namespace", pi.namespace)
        .attr("service_account", pi.service_account)
        .attr("role_arn", Value::reference(&role, "arn"))
        .attr("tags", (cx.tag)(&a, &role_name));
    if let Some(agent) = cx.pod_identity_agent {
        r = r.after(agent);
    }
    for p in &policies {
        r = r.after(p);
    }
    out.push(r);
    out
}

/// The address of addon `name` (e.g. `vpc-cni`).
pub fn addon_address(name: &str) -> Address {
    addr("addon").index(name)
}

/// The DaemonSets the bootstrap patches, with the addon that installs each.
pub fn daemonset_installers() -> Vec<(String, Address)> {
    [("aws-node", "vpc-cni"), ("kube-proxy", "kube-proxy")]
        .into_iter()
        .map(|(daemonset, addon)| (daemonset.to_string(), addon_address(addon)))
        .collect()
}

pub(super) fn addr(rest: &str) -> Address {
    Address::new(format!("{STAGE}.{rest}"))
}

fn network(rest: &str) -> Address {
    Address::new(format!("{}.{rest}", crate::stages::network::STAGE))
}

pub(super) fn managed_policy_arn(name: &str) -> String {
    format!("arn:aws:iam::aws:policy/{name}")
}

/// The last path segment of a policy ARN (for addresses).
fn policy_name(arn: &str) -> &str {
    arn.rsplit('/').next().unwrap_or(arn)
}

pub(super) use crate::stages::service_trust as trust;

/// A TOML table as JSON.
fn table_json(table: &toml::Table) -> Json {
    serde_json::to_value(table).unwrap_or(Json::Null)
}

fn seconds(text: &str) -> i64 {
    parse_duration(text).map_or(0, |d| d.as_secs() as i64)
}

/// Builds the resources of a validated `[eks]`.
pub fn resources(
    spec_name: &str,
    globals: &Globals,
    net: &NetworkSpec,
    eks: &EksSpec,
) -> Vec<ResourceSpec> {
    let cluster = globals.cluster_name.as_str();
    let version = globals.versions.get("kubernetes").cloned().unwrap_or_default();
    let common = [&globals.tags, &eks.tags];
    let tag = |address: &Address, name: &str| tags::desired(spec_name, address, name, &common);
    let mut out = Vec::new();

    // Secrets encryption key.
    let key = addr("kms_key.secrets");
    out.push(
        ResourceSpec::new(key.clone(), "aws_kms_key")
            .attr("description", format!("Kubernetes secrets encryption of EKS cluster {cluster}"))
            .attr("multi_region", false)
            .attr("key_spec", "SYMMETRIC_DEFAULT")
            .attr("key_usage", "ENCRYPT_DECRYPT")
            .attr("enable_key_rotation", true)
            .attr("tags", tag(&key, &format!("{cluster}-eks-secrets"))),
    );
    out.push(
        ResourceSpec::new(addr("kms_alias.secrets"), "aws_kms_alias")
            .attr("name", format!("alias/eks/{cluster}"))
            .attr("target_key_id", Value::reference(&key, "id")),
    );

    // IAM roles of the control plane and of the nodes, with AWS managed policies.
    let role = |out: &mut Vec<ResourceSpec>, which: &str, service: &str, policies: &[&str]| {
        let a = addr("iam_role").index(which);
        let name = format!("{cluster}-eks-{which}");
        out.push(
            ResourceSpec::new(a.clone(), "aws_iam_role")
                .attr("name", name.as_str())
                .attr("assume_role_policy", trust(service, &["sts:AssumeRole", "sts:TagSession"]))
                .attr("tags", tag(&a, &name)),
        );
        for p in policies {
            out.push(
                ResourceSpec::new(
                    addr("iam_role_policy_attachment").index(&format!("{which}/{p}")),
                    "aws_iam_role_policy_attachment",
                )
                .attr("role_name", Value::reference(&a, "name"))
                .attr("policy_arn", managed_policy_arn(p)),
            );
        }
        a
    };
    let cluster_role = role(&mut out, "cluster", "eks.amazonaws.com", CLUSTER_POLICIES);
    let node_role = role(&mut out, "node", "ec2.amazonaws.com", NODE_POLICIES);
    let encryption_policy = addr("iam_role_policy.cluster_encryption");
    out.push(
        ResourceSpec::new(encryption_policy.clone(), "aws_iam_role_policy")
            .attr("role_name", Value::reference(&cluster_role, "name"))
            .attr("name", "secrets-encryption")
            .attr(
                "policy",
                Value::Map(BTreeMap::from([
                    ("Version".to_string(), Value::from("2012-10-17")),
                    (
                        "Statement".to_string(),
                        Value::List(vec![Value::Map(BTreeMap::from([
                            ("Effect".to_string(), Value::from("Allow")),
                            (
                                "Action".to_string(),
                                Value::List(
                                    [
                                        "kms:Encrypt",
                                        "kms:Decrypt",
                                        "kms:ListGrants",
                                        "kms:DescribeKey",
                                    ]
                                    .into_iter()
                                    .map(Value::from)
                                    .collect(),
                                ),
                            ),
                            ("Resource".to_string(), Value::reference(&key, "arn")),
                        ]))]),
                    ),
                ])),
            ),
    );

    // The control plane's security group: the API from the private-access path.
    let sg = addr("security_group.cluster");
    let sg_name = format!("{cluster}-eks-cluster");
    out.push(
        ResourceSpec::new(sg.clone(), "aws_security_group")
            .attr("foreign_rules", Value::List(vec![]))
            .attr("name", sg_name.as_str())
            .attr("description", format!("EKS control plane of {cluster}"))
            .attr("vpc_id", Value::reference(&network("vpc.main"), "id"))
            .attr("tags", tag(&sg, &sg_name)),
    );
    // One rule of a security group; `ports` is a TCP range, or `None` for all traffic.
    let rule =
        |a: Address, group: &Address, direction: &str, ports: Option<(i64, i64)>, desc: &str| {
            let (protocol, (from, to)) = match ports {
                Some(range) => ("tcp", range),
                None => ("-1", (-1, -1)),
            };
            ResourceSpec::new(a.clone(), "aws_security_group_rule")
                .attr("security_group_id", Value::reference(group, "id"))
                .attr("direction", direction)
                .attr("protocol", protocol)
                .attr("from_port", from)
                .attr("to_port", to)
                .attr("description", desc)
                .attr("tags", tag(&a, desc))
        };
    if net.private_access.is_some() {
        let from = network("security_group.private_access");
        out.push(
            rule(
                addr("security_group_rule.cluster_api_private_access"),
                &sg,
                "ingress",
                Some((443, 443)),
                "Kubernetes API from the private-access path",
            )
            .attr("referenced_security_group_id", Value::reference(&from, "id")),
        );
    }
    out.push(
        rule(addr("security_group_rule.cluster_egress_all"), &sg, "egress", None, "all egress")
            .attr("cidr_ipv4", "0.0.0.0/0"),
    );

    // The nodes' security group (on node groups with a launch template of their own; the others
    // get EKS's cluster security group): the control plane reaches kubelets and webhooks on
    // 1025-65535, pods (the secondary CIDR) reach everything, nodes reach each other, and the
    // nodes reach the API.
    let node_sg = addr("security_group.node");
    let node_sg_name = format!("{cluster}-eks-node");
    if nodes_have_their_own_group(eks) {
        out.push(
            ResourceSpec::new(node_sg.clone(), "aws_security_group")
                .attr("foreign_rules", Value::List(vec![]))
                .attr("name", node_sg_name.as_str())
                .attr("description", format!("EKS nodes of {cluster}"))
                .attr("vpc_id", Value::reference(&network("vpc.main"), "id"))
                .attr("tags", tag(&node_sg, &node_sg_name)),
        );
        let from_group = |r: ResourceSpec, group: &Address| {
            r.attr("referenced_security_group_id", Value::reference(group, "id"))
        };
        out.push(from_group(
            rule(
                addr("security_group_rule.node_from_control_plane"),
                &node_sg,
                "ingress",
                Some((1025, 65535)),
                "kubelets and webhooks from the control plane",
            ),
            &sg,
        ));
        for pods in &net.secondary_cidrs {
            out.push(
                rule(
                    addr("security_group_rule.node_from_pods").index(pods),
                    &node_sg,
                    "ingress",
                    None,
                    "all traffic from pods",
                )
                .attr("cidr_ipv4", pods.as_str()),
            );
        }
        out.push(from_group(
            rule(
                addr("security_group_rule.node_from_nodes"),
                &node_sg,
                "ingress",
                None,
                "all traffic between nodes",
            ),
            &node_sg,
        ));
        out.push(
            rule(
                addr("security_group_rule.node_egress_all"),
                &node_sg,
                "egress",
                None,
                "all egress",
            )
            .attr("cidr_ipv4", "0.0.0.0/0"),
        );
        out.push(from_group(
            rule(
                addr("security_group_rule.cluster_api_from_nodes"),
                &sg,
                "ingress",
                Some((443, 443)),
                "Kubernetes API from the nodes",
            ),
            &node_sg,
        ));
    }

    // What the cluster's controllers make in the cloud: swept by a destroy after the cluster
    // and before the network (`aws_eks_controller_sweep`).
    let sweep = addr("controller_sweep.main");
    let mut zone_ids: Vec<Value> = Vec::new();
    if net.private_zone.is_some() {
        zone_ids.push(Value::reference(&network("route53_zone.private"), "id"));
    }
    zone_ids.extend(eks.sweep.external_dns_zone_ids.iter().map(|z| Value::from(z.as_str())));
    let mut swept = ResourceSpec::new(sweep.clone(), "aws_eks_controller_sweep")
        .attr("cluster_name", cluster)
        .attr("vpc_id", Value::reference(&network("vpc.main"), "id"))
        .attr("zone_ids", Value::List(zone_ids))
        .attr("external_dns_owner", eks.sweep.external_dns_owner.as_str());
    for (tier, _) in net.subnets.tiers() {
        for az in &net.azs {
            swept = swept.after_if_present(&network(&format!("subnet.{tier}")).index(az));
        }
    }
    out.push(swept);

    // The cluster.
    // The control plane's interfaces in `control_plane_subnets` (the reference's intra tier);
    // node groups in the private subnets of their zones.
    let tier_subnets = |tier: &str, azs: Option<&[String]>| -> Vec<Value> {
        let tier_address = network(&format!("subnet.{tier}"));
        net.azs
            .iter()
            .filter(|az| azs.is_none_or(|only| only.contains(az)))
            .map(|az| Value::reference(&tier_address.index(az), "id"))
            .collect()
    };
    let subnets_in = |azs: Option<&[String]>| tier_subnets("private", azs);
    let control_plane_subnets = tier_subnets(&eks.control_plane_subnets, None);
    let main = cluster_address();
    let mut logging = eks.logging.clone();
    logging.sort();
    logging.dedup();
    out.push(
        ResourceSpec::new(main.clone(), "aws_eks_cluster")
            .attr("name", cluster)
            .attr("version", version.as_str())
            .attr("role_arn", Value::reference(&cluster_role, "arn"))
            .attr("subnet_ids", Value::List(control_plane_subnets))
            .attr("security_group_ids", Value::List(vec![Value::reference(&sg, "id")]))
            .attr("endpoint_private_access", true)
            .attr("endpoint_public_access", eks.public_access)
            .attr("authentication_mode", "API")
            .attr("bootstrap_creator_admin", true)
            .attr("encryption_key_arn", Value::reference(&key, "arn"))
            .attr("service_cidr", eks.service_cidr.as_str())
            .attr("logging", Value::List(logging.iter().map(|l| Value::from(l.as_str())).collect()))
            .attr("timeout_seconds", seconds(&eks.timeouts.cluster))
            .attr("tags", tag(&main, cluster))
            // The role must have its policies before EKS checks it.
            .after(&encryption_policy)
            .after(&addr("iam_role_policy_attachment").index("cluster/AmazonEKSClusterPolicy"))
            .after(&sweep),
    );
    let cluster_name = Value::reference(&main, "name");

    // The OIDC provider of the cluster's issuer.
    let oidc = addr("iam_openid_connect_provider.main");
    let mut provider = ResourceSpec::new(oidc.clone(), "aws_iam_openid_connect_provider")
        .attr("url", Value::reference(&main, "oidc_issuer"))
        .attr("client_ids", Value::List(vec![Value::from("sts.amazonaws.com")]))
        .attr("tags", tag(&oidc, &format!("{cluster}-eks-oidc")));
    // No thumbprint: AWS checks EKS issuers against its own trusted CAs.
    let thumbprints: Vec<Value> = match eks.oidc_thumbprint.as_deref() {
        None | Some("skip") => vec![],
        Some(t) => vec![Value::from(t.to_ascii_lowercase())],
    };
    provider = provider.attr("thumbprints", Value::List(thumbprints));
    out.push(provider);

    // Node groups, after the addons a node needs to become ready.
    let before_compute: Vec<Address> = eks
        .addons
        .iter()
        .filter(|(_, a)| a.before_compute)
        .map(|(name, _)| addon_address(name))
        .collect();
    let mut node_groups = Vec::new();
    for (name, ng) in &eks.node_groups {
        let a = addr("node_group").index(name);
        let taints: Vec<Json> = ng
            .taints
            .iter()
            .map(|t| json!({"key": t.key, "value": t.value, "effect": t.effect}))
            .collect();
        // A pod limit needs a launch template of the node group's own; EKS chooses the image
        // and the instance profile, the template holds only Bottlerocket settings.
        let template = ng.max_pods.map(|max_pods| {
            let lt = addr("launch_template").index(name);
            let lt_name = format!("{cluster}-{name}");
            out.push(
                ResourceSpec::new(lt.clone(), "aws_launch_template")
                    .attr("name", lt_name.as_str())
                    .attr("user_data", super::bottlerocket::settings(max_pods))
                    .attr("security_group_ids", Value::List(vec![Value::reference(&node_sg, "id")]))
                    .attr("http_tokens", "required")
                    .attr("tags", tag(&lt, &lt_name)),
            );
            (lt, max_pods)
        });
        // Without one the fields are null, so dropping `max_pods` replaces the node group (EKS
        // cannot take a launch template away) instead of deleting the template under it.
        let group = match &template {
            Some((lt, max_pods)) => ResourceSpec::new(a.clone(), "aws_eks_node_group")
                .attr("launch_template_id", Value::reference(lt, "id"))
                .attr("launch_template_version", Value::reference(lt, "latest_version"))
                .attr("max_pods", *max_pods),
            None => ResourceSpec::new(a.clone(), "aws_eks_node_group")
                .attr("launch_template_id", Value::Null)
                .attr("launch_template_version", Value::Null)
                .attr("max_pods", Value::Null),
        };
        out.push(
            group
                .attr("cluster_name", cluster_name.clone())
                .attr("name", name.as_str())
                .attr("version", version.as_str())
                .attr("node_role_arn", Value::reference(&node_role, "arn"))
                .attr("subnet_ids", Value::List(subnets_in(ng.azs.as_deref())))
                .attr("ami_type", ng.ami_type.as_str())
                .attr("capacity_type", ng.capacity_type.as_str())
                .attr(
                    "instance_types",
                    Value::List(
                        ng.instance_types.iter().map(|t| Value::from(t.as_str())).collect(),
                    ),
                )
                .attr("min_size", ng.min_size)
                .attr("max_size", ng.max_size)
                .attr("desired_size", ng.desired_size)
                .attr("labels", Value::string_map(ng.labels.iter()))
                .attr("taints", Value::Json(Json::Array(taints)))
                .attr("timeout_seconds", seconds(&eks.timeouts.node_group))
                .attr("tags", tag(&a, &format!("{cluster}-{name}")))
                .after(&addr("iam_role_policy_attachment").index("node/AmazonEKSWorkerNodePolicy"))
                .after(&addr("iam_role_policy_attachment").index("node/AmazonEKS_CNI_Policy"))
                .after(
                    &addr("iam_role_policy_attachment")
                        .index("node/AmazonEC2ContainerRegistryReadOnly"),
                ),
        );
        if let Some(group) = out.last_mut() {
            for addon in &before_compute {
                group.depends_on.push(addon.clone());
            }
            if let Some(release) = &ng.release_version {
                group.attributes.insert("release_version".into(), Value::from(release.as_str()));
            }
        }
        node_groups.push(a);
    }

    // Addons, after the nodes they run on (but those a node needs, before them).
    for (name, addon) in &eks.addons {
        let a = addon_address(name);
        let mut r = ResourceSpec::new(a.clone(), "aws_eks_addon")
            .attr("cluster_name", cluster_name.clone())
            .attr("name", name.as_str())
            .attr("timeout_seconds", seconds(&eks.timeouts.addon))
            .attr("tags", tag(&a, &format!("{cluster}-{name}")));
        if let Some(v) = &addon.version {
            r = r.attr("version", v.as_str());
        }
        if let Some(c) = &addon.configuration {
            r = r.attr("configuration", Value::Json(table_json(c)));
        }
        if !addon.before_compute {
            for ng in &node_groups {
                r = r.after(ng);
            }
        }
        out.push(r);
    }

    // Access entries and their cluster-wide policies.
    for (name, entry) in &eks.access_entries {
        let a = addr("access_entry").index(name);
        out.push(
            ResourceSpec::new(a.clone(), "aws_eks_access_entry")
                .attr("cluster_name", cluster_name.clone())
                .attr("principal_arn", entry.principal_arn.as_str())
                .attr("type", "STANDARD")
                .attr("tags", tag(&a, &format!("{cluster}-{name}"))),
        );
        for policy in &entry.policies {
            out.push(
                ResourceSpec::new(
                    addr("access_policy_association").index(&format!("{name}/{policy}")),
                    "aws_eks_access_policy_association",
                )
                .attr("cluster_name", cluster_name.clone())
                .attr("principal_arn", Value::reference(&a, "principal_arn"))
                .attr("policy_arn", format!("arn:aws:eks::aws:cluster-access-policy/{policy}"))
                .attr("scope", "cluster"),
            );
        }
    }

    let node_policies: Vec<(String, Value)> = eks
        .node_role_policies
        .iter()
        .map(|(name, doc)| (name.clone(), Value::Json(table_json(doc))))
        .collect();

    // Pod identities: a role trusted by EKS Pod Identity, its policies, the association.
    let agent = addon_address("eks-pod-identity-agent");
    let cx = Context {
        cluster,
        region: &globals.region,
        cluster_name: &cluster_name,
        cluster_address: &main,
        pod_identity_agent: eks.addons.contains_key("eks-pod-identity-agent").then_some(&agent),
        tag: &tag,
        node_role_policies: &node_policies,
    };
    out.extend(node_role_policies(&cx, "node", &node_role));
    for (name, pi) in &eks.pod_identities {
        out.extend(pod_identity(
            &cx,
            &PodIdentity {
                name,
                namespace: &pi.namespace,
                service_account: &pi.service_account,
                managed_policies: &pi.managed_policies,
                inline_policy: pi
                    .policy
                    .as_ref()
                    .map(|doc| (name.as_str(), Value::Json(table_json(doc)))),
                named_policies: pi
                    .policies
                    .iter()
                    .map(|(n, doc)| (n.clone(), Value::Json(table_json(doc))))
                    .collect(),
            },
        ));
    }

    if let Some(k) = eks.karpenter.as_ref().filter(|k| k.enabled) {
        out.extend(super::karpenter::resources(&cx, k));
    }
    out
}
