//! The spec: a TOML document, validated before any API call, with errors that point at
//! file:line:column and the field.
//!
//! The engine owns the document, the `[globals]` section and `[state]` (where state is kept); each provider owns its own sections
//! (`[network]`, ...) and deserializes them with [`SpecSource::section`], keeping spans so its
//! validation errors point at the offending value.

pub mod cidr;
mod error;
mod globals;
pub mod names;
mod other_spec;
mod path;
mod source;
mod state;

pub use error::{SpecError, SpecErrors};
pub use globals::{FluxGlobals, Globals};
pub use other_spec::{OtherSpecValue, TextOrOtherSpec};
pub use path::FieldPath;
pub use source::SpecSource;
pub use state::{
    BackendChoice, EncryptionMethod, EncryptionSection, PASSPHRASE_ENV, StateLocation, StateSection,
};
