//! Taking over what OpenTofu (or Terraform) built: its state files read, each resource
//! instance matched to the spec's resource it is, and recorded in the engine's state by its
//! cloud id, so the next plan updates it in place instead of creating it again.
//!
//! Reading: state format version 4 (OpenTofu 1.x, Terraform 0.12+), managed resources only.
//! Each provider says what an instance of a resource type is in its kinds
//! ([`Provider::tofu_resources`]): the kind, the id as the kind records it, the attributes under the
//! kind's field names.
//!
//! Matching needs no table of names: a spec resource and an instance of its kind match when
//! they agree on every field the kind cannot change in place (`FieldUpdate::Replace`: a
//! subnet's CIDR and zone, a role's name, a route's table and destination), references to other
//! resources resolved through the matches already made. A reference to a resource not yet
//! matched agrees with anything, and the instance it names (through any field) becomes that
//! resource's match: the three route tables of one VPC differ only by the subnets associated
//! with them. Matching
//! repeats until nothing more matches; a resource or instance matched ambiguously stays
//! unmatched and is reported.

use crate::graph::ResourceGraph;
use crate::{Address, Kind, Provider};
use serde::Deserialize;
use serde_json::Value as Json;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// A resource instance of an OpenTofu state, as one of the engine's kinds sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct TofuResource {
    /// The engine's kind, e.g. `aws_vpc_cidr_association`.
    pub kind: String,
    /// The id as the kind records it.
    pub id: String,
    /// Attributes under the kind's field names (those it can tell).
    pub attributes: serde_json::Map<String, Json>,
    /// Where it is in the OpenTofu state, e.g. `module.vpc.aws_subnet.private[0]`.
    pub source: String,
}

/// Errors reading an OpenTofu state.
#[derive(Debug, thiserror::Error)]
pub enum TofuStateError {
    #[error("cannot read OpenTofu state {file}: {source}")]
    Read { file: String, source: std::io::Error },
    #[error("OpenTofu state {file} is not valid: {source}")]
    Parse { file: String, source: serde_json::Error },
    #[error("OpenTofu state {file} has format version {found}; version 4 is read")]
    Version { file: String, found: u64 },
}

#[derive(Deserialize)]
struct StateFile {
    version: u64,
    #[serde(default)]
    resources: Vec<StateResource>,
}

#[derive(Deserialize)]
struct StateResource {
    #[serde(default)]
    module: Option<String>,
    mode: String,
    #[serde(rename = "type")]
    resource_type: String,
    name: String,
    #[serde(default)]
    instances: Vec<StateInstance>,
}

#[derive(Deserialize)]
struct StateInstance {
    #[serde(default)]
    index_key: Option<Json>,
    #[serde(default)]
    attributes: Json,
}

/// One managed resource instance of an OpenTofu state.
#[derive(Debug, Clone, PartialEq)]
pub struct TofuInstance {
    /// Its address in the OpenTofu state, e.g. `module.vpc.aws_subnet.private[0]`.
    pub address: String,
    pub resource_type: String,
    pub attributes: Json,
}

/// The managed resource instances of the OpenTofu state `text` (read from `file`).
pub fn read_tofu_state(file: &str, text: &str) -> Result<Vec<TofuInstance>, TofuStateError> {
    let state: StateFile = serde_json::from_str(text)
        .map_err(|source| TofuStateError::Parse { file: file.into(), source })?;
    if state.version != 4 {
        return Err(TofuStateError::Version { file: file.into(), found: state.version });
    }
    let mut out = Vec::new();
    for r in state.resources.into_iter().filter(|r| r.mode == "managed") {
        for i in r.instances {
            let module = r.module.as_deref().map(|m| format!("{m}.")).unwrap_or_default();
            let index = match &i.index_key {
                None => String::new(),
                Some(Json::String(key)) => format!("[{key:?}]"),
                Some(key) => format!("[{key}]"),
            };
            out.push(TofuInstance {
                address: format!("{module}{}.{}{index}", r.resource_type, r.name),
                resource_type: r.resource_type.clone(),
                attributes: i.attributes,
            });
        }
    }
    Ok(out)
}

