//! The resource graph: nodes are resources, edges go from a dependency to its dependents.

use crate::{Address, ResourceSpec};
use petgraph::algo::{tarjan_scc, toposort};
use petgraph::graph::{DiGraph, NodeIndex};
use petgraph::visit::{Bfs, Reversed};
use std::collections::{BTreeSet, HashMap};
use std::fmt::Write;

/// Output formats of `engine graph`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GraphFormat {
    Dot,
    Mermaid,
}

/// The desired resources and their dependencies, checked for dangling references and cycles.
#[derive(Debug, Clone)]
pub struct ResourceGraph {
    graph: DiGraph<ResourceSpec, ()>,
    index: HashMap<Address, NodeIndex>,
    order: Vec<NodeIndex>,
}

impl ResourceGraph {
    /// Builds the graph; errors name duplicate addresses, dangling references and cycles, each
    /// with the address it is about (where the spec's error points).
    pub fn build(resources: Vec<ResourceSpec>) -> Result<Self, Vec<(Address, String)>> {
        let mut graph = DiGraph::new();
        let mut index = HashMap::new();
        let mut errors = Vec::new();
        for r in resources {
            let address = r.address.clone();
            let node = graph.add_node(r);
            if index.insert(address.clone(), node).is_some() {
                errors.push((address.clone(), format!("two resources have the address {address}")));
            }
        }
        let nodes: Vec<NodeIndex> = graph.node_indices().collect();
        for &node in &nodes {
            let soft = std::mem::take(&mut graph[node].after_if_present);
            let present: Vec<Address> =
                soft.into_iter().filter(|a| index.contains_key(a)).collect();
            graph[node].depends_on.extend(present);
        }
        for node in nodes {
            for dep in graph[node].dependencies() {
                match index.get(&dep) {
                    Some(&from) => {
                        graph.update_edge(from, node, ());
                    }
                    None => errors.push((
                        graph[node].address.clone(),
                        format!(
                            "{} refers to {dep}, which the spec does not define",
                            graph[node].address
                        ),
                    )),
                }
            }
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        let order = match toposort(&graph, None) {
            Ok(order) => order,
            Err(_) => {
                let cycles = tarjan_scc(&graph)
                    .into_iter()
                    .filter(|scc| scc.len() > 1)
                    .map(|scc| {
                        // Walk "depends on" edges inside the component from its smallest address.
                        let members: BTreeSet<NodeIndex> = scc.iter().copied().collect();
                        let start = *members
                            .iter()
                            .min_by_key(|n| graph[**n].address.clone())
                            .expect("non-empty component");
                        let mut names = vec![graph[start].address.to_string()];
                        let mut seen = BTreeSet::from([start]);
                        let mut cur = start;
                        loop {
                            let next = graph
                                .neighbors_directed(cur, petgraph::Direction::Incoming)
                                .filter(|n| members.contains(n))
                                .min_by_key(|n| graph[*n].address.clone());
                            let Some(next) = next else { break };
                            names.push(graph[next].address.to_string());
                            if !seen.insert(next) {
                                break;
                            }
                            cur = next;
                        }
                        let message = format!("dependency cycle: {}", names.join(" -> "));
                        (graph[start].address.clone(), message)
                    })
                    .collect::<Vec<_>>();
                let self_loops = graph
                    .edge_indices()
                    .filter_map(|e| graph.edge_endpoints(e))
                    .filter(|(a, b)| a == b)
                    .map(|(a, _)| {
                        let address = graph[a].address.clone();
                        (address.clone(), format!("{address} depends on itself"))
                    });
                return Err(cycles.into_iter().chain(self_loops).collect());
            }
        };
        Ok(ResourceGraph { graph, index, order })
    }

    /// Resources in dependency order (dependencies first).
    pub fn resources(&self) -> impl Iterator<Item = &ResourceSpec> {
        self.order.iter().map(|n| &self.graph[*n])
    }

    /// Number of resources.
    pub fn len(&self) -> usize {
        self.order.len()
    }

    /// Whether the graph is empty.
    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    /// The resource at `address`.
    pub fn get(&self, address: &Address) -> Option<&ResourceSpec> {
        self.index.get(address).map(|n| &self.graph[*n])
    }

    /// Direct dependencies of `address`.
    pub fn dependencies_of(&self, address: &Address) -> Vec<Address> {
        let Some(&node) = self.index.get(address) else {
            return vec![];
        };
        let mut deps: Vec<Address> = self
            .graph
            .neighbors_directed(node, petgraph::Direction::Incoming)
            .map(|n| self.graph[n].address.clone())
            .collect();
        deps.sort();
        deps
    }

    /// The addresses a run with `--target`/`--exclude` may touch: with targets, the targeted
    /// resources and everything they depend on; excluded resources and their dependents removed.
    pub fn select(&self, targets: &[String], excludes: &[String]) -> BTreeSet<Address> {
        let mut selected: BTreeSet<Address> = if targets.is_empty() {
            self.index.keys().cloned().collect()
        } else {
            let reversed = Reversed(&self.graph);
            let mut set = BTreeSet::new();
            for (address, &node) in &self.index {
                if targets.iter().any(|t| address.matches_prefix(t)) {
                    let mut bfs = Bfs::new(&reversed, node);
                    while let Some(n) = bfs.next(&reversed) {
                        set.insert(self.graph[n].address.clone());
                    }
                }
            }
            set
        };
        for (address, &node) in &self.index {
            if excludes.iter().any(|e| address.matches_prefix(e)) {
                let mut bfs = Bfs::new(&self.graph, node);
                while let Some(n) = bfs.next(&self.graph) {
                    selected.remove(&self.graph[n].address);
                }
            }
        }
        selected
    }

    /// The longest chain of dependencies weighted by `cost` (e.g. expected seconds per resource):
    /// the lower bound of an apply's wall time with unbounded parallelism.
    pub fn critical_path(&self, cost: &dyn Fn(&ResourceSpec) -> f64) -> (f64, Vec<Address>) {
        let mut best: HashMap<NodeIndex, (f64, Option<NodeIndex>)> = HashMap::new();
        for &n in &self.order {
            let (base, prev) = self
                .graph
                .neighbors_directed(n, petgraph::Direction::Incoming)
                .map(|d| (best[&d].0, Some(d)))
                .fold((0.0, None), |acc, x| if x.0 > acc.0 { x } else { acc });
            best.insert(n, (base + cost(&self.graph[n]), prev));
        }
        let Some((&end, &(total, _))) = best.iter().max_by(|a, b| a.1.0.total_cmp(&b.1.0)) else {
            return (0.0, vec![]);
        };
        let mut path = vec![self.graph[end].address.clone()];
        let mut cur = best[&end].1;
        while let Some(n) = cur {
            path.push(self.graph[n].address.clone());
            cur = best[&n].1;
        }
        path.reverse();
        (total, path)
    }

    /// The graph as Graphviz dot or a Mermaid flowchart, nodes grouped by stage.
    pub fn render(&self, format: GraphFormat) -> String {
        let mut out = String::new();
        let id = |n: NodeIndex| format!("n{}", n.index());
        match format {
            GraphFormat::Dot => {
                out.push_str("digraph engine {\n  rankdir = LR;\n  node [shape = box];\n");
                for &n in &self.order {
                    let r = &self.graph[n];
                    let _ = writeln!(
                        out,
                        "  {} [label = \"{}\\n({})\"];",
                        id(n),
                        r.address.as_str().replace('"', "\\\""),
                        r.kind
                    );
                }
                for e in self.graph.edge_indices() {
                    if let Some((a, b)) = self.graph.edge_endpoints(e) {
                        let _ = writeln!(out, "  {} -> {};", id(a), id(b));
                    }
                }
                out.push_str("}\n");
            }
            GraphFormat::Mermaid => {
                out.push_str("flowchart LR\n");
                for &n in &self.order {
                    let r = &self.graph[n];
                    let _ = writeln!(
                        out,
                        "  {}[\"{}<br/>({})\"]",
                        id(n),
                        r.address.as_str().replace('"', "#quot;"),
                        r.kind
                    );
                }
                for e in self.graph.edge_indices() {
                    if let Some((a, b)) = self.graph.edge_endpoints(e) {
                        let _ = writeln!(out, "  {} --> {}", id(a), id(b));
                    }
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Value;

    fn res(addr: &str, deps: &[&str]) -> ResourceSpec {
        let mut r = ResourceSpec::new(Address::new(addr), "test");
        for (i, d) in deps.iter().enumerate() {
            r.attributes.insert(format!("ref{i}"), Value::reference(&Address::new(*d), "id"));
        }
        r
    }

    #[test]
    fn orders_dependencies_first_and_selects_targets_with_their_dependencies() {
        let g = ResourceGraph::build(vec![
            res("aws.network.route.private", &["aws.network.rtb.private", "aws.network.nat.a"]),
            res("aws.network.vpc.main", &[]),
            res("aws.network.rtb.private", &["aws.network.vpc.main"]),
            res("aws.network.nat.a", &["aws.network.vpc.main"]),
            res("aws.eks.cluster", &["aws.network.rtb.private"]),
        ])
        .unwrap();
        let order: Vec<_> = g.resources().map(|r| r.address.to_string()).collect();
        let pos = |a: &str| order.iter().position(|x| x == a).unwrap();
        assert!(pos("aws.network.vpc.main") < pos("aws.network.rtb.private"));
        assert!(pos("aws.network.rtb.private") < pos("aws.network.route.private"));

        let t = g.select(&["aws.eks".into()], &[]);
        let names: Vec<_> = t.iter().map(|a| a.to_string()).collect();
        assert_eq!(names, ["aws.eks.cluster", "aws.network.rtb.private", "aws.network.vpc.main"]);
        let x = g.select(&[], &["aws.network.rtb".into()]);
        assert_eq!(x.len(), 2, "excluding rtb drops it and its dependents: {x:?}");
        assert_eq!(g.dependencies_of(&Address::new("aws.network.route.private")).len(), 2);
    }

    #[test]
    fn orderings_after_absent_resources_are_dropped() {
        let a = Address::new("a");
        let b = res("b", &[]).after_if_present(&a).after_if_present(&Address::new("nowhere"));
        let g = ResourceGraph::build(vec![res("a", &[]), b.clone()]).unwrap();
        assert_eq!(g.dependencies_of(&Address::new("b")).len(), 1);
        let alone = ResourceGraph::build(vec![b]).unwrap();
        assert!(alone.dependencies_of(&Address::new("b")).is_empty());
    }

    #[test]
    fn cycles_and_dangling_references_are_named() {
        let err = ResourceGraph::build(vec![res("a", &["b"]), res("b", &["c"]), res("c", &["a"])])
            .unwrap_err();
        assert_eq!(err, [(Address::new("a"), "dependency cycle: a -> b -> c -> a".to_string())]);
        let err = ResourceGraph::build(vec![res("a", &["missing"])]).unwrap_err();
        assert!(err[0].1.contains("refers to missing"), "{err:?}");
        let err = ResourceGraph::build(vec![res("a", &[]), res("a", &[])]).unwrap_err();
        assert_eq!(err[0].0, Address::new("a"));
        assert!(err[0].1.contains("two resources"), "{err:?}");
    }

    #[test]
    fn critical_path_follows_the_heaviest_chain() {
        let g = ResourceGraph::build(vec![
            res("vpc", &[]),
            res("nat", &["vpc"]),
            res("route", &["nat"]),
            res("subnet", &["vpc"]),
        ])
        .unwrap();
        let (t, path) = g.critical_path(&|r| {
            if r.address.as_str() == "nat" { 90.0 } else { 1.0 }
        });
        assert_eq!(t, 92.0);
        let names: Vec<_> = path.iter().map(|a| a.to_string()).collect();
        assert_eq!(names, ["vpc", "nat", "route"]);
        assert!(g.render(GraphFormat::Dot).contains("->"));
        assert!(g.render(GraphFormat::Mermaid).starts_with("flowchart LR"));
    }
}
