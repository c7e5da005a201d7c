//! Every AWS kind, by service: what the provider registers. One line per kind; a new kind is
//! added here and in its service's folder.

use crate::AwsClients;
use crate::{autoscaling, ec2, eks, elbv2, events, iam, kms, logs, route53, s3, s3files, sqs};
use engine::{Kind, Typed};
use std::sync::Arc;

/// The kinds, sharing `clients`.
pub(crate) fn all(clients: &Arc<AwsClients>) -> Vec<Arc<dyn Kind>> {
    let c = || clients.clone();
    vec![
        // EC2
        Typed::arc(ec2::vpc::VpcKind(c())),
        Typed::arc(ec2::vpc_cidr_association::VpcCidrAssociationKind(c())),
        Typed::arc(ec2::subnet::SubnetKind(c())),
        Typed::arc(ec2::internet_gateway::InternetGatewayKind(c())),
        Typed::arc(ec2::internet_gateway_attachment::InternetGatewayAttachmentKind(c())),
        Typed::arc(ec2::eip::EipKind(c())),
        Typed::arc(ec2::nat_gateway::NatGatewayKind(c())),
        Typed::arc(ec2::route_table::RouteTableKind(c())),
        Typed::arc(ec2::route::RouteKind(c())),
        Typed::arc(ec2::route_table_association::RouteTableAssociationKind(c())),
        Typed::arc(ec2::vpc_endpoint::VpcEndpointKind(c())),
        Typed::arc(ec2::security_group::SecurityGroupKind(c())),
        Typed::arc(ec2::security_group_rule::SecurityGroupRuleKind(c())),
        Typed::arc(ec2::flow_log::FlowLogKind(c())),
        Typed::arc(ec2::launch_template::LaunchTemplateKind(c())),
        // IAM
        Typed::arc(iam::role::RoleKind(c())),
        Typed::arc(iam::role_policy::RolePolicyKind(c())),
        Typed::arc(iam::role_policy_attachment::RolePolicyAttachmentKind(c())),
        Typed::arc(iam::policy::PolicyKind(c())),
        Typed::arc(iam::instance_profile::InstanceProfileKind(c())),
        Typed::arc(iam::oidc_provider::OidcProviderKind(c())),
        // KMS
        Typed::arc(kms::key::KeyKind(c())),
        Typed::arc(kms::replica_key::ReplicaKeyKind(c())),
        Typed::arc(kms::alias::AliasKind(c())),
        // S3
        Typed::arc(s3::bucket::BucketKind(c())),
        Typed::arc(s3::bucket_lookup::BucketLookupKind(c())),
        // S3 Files
        Typed::arc(s3files::file_system::FileSystemKind(c())),
        Typed::arc(s3files::mount_target::MountTargetKind(c())),
        Typed::arc(s3files::access_point::AccessPointKind(c())),
        Typed::arc(s3files::file_system_policy::FileSystemPolicyKind(c())),
        // Route53
        Typed::arc(route53::zone::ZoneKind(c())),
        Typed::arc(route53::record::RecordKind(c())),
        // CloudWatch Logs
        Typed::arc(logs::log_group::LogGroupKind(c())),
        // Elastic Load Balancing
        Typed::arc(elbv2::load_balancer::LoadBalancerKind(c())),
        Typed::arc(elbv2::target_group::TargetGroupKind(c())),
        Typed::arc(elbv2::listener::ListenerKind(c())),
        // Auto Scaling
        Typed::arc(autoscaling::group::AutoscalingGroupKind(c())),
        // EKS
        Typed::arc(eks::cluster::EksClusterKind(c())),
        Typed::arc(eks::controller_sweep::ControllerSweepKind(c())),
        Typed::arc(eks::node_group::EksNodeGroupKind(c())),
        Typed::arc(eks::addon::EksAddonKind(c())),
        Typed::arc(eks::access_entry::EksAccessEntryKind(c())),
        Typed::arc(eks::access_policy_association::EksAccessPolicyAssociationKind(c())),
        Typed::arc(eks::pod_identity::EksPodIdentityAssociationKind(c())),
        // SQS
        Typed::arc(sqs::queue::QueueKind(c())),
        Typed::arc(sqs::queue_policy::QueuePolicyKind(c())),
        // EventBridge
        Typed::arc(events::rule::EventRuleKind(c())),
    ]
}
