# The EKS stage of specs/aws.toml (`engine plan specs/aws.toml --target aws.network --target
# aws.eks`) as a Terraform configuration, with the network it sits in (../network/vpc, the
# network stage): one `terraform apply` builds what the engine builds for those two targets.
#
# Written from the engine's expansion (crates/aws/src/stages/eks/expand.rs and karpenter.rs)
# with the spec's values: the same names, the same documents, the same tags (project,
# environment and owner from default_tags, the `[eks.tags]` and `Name` per resource; only the
# engine's ownership tags are missing). Terraform names follow the engine's addresses
# (`aws.eks.iam_role["node"]` is `aws_iam_role.node`, ...).
#
# Differences in how the resources are cut, not in what is built:
# - an EventBridge rule and its one target are one engine resource (`aws_event_rule`), two
#   Terraform resources (`aws_cloudwatch_event_rule`, `aws_cloudwatch_event_target`);
# - the engine's `aws.eks.controller_sweep.main` makes nothing in AWS (it is what a destroy
#   sweeps of what the cluster's controllers made): Terraform has no counterpart;
# - the engine's network has the internet gateway's attachment as a resource of its own (../network).
#
# `include_addons`, `include_access_entries`, `include_pod_identities` (all true) can leave out
# what an emulator lacks; with moto and the project's extension (testenv/moto-server) nothing
# has to be left out.

terraform {
  required_version = ">= 1.6"
  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = "5.100.0"
    }
  }
}

variable "endpoint" {
  description = "Where AWS is reached: an emulator's URL (moto), or empty for AWS itself."
  type        = string
  default     = ""
}

variable "include_addons" {
  description = "The five EKS addons (EKS CreateAddon/DescribeAddon)."
  type        = bool
  default     = true
}

variable "include_access_entries" {
  description = "Karpenter's node access entry (EKS CreateAccessEntry/DescribeAccessEntry)."
  type        = bool
  default     = true
}

variable "include_pod_identities" {
  description = "The pod identity associations (EKS CreatePodIdentityAssociation/DescribePodIdentityAssociation)."
  type        = bool
  default     = true
}

locals {
  region   = "eu-west-3"
  cluster  = "aws-0"
  version  = "1.36"
  emulated = var.endpoint != ""
  # [globals.tags] come from default_tags; [eks.tags] on every tagged resource of the stage.
  tags     = { project = "cloud-native-ref", environment = "dev", owner = "platform" }
  eks_tags = { "karpenter.sh/discovery" = local.cluster }
  # service_trust(): the trust policy of a role assumed by an AWS service.
  trust = {
    eks  = { service = "eks.amazonaws.com", actions = ["sts:AssumeRole", "sts:TagSession"] }
    ec2  = { service = "ec2.amazonaws.com", actions = ["sts:AssumeRole", "sts:TagSession"] }
    pods = { service = "pods.eks.amazonaws.com", actions = ["sts:AssumeRole", "sts:TagSession"] }
    # Karpenter's node role: AssumeRole only.
    karpenter_node = { service = "ec2.amazonaws.com", actions = ["sts:AssumeRole"] }
  }
  trust_policy = { for k, t in local.trust : k => jsonencode({
    Version = "2012-10-17"
    Statement = [{
      Effect    = "Allow"
      Principal = { Service = t.service }
      Action    = t.actions
    }]
  }) }
  managed = "arn:aws:iam::aws:policy"
  # [eks.node_role_policies]: on every node role (the node group's and Karpenter's).
  node_role_policies = {
    "cilium_eni_aws-0" = jsonencode({
      Version = "2012-10-17"
      Statement = [{
        Sid      = "CiliumEni"
        Effect   = "Allow"
        Resource = "*"
        Action   = ["ec2:DescribeSecurityGroups", "ec2:DescribeVpcs"]
      }]
    })
  }
}

