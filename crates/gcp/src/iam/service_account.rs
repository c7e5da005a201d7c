//! `gcp_service_account`: a service account. Service accounts carry no labels; the account id
//! is unique in its project, so one of the spec's id is the spec's (the reference keeps
//! `openbao-node` in OpenBao's lineage so its unique id survives rebuilds).

use crate::GcpClients;
use crate::compute::read_each;
use crate::error::GcpResult;
use engine::prelude::*;
use google_cloud_iam_admin_v1::model::ServiceAccount as Body;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

#[derive(Attributes, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct ServiceAccount {
    /// The part of the email before `@`, e.g. `openbao-node`.
    #[attr(replace)]
    pub account_id: String,
    #[attr(in_place)]
    pub display_name: String,
    #[attr(in_place)]
    pub description: String,
    /// `openbao-node@P.iam.gserviceaccount.com`: what IAM members and VMs name.
    #[attr(computed)]
    pub email: Option<String>,
    /// The numeric id federated tokens carry as their subject.
    #[attr(computed)]
    pub unique_id: Option<String>,
}

pub(crate) struct ServiceAccountKind(pub Arc<GcpClients>);

impl ServiceAccountKind {
    fn email(&self, account_id: &str) -> String {
        format!("{account_id}@{}.iam.gserviceaccount.com", self.0.project)
    }

    fn resource(&self, email: &str) -> String {
        format!("projects/{}/serviceAccounts/{email}", self.0.project)
    }

    async fn get(&self, email: &str) -> KindResult<Option<Live<ServiceAccount>>> {
        self.0.count("iam", "GetServiceAccount");
        let call = self.0.iam.get_service_account().set_name(self.resource(email));
        let found = call.send().await.or_absent("iam:GetServiceAccount")?;
        Ok(found.map(|sa| {
            let account_id = sa.email.split('@').next().unwrap_or_default().to_string();
            let attrs = ServiceAccount {
                account_id,
                display_name: sa.display_name.clone(),
                description: sa.description.clone(),
                email: Some(sa.email.clone()),
                unique_id: Some(sa.unique_id.clone()),
            };
            Live::new(sa.email, attrs)
        }))
    }

    async fn read_back(&self, email: &str) -> Outcome<Self> {
        self.get(email).await?.ok_or_else(|| {
            KindError::retryable(format!("iam:GetServiceAccount: {email} is not there yet"))
        })
    }
}

impl TypedKind for ServiceAccountKind {
    type Attrs = ServiceAccount;
    const NAME: &'static str = "gcp_service_account";

    async fn read(&self, _ctx: &Context, requests: &Requests<Self>) -> Found<Self> {
        let email_of = |d: &ServiceAccount| self.email(&d.account_id);
        read_each(requests, email_of, |email| async move { self.get(&email).await }).await
    }

    async fn create(&self, _ctx: &Context, desired: &Self::Attrs) -> Outcome<Self> {
        self.0.count("iam", "CreateServiceAccount");
        let body = Body::new()
            .set_display_name(&desired.display_name)
            .set_description(&desired.description);
        let call = self
            .0
            .iam
            .create_service_account()
            .set_name(format!("projects/{}", self.0.project))
            .set_account_id(&desired.account_id)
            .set_service_account(body);
        call.send().await.api("iam:CreateServiceAccount")?;
        self.read_back(&self.email(&desired.account_id)).await
    }

    async fn update(&self, _ctx: &Context, update: Update<'_, Self>) -> Outcome<Self> {
        let Update { current, desired, .. } = update;
        self.0.count("iam", "PatchServiceAccount");
        let body = Body::new()
            .set_name(self.resource(&current.id))
            .set_display_name(&desired.display_name)
            .set_description(&desired.description);
        let mask = google_cloud_wkt::FieldMask::default()
            .set_paths(["display_name".to_string(), "description".to_string()]);
        let call =
            self.0.iam.patch_service_account().set_service_account(body).set_update_mask(mask);
        call.send().await.api("iam:PatchServiceAccount")?;
        self.read_back(&current.id).await
    }

    async fn delete(&self, _: &Context, current: &LiveOf<Self>) -> KindResult<()> {
        self.0.count("iam", "DeleteServiceAccount");
        let call = self.0.iam.delete_service_account().set_name(self.resource(&current.id));
        call.send().await.or_absent("iam:DeleteServiceAccount")?;
        Ok(())
    }
}
