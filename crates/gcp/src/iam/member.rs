//! `gcp_iam_member`: one member of one role on one resource (a Cloud KMS crypto key, a Secret
//! Manager secret, or a Cloud Storage bucket, `projects/_/buckets/<bucket>`), like OpenTofu's
//! `*_iam_member`. The resource's policy is read, the
//! member added to (or removed from) the role's unconditional binding, and written back with
//! the etag read: a policy changed meanwhile is refused by the service (409) and the step is
//! tried again, so members others grant are never lost.

use crate::GcpClients;
use crate::error::GcpResult;
use engine::prelude::*;
use google_cloud_iam_v1::model::{Binding, Policy};
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;
use std::sync::Arc;

#[derive(Attributes, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct Member {
    /// The resource's full name: `projects/P/locations/L/keyRings/R/cryptoKeys/K` or
    /// `projects/P/secrets/S`.
    #[attr(replace)]
    pub resource: String,
    /// e.g. `roles/cloudkms.cryptoKeyEncrypterDecrypter`.
    #[attr(replace)]
    pub role: String,
    /// e.g. `serviceAccount:openbao-node@P.iam.gserviceaccount.com`.
    #[attr(replace)]
    pub member: String,
}

pub(crate) struct MemberKind(pub Arc<GcpClients>);

/// Which service keeps a resource's policy.
enum Service<'a> {
    Kms,
    SecretManager,
    /// The bucket's name.
    Storage(&'a str),
}

fn service(resource: &str) -> KindResult<Service<'_>> {
    if let Some(bucket) = crate::storage::iam::bucket_of(resource) {
        Ok(Service::Storage(bucket))
    } else if resource.contains("/cryptoKeys/") {
        Ok(Service::Kms)
    } else if resource.contains("/secrets/") {
        Ok(Service::SecretManager)
    } else {
        Err(KindError::new(format!(
            "gcp_iam_member: `{resource}` is neither a crypto key, a secret nor a bucket"
        )))
    }
}

/// A policy of the JSON API as Google's IAM model, and back.
fn from_json(json: Json) -> KindResult<Policy> {
    serde_json::from_value(json).map_err(|e| KindError::new(format!("a bucket's IAM policy: {e}")))
}

fn to_json(policy: &Policy) -> KindResult<Json> {
    serde_json::to_value(policy).map_err(|e| KindError::new(format!("a bucket's IAM policy: {e}")))
}

impl MemberKind {
    async fn policy(&self, resource: &str) -> KindResult<Option<Policy>> {
        match service(resource)? {
            Service::Kms => {
                self.0.count("cloudkms", "GetIamPolicy");
                let call = self.0.kms.get_iam_policy().set_resource(resource);
                call.send().await.or_absent("cloudkms:GetIamPolicy")
            }
            Service::SecretManager => {
                self.0.count("secretmanager", "GetIamPolicy");
                let call = self.0.secrets.get_iam_policy().set_resource(resource);
                call.send().await.or_absent("secretmanager:GetIamPolicy")
            }
            Service::Storage(bucket) => {
                crate::storage::iam::policy(&self.0, bucket).await?.map(from_json).transpose()
            }
        }
    }

    async fn set(&self, resource: &str, policy: Policy) -> KindResult<()> {
        let op = match service(resource)? {
            Service::Kms => {
                self.0.count("cloudkms", "SetIamPolicy");
                let call = self.0.kms.set_iam_policy().set_resource(resource).set_policy(policy);
                call.send().await.map(|_| ()).api("cloudkms:SetIamPolicy")
            }
            Service::SecretManager => {
                self.0.count("secretmanager", "SetIamPolicy");
                let call =
                    self.0.secrets.set_iam_policy().set_resource(resource).set_policy(policy);
                call.send().await.map(|_| ()).api("secretmanager:SetIamPolicy")
            }
            Service::Storage(bucket) => {
                return crate::storage::iam::set_policy(&self.0, bucket, &to_json(&policy)?).await;
            }
        };
        // Another writer changed the policy since it was read: read it again.
        op.map_err(|e| {
            if e.code.as_deref() == Some("409") { KindError::retryable(e.message) } else { e }
        })
    }

    /// The policy with `m`'s member in (`present`) or out of its role's unconditional binding.
    async fn change(&self, m: &Member, present: bool) -> KindResult<()> {
        let Some(mut policy) = self.policy(&m.resource).await? else {
            return if present {
                Err(KindError::retryable(format!("{}: not there yet", m.resource)))
            } else {
                Ok(())
            };
        };
        let at = policy.bindings.iter().position(|b| b.role == m.role && b.condition.is_none());
        match (at, present) {
            (Some(i), true) if policy.bindings[i].members.contains(&m.member) => return Ok(()),
            (Some(i), true) => policy.bindings[i].members.push(m.member.clone()),
            (None, true) => policy
                .bindings
                .push(Binding::new().set_role(&m.role).set_members([m.member.clone()])),
            (Some(i), false) => {
                let before = policy.bindings[i].members.len();
                policy.bindings[i].members.retain(|x| x != &m.member);
                if policy.bindings[i].members.len() == before {
                    return Ok(());
                }
                if policy.bindings[i].members.is_empty() {
                    policy.bindings.remove(i);
                }
            }
            (None, false) => return Ok(()),
        }
        self.set(&m.resource, policy).await
    }
}

fn id_of(m: &Member) -> String {
    format!("{} {} {}", m.resource, m.role, m.member)
}

impl TypedKind for MemberKind {
    type Attrs = Member;
    const NAME: &'static str = "gcp_iam_member";

    async fn read(&self, _ctx: &Context, requests: &Requests<Self>) -> Found<Self> {
        // One read of each resource's policy, however many of its members are asked about.
        let mut policies: std::collections::HashMap<String, Option<Policy>> = Default::default();
        let mut out = Vec::new();
        for r in requests.iter() {
            let wanted = match (&r.id, &r.desired) {
                (Some(id), _) => {
                    let mut parts = id.splitn(3, ' ');
                    match (parts.next(), parts.next(), parts.next()) {
                        (Some(resource), Some(role), Some(member)) => Some(Member {
                            resource: resource.into(),
                            role: role.into(),
                            member: member.into(),
                        }),
                        _ => None,
                    }
                }
                (None, Some(d)) => Some(d.clone()),
                (None, None) => None,
            };
            let Some(m) = wanted else {
                out.push(None);
                continue;
            };
            if !policies.contains_key(&m.resource) {
                let policy = self.policy(&m.resource).await?;
                policies.insert(m.resource.clone(), policy);
            }
            let held = policies[&m.resource].as_ref().is_some_and(|p| {
                p.bindings.iter().any(|b| {
                    b.role == m.role && b.condition.is_none() && b.members.contains(&m.member)
                })
            });
            out.push(held.then(|| Live::new(id_of(&m), m)));
        }
        Ok(out)
    }

    async fn create(&self, _ctx: &Context, desired: &Self::Attrs) -> Outcome<Self> {
        self.change(desired, true).await?;
        Ok(Live::new(id_of(desired), desired.clone()))
    }

    async fn update(&self, _ctx: &Context, update: Update<'_, Self>) -> Outcome<Self> {
        // Every field is replace-only.
        Ok(update.current.clone())
    }

    async fn delete(&self, _: &Context, current: &LiveOf<Self>) -> KindResult<()> {
        self.change(&current.attributes, false).await
    }
}