provider "aws" {
  region                      = local.region
  skip_credentials_validation = local.emulated
  # The account id is asked for (sts:GetCallerIdentity, as against AWS): without it the provider
  # cannot tell a rule's own-account group from another account's and reads every
  # `referenced_security_group_id` back as `<account>/<sg>`, a change on every plan.
  skip_requesting_account_id = false
  skip_metadata_api_check    = local.emulated
  s3_use_path_style          = local.emulated
  default_tags {
    tags = local.tags
  }
  dynamic "endpoints" {
    for_each = local.emulated ? [1] : []
    content {
      ec2        = var.endpoint
      iam        = var.endpoint
      cloudwatch = var.endpoint
      logs       = var.endpoint
      route53    = var.endpoint
      sts        = var.endpoint
      kms        = var.endpoint
      eks        = var.endpoint
      sqs        = var.endpoint
      events     = var.endpoint
    }
  }
}

# The network stage (43 resources), as bench/vs-terraform/network builds it.
module "network" {
  source = "../network/vpc"
  copy   = 0
}

# ---------------------------------------------------------------------------------------------
# Secrets encryption key.

resource "aws_kms_key" "secrets" {
  description              = "Kubernetes secrets encryption of EKS cluster ${local.cluster}"
  multi_region             = false
  customer_master_key_spec = "SYMMETRIC_DEFAULT"
  key_usage                = "ENCRYPT_DECRYPT"
  enable_key_rotation      = true
  tags                     = merge(local.eks_tags, { Name = "${local.cluster}-eks-secrets" })
}

resource "aws_kms_alias" "secrets" {
  name          = "alias/eks/${local.cluster}"
  target_key_id = aws_kms_key.secrets.id
}

# ---------------------------------------------------------------------------------------------
# IAM roles of the control plane and of the nodes.

resource "aws_iam_role" "cluster" {
  name               = "${local.cluster}-eks-cluster"
  assume_role_policy = local.trust_policy.eks
  tags               = merge(local.eks_tags, { Name = "${local.cluster}-eks-cluster" })
}

resource "aws_iam_role_policy_attachment" "cluster" {
  for_each   = toset(["AmazonEKSClusterPolicy"])
  role       = aws_iam_role.cluster.name
  policy_arn = "${local.managed}/${each.key}"
}

resource "aws_iam_role_policy" "cluster_encryption" {
  name = "secrets-encryption"
  role = aws_iam_role.cluster.name
  policy = jsonencode({
    Version = "2012-10-17"
    Statement = [{
      Effect   = "Allow"
      Action   = ["kms:Encrypt", "kms:Decrypt", "kms:ListGrants", "kms:DescribeKey"]
      Resource = aws_kms_key.secrets.arn
    }]
  })
}

resource "aws_iam_role" "node" {
  name               = "${local.cluster}-eks-node"
  assume_role_policy = local.trust_policy.ec2
  tags               = merge(local.eks_tags, { Name = "${local.cluster}-eks-node" })
}

resource "aws_iam_role_policy_attachment" "node" {
  for_each = toset([
    "AmazonEKSWorkerNodePolicy",
    "AmazonEC2ContainerRegistryReadOnly",
    "AmazonEKS_CNI_Policy",
    "AmazonSSMManagedInstanceCore",
  ])
  role       = aws_iam_role.node.name
  policy_arn = "${local.managed}/${each.key}"
}

resource "aws_iam_role_policy" "node" {
  for_each = local.node_role_policies
  name     = each.key
  role     = aws_iam_role.node.name
  policy   = each.value
}

# ---------------------------------------------------------------------------------------------
# Security groups: the control plane's (the API from the private-access path and from the
# nodes) and the nodes' (on the node group's launch template). Every rule is a resource of its
# own, the groups' default egress rule is removed (as the engine does).

resource "aws_security_group" "cluster" {
  name        = "${local.cluster}-eks-cluster"
  description = "EKS control plane of ${local.cluster}"
  vpc_id      = module.network.vpc_id
  tags        = merge(local.eks_tags, { Name = "${local.cluster}-eks-cluster" })
}

resource "aws_vpc_security_group_ingress_rule" "cluster_api_private_access" {
  security_group_id            = aws_security_group.cluster.id
  ip_protocol                  = "tcp"
  from_port                    = 443
  to_port                      = 443
  referenced_security_group_id = module.network.private_access_security_group_id
  description                  = "Kubernetes API from the private-access path"
  tags                         = merge(local.eks_tags, { Name = "Kubernetes API from the private-access path" })
}

