//! `gcp_dns_policy`: a DNS server policy on networks (inbound forwarding gives each subnetwork
//! a resolver address that machines outside the VPC can query). Those addresses (Compute
//! addresses with purpose `DNS_RESOLVER`, in the spec's region) are read back as
//! `inbound_addresses`: what split DNS from a tailnet sends a private zone's queries to.

use crate::GcpClients;
use crate::compute::{by_name, to_json};
use crate::error::{GcpResult, kind_error};
use engine::prelude::*;
use engine::wait::{Poll, Wait};
use google_cloud_dns_v1::model::{Policy as Body, PolicyNetwork};
use google_cloud_gax::paginator::ItemPaginator;
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

#[derive(Attributes, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct Policy {
    #[attr(replace)]
    pub name: String,
    #[attr(in_place)]
    pub description: String,
    #[attr(in_place)]
    pub enable_inbound_forwarding: bool,
    /// Self links of the networks the policy applies to.
    #[attr(in_place, unordered)]
    pub networks: Vec<String>,
    /// The inbound forwarder's addresses in the spec's region, one per subnetwork of the
    /// policy's networks (none without inbound forwarding).
    #[attr(computed)]
    #[serde(default)]
    pub inbound_addresses: Vec<String>,
}

pub(crate) struct PolicyKind(pub Arc<GcpClients>);

/// How long Cloud DNS may take to give a new forwarding policy its resolver addresses.
const FORWARDER_TIMEOUT: Duration = Duration::from_secs(300);

/// The region's DNS resolver addresses.
pub(crate) struct Resolvers {
    /// Addresses by network (`projects/P/global/networks/N`).
    by_network: HashMap<String, Vec<String>>,
    /// The networks with a subnetwork in the region (each gets a resolver).
    with_subnetworks: HashSet<String>,
}

impl PolicyKind {
    fn attrs(p: &Body) -> Policy {
        Policy {
            name: p.name.clone().unwrap_or_default(),
            description: p.description.clone().unwrap_or_default(),
            enable_inbound_forwarding: p.enable_inbound_forwarding.unwrap_or(false),
            networks: p.networks.iter().filter_map(|n| n.network_url.clone()).collect(),
            inbound_addresses: Vec::new(),
        }
    }

    /// `policy` with its inbound forwarder's addresses among `resolvers`, when it forwards.
    fn with_resolvers(
        mut policy: Live<Policy>,
        resolvers: &HashMap<String, Vec<String>>,
    ) -> Live<Policy> {
        if policy.attributes.enable_inbound_forwarding {
            let networks = &policy.attributes.networks;
            let mut found: Vec<String> = networks
                .iter()
                .flat_map(|n| resolvers.get(compute_path(n)).cloned().unwrap_or_default())
                .collect();
            found.sort();
            policy.attributes.inbound_addresses = found;
        }
        policy
    }

    /// The region's DNS resolver addresses, read once per run (the subnetworks' list shared
    /// with their kind).
    async fn resolvers(&self, ctx: &Context) -> KindResult<Arc<Resolvers>> {
        let key = format!("gcp:{}:{}:dns-resolvers", self.0.project, self.0.region);
        ctx.memo(&key, || async {
            let subnetworks = crate::compute::subnetwork::listed(&self.0, ctx, &self.0.region);
            let subnetworks = subnetworks.await?.values().map(to_json).collect();
            self.resolvers_among(subnetworks).await
        })
        .await
    }

    /// The region's DNS resolver addresses, read now.
    async fn resolvers_now(&self) -> KindResult<Resolvers> {
        let subnetworks = crate::compute::subnetwork::list(&self.0, &self.0.region).await?;
        self.resolvers_among(subnetworks.values().map(to_json).collect()).await
    }

    /// The resolver addresses (one list of the region's addresses) by the network of their
    /// subnetwork, among `subnetworks` (Compute's JSON).
    async fn resolvers_among(&self, subnetworks: Vec<serde_json::Value>) -> KindResult<Resolvers> {
        let network_of: HashMap<String, String> = subnetworks
            .iter()
            .map(|sub| {
                let link = sub["selfLink"].as_str().unwrap_or_default();
                let network = sub["network"].as_str().unwrap_or_default();
                (compute_path(link).to_string(), compute_path(network).to_string())
            })
            .collect();
        let (project, region) = (&self.0.project, &self.0.region);
        self.0.count("compute", "ListAddresses");
        let call = self.0.addresses.list().set_project(project).set_region(region);
        let mut items = call.by_item();
        let mut by_network: HashMap<String, Vec<String>> = HashMap::new();
        while let Some(item) = items.next().await {
            let a = to_json(&item.map_err(|e| kind_error("compute:ListAddresses", &e))?);
            if a["purpose"] != "DNS_RESOLVER" {
                continue;
            }
            let subnetwork = compute_path(a["subnetwork"].as_str().unwrap_or_default());
            if let (Some(network), Some(address)) =
                (network_of.get(subnetwork), a["address"].as_str())
            {
                by_network.entry(network.clone()).or_default().push(address.to_string());
            }
        }
        let with_subnetworks = network_of.into_values().collect();
        Ok(Resolvers { by_network, with_subnetworks })
    }

