//! `tailscale_policy_file`: the tailnet's policy file (its ACL): one per tailnet, always there
//! (a new tailnet has Tailscale's default policy). The engine takes it over only from its
//! default, as Tailscale's Terraform provider does unless told otherwise: the first write sends
//! `If-Match: ts-default`, so a policy someone edited by hand is never overwritten unless the
//! spec says `take_over_policy = true`. Later writes carry the ETag last read, so an edit made between
//! a plan and its apply is not lost silently: the write fails and the next plan shows it. A
//! destroy puts the default policy back.

use crate::client::TailscaleClient;
use engine::prelude::*;
use reqwest::Method;
use serde::{Deserialize, Serialize};
use serde_json::{Value as Json, json};

#[derive(Attributes, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct PolicyFile {
    /// The policy, as JSON (the spec may write it as HuJSON: comments and trailing commas).
    #[attr(in_place, normalize = engine::normalize::json_document)]
    pub policy: Json,
    /// Replace a policy that is not the tailnet's default when first applied.
    #[attr(setting)]
    #[serde(default)]
    pub take_over: bool,
    /// The version read last.
    #[attr(computed)]
    pub etag: Option<String>,
}

/// Tailscale's default policy: everyone reaches everything.
pub(crate) fn default_policy() -> Json {
    json!({"acls": [{"action": "accept", "src": ["*"], "dst": ["*:*"]}]})
}

pub(crate) struct PolicyFileKind(pub TailscaleClient);

impl PolicyFileKind {
    async fn get(&self) -> Outcome<Self> {
        let answer = self.0.call("GetPolicyFile", Method::GET, "acl", None, None).await?;
        let attrs = PolicyFile { policy: answer.body, take_over: false, etag: answer.etag };
        Ok(Live::new(self.0.tailnet(), attrs))
    }

    async fn set(&self, policy: &Json, if_match: &str) -> Outcome<Self> {
        let operation = "SetPolicyFile";
        let answer =
            self.0.call(operation, Method::POST, "acl", Some(policy), Some(if_match)).await;
        match answer {
            Ok(_) => self.get().await,
            Err(e) if e.has_code("412") && if_match == "ts-default" => {
                Err(KindError::new(format!(
                    "the tailnet's policy file is not Tailscale's default (someone edited it): set \
                 `take_over_policy = true` in [tailnet] to replace it with the spec's ({})",
                    e.message
                )))
            }
            Err(e) if e.has_code("412") => Err(KindError::retryable(format!(
                "the tailnet's policy file changed since it was read: {}",
                e.message
            ))),
            Err(e) => Err(e),
        }
    }
}

impl TypedKind for PolicyFileKind {
    type Attrs = PolicyFile;
    const NAME: &'static str = "tailscale_policy_file";

    async fn read(&self, _ctx: &Context, requests: &Requests<Self>) -> Found<Self> {
        let mut out = Vec::new();
        for r in requests {
            // Not recorded yet: not the spec's until its first write replaces the default.
            out.push(match r.id.is_some() {
                true => Some(self.get().await?),
                false => None,
            });
        }
        Ok(out)
    }

    async fn create(&self, _ctx: &Context, desired: &Self::Attrs) -> Outcome<Self> {
        let if_match = match desired.take_over {
            true => self.get().await?.attributes.etag.unwrap_or_default(),
            false => "ts-default".to_string(),
        };
        self.set(&desired.policy, &if_match).await
    }

    async fn update(&self, _ctx: &Context, update: Update<'_, Self>) -> Outcome<Self> {
        let etag = update.current.attributes.etag.clone().unwrap_or_default();
        self.set(&update.desired.policy, &etag).await
    }

    async fn delete(&self, _: &Context, current: &LiveOf<Self>) -> KindResult<()> {
        let etag = current.attributes.etag.clone().unwrap_or_default();
        self.set(&default_policy(), &etag).await.map(|_| ())
    }
}
