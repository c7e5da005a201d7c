//! `gcp_compute_router_nat`: Cloud NAT, one entry of its router's `nats`, written by patching
//! the router (with its fingerprint, so a concurrent change is refused, not overwritten).

use super::router::{finish_router_op, router, routers};
use crate::GcpClients;
use crate::error::GcpResult;
use engine::prelude::*;
use google_cloud_compute_v1::model::router_nat::{
    NatIpAllocateOption, SourceSubnetworkIpRangesToNat,
};
use google_cloud_compute_v1::model::router_nat_log_config::Filter;
use google_cloud_compute_v1::model::{Router, RouterNat as Nat, RouterNatLogConfig};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

#[derive(Attributes, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct RouterNat {
    #[attr(replace)]
    pub name: String,
    /// The router's name.
    #[attr(replace)]
    pub router: String,
    #[attr(replace)]
    pub region: String,
    /// `AUTO_ONLY` or `MANUAL_ONLY`.
    #[attr(in_place)]
    pub nat_ip_allocate_option: String,
    /// e.g. `ALL_SUBNETWORKS_ALL_IP_RANGES`.
    #[attr(in_place)]
    pub source_subnetwork_ip_ranges_to_nat: String,
    /// `ERRORS_ONLY`, `TRANSLATIONS_ONLY` or `ALL`; `None`: no logging.
    #[attr(in_place)]
    pub log_filter: Option<String>,
}

pub(crate) struct RouterNatKind(pub Arc<GcpClients>);

fn id(router: &str, name: &str) -> String {
    format!("{router}/{name}")
}

fn attrs(router: &Router, region: &str, n: &Nat) -> RouterNat {
    RouterNat {
        name: n.name.clone().unwrap_or_default(),
        router: router.name.clone().unwrap_or_default(),
        region: region.to_string(),
        nat_ip_allocate_option: n
            .nat_ip_allocate_option
            .as_ref()
            .and_then(|o| o.name())
            .unwrap_or_default()
            .into(),
        source_subnetwork_ip_ranges_to_nat: n
            .source_subnetwork_ip_ranges_to_nat
            .as_ref()
            .and_then(|o| o.name())
            .unwrap_or_default()
            .into(),
        log_filter: n
            .log_config
            .as_ref()
            .filter(|l| l.enable == Some(true))
            .map(|l| l.filter.as_ref().and_then(|f| f.name()).unwrap_or("ALL").to_string()),
    }
}

fn body(desired: &RouterNat) -> Nat {
    let mut nat = Nat::new();
    nat.name = Some(desired.name.clone());
    nat.nat_ip_allocate_option =
        Some(NatIpAllocateOption::from(desired.nat_ip_allocate_option.as_str()));
    nat.source_subnetwork_ip_ranges_to_nat = Some(SourceSubnetworkIpRangesToNat::from(
        desired.source_subnetwork_ip_ranges_to_nat.as_str(),
    ));
    let mut logs = RouterNatLogConfig::new();
    logs.enable = Some(desired.log_filter.is_some());
    logs.filter = desired.log_filter.as_deref().map(Filter::from);
    nat.log_config = Some(logs);
    nat
}

impl RouterNatKind {
    /// Patches router `name` in `region` with its NATs changed by `change`; the NAT
    /// `nat` as it then is (`None` once removed).
    async fn patch(
        &self,
        ctx: &Context,
        region: &str,
        router_name: &str,
        nat: &str,
        change: impl FnOnce(&mut Vec<Nat>),
    ) -> KindResult<Option<Live<RouterNat>>> {
        let current = router(&self.0, region, router_name).await?;
        let mut body = Router::new();
        body.nats = current.nats.clone();
        change(&mut body.nats);
        self.0.count("compute", "PatchRouter");
        let call = self.0.routers.patch().set_project(&self.0.project).set_region(region);
        let op =
            call.set_router(router_name).set_body(body).send().await.api("compute:PatchRouter")?;
        finish_router_op(&self.0, ctx, region, "compute:PatchRouter", op).await?;
        let after = router(&self.0, region, router_name).await?;
        Ok(after
            .nats
            .iter()
            .find(|n| n.name.as_deref() == Some(nat))
            .map(|n| Live::new(id(router_name, nat), attrs(&after, region, n))))
    }

    fn gone(nat: &str) -> KindError {
        KindError::retryable(format!("NAT `{nat}` not found on its router after writing it"))
    }
}

impl TypedKind for RouterNatKind {
    type Attrs = RouterNat;
    const NAME: &'static str = "gcp_compute_router_nat";

    async fn read(&self, ctx: &Context, requests: &Requests<Self>) -> Found<Self> {
        let region = requests.iter().find_map(|r| r.desired.as_ref().map(|d| d.region.clone()));
        let region = region.unwrap_or_else(|| self.0.region.clone());
        let all = routers(&self.0, ctx, &region).await?;
        Ok(requests
            .iter()
            .map(|r| {
                let key =
                    r.id.clone().or_else(|| r.desired.as_ref().map(|d| id(&d.router, &d.name)))?;
                let (router_name, nat) = key.split_once('/')?;
                let router = all.get(router_name)?;
                let found = router.nats.iter().find(|n| n.name.as_deref() == Some(nat))?;
                Some(Live::new(key.clone(), attrs(router, &region, found)))
            })
            .collect())
    }

    async fn create(&self, ctx: &Context, desired: &Self::Attrs) -> Outcome<Self> {
        let nat = body(desired);
        let name = desired.name.clone();
        let found = self
            .patch(ctx, &desired.region, &desired.router, &desired.name, |nats| {
                nats.retain(|n| n.name.as_deref() != Some(name.as_str()));
                nats.push(nat);
            })
            .await?;
        found.ok_or_else(|| Self::gone(&desired.name))
    }

    async fn update(&self, ctx: &Context, update: Update<'_, Self>) -> Outcome<Self> {
        let desired = update.desired;
        let nat = body(desired);
        let name = desired.name.clone();
        let found = self
            .patch(ctx, &desired.region, &desired.router, &desired.name, |nats| {
                for n in nats.iter_mut().filter(|n| n.name.as_deref() == Some(name.as_str())) {
                    *n = nat.clone();
                }
            })
            .await?;
        found.ok_or_else(|| Self::gone(&desired.name))
    }

    async fn delete(&self, ctx: &Context, current: &LiveOf<Self>) -> KindResult<()> {
        let a = &current.attributes;
        let name = a.name.clone();
        let removed = self
            .patch(ctx, &a.region, &a.router, &a.name, |nats| {
                nats.retain(|n| n.name.as_deref() != Some(name.as_str()))
            })
            .await;
        match removed {
            // The router is gone, and the NAT with it.
            Err(e) if e.has_code("404") => Ok(()),
            other => other.map(|_| ()),
        }
    }
}
