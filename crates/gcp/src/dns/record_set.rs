//! `gcp_dns_record_set`: a record set in a Cloud DNS zone (OpenBao's `bao.priv.gcp...` A
//! record). Record sets carry no labels; a zone holds one set per name and type, which is
//! therefore the spec's.

use crate::GcpClients;
use crate::compute::{from_json, strings, to_json};
use crate::error::GcpResult;
use engine::prelude::*;
use google_cloud_dns_v1::model::ResourceRecordSet as Body;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::sync::Arc;

#[derive(Attributes, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct RecordSet {
    /// The managed zone's name.
    #[attr(replace)]
    pub zone: String,
    /// The name with its final dot.
    #[attr(replace)]
    pub name: String,
    #[attr(replace)]
    pub record_type: String,
    #[attr(in_place)]
    pub ttl: i64,
    #[attr(in_place, unordered)]
    pub rrdatas: Vec<String>,
}

pub(crate) struct RecordSetKind(pub Arc<GcpClients>);

fn id_of(zone: &str, name: &str, record_type: &str) -> String {
    format!("{zone}/{name}/{record_type}")
}

impl RecordSetKind {
    fn body(what: &str, d: &RecordSet) -> KindResult<Body> {
        from_json(
            what,
            json!({"name": d.name, "type": d.record_type, "ttl": d.ttl, "rrdatas": d.rrdatas}),
        )
    }

    async fn get(
        &self,
        zone: &str,
        name: &str,
        record_type: &str,
    ) -> KindResult<Option<Live<RecordSet>>> {
        self.0.count("dns", "GetResourceRecordSet");
        let call = self.0.record_sets.get().set_project(&self.0.project).set_managed_zone(zone);
        let call = call.set_name(name).set_type(record_type);
        let found = call.send().await.or_absent("dns:GetResourceRecordSet")?;
        Ok(found.map(|r| {
            let j = to_json(&r);
            let attrs = RecordSet {
                zone: zone.to_string(),
                name: name.to_string(),
                record_type: record_type.to_string(),
                ttl: j["ttl"].as_i64().unwrap_or(0),
                rrdatas: strings(&j["rrdatas"]),
            };
            Live::new(id_of(zone, name, record_type), attrs)
        }))
    }

    async fn read_back(&self, d: &RecordSet) -> Outcome<Self> {
        self.get(&d.zone, &d.name, &d.record_type).await?.ok_or_else(|| {
            KindError::retryable(format!("dns:GetResourceRecordSet: {} is not there yet", d.name))
        })
    }
}

impl TypedKind for RecordSetKind {
    type Attrs = RecordSet;
    const NAME: &'static str = "gcp_dns_record_set";

    async fn read(&self, _ctx: &Context, requests: &Requests<Self>) -> Found<Self> {
        let mut out = Vec::new();
        for r in requests.iter() {
            let key = match (&r.id, &r.desired) {
                (Some(id), _) => {
                    let mut parts = id.splitn(3, '/');
                    match (parts.next(), parts.next(), parts.next()) {
                        (Some(z), Some(n), Some(t)) => {
                            Some((z.to_string(), n.to_string(), t.to_string()))
                        }
                        _ => None,
                    }
                }
                (None, Some(d)) => Some((d.zone.clone(), d.name.clone(), d.record_type.clone())),
                (None, None) => None,
            };
            out.push(match key {
                Some((z, n, t)) => self.get(&z, &n, &t).await?,
                None => None,
            });
        }
        Ok(out)
    }

    async fn create(&self, _ctx: &Context, desired: &Self::Attrs) -> Outcome<Self> {
        let what = "dns:CreateResourceRecordSet";
        self.0.count("dns", "CreateResourceRecordSet");
        let call = self.0.record_sets.create().set_project(&self.0.project);
        let call = call.set_managed_zone(&desired.zone).set_body(Self::body(what, desired)?);
        call.send().await.api(what)?;
        self.read_back(desired).await
    }

    async fn update(&self, _ctx: &Context, update: Update<'_, Self>) -> Outcome<Self> {
        let Update { desired, .. } = update;
        let what = "dns:PatchResourceRecordSet";
        self.0.count("dns", "PatchResourceRecordSet");
        let call = self.0.record_sets.patch().set_project(&self.0.project);
        let call = call.set_managed_zone(&desired.zone).set_name(&desired.name);
        let call = call.set_type(&desired.record_type).set_body(Self::body(what, desired)?);
        call.send().await.api(what)?;
        self.read_back(desired).await
    }

    async fn delete(&self, _: &Context, current: &LiveOf<Self>) -> KindResult<()> {
        let c = &current.attributes;
        self.0.count("dns", "DeleteResourceRecordSet");
        let call = self.0.record_sets.delete().set_project(&self.0.project);
        let call = call.set_managed_zone(&c.zone).set_name(&c.name).set_type(&c.record_type);
        call.send().await.or_absent("dns:DeleteResourceRecordSet")?;
        Ok(())
    }
}