/// What matching found.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Matching {
    /// Spec resources and the instance each one is.
    pub matched: BTreeMap<Address, TofuResource>,
    /// Instances of kinds the engine has that match no spec resource (or several).
    pub unmatched: Vec<TofuResource>,
    /// Instances of resource types no provider of the lane knows.
    pub unknown: Vec<TofuInstance>,
}

/// The instances of `instances` as the lane's kinds see them, matched to the spec's resources
/// of `graph` (those in `scope` and not in `recorded`, the addresses the engine's state has).
pub(crate) fn match_instances(
    instances: &[TofuInstance],
    providers: &[Arc<dyn Provider>],
    kinds: &HashMap<String, Arc<dyn Kind>>,
    graph: &ResourceGraph,
    scope: &[Address],
) -> Matching {
    let mut matching = Matching::default();
    let mut pool: Vec<TofuResource> = Vec::new();
    for instance in instances {
        let id = instance.attributes.get("id").and_then(Json::as_str).unwrap_or_default();
        let seen = providers
            .iter()
            .find_map(|p| p.tofu_resources(&instance.resource_type, id, &instance.attributes));
        match seen {
            Some(resources) => pool.extend(resources.into_iter().map(|mut r| {
                r.source = instance.address.clone();
                r
            })),
            None => matching.unknown.push(instance.clone()),
        }
    }
    let mut taken = vec![false; pool.len()];
    let mut open: Vec<&Address> = scope.iter().collect();
    loop {
        let mut progress = false;
        let mut still_open = Vec::new();
        for address in open {
            let Some(spec) = graph.get(address) else { continue };
            let Some(kind) = kinds.get(&spec.kind) else { continue };
            let agrees = |c: &TofuResource| {
                c.kind == spec.kind
                    && agreement(kind.as_ref(), spec, c, &matching.matched).is_some()
            };
            let candidates: Vec<usize> =
                (0..pool.len()).filter(|&i| !taken[i] && agrees(&pool[i])).collect();
            // Unique both ways: one instance for this resource, and no other open resource of
            // the kind that this instance would fit as well.
            let [only] = candidates[..] else {
                still_open.push(address);
                continue;
            };
            let rivals = scope.iter().filter(|other| {
                *other != address
                    && !matching.matched.contains_key(*other)
                    && graph.get(other).is_some_and(|o| {
                        o.kind == spec.kind
                            && agreement(kind.as_ref(), o, &pool[only], &matching.matched).is_some()
                    })
            });
            if rivals.count() > 0 {
                still_open.push(address);
                continue;
            }
            let bindings =
                agreement(kind.as_ref(), spec, &pool[only], &matching.matched).unwrap_or_default();
            taken[only] = true;
            matching.matched.insert(address.clone(), pool[only].clone());
            progress = true;
            // References this match resolved: the instances they name are those resources.
            for (target, id) in bindings {
                if matching.matched.contains_key(&target) {
                    continue;
                }
                let Some(target_kind) = graph.get(&target).map(|t| t.kind.clone()) else {
                    continue;
                };
                if let Some(i) = (0..pool.len())
                    .find(|&i| !taken[i] && pool[i].kind == target_kind && pool[i].id == id)
                {
                    taken[i] = true;
                    matching.matched.insert(target, pool[i].clone());
                }
            }
        }
        open = still_open.into_iter().filter(|a| !matching.matched.contains_key(*a)).collect();
        if !progress || open.is_empty() {
            break;
        }
    }
    matching.unmatched = pool.into_iter().zip(taken).filter(|(_, t)| !t).map(|(r, _)| r).collect();
    matching
}

