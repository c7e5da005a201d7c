//! Expansion of `[eks.karpenter]`: what Karpenter needs from AWS before its chart runs.
//!
//! - the interruption queue `<cluster>` (SQS-managed encryption, messages kept 300 s) and its
//!   policy letting EventBridge and SQS send to it;
//! - EventBridge rules for the events Karpenter reacts to (Spot interruption warnings,
//!   rebalance recommendations, instance state changes, scheduled AWS Health changes), each
//!   with the queue as target;
//! - the node role `<cluster>-karpenter-node` (trusted by EC2, the worker node policies) and an
//!   `EC2_LINUX` access entry so its instances can join the cluster;
//! - the controller's role `<cluster>-karpenter` with an inline policy, bound to its service
//!   account by a pod identity association.

use super::expand::{Context, PodIdentity, addr, managed_policy_arn, pod_identity, trust};
use super::spec::{KARPENTER, KarpenterSpec};
use engine::{ResourceSpec, Value};
use serde_json::{Value as Json, json};

/// The node role's AWS managed policies.
const NODE_POLICIES: &[&str] = &[
    "AmazonEKSWorkerNodePolicy",
    "AmazonEKS_CNI_Policy",
    "AmazonEC2ContainerRegistryPullOnly",
    "AmazonSSMManagedInstanceCore",
];

/// The EventBridge rules: key, description, event pattern.
fn rules() -> [(&'static str, &'static str, Json); 4] {
    [
        (
            "spot-interruption",
            "EC2 Spot Instance Interruption Warning",
            json!({"source": ["aws.ec2"], "detail-type": ["EC2 Spot Instance Interruption Warning"]}),
        ),
        (
            "rebalance",
            "EC2 Instance Rebalance Recommendation",
            json!({"source": ["aws.ec2"], "detail-type": ["EC2 Instance Rebalance Recommendation"]}),
        ),
        (
            "instance-state-change",
            "EC2 Instance State-change Notification",
            json!({"source": ["aws.ec2"], "detail-type": ["EC2 Instance State-change Notification"]}),
        ),
        (
            "scheduled-change",
            "AWS Health Event (scheduled change)",
            json!({
                "source": ["aws.health"],
                "detail-type": ["AWS Health Event"],
                "detail": {"eventTypeCategory": ["scheduledChange"]},
            }),
        ),
    ]
}

/// A JSON document as a desired value, with every string equal to a key of `refs` replaced by
/// its value (references to other resources' attributes).
fn document(doc: &Json, refs: &[(&str, &Value)]) -> Value {
    match doc {
        Json::Null => Value::Null,
        Json::Bool(b) => Value::Bool(*b),
        Json::Number(n) => n.as_i64().map_or_else(|| Value::Json(doc.clone()), Value::Int),
        Json::String(s) => refs
            .iter()
            .find(|(k, _)| k == s)
            .map_or_else(|| Value::Str(s.clone()), |(_, v)| (*v).clone()),
        Json::Array(items) => Value::List(items.iter().map(|i| document(i, refs)).collect()),
        Json::Object(map) => {
            Value::Map(map.iter().map(|(k, v)| (k.clone(), document(v, refs))).collect())
        }
    }
}

const QUEUE_ARN: &str = "${queue_arn}";
const NODE_ROLE_ARN: &str = "${node_role_arn}";
const CLUSTER_ARN: &str = "${cluster_arn}";

/// The queue's policy: EventBridge and SQS may send; nothing over plain HTTP.
fn queue_policy() -> Json {
    json!({
        "Version": "2012-10-17",
        "Id": "karpenter-interruption",
        "Statement": [
            {
                "Sid": "EventsToInterruptionQueue",
                "Effect": "Allow",
                "Principal": {"Service": ["events.amazonaws.com", "sqs.amazonaws.com"]},
                "Action": "sqs:SendMessage",
                "Resource": QUEUE_ARN,
            },
            {
                "Sid": "TlsOnly",
                "Effect": "Deny",
                "Principal": "*",
                "Action": "sqs:*",
                "Resource": QUEUE_ARN,
                "Condition": {"Bool": {"aws:SecureTransport": "false"}},
            },
        ]
    })
}

