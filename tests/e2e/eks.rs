//! The EKS stage (with the network it needs) from empty: apply, what exists, no-op, drift and
//! repair, a version upgrade in order, a cluster created by a run that died before writing
//! state adopted (never created twice), destroy.

use crate::support::engine;
use engine::{Action, DriftStatus, Engine, LocalBackend, Provider};
use engine_aws::AwsProvider;
use engine_tests::{Moto, network_spec_text, spec_text_through};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

const CLUSTER: &str = "aws-0";
const OPS_ROLE: &str = "arn:aws:iam::123456789012:role/ops";
const KARPENTER_NODE_ROLE: &str = "arn:aws:iam::123456789012:role/Karpenter-aws-0";
/// Karpenter's interruption queue, as specs/aws.toml names it (the reference's name).
const KARPENTER_QUEUE: &str = "Karpenter-aws-0";
const KARPENTER_RULES: &str = "aws-0-karpenter-";

/// The network and the reference `[eks]` section, plus an access entry of the test's own.
fn eks_spec_text() -> String {
    let text = spec_text_through(3);
    let start = text.find("# Stage 3").expect("specs/aws.toml has the EKS stage");
    format!(
        "{}\n{}\n[eks.access_entries.ops]\nprincipal_arn = \"{OPS_ROLE}\"\npolicies = [\"AmazonEKSViewPolicy\"]\n",
        network_spec_text(),
        &text[start..]
    )
}

async fn stage_engine(
    moto_config: aws_config::SdkConfig,
    spec: &str,
    dir: &Path,
) -> (Engine, Arc<AwsProvider>) {
    let (builder, lane) = crate::support::lane(moto_config, spec).await;
    let provider = lane.aws;
    let engine = builder
        .state(LocalBackend::new(dir.join("aws.state.json")))
        .retry_backoff(Duration::from_millis(50))
        .target("aws.eks")
        .build()
        .expect("spec is valid");
    (engine, provider)
}

async fn eks_client(moto: &Moto) -> aws_sdk_eks::Client {
    aws_sdk_eks::Client::new(&moto.sdk_config().await)
}