resource "aws_vpc_security_group_egress_rule" "cluster_egress_all" {
  security_group_id = aws_security_group.cluster.id
  ip_protocol       = "-1"
  cidr_ipv4         = "0.0.0.0/0"
  description       = "all egress"
  tags              = merge(local.eks_tags, { Name = "all egress" })
}

resource "aws_security_group" "node" {
  name        = "${local.cluster}-eks-node"
  description = "EKS nodes of ${local.cluster}"
  vpc_id      = module.network.vpc_id
  tags        = merge(local.eks_tags, { Name = "${local.cluster}-eks-node" })
}

resource "aws_vpc_security_group_ingress_rule" "node_from_control_plane" {
  security_group_id            = aws_security_group.node.id
  ip_protocol                  = "tcp"
  from_port                    = 1025
  to_port                      = 65535
  referenced_security_group_id = aws_security_group.cluster.id
  description                  = "kubelets and webhooks from the control plane"
  tags                         = merge(local.eks_tags, { Name = "kubelets and webhooks from the control plane" })
}

resource "aws_vpc_security_group_ingress_rule" "node_from_pods" {
  for_each          = toset([module.network.secondary_cidr])
  security_group_id = aws_security_group.node.id
  ip_protocol       = "-1"
  cidr_ipv4         = each.key
  description       = "all traffic from pods"
  tags              = merge(local.eks_tags, { Name = "all traffic from pods" })
}

resource "aws_vpc_security_group_ingress_rule" "node_from_nodes" {
  security_group_id            = aws_security_group.node.id
  ip_protocol                  = "-1"
  referenced_security_group_id = aws_security_group.node.id
  description                  = "all traffic between nodes"
  tags                         = merge(local.eks_tags, { Name = "all traffic between nodes" })
}

resource "aws_vpc_security_group_egress_rule" "node_egress_all" {
  security_group_id = aws_security_group.node.id
  ip_protocol       = "-1"
  cidr_ipv4         = "0.0.0.0/0"
  description       = "all egress"
  tags              = merge(local.eks_tags, { Name = "all egress" })
}

resource "aws_vpc_security_group_ingress_rule" "cluster_api_from_nodes" {
  security_group_id            = aws_security_group.cluster.id
  ip_protocol                  = "tcp"
  from_port                    = 443
  to_port                      = 443
  referenced_security_group_id = aws_security_group.node.id
  description                  = "Kubernetes API from the nodes"
  tags                         = merge(local.eks_tags, { Name = "Kubernetes API from the nodes" })
}

# ---------------------------------------------------------------------------------------------
# The cluster: private endpoint only, API authentication (the creator is admin), secrets
# encrypted with the key above, the control plane's interfaces in the intra subnets.

resource "aws_eks_cluster" "main" {
  name                      = local.cluster
  version                   = local.version
  role_arn                  = aws_iam_role.cluster.arn
  enabled_cluster_log_types = []

  vpc_config {
    subnet_ids              = module.network.intra_subnet_ids
    security_group_ids      = [aws_security_group.cluster.id]
    endpoint_private_access = true
    endpoint_public_access  = false
  }

  access_config {
    authentication_mode                         = "API"
    bootstrap_cluster_creator_admin_permissions = true
  }

  encryption_config {
    resources = ["secrets"]
    provider {
      key_arn = aws_kms_key.secrets.arn
    }
  }

  kubernetes_network_config {
    service_ipv4_cidr = "172.20.0.0/16"
  }

  timeouts {
    create = "30m"
    update = "30m"
  }

  tags = merge(local.eks_tags, { Name = local.cluster })

  # The role must have its policies before EKS checks it.
  depends_on = [aws_iam_role_policy.cluster_encryption, aws_iam_role_policy_attachment.cluster]
}

# No thumbprint: AWS checks EKS issuers against its own trusted CAs (`oidc_thumbprint = "skip"`).
resource "aws_iam_openid_connect_provider" "main" {
  url            = aws_eks_cluster.main.identity[0].oidc[0].issuer
  client_id_list = ["sts.amazonaws.com"]
  tags           = merge(local.eks_tags, { Name = "${local.cluster}-eks-oidc" })
}

