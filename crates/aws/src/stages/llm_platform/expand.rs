//! Expansion of `[llm_platform]` into resources (the reference's `aws/llm-platform`).

use super::spec::LlmPlatformSpec;
use crate::stages::eks;
use crate::stages::network::spec::NetworkSpec;
use crate::tagging as tags;
use engine::spec::Globals;
use engine::{Address, ResourceSpec, Value};
use serde_json::json;

/// Stage prefix of every LLM platform resource.
pub const STAGE: &str = "aws.llm_platform";

/// The AWS managed policies of the CSI driver's role.
const CSI_POLICIES: &[&str] = &[
    "arn:aws:iam::aws:policy/service-role/AmazonEFSCSIDriverPolicy",
    "arn:aws:iam::aws:policy/service-role/AmazonS3FilesCSIDriverPolicy",
];

/// The EventBridge rules S3 Files makes to follow the bucket's changes.
const SYNC_RULES: &str = "DO-NOT-DELETE-S3-Files*";

fn addr(rest: &str) -> Address {
    Address::new(format!("{STAGE}.{rest}"))
}

fn network(rest: &str) -> Address {
    Address::new(format!("{}.{rest}", crate::stages::network::STAGE))
}

/// A JSON object whose values may be references.
fn object<const N: usize>(entries: [(&str, Value); N]) -> Value {
    Value::Map(entries.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
}

fn strings(items: &[&str]) -> Value {
    Value::List(items.iter().map(|s| Value::from(*s)).collect())
}

/// An IAM policy document of `statements`.
fn document(statements: Vec<Value>) -> Value {
    object([("Version", Value::from("2012-10-17")), ("Statement", Value::List(statements))])
}

/// Builds the resources of a validated `[llm_platform]`.
pub fn resources(
    spec_name: &str,
    globals: &Globals,
    net: &NetworkSpec,
    cluster: &eks::spec::EksSpec,
    llm: &LlmPlatformSpec,
) -> Vec<ResourceSpec> {
    let name = &llm.name;
    let layers = [&globals.tags, &llm.tags];
    let tag = |address: &Address, n: &str| tags::desired(spec_name, address, n, &layers);
    let bucket_arn = format!("arn:aws:s3:::{}", llm.bucket);
    let cluster_address = eks::cluster_address();
    let account = Value::reference(&cluster_address, "account_id");
    let region = globals.region.as_str();
    let mut out = Vec::new();

    // The models bucket, made outside the spec: looked up (a plan stops when it is missing),
    // and only forgotten by a destroy.
    let bucket = addr("s3_bucket_lookup.models");
    let mut lookup = ResourceSpec::new(bucket.clone(), "aws_s3_bucket_lookup")
        .attr("bucket", llm.bucket.as_str());
    lookup.retained = true;
    out.push(lookup);

    // The mount targets' security group: NFS from the cluster's nodes.
    let sg = addr("security_group.mount_targets");
    let sg_name = format!("{name}-mount-targets");
    out.push(
        ResourceSpec::new(sg.clone(), "aws_security_group")
            .attr("foreign_rules", Value::List(vec![]))
            .attr("name", sg_name.as_str())
            .attr("description", format!("NFS to the mount targets of {name}"))
            .attr("vpc_id", Value::reference(&network("vpc.main"), "id"))
            .attr("tags", tag(&sg, &sg_name)),
    );
    let nfs = addr("security_group_rule.nfs_from_nodes");
    out.push(
        ResourceSpec::new(nfs.clone(), "aws_security_group_rule")
            .attr("security_group_id", Value::reference(&sg, "id"))
            .attr("direction", "ingress")
            .attr("protocol", "tcp")
            .attr("from_port", 2049)
            .attr("to_port", 2049)
            .attr("referenced_security_group_id", eks::node_security_group(cluster))
            .attr("description", "NFS from the EKS nodes")
            .attr("tags", tag(&nfs, "NFS from the EKS nodes")),
    );

    // The role S3 Files takes to keep the file system and the bucket in sync: trusted by the
    // service, for this account's file systems only.
    let service_role = addr("iam_role.service");
    let service_name = format!("{name}-service");
    let trust = document(vec![object([
        ("Sid", Value::from("S3FilesAssumeRole")),
        ("Effect", Value::from("Allow")),
        ("Principal", object([("Service", Value::from("elasticfilesystem.amazonaws.com"))])),
        ("Action", Value::from("sts:AssumeRole")),
        (
            "Condition",
            object([
                ("StringEquals", object([("aws:SourceAccount", account.clone())])),
                (
                    "ArnLike",
                    object([(
                        "aws:SourceArn",
                        Value::from(format!("arn:aws:s3files:{region}:*:file-system/*")),
                    )]),
                ),
            ]),
        ),
    ])]);
    out.push(
        ResourceSpec::new(service_role.clone(), "aws_iam_role")
            .attr("name", service_name.as_str())
            .attr("assume_role_policy", trust)
            .attr("tags", tag(&service_role, &service_name)),
    );
    let bucket_access = addr("iam_role_policy.service_bucket");
    out.push(
        ResourceSpec::new(bucket_access.clone(), "aws_iam_role_policy")
            .attr("role_name", Value::reference(&service_role, "name"))
            .attr("name", "bucket")
            .attr(
                "policy",
                Value::Json(json!({
                    "Version": "2012-10-17",
                    "Statement": [
                        {
                            "Sid": "Bucket",
                            "Effect": "Allow",
                            "Action": ["s3:ListBucket", "s3:ListBucketVersions"],
                            "Resource": bucket_arn,
                        },
                        {
                            "Sid": "Objects",
                            "Effect": "Allow",
                            "Action": [
                                "s3:AbortMultipartUpload",
                                "s3:DeleteObject*",
                                "s3:GetObject*",
                                "s3:List*",
                                "s3:PutObject*",
                            ],
                            "Resource": format!("{bucket_arn}/*"),
                        },
                    ],
                })),
            ),
    );
    let events = addr("iam_role_policy.service_eventbridge");
    out.push(
        ResourceSpec::new(events.clone(), "aws_iam_role_policy")
            .attr("role_name", Value::reference(&service_role, "name"))
            .attr("name", "eventbridge")
            .attr(
                "policy",
                Value::Json(json!({
                    "Version": "2012-10-17",
                    "Statement": [{
                        "Sid": "SyncRules",
                        "Effect": "Allow",
                        "Action": [
                            "events:DeleteRule",
                            "events:DescribeRule",
                            "events:DisableRule",
                            "events:EnableRule",
                            "events:PutRule",
                            "events:PutTargets",
                            "events:RemoveTargets",
                            "events:ListTargetsByRule",
                        ],
                        "Resource": format!("arn:aws:events:{region}:*:rule/{SYNC_RULES}"),
                    }],
                })),
            ),
    );

    // The file system on the bucket, once its role may reach the bucket.
    let fs = addr("s3files_file_system.models");
    out.push(
        ResourceSpec::new(fs.clone(), "aws_s3files_file_system")
            .attr("bucket", Value::reference(&bucket, "bucket"))
            .attr("role_arn", Value::reference(&service_role, "arn"))
            .attr("tags", tag(&fs, name))
            .after(&bucket_access)
            .after(&events),
    );
    for az in &net.azs {
        out.push(
            ResourceSpec::new(
                addr("s3files_mount_target.models").index(az),
                "aws_s3files_mount_target",
            )
            .attr("file_system_id", Value::reference(&fs, "id"))
            .attr("subnet_id", Value::reference(&network("subnet.private").index(az), "id"))
            .attr("security_groups", Value::List(vec![Value::reference(&sg, "id")])),
        );
    }
    let ap = &llm.access_point;
    let access_point = addr("s3files_access_point").index(&ap.name);
    out.push(
        ResourceSpec::new(access_point.clone(), "aws_s3files_access_point")
            .attr("file_system_id", Value::reference(&fs, "id"))
            .attr(
                "posix_user",
                object([("uid", Value::from(ap.uid)), ("gid", Value::from(ap.gid))]),
            )
            .attr(
                "root_directory",
                object([
                    ("path", Value::from(ap.path.as_str())),
                    ("owner_uid", Value::from(ap.uid)),
                    ("owner_gid", Value::from(ap.gid)),
                    ("permissions", Value::from(ap.permissions.as_str())),
                ]),
            )
            .attr("tags", tag(&access_point, &ap.name)),
    );

    // The CSI driver's role, bounded, for its service accounts.
    let boundary = addr("iam_policy.csi_driver_boundary");
    let boundary_name = format!("{name}-csi-driver-boundary");
    out.push(
        ResourceSpec::new(boundary.clone(), "aws_iam_policy")
            .attr("name", boundary_name.as_str())
            .attr("description", format!("The most the CSI driver of {name} may do"))
            .attr("policy", csi_boundary(region))
            .attr("tags", tag(&boundary, &boundary_name)),
    );
    let csi_role = addr("iam_role.csi_driver");
    let csi_name = format!("{name}-csi-driver");
    out.push(
        ResourceSpec::new(csi_role.clone(), "aws_iam_role")
            .attr("name", csi_name.as_str())
            .attr(
                "assume_role_policy",
                crate::stages::service_trust(
                    "pods.eks.amazonaws.com",
                    &["sts:AssumeRole", "sts:TagSession"],
                ),
            )
            .attr("permissions_boundary", Value::reference(&boundary, "arn"))
            .attr("tags", tag(&csi_role, &csi_name)),
    );
    let mut attachments = Vec::new();
    for arn in CSI_POLICIES {
        let short = arn.rsplit('/').next().unwrap_or(arn);
        let a = addr("iam_role_policy_attachment").index(&format!("csi_driver/{short}"));
        out.push(
            ResourceSpec::new(a.clone(), "aws_iam_role_policy_attachment")
                .attr("role_name", Value::reference(&csi_role, "name"))
                .attr("policy_arn", *arn),
        );
        attachments.push(a);
    }
    // Only the CSI driver mounts and writes.
    out.push(
        ResourceSpec::new(
            addr("s3files_file_system_policy.models"),
            "aws_s3files_file_system_policy",
        )
        .attr("file_system_id", Value::reference(&fs, "id"))
        .attr(
            "policy",
            document(vec![object([
                ("Sid", Value::from("CsiDriverMountsAndWrites")),
                ("Effect", Value::from("Allow")),
                ("Principal", object([("AWS", Value::reference(&csi_role, "arn"))])),
                ("Action", strings(&["s3files:ClientMount", "s3files:ClientWrite"])),
                ("Resource", Value::reference(&fs, "arn")),
            ])]),
        ),
    );
    let cluster_name = Value::reference(&cluster_address, "name");
    for sa in &llm.csi_service_accounts {
        let a = addr("eks_pod_identity_association").index(sa);
        let mut r = ResourceSpec::new(a.clone(), "aws_eks_pod_identity_association")
            .attr("cluster_name", cluster_name.clone())
            .attr("namespace", llm.csi_namespace.as_str())
            .attr("service_account", sa.as_str())
            .attr("role_arn", Value::reference(&csi_role, "arn"))
            .attr("tags", tag(&a, &csi_name));
        for p in &attachments {
            r = r.after(p);
        }
        out.push(r);
    }
    out
}

/// The permissions boundary of the CSI driver's role: S3 Files and EFS clients and their
/// volumes' access points, the network lookups the driver makes, and nothing on IAM.
fn csi_boundary(region: &str) -> Value {
    Value::Json(json!({
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "FileSystems",
                "Effect": "Allow",
                "Action": ["s3files:*", "elasticfilesystem:*"],
                "Resource": "*",
                "Condition": {"StringEquals": {"aws:RequestedRegion": region}},
            },
            {
                "Sid": "Lookups",
                "Effect": "Allow",
                "Action": [
                    "ec2:DescribeAvailabilityZones",
                    "ec2:DescribeNetworkInterfaces",
                    "ec2:DescribeSubnets",
                ],
                "Resource": "*",
            },
            {
                "Sid": "NoIdentityChanges",
                "Effect": "Deny",
                "Action": ["iam:*", "sts:AssumeRole"],
                "Resource": "*",
            },
        ],
    }))
}