/// What the controller does in AWS: launch and terminate instances (through fleets and its own
/// launch templates) tagged for this cluster, read the regional catalogue (images, types,
/// subnets, security groups, prices, SSM's public image parameters), manage the instance
/// profiles of the node role and pass that role to EC2, consume the interruption queue, and
/// find the cluster's endpoint.
fn controller_policy(cluster: &str, region: &str) -> Json {
    let owned_key = format!("kubernetes.io/cluster/{cluster}");
    let request_owned = json!({"StringEquals": {format!("aws:RequestTag/{owned_key}"): "owned"}});
    let resource_owned = json!({"StringEquals": {format!("aws:ResourceTag/{owned_key}"): "owned"}});
    let ec2 = |what: &str| format!("arn:aws:ec2:{region}:*:{what}");
    json!({
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "LaunchFromSharedResources",
                "Effect": "Allow",
                "Action": ["ec2:RunInstances", "ec2:CreateFleet"],
                "Resource": [
                    format!("arn:aws:ec2:{region}::image/*"),
                    format!("arn:aws:ec2:{region}::snapshot/*"),
                    ec2("security-group/*"),
                    ec2("subnet/*"),
                    ec2("capacity-reservation/*"),
                ],
            },
            {
                "Sid": "LaunchFromOwnTemplates",
                "Effect": "Allow",
                "Action": ["ec2:RunInstances", "ec2:CreateFleet"],
                "Resource": ec2("launch-template/*"),
                "Condition": resource_owned,
            },
            {
                "Sid": "CreateOwnedInstances",
                "Effect": "Allow",
                "Action": ["ec2:RunInstances", "ec2:CreateFleet", "ec2:CreateLaunchTemplate"],
                "Resource": [
                    ec2("fleet/*"),
                    ec2("instance/*"),
                    ec2("volume/*"),
                    ec2("network-interface/*"),
                    ec2("launch-template/*"),
                    ec2("spot-instances-request/*"),
                ],
                "Condition": request_owned,
            },
            {
                "Sid": "TagWhatItCreates",
                "Effect": "Allow",
                "Action": "ec2:CreateTags",
                "Resource": [
                    ec2("fleet/*"),
                    ec2("instance/*"),
                    ec2("volume/*"),
                    ec2("network-interface/*"),
                    ec2("launch-template/*"),
                    ec2("spot-instances-request/*"),
                ],
                "Condition": {
                    "StringEquals": {
                        format!("aws:RequestTag/{owned_key}"): "owned",
                        "ec2:CreateAction": ["RunInstances", "CreateFleet", "CreateLaunchTemplate"],
                    }
                },
            },
            {
                "Sid": "LabelOwnedInstances",
                "Effect": "Allow",
                "Action": "ec2:CreateTags",
                "Resource": ec2("instance/*"),
                "Condition": resource_owned,
            },
            {
                "Sid": "RemoveOwnedInstancesAndTemplates",
                "Effect": "Allow",
                "Action": ["ec2:TerminateInstances", "ec2:DeleteLaunchTemplate"],
                "Resource": [ec2("instance/*"), ec2("launch-template/*")],
                "Condition": resource_owned,
            },
            {
                "Sid": "ReadRegionalCatalogue",
                "Effect": "Allow",
                "Action": [
                    "ec2:DescribeAvailabilityZones",
                    "ec2:DescribeCapacityReservations",
                    "ec2:DescribeImages",
                    "ec2:DescribeInstances",
                    "ec2:DescribeInstanceTypeOfferings",
                    "ec2:DescribeInstanceTypes",
                    "ec2:DescribeLaunchTemplates",
                    "ec2:DescribeSecurityGroups",
                    "ec2:DescribeSpotPriceHistory",
                    "ec2:DescribeSubnets",
                ],
                "Resource": "*",
                "Condition": {"StringEquals": {"aws:RequestedRegion": region}},
            },
            {
                "Sid": "ReadPublicImageParameters",
                "Effect": "Allow",
                "Action": "ssm:GetParameter",
                "Resource": format!("arn:aws:ssm:{region}::parameter/aws/service/*"),
            },
            {
                "Sid": "ReadPrices",
                "Effect": "Allow",
                "Action": "pricing:GetProducts",
                "Resource": "*",
            },
            {
                "Sid": "ConsumeInterruptionQueue",
                "Effect": "Allow",
                "Action": ["sqs:DeleteMessage", "sqs:GetQueueUrl", "sqs:ReceiveMessage"],
                "Resource": QUEUE_ARN,
            },
            {
                "Sid": "PassNodeRole",
                "Effect": "Allow",
                "Action": "iam:PassRole",
                "Resource": NODE_ROLE_ARN,
                "Condition": {"StringEquals": {"iam:PassedToService": "ec2.amazonaws.com"}},
            },
            {
                "Sid": "CreateOwnedInstanceProfiles",
                "Effect": "Allow",
                "Action": ["iam:CreateInstanceProfile", "iam:TagInstanceProfile"],
                "Resource": "arn:aws:iam::*:instance-profile/*",
                "Condition": request_owned,
            },
            {
                "Sid": "ManageOwnedInstanceProfiles",
                "Effect": "Allow",
                "Action": [
                    "iam:AddRoleToInstanceProfile",
                    "iam:RemoveRoleFromInstanceProfile",
                    "iam:DeleteInstanceProfile",
                    "iam:TagInstanceProfile",
                ],
                "Resource": "arn:aws:iam::*:instance-profile/*",
                "Condition": resource_owned,
            },
            {
                "Sid": "ReadInstanceProfiles",
                "Effect": "Allow",
                "Action": ["iam:GetInstanceProfile", "iam:ListInstanceProfiles"],
                "Resource": "*",
            },
            {
                "Sid": "FindClusterEndpoint",
                "Effect": "Allow",
                "Action": "eks:DescribeCluster",
                "Resource": CLUSTER_ARN,
            },
        ]
    })
}