# ---------------------------------------------------------------------------------------------
# The node group `main`: Spot Bottlerocket in the first private subnet, with a launch template
# of its own for the pod limit (max_pods = 110), after the addons a node needs.

resource "aws_launch_template" "main" {
  name                   = "${local.cluster}-main"
  user_data              = base64encode("[settings.kubernetes]\nmax-pods = 110\n")
  vpc_security_group_ids = [aws_security_group.node.id]
  metadata_options {
    http_endpoint = "enabled"
    http_tokens   = "required"
  }
  tags = merge(local.eks_tags, { Name = "${local.cluster}-main" })
  # moto copies the template's own tags into its launch data (as a `launch-template` tag
  # specification, which AWS does not): without this every plan makes a new version.
  lifecycle {
    ignore_changes = [tag_specifications]
  }
}

resource "aws_eks_node_group" "main" {
  cluster_name    = aws_eks_cluster.main.name
  node_group_name = "main"
  version         = local.version
  release_version = "1.54.0-5043decc"
  node_role_arn   = aws_iam_role.node.arn
  subnet_ids      = [module.network.private_subnet_ids[0]]
  ami_type        = "BOTTLEROCKET_x86_64"
  capacity_type   = "SPOT"
  instance_types = [
    "c7i.xlarge", "c7i-flex.xlarge", "c6i.xlarge", "t3a.xlarge", "c7i.2xlarge", "c7i-flex.2xlarge",
  ]

  scaling_config {
    min_size     = 2
    max_size     = 3
    desired_size = 2
  }

  launch_template {
    id      = aws_launch_template.main.id
    version = aws_launch_template.main.latest_version
  }

  taint {
    key    = "node.cilium.io/agent-not-ready"
    value  = "true"
    effect = "NO_EXECUTE"
  }

  timeouts {
    create = "30m"
    update = "30m"
  }

  tags = merge(local.eks_tags, { Name = "${local.cluster}-main" })

  # moto gives every node group a default `remoteAccess` (ssh key `eksKeypair`), which AWS does
  # not (and refuses beside a launch template): without this every plan replaces the group.
  lifecycle {
    ignore_changes = [remote_access]
  }

  depends_on = [aws_iam_role_policy_attachment.node, aws_eks_addon.before_compute]
}

# ---------------------------------------------------------------------------------------------
# Addons: the CNI, kube-proxy and the pod identity agent before the nodes, the others after.

locals {
  addons_before_compute = {
    "vpc-cni"                = jsonencode({ env = { WARM_ENI_TARGET = "0", WARM_IP_TARGET = "1" } })
    "kube-proxy"             = null
    "eks-pod-identity-agent" = null
  }
  addons_after_compute = {
    "coredns" = jsonencode({
      autoScaling = { enabled = true, minReplicas = 2, maxReplicas = 4 }
      tolerations = [{ operator = "Exists" }]
    })
    "aws-ebs-csi-driver" = null
  }
}

resource "aws_eks_addon" "before_compute" {
  for_each                    = var.include_addons ? local.addons_before_compute : {}
  cluster_name                = aws_eks_cluster.main.name
  addon_name                  = each.key
  configuration_values        = each.value
  resolve_conflicts_on_create = "OVERWRITE"
  resolve_conflicts_on_update = "OVERWRITE"
  timeouts {
    create = "20m"
    update = "20m"
  }
  tags = merge(local.eks_tags, { Name = "${local.cluster}-${each.key}" })
}

resource "aws_eks_addon" "after_compute" {
  for_each                    = var.include_addons ? local.addons_after_compute : {}
  cluster_name                = aws_eks_cluster.main.name
  addon_name                  = each.key
  configuration_values        = each.value
  resolve_conflicts_on_create = "OVERWRITE"
  resolve_conflicts_on_update = "OVERWRITE"
  timeouts {
    create = "20m"
    update = "20m"
  }
  tags       = merge(local.eks_tags, { Name = "${local.cluster}-${each.key}" })
  depends_on = [aws_eks_node_group.main]
}

# ---------------------------------------------------------------------------------------------
# Pod identities: a role trusted by EKS Pod Identity, its policies, the association (after the
# policies and the pod identity agent). Karpenter's controller is the third, below.

