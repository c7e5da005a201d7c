//! `gcp_compute_region_backend_service`: the backend of an internal passthrough load balancer:
//! its instance groups, checked by its health checks.

use super::{from_json, read_each, strings, to_json};
use crate::GcpClients;
use crate::error::GcpResult;
use engine::prelude::*;
use google_cloud_compute_v1::model::BackendService as Body;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::sync::Arc;

#[derive(Attributes, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct BackendService {
    #[attr(replace)]
    pub name: String,
    /// `INTERNAL`.
    #[attr(replace)]
    pub load_balancing_scheme: String,
    /// `TCP`.
    #[attr(in_place)]
    pub protocol: String,
    /// The network's self link.
    #[attr(replace)]
    pub network: String,
    /// Self links of the health checks.
    #[attr(in_place, unordered)]
    pub health_checks: Vec<String>,
    /// URLs of the instance groups behind it.
    #[attr(in_place, unordered)]
    pub groups: Vec<String>,
    #[attr(computed)]
    pub self_link: Option<String>,
}

pub(crate) struct BackendServiceKind(pub Arc<GcpClients>);

impl BackendServiceKind {
    fn body(what: &str, d: &BackendService) -> KindResult<Body> {
        let backends: Vec<_> =
            d.groups.iter().map(|g| json!({"group": g, "balancingMode": "CONNECTION"})).collect();
        from_json(
            what,
            json!({
                "name": d.name,
                "loadBalancingScheme": d.load_balancing_scheme,
                "protocol": d.protocol,
                "network": d.network,
                "healthChecks": d.health_checks,
                "backends": backends,
            }),
        )
    }

    async fn get(&self, name: &str) -> KindResult<Option<Live<BackendService>>> {
        self.0.count("compute", "GetRegionBackendService");
        let call = self.0.region_backend_services.get().set_project(&self.0.project);
        let call = call.set_region(&self.0.region).set_backend_service(name);
        let found = call.send().await.or_absent("compute:GetRegionBackendService")?;
        Ok(found.map(|b| {
            let j = to_json(&b);
            let groups = j["backends"]
                .as_array()
                .map(|bs| {
                    bs.iter().filter_map(|b| b["group"].as_str().map(str::to_string)).collect()
                })
                .unwrap_or_default();
            let attrs = BackendService {
                name: name.to_string(),
                load_balancing_scheme: j["loadBalancingScheme"].as_str().unwrap_or_default().into(),
                protocol: j["protocol"].as_str().unwrap_or_default().into(),
                network: j["network"].as_str().unwrap_or_default().into(),
                health_checks: strings(&j["healthChecks"]),
                groups,
                self_link: j["selfLink"].as_str().map(str::to_string),
            };
            Live::new(name, attrs)
        }))
    }

    async fn read_back(&self, name: &str) -> Outcome<Self> {
        self.get(name).await?.ok_or_else(|| {
            KindError::retryable(format!(
                "compute:GetRegionBackendService: {name} is not there yet"
            ))
        })
    }
}

impl TypedKind for BackendServiceKind {
    type Attrs = BackendService;
    const NAME: &'static str = "gcp_compute_region_backend_service";

    async fn read(&self, _ctx: &Context, requests: &Requests<Self>) -> Found<Self> {
        read_each(requests, |d| d.name.clone(), |name| async move { self.get(&name).await }).await
    }

    async fn create(&self, ctx: &Context, desired: &Self::Attrs) -> Outcome<Self> {
        let what = "compute:InsertRegionBackendService";
        self.0.count("compute", "InsertRegionBackendService");
        let call = self.0.region_backend_services.insert().set_project(&self.0.project);
        let call = call.set_region(&self.0.region).set_body(Self::body(what, desired)?);
        let op = call.send().await.api(what)?;
        finish_regional!(self.0, region_backend_services, ctx, what, op)?;
        self.read_back(&desired.name).await
    }

    async fn update(&self, ctx: &Context, update: Update<'_, Self>) -> Outcome<Self> {
        let Update { current, desired, .. } = update;
        let what = "compute:PatchRegionBackendService";
        self.0.count("compute", "PatchRegionBackendService");
        let call = self.0.region_backend_services.patch().set_project(&self.0.project);
        let call = call.set_region(&self.0.region).set_backend_service(&current.id);
        let op = call.set_body(Self::body(what, desired)?).send().await.api(what)?;
        finish_regional!(self.0, region_backend_services, ctx, what, op)?;
        self.read_back(&current.id).await
    }

    async fn delete(&self, ctx: &Context, current: &LiveOf<Self>) -> KindResult<()> {
        let what = "compute:DeleteRegionBackendService";
        self.0.count("compute", "DeleteRegionBackendService");
        let call = self.0.region_backend_services.delete().set_project(&self.0.project);
        let call = call.set_region(&self.0.region).set_backend_service(&current.id);
        if let Some(op) = call.send().await.or_absent(what)? {
            finish_regional!(self.0, region_backend_services, ctx, what, op)?;
        }
        Ok(())
    }
}
