//! The EKS stage (`[eks]`): the secrets key, the cluster and node IAM roles, the control
//! plane's security group, the cluster, its OIDC provider, managed node groups (with a launch
//! template when they set `max_pods`), addons, access entries, pod identities, and Karpenter's
//! prerequisites (`karpenter.rs`: interruption queue and its policy, EventBridge rules, node
//! role). The section and its expansion only; the kinds live by service (`crate::eks`,
//! `crate::iam`, `crate::sqs`, `crate::events`, ...).

pub(crate) mod bottlerocket;
mod expand;
mod karpenter;
pub mod spec;

pub use expand::{
    STAGE, addon_address, cluster_address, daemonset_installers, node_security_group,
};

use crate::stages::network::spec::NetworkSpec;
use engine::ResourceSpec;
use engine::spec::{Globals, SpecErrors, SpecSource};

/// Validates `[eks]` (if present) and expands it.
pub fn expand(spec: &SpecSource, globals: &Globals) -> Result<Vec<ResourceSpec>, SpecErrors> {
    let Some(eks) = spec.section::<spec::EksSpec>("eks")? else {
        return Ok(vec![]);
    };
    let net = spec.section::<NetworkSpec>("network")?;
    let errors = spec::validate(spec, globals, net.as_ref(), &eks);
    spec.errors(errors).into_result()?;
    let net = net.expect("validated: [network] is present");
    Ok(expand::resources(&spec.name(), globals, &net, &eks))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stages::testing::{errors_of, expand_with};

    const BASE: &str = r#"
[globals]
cloud = "aws"
region = "eu-west-3"
cluster_name = "aws-0"
domain = "example.org"

[globals.versions]
kubernetes = "1.36"

[network]
vpc_cidr = "10.0.0.0/16"
azs = ["eu-west-3a", "eu-west-3b"]
nat = "none"
private_access = { allowed_cidrs = ["100.100.0.0/16"] }

[network.subnets.private]
cidrs = ["10.0.0.0/20", "10.0.16.0/20"]
"#;

    const EKS: &str = r#"
[eks]
logging = ["audit", "api"]
oidc_thumbprint = "skip"

[eks.node_groups.main]
capacity_type = "SPOT"
instance_types = ["c7i.xlarge"]
min_size = 2
max_size = 3
desired_size = 2

[eks.addons.vpc-cni]
configuration = { env = { WARM_ENI_TARGET = "0" } }

[eks.addons.eks-pod-identity-agent]

[eks.access_entries.ops]
principal_arn = "arn:aws:iam::123456789012:role/ops"
policies = ["AmazonEKSClusterAdminPolicy"]

[eks.pod_identities.ebs-csi]
namespace = "kube-system"
service_account = "ebs-csi-controller-sa"
managed_policies = ["arn:aws:iam::aws:policy/service-role/AmazonEBSCSIDriverPolicy"]
"#;

    fn expand_text(text: &str) -> Result<Vec<ResourceSpec>, SpecErrors> {
        expand_with(expand, text)
    }

    fn error_text(text: &str) -> String {
        errors_of(expand, text)
    }

    #[test]
    fn expands_the_cluster_and_what_belongs_to_it() {
        let rs = expand_text(&format!("{BASE}{EKS}")).unwrap();
        let get = |a: &str| {
            rs.iter().find(|r| r.address.as_str() == a).unwrap_or_else(|| panic!("{a} missing"))
        };
        let cluster = get("aws.eks.cluster.main");
        assert_eq!(cluster.attributes["version"], engine::Value::from("1.36"));
        assert_eq!(cluster.attributes["authentication_mode"], engine::Value::from("API"));
        assert_eq!(
            cluster.attributes["logging"],
            engine::Value::List(vec!["api".into(), "audit".into()])
        );
        let deps = cluster.dependencies();
        assert!(deps.iter().any(|d| d.as_str() == "aws.network.subnet.private[\"eu-west-3a\"]"));
        assert!(deps.iter().any(|d| d.as_str() == "aws.eks.kms_key.secrets"));
        // Upgrades go control plane, node group, addons.
        let ng = get("aws.eks.node_group[\"main\"]");
        assert!(ng.dependencies().contains(&cluster.address));
        let addon = get("aws.eks.addon[\"vpc-cni\"]");
        assert!(addon.dependencies().contains(&ng.address));
        let pia = get("aws.eks.pod_identity_association[\"ebs-csi\"]");
        assert!(
            pia.dependencies()
                .iter()
                .any(|d| d.as_str() == "aws.eks.addon[\"eks-pod-identity-agent\"]")
        );
        get("aws.eks.access_policy_association[\"ops/AmazonEKSClusterAdminPolicy\"]");
        get("aws.eks.security_group_rule.cluster_api_private_access");
        get("aws.eks.iam_role_policy_attachment[\"pod-ebs-csi/AmazonEBSCSIDriverPolicy\"]");
        let mut addrs: Vec<&str> = rs.iter().map(|r| r.address.as_str()).collect();
        addrs.sort();
        addrs.dedup();
        assert_eq!(addrs.len(), rs.len(), "addresses are unique");
    }

    fn with_karpenter_and_max_pods() -> String {
        format!("{BASE}{EKS}").replace("desired_size = 2\n", "desired_size = 2\nmax_pods = 110\n")
            + "\n[eks.karpenter]\nenabled = true\n"
    }

    #[test]
    fn max_pods_gives_the_node_group_a_launch_template() {
        let text = with_karpenter_and_max_pods()
            .replace("nat = \"none\"\n", "nat = \"none\"\nsecondary_cidrs = [\"100.64.0.0/16\"]\n");
        let rs = expand_text(&text).unwrap();
        let get = |a: &str| {
            rs.iter().find(|r| r.address.as_str() == a).unwrap_or_else(|| panic!("{a} missing"))
        };
        let lt = get("aws.eks.launch_template[\"main\"]");
        assert_eq!(lt.kind, "aws_launch_template");
        assert_eq!(
            lt.attributes["user_data"],
            engine::Value::from("[settings.kubernetes]\nmax-pods = 110\n")
        );
        // EKS picks the image and the instance profile: the template names neither.
        assert!(!lt.attributes.contains_key("image_id"));
        assert!(!lt.attributes.contains_key("iam_instance_profile_arn"));
        let ng = get("aws.eks.node_group[\"main\"]");
        assert_eq!(
            ng.attributes["launch_template_id"],
            engine::Value::reference(&lt.address, "id")
        );
        assert_eq!(
            ng.attributes["launch_template_version"],
            engine::Value::reference(&lt.address, "latest_version")
        );
        assert_eq!(ng.attributes["max_pods"], engine::Value::Int(110));
        // The template puts the nodes in their own security group.
        let node_sg = engine::Address::new("aws.eks.security_group.node");
        assert_eq!(
            lt.attributes["security_group_ids"],
            engine::Value::List(vec![engine::Value::reference(&node_sg, "id")])
        );
        let from_control_plane = get("aws.eks.security_group_rule.node_from_control_plane");
        assert_eq!(from_control_plane.attributes["from_port"], engine::Value::Int(1025));
        assert_eq!(from_control_plane.attributes["to_port"], engine::Value::Int(65535));
        assert_eq!(
            from_control_plane.attributes["referenced_security_group_id"],
            engine::Value::reference(&engine::Address::new("aws.eks.security_group.cluster"), "id")
        );
        let pods = rs
            .iter()
            .find(|r| r.address.as_str().starts_with("aws.eks.security_group_rule.node_from_pods"))
            .expect("a rule for the pods' CIDR");
        assert_eq!(pods.attributes["protocol"], engine::Value::from("-1"));
        get("aws.eks.security_group_rule.node_from_nodes");
        get("aws.eks.security_group_rule.cluster_api_from_nodes");
        // Without max_pods, no template: the node group's fields are null.
        let plain = expand_text(&format!("{BASE}{EKS}")).unwrap();
        assert!(!plain.iter().any(|r| r.kind == "aws_launch_template"));
        let ng =
            plain.iter().find(|r| r.address.as_str() == "aws.eks.node_group[\"main\"]").unwrap();
        assert_eq!(ng.attributes["launch_template_id"], engine::Value::Null);
        assert!(!plain.iter().any(|r| r.address.as_str() == "aws.eks.security_group.node"));
    }

    #[test]
    fn karpenter_gets_its_queue_rules_node_role_and_identity() {
        let rs = expand_text(&with_karpenter_and_max_pods()).unwrap();
        let get = |a: &str| {
            rs.iter().find(|r| r.address.as_str() == a).unwrap_or_else(|| panic!("{a} missing"))
        };
        let queue = get("aws.eks.sqs_queue[\"karpenter\"]");
        assert_eq!(queue.attributes["name"], engine::Value::from("aws-0"));
        assert_eq!(queue.attributes["message_retention_seconds"], engine::Value::Int(300));
        assert_eq!(queue.attributes["sqs_managed_sse"], engine::Value::Bool(true));
        let policy = get("aws.eks.sqs_queue_policy[\"karpenter\"]");
        assert!(policy.dependencies().contains(&queue.address));
        let rules: Vec<_> = rs.iter().filter(|r| r.kind == "aws_event_rule").collect();
        assert_eq!(rules.len(), 4);
        for r in &rules {
            assert_eq!(r.attributes["target_arn"], engine::Value::reference(&queue.address, "arn"));
            // The queue accepts EventBridge's messages before a rule sends any.
            assert!(r.dependencies().contains(&policy.address));
        }
        let node_role = get("aws.eks.iam_role[\"karpenter-node\"]");
        assert_eq!(node_role.attributes["name"], engine::Value::from("aws-0-karpenter-node"));
        for p in [
            "AmazonEKSWorkerNodePolicy",
            "AmazonEKS_CNI_Policy",
            "AmazonEC2ContainerRegistryPullOnly",
            "AmazonSSMManagedInstanceCore",
        ] {
            get(&format!("aws.eks.iam_role_policy_attachment[\"karpenter-node/{p}\"]"));
        }
        let entry = get("aws.eks.access_entry[\"karpenter-node\"]");
        assert_eq!(entry.attributes["type"], engine::Value::from("EC2_LINUX"));
        assert_eq!(
            entry.attributes["principal_arn"],
            engine::Value::reference(&node_role.address, "arn")
        );
        let pia = get("aws.eks.pod_identity_association[\"karpenter\"]");
        assert_eq!(pia.attributes["namespace"], engine::Value::from("kube-system"));
        assert_eq!(pia.attributes["service_account"], engine::Value::from("karpenter"));
        let deps = pia.dependencies();
        assert!(deps.iter().any(|d| d.as_str() == "aws.eks.iam_role_policy[\"pod-karpenter\"]"));
        assert!(deps.iter().any(|d| d.as_str() == "aws.eks.addon[\"eks-pod-identity-agent\"]"));
        // The controller's policy names the queue, the node role and the cluster.
        let controller = get("aws.eks.iam_role_policy[\"pod-karpenter\"]");
        let refs: Vec<String> = controller.attributes["policy"]
            .references()
            .iter()
            .map(|r| format!("{}.{}", r.address, r.attribute))
            .collect();
        for wanted in [
            "aws.eks.sqs_queue[\"karpenter\"].arn",
            "aws.eks.iam_role[\"karpenter-node\"].arn",
            "aws.eks.cluster.main.arn",
        ] {
            assert!(refs.iter().any(|r| r == wanted), "{wanted}: {refs:?}");
        }
        let mut addrs: Vec<&str> = rs.iter().map(|r| r.address.as_str()).collect();
        addrs.sort();
        addrs.dedup();
        assert_eq!(addrs.len(), rs.len(), "addresses are unique");
        // Disabled: nothing of it.
        let off = expand_text(
            &with_karpenter_and_max_pods().replace("enabled = true", "enabled = false"),
        )
        .unwrap();
        assert!(!off.iter().any(|r| r.address.as_str().contains("karpenter")));
    }

    #[test]
    fn karpenter_and_max_pods_are_validated() {
        let text = with_karpenter_and_max_pods().replace("max_pods = 110", "max_pods = 0")
            + "namespace = \"kube-system\"\nservice_account = \"ebs-csi-controller-sa\"\n";
        let err = error_text(&text);
        assert!(err.contains("max_pods"), "{err}");
        assert!(err.contains("already has pod identity `ebs-csi`"), "{err}");
        let long = with_karpenter_and_max_pods()
            .replace("cluster_name = \"aws-0\"", &format!("cluster_name = \"{}\"", "c".repeat(40)));
        assert!(error_text(&long).contains("EventBridge"));
    }

    #[test]
    fn no_section_means_no_resources() {
        assert!(expand_text(BASE).unwrap().is_empty());
    }

    #[test]
    fn bad_values_point_at_their_lines() {
        let text = format!("{BASE}{EKS}")
            .replace("logging = [\"audit\", \"api\"]", "logging = [\"audit\", \"everything\"]")
            .replace("capacity_type = \"SPOT\"", "capacity_type = \"CHEAP\"")
            .replace("desired_size = 2", "desired_size = 9")
            .replace("role/ops", "ops")
            .replace("oidc_thumbprint = \"skip\"", "oidc_thumbprint = \"abc\"");
        let err = error_text(&text);
        for (line, needle) in [
            (21, "logging"),
            (22, "oidc_thumbprint"),
            (25, "capacity_type"),
            (29, "desired_size"),
            (37, "principal_arn"),
        ] {
            assert!(
                err.lines()
                    .any(|l| l.contains(&format!("test.toml:{line} ")) && l.contains(needle)),
                "line {line} {needle}: {err}"
            );
        }
    }

    #[test]
    fn the_cluster_needs_the_network_and_a_version() {
        let without_network = BASE.split("[network]").next().unwrap().to_string() + EKS;
        assert!(error_text(&without_network).contains("[network]"));
        let no_version = format!("{BASE}{EKS}").replace("kubernetes = \"1.36\"", "");
        assert!(error_text(&no_version).contains("kubernetes"));
    }

    #[test]
    fn unknown_keys_are_errors() {
        let err = error_text(&format!("{BASE}{EKS}\n[eks.addons.coredns]\nreplicas = 2\n"));
        assert!(err.contains("replicas"), "{err}");
    }
}
