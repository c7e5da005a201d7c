//! JWT and OIDC auth: `openbao_jwt_config` (`auth/<mount>/config`) and `openbao_jwt_role`
//! (`auth/<mount>/role/<name>`). The mount itself is an `openbao_auth` of type `jwt` (workloads'
//! tokens) or `oidc` (people's login through an identity provider: its client id and secret are
//! read from the secret store at each write, `credentials_secret`, and are neither attributes
//! nor drift).
//!
//! Config attributes: `mount` (replace); `oidc_discovery_url`, `oidc_discovery_ca_pem`,
//! `jwt_validation_pubkeys` (PEM public keys, unordered), `bound_issuer` in place; PEM texts are
//! compared without whitespace noise. Exactly one of discovery URL or public keys is set. The
//! config cannot be deleted on its own: deleting it leaves it to the auth mount's removal.
//!
//! Role attributes: `mount`, `name` (replace); `role_type`, `bound_audiences` (unordered),
//! `user_claim`, `bound_subject`, `bound_claims`, `token_policies` (unordered), `token_ttl`,
//! `token_max_ttl` (seconds) in place; written whole ([`crate::entry::EntryKind`]).

use crate::entry::Entry;
use crate::shared::{Shared, body, int, path, pem_list, read_each, strings, text};
use crate::stores::SecretRef;
use engine::normalize::text_lines;
use engine::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value as Json};
use std::sync::Arc;

#[derive(Attributes, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct JwtConfig {
    #[attr(replace)]
    pub mount: String,
    #[attr(in_place)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oidc_discovery_url: Option<String>,
    #[attr(in_place, normalize = text_lines)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oidc_discovery_ca_pem: Option<String>,
    #[attr(in_place, unordered, normalize = pem_list)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jwt_validation_pubkeys: Option<Vec<String>>,
    #[attr(in_place)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bound_issuer: Option<String>,
    #[attr(in_place)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_role: Option<String>,
    /// Where the OIDC client's id and secret are (`client_id`, `client_secret` of a JSON
    /// secret); read at each write.
    #[attr(setting)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials_secret: Option<String>,
}

#[derive(Attributes, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct JwtRole {
    #[attr(replace)]
    pub mount: String,
    #[attr(replace)]
    pub name: String,
    #[attr(in_place)]
    #[serde(default)]
    pub role_type: String,
    #[attr(in_place, unordered)]
    #[serde(default)]
    pub bound_audiences: Vec<String>,
    #[attr(in_place)]
    #[serde(default)]
    pub user_claim: String,
    #[attr(in_place)]
    #[serde(default)]
    pub bound_subject: String,
    #[attr(in_place)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bound_claims: Option<Map<String, Json>>,
    #[attr(in_place, unordered)]
    #[serde(default)]
    pub token_policies: Vec<String>,
    #[attr(in_place)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_ttl: Option<i64>,
    #[attr(in_place)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_max_ttl: Option<i64>,
    /// `service`, `batch` or a `default-*` (absent: OpenBao's default).
    #[attr(in_place)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_type: Option<String>,
    #[attr(in_place, unordered)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_redirect_uris: Option<Vec<String>>,
    #[attr(in_place)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub groups_claim: Option<String>,
    #[attr(in_place, unordered)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oidc_scopes: Option<Vec<String>>,
}

pub(crate) struct JwtConfigKind(pub Arc<Shared>);

impl JwtConfigKind {
    /// The OIDC client's id and secret, from the JSON secret `name` (`client_id`,
    /// `client_secret`). Errors name the secret and the field, never a value.
    async fn client_credentials(&self, name: &str) -> KindResult<(String, Secret)> {
        let field = |field: &str| SecretRef { name: name.to_string(), field: Some(field.into()) };
        let read = |r: SecretRef| async move {
            r.read(self.0.source.as_ref())
                .await
                .map_err(|e| KindError::new(format!("the OIDC client secret `{r}`: {}", e.0)))?
                .ok_or_else(|| {
                    KindError::new(format!(
                        "the OIDC client secret `{name}` is not in the secret store: register \
                         the client at the identity provider and store its `client_id` and \
                         `client_secret` there first"
                    ))
                })
        };
        let id = read(field("client_id")).await?;
        let secret = read(field("client_secret")).await?;
        Ok((id.expose().to_string(), secret))
    }

    async fn read_mount(&self, mount: &str) -> KindResult<Option<Live<JwtConfig>>> {
        let Some(client) = self.0.reader("GetJwtConfig").await? else {
            return Ok(None);
        };
        let config = format!("auth/{mount}/config");
        let Some(d) = self.0.read_data(&client, "GetJwtConfig", &config).await? else {
            return Ok(None);
        };
        let config = JwtConfig {
            mount: mount.to_string(),
            oidc_discovery_url: Some(text(d.get("oidc_discovery_url"))),
            oidc_discovery_ca_pem: Some(text(d.get("oidc_discovery_ca_pem"))),
            jwt_validation_pubkeys: Some(strings(d.get("jwt_validation_pubkeys"))),
            bound_issuer: Some(text(d.get("bound_issuer"))),
            default_role: Some(text(d.get("default_role"))),
            credentials_secret: None,
        };
        Ok(Some(Live::new(mount, config)))
    }

