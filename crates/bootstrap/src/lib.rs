//! What the engine puts inside a new cluster, cloud-neutral: what differs per cloud comes in as
//! a [`ClusterProfile`] from the lane's wiring.
//!
//! - [`kube`]: the Kubernetes kinds (`k8s_object`, `k8s_manifests`, `helm_release`,
//!   `flux_suspend`) and how they reach a cluster.
//! - [`platform`]: the `[bootstrap]` section and its expansion in the platform's order.
//! - [`BootstrapProvider`]: the section as resources of a lane; [`kubeconfig_connector`], the
//!   connection the spec names, decided before the provider is built.

pub mod kube;
pub mod platform;
mod provider;

pub use platform::{ClusterOutputs, ClusterProfile};
pub use provider::{BootstrapProvider, BootstrapProviderBuilder, kubeconfig_connector};
