//! `gcp_compute_forwarding_rule`: the front of an internal passthrough load balancer: an
//! internal address and ports, forwarded to a regional backend service. Every field is
//! replace-only, as GCP has it.

use super::{from_json, read_each, strings, to_json};
use crate::GcpClients;
use crate::error::GcpResult;
use engine::prelude::*;
use google_cloud_compute_v1::model::ForwardingRule as Body;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::sync::Arc;

#[derive(Attributes, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct ForwardingRule {
    #[attr(replace)]
    pub name: String,
    /// `INTERNAL`.
    #[attr(replace)]
    pub load_balancing_scheme: String,
    /// The IP address (a reserved address's).
    #[attr(replace)]
    pub ip_address: String,
    #[attr(replace, unordered)]
    pub ports: Vec<String>,
    /// The backend service's self link.
    #[attr(replace)]
    pub backend_service: String,
    #[attr(replace)]
    pub network: String,
    #[attr(replace)]
    pub subnetwork: String,
    #[attr(computed)]
    pub self_link: Option<String>,
}

pub(crate) struct ForwardingRuleKind(pub Arc<GcpClients>);

impl ForwardingRuleKind {
    async fn get(&self, name: &str) -> KindResult<Option<Live<ForwardingRule>>> {
        self.0.count("compute", "GetForwardingRule");
        let call = self.0.forwarding_rules.get().set_project(&self.0.project);
        let call = call.set_region(&self.0.region).set_forwarding_rule(name);
        let found = call.send().await.or_absent("compute:GetForwardingRule")?;
        Ok(found.map(|f| {
            let j = to_json(&f);
            let text = |k: &str| j[k].as_str().unwrap_or_default().to_string();
            let attrs = ForwardingRule {
                name: name.to_string(),
                load_balancing_scheme: text("loadBalancingScheme"),
                ip_address: text("IPAddress"),
                ports: strings(&j["ports"]),
                backend_service: text("backendService"),
                network: text("network"),
                subnetwork: text("subnetwork"),
                self_link: j["selfLink"].as_str().map(str::to_string),
            };
            Live::new(name, attrs)
        }))
    }
}

impl TypedKind for ForwardingRuleKind {
    type Attrs = ForwardingRule;
    const NAME: &'static str = "gcp_compute_forwarding_rule";

    async fn read(&self, _ctx: &Context, requests: &Requests<Self>) -> Found<Self> {
        read_each(requests, |d| d.name.clone(), |name| async move { self.get(&name).await }).await
    }

    async fn create(&self, ctx: &Context, d: &Self::Attrs) -> Outcome<Self> {
        let what = "compute:InsertForwardingRule";
        let body: Body = from_json(
            what,
            json!({
                "name": d.name,
                "loadBalancingScheme": d.load_balancing_scheme,
                "IPAddress": d.ip_address,
                "IPProtocol": "TCP",
                "ports": d.ports,
                "backendService": d.backend_service,
                "network": d.network,
                "subnetwork": d.subnetwork,
            }),
        )?;
        self.0.count("compute", "InsertForwardingRule");
        let call = self.0.forwarding_rules.insert().set_project(&self.0.project);
        let op = call.set_region(&self.0.region).set_body(body).send().await.api(what)?;
        finish_regional!(self.0, forwarding_rules, ctx, what, op)?;
        self.get(&d.name)
            .await?
            .ok_or_else(|| KindError::retryable(format!("{what}: {} is not there yet", d.name)))
    }

    async fn update(&self, _ctx: &Context, update: Update<'_, Self>) -> Outcome<Self> {
        // Every field is replace-only.
        Ok(update.current.clone())
    }

    async fn delete(&self, ctx: &Context, current: &LiveOf<Self>) -> KindResult<()> {
        let what = "compute:DeleteForwardingRule";
        self.0.count("compute", "DeleteForwardingRule");
        let call = self.0.forwarding_rules.delete().set_project(&self.0.project);
        let call = call.set_region(&self.0.region).set_forwarding_rule(&current.id);
        if let Some(op) = call.send().await.or_absent(what)? {
            finish_regional!(self.0, forwarding_rules, ctx, what, op)?;
        }
        Ok(())
    }
}
