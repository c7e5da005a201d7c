//! Errors of the engine library.

use crate::spec::SpecErrors;
use crate::{Address, KindError};

/// Everything that can stop an engine operation before it runs steps.
/// Step failures during apply are reported in [`crate::ApplyReport`] instead.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum EngineError {
    #[error(transparent)]
    #[diagnostic(transparent)]
    Spec(#[from] SpecErrors),
    #[error("cannot read spec file {path}: {source}")]
    SpecFile { path: String, source: std::io::Error },
    #[error(transparent)]
    State(#[from] engine_state::StateError),
    #[error("no provider handles kind `{kind}` (resource {address})")]
    UnknownKind { kind: String, address: Address },
    #[error("{address}: kind `{kind}` has no attribute `{attribute}`")]
    UnknownAttribute { kind: String, address: Address, attribute: String },
    #[error("reading live state of {kind} failed: {source}")]
    Refresh { kind: String, source: KindError },
    #[error(
        "the state changed since this plan was made (serial {planned} -> {current}); plan again"
    )]
    StalePlan { planned: u64, current: u64 },
    #[error("refusing to destroy protected resources without confirmation: {}", addresses.join(", "))]
    Protected { addresses: Vec<String> },
    #[error("engine builder: {0}")]
    Builder(String),
}
