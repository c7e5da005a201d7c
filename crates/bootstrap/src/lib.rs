//! Everything the engine configures inside OpenBao (and, later, inside new clusters).
//!
//! - [`openbao`]: resource kinds on OpenBao's HTTP API (init, mounts, policies, auth methods,
//!   PKI issuer and roles, JWT auth) and the expansion of the `[openbao]` spec section.
//! - [`pki`]: the offline root CA, per-cloud intermediates and OpenBao's TLS leaf.
//! - [`Secret`]: the wrapper every token, key and password travels in; it never prints.

pub mod kube;
pub mod openbao;
pub mod pki;
pub mod platform;
mod provider;

pub use engine::Secret;
pub use openbao::random_secret;
pub use provider::{BootstrapProvider, BootstrapProviderBuilder, OpenBaoSetup, SpecConnector};
