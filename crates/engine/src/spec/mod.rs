//! The spec: a TOML document, validated before any API call, with errors that point at
//! file:line:column and the field.
//!
//! The engine owns the document and the `[globals]` section; each provider owns its own sections
//! (`[network]`, ...) and deserializes them with [`SpecSource::section`], keeping spans so its
//! validation errors point at the offending value.

pub mod cidr;
mod error;
mod globals;
pub mod names;
mod path;
mod source;

pub use error::{SpecError, SpecErrors};
pub use globals::{FluxGlobals, Globals};
pub use path::FieldPath;
pub use source::SpecSource;