locals {
  pod_identities = {
    "ebs-csi" = {
      namespace        = "kube-system"
      service_account  = "ebs-csi-controller-sa"
      managed_policies = ["arn:aws:iam::aws:policy/service-role/AmazonEBSCSIDriverPolicy"]
      policies         = {}
    }
    crossplane = {
      namespace        = "crossplane-system"
      service_account  = "provider-aws"
      managed_policies = []
      policies = {
        "crossplane_iam_aws-0" = jsonencode({
          Version = "2012-10-17"
          Statement = [
            {
              Sid    = "XplaneIdentities"
              Effect = "Allow"
              Action = ["iam:*"]
              Resource = [
                "arn:aws:iam::*:role/xplane-*", "arn:aws:iam::*:user/xplane-*", "arn:aws:iam::*:policy/xplane-*",
              ]
            },
            { Sid = "Read", Effect = "Allow", Action = ["iam:Get*", "iam:List*"], Resource = "*" },
          ]
        })
        "crossplane_ec2_aws-0" = jsonencode({
          Version = "2012-10-17"
          Statement = [{
            Sid      = "SecurityGroups"
            Effect   = "Allow"
            Resource = "*"
            Action = [
              "ec2:CreateSecurityGroup", "ec2:DeleteSecurityGroup", "ec2:DescribeSecurityGroups",
              "ec2:DescribeSecurityGroupRules", "ec2:AuthorizeSecurityGroupIngress",
              "ec2:AuthorizeSecurityGroupEgress", "ec2:RevokeSecurityGroupIngress",
              "ec2:RevokeSecurityGroupEgress", "ec2:ModifySecurityGroupRules", "ec2:CreateTags",
              "ec2:DeleteTags", "ec2:DescribeVpcs", "ec2:DescribeTags",
            ]
          }]
        })
        "crossplane_eks_aws-0" = jsonencode({
          Version = "2012-10-17"
          Statement = [{
            Sid      = "PodIdentities"
            Effect   = "Allow"
            Resource = "*"
            Action = [
              "eks:CreatePodIdentityAssociation", "eks:DescribePodIdentityAssociation",
              "eks:UpdatePodIdentityAssociation", "eks:DeletePodIdentityAssociation",
              "eks:ListPodIdentityAssociations", "eks:TagResource", "eks:UntagResource",
            ]
          }]
        })
        "crossplane_s3_aws-0" = jsonencode({
          Version = "2012-10-17"
          Statement = [
            {
              Sid      = "PlatformBuckets"
              Effect   = "Allow"
              Action   = ["s3:*"]
              Resource = ["arn:aws:s3:::eu-west-3-ogenki-*", "arn:aws:s3:::eu-west-3-ogenki-*/*"]
            },
            {
              Sid    = "KeepStatefulBuckets"
              Effect = "Deny"
              Action = ["s3:DeleteBucket"]
              Resource = [
                "arn:aws:s3:::eu-west-3-ogenki-harbor", "arn:aws:s3:::eu-west-3-ogenki-openbao-snapshot",
                "arn:aws:s3:::eu-west-3-ogenki-cnpg-backups",
              ]
            },
          ]
        })
        "crossplane_kms_aws-0" = jsonencode({
          Version = "2012-10-17"
          Statement = [
            {
              Sid       = "TaggedKeys"
              Effect    = "Allow"
              Action    = ["kms:CreateKey", "kms:TagResource"]
              Resource  = "*"
              Condition = { StringLike = { "aws:RequestTag/crossplane-name" = "xplane-*" } }
            },
            {
              Sid      = "XplaneAliases"
              Effect   = "Allow"
              Action   = ["kms:CreateAlias"]
              Resource = ["arn:aws:kms:*:*:alias/xplane-*", "arn:aws:kms:*:*:key/*"]
            },
          ]
        })
      }
    }
  }
  pod_identity_managed_policies = merge([
    for name, pi in local.pod_identities : {
      for arn in pi.managed_policies : "${name}/${element(split("/", arn), length(split("/", arn)) - 1)}" => { pod = name, arn = arn }
    }
  ]...)
  pod_identity_policies = merge([
    for name, pi in local.pod_identities : {
      for policy, document in pi.policies : "${name}/${policy}" => { pod = name, name = policy, document = document }
    }
  ]...)
}

