//! `aws_iam_openid_connect_provider`: the IAM identity provider of the cluster's OIDC issuer.
//! Its ARN is derived from the issuer URL, so a provider made by a run that died is found in
//! the account's list and adopted when it carries the address tag.

use crate::AwsClients;
use crate::error::{api_error, has_code};
use crate::lookup_json::{live, ours_by_name, str_attr};
use async_trait::async_trait;
use aws_sdk_iam::types::Tag;
use engine::{Address, Attrs, Context, Field, Kind, KindError, Live, ReadRequest};
use serde_json::{Value as Json, json};
use std::sync::Arc;

pub(crate) struct OidcProvider(pub Arc<AwsClients>);

const FIELDS: &[Field] = &[
    Field::replace("url"),
    Field::in_place("client_ids").unordered(),
    Field::in_place("thumbprints").unordered(),
    Field::in_place("tags"),
    Field::computed("id"),
    Field::computed("arn"),
];

/// The issuer URL without its scheme: how IAM names the provider.
fn bare(url: &str) -> &str {
    url.strip_prefix("https://").unwrap_or(url)
}

fn strings(attrs: &Attrs, name: &str) -> Vec<String> {
    attrs
        .get(name)
        .and_then(Json::as_array)
        .map(|a| a.iter().filter_map(Json::as_str).map(str::to_string).collect())
        .unwrap_or_default()
}

fn iam_tags(attrs: &Attrs) -> Result<Vec<Tag>, KindError> {
    crate::tags::from_attrs(attrs)
        .into_iter()
        .map(|(k, v)| {
            Tag::builder().key(k).value(v).build().map_err(|e| KindError::new(e.to_string()))
        })
        .collect()
}

impl OidcProvider {
    fn iam(&self) -> Result<&aws_sdk_iam::Client, KindError> {
        Ok(&self.0.iam)
    }

    async fn read_one(&self, arn: &str) -> Result<Option<Live>, KindError> {
        let out = match self
            .iam()?
            .get_open_id_connect_provider()
            .open_id_connect_provider_arn(arn)
            .send()
            .await
        {
            Ok(out) => out,
            Err(e) if has_code(&e, "NoSuchEntity") => return Ok(None),
            Err(e) => return Err(api_error("iam:GetOpenIDConnectProvider", e)),
        };
        let mut clients = out.client_id_list().to_vec();
        clients.sort();
        let mut thumbprints = out.thumbprint_list().to_vec();
        thumbprints.sort();
        Ok(Some(live(
            arn,
            [
                ("url", json!(format!("https://{}", bare(out.url().unwrap_or_default())))),
                ("client_ids", json!(clients)),
                ("thumbprints", json!(thumbprints)),
                ("tags", crate::tags::to_json(out.tags().iter().map(|t| (t.key(), t.value())))),
                ("arn", json!(arn)),
            ],
        )))
    }

    /// Every provider ARN of the account, listed once per run.
    async fn list(&self, ctx: &Context) -> Result<Arc<Vec<String>>, KindError> {
        ctx.memo("iam:oidc-providers", || async {
            let out = self
                .iam()?
                .list_open_id_connect_providers()
                .send()
                .await
                .map_err(|e| api_error("iam:ListOpenIDConnectProviders", e))?;
            Ok(out
                .open_id_connect_provider_list()
                .iter()
                .filter_map(|p| p.arn().map(str::to_string))
                .collect())
        })
        .await
    }
}

