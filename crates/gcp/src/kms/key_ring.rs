//! `gcp_kms_key_ring`: a Cloud KMS key ring. It has no labels and can never be deleted, so one
//! of the spec's name in the spec's location is the spec's; a destroy forgets it.

use crate::GcpClients;
use crate::compute::read_each;
use crate::error::GcpResult;
use engine::prelude::*;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

#[derive(Attributes, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct KeyRing {
    #[attr(replace)]
    pub name: String,
    /// `europe-west4`, or `global`.
    #[attr(replace)]
    pub location: String,
    /// `projects/P/locations/L/keyRings/R`: what crypto keys name as their parent.
    #[attr(computed)]
    pub id: Option<String>,
}

pub(crate) struct KeyRingKind(pub Arc<GcpClients>);

impl KeyRingKind {
    fn full_name(&self, location: &str, name: &str) -> String {
        format!("projects/{}/locations/{location}/keyRings/{name}", self.0.project)
    }

    async fn get(&self, full_name: &str) -> KindResult<Option<Live<KeyRing>>> {
        self.0.count("cloudkms", "GetKeyRing");
        let call = self.0.kms.get_key_ring().set_name(full_name);
        let Some(ring) = call.send().await.or_absent("cloudkms:GetKeyRing")? else {
            return Ok(None);
        };
        // projects/P/locations/L/keyRings/R
        let parts: Vec<&str> = ring.name.split('/').collect();
        let attrs = KeyRing {
            name: parts.get(5).unwrap_or(&"").to_string(),
            location: parts.get(3).unwrap_or(&"").to_string(),
            id: Some(ring.name.clone()),
        };
        Ok(Some(Live::new(ring.name, attrs)))
    }
}

impl TypedKind for KeyRingKind {
    type Attrs = KeyRing;
    const NAME: &'static str = "gcp_kms_key_ring";

    async fn read(&self, _ctx: &Context, requests: &Requests<Self>) -> Found<Self> {
        let name_of = |d: &KeyRing| self.full_name(&d.location, &d.name);
        read_each(requests, name_of, |name| async move { self.get(&name).await }).await
    }

    async fn create(&self, _ctx: &Context, desired: &Self::Attrs) -> Outcome<Self> {
        self.0.count("cloudkms", "CreateKeyRing");
        let parent = format!("projects/{}/locations/{}", self.0.project, desired.location);
        let call = self.0.kms.create_key_ring().set_parent(parent).set_key_ring_id(&desired.name);
        call.send().await.api("cloudkms:CreateKeyRing")?;
        let full_name = self.full_name(&desired.location, &desired.name);
        self.get(&full_name).await?.ok_or_else(|| {
            KindError::retryable(format!("cloudkms:GetKeyRing: {full_name} is not there yet"))
        })
    }

    async fn update(&self, _ctx: &Context, update: Update<'_, Self>) -> Outcome<Self> {
        // Every field is replace-only; nothing to change in place.
        Ok(update.current.clone())
    }

    async fn delete(&self, _: &Context, current: &LiveOf<Self>) -> KindResult<()> {
        tracing::warn!(key_ring = %current.id, "Cloud KMS keeps key rings forever: forgotten, not deleted");
        Ok(())
    }
}
