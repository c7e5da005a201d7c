//! `gcp_compute_firewall`: a VPC firewall rule (allow rules, by source ranges or tags).

use super::by_name;
use crate::GcpClients;
use crate::error::GcpResult;
use crate::operation::finish;
use engine::prelude::*;
use google_cloud_compute_v1::model::firewall::{Allowed, Direction};
use google_cloud_compute_v1::model::{Firewall as Body, Operation};
use google_cloud_gax::paginator::ItemPaginator;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::Arc;

#[derive(Attributes, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct Firewall {
    #[attr(replace)]
    pub name: String,
    /// The network's self link.
    #[attr(replace)]
    pub network: String,
    /// `INGRESS` or `EGRESS`.
    #[attr(replace)]
    pub direction: String,
    #[attr(in_place)]
    pub priority: i32,
    #[attr(in_place, unordered)]
    pub source_ranges: Vec<String>,
    #[attr(in_place, unordered)]
    pub source_tags: Vec<String>,
    #[attr(in_place, unordered)]
    pub target_tags: Vec<String>,
    #[attr(in_place, unordered)]
    pub allow: Vec<Rule>,
    #[attr(computed)]
    #[serde(default)]
    pub self_link: Option<String>,
}

/// One allow rule: a protocol (`tcp`, `udp`, `icmp`, `all`) and its ports (none: every port).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Rule {
    pub protocol: String,
    #[serde(default)]
    pub ports: Vec<String>,
}

pub(crate) struct FirewallKind(pub Arc<GcpClients>);

impl FirewallKind {
    fn attrs(f: &Body) -> Firewall {
        let mut allow: Vec<Rule> = f
            .allowed
            .iter()
            .map(|a| Rule {
                protocol: a.ip_protocol.clone().unwrap_or_default(),
                ports: a.ports.clone(),
            })
            .collect();
        allow.sort();
        Firewall {
            name: f.name.clone().unwrap_or_default(),
            network: f.network.clone().unwrap_or_default(),
            direction: f.direction.as_ref().and_then(|d| d.name()).unwrap_or("INGRESS").into(),
            priority: f.priority.unwrap_or(1000),
            source_ranges: f.source_ranges.clone(),
            source_tags: f.source_tags.clone(),
            target_tags: f.target_tags.clone(),
            allow,
            self_link: f.self_link.clone(),
        }
    }

    /// The body of a create or patch: every field an update may change.
    fn body(desired: &Firewall) -> Body {
        let mut body = Body::new();
        body.priority = Some(desired.priority);
        body.source_ranges = desired.source_ranges.clone();
        body.source_tags = desired.source_tags.clone();
        body.target_tags = desired.target_tags.clone();
        body.allowed = desired
            .allow
            .iter()
            .map(|r| {
                let mut a = Allowed::new();
                a.ip_protocol = Some(r.protocol.clone());
                a.ports = r.ports.clone();
                a
            })
            .collect();
        body
    }

    /// Every firewall of the project, by name: one list call per run.
    async fn all(&self, ctx: &Context) -> KindResult<Arc<HashMap<String, Body>>> {
        let key = format!("gcp:{}:firewalls", self.0.project);
        ctx.memo(&key, || async {
            self.0.count("compute", "ListFirewalls");
            let mut items = self.0.firewalls.list().set_project(&self.0.project).by_item();
            Ok::<_, KindError>(collect_by_name!(items, "compute:ListFirewalls"))
        })
        .await
    }

    async fn get(&self, name: &str) -> KindResult<Live<Firewall>> {
        self.0.count("compute", "GetFirewall");
        let call = self.0.firewalls.get().set_project(&self.0.project).set_firewall(name);
        let f = call.send().await.api("compute:GetFirewall")?;
        Ok(Live::new(name, Self::attrs(&f)))
    }

    async fn finish(&self, ctx: &Context, what: &str, op: Operation) -> KindResult<()> {
        finish(ctx, what, op, |name| async move {
            self.0.count("compute", "GetGlobalOperation");
            let call =
                self.0.firewalls.get_operation().set_project(&self.0.project).set_operation(name);
            call.send().await.api("compute:GetGlobalOperation")
        })
        .await
    }
}

impl TypedKind for FirewallKind {
    type Attrs = Firewall;
    const NAME: &'static str = "gcp_compute_firewall";

    async fn read(&self, ctx: &Context, requests: &Requests<Self>) -> Found<Self> {
        let all = self.all(ctx).await?;
        by_name(requests, |d| d.name.clone(), &all, |name, f| Ok(Live::new(name, Self::attrs(f))))
    }

    async fn create(&self, ctx: &Context, desired: &Self::Attrs) -> Outcome<Self> {
        let mut body = Self::body(desired);
        body.name = Some(desired.name.clone());
        body.network = Some(desired.network.clone());
        body.direction = Some(Direction::from(desired.direction.as_str()));
        self.0.count("compute", "InsertFirewall");
        let call = self.0.firewalls.insert().set_project(&self.0.project).set_body(body);
        let op = call.send().await.api("compute:InsertFirewall")?;
        self.finish(ctx, "compute:InsertFirewall", op).await?;
        self.get(&desired.name).await
    }

    async fn update(&self, ctx: &Context, update: Update<'_, Self>) -> Outcome<Self> {
        let Update { current, desired, .. } = update;
        self.0.count("compute", "PatchFirewall");
        let call = self.0.firewalls.patch().set_project(&self.0.project).set_firewall(&current.id);
        let op = call.set_body(Self::body(desired)).send().await.api("compute:PatchFirewall")?;
        self.finish(ctx, "compute:PatchFirewall", op).await?;
        self.get(&current.id).await
    }

    async fn delete(&self, ctx: &Context, current: &LiveOf<Self>) -> KindResult<()> {
        self.0.count("compute", "DeleteFirewall");
        let call = self.0.firewalls.delete().set_project(&self.0.project).set_firewall(&current.id);
        if let Some(op) = call.send().await.or_absent("compute:DeleteFirewall")? {
            self.finish(ctx, "compute:DeleteFirewall", op).await?;
        }
        Ok(())
    }
}
