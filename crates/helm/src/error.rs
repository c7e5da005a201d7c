//! Crate errors.

use crate::template::TemplateError;

/// Everything that can go wrong loading, pulling or rendering a chart.
#[derive(Debug, thiserror::Error)]
pub enum HelmError {
    /// Filesystem error on the given path.
    #[error("{0}")]
    Io(String, #[source] std::io::Error),
    /// Malformed chart.
    #[error("chart: {0}")]
    Chart(String),
    /// Values could not be parsed or merged.
    #[error("values: {0}")]
    Values(String),
    /// The merged values violate values.schema.json.
    #[error(
        "values don't meet the specifications of the schema(s) in the following chart(s):\n{0}"
    )]
    Schema(String),
    /// Template syntax or execution error.
    #[error(transparent)]
    Template(#[from] TemplateError),
    /// A rendered manifest is not valid YAML.
    #[error("YAML parse error on {path}: {message}")]
    Manifest {
        /// Template path.
        path: String,
        /// Parser message.
        message: String,
    },
    /// Chart's kubeVersion constraint not met.
    #[error(
        "chart requires kubeVersion: {required} which is incompatible with Kubernetes {actual}"
    )]
    KubeVersion {
        /// Constraint.
        required: String,
        /// Actual version.
        actual: String,
    },
    /// OCI registry errors.
    #[error("oci: {0}")]
    Oci(String),
}