    async fn write(&self, mount: &str, desired: &JwtConfig) -> KindResult<Live<JwtConfig>> {
        let mount = path("mount", mount)?;
        let client = self.0.client("PutJwtConfig").await?;
        let mut settings = body(Self::NAME, desired, &["mount", "credentials_secret"])?;
        if let Some(secret) = &desired.credentials_secret {
            let (id, client_secret) = self.client_credentials(secret).await?;
            settings["oidc_client_id"] = Json::String(id);
            settings["oidc_client_secret"] = Json::String(client_secret.expose().to_string());
        }
        client.write("PutJwtConfig", &format!("auth/{mount}/config"), &settings).await?;
        let found = self.read_mount(mount).await?;
        found.ok_or_else(|| {
            KindError::retryable(format!("JWT config of `{mount}` not found after writing it"))
        })
    }
}

impl TypedKind for JwtConfigKind {
    type Attrs = JwtConfig;
    const NAME: &'static str = "openbao_jwt_config";

    async fn read(&self, _: &Context, requests: &Requests<Self>) -> Found<Self> {
        let id_of = |d: &JwtConfig| d.mount.clone();
        read_each(requests, id_of, |mount, _| async move { self.read_mount(&mount).await }).await
    }

    async fn create(&self, _: &Context, desired: &Self::Attrs) -> Outcome<Self> {
        self.write(&desired.mount, desired).await
    }

    async fn update(&self, _: &Context, update: Update<'_, Self>) -> Outcome<Self> {
        let Update { current, desired, .. } = update;
        self.write(&current.attributes.mount, desired).await
    }

    async fn delete(&self, _: &Context, _: &LiveOf<Self>) -> KindResult<()> {
        // OpenBao has no call to remove a JWT config; it goes with its auth mount.
        Ok(())
    }
}

impl Entry for JwtRole {
    const KIND: &'static str = "openbao_jwt_role";
    const OPS: [&'static str; 3] = ["GetJwtRole", "PutJwtRole", "DeleteJwtRole"];

    fn api_path(mount: &str, name: &str) -> String {
        format!("auth/{mount}/role/{name}")
    }

    fn mount(&self) -> &str {
        &self.mount
    }

    fn name(&self) -> &str {
        &self.name
    }

    fn from_answer(mount: &str, name: &str, d: &Json) -> JwtRole {
        let claims = match d.get("bound_claims") {
            Some(Json::Object(m)) => m.clone(),
            _ => Map::new(),
        };
        JwtRole {
            mount: mount.to_string(),
            name: name.to_string(),
            role_type: text(d.get("role_type")),
            bound_audiences: strings(d.get("bound_audiences")),
            user_claim: text(d.get("user_claim")),
            bound_subject: text(d.get("bound_subject")),
            bound_claims: Some(claims),
            token_policies: strings(d.get("token_policies")),
            token_ttl: Some(int(d.get("token_ttl"))),
            token_max_ttl: Some(int(d.get("token_max_ttl"))),
            token_type: Some(text(d.get("token_type"))),
            allowed_redirect_uris: Some(strings(d.get("allowed_redirect_uris"))),
            groups_claim: Some(text(d.get("groups_claim"))),
            oidc_scopes: Some(strings(d.get("oidc_scopes"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use engine::testing::changed_fields;

    #[test]
    fn pem_texts_compare_without_whitespace_noise() {
        let live = JwtConfig {
            mount: "jwt".into(),
            oidc_discovery_url: Some(String::new()),
            oidc_discovery_ca_pem: Some(String::new()),
            jwt_validation_pubkeys: Some(vec!["-----BEGIN KEY-----\nB\n-----END KEY-----".into()]),
            bound_issuer: Some("https://issuer".into()),
            default_role: None,
            credentials_secret: None,
        };
        let desired = JwtConfig {
            oidc_discovery_url: None,
            oidc_discovery_ca_pem: None,
            jwt_validation_pubkeys: Some(vec![
                "-----BEGIN KEY-----\r\nB\n-----END KEY-----\n".into(),
            ]),
            ..live.clone()
        };
        assert!(changed_fields(&live, &desired).is_empty());
        let other = JwtConfig { jwt_validation_pubkeys: Some(vec!["C".into()]), ..desired };
        assert_eq!(changed_fields(&live, &other), [("jwt_validation_pubkeys", false)]);
    }
}
