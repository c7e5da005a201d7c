//! The GCP lane's sections and their expansion (pure: no API call): `[gcp]` (the project and
//! zone every stage uses), `[network]` and `[gke]`.

pub mod gke;
pub mod network;
pub mod project;
