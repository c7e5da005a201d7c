//! JWT auth: `openbao_jwt_config` (`auth/<mount>/config`) and `openbao_jwt_role`
//! (`auth/<mount>/role/<name>`).
//!
//! Config attributes: `mount` (replace); `oidc_discovery_url`, `oidc_discovery_ca_pem`,
//! `jwt_validation_pubkeys` (PEM public keys, unordered), `bound_issuer` in place. Exactly one
//! of discovery URL or public keys is set. The config cannot be deleted on its own: deleting
//! it leaves it to the auth mount's removal.
//!
//! Role attributes: `mount`, `name` (replace); `role_type`, `bound_audiences` (unordered),
//! `user_claim`, `bound_subject`, `bound_claims`, `token_policies` (unordered), `token_ttl`,
//! `token_max_ttl` (seconds) in place.

use super::shared::{
    Shared, int, live, path_attr, prefer_desired_text, read_each, same_text, string, string_list,
};
use async_trait::async_trait;
use engine::{Address, Attrs, Context, Field, Kind, KindError, Live, ReadRequest};
use serde_json::{Map, Value as Json, json};
use std::sync::Arc;

pub(crate) struct JwtConfig(pub Arc<Shared>);
pub(crate) struct JwtRole(pub Arc<Shared>);

const CONFIG_FIELDS: &[Field] = &[
    Field::replace("mount"),
    Field::in_place("oidc_discovery_url"),
    Field::in_place("oidc_discovery_ca_pem"),
    Field::in_place("jwt_validation_pubkeys").unordered(),
    Field::in_place("bound_issuer"),
];

const CONFIG_SETTINGS: &[&str] =
    &["oidc_discovery_url", "oidc_discovery_ca_pem", "jwt_validation_pubkeys", "bound_issuer"];

const ROLE_FIELDS: &[Field] = &[
    Field::replace("mount"),
    Field::replace("name"),
    Field::in_place("role_type"),
    Field::in_place("bound_audiences").unordered(),
    Field::in_place("user_claim"),
    Field::in_place("bound_subject"),
    Field::in_place("bound_claims"),
    Field::in_place("token_policies").unordered(),
    Field::in_place("token_ttl"),
    Field::in_place("token_max_ttl"),
];

const ROLE_SETTINGS: &[&str] = &[
    "role_type",
    "bound_audiences",
    "user_claim",
    "bound_subject",
    "bound_claims",
    "token_policies",
    "token_ttl",
    "token_max_ttl",
];

fn settings(desired: &Attrs, names: &[&str]) -> Json {
    Json::Object(
        names.iter().filter_map(|k| desired.get(*k).map(|v| (k.to_string(), v.clone()))).collect(),
    )
}

/// Public keys as read, each replaced by the desired one when they differ only in whitespace.
fn keys_like_desired(live: Option<&Json>, desired: Option<&Json>) -> Json {
    let desired: Vec<&str> = desired
        .and_then(Json::as_array)
        .map(|a| a.iter().filter_map(Json::as_str).collect())
        .unwrap_or_default();
    let Json::Array(keys) = string_list(live) else {
        return Json::Array(vec![]);
    };
    Json::Array(
        keys.iter()
            .filter_map(Json::as_str)
            .map(|k| match desired.iter().find(|d| same_text(k, d)) {
                Some(d) => Json::from(*d),
                None => Json::from(k),
            })
            .collect(),
    )
}

impl JwtConfig {
    async fn read_mount(
        &self,
        mount: &str,
        desired: Option<&Attrs>,
    ) -> Result<Option<Live>, KindError> {
        let Some(client) = self.0.reader("GetJwtConfig").await? else {
            return Ok(None);
        };
        let Some(d) =
            self.0.read_data(&client, "GetJwtConfig", &format!("auth/{mount}/config")).await?
        else {
            return Ok(None);
        };
        let want = |name: &str| desired.and_then(|a| a.get(name));
        let ca = d.get("oidc_discovery_ca_pem").and_then(Json::as_str).unwrap_or_default();
        Ok(Some(live(
            mount,
            [
                ("mount", json!(mount)),
                ("oidc_discovery_url", string(d.get("oidc_discovery_url"))),
                (
                    "oidc_discovery_ca_pem",
                    prefer_desired_text(ca, want("oidc_discovery_ca_pem").and_then(Json::as_str)),
                ),
                (
                    "jwt_validation_pubkeys",
                    keys_like_desired(
                        d.get("jwt_validation_pubkeys"),
                        want("jwt_validation_pubkeys"),
                    ),
                ),
                ("bound_issuer", string(d.get("bound_issuer"))),
            ],
        )))
    }

    async fn write(&self, mount: &str, desired: &Attrs) -> Result<Live, KindError> {
        let client = self.0.client("PutJwtConfig").await?;
        client
            .write(
                "PutJwtConfig",
                &format!("auth/{mount}/config"),
                &settings(desired, CONFIG_SETTINGS),
            )
            .await?;
        self.read_mount(mount, Some(desired)).await?.ok_or_else(|| {
            KindError::retryable(format!("JWT config of `{mount}` not found after writing it"))
        })
    }
}

