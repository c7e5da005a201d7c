//! The GCP lane's resource kinds on Google's official Rust crates: Compute Engine networking
//! and Cloud DNS, expanded from the spec's `[gcp]` and `[network]` sections.

mod clients;
mod compute;
mod container;
mod dns;
mod error;
mod kinds;
pub mod labels;
mod operation;
mod provider;
pub mod stages;
mod token;

pub use clients::{ClientError, GcpClients, GcpConfig};
pub use provider::GcpProvider;
pub use token::access_token;
