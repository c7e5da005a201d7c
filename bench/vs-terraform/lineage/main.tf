# OpenBao's lineage as the reference's `aws/openbao/lineage` stack keeps it (the seal key with its
# replica, the snapshot key, their aliases, the snapshot bucket and its settings), with the
# reference's names, as an OpenTofu/Terraform configuration.
#
# Used to prove that the engine takes over what OpenTofu built (`engine import --from-tofu`,
# tests/e2e/takeover.rs): these are the resources whose loss loses OpenBao's data, so the engine
# must adopt them, never make new ones. Values are specs/aws.toml's; tags differ (OpenTofu does
# not set the engine's ownership tags).

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

locals {
  tags     = { project = "cloud-native-ref", environment = "dev", owner = "platform" }
  bucket   = "eu-west-3-ogenki-openbao-snapshot"
  emulated = var.endpoint != ""
}

provider "aws" {
  region                      = "eu-west-3"
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
      kms = var.endpoint
      s3  = var.endpoint
      sts = var.endpoint
    }
  }
}

# No default tags here: moto's ReplicateKey drops the tags it is given, and the provider would
# wait ten minutes for them to appear on the replica.
provider "aws" {
  alias                       = "replica"
  region                      = "eu-west-1"
  skip_credentials_validation = local.emulated
  skip_requesting_account_id  = local.emulated
  skip_metadata_api_check     = local.emulated
  dynamic "endpoints" {
    for_each = local.emulated ? [1] : []
    content {
      kms = var.endpoint
      sts = var.endpoint
    }
  }
}

resource "aws_kms_key" "openbao" {
  description             = "OpenBao auto-unseal key"
  multi_region            = true
  enable_key_rotation     = true
  deletion_window_in_days = 30
}

resource "aws_kms_alias" "openbao" {
  name          = "alias/openbao-seal"
  target_key_id = aws_kms_key.openbao.key_id
}

resource "aws_kms_replica_key" "openbao" {
  provider                = aws.replica
  description             = "OpenBao auto-unseal key (replica)"
  primary_key_arn         = aws_kms_key.openbao.arn
  deletion_window_in_days = 30
}

resource "aws_kms_key" "snapshot" {
  description         = "OpenBao snapshots"
  enable_key_rotation = true
}

resource "aws_kms_alias" "snapshot" {
  name          = "alias/xplane-openbao-snapshot"
  target_key_id = aws_kms_key.snapshot.key_id
}

resource "aws_s3_bucket" "snapshot" {
  bucket = local.bucket
}

resource "aws_s3_bucket_public_access_block" "snapshot" {
  bucket                  = aws_s3_bucket.snapshot.id
  block_public_acls       = true
  block_public_policy     = true
  ignore_public_acls      = true
  restrict_public_buckets = true
}

resource "aws_s3_bucket_server_side_encryption_configuration" "snapshot" {
  bucket = aws_s3_bucket.snapshot.id
  rule {
    apply_server_side_encryption_by_default {
      sse_algorithm     = "aws:kms"
      kms_master_key_id = aws_kms_key.snapshot.arn
    }
    bucket_key_enabled = true
  }
}

resource "aws_s3_bucket_versioning" "snapshot" {
  bucket = aws_s3_bucket.snapshot.id
  versioning_configuration {
    status = "Enabled"
  }
}

resource "aws_s3_bucket_lifecycle_configuration" "snapshot" {
  bucket = aws_s3_bucket.snapshot.id
  rule {
    id     = "snapshots"
    status = "Enabled"
    filter {
      prefix = "snapshots/"
    }
    expiration {
      days = 120
    }
    noncurrent_version_expiration {
      noncurrent_days = 30
    }
  }
}
