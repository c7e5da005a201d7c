//! IAM kinds: roles and their inline policies, managed policy attachments, instance profiles,
//! OIDC providers.

mod instance_profile;
mod oidc_provider;
mod role;
mod role_policy_attachment;

use crate::AwsClients;
use engine::Kind;
use std::sync::Arc;

pub(crate) fn kinds(shared: &Arc<AwsClients>) -> Vec<Arc<dyn Kind>> {
    vec![
        Arc::new(role::IamRole(shared.clone())),
        Arc::new(role::IamRolePolicy(shared.clone())),
        Arc::new(role_policy_attachment::IamRolePolicyAttachment(shared.clone())),
        Arc::new(instance_profile::IamInstanceProfile(shared.clone())),
        Arc::new(oidc_provider::OidcProvider(shared.clone())),
    ]
}
