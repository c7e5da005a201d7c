//! The GCP lane's sections and their expansion (pure: no API call): `[gcp]` (the project and
//! zone every stage uses) and `[network]`.

pub mod network;
pub mod project;
