//! Compute Engine kinds: one file per kind. Networks, subnetworks, routers and firewalls carry
//! no labels: they are found by name (names are unique in a project or region), so one the
//! spec names and state does not record is taken over, as `import` would.

pub(crate) mod firewall;
pub(crate) mod network;
pub(crate) mod router;
pub(crate) mod router_nat;
pub(crate) mod subnetwork;

use engine::{KindResult, ReadRequest};
use std::collections::HashMap;

/// The last segment of a resource URL (`.../global/networks/vpc` → `vpc`).
pub(crate) fn last_segment(url: &str) -> &str {
    url.rsplit('/').next().unwrap_or(url)
}

/// Answers each request from `by_name` (one list call's results): by its recorded id (the
/// name), else by the name the spec gives it.
pub(crate) fn by_name<A: Clone, T>(
    requests: &[ReadRequest<A>],
    name_of: impl Fn(&A) -> String,
    by_name: &HashMap<String, T>,
    live: impl Fn(&str, &T) -> KindResult<engine::Live<A>>,
) -> KindResult<Vec<Option<engine::Live<A>>>> {
    requests
        .iter()
        .map(|r| {
            let name = r.id.clone().or_else(|| r.desired.as_ref().map(&name_of));
            match name.as_deref().and_then(|n| by_name.get(n).map(|found| (n, found))) {
                Some((n, found)) => live(n, found).map(Some),
                None => Ok(None),
            }
        })
        .collect()
}
