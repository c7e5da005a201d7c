//! `gcp_kms_crypto_key`: a Cloud KMS symmetric key (OpenBao's `gcpckms` seal). Found by name in
//! its key ring whoever made it; its labels and rotation change in place; a destroy schedules
//! its versions' destruction (Cloud KMS keeps the key's name forever).

use crate::GcpClients;
use crate::error::GcpResult;
use crate::labels::{from_labels, to_labels};
use engine::prelude::*;
use google_cloud_gax::paginator::ItemPaginator;
use google_cloud_kms_v1::model::CryptoKey as Body;
use google_cloud_kms_v1::model::crypto_key::CryptoKeyPurpose;
use google_cloud_kms_v1::model::crypto_key_version::CryptoKeyVersionState;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

#[derive(Attributes, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct CryptoKey {
    #[attr(replace)]
    pub name: String,
    /// The key ring's full name (`projects/P/locations/L/keyRings/R`).
    #[attr(replace)]
    pub key_ring: String,
    /// `ENCRYPT_DECRYPT`.
    #[attr(replace)]
    pub purpose: String,
    /// Seconds between automatic rotations; `None`: never.
    #[attr(in_place)]
    pub rotation_seconds: Option<i64>,
    #[attr(in_place, tags)]
    pub labels: Tags,
    /// The key's full name, what OpenBao's seal and IAM bindings name.
    #[attr(computed)]
    pub id: Option<String>,
}

pub(crate) struct CryptoKeyKind(pub Arc<GcpClients>);

impl CryptoKeyKind {
    fn attrs(k: &Body, address: Option<&engine::Address>) -> CryptoKey {
        let (key_ring, name) = k.name.rsplit_once("/cryptoKeys/").unwrap_or(("", &k.name));
        CryptoKey {
            name: name.to_string(),
            key_ring: key_ring.to_string(),
            purpose: k.purpose.name().unwrap_or("ENCRYPT_DECRYPT").to_string(),
            rotation_seconds: k.rotation_period().map(|d| d.seconds()),
            labels: from_labels(&k.labels, address),
            id: Some(k.name.clone()),
        }
    }

    /// The fields an update may change, on `body`.
    fn changeable(body: Body, desired: &CryptoKey) -> Body {
        let body = body.set_labels(to_labels(&desired.labels));
        match desired.rotation_seconds {
            Some(seconds) => {
                let next =
                    std::time::SystemTime::now() + std::time::Duration::from_secs(seconds as u64);
                body.set_rotation_period(google_cloud_wkt::Duration::clamp(seconds, 0))
                    .set_next_rotation_time(
                        google_cloud_wkt::Timestamp::try_from(next)
                            .unwrap_or_else(|_| google_cloud_wkt::Timestamp::clamp(0, 0)),
                    )
            }
            None => body,
        }
    }

    async fn get(&self, full_name: &str) -> KindResult<Option<Body>> {
        self.0.count("cloudkms", "GetCryptoKey");
        let call = self.0.kms.get_crypto_key().set_name(full_name);
        call.send().await.or_absent("cloudkms:GetCryptoKey")
    }

    async fn read_back(&self, ctx: &Context, full_name: &str) -> Outcome<Self> {
        let k = self.get(full_name).await?.ok_or_else(|| {
            KindError::retryable(format!("cloudkms:GetCryptoKey: {full_name} is not there yet"))
        })?;
        Ok(Live::new(k.name.clone(), Self::attrs(&k, ctx.address())))
    }
}

impl TypedKind for CryptoKeyKind {
    type Attrs = CryptoKey;
    const NAME: &'static str = "gcp_kms_crypto_key";

    async fn read(&self, _ctx: &Context, requests: &Requests<Self>) -> Found<Self> {
        let mut out = Vec::new();
        for r in requests.iter() {
            let name = match (&r.id, &r.desired) {
                (Some(id), _) => Some(id.clone()),
                (None, Some(d)) => Some(format!("{}/cryptoKeys/{}", d.key_ring, d.name)),
                (None, None) => None,
            };
            out.push(match name {
                Some(name) => self
                    .get(&name)
                    .await?
                    .map(|k| Live::new(k.name.clone(), Self::attrs(&k, Some(&r.address)))),
                None => None,
            });
        }
        Ok(out)
    }

    async fn create(&self, ctx: &Context, desired: &Self::Attrs) -> Outcome<Self> {
        let body = Body::new().set_purpose(CryptoKeyPurpose::from(desired.purpose.as_str()));
        let body = Self::changeable(body, desired);
        self.0.count("cloudkms", "CreateCryptoKey");
        let call = self
            .0
            .kms
            .create_crypto_key()
            .set_parent(&desired.key_ring)
            .set_crypto_key_id(&desired.name)
            .set_crypto_key(body);
        call.send().await.api("cloudkms:CreateCryptoKey")?;
        self.read_back(ctx, &format!("{}/cryptoKeys/{}", desired.key_ring, desired.name)).await
    }

    async fn update(&self, ctx: &Context, update: Update<'_, Self>) -> Outcome<Self> {
        let Update { current, desired, .. } = update;
        let mut paths = vec!["labels".to_string()];
        // A rotation set, changed or unset (then both fields are masked and left empty).
        if desired.rotation_seconds.is_some() || current.attributes.rotation_seconds.is_some() {
            paths.extend(["rotation_period".into(), "next_rotation_time".into()]);
        }
        let body = Self::changeable(Body::new().set_name(&current.id), desired);
        self.0.count("cloudkms", "UpdateCryptoKey");
        let call = self
            .0
            .kms
            .update_crypto_key()
            .set_crypto_key(body)
            .set_update_mask(google_cloud_wkt::FieldMask::default().set_paths(paths));
        call.send().await.api("cloudkms:UpdateCryptoKey")?;
        self.read_back(ctx, &current.id).await
    }

    async fn delete(&self, _: &Context, current: &LiveOf<Self>) -> KindResult<()> {
        // Cloud KMS keeps the key; what can go is its key material: every version not yet
        // scheduled for destruction.
        self.0.count("cloudkms", "ListCryptoKeyVersions");
        let mut versions = self.0.kms.list_crypto_key_versions().set_parent(&current.id).by_item();
        let mut live = Vec::new();
        while let Some(v) = versions.next().await {
            let v = v.api("cloudkms:ListCryptoKeyVersions")?;
            if matches!(v.state, CryptoKeyVersionState::Enabled | CryptoKeyVersionState::Disabled) {
                live.push(v.name);
            }
        }
        for name in live {
            self.0.count("cloudkms", "DestroyCryptoKeyVersion");
            let call = self.0.kms.destroy_crypto_key_version().set_name(&name);
            call.send().await.or_absent("cloudkms:DestroyCryptoKeyVersion")?;
        }
        Ok(())
    }
}
