//! `gcp_compute_address`: a regional internal IP address reserved in a subnetwork (OpenBao's
//! load balancer address, which its DNS record names).

use super::{from_json, read_each, to_json};
use crate::GcpClients;
use crate::error::GcpResult;
use engine::prelude::*;
use google_cloud_compute_v1::model::Address as Body;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::sync::Arc;

#[derive(Attributes, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct Address {
    #[attr(replace)]
    pub name: String,
    /// The subnetwork's self link.
    #[attr(replace)]
    pub subnetwork: String,
    /// `INTERNAL`.
    #[attr(replace)]
    pub address_type: String,
    /// The address GCP chose.
    #[attr(computed)]
    pub address: Option<String>,
    #[attr(computed)]
    pub self_link: Option<String>,
}

pub(crate) struct AddressKind(pub Arc<GcpClients>);

impl AddressKind {
    async fn get(&self, name: &str) -> KindResult<Option<Live<Address>>> {
        self.0.count("compute", "GetAddress");
        let call = self.0.addresses.get().set_project(&self.0.project).set_region(&self.0.region);
        let found = call.set_address(name).send().await.or_absent("compute:GetAddress")?;
        Ok(found.map(|a| {
            let j = to_json(&a);
            let attrs = Address {
                name: name.to_string(),
                subnetwork: j["subnetwork"].as_str().unwrap_or_default().to_string(),
                address_type: j["addressType"].as_str().unwrap_or("EXTERNAL").to_string(),
                address: j["address"].as_str().map(str::to_string),
                self_link: j["selfLink"].as_str().map(str::to_string),
            };
            Live::new(name, attrs)
        }))
    }
}

impl TypedKind for AddressKind {
    type Attrs = Address;
    const NAME: &'static str = "gcp_compute_address";

    async fn read(&self, _ctx: &Context, requests: &Requests<Self>) -> Found<Self> {
        read_each(requests, |d| d.name.clone(), |name| async move { self.get(&name).await }).await
    }

    async fn create(&self, ctx: &Context, desired: &Self::Attrs) -> Outcome<Self> {
        let what = "compute:InsertAddress";
        let body: Body = from_json(
            what,
            json!({
                "name": desired.name,
                "subnetwork": desired.subnetwork,
                "addressType": desired.address_type,
                "purpose": "GCE_ENDPOINT",
            }),
        )?;
        self.0.count("compute", "InsertAddress");
        let call =
            self.0.addresses.insert().set_project(&self.0.project).set_region(&self.0.region);
        let op = call.set_body(body).send().await.api(what)?;
        finish_regional!(self.0, addresses, ctx, what, op)?;
        self.get(&desired.name)
            .await?
            .ok_or_else(|| KindError::retryable(format!("{what}: not there yet")))
    }

    async fn update(&self, _ctx: &Context, update: Update<'_, Self>) -> Outcome<Self> {
        // Every field is replace-only.
        Ok(update.current.clone())
    }

    async fn delete(&self, ctx: &Context, current: &LiveOf<Self>) -> KindResult<()> {
        let what = "compute:DeleteAddress";
        self.0.count("compute", "DeleteAddress");
        let call =
            self.0.addresses.delete().set_project(&self.0.project).set_region(&self.0.region);
        if let Some(op) = call.set_address(&current.id).send().await.or_absent(what)? {
            finish_regional!(self.0, addresses, ctx, what, op)?;
        }
        Ok(())
    }
}
