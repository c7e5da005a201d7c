# The network stage of specs/aws.toml (`engine plan --target aws.network`: 44 resources) as an
# OpenTofu/Terraform configuration (its resources: ./vpc), with the resource names
# of terraform-aws-modules/vpc where the reference platform uses that module (`aws_vpc.this`,
# `aws_subnet.private[0]`, ...). `copies` > 1 makes the scale benchmark's N networks.
#
# Used side by side with the engine (bench/vs-terraform/run.sh) and to prove that the engine
# takes over what OpenTofu built (`engine import --from-tofu`, tests/e2e/takeover.rs). The values
# are the spec's; only the tags differ (OpenTofu does not set the engine's ownership tags).

terraform {
  required_version = ">= 1.6"
  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = "5.100.0"
    }
  }
}

variable "copies" {
  description = "How many copies of the network (the scale benchmark); 1 is the spec's."
  type        = number
  default     = 1
}

variable "endpoint" {
  description = "Where AWS is reached: an emulator's URL (moto), or empty for AWS itself."
  type        = string
  default     = ""
}

locals {
  region   = "eu-west-3"
  tags     = { project = "cloud-native-ref", environment = "dev", owner = "platform" }
  emulated = var.endpoint != ""
}

provider "aws" {
  region                      = local.region
  skip_credentials_validation = local.emulated
  skip_requesting_account_id  = local.emulated
  skip_metadata_api_check     = local.emulated
  s3_use_path_style           = local.emulated
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
    }
  }
}

module "vpc" {
  source = "./vpc"
  count  = var.copies
  copy   = count.index
}

output "vpc_id" {
  value = module.vpc[0].vpc_id
}