    /// `name` as it is now, with its resolvers: a forwarding policy waits until each of its
    /// networks with a subnetwork in the region has one (Cloud DNS makes them after the policy).
    async fn fresh(&self, ctx: &Context, name: &str) -> Outcome<Self> {
        let policy = self.get(name).await?;
        if !policy.attributes.enable_inbound_forwarding {
            return Ok(policy);
        }
        let wait = Wait::new(format!("the inbound DNS forwarder of {name}"), FORWARDER_TIMEOUT)
            .every(Duration::from_secs(2), Duration::from_secs(10));
        let resolvers = wait
            .until(ctx, || async {
                let resolvers = self.resolvers_now().await?;
                let missing = policy.attributes.networks.iter().any(|n| {
                    let n = compute_path(n);
                    resolvers.with_subnetworks.contains(n) && !resolvers.by_network.contains_key(n)
                });
                Ok(match missing {
                    true => Poll::Pending("no resolver address yet".into()),
                    false => Poll::Done(resolvers),
                })
            })
            .await?;
        Ok(Self::with_resolvers(policy, &resolvers.by_network))
    }

    fn body(desired: &Policy) -> Body {
        let mut body = Body::new();
        body.description = Some(desired.description.clone());
        body.enable_inbound_forwarding = Some(desired.enable_inbound_forwarding);
        body.networks = desired
            .networks
            .iter()
            .map(|url| {
                let mut n = PolicyNetwork::new();
                n.network_url = Some(url.clone());
                n
            })
            .collect();
        body
    }

    async fn all(&self, ctx: &Context) -> KindResult<Arc<HashMap<String, Body>>> {
        let key = format!("gcp:{}:dns-policies", self.0.project);
        ctx.memo(&key, || async {
            self.0.count("dns", "ListPolicies");
            let mut items = self.0.policies.list().set_project(&self.0.project).by_item();
            Ok::<_, KindError>(collect_by_name!(items, "dns:ListPolicies"))
        })
        .await
    }

    async fn get(&self, name: &str) -> KindResult<Live<Policy>> {
        self.0.count("dns", "GetPolicy");
        let call = self.0.policies.get().set_project(&self.0.project).set_policy(name);
        let p = call.send().await.api("dns:GetPolicy")?;
        Ok(Live::new(name, Self::attrs(&p)))
    }
}

impl TypedKind for PolicyKind {
    type Attrs = Policy;
    const NAME: &'static str = "gcp_dns_policy";

    async fn read(&self, ctx: &Context, requests: &Requests<Self>) -> Found<Self> {
        let all = self.all(ctx).await?;
        let found = by_name(
            requests,
            |d| d.name.clone(),
            &all,
            |name, p| Ok(Live::new(name, Self::attrs(p))),
        )?;
        if !found.iter().flatten().any(|p| p.attributes.enable_inbound_forwarding) {
            return Ok(found);
        }
        let resolvers = self.resolvers(ctx).await?;
        let by_network = &resolvers.by_network;
        Ok(found.into_iter().map(|p| p.map(|p| Self::with_resolvers(p, by_network))).collect())
    }

    async fn create(&self, ctx: &Context, desired: &Self::Attrs) -> Outcome<Self> {
        let mut body = Self::body(desired);
        body.name = Some(desired.name.clone());
        self.0.count("dns", "CreatePolicy");
        let call = self.0.policies.create().set_project(&self.0.project).set_body(body);
        call.send().await.api("dns:CreatePolicy")?;
        self.fresh(ctx, &desired.name).await
    }

    async fn update(&self, ctx: &Context, update: Update<'_, Self>) -> Outcome<Self> {
        let Update { current, desired, .. } = update;
        self.0.count("dns", "PatchPolicy");
        let call = self.0.policies.patch().set_project(&self.0.project).set_policy(&current.id);
        call.set_body(Self::body(desired)).send().await.api("dns:PatchPolicy")?;
        self.fresh(ctx, &current.id).await
    }

    async fn delete(&self, _: &Context, current: &LiveOf<Self>) -> KindResult<()> {
        self.0.count("dns", "DeletePolicy");
        let call = self.0.policies.delete().set_project(&self.0.project).set_policy(&current.id);
        call.send().await.or_absent("dns:DeletePolicy")?;
        Ok(())
    }
}

/// A Compute URL's path from `projects/` on, whichever host names it.
fn compute_path(url: &str) -> &str {
    url.split_once("/compute/v1/").map_or(url, |(_, path)| path)
}
