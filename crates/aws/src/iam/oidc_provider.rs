//! `aws_iam_openid_connect_provider`: the IAM identity provider of the cluster's OIDC issuer.
//! Its ARN is derived from the issuer URL, so a provider made by a run that died is found in
//! the account's list (listed once per run) and adopted when it carries the address tag.

use super::{OidcProviderTags, iam_tags, tags_of};
use crate::AwsClients;
use crate::error::{SdkResult, required};
use crate::lookup::{ours_by_name, still_there};
use crate::tagging::retag;
use engine::prelude::*;
use engine::retry::read_back;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

#[derive(Attributes, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct OidcProvider {
    #[attr(replace)]
    pub url: String,
    #[attr(in_place, unordered)]
    pub client_ids: Vec<String>,
    /// Empty: AWS checks the issuer against its own trusted CAs.
    #[attr(in_place, unordered)]
    #[serde(default)]
    pub thumbprints: Vec<String>,
    #[attr(in_place, tags)]
    pub tags: Tags,
    #[attr(computed)]
    pub arn: Option<String>,
}

pub(crate) struct OidcProviderKind(pub Arc<AwsClients>);

const PROVIDERS: &str = "iam:oidc-providers";

/// The issuer URL without its scheme: how IAM names the provider.
fn bare(url: &str) -> &str {
    url.strip_prefix("https://").unwrap_or(url)
}

impl OidcProviderKind {
    async fn read_one(&self, arn: &str) -> KindResult<Option<Live<OidcProvider>>> {
        let call = self.0.iam.get_open_id_connect_provider().open_id_connect_provider_arn(arn);
        let op = "iam:GetOpenIDConnectProvider";
        let Some(out) = call.send().await.or_absent(op, &["NoSuchEntity"])? else {
            return Ok(None);
        };
        let provider = OidcProvider {
            url: format!("https://{}", bare(out.url().unwrap_or_default())),
            client_ids: out.client_id_list().to_vec(),
            thumbprints: out.thumbprint_list().to_vec(),
            tags: tags_of(out.tags()),
            arn: Some(arn.to_string()),
        };
        Ok(Some(Live::new(arn, provider)))
    }

    /// Every provider ARN of the account, listed once per run.
    async fn list(&self, ctx: &Context) -> KindResult<Arc<Vec<String>>> {
        ctx.memo(PROVIDERS, || async {
            let call = self.0.iam.list_open_id_connect_providers();
            let out = call.send().await.api("iam:ListOpenIDConnectProviders")?;
            let providers = out.open_id_connect_provider_list().iter();
            Ok(providers.filter_map(|p| p.arn().map(str::to_string)).collect())
        })
        .await
    }

    /// The provider of a request: by its recorded ARN, else by the URL the spec gives it.
    async fn find(
        &self,
        ctx: &Context,
        request: &ReadRequest<OidcProvider>,
    ) -> KindResult<Option<Live<OidcProvider>>> {
        let arn = match (&request.id, &request.desired) {
            (Some(arn), _) => Some(arn.clone()),
            (None, Some(d)) => {
                let suffix = format!(":oidc-provider/{}", bare(&d.url));
                self.list(ctx).await?.iter().find(|a| a.ends_with(&suffix)).cloned()
            }
            (None, None) => None,
        };
        let found = match arn {
            Some(arn) => self.read_one(&arn).await?,
            None => None,
        };
        Ok(ours_by_name(request, found))
    }
}

impl TypedKind for OidcProviderKind {
    type Attrs = OidcProvider;
    const NAME: &'static str = "aws_iam_openid_connect_provider";

    async fn read(&self, ctx: &Context, requests: &Requests<Self>) -> Found<Self> {
        futures::future::try_join_all(requests.iter().map(|r| engine::bounded(self.find(ctx, r))))
            .await
    }

    async fn create(&self, ctx: &Context, desired: &Self::Attrs) -> Outcome<Self> {
        let thumbprints = Some(desired.thumbprints.clone()).filter(|t| !t.is_empty());
        let call = self.0.iam.create_open_id_connect_provider().url(&desired.url);
        let call = call.set_client_id_list(Some(desired.client_ids.clone()));
        let call = call.set_thumbprint_list(thumbprints).set_tags(Some(iam_tags(&desired.tags)?));
        let op = "iam:CreateOpenIDConnectProvider";
        let out = call.send().await.api(op)?;
        ctx.forget(PROVIDERS);
        let arn = required(out.open_id_connect_provider_arn(), &format!("{op}: ARN"))?;
        read_back(&format!("OIDC provider {arn}"), || self.read_one(arn)).await
    }

    async fn update(&self, _: &Context, update: Update<'_, Self>) -> Outcome<Self> {
        let Update { current, desired, changes } = update;
        let (iam, arn) = (&self.0.iam, current.id.as_str());
        if changes.thumbprints {
            let call = iam.update_open_id_connect_provider_thumbprint();
            let call = call.open_id_connect_provider_arn(arn);
            let call = call.set_thumbprint_list(Some(desired.thumbprints.clone()));
            call.send().await.api("iam:UpdateOpenIDConnectProviderThumbprint")?;
        }
        if changes.client_ids {
            let (have, want) = (&current.attributes.client_ids, &desired.client_ids);
            for id in want.iter().filter(|i| !have.contains(i)) {
                let call = iam.add_client_id_to_open_id_connect_provider().client_id(id);
                let call = call.open_id_connect_provider_arn(arn);
                call.send().await.api("iam:AddClientIDToOpenIDConnectProvider")?;
            }
            for id in have.iter().filter(|i| !want.contains(i)) {
                let call = iam.remove_client_id_from_open_id_connect_provider().client_id(id);
                let call = call.open_id_connect_provider_arn(arn);
                call.send().await.api("iam:RemoveClientIDFromOpenIDConnectProvider")?;
            }
        }
        if changes.tags {
            retag(&OidcProviderTags(iam), arn, &current.attributes.tags, &desired.tags).await?;
        }
        still_there(&format!("OIDC provider {arn}"), self.read_one(arn).await?)
    }

    async fn delete(&self, ctx: &Context, current: &LiveOf<Self>) -> KindResult<()> {
        ctx.forget(PROVIDERS);
        let call = self.0.iam.delete_open_id_connect_provider();
        let call = call.open_id_connect_provider_arn(&current.id);
        call.send().await.or_gone("iam:DeleteOpenIDConnectProvider", &["NoSuchEntity"])
    }
}