#[async_trait]
impl Kind for OidcProvider {
    fn name(&self) -> &'static str {
        "aws_iam_openid_connect_provider"
    }

    fn fields(&self) -> &'static [Field] {
        FIELDS
    }

    async fn read(
        &self,
        ctx: &Context,
        requests: &[ReadRequest],
    ) -> Result<Vec<Option<Live>>, KindError> {
        let mut out = Vec::new();
        for r in requests {
            let found = match (&r.id, r.desired.as_ref().and_then(|d| d.get("url"))) {
                (Some(arn), _) => self.read_one(arn).await?,
                (None, Some(Json::String(url))) => {
                    let suffix = format!(":oidc-provider/{}", bare(url));
                    match self.list(ctx).await?.iter().find(|a| a.ends_with(&suffix)) {
                        Some(arn) => self.read_one(arn).await?,
                        None => None,
                    }
                }
                _ => None,
            };
            out.push(ours_by_name(r, found));
        }
        Ok(out)
    }

    async fn create(
        &self,
        ctx: &Context,
        _address: &Address,
        desired: &Attrs,
    ) -> Result<Live, KindError> {
        let url = str_attr(desired, "url")?;
        let thumbprints = strings(desired, "thumbprints");
        let out = self
            .iam()?
            .create_open_id_connect_provider()
            .url(url)
            .set_client_id_list(Some(strings(desired, "client_ids")))
            .set_thumbprint_list((!thumbprints.is_empty()).then_some(thumbprints))
            .set_tags(Some(iam_tags(desired)?))
            .send()
            .await
            .map_err(|e| api_error("iam:CreateOpenIDConnectProvider", e))?;
        ctx.forget("iam:oidc-providers");
        let arn = out
            .open_id_connect_provider_arn()
            .ok_or_else(|| KindError::new("iam:CreateOpenIDConnectProvider returned no ARN"))?
            .to_string();
        crate::settle::read_back(&format!("OIDC provider {arn}"), || self.read_one(&arn)).await
    }

    async fn update(
        &self,
        _ctx: &Context,
        _address: &Address,
        current: &Live,
        desired: &Attrs,
    ) -> Result<Live, KindError> {
        let iam = self.iam()?;
        let arn = current.id.as_str();
        let have = &current.attributes;
        let mut want_thumbs = strings(desired, "thumbprints");
        want_thumbs.sort();
        if strings(have, "thumbprints") != want_thumbs {
            iam.update_open_id_connect_provider_thumbprint()
                .open_id_connect_provider_arn(arn)
                .set_thumbprint_list(Some(want_thumbs))
                .send()
                .await
                .map_err(|e| api_error("iam:UpdateOpenIDConnectProviderThumbprint", e))?;
        }
        let (have_ids, want_ids) = (strings(have, "client_ids"), strings(desired, "client_ids"));
        for id in want_ids.iter().filter(|i| !have_ids.contains(i)) {
            iam.add_client_id_to_open_id_connect_provider()
                .open_id_connect_provider_arn(arn)
                .client_id(id)
                .send()
                .await
                .map_err(|e| api_error("iam:AddClientIDToOpenIDConnectProvider", e))?;
        }
        for id in have_ids.iter().filter(|i| !want_ids.contains(i)) {
            iam.remove_client_id_from_open_id_connect_provider()
                .open_id_connect_provider_arn(arn)
                .client_id(id)
                .send()
                .await
                .map_err(|e| api_error("iam:RemoveClientIDFromOpenIDConnectProvider", e))?;
        }
        let (have_tags, want_tags) =
            (crate::tags::from_attrs(have), crate::tags::from_attrs(desired));
        let remove: Vec<String> =
            have_tags.keys().filter(|k| !want_tags.contains_key(*k)).cloned().collect();
        if !remove.is_empty() {
            iam.untag_open_id_connect_provider()
                .open_id_connect_provider_arn(arn)
                .set_tag_keys(Some(remove))
                .send()
                .await
                .map_err(|e| api_error("iam:UntagOpenIDConnectProvider", e))?;
        }
        if want_tags.iter().any(|(k, v)| have_tags.get(k) != Some(v)) {
            iam.tag_open_id_connect_provider()
                .open_id_connect_provider_arn(arn)
                .set_tags(Some(iam_tags(desired)?))
                .send()
                .await
                .map_err(|e| api_error("iam:TagOpenIDConnectProvider", e))?;
        }
        self.read_one(arn)
            .await?
            .ok_or_else(|| KindError::new(format!("OIDC provider {arn} vanished")))
    }

    async fn delete(
        &self,
        ctx: &Context,
        _address: &Address,
        current: &Live,
    ) -> Result<(), KindError> {
        ctx.forget("iam:oidc-providers");
        crate::error::deleted(
            "iam:DeleteOpenIDConnectProvider",
            self.iam()?
                .delete_open_id_connect_provider()
                .open_id_connect_provider_arn(&current.id)
                .send()
                .await,
            &["NoSuchEntity"],
        )
    }
}