resource "aws_iam_role" "pod" {
  for_each           = local.pod_identities
  name               = "${local.cluster}-${each.key}"
  assume_role_policy = local.trust_policy.pods
  tags               = merge(local.eks_tags, { Name = "${local.cluster}-${each.key}" })
}

resource "aws_iam_role_policy_attachment" "pod" {
  for_each   = local.pod_identity_managed_policies
  role       = aws_iam_role.pod[each.value.pod].name
  policy_arn = each.value.arn
}

resource "aws_iam_role_policy" "pod" {
  for_each = local.pod_identity_policies
  name     = each.value.name
  role     = aws_iam_role.pod[each.value.pod].name
  policy   = each.value.document
}

resource "aws_eks_pod_identity_association" "main" {
  for_each        = var.include_pod_identities ? local.pod_identities : {}
  cluster_name    = aws_eks_cluster.main.name
  namespace       = each.value.namespace
  service_account = each.value.service_account
  role_arn        = aws_iam_role.pod[each.key].arn
  tags            = merge(local.eks_tags, { Name = "${local.cluster}-${each.key}" })
  depends_on = [
    aws_eks_addon.before_compute, aws_iam_role_policy_attachment.pod, aws_iam_role_policy.pod,
  ]
}

# ---------------------------------------------------------------------------------------------
# Karpenter's AWS side (`[eks.karpenter]`): the interruption queue and its policy, the
# EventBridge rules sending to it, the node role with its EC2_LINUX access entry, and the
# controller's role, policy and pod identity (karpenter/karpenter).

locals {
  karpenter_namespace = "karpenter"
  karpenter_rules = {
    "spot-interruption" = {
      description = "EC2 Spot Instance Interruption Warning"
      pattern     = { source = ["aws.ec2"], "detail-type" = ["EC2 Spot Instance Interruption Warning"] }
    }
    rebalance = {
      description = "EC2 Instance Rebalance Recommendation"
      pattern     = { source = ["aws.ec2"], "detail-type" = ["EC2 Instance Rebalance Recommendation"] }
    }
    "instance-state-change" = {
      description = "EC2 Instance State-change Notification"
      pattern     = { source = ["aws.ec2"], "detail-type" = ["EC2 Instance State-change Notification"] }
    }
    "scheduled-change" = {
      description = "AWS Health Event (scheduled change)"
      pattern = {
        source        = ["aws.health"]
        "detail-type" = ["AWS Health Event"]
        detail        = { eventTypeCategory = ["scheduledChange"] }
      }
    }
  }
  owned_key      = "kubernetes.io/cluster/${local.cluster}"
  request_owned  = { StringEquals = { "aws:RequestTag/${local.owned_key}" = "owned" } }
  resource_owned = { StringEquals = { "aws:ResourceTag/${local.owned_key}" = "owned" } }
  ec2_arn        = "arn:aws:ec2:${local.region}:*"
  owned_ec2 = [
    "${local.ec2_arn}:fleet/*",
    "${local.ec2_arn}:instance/*",
    "${local.ec2_arn}:volume/*",
    "${local.ec2_arn}:network-interface/*",
    "${local.ec2_arn}:launch-template/*",
    "${local.ec2_arn}:spot-instances-request/*",
  ]
}

resource "aws_sqs_queue" "karpenter" {
  name                      = "Karpenter-${local.cluster}"
  message_retention_seconds = 300
  sqs_managed_sse_enabled   = true
  tags                      = merge(local.eks_tags, { Name = "Karpenter-${local.cluster}" })
}

resource "aws_sqs_queue_policy" "karpenter" {
  queue_url = aws_sqs_queue.karpenter.id
  policy = jsonencode({
    Version = "2012-10-17"
    Id      = "karpenter-interruption"
    Statement = [
      {
        Sid       = "EventsToInterruptionQueue"
        Effect    = "Allow"
        Principal = { Service = ["events.amazonaws.com", "sqs.amazonaws.com"] }
        Action    = "sqs:SendMessage"
        Resource  = aws_sqs_queue.karpenter.arn
      },
      {
        Sid       = "TlsOnly"
        Effect    = "Deny"
        Principal = "*"
        Action    = "sqs:*"
        Resource  = aws_sqs_queue.karpenter.arn
        Condition = { Bool = { "aws:SecureTransport" = "false" } }
      },
    ]
  })
}

