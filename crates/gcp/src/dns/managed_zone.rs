//! `gcp_dns_managed_zone`: a Cloud DNS zone, private to the networks it names.

use crate::GcpClients;
use crate::error::GcpResult;
use crate::labels::{from_labels, to_labels};
use engine::ownership::adoptable;
use engine::prelude::*;
use google_cloud_dns_v1::model::managed_zone::Visibility;
use google_cloud_dns_v1::model::{
    ManagedZone as Body, ManagedZonePrivateVisibilityConfig,
    ManagedZonePrivateVisibilityConfigNetwork,
};
use google_cloud_gax::paginator::ItemPaginator;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::Arc;

#[derive(Attributes, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct ManagedZone {
    #[attr(replace)]
    pub name: String,
    /// The zone's domain with its final dot, e.g. `priv.gcp.ogenki.io.`.
    #[attr(replace)]
    pub dns_name: String,
    #[attr(in_place)]
    pub description: String,
    /// `private` or `public`.
    #[attr(replace)]
    pub visibility: String,
    /// Self links of the networks a private zone answers in.
    #[attr(in_place, unordered)]
    pub networks: Vec<String>,
    #[attr(in_place, tags)]
    pub labels: Tags,
}

pub(crate) struct ManagedZoneKind(pub Arc<GcpClients>);

impl ManagedZoneKind {
    fn attrs(z: &Body, address: Option<&engine::Address>) -> ManagedZone {
        let networks = z
            .private_visibility_config
            .as_ref()
            .map(|c| c.networks.iter().filter_map(|n| n.network_url.clone()).collect::<Vec<_>>());
        ManagedZone {
            name: z.name.clone().unwrap_or_default(),
            dns_name: z.dns_name.clone().unwrap_or_default(),
            description: z.description.clone().unwrap_or_default(),
            visibility: z
                .visibility
                .as_ref()
                .and_then(|v| v.name())
                .unwrap_or("public")
                .to_lowercase(),
            networks: networks.unwrap_or_default(),
            labels: from_labels(&z.labels, address),
        }
    }

    /// The fields an update may change, on `body`.
    fn changeable(body: &mut Body, desired: &ManagedZone) {
        body.description = Some(desired.description.clone());
        body.labels = to_labels(&desired.labels);
        if desired.visibility == "private" {
            let mut config = ManagedZonePrivateVisibilityConfig::new();
            config.networks = desired
                .networks
                .iter()
                .map(|url| {
                    let mut n = ManagedZonePrivateVisibilityConfigNetwork::new();
                    n.network_url = Some(url.clone());
                    n
                })
                .collect();
            body.private_visibility_config = Some(config);
        }
    }

    /// Every zone of the project, by name: one list call per run.
    async fn all(&self, ctx: &Context) -> KindResult<Arc<HashMap<String, Body>>> {
        let key = format!("gcp:{}:managed-zones", self.0.project);
        ctx.memo(&key, || async {
            self.0.count("dns", "ListManagedZones");
            let mut items = self.0.managed_zones.list().set_project(&self.0.project).by_item();
            Ok::<_, KindError>(collect_by_name!(items, "dns:ListManagedZones"))
        })
        .await
    }

    async fn get(&self, ctx: &Context, name: &str) -> KindResult<Live<ManagedZone>> {
        self.0.count("dns", "GetManagedZone");
        let call = self.0.managed_zones.get().set_project(&self.0.project).set_managed_zone(name);
        let z = call.send().await.api("dns:GetManagedZone")?;
        Ok(Live::new(name, Self::attrs(&z, ctx.address())))
    }
}

impl TypedKind for ManagedZoneKind {
    type Attrs = ManagedZone;
    const NAME: &'static str = "gcp_dns_managed_zone";

    async fn read(&self, ctx: &Context, requests: &Requests<Self>) -> Found<Self> {
        let all = self.all(ctx).await?;
        Ok(requests
            .iter()
            .map(|r| {
                let recorded = r.id.as_ref().and_then(|id| all.get(id).map(|z| (id.clone(), z)));
                if let Some((id, z)) = recorded {
                    return Some(Live::new(id, Self::attrs(z, Some(&r.address))));
                }
                // Not recorded: ours only when its labels say it is this resource of this state.
                let d = r.desired.as_ref()?;
                let z = all.get(&d.name)?;
                let found = Self::attrs(z, Some(&r.address));
                adoptable(r, &found).then(|| Live::new(d.name.clone(), found))
            })
            .collect())
    }

    async fn create(&self, ctx: &Context, desired: &Self::Attrs) -> Outcome<Self> {
        let mut body = Body::new();
        body.name = Some(desired.name.clone());
        body.dns_name = Some(desired.dns_name.clone());
        body.visibility = Some(Visibility::from(desired.visibility.as_str()));
        Self::changeable(&mut body, desired);
        self.0.count("dns", "CreateManagedZone");
        let call = self.0.managed_zones.create().set_project(&self.0.project).set_body(body);
        call.send().await.api("dns:CreateManagedZone")?;
        self.get(ctx, &desired.name).await
    }

    async fn update(&self, ctx: &Context, update: Update<'_, Self>) -> Outcome<Self> {
        let Update { current, desired, .. } = update;
        // A whole update, not a patch: a patch merges maps, so a label added out of band would
        // stay.
        self.0.count("dns", "GetManagedZone");
        let call = self.0.managed_zones.get().set_project(&self.0.project);
        let mut body = call.set_managed_zone(&current.id).send().await.api("dns:GetManagedZone")?;
        Self::changeable(&mut body, desired);
        self.0.count("dns", "UpdateManagedZone");
        let call = self.0.managed_zones.update().set_project(&self.0.project);
        call.set_managed_zone(&current.id)
            .set_body(body)
            .send()
            .await
            .api("dns:UpdateManagedZone")?;
        self.get(ctx, &current.id).await
    }

    async fn delete(&self, _: &Context, current: &LiveOf<Self>) -> KindResult<()> {
        self.0.count("dns", "DeleteManagedZone");
        let call = self
            .0
            .managed_zones
            .delete()
            .set_project(&self.0.project)
            .set_managed_zone(&current.id);
        call.send().await.or_absent("dns:DeleteManagedZone")?;
        Ok(())
    }
}