fn assert_applied(report: &engine::ApplyReport, moto: &Moto) {
    assert!(
        report.is_success(),
        "{:#?}\n{}",
        report.failures().collect::<Vec<_>>(),
        moto.log().lines().rev().take(30).collect::<Vec<_>>().join("\n")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn eks_stage_from_empty_to_destroy() {
    let moto = Moto::start();
    let dir = tempfile::tempdir().unwrap();
    let spec = eks_spec_text();
    let (engine, provider) = engine(&moto, &spec, dir.path()).await;

    // Apply from empty.
    let plan = engine.plan().await.unwrap();
    let stage: Vec<_> =
        plan.actions().filter(|c| c.address.as_str().starts_with("aws.eks.")).collect();
    assert!(stage.len() > 30, "EKS resources: {}", stage.len());
    assert!(stage.iter().all(|c| c.action == Action::Create));
    let report = engine.apply(&plan).await.unwrap();
    assert_applied(&report, &moto);
    let state = engine.state_document().unwrap();
    let attr = |a: &str, f: &str| state.resources[a].attributes[f].clone();

    // The cluster, read with the test's own client.
    let eks = eks_client(&moto).await;
    let cluster = eks.describe_cluster().name(CLUSTER).send().await.unwrap();
    let cluster = cluster.cluster().unwrap();
    assert_eq!(cluster.version(), Some("1.36"));
    let access = cluster.access_config().unwrap();
    assert_eq!(access.authentication_mode().unwrap().as_str(), "API");
    assert_eq!(access.bootstrap_cluster_creator_admin_permissions(), Some(true));
    let key_arn = attr("aws.eks.kms_key.secrets", "arn");
    assert_eq!(cluster.encryption_config()[0].provider().unwrap().key_arn(), key_arn.as_str());
    let vpc = cluster.resources_vpc_config().unwrap();
    assert!(vpc.endpoint_private_access() && !vpc.endpoint_public_access());
    assert_eq!(vpc.subnet_ids().len(), 3);
    for id in vpc.subnet_ids() {
        assert!(
            state
                .resources
                .iter()
                .any(|(a, r)| a.starts_with("aws.network.subnet.intra[") && &r.id == id),
            "{id} is an intra subnet: the control plane's, as the reference places it"
        );
    }
    assert_eq!(
        cluster.kubernetes_network_config().unwrap().service_ipv4_cidr(),
        Some("172.20.0.0/16")
    );
    assert_eq!(
        cluster.tags().unwrap().get("engine:address").map(String::as_str),
        Some("aws.eks.cluster.main")
    );
    // Outputs.
    let c = "aws.eks.cluster.main";
    assert!(attr(c, "ca_pem").as_str().unwrap().starts_with("-----BEGIN CERTIFICATE-----"));
    let endpoint = attr(c, "endpoint").as_str().unwrap().to_string();
    let host = attr(c, "endpoint_host").as_str().unwrap().to_string();
    assert!(
        !host.is_empty() && !host.contains('/') && endpoint.starts_with(&format!("https://{host}")),
        "{endpoint} {host}"
    );
    let issuer = attr(c, "oidc_issuer").as_str().unwrap().to_string();
    assert!(issuer.starts_with("https://"), "{issuer}");
    assert!(attr(c, "arn").as_str().unwrap().ends_with(":cluster/aws-0"));
    let iam = aws_sdk_iam::Client::new(&moto.sdk_config().await);
    let oidc = iam
        .get_open_id_connect_provider()
        .open_id_connect_provider_arn(
            state.resources["aws.eks.iam_openid_connect_provider.main"].id.clone(),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(oidc.client_id_list(), ["sts.amazonaws.com"]);
    let attached =
        iam.list_attached_role_policies().role_name("aws-0-eks-node").send().await.unwrap();
    assert_eq!(attached.attached_policies().len(), 4);

    // Node group.
    let ng =
        eks.describe_nodegroup().cluster_name(CLUSTER).nodegroup_name("main").send().await.unwrap();
    let ng = ng.nodegroup().unwrap();
    assert_eq!(ng.capacity_type().unwrap().as_str(), "SPOT");
    assert_eq!(ng.ami_type().unwrap().as_str(), "BOTTLEROCKET_x86_64");
    assert_eq!(ng.instance_types().len(), 6);
    assert_eq!(ng.release_version(), Some("1.54.0-5043decc"), "the AMI release is pinned");
    let first_private = &state.resources["aws.network.subnet.private[\"eu-west-3a\"]"].id;
    assert_eq!(ng.subnets(), std::slice::from_ref(first_private), "the first private subnet only");
    let scaling = ng.scaling_config().unwrap();
    assert_eq!(
        (scaling.min_size(), scaling.max_size(), scaling.desired_size()),
        (Some(2), Some(3), Some(2))
    );
    assert!(ng.taints().iter().any(|t| t.key() == Some("node.cilium.io/agent-not-ready")
        && t.effect().map(|e| e.as_str()) == Some("NO_EXECUTE")));
    // Its launch template: Bottlerocket settings with the pod limit, nothing EKS chooses.
    let ec2 = aws_sdk_ec2::Client::new(&moto.sdk_config().await);
    let template = ng.launch_template().expect("the node group has a launch template");
    assert_eq!(
        template.id(),
        Some(state.resources["aws.eks.launch_template[\"main\"]"].id.as_str())
    );
    assert_eq!(template.version(), Some("1"));
    let (data, version) = template_data(&ec2, template.id().unwrap(), "1").await;
    assert_eq!(version, 1);
    assert_eq!(data, "[settings.kubernetes]\nmax-pods = 110\n");
    assert_eq!(attr("aws.eks.node_group[\"main\"]", "max_pods"), 110);

    // Addons with their configuration values.
    let addons = eks.list_addons().cluster_name(CLUSTER).send().await.unwrap();
    let mut names = addons.addons().to_vec();
    names.sort();
    assert_eq!(
        names,
        ["aws-ebs-csi-driver", "coredns", "eks-pod-identity-agent", "kube-proxy", "vpc-cni"]
    );
    let cni =
        eks.describe_addon().cluster_name(CLUSTER).addon_name("vpc-cni").send().await.unwrap();
    let values: serde_json::Value =
        serde_json::from_str(cni.addon().unwrap().configuration_values().unwrap()).unwrap();
    assert_eq!(values["env"]["WARM_ENI_TARGET"], "0");
    assert_eq!(values["env"]["WARM_IP_TARGET"], "1");

    // Access entries: the creator's (made by EKS) and the spec's, with its policy.
    let entries = eks.list_access_entries().cluster_name(CLUSTER).send().await.unwrap();
    assert!(entries.access_entries().iter().any(|a| a == OPS_ROLE));
    assert!(entries.access_entries().iter().any(|a| a == KARPENTER_NODE_ROLE));
    assert_eq!(entries.access_entries().len(), 3, "{:?}", entries.access_entries());
    let karpenter_entry = eks
        .describe_access_entry()
        .cluster_name(CLUSTER)
        .principal_arn(KARPENTER_NODE_ROLE)
        .send()
        .await
        .unwrap();
    assert_eq!(karpenter_entry.access_entry().unwrap().r#type(), Some("EC2_LINUX"));
    let policies = eks
        .list_associated_access_policies()
        .cluster_name(CLUSTER)
        .principal_arn(OPS_ROLE)
        .send()
        .await
        .unwrap();
    assert_eq!(
        policies.associated_access_policies()[0].policy_arn(),
        Some("arn:aws:eks::aws:cluster-access-policy/AmazonEKSViewPolicy")
    );

    // Pod identity associations, each with its role.
    let pods = eks.list_pod_identity_associations().cluster_name(CLUSTER).send().await.unwrap();
    let mut accounts: Vec<_> = pods
        .associations()
        .iter()
        .map(|a| format!("{}/{}", a.namespace().unwrap(), a.service_account().unwrap()))
        .collect();
    accounts.sort();
    assert_eq!(
        accounts,
        [
            "crossplane-system/provider-aws",
            "karpenter/karpenter",
            "kube-system/ebs-csi-controller-sa",
        ]
    );
    // Crossplane's role has the reference's five scoped policies, nothing administrative.
    let crossplane = iam.list_role_policies().role_name("aws-0-crossplane").send().await.unwrap();
    let mut scoped: Vec<&str> = crossplane.policy_names().iter().map(String::as_str).collect();
    scoped.sort();
    assert_eq!(
        scoped,
        [
            "crossplane_ec2_aws-0",
            "crossplane_eks_aws-0",
            "crossplane_iam_aws-0",
            "crossplane_kms_aws-0",
            "crossplane_s3_aws-0"
        ]
    );
    let admin = iam.list_attached_role_policies().role_name("aws-0-crossplane").send().await;
    assert!(admin.unwrap().attached_policies().is_empty());
    // Cilium reads through the node roles (no pod identity of its own).
    for role in ["aws-0-eks-node", "Karpenter-aws-0"] {
        let inline = iam.list_role_policies().role_name(role).send().await.unwrap();
        assert_eq!(inline.policy_names(), ["cilium_eni_aws-0"], "{role}");
    }
    // The CNI, kube-proxy and the pod identity agent come before the nodes.
    let group_needs = &state.resources["aws.eks.node_group[\"main\"]"].dependencies;
    for addon in ["vpc-cni", "kube-proxy", "eks-pod-identity-agent"] {
        assert!(group_needs.contains(&format!("aws.eks.addon[\"{addon}\"]")), "{group_needs:?}");
    }
    let coredns = &state.resources["aws.eks.addon[\"coredns\"]"].dependencies;
    assert!(coredns.contains(&"aws.eks.node_group[\"main\"]".to_string()), "{coredns:?}");
    let ebs = &state.resources["aws.eks.pod_identity_association[\"ebs-csi\"]"];
    assert_eq!(
        ebs.attributes["role_arn"],
        state.resources["aws.eks.iam_role[\"pod-ebs-csi\"]"].attributes["arn"]
    );

    // Karpenter: the controller's identity and policy, the interruption queue and its policy,
    // the rules sending to it, the node role.
    let karpenter = &state.resources["aws.eks.pod_identity_association[\"karpenter\"]"];
    assert_eq!(
        karpenter.attributes["role_arn"],
        state.resources["aws.eks.iam_role[\"pod-karpenter\"]"].attributes["arn"]
    );
    let controller = iam
        .get_role_policy()
        .role_name("aws-0-karpenter")
        .policy_name("karpenter-controller")
        .send()
        .await
        .unwrap();
    let controller = percent_decode(controller.policy_document());
    for needed in ["ec2:CreateFleet", "iam:PassRole", "sqs:ReceiveMessage", "eks:DescribeCluster"] {
        assert!(controller.contains(needed), "{needed}: {controller}");
    }
    assert!(controller.contains(KARPENTER_NODE_ROLE), "{controller}");
    let sqs = aws_sdk_sqs::Client::new(&moto.sdk_config().await);
    let queue_url = sqs
        .get_queue_url()
        .queue_name(KARPENTER_QUEUE)
        .send()
        .await
        .unwrap()
        .queue_url()
        .unwrap()
        .to_string();
    let queue = sqs
        .get_queue_attributes()
        .queue_url(&queue_url)
        .attribute_names(aws_sdk_sqs::types::QueueAttributeName::All)
        .send()
        .await
        .unwrap();
    let queue = queue.attributes().unwrap();
    let queue_attr = |n: aws_sdk_sqs::types::QueueAttributeName| queue[&n].clone();
    use aws_sdk_sqs::types::QueueAttributeName as Q;
    assert_eq!(queue_attr(Q::MessageRetentionPeriod), "300");
    assert_eq!(queue_attr(Q::SqsManagedSseEnabled), "true");
    let queue_arn = queue_attr(Q::QueueArn);
    let policy: serde_json::Value = serde_json::from_str(&queue_attr(Q::Policy)).unwrap();
    let allow = &policy["Statement"][0];
    assert_eq!(allow["Effect"], "Allow");
    assert_eq!(allow["Action"], "sqs:SendMessage");
    assert_eq!(
        allow["Principal"]["Service"],
        serde_json::json!(["events.amazonaws.com", "sqs.amazonaws.com"])
    );
    assert_eq!(allow["Resource"], queue_arn.as_str());
    assert!(controller.contains(&queue_arn), "{controller}");
    let eventbridge = aws_sdk_eventbridge::Client::new(&moto.sdk_config().await);
    let rules = eventbridge.list_rules().name_prefix(KARPENTER_RULES).send().await.unwrap();
    let mut patterns: Vec<String> = Vec::new();
    for rule in rules.rules() {
        let name = rule.name().unwrap();
        let targets = eventbridge.list_targets_by_rule().rule(name).send().await.unwrap();
        let arns: Vec<&str> = targets.targets().iter().map(|t| t.arn()).collect();
        assert_eq!(arns, [queue_arn.as_str()], "{name}");
        patterns.push(rule.event_pattern().unwrap().to_string());
    }
    assert_eq!(patterns.len(), 4, "{patterns:?}");
    for detail in [
        "EC2 Spot Instance Interruption Warning",
        "EC2 Instance Rebalance Recommendation",
        "EC2 Instance State-change Notification",
        "AWS Health Event",
    ] {
        assert!(patterns.iter().any(|p| p.contains(detail)), "{detail}: {patterns:?}");
    }
    let node_policies =
        iam.list_attached_role_policies().role_name("Karpenter-aws-0").send().await.unwrap();
    let mut node_policies: Vec<&str> =
        node_policies.attached_policies().iter().filter_map(|p| p.policy_name()).collect();
    node_policies.sort();
    assert_eq!(
        node_policies,
        [
            "AmazonEC2ContainerRegistryPullOnly",
            "AmazonEKSWorkerNodePolicy",
            "AmazonEKS_CNI_Policy",
            "AmazonSSMManagedInstanceCore"
        ]
    );

    // Second plan: nothing to do; second apply: no mutating call. The EKS stage's no-op cost.
    let before = provider.api_calls();
    let again = engine.plan().await.unwrap();
    assert!(!again.has_changes(), "{:#?}", again.actions().collect::<Vec<_>>());
    let noop = engine.apply(&again).await.unwrap();
    assert!(noop.steps.is_empty());
    let calls = provider.api_calls().since(&before);
    assert_eq!(calls.mutating(), 0, "{:?}", calls.mutating_operations());
    let (stage_engine, stage_provider) =
        stage_engine(moto.sdk_config().await, &spec, dir.path()).await;
    let stage_plan = stage_engine.plan().await.unwrap();
    assert!(!stage_plan.has_changes());
    let stage_calls = stage_provider.api_calls();
    let stage_resources = stage_engine
        .graph()
        .resources()
        .filter(|r| r.address.as_str().starts_with("aws.eks."))
        .count();
    println!(
        "eks stage no-op plan: {} API calls for {stage_resources} resources: {:?}",
        stage_calls.total(),
        stage_calls.by_operation
    );
    assert_eq!(stage_calls.mutating(), 0);

    // Out-of-band changes: addon configuration, node group scaling, cluster logging.
    eks.update_addon()
        .cluster_name(CLUSTER)
        .addon_name("vpc-cni")
        .configuration_values(r#"{"env":{"WARM_ENI_TARGET":"1"}}"#)
        .send()
        .await
        .unwrap();
    eks.update_nodegroup_config()
        .cluster_name(CLUSTER)
        .nodegroup_name("main")
        .scaling_config(
            aws_sdk_eks::types::NodegroupScalingConfig::builder()
                .min_size(2)
                .max_size(3)
                .desired_size(3)
                .build(),
        )
        .send()
        .await
        .unwrap();
    eks.update_cluster_config()
        .name(CLUSTER)
        .logging(
            aws_sdk_eks::types::Logging::builder()
                .cluster_logging(
                    aws_sdk_eks::types::LogSetup::builder()
                        .types(aws_sdk_eks::types::LogType::Audit)
                        .enabled(true)
                        .build(),
                )
                .build(),
        )
        .send()
        .await
        .unwrap();
    let drift = engine.drift().await.unwrap();
    let drifted: Vec<(&str, Vec<&str>)> = drift
        .drifted
        .iter()
        .filter_map(|d| match &d.status {
            DriftStatus::Modified { fields } => {
                Some((d.address.as_str(), fields.iter().map(|f| f.name.as_str()).collect()))
            }
            DriftStatus::Deleted => None,
        })
        .collect();
    assert_eq!(
        drifted,
        [
            ("aws.eks.addon[\"vpc-cni\"]", vec!["configuration"]),
            ("aws.eks.cluster.main", vec!["logging"]),
            ("aws.eks.node_group[\"main\"]", vec!["desired_size"]),
        ],
        "{drift:#?}"
    );
    let repair = engine.plan().await.unwrap();
    let updates: Vec<&str> = repair
        .actions()
        .filter(|c| c.action == Action::Update)
        .map(|c| c.address.as_str())
        .collect();
    assert_eq!(updates.len(), 3, "{updates:?}");
    let report = engine.apply(&repair).await.unwrap();
    assert_applied(&report, &moto);
    assert!(engine.drift().await.unwrap().is_clean());
    assert!(!engine.plan().await.unwrap().has_changes());

    // A new pod limit: a new launch template version, the node group moved to it in place.
    let spec = spec.replace("max_pods = 110", "max_pods = 120");
    let (pods_engine, pods_provider) = engine_for(&moto, &spec, dir.path()).await;
    let plan = pods_engine.plan().await.unwrap();
    let changed: Vec<(&str, Action)> = plan
        .actions()
        .filter(|c| c.action != Action::NoOp)
        .map(|c| (c.address.as_str(), c.action))
        .collect();
    assert_eq!(
        changed,
        [
            ("aws.eks.launch_template[\"main\"]", Action::Update),
            ("aws.eks.node_group[\"main\"]", Action::Update),
        ]
    );
    let ng_change =
        plan.actions().find(|c| c.address.as_str() == "aws.eks.node_group[\"main\"]").unwrap();
    assert!(
        ng_change.fields.iter().any(|f| f.name == "max_pods" && !f.forces_replacement),
        "{ng_change:#?}"
    );
    let before = pods_provider.api_calls();
    let report = pods_engine.apply(&plan).await.unwrap();
    assert_applied(&report, &moto);
    let calls = pods_provider.api_calls().since(&before);
    println!("max_pods change: {} API calls: {:?}", calls.total(), calls.mutating_operations());
    for op in ["ec2:CreateLaunchTemplateVersion", "eks:UpdateNodegroupVersion"] {
        assert_eq!(calls.by_operation.get(op), Some(&1), "{op}: {calls:?}");
    }
    assert!(!calls.by_operation.contains_key("eks:DeleteNodegroup"));
    assert!(!calls.by_operation.contains_key("eks:CreateNodegroup"));
    let ng =
        eks.describe_nodegroup().cluster_name(CLUSTER).nodegroup_name("main").send().await.unwrap();
    let template = ng.nodegroup().unwrap().launch_template().unwrap();
    assert_eq!(template.version(), Some("2"));
    let (data, _) = template_data(&ec2, template.id().unwrap(), "2").await;
    assert_eq!(data, "[settings.kubernetes]\nmax-pods = 120\n");
    assert!(!pods_engine.plan().await.unwrap().has_changes());

    // A version upgrade: control plane, then the node group, then the addons, all in place.
    let upgraded = spec.replace("kubernetes = \"1.36\"", "kubernetes = \"1.37\"").replace(
        "[eks.addons.coredns]\n",
        "[eks.addons.coredns]\nversion = \"v1.37.0-eksbuild.1\"\n",
    );
    let events = Arc::new(Recorder::default());
    let (builder, up_lane) = crate::support::lane(moto.sdk_config().await, &upgraded).await;
    let up_provider = up_lane.aws;
    let up_engine = builder
        .state(LocalBackend::new(dir.path().join("aws.state.json")))
        .retry_backoff(Duration::from_millis(50))
        .observer(events.clone())
        .build()
        .expect("spec is valid");
    let plan = up_engine.plan().await.unwrap();
    let changes: Vec<_> = plan.actions().filter(|c| c.action != Action::NoOp).collect();
    let order: Vec<(&str, Action)> =
        changes.iter().map(|c| (c.address.as_str(), c.action)).collect();
    assert_eq!(order.len(), 3, "only the cluster, the node group and the addon change: {order:?}");
    let find = |a: &str| changes.iter().find(|c| c.address.as_str() == a).unwrap();
    let (cluster_c, ng_c, addon_c) = (
        find("aws.eks.cluster.main"),
        find("aws.eks.node_group[\"main\"]"),
        find("aws.eks.addon[\"coredns\"]"),
    );
    for c in [cluster_c, ng_c, addon_c] {
        assert_eq!(c.action, Action::Update, "{c:#?}");
    }
    assert!(ng_c.dependencies.contains(&cluster_c.address));
    assert!(addon_c.dependencies.contains(&ng_c.address));
    let before = up_provider.api_calls();
    let report = up_engine.apply(&plan).await.unwrap();
    assert_applied(&report, &moto);
    let calls = up_provider.api_calls().since(&before);
    assert_eq!(calls.by_operation.get("eks:UpdateClusterVersion"), Some(&1), "{calls:?}");
    assert_eq!(calls.by_operation.get("eks:UpdateNodegroupVersion"), Some(&1), "{calls:?}");
    assert_eq!(calls.by_operation.get("eks:UpdateAddon"), Some(&1), "{calls:?}");
    assert!(!calls.by_operation.contains_key("eks:CreateCluster"));
    // Each update started after the one before it had finished.
    let log = events.0.lock().unwrap().clone();
    let at = |what: &str| {
        log.iter().position(|l| l == what).unwrap_or_else(|| panic!("{what} not in {log:?}"))
    };
    assert!(at("finished aws.eks.cluster.main") < at("started aws.eks.node_group[\"main\"]"));
    assert!(at("finished aws.eks.node_group[\"main\"]") < at("started aws.eks.addon[\"coredns\"]"));
    let cluster = eks.describe_cluster().name(CLUSTER).send().await.unwrap();
    assert_eq!(cluster.cluster().unwrap().version(), Some("1.37"));
    assert!(!up_engine.plan().await.unwrap().has_changes());

    // Destroy removes everything.
    let destroy = up_engine.plan_destroy().await.unwrap();
    let report = up_engine.apply(&destroy).await.unwrap();
    assert_applied(&report, &moto);
    assert!(eks.list_clusters().send().await.unwrap().clusters().is_empty());
    let roles = iam.list_roles().send().await.unwrap();
    assert!(
        !roles.roles().iter().any(|r| r.role_name().starts_with("aws-0-")),
        "{:?}",
        roles.roles().iter().map(|r| r.role_name()).collect::<Vec<_>>()
    );
    let providers = iam.list_open_id_connect_providers().send().await.unwrap();
    assert!(providers.open_id_connect_provider_list().is_empty());
    let queue = sqs.get_queue_url().queue_name(KARPENTER_QUEUE).send().await;
    assert!(queue.is_err(), "{queue:?}");
    let rules = eventbridge.list_rules().name_prefix(KARPENTER_RULES).send().await.unwrap();
    assert!(rules.rules().is_empty(), "{:?}", rules.rules());
    let templates =
        ec2.describe_launch_templates().launch_template_names("aws-0-main").send().await;
    assert!(templates.as_ref().map_or(true, |t| t.launch_templates().is_empty()), "{templates:?}");
    let state = up_engine.state_document().unwrap();
    assert!(state.resources.is_empty(), "{:?}", state.resources.keys());
}

/// The decoded user data and the number of version `version` of launch template `id`.
async fn template_data(ec2: &aws_sdk_ec2::Client, id: &str, version: &str) -> (String, i64) {
    let out = ec2
        .describe_launch_template_versions()
        .launch_template_id(id)
        .versions(version)
        .send()
        .await
        .unwrap();
    let v = &out.launch_template_versions()[0];
    let data = v.launch_template_data().and_then(|d| d.user_data()).expect("user data");
    use base64::Engine as _;
    let bytes = base64::engine::general_purpose::STANDARD.decode(data).unwrap();
    (String::from_utf8(bytes).unwrap(), v.version_number().unwrap())
}

/// An IAM policy document as returned (URL-encoded by AWS, maybe not by an emulator).
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The order in which steps started and finished.
#[derive(Default)]
struct Recorder(std::sync::Mutex<Vec<String>>);

impl engine::Observer for Recorder {
    fn event(&self, event: engine::Event) {
        let line = match event {
            engine::Event::StepStarted { address, .. } => format!("started {address}"),
            engine::Event::StepFinished { address, .. } => format!("finished {address}"),
            _ => return,
        };
        self.0.lock().unwrap().push(line);
    }
}

async fn engine_for(moto: &Moto, spec: &str, dir: &Path) -> (Engine, Arc<AwsProvider>) {
    engine(moto, spec, dir).await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cluster_created_by_a_run_that_died_is_adopted_not_created_again() {
    let moto = Moto::start();
    let dir = tempfile::tempdir().unwrap();
    let spec = eks_spec_text();
    let (engine, _) = engine(&moto, &spec, dir.path()).await;
    let report = engine.apply(&engine.plan().await.unwrap()).await.unwrap();
    assert_applied(&report, &moto);

    // A run killed between CreateCluster and writing state: the cluster and what the run made
    // after it exist (Karpenter's queue, its policy and rules too), the state knows nothing of
    // them.
    let backend = LocalBackend::new(dir.path().join("aws.state.json"));
    let mut doc = backend.load().unwrap().unwrap();
    let forgotten: Vec<String> = doc
        .resources
        .keys()
        .filter(|a| {
            a.starts_with("aws.eks.cluster.")
                || a.starts_with("aws.eks.node_group")
                || a.starts_with("aws.eks.addon")
                || a.starts_with("aws.eks.launch_template")
                || a.starts_with("aws.eks.sqs_queue")
                || a.starts_with("aws.eks.event_rule")
        })
        .cloned()
        .collect();
    for a in &forgotten {
        doc.resources.remove(a);
    }
    backend.save(&doc).unwrap();

    let (engine, provider) = engine_for(&moto, &spec, dir.path()).await;
    let plan = engine.plan().await.unwrap();
    let cluster = plan.actions().find(|c| c.address.as_str() == "aws.eks.cluster.main").unwrap();
    assert_eq!(cluster.action, Action::Adopt, "{cluster:#?}");
    assert_eq!(plan.summary().add, 0, "nothing is created again");
    assert_eq!(plan.summary().adopt, forgotten.len());
    let before = provider.api_calls();
    let report = engine.apply(&plan).await.unwrap();
    assert_applied(&report, &moto);
    let calls = provider.api_calls().since(&before);
    assert_eq!(calls.mutating(), 0, "{:?}", calls.mutating_operations());
    let doc = backend.load().unwrap().unwrap();
    assert_eq!(doc.resources["aws.eks.cluster.main"].id, CLUSTER);
    assert!(!engine.plan().await.unwrap().has_changes());

    // A same-named cluster someone else made is not adopted: its create fails loudly.
    let eks = eks_client(&moto).await;
    let state_cluster = &doc.resources["aws.eks.cluster.main"];
    eks.tag_resource()
        .resource_arn(state_cluster.attributes["arn"].as_str().unwrap())
        .tags("engine:address", "someone-else")
        .send()
        .await
        .unwrap();
    let mut doc = backend.load().unwrap().unwrap();
    doc.resources.remove("aws.eks.cluster.main");
    backend.save(&doc).unwrap();
    let (engine, _) = engine_for(&moto, &spec, dir.path()).await;
    let plan = engine.plan().await.unwrap();
    let cluster = plan.actions().find(|c| c.address.as_str() == "aws.eks.cluster.main").unwrap();
    assert_eq!(cluster.action, Action::Create);

    // The same for the interruption queue: someone else's queue of that name is not adopted,
    // and its create fails rather than taking it over.
    let sqs = aws_sdk_sqs::Client::new(&moto.sdk_config().await);
    let queue = "aws.eks.sqs_queue[\"karpenter\"]";
    let mut doc = backend.load().unwrap().unwrap();
    let url = doc.resources[queue].id.clone();
    sqs.tag_queue().queue_url(&url).tags("engine:address", "someone-else").send().await.unwrap();
    doc.resources.remove(queue);
    backend.save(&doc).unwrap();
    let (engine, _) = engine_for(&moto, &spec, dir.path()).await;
    let plan = engine.plan().await.unwrap();
    let change = plan.actions().find(|c| c.address.as_str() == queue).unwrap();
    assert_eq!(change.action, Action::Create);
    let report = engine.apply(&plan).await.unwrap();
    let failed =
        report.failures().find(|f| f.address.as_str() == queue).expect("the queue's create fails");
    assert!(
        matches!(&failed.outcome, engine::StepOutcome::Failed(m) if m.contains("already exists")),
        "{failed:?}"
    );
    let tags = sqs.list_queue_tags().queue_url(&url).send().await.unwrap();
    assert_eq!(
        tags.tags().unwrap()["engine:address"],
        "someone-else",
        "the other queue is left alone"
    );
}

/// What "a controller" made: each with the tags its controller sets, none by the engine.
struct ControllerMade {
    load_balancer: String,
    target_group: String,
    security_group: String,
    eks_security_group: String,
    volume: String,
    instance: String,
}

async fn make_as_controllers_do(moto: &Moto, state: &engine::StateDocument) -> ControllerMade {
    use aws_sdk_ec2::types::{ResourceType, Tag, TagSpecification};
    let config = moto.sdk_config().await;
    let ec2 = aws_sdk_ec2::Client::new(&config);
    let elb = aws_sdk_elasticloadbalancingv2::Client::new(&config);
    let id = |a: &str| state.resources[a].id.clone();
    let vpc = id("aws.network.vpc.main");
    let tag = |k: &str, v: &str| Tag::builder().key(k).value(v).build();
    let tagged = |kind: ResourceType, tags: Vec<Tag>| {
        TagSpecification::builder().resource_type(kind).set_tags(Some(tags)).build()
    };
    let lbc = || tag("elbv2.k8s.aws/cluster", CLUSTER);
    let elb_tag = |k: &str, v: &str| {
        aws_sdk_elasticloadbalancingv2::types::Tag::builder().key(k).value(v).build()
    };

    // The AWS Load Balancer Controller: a security group, a load balancer and a target group.
    let sg = ec2
        .create_security_group()
        .group_name("k8s-traffic-aws0-1a2b3c")
        .description("[k8s] Shared Backend SecurityGroup for LoadBalancer")
        .vpc_id(&vpc)
        .tag_specifications(tagged(ResourceType::SecurityGroup, vec![lbc()]))
        .send()
        .await
        .unwrap()
        .group_id()
        .unwrap()
        .to_string();
    let public: Vec<String> = ["a", "b"]
        .iter()
        .map(|az| id(&format!("aws.network.subnet.public[\"eu-west-3{az}\"]")))
        .collect();
    let lb = elb
        .create_load_balancer()
        .name("k8s-default-web-0123456789")
        .set_subnets(Some(public))
        .security_groups(&sg)
        .tags(elb_tag("elbv2.k8s.aws/cluster", CLUSTER))
        .tags(elb_tag("service.k8s.aws/stack", "default/web"))
        .send()
        .await
        .unwrap();
    let load_balancer = lb.load_balancers()[0].load_balancer_arn().unwrap().to_string();
    let tg = elb
        .create_target_group()
        .name("k8s-default-web-abcdef0123")
        .protocol(aws_sdk_elasticloadbalancingv2::types::ProtocolEnum::Http)
        .port(80)
        .vpc_id(&vpc)
        .tags(elb_tag("elbv2.k8s.aws/cluster", CLUSTER))
        .send()
        .await
        .unwrap();
    let target_group = tg.target_groups()[0].target_group_arn().unwrap().to_string();

    // The security group EKS makes for the cluster.
    let eks_security_group = ec2
        .create_security_group()
        .group_name(format!("eks-cluster-sg-{CLUSTER}-123456789"))
        .description("EKS created security group applied to ENI that is attached to EKS Control Plane master nodes, as well as any managed workloads.")
        .vpc_id(&vpc)
        .tag_specifications(tagged(
            ResourceType::SecurityGroup,
            vec![tag(&format!("kubernetes.io/cluster/{CLUSTER}"), "owned")],
        ))
        .send()
        .await
        .unwrap()
        .group_id()
        .unwrap()
        .to_string();

    // The EBS CSI driver: a persistent volume's disk.
    let volume = ec2
        .create_volume()
        .availability_zone("eu-west-3a")
        .size(10)
        .tag_specifications(tagged(
            ResourceType::Volume,
            vec![
                tag(&format!("kubernetes.io/cluster/{CLUSTER}"), "owned"),
                tag("ebs.csi.aws.com/cluster", "true"),
                tag("kubernetes.io/created-for/pvc/name", "data-postgres-0"),
            ],
        ))
        .send()
        .await
        .unwrap()
        .volume_id()
        .unwrap()
        .to_string();

    // Karpenter: a node in a private subnet.
    let image = ec2.describe_images().owners("amazon").send().await.unwrap();
    let image = image.images()[0].image_id().unwrap().to_string();
    let instance = ec2
        .run_instances()
        .image_id(image)
        .instance_type(aws_sdk_ec2::types::InstanceType::M5Large)
        .min_count(1)
        .max_count(1)
        .subnet_id(id("aws.network.subnet.private[\"eu-west-3a\"]"))
        .tag_specifications(tagged(
            ResourceType::Instance,
            vec![
                tag("karpenter.sh/nodepool", "default"),
                tag(&format!("kubernetes.io/cluster/{CLUSTER}"), "owned"),
            ],
        ))
        .send()
        .await
        .unwrap();
    let instance = instance.instances()[0].instance_id().unwrap().to_string();
    ControllerMade {
        load_balancer,
        target_group,
        security_group: sg,
        eks_security_group,
        volume,
        instance,
    }
}

/// ExternalDNS's records: `web` with its registry record (the newer `a-` format) in the
/// private zone, and in the public zone one of ours and one of another cluster's.
async fn write_as_external_dns_does(moto: &Moto, private_zone: &str, public_zone: &str) {
    use aws_sdk_route53::types::{
        Change, ChangeAction, ChangeBatch, ResourceRecord, ResourceRecordSet, RrType,
    };
    let r53 = aws_sdk_route53::Client::new(&moto.sdk_config().await);
    let set = |name: &str, kind: RrType, value: &str| {
        let record = ResourceRecord::builder().value(value).build().unwrap();
        let set = ResourceRecordSet::builder().name(name).r#type(kind).ttl(300);
        let set = set.resource_records(record).build().unwrap();
        Change::builder().action(ChangeAction::Create).resource_record_set(set).build().unwrap()
    };
    let registry = |owner: &str, resource: &str| {
        format!(
            "\"heritage=external-dns,external-dns/owner={owner},external-dns/resource={resource}\""
        )
    };
    for (zone, changes) in [
        (
            private_zone,
            vec![
                set("web.priv.aws.ogenki.io", RrType::A, "10.0.1.10"),
                set(
                    "a-web.priv.aws.ogenki.io",
                    RrType::Txt,
                    &registry("aws-0", "service/default/web"),
                ),
            ],
        ),
        (
            public_zone,
            vec![
                set("app.cloud.ogenki.io", RrType::Cname, "lb.example.org"),
                set("app.cloud.ogenki.io", RrType::Txt, &registry("aws-0", "ingress/apps/app")),
                set("other.cloud.ogenki.io", RrType::A, "192.0.2.1"),
                set("other.cloud.ogenki.io", RrType::Txt, &registry("gcp-0", "service/x/other")),
            ],
        ),
    ] {
        let batch = ChangeBatch::builder().set_changes(Some(changes)).build().unwrap();
        r53.change_resource_record_sets()
            .hosted_zone_id(zone)
            .change_batch(batch)
            .send()
            .await
            .unwrap();
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn destroy_sweeps_what_the_clusters_controllers_made_before_the_network_goes() {
    let moto = Moto::start();
    let dir = tempfile::tempdir().unwrap();
    let config = moto.sdk_config().await;
    let r53 = aws_sdk_route53::Client::new(&config);
    let public = r53
        .create_hosted_zone()
        .name("cloud.ogenki.io")
        .caller_reference("public-zone")
        .send()
        .await
        .unwrap();
    let public_zone =
        public.hosted_zone().unwrap().id().trim_start_matches("/hostedzone/").to_string();
    let spec = eks_spec_text().replace(
        "external_dns_zone_ids = [\"Z002027037R5RFCG05YY6\"]",
        &format!("external_dns_owner = \"aws-0\"\nexternal_dns_zone_ids = [\"{public_zone}\"]"),
    );
    assert!(spec.contains(&public_zone), "specs/aws.toml has [eks.sweep]");
    let (engine, _) = engine(&moto, &spec, dir.path()).await;
    let report = engine.plan_and_apply().await.unwrap().1;
    assert_applied(&report, &moto);
    let state = engine.state_document().unwrap();
    let private_zone = state.resources["aws.network.route53_zone.private"].id.clone();
    let made = make_as_controllers_do(&moto, &state).await;
    write_as_external_dns_does(&moto, &private_zone, &public_zone).await;
    let plan = engine.plan().await.unwrap();
    let changed: Vec<_> = plan.actions().map(|c| (c.address.as_str(), &c.fields)).collect();
    assert!(changed.is_empty(), "what controllers make is no drift: {changed:#?}");
    // The controller lets its group in on the nodes' group (drift there, unless `[globals]
    // shared` names it; the sweep revokes it so its group can go).
    let ec2 = aws_sdk_ec2::Client::new(&config);
    let from_lb = aws_sdk_ec2::types::UserIdGroupPair::builder().group_id(&made.security_group);
    let node_group = state.resources["aws.eks.security_group.node"].id.clone();
    ec2.authorize_security_group_ingress()
        .group_id(&node_group)
        .ip_permissions(
            aws_sdk_ec2::types::IpPermission::builder()
                .ip_protocol("tcp")
                .from_port(0)
                .to_port(65535)
                .user_id_group_pairs(from_lb.build())
                .build(),
        )
        .send()
        .await
        .unwrap();

    // The destroy's plan lists what the sweep will take.
    let destroy = engine.plan_destroy().await.unwrap();
    let sweep = destroy
        .changes
        .iter()
        .find(|c| c.address.as_str() == "aws.eks.controller_sweep.main")
        .expect("the sweep is in the destroy");
    let found = sweep.fields.iter().find(|f| f.name == "found").unwrap();
    let found = found.before.clone().unwrap().to_string();
    for item in [
        &made.load_balancer,
        &made.target_group,
        &made.security_group,
        &made.eks_security_group,
        &made.volume,
        &made.instance,
        "Route53 A web.priv.aws.ogenki.io",
        "Route53 TXT a-web.priv.aws.ogenki.io",
        "Route53 CNAME app.cloud.ogenki.io",
    ] {
        assert!(found.contains(item), "{item} not in {found}");
    }
    assert!(!found.contains("other.cloud.ogenki.io"), "another owner's records stay: {found}");
    assert!(!found.contains("aws-0-eks-node"), "the engine's own groups are its own: {found}");
    let position = |a: &str| destroy.changes.iter().position(|c| c.address.as_str() == a).unwrap();
    assert!(position("aws.eks.cluster.main") < position("aws.eks.controller_sweep.main"));
    assert!(position("aws.eks.controller_sweep.main") < position("aws.network.vpc.main"));

    // The destroy sweeps, and then the network deletes cleanly.
    let report = engine.apply(&destroy).await.unwrap();
    assert_applied(&report, &moto);
    assert!(engine.state_document().unwrap().resources.is_empty());
    let vpcs = ec2.describe_vpcs().vpc_ids(state.resources["aws.network.vpc.main"].id.clone());
    assert!(vpcs.send().await.is_err_and(|e| format!("{e:?}").contains("NotFound")));
    let volumes = ec2.describe_volumes().volume_ids(&made.volume).send().await;
    assert!(volumes.map_or(true, |v| v.volumes().is_empty()), "the volume is gone");
    let instance = ec2.describe_instances().instance_ids(&made.instance).send().await.unwrap();
    let state_name = instance.reservations()[0].instances()[0].state().unwrap().name().unwrap();
    assert_eq!(state_name.as_str(), "terminated");
    let elb = aws_sdk_elasticloadbalancingv2::Client::new(&config);
    let lbs = elb.describe_load_balancers().send().await.unwrap();
    assert!(lbs.load_balancers().is_empty(), "{:?}", lbs.load_balancers());
    let tgs = elb.describe_target_groups().send().await.unwrap();
    assert!(tgs.target_groups().is_empty(), "{:?}", tgs.target_groups());
    let left = r53.list_resource_record_sets().hosted_zone_id(&public_zone).send().await.unwrap();
    let names: Vec<String> = left
        .resource_record_sets()
        .iter()
        .map(|r| format!("{} {}", r.r#type().as_str(), r.name()))
        .collect();
    assert!(names.iter().any(|n| n.starts_with("A other.cloud.ogenki.io")), "{names:?}");
    assert!(!names.iter().any(|n| n.contains("app.cloud")), "{names:?}");
    let zones = r53.list_hosted_zones().send().await.unwrap();
    assert_eq!(zones.hosted_zones().len(), 1, "the private zone went, the public one stays");
}
