//! Native Helm chart rendering: Go text/template + Sprig + Helm
//! functions, chart loading (directory, `.tgz`, OCI), values merging and
//! manifest output identical to `helm template`.

pub mod capabilities;
pub mod chart;
pub mod error;
pub mod funcs;
pub mod lookup;
pub mod objects;
pub mod oci;
pub mod render;
pub mod schema;
pub mod semver;
pub mod template;
pub mod value;
pub mod values;
pub mod yaml;

pub use capabilities::Capabilities;
pub use chart::Chart;
pub use error::HelmError;
pub use lookup::{Lookup, NoLookup};
pub use oci::{Credentials, PullOptions};
pub use render::{Hook, Manifest, RenderOptions, Rendered, RenderedObject, render};
pub use value::Value;
