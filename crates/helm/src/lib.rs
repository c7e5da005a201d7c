//! Native Helm chart rendering: Go text/template + Sprig + Helm
//! functions, chart loading (directory, `.tgz`, OCI), values merging and
//! manifest output identical to `helm template`.
//!
//! ```no_run
//! use engine_helm::{Chart, NoLookup, RenderOptions, render, values};
//!
//! # fn main() -> Result<(), engine_helm::HelmError> {
//! let chart = Chart::load("cilium-1.20.0.tgz")?;
//! let file = values::parse_values_yaml("kubeProxyReplacement: true\n")?;
//! let user = values::user_values(&[file], &["ipam.mode=eni".to_string()])?;
//! let rendered = render(&chart, &RenderOptions::new("cilium", "kube-system", user, &NoLookup))?;
//! print!("{}", rendered.manifest_text()); // what `helm template` prints
//! for obj in rendered.objects()? {
//!     println!("{} {}", obj.source, obj.object["kind"]);
//! }
//! # Ok(())
//! # }
//! ```
//!
//! Charts from a registry: [`oci::pull`] (async) with [`PullOptions`].

pub mod capabilities;
pub mod chart;
pub mod error;
pub mod funcs;
pub mod limits;
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
