# The network stage of specs/aws.toml (`engine plan --target aws.network`: 44 resources), for
# Terraform with the resource names of terraform-aws-modules/vpc where the reference platform uses
# that module (`aws_vpc.this`, `aws_subnet.private[0]`, ...). `copy` 0 is the spec's network; copy
# N (the scale benchmark) is the same shape on 10.N.0.0/16 and 100.(64+N).0.0/16 for cluster
# `aws-N`, private zone `privN.aws.ogenki.io`. The caller configures the provider.

variable "copy" {
  description = "Which copy of the network: 0 is the spec's."
  type        = number
  default     = 0
}

locals {
  region  = "eu-west-3"
  azs     = ["eu-west-3a", "eu-west-3b", "eu-west-3c"]
  cluster = "aws-${var.copy}"
  name    = var.copy == 0 ? "vpc-eu-west-3-dev" : "vpc-eu-west-3-dev-${var.copy}"
  zone    = var.copy == 0 ? "priv.aws.ogenki.io" : "priv${var.copy}.aws.ogenki.io"
  vpc     = "10.${var.copy}"
  pods    = "100.${64 + var.copy}"
  subnets = {
    private = ["${local.vpc}.0.0/20", "${local.vpc}.16.0/20", "${local.vpc}.32.0/20"]
    public  = ["${local.vpc}.48.0/24", "${local.vpc}.49.0/24", "${local.vpc}.50.0/24"]
    intra   = ["${local.vpc}.52.0/24", "${local.vpc}.53.0/24", "${local.vpc}.54.0/24"]
    pods    = ["${local.pods}.0.0/18", "${local.pods}.64.0/18", "${local.pods}.128.0/18"]
  }
}

resource "aws_vpc" "this" {
  cidr_block           = "${local.vpc}.0.0/16"
  enable_dns_hostnames = true
  enable_dns_support   = true
  tags                 = { Name = local.name }
}

resource "aws_vpc_ipv4_cidr_block_association" "this" {
  vpc_id     = aws_vpc.this.id
  cidr_block = "${local.pods}.0.0/16"
}

resource "aws_subnet" "private" {
  count             = 3
  vpc_id            = aws_vpc.this.id
  cidr_block        = local.subnets.private[count.index]
  availability_zone = local.azs[count.index]
  tags = {
    Name                              = "${local.name}-private-${local.azs[count.index]}"
    "kubernetes.io/role/internal-elb" = "1"
    "karpenter.sh/discovery"          = local.cluster
  }
}

resource "aws_subnet" "public" {
  count                   = 3
  vpc_id                  = aws_vpc.this.id
  cidr_block              = local.subnets.public[count.index]
  availability_zone       = local.azs[count.index]
  map_public_ip_on_launch = true
  tags = {
    Name                     = "${local.name}-public-${local.azs[count.index]}"
    "kubernetes.io/role/elb" = "1"
  }
}

resource "aws_subnet" "intra" {
  count             = 3
  vpc_id            = aws_vpc.this.id
  cidr_block        = local.subnets.intra[count.index]
  availability_zone = local.azs[count.index]
  tags              = { Name = "${local.name}-intra-${local.azs[count.index]}" }
}

resource "aws_subnet" "pods" {
  count             = 3
  vpc_id            = aws_vpc_ipv4_cidr_block_association.this.vpc_id
  cidr_block        = local.subnets.pods[count.index]
  availability_zone = local.azs[count.index]
  tags = {
    Name                   = "${local.name}-pods-${local.azs[count.index]}"
    "cilium.io/pod-subnet" = "true"
  }
}

resource "aws_internet_gateway" "this" {
  vpc_id = aws_vpc.this.id
  tags   = { Name = local.name }
}

resource "aws_eip" "nat" {
  domain = "vpc"
  tags   = { Name = "${local.name}-${local.azs[0]}" }
}

resource "aws_nat_gateway" "this" {
  allocation_id = aws_eip.nat.id
  subnet_id     = aws_subnet.public[0].id
  tags          = { Name = "${local.name}-${local.azs[0]}" }
  depends_on    = [aws_internet_gateway.this]
}

resource "aws_route_table" "public" {
  vpc_id = aws_vpc.this.id
  tags   = { Name = "${local.name}-public" }
}

resource "aws_route_table" "private" {
  vpc_id = aws_vpc.this.id
  tags   = { Name = "${local.name}-private" }
}