resource "aws_cloudwatch_event_rule" "karpenter" {
  for_each      = local.karpenter_rules
  name          = "${local.cluster}-karpenter-${each.key}"
  description   = "${each.value.description} to Karpenter of ${local.cluster}"
  event_pattern = jsonencode(each.value.pattern)
  state         = "ENABLED"
  tags          = merge(local.eks_tags, { Name = "${local.cluster}-karpenter-${each.key}" })
  depends_on    = [aws_sqs_queue_policy.karpenter]
}

resource "aws_cloudwatch_event_target" "karpenter" {
  for_each  = local.karpenter_rules
  rule      = aws_cloudwatch_event_rule.karpenter[each.key].name
  target_id = "karpenter-interruption-queue"
  arn       = aws_sqs_queue.karpenter.arn
}

resource "aws_iam_role" "karpenter_node" {
  name               = "Karpenter-${local.cluster}"
  assume_role_policy = local.trust_policy.karpenter_node
  tags               = merge(local.eks_tags, { Name = "Karpenter-${local.cluster}" })
}

resource "aws_iam_role_policy_attachment" "karpenter_node" {
  for_each = toset([
    "AmazonEKSWorkerNodePolicy",
    "AmazonEKS_CNI_Policy",
    "AmazonEC2ContainerRegistryPullOnly",
    "AmazonSSMManagedInstanceCore",
  ])
  role       = aws_iam_role.karpenter_node.name
  policy_arn = "${local.managed}/${each.key}"
}

resource "aws_iam_role_policy" "karpenter_node" {
  for_each = local.node_role_policies
  name     = each.key
  role     = aws_iam_role.karpenter_node.name
  policy   = each.value
}

resource "aws_eks_access_entry" "karpenter_node" {
  count         = var.include_access_entries ? 1 : 0
  cluster_name  = aws_eks_cluster.main.name
  principal_arn = aws_iam_role.karpenter_node.arn
  type          = "EC2_LINUX"
  tags          = merge(local.eks_tags, { Name = "Karpenter-${local.cluster}" })
}

resource "aws_iam_role" "karpenter" {
  name               = "${local.cluster}-karpenter"
  assume_role_policy = local.trust_policy.pods
  tags               = merge(local.eks_tags, { Name = "${local.cluster}-karpenter" })
}

