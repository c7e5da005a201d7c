//! Compute Engine kinds: one file per kind. Networks, subnetworks, routers and firewalls carry
//! no labels: they are found by name (names are unique in a project or region), so one the
//! spec names and state does not record is taken over, as `import` would. So are OpenBao's
//! internal load balancer (address, health check, backend service, forwarding rule) and its
//! instance group.

/// Waits for a regional Compute operation `$op` of `$what`, polling it through the client
/// `$client` of `$clients` (every regional client reads the region's operations).
macro_rules! finish_regional {
    ($clients:expr, $client:ident, $ctx:expr, $what:expr, $op:expr) => {{
        let clients = &$clients;
        $crate::operation::finish($ctx, $what, $op, |name| async move {
            clients.count("compute", "GetRegionOperation");
            let call = clients.$client.get_operation().set_project(&clients.project);
            let call = call.set_region(&clients.region).set_operation(name);
            call.send().await.api("compute:GetRegionOperation")
        })
        .await
    }};
}

pub(crate) mod address;
pub(crate) mod backend_service;
pub(crate) mod firewall;
pub(crate) mod forwarding_rule;
pub(crate) mod health_check;
pub(crate) mod instance_group;
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

/// Answers each request with `get` of the name its recorded id gives, else the name
/// `name_of` reads in what the spec wants: one read per resource (the kinds whose list would
/// cost more than the few resources a spec names).
pub(crate) async fn read_each<A, F, Fut>(
    requests: &[ReadRequest<A>],
    name_of: impl Fn(&A) -> String,
    get: F,
) -> KindResult<Vec<Option<engine::Live<A>>>>
where
    F: Fn(String) -> Fut,
    Fut: std::future::Future<Output = KindResult<Option<engine::Live<A>>>>,
{
    // Concurrently, each call taking one of the refresh's slots.
    let reads = requests.iter().map(|r| {
        let read = r.id.clone().or_else(|| r.desired.as_ref().map(&name_of)).map(&get);
        async move {
            match read {
                Some(read) => engine::bounded(read).await,
                None => Ok(None),
            }
        }
    });
    futures::future::try_join_all(reads).await
}

/// A Compute model from its REST JSON (the proto JSON mapping Google's clients use).
pub(crate) fn from_json<T: serde::de::DeserializeOwned>(
    what: &str,
    json: serde_json::Value,
) -> KindResult<T> {
    serde_json::from_value(json).map_err(|e| engine::KindError::new(format!("{what}: {e}")))
}

/// A Compute model as its REST JSON.
pub(crate) fn to_json<T: serde::Serialize>(model: &T) -> serde_json::Value {
    serde_json::to_value(model).unwrap_or(serde_json::Value::Null)
}

/// The strings of a JSON array (none when it is not one).
pub(crate) fn strings(json: &serde_json::Value) -> Vec<String> {
    json.as_array()
        .map(|items| items.iter().filter_map(|i| i.as_str().map(str::to_string)).collect())
        .unwrap_or_default()
}
