//! Integration tests of engine-helm against the reference `helm` binary
//! and a local OCI registry.

#[path = "helm/common.rs"]
mod common;
#[path = "helm/errors.rs"]
mod errors;
#[path = "helm/funcs.rs"]
mod funcs;
#[path = "helm/golden.rs"]
mod golden;
#[path = "helm/model.rs"]
mod model;
#[path = "helm/oci.rs"]
mod oci;