resource "aws_iam_role_policy" "karpenter" {
  name = "karpenter-controller"
  role = aws_iam_role.karpenter.name
  policy = jsonencode({
    Version = "2012-10-17"
    Statement = [
      {
        Sid    = "LaunchFromSharedResources"
        Effect = "Allow"
        Action = ["ec2:RunInstances", "ec2:CreateFleet"]
        Resource = [
          "arn:aws:ec2:${local.region}::image/*",
          "arn:aws:ec2:${local.region}::snapshot/*",
          "${local.ec2_arn}:security-group/*",
          "${local.ec2_arn}:subnet/*",
          "${local.ec2_arn}:capacity-reservation/*",
        ]
      },
      {
        Sid       = "LaunchFromOwnTemplates"
        Effect    = "Allow"
        Action    = ["ec2:RunInstances", "ec2:CreateFleet"]
        Resource  = "${local.ec2_arn}:launch-template/*"
        Condition = local.resource_owned
      },
      {
        Sid       = "CreateOwnedInstances"
        Effect    = "Allow"
        Action    = ["ec2:RunInstances", "ec2:CreateFleet", "ec2:CreateLaunchTemplate"]
        Resource  = local.owned_ec2
        Condition = local.request_owned
      },
      {
        Sid      = "TagWhatItCreates"
        Effect   = "Allow"
        Action   = "ec2:CreateTags"
        Resource = local.owned_ec2
        Condition = {
          StringEquals = {
            "aws:RequestTag/${local.owned_key}" = "owned"
            "ec2:CreateAction"                  = ["RunInstances", "CreateFleet", "CreateLaunchTemplate"]
          }
        }
      },
      {
        Sid       = "LabelOwnedInstances"
        Effect    = "Allow"
        Action    = "ec2:CreateTags"
        Resource  = "${local.ec2_arn}:instance/*"
        Condition = local.resource_owned
      },
      {
        Sid       = "RemoveOwnedInstancesAndTemplates"
        Effect    = "Allow"
        Action    = ["ec2:TerminateInstances", "ec2:DeleteLaunchTemplate"]
        Resource  = ["${local.ec2_arn}:instance/*", "${local.ec2_arn}:launch-template/*"]
        Condition = local.resource_owned
      },
      {
        Sid    = "ReadRegionalCatalogue"
        Effect = "Allow"
        Action = [
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
        ]
        Resource  = "*"
        Condition = { StringEquals = { "aws:RequestedRegion" = local.region } }
      },
      {
        Sid      = "ReadPublicImageParameters"
        Effect   = "Allow"
        Action   = "ssm:GetParameter"
        Resource = "arn:aws:ssm:${local.region}::parameter/aws/service/*"
      },
      {
        Sid      = "ReadPrices"
        Effect   = "Allow"
        Action   = "pricing:GetProducts"
        Resource = "*"
      },
      {
        Sid      = "ConsumeInterruptionQueue"
        Effect   = "Allow"
        Action   = ["sqs:DeleteMessage", "sqs:GetQueueUrl", "sqs:ReceiveMessage"]
        Resource = aws_sqs_queue.karpenter.arn
      },
      {
        Sid       = "PassNodeRole"
        Effect    = "Allow"
        Action    = "iam:PassRole"
        Resource  = aws_iam_role.karpenter_node.arn
        Condition = { StringEquals = { "iam:PassedToService" = "ec2.amazonaws.com" } }
      },
      {
        Sid       = "CreateOwnedInstanceProfiles"
        Effect    = "Allow"
        Action    = ["iam:CreateInstanceProfile", "iam:TagInstanceProfile"]
        Resource  = "arn:aws:iam::*:instance-profile/*"
        Condition = local.request_owned
      },
      {
        Sid    = "ManageOwnedInstanceProfiles"
        Effect = "Allow"
        Action = [
          "iam:AddRoleToInstanceProfile",
          "iam:RemoveRoleFromInstanceProfile",
          "iam:DeleteInstanceProfile",
          "iam:TagInstanceProfile",
        ]
        Resource  = "arn:aws:iam::*:instance-profile/*"
        Condition = local.resource_owned
      },
      {
        Sid      = "ReadInstanceProfiles"
        Effect   = "Allow"
        Action   = ["iam:GetInstanceProfile", "iam:ListInstanceProfiles"]
        Resource = "*"
      },
      {
        Sid      = "FindClusterEndpoint"
        Effect   = "Allow"
        Action   = "eks:DescribeCluster"
        Resource = aws_eks_cluster.main.arn
      },
    ]
  })
}

resource "aws_eks_pod_identity_association" "karpenter" {
  count           = var.include_pod_identities ? 1 : 0
  cluster_name    = aws_eks_cluster.main.name
  namespace       = local.karpenter_namespace
  service_account = "karpenter"
  role_arn        = aws_iam_role.karpenter.arn
  tags            = merge(local.eks_tags, { Name = "${local.cluster}-karpenter" })
  depends_on      = [aws_eks_addon.before_compute, aws_iam_role_policy.karpenter]
}

output "left_out" {
  description = "What this run leaves out for Terraform, and why (empty: nothing)."
  value = concat(
    var.include_addons ? [] : ["aws_eks_addon (5): the emulator lacks EKS CreateAddon/DescribeAddon"],
    var.include_access_entries ? [] : ["aws_eks_access_entry (1): the emulator lacks EKS CreateAccessEntry/DescribeAccessEntry"],
    var.include_pod_identities ? [] : ["aws_eks_pod_identity_association (3): the emulator lacks EKS CreatePodIdentityAssociation/DescribePodIdentityAssociation"],
  )
}

output "cluster_name" {
  value = aws_eks_cluster.main.name
}
