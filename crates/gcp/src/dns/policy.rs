//! `gcp_dns_policy`: a DNS server policy on networks (inbound forwarding gives each subnetwork
//! a resolver address that machines outside the VPC can query).

use crate::GcpClients;
use crate::compute::by_name;
use crate::error::GcpResult;
use engine::prelude::*;
use google_cloud_dns_v1::model::{Policy as Body, PolicyNetwork};
use google_cloud_gax::paginator::ItemPaginator;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::Arc;

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
}

pub(crate) struct PolicyKind(pub Arc<GcpClients>);

impl PolicyKind {
    fn attrs(p: &Body) -> Policy {
        Policy {
            name: p.name.clone().unwrap_or_default(),
            description: p.description.clone().unwrap_or_default(),
            enable_inbound_forwarding: p.enable_inbound_forwarding.unwrap_or(false),
            networks: p.networks.iter().filter_map(|n| n.network_url.clone()).collect(),
        }
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
        by_name(requests, |d| d.name.clone(), &all, |name, p| Ok(Live::new(name, Self::attrs(p))))
    }

    async fn create(&self, _: &Context, desired: &Self::Attrs) -> Outcome<Self> {
        let mut body = Self::body(desired);
        body.name = Some(desired.name.clone());
        self.0.count("dns", "CreatePolicy");
        let call = self.0.policies.create().set_project(&self.0.project).set_body(body);
        call.send().await.api("dns:CreatePolicy")?;
        self.get(&desired.name).await
    }

    async fn update(&self, _: &Context, update: Update<'_, Self>) -> Outcome<Self> {
        let Update { current, desired, .. } = update;
        self.0.count("dns", "PatchPolicy");
        let call = self.0.policies.patch().set_project(&self.0.project).set_policy(&current.id);
        call.set_body(Self::body(desired)).send().await.api("dns:PatchPolicy")?;
        self.get(&current.id).await
    }

    async fn delete(&self, _: &Context, current: &LiveOf<Self>) -> KindResult<()> {
        self.0.count("dns", "DeletePolicy");
        let call = self.0.policies.delete().set_project(&self.0.project).set_policy(&current.id);
        call.send().await.or_absent("dns:DeletePolicy")?;
        Ok(())
    }
}