/// Whether `candidate` agrees with `spec` on every field `kind` cannot change in place; when
/// it does, the references to resources not matched yet that the candidate resolves, through
/// any field the kind diffs (target address, the id the candidate names).
fn agreement(
    kind: &dyn Kind,
    spec: &crate::ResourceSpec,
    candidate: &TofuResource,
    matched: &BTreeMap<Address, TofuResource>,
) -> Option<Vec<(Address, String)>> {
    let mut bindings = Vec::new();
    for field in kind.fields().iter().filter(|f| f.is_diffed()) {
        let Some(desired) = spec.attributes.get(field.name) else { continue };
        let theirs = match candidate.attributes.get(field.name) {
            None | Some(Json::Null) => continue,
            Some(v) => v,
        };
        if let crate::Value::Ref(r) = desired
            && !matched.contains_key(&r.address)
        {
            if r.attribute == "id"
                && let Json::String(id) = theirs
            {
                bindings.push((r.address.clone(), id.clone()));
            }
            continue;
        }
        if field.update != crate::FieldUpdate::Replace {
            continue;
        }
        let lookup = |r: &crate::Reference| {
            let m = matched.get(&r.address)?;
            if r.attribute == "id" {
                return Some(Json::String(m.id.clone()));
            }
            m.attributes.get(&r.attribute).cloned()
        };
        // A value that refers to what is not matched yet cannot disagree.
        let Some(ours) = desired.resolve(&lookup) else { continue };
        if field.canonical(&ours) != field.canonical(theirs) {
            return None;
        }
    }
    Some(bindings)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn managed_instances_are_read_with_their_addresses() {
        let text = json!({
            "version": 4, "terraform_version": "1.11.4", "serial": 3, "lineage": "l",
            "resources": [
                {"module": "module.vpc", "mode": "managed", "type": "aws_subnet", "name": "private",
                 "instances": [{"index_key": 0, "attributes": {"id": "subnet-1"}},
                               {"index_key": 1, "attributes": {"id": "subnet-2"}}]},
                {"mode": "managed", "type": "aws_vpc_endpoint", "name": "this",
                 "instances": [{"index_key": "s3", "attributes": {"id": "vpce-1"}}]},
                {"mode": "data", "type": "aws_availability_zones", "name": "all",
                 "instances": [{"attributes": {"id": "eu-west-3"}}]}
            ]
        })
        .to_string();
        let read = read_tofu_state("net.tfstate", &text).unwrap();
        let addresses: Vec<_> = read.iter().map(|i| i.address.as_str()).collect();
        assert_eq!(
            addresses,
            [
                "module.vpc.aws_subnet.private[0]",
                "module.vpc.aws_subnet.private[1]",
                "aws_vpc_endpoint.this[\"s3\"]"
            ]
        );
        assert_eq!(read[1].attributes["id"], "subnet-2");
    }

    #[test]
    fn other_format_versions_and_broken_files_are_errors_naming_the_file() {
        let err = read_tofu_state("old.tfstate", r#"{"version": 3, "modules": []}"#).unwrap_err();
        assert!(
            err.to_string().contains("old.tfstate") && err.to_string().contains("version 3"),
            "{err}"
        );
        let err = read_tofu_state("bad.tfstate", "{").unwrap_err();
        assert!(err.to_string().contains("bad.tfstate"), "{err}");
    }

    /// A provider that reads the OpenTofu type `fake_thing` as the fake cloud's `fake_item`.
    struct Things;

    impl Provider for Things {
        fn lane(&self) -> &'static str {
            "aws"
        }
        fn sections(&self) -> &'static [&'static str] {
            &[]
        }
        fn expand(
            &self,
            _: &crate::spec::SpecSource,
        ) -> Result<Vec<crate::ResourceSpec>, crate::spec::SpecErrors> {
            Ok(vec![])
        }
        fn kinds(&self) -> Vec<Arc<dyn Kind>> {
            vec![]
        }
        fn api_calls(&self) -> crate::ApiCalls {
            crate::ApiCalls::default()
        }
        fn tofu_resources(&self, t: &str, id: &str, a: &Json) -> Option<Vec<TofuResource>> {
            (t == "fake_thing").then(|| {
                let attributes = a.as_object().cloned().unwrap_or_default();
                vec![TofuResource {
                    kind: "fake_item".into(),
                    id: id.into(),
                    attributes,
                    source: String::new(),
                }]
            })
        }
    }

    fn instance(resource_type: &str, name: &str, attributes: Json) -> TofuInstance {
        TofuInstance {
            address: format!("{resource_type}.{name}"),
            resource_type: resource_type.into(),
            attributes,
        }
    }

    fn matching(items: Vec<crate::ResourceSpec>, instances: &[TofuInstance]) -> Matching {
        use crate::testing::{FAKE_ITEM, FakeCloud, FakeItems};
        let graph = ResourceGraph::build(items).unwrap();
        let kind: Arc<dyn Kind> = crate::Typed::arc(FakeItems(Arc::new(FakeCloud::default())));
        let kinds = HashMap::from([(FAKE_ITEM.to_string(), kind)]);
        let scope: Vec<Address> = graph.resources().map(|r| r.address.clone()).collect();
        let providers: Vec<Arc<dyn Provider>> = vec![Arc::new(Things)];
        match_instances(instances, &providers, &kinds, &graph, &scope)
    }

    fn item(name: &str, parent: Option<&str>) -> crate::ResourceSpec {
        let address = crate::testing::item_address(name);
        let r = crate::ResourceSpec::new(address, crate::testing::FAKE_ITEM).attr("name", name);
        match parent {
            Some(p) => {
                r.attr("parent", crate::Value::reference(&crate::testing::item_address(p), "id"))
            }
            None => r,
        }
    }

    #[test]
    fn instances_match_by_replace_only_fields_and_references_through_earlier_matches() {
        let found = matching(
            vec![item("a", None), item("b", Some("a"))],
            &[
                instance("fake_thing", "b", json!({"id": "i-2", "name": "b", "parent": "i-1"})),
                instance("fake_thing", "a", json!({"id": "i-1", "name": "a", "size": 3})),
                instance("fake_thing", "stray", json!({"id": "i-3", "name": "c"})),
                instance("other_thing", "x", json!({"id": "x-1"})),
            ],
        );
        let ids: Vec<(String, &str)> =
            found.matched.iter().map(|(a, r)| (a.to_string(), r.id.as_str())).collect();
        assert_eq!(ids, [("fake.item.a".to_string(), "i-1"), ("fake.item.b".to_string(), "i-2")]);
        assert_eq!(found.matched[&crate::testing::item_address("b")].source, "fake_thing.b");
        assert_eq!(found.unmatched.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(), ["i-3"]);
        assert_eq!(
            found.unknown.iter().map(|i| i.address.as_str()).collect::<Vec<_>>(),
            ["other_thing.x"]
        );
    }

    #[test]
    fn a_parent_that_disagrees_or_two_equal_candidates_match_nothing() {
        let found = matching(
            vec![item("a", None), item("b", Some("a"))],
            &[
                instance("fake_thing", "a", json!({"id": "i-1", "name": "a"})),
                instance("fake_thing", "b", json!({"id": "i-2", "name": "b", "parent": "i-9"})),
            ],
        );
        assert_eq!(found.matched.len(), 1, "b names another parent: {found:?}");
        let found = matching(
            vec![item("a", None)],
            &[
                instance("fake_thing", "one", json!({"id": "i-1", "name": "a"})),
                instance("fake_thing", "two", json!({"id": "i-2", "name": "a"})),
            ],
        );
        assert!(found.matched.is_empty(), "ambiguous: {found:?}");
        assert_eq!(found.unmatched.len(), 2);
    }
}
