//! The `lookup` template function's backend.

use serde_json::Value as Json;

/// Answers Helm's `lookup apiVersion kind namespace name`.
///
/// `helm template` (offline) answers every lookup with an empty map;
/// an installer can answer from the live cluster. Implementations are
/// shared with the rendering thread, hence `Sync`.
pub trait Lookup: Sync {
    /// Returns the object (or a `List` object when `name` is empty), or
    /// `None` when it does not exist.
    fn lookup(
        &self,
        api_version: &str,
        kind: &str,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Json>, String>;
}

/// The offline answer: nothing exists.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoLookup;

impl Lookup for NoLookup {
    fn lookup(&self, _: &str, _: &str, _: &str, _: &str) -> Result<Option<Json>, String> {
        Ok(None)
    }
}
