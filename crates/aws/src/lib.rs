//! AWS resource kinds of the engine, on the official `aws-sdk-*` crates.
//!
//! [`AwsProvider`] owns the `aws` lane: it validates and expands the spec's AWS sections
//! (`[network]`, `[openbao.server]` and `[eks]`) into resources, and supplies the kinds that manage them. Every client
//! honours the usual credential chain and `AWS_ENDPOINT_URL`, so the same code runs against AWS
//! or a local emulator; every call is counted.

mod calls;
mod clients;
pub mod eks;
pub mod eks_token;
mod error;
pub mod network;
pub mod openbao;
mod provider;
pub mod secrets_manager;
mod settle;
pub mod snapshots;
mod tags;

pub use clients::AwsClients;
pub use provider::{AwsProvider, sdk_config_from_env};