resource "aws_route_table" "intra" {
  vpc_id = aws_vpc.this.id
  tags   = { Name = "${local.name}-intra" }
}

resource "aws_route" "public_internet_gateway" {
  route_table_id         = aws_route_table.public.id
  destination_cidr_block = "0.0.0.0/0"
  gateway_id             = aws_internet_gateway.this.id
}

resource "aws_route" "private_nat_gateway" {
  route_table_id         = aws_route_table.private.id
  destination_cidr_block = "0.0.0.0/0"
  nat_gateway_id         = aws_nat_gateway.this.id
}

resource "aws_route_table_association" "private" {
  count          = 3
  subnet_id      = aws_subnet.private[count.index].id
  route_table_id = aws_route_table.private.id
}

resource "aws_route_table_association" "public" {
  count          = 3
  subnet_id      = aws_subnet.public[count.index].id
  route_table_id = aws_route_table.public.id
}

resource "aws_route_table_association" "intra" {
  count          = 3
  subnet_id      = aws_subnet.intra[count.index].id
  route_table_id = aws_route_table.intra.id
}

# The pod subnets use the first private route table, as the reference's.
resource "aws_route_table_association" "pods" {
  count          = 3
  subnet_id      = aws_subnet.pods[count.index].id
  route_table_id = aws_route_table.private.id
}

resource "aws_vpc_endpoint" "s3" {
  vpc_id            = aws_vpc.this.id
  service_name      = "com.amazonaws.${local.region}.s3"
  vpc_endpoint_type = "Gateway"
  route_table_ids   = [aws_route_table.private.id, aws_route_table.intra.id]
  tags              = { Name = "${local.name}-s3" }
}

resource "aws_cloudwatch_log_group" "flow_log" {
  name              = "/aws/vpc/${local.cluster}/flow-logs"
  retention_in_days = 7
}

resource "aws_iam_role" "vpc_flow_log_cloudwatch" {
  name = "${local.cluster}-vpc-flow-logs"
  assume_role_policy = jsonencode({
    Version = "2012-10-17"
    Statement = [{
      Effect    = "Allow"
      Principal = { Service = "vpc-flow-logs.amazonaws.com" }
      Action    = "sts:AssumeRole"
    }]
  })
}

resource "aws_iam_role_policy" "vpc_flow_log_cloudwatch" {
  name = "flow-logs-to-cloudwatch"
  role = aws_iam_role.vpc_flow_log_cloudwatch.name
  policy = jsonencode({
    Version = "2012-10-17"
    Statement = [{
      Effect   = "Allow"
      Action   = ["logs:CreateLogStream", "logs:PutLogEvents", "logs:DescribeLogGroups", "logs:DescribeLogStreams"]
      Resource = "*"
    }]
  })
}

resource "aws_flow_log" "this" {
  vpc_id               = aws_vpc.this.id
  traffic_type         = "ALL"
  log_destination_type = "cloud-watch-logs"
  log_destination      = aws_cloudwatch_log_group.flow_log.arn
  iam_role_arn         = aws_iam_role.vpc_flow_log_cloudwatch.arn
}

resource "aws_route53_zone" "private" {
  name    = local.zone
  comment = "${local.cluster} private zone"
  vpc {
    vpc_id     = aws_vpc.this.id
    vpc_region = local.region
  }
}

resource "aws_security_group" "private_access" {
  name        = "${local.cluster}-private-access"
  description = "Private access to the VPC from the operator network"
  vpc_id      = aws_vpc.this.id
}

resource "aws_vpc_security_group_ingress_rule" "private_access" {
  security_group_id = aws_security_group.private_access.id
  ip_protocol       = "-1"
  cidr_ipv4         = "100.100.0.0/16"
  description       = "operator network"
  tags              = { Name = "operator-network" }
}

resource "aws_vpc_security_group_egress_rule" "private_access_all" {
  security_group_id = aws_security_group.private_access.id
  ip_protocol       = "-1"
  cidr_ipv4         = "0.0.0.0/0"
  description       = "all egress"
}

output "vpc_id" {
  value = aws_vpc.this.id
}

# What the EKS stage (bench/vs-terraform/eks) builds on.
output "private_subnet_ids" {
  value = aws_subnet.private[*].id
}

output "intra_subnet_ids" {
  value = aws_subnet.intra[*].id
}

output "secondary_cidr" {
  value = aws_vpc_ipv4_cidr_block_association.this.cidr_block
}

output "private_access_security_group_id" {
  value = aws_security_group.private_access.id
}