/// The resources of an enabled `[eks.karpenter]`.
pub(super) fn resources(cx: &Context<'_>, k: &KarpenterSpec) -> Vec<ResourceSpec> {
    let cluster = cx.cluster;
    let mut out = Vec::new();

    // The interruption queue (Karpenter's `interruptionQueue`), named after the cluster unless
    // the spec names it.
    let queue = addr("sqs_queue").index(KARPENTER);
    let queue_name = k.queue_name.as_deref().unwrap_or(cluster);
    out.push(
        ResourceSpec::new(queue.clone(), "aws_sqs_queue")
            .attr("name", queue_name)
            .attr("message_retention_seconds", 300i64)
            .attr("sqs_managed_sse", true)
            .attr("tags", (cx.tag)(&queue, queue_name)),
    );
    let queue_arn = Value::reference(&queue, "arn");
    let queue_policy_addr = addr("sqs_queue_policy").index(KARPENTER);
    out.push(
        ResourceSpec::new(queue_policy_addr.clone(), "aws_sqs_queue_policy")
            .attr("queue_url", Value::reference(&queue, "id"))
            .attr("policy", document(&queue_policy(), &[(QUEUE_ARN, &queue_arn)])),
    );

    // EventBridge rules, each sending to the queue (once the queue accepts them).
    for (key, description, pattern) in rules() {
        let a = addr("event_rule").index(key);
        let name = format!("{cluster}-karpenter-{key}");
        out.push(
            ResourceSpec::new(a.clone(), "aws_event_rule")
                .attr("name", name.as_str())
                .attr("description", format!("{description} to Karpenter of {cluster}"))
                .attr("event_pattern", Value::Json(pattern))
                .attr("state", "ENABLED")
                .attr("target_id", "karpenter-interruption-queue")
                .attr("target_arn", queue_arn.clone())
                .attr("tags", (cx.tag)(&a, &name))
                .after(&queue_policy_addr),
        );
    }

    // The node role, its policies and its access entry.
    let node_role = addr("iam_role").index("karpenter-node");
    let node_role_name =
        k.node_role_name.clone().unwrap_or_else(|| format!("{cluster}-karpenter-node"));
    out.push(
        ResourceSpec::new(node_role.clone(), "aws_iam_role")
            .attr("name", node_role_name.as_str())
            .attr("assume_role_policy", trust("ec2.amazonaws.com", &["sts:AssumeRole"]))
            .attr("tags", (cx.tag)(&node_role, &node_role_name)),
    );
    for p in NODE_POLICIES {
        out.push(
            ResourceSpec::new(
                addr("iam_role_policy_attachment").index(&format!("karpenter-node/{p}")),
                "aws_iam_role_policy_attachment",
            )
            .attr("role_name", Value::reference(&node_role, "name"))
            .attr("policy_arn", managed_policy_arn(p)),
        );
    }
    out.extend(super::expand::node_role_policies(cx, "karpenter-node", &node_role));
    let entry = addr("access_entry").index("karpenter-node");
    out.push(
        ResourceSpec::new(entry.clone(), "aws_eks_access_entry")
            .attr("cluster_name", cx.cluster_name.clone())
            .attr("principal_arn", Value::reference(&node_role, "arn"))
            .attr("type", "EC2_LINUX")
            .attr("tags", (cx.tag)(&entry, &node_role_name)),
    );

    // The controller: its role, inline policy and pod identity association.
    let node_role_arn = Value::reference(&node_role, "arn");
    let cluster_arn = Value::reference(cx.cluster_address, "arn");
    out.extend(pod_identity(
        cx,
        &PodIdentity {
            name: KARPENTER,
            namespace: &k.namespace,
            service_account: &k.service_account,
            managed_policies: &[],
            inline_policy: Some((
                "karpenter-controller",
                document(
                    &controller_policy(cluster, cx.region),
                    &[
                        (QUEUE_ARN, &queue_arn),
                        (NODE_ROLE_ARN, &node_role_arn),
                        (CLUSTER_ARN, &cluster_arn),
                    ],
                ),
            )),
            named_policies: vec![],
        },
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use engine::Address;

    #[test]
    fn documents_take_references_where_their_placeholders_are() {
        let queue = Address::new("aws.eks.sqs_queue[\"karpenter\"]");
        let arn = Value::reference(&queue, "arn");
        let doc = document(&queue_policy(), &[(QUEUE_ARN, &arn)]);
        let refs = doc.references();
        assert_eq!(refs.len(), 2, "both statements name the queue");
        assert!(refs.iter().all(|r| r.address == queue && r.attribute == "arn"));
        let resolved =
            doc.resolve(&|_| Some(json!("arn:aws:sqs:eu-west-3:123456789012:aws-0"))).unwrap();
        assert_eq!(
            resolved["Statement"][0]["Principal"]["Service"],
            json!(["events.amazonaws.com", "sqs.amazonaws.com"])
        );
        assert_eq!(resolved["Statement"][0]["Action"], "sqs:SendMessage");
        assert_eq!(
            resolved["Statement"][0]["Resource"],
            "arn:aws:sqs:eu-west-3:123456789012:aws-0"
        );
    }

    #[test]
    fn the_controller_policy_covers_what_karpenter_calls() {
        let doc = controller_policy("aws-0", "eu-west-3");
        let actions: Vec<String> = doc["Statement"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|s| match &s["Action"] {
                Json::String(a) => vec![a.clone()],
                Json::Array(a) => a.iter().map(|a| a.as_str().unwrap().to_string()).collect(),
                _ => vec![],
            })
            .collect();
        for needed in [
            "ec2:CreateFleet",
            "ec2:RunInstances",
            "ec2:CreateLaunchTemplate",
            "ec2:DeleteLaunchTemplate",
            "ec2:TerminateInstances",
            "ec2:DescribeInstanceTypes",
            "iam:PassRole",
            "iam:CreateInstanceProfile",
            "iam:AddRoleToInstanceProfile",
            "iam:GetInstanceProfile",
            "sqs:ReceiveMessage",
            "sqs:DeleteMessage",
            "eks:DescribeCluster",
            "pricing:GetProducts",
            "ssm:GetParameter",
        ] {
            assert!(actions.iter().any(|a| a == needed), "{needed}");
        }
        let text = doc.to_string();
        assert!(text.contains("aws:RequestTag/kubernetes.io/cluster/aws-0"));
        assert!(text.contains("arn:aws:ec2:eu-west-3::image/*"));
        // Sids are unique.
        let mut sids: Vec<&str> = doc["Statement"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["Sid"].as_str().unwrap())
            .collect();
        let n = sids.len();
        sids.sort();
        sids.dedup();
        assert_eq!(sids.len(), n);
    }

    #[test]
    fn rule_names_fit_eventbridge() {
        for (key, _, pattern) in rules() {
            assert!(format!("{}-karpenter-{key}", "a".repeat(32)).len() <= 64);
            assert!(pattern["source"].is_array());
        }
    }
}