#[async_trait]
impl Kind for JwtConfig {
    fn name(&self) -> &'static str {
        "openbao_jwt_config"
    }

    fn fields(&self) -> &'static [Field] {
        CONFIG_FIELDS
    }

    async fn read(
        &self,
        _ctx: &Context,
        requests: &[ReadRequest],
    ) -> Result<Vec<Option<Live>>, KindError> {
        read_each(
            requests,
            |d| d.get("mount").and_then(Json::as_str).map(String::from),
            |mount, desired| async move { self.read_mount(&mount, desired.as_ref()).await },
        )
        .await
    }

    async fn create(
        &self,
        _ctx: &Context,
        _address: &Address,
        desired: &Attrs,
    ) -> Result<Live, KindError> {
        self.write(path_attr(desired, "mount")?, desired).await
    }

    async fn update(
        &self,
        _ctx: &Context,
        _address: &Address,
        current: &Live,
        desired: &Attrs,
    ) -> Result<Live, KindError> {
        self.write(path_attr(&current.attributes, "mount")?, desired).await
    }

    async fn delete(
        &self,
        _ctx: &Context,
        _address: &Address,
        _current: &Live,
    ) -> Result<(), KindError> {
        // OpenBao has no call to remove a JWT config; it goes with its auth mount.
        Ok(())
    }
}

fn role_id(d: &Attrs) -> Option<String> {
    Some(format!("{}/{}", d.get("mount")?.as_str()?, d.get("name")?.as_str()?))
}

fn split_id(id: &str) -> Result<(&str, &str), KindError> {
    id.rsplit_once('/').ok_or_else(|| KindError::new(format!("`{id}` is not `<mount>/<role>`")))
}

impl JwtRole {
    async fn read_id(&self, id: &str) -> Result<Option<Live>, KindError> {
        let (mount, name) = split_id(id)?;
        let Some(client) = self.0.reader("GetJwtRole").await? else {
            return Ok(None);
        };
        let Some(d) =
            self.0.read_data(&client, "GetJwtRole", &format!("auth/{mount}/role/{name}")).await?
        else {
            return Ok(None);
        };
        let claims = match d.get("bound_claims") {
            Some(Json::Object(m)) => Json::Object(m.clone()),
            _ => Json::Object(Map::new()),
        };
        Ok(Some(live(
            id,
            [
                ("mount", json!(mount)),
                ("name", json!(name)),
                ("role_type", string(d.get("role_type"))),
                ("bound_audiences", string_list(d.get("bound_audiences"))),
                ("user_claim", string(d.get("user_claim"))),
                ("bound_subject", string(d.get("bound_subject"))),
                ("bound_claims", claims),
                ("token_policies", string_list(d.get("token_policies"))),
                ("token_ttl", int(d.get("token_ttl"))),
                ("token_max_ttl", int(d.get("token_max_ttl"))),
            ],
        )))
    }

    async fn write(&self, id: &str, desired: &Attrs) -> Result<Live, KindError> {
        let (mount, name) = split_id(id)?;
        let client = self.0.client("PutJwtRole").await?;
        client
            .write(
                "PutJwtRole",
                &format!("auth/{mount}/role/{name}"),
                &settings(desired, ROLE_SETTINGS),
            )
            .await?;
        self.read_id(id).await?.ok_or_else(|| {
            KindError::retryable(format!("JWT role `{id}` not found after writing it"))
        })
    }
}

#[async_trait]
impl Kind for JwtRole {
    fn name(&self) -> &'static str {
        "openbao_jwt_role"
    }

    fn fields(&self) -> &'static [Field] {
        ROLE_FIELDS
    }

    async fn read(
        &self,
        _ctx: &Context,
        requests: &[ReadRequest],
    ) -> Result<Vec<Option<Live>>, KindError> {
        read_each(requests, role_id, |id, _| async move { self.read_id(&id).await }).await
    }

    async fn create(
        &self,
        _ctx: &Context,
        _address: &Address,
        desired: &Attrs,
    ) -> Result<Live, KindError> {
        let mount = path_attr(desired, "mount")?;
        let name = path_attr(desired, "name")?;
        self.write(&format!("{mount}/{name}"), desired).await
    }

    async fn update(
        &self,
        _ctx: &Context,
        _address: &Address,
        current: &Live,
        desired: &Attrs,
    ) -> Result<Live, KindError> {
        self.write(&current.id, desired).await
    }

    async fn delete(
        &self,
        _ctx: &Context,
        _address: &Address,
        current: &Live,
    ) -> Result<(), KindError> {
        let (mount, name) = split_id(&current.id)?;
        let client = self.0.client("DeleteJwtRole").await?;
        client.delete("DeleteJwtRole", &format!("auth/{mount}/role/{name}")).await?;
        Ok(())
    }
}
