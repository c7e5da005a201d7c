//! The GCP lane's resource kinds on Google's official Rust crates: Compute Engine networking
//! and Cloud DNS, expanded from the spec's `[gcp]` and `[network]` sections; and state kept in
//! Cloud Storage, sealed with Cloud KMS data keys.

/// Drains a paginated `list` (the `by_item()` stream bound to `items`) into a map by resource
/// name, an error naming `op`. A macro rather than a function: the paginator's trait bounds
/// live in a module the Google crates keep internal.
macro_rules! collect_by_name {
    ($items:ident, $op:expr) => {{
        let mut out = std::collections::HashMap::new();
        while let Some(item) = $items.next().await {
            let item = item.map_err(|e| $crate::error::kind_error($op, &e))?;
            out.insert(item.name.clone().unwrap_or_default(), item);
        }
        out
    }};
}

mod clients;
mod compute;
mod container;
mod dns;
mod error;
mod iam;
mod kinds;
mod kms;
pub mod labels;
mod operation;
mod provider;
mod secret_manager;
pub mod stages;
mod state_store;
mod storage;
mod storagetransfer;
mod token;

pub use clients::{ClientError, GcpClients, GcpConfig};
pub use provider::GcpProvider;
pub use secret_manager::SecretManager;
pub use state_store::{CloudKmsDataKeys, GcsStateStore};
pub use token::access_token;
