//! `gcp_compute_region_health_check`: a regional TCP health check (OpenBao's load balancer
//! checks port 8200).

use super::{from_json, read_each, to_json};
use crate::GcpClients;
use crate::error::GcpResult;
use engine::prelude::*;
use google_cloud_compute_v1::model::HealthCheck as Body;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::sync::Arc;

#[derive(Attributes, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct HealthCheck {
    #[attr(replace)]
    pub name: String,
    #[attr(in_place)]
    pub port: i64,
    #[attr(in_place)]
    pub check_interval_sec: i64,
    #[attr(in_place)]
    pub timeout_sec: i64,
    #[attr(in_place)]
    pub healthy_threshold: i64,
    #[attr(in_place)]
    pub unhealthy_threshold: i64,
    #[attr(computed)]
    pub self_link: Option<String>,
}

pub(crate) struct HealthCheckKind(pub Arc<GcpClients>);

impl HealthCheckKind {
    fn body(what: &str, d: &HealthCheck) -> KindResult<Body> {
        from_json(
            what,
            json!({
                "name": d.name,
                "type": "TCP",
                "tcpHealthCheck": {"port": d.port},
                "checkIntervalSec": d.check_interval_sec,
                "timeoutSec": d.timeout_sec,
                "healthyThreshold": d.healthy_threshold,
                "unhealthyThreshold": d.unhealthy_threshold,
            }),
        )
    }

    async fn get(&self, name: &str) -> KindResult<Option<Live<HealthCheck>>> {
        self.0.count("compute", "GetRegionHealthCheck");
        let call = self.0.region_health_checks.get().set_project(&self.0.project);
        let call = call.set_region(&self.0.region).set_health_check(name);
        let found = call.send().await.or_absent("compute:GetRegionHealthCheck")?;
        Ok(found.map(|h| {
            let j = to_json(&h);
            let int = |k: &str| j[k].as_i64().unwrap_or(0);
            let attrs = HealthCheck {
                name: name.to_string(),
                port: j["tcpHealthCheck"]["port"].as_i64().unwrap_or(0),
                check_interval_sec: int("checkIntervalSec"),
                timeout_sec: int("timeoutSec"),
                healthy_threshold: int("healthyThreshold"),
                unhealthy_threshold: int("unhealthyThreshold"),
                self_link: j["selfLink"].as_str().map(str::to_string),
            };
            Live::new(name, attrs)
        }))
    }

    async fn read_back(&self, name: &str) -> Outcome<Self> {
        self.get(name).await?.ok_or_else(|| {
            KindError::retryable(format!("compute:GetRegionHealthCheck: {name} is not there yet"))
        })
    }
}

impl TypedKind for HealthCheckKind {
    type Attrs = HealthCheck;
    const NAME: &'static str = "gcp_compute_region_health_check";

    async fn read(&self, _ctx: &Context, requests: &Requests<Self>) -> Found<Self> {
        read_each(requests, |d| d.name.clone(), |name| async move { self.get(&name).await }).await
    }

    async fn create(&self, ctx: &Context, desired: &Self::Attrs) -> Outcome<Self> {
        let what = "compute:InsertRegionHealthCheck";
        self.0.count("compute", "InsertRegionHealthCheck");
        let call = self.0.region_health_checks.insert().set_project(&self.0.project);
        let call = call.set_region(&self.0.region).set_body(Self::body(what, desired)?);
        let op = call.send().await.api(what)?;
        finish_regional!(self.0, region_health_checks, ctx, what, op)?;
        self.read_back(&desired.name).await
    }

    async fn update(&self, ctx: &Context, update: Update<'_, Self>) -> Outcome<Self> {
        let Update { current, desired, .. } = update;
        let what = "compute:PatchRegionHealthCheck";
        self.0.count("compute", "PatchRegionHealthCheck");
        let call = self.0.region_health_checks.patch().set_project(&self.0.project);
        let call = call.set_region(&self.0.region).set_health_check(&current.id);
        let op = call.set_body(Self::body(what, desired)?).send().await.api(what)?;
        finish_regional!(self.0, region_health_checks, ctx, what, op)?;
        self.read_back(&current.id).await
    }

    async fn delete(&self, ctx: &Context, current: &LiveOf<Self>) -> KindResult<()> {
        let what = "compute:DeleteRegionHealthCheck";
        self.0.count("compute", "DeleteRegionHealthCheck");
        let call = self.0.region_health_checks.delete().set_project(&self.0.project);
        let call = call.set_region(&self.0.region).set_health_check(&current.id);
        if let Some(op) = call.send().await.or_absent(what)? {
            finish_regional!(self.0, region_health_checks, ctx, what, op)?;
        }
        Ok(())
    }
}
