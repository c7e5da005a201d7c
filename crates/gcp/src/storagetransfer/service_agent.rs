//! `gcp_storage_transfer_agent`: the project's Storage Transfer service agent
//! (`project-N@storage-transfer-service.iam.gserviceaccount.com`). Google owns it and makes it
//! on the first `googleServiceAccounts.get`, so reading it is all a create does and a destroy
//! only forgets it. What the spec needs from it: the email that bucket grants name, and the
//! subject id an AWS role trusts a transfer by.

use crate::GcpClients;
use crate::error::GcpResult;
use engine::prelude::*;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

#[derive(Attributes, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct ServiceAgent {
    /// The project whose transfers it runs.
    #[attr(replace)]
    pub project: String,
    #[attr(computed)]
    pub email: Option<String>,
    /// `serviceAccount:<email>`, as IAM policies name it.
    #[attr(computed)]
    pub member: Option<String>,
    /// The numeric id its federated tokens carry as their subject.
    #[attr(computed)]
    pub subject_id: Option<String>,
}

pub(crate) struct ServiceAgentKind(pub Arc<GcpClients>);

impl ServiceAgentKind {
    async fn get(&self, project: &str) -> Outcome<Self> {
        self.0.count("storagetransfer", "GetGoogleServiceAccount");
        let call = self.0.transfer.get_google_service_account().set_project_id(project);
        let agent = call.send().await.api("storagetransfer:GetGoogleServiceAccount")?;
        let attrs = ServiceAgent {
            project: project.to_string(),
            email: Some(agent.account_email.clone()),
            member: Some(format!("serviceAccount:{}", agent.account_email)),
            subject_id: Some(agent.subject_id.clone()),
        };
        Ok(Live::new(agent.account_email, attrs))
    }
}

impl TypedKind for ServiceAgentKind {
    type Attrs = ServiceAgent;
    const NAME: &'static str = "gcp_storage_transfer_agent";

    async fn read(&self, _ctx: &Context, requests: &Requests<Self>) -> Found<Self> {
        let mut out = Vec::new();
        for r in requests {
            let project = r.desired.as_ref().map(|d| d.project.clone());
            // Recorded by its email, `project-N@...`: the spec's project is asked again.
            let project = project.unwrap_or_else(|| self.0.project.clone());
            out.push(Some(self.get(&project).await?));
        }
        Ok(out)
    }

    async fn create(&self, _ctx: &Context, desired: &Self::Attrs) -> Outcome<Self> {
        self.get(&desired.project).await
    }

    async fn update(&self, _ctx: &Context, update: Update<'_, Self>) -> Outcome<Self> {
        // Its one field is replace-only.
        Ok(update.current.clone())
    }

    async fn delete(&self, _: &Context, current: &LiveOf<Self>) -> KindResult<()> {
        tracing::info!(agent = %current.id, "the Storage Transfer service agent is Google's: forgotten");
        Ok(())
    }
}
