//! Refresh: read the live state of many resources with few calls.
//!
//! Resources are read in waves: a resource's wave comes after the waves of what it depends on,
//! so sub-resources without tags (routes, associations) can be found through their parents' ids.
//! Inside a wave, each kind gets one batched `read` call, and kinds run concurrently; the
//! one-by-one calls kinds make under it take one of `limit` slots ([`crate::bounded`]).

use crate::diff::{live_lookup, resolve};
use crate::graph::ResourceGraph;
use crate::{Address, Attrs, Context, EngineError, Kind, Live, ReadRequest};
use engine_state::StateDocument;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use tracing::Instrument;

/// Reads the live state of `wanted` (desired and/or recorded resources); `cross` answers
/// references to other specs of the run.
pub(crate) async fn refresh(
    ctx: &Context,
    kinds: &HashMap<String, Arc<dyn Kind>>,
    graph: Option<&ResourceGraph>,
    state: &StateDocument,
    wanted: &BTreeSet<Address>,
    cross: &(dyn Fn(&crate::Reference) -> Option<serde_json::Value> + Sync),
    limit: usize,
) -> Result<HashMap<Address, Live>, EngineError> {
    let slots = Arc::new(tokio::sync::Semaphore::new(limit.max(1)));
    let deps_of = |a: &Address| -> Vec<Address> {
        if let Some(g) = graph
            && g.get(a).is_some()
        {
            return g.dependencies_of(a);
        }
        state
            .get(a.as_str())
            .map(|s| s.dependencies.iter().map(|d| Address::new(d.clone())).collect())
            .unwrap_or_default()
    };
    let kind_of = |a: &Address| -> Option<String> {
        graph
            .and_then(|g| g.get(a))
            .map(|r| r.kind.clone())
            .or_else(|| state.get(a.as_str()).map(|s| s.kind.clone()))
    };

    // Wave of each address: 0 without wanted dependencies, else 1 + the deepest dependency.
    let mut wave: HashMap<Address, usize> = HashMap::new();
    fn wave_of(
        a: &Address,
        wanted: &BTreeSet<Address>,
        deps_of: &dyn Fn(&Address) -> Vec<Address>,
        wave: &mut HashMap<Address, usize>,
        depth: usize,
    ) -> usize {
        if let Some(w) = wave.get(a) {
            return *w;
        }
        if depth > wanted.len() {
            return 0; // a cycle in recorded dependencies; do not recurse forever
        }
        let w = deps_of(a)
            .iter()
            .filter(|d| wanted.contains(*d))
            .map(|d| wave_of(d, wanted, deps_of, wave, depth + 1) + 1)
            .max()
            .unwrap_or(0);
        wave.insert(a.clone(), w);
        w
    }
    let mut waves: BTreeMap<usize, BTreeMap<String, Vec<Address>>> = BTreeMap::new();
    for a in wanted {
        let w = wave_of(a, wanted, &deps_of, &mut wave, 0);
        let Some(kind) = kind_of(a) else { continue };
        waves.entry(w).or_default().entry(kind).or_default().push(a.clone());
    }

    let mut live: HashMap<Address, Live> = HashMap::new();
    for (_, by_kind) in waves {
        let mut reads = Vec::new();
        for (kind_name, addresses) in by_kind {
            let kind = kinds.get(&kind_name).cloned().ok_or_else(|| EngineError::UnknownKind {
                kind: kind_name.clone(),
                address: addresses[0].clone(),
            })?;
            let requests: Vec<ReadRequest> = addresses
                .iter()
                .map(|a| {
                    // What is known of the desired attributes (references resolved from what
                    // is live), and the names of those known only after apply.
                    let desired = graph.and_then(|g| g.get(a)).map(|spec| {
                        let (known, unknown): (Vec<_>, Vec<_>) =
                            resolve(spec, &state.lineage, &|r| match r.spec {
                                Some(_) => cross(r),
                                None => live_lookup(&live, state, r),
                            })
                            .into_iter()
                            .partition(|(_, v)| v.is_some());
                        let known: Attrs =
                            known.into_iter().filter_map(|(k, v)| v.map(|v| (k, v))).collect();
                        (known, unknown.into_iter().map(|(k, _)| k).collect::<Vec<_>>())
                    });
                    ReadRequest {
                        address: a.clone(),
                        id: state
                            .get(a.as_str())
                            .filter(|s| s.kind == kind_name)
                            .map(|s| s.id.clone()),
                        desired: desired.as_ref().map(|(known, _)| known.clone()),
                        unknown: desired.map(|(_, unknown)| unknown).unwrap_or_default(),
                        create_began: state.creating.contains_key(a.as_str()),
                    }
                })
                .collect();
            let ctx = ctx.clone();
            let span = tracing::info_span!("refresh", kind = %kind_name, count = requests.len());
            let slots = slots.clone();
            reads.push(
                async move {
                    let read = crate::read_slots::within(slots, kind.read(&ctx, &requests));
                    let found = read.await.map_err(|source| EngineError::Refresh {
                        kind: kind_name.clone(),
                        source,
                    })?;
                    Ok::<_, EngineError>(
                        requests
                            .into_iter()
                            .zip(found)
                            .filter_map(|(r, l)| l.map(|l| (r.address, l)))
                            .collect::<Vec<_>>(),
                    )
                }
                .instrument(span),
            );
        }
        for result in futures::future::join_all(reads).await {
            live.extend(result?);
        }
    }
    Ok(live)
}
