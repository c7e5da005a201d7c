//! Integration tests of engine-helm against the reference `helm` binary
//! and a local OCI registry.

mod common;
mod errors;
mod funcs;
mod golden;
mod model;
mod oci;
