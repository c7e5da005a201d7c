//! AWS resource kinds of the engine, on the official `aws-sdk-*` crates.
//!
//! [`AwsProvider`] owns the `aws` lane: it validates and expands the spec's AWS sections
//! (`[network]`, `[openbao.server]` and `[eks]`, in [`stages`]) into resources, and supplies the
//! kinds that manage them, one folder per AWS service (`ec2/`, `iam/`, `kms/`, ...), one file
//! per kind. Every client honours the usual credential chain and `AWS_ENDPOINT_URL`, so the
//! same code runs against AWS or a local emulator; every call is counted.

mod calls;
mod clients;
mod error;
mod kinds;
mod lookup;
mod lost_answer;
mod provider;
pub mod stages;
mod state_store;
mod tagging;
mod tofu;

mod autoscaling;
mod ec2;
pub mod eks;
mod elbv2;
mod events;
mod iam;
mod kms;
mod logs;
mod route53;
pub mod s3;
mod s3files;
pub mod secretsmanager;
mod sqs;

pub use clients::AwsClients;
pub use provider::{AwsProvider, sdk_config_from_env};
pub use state_store::{KmsDataKeys, S3StateStore};
