//! The PKI secrets engine: `openbao_pki_intermediate` (the imported intermediate CA, the mount's
//! default issuer) and `openbao_pki_role` (`<mount>/roles/<name>`).
//!
//! Intermediate attributes: `mount` (replace); `certificate` (the intermediate's public PEM,
//! optional in the spec) and `issuer_name` in place; `issuer_id`, `key_id` computed. Input
//! only: `bundle_secret`, the name of the PEM bundle (certificate, key, root) in the secret
//! source; the key goes from there to OpenBao and nowhere else. Create and update import the
//! bundle (`issuers/import/bundle`), make the intermediate the default issuer and name it.
//! One call per read: `GET <mount>/issuer/default`.
//!
//! Role attributes: `mount`, `name` (replace); the issuance settings in place (see
//! [`ROLE_SETTINGS`]). A write sends the whole desired role: OpenBao resets what is omitted.

use super::shared::{
    Shared, boolean, int, live, path_attr, prefer_desired_text, read_each, same_text, str_attr,
    string, string_list,
};
use async_trait::async_trait;
use engine::{Address, Attrs, Context, Field, Kind, KindError, Live, ReadRequest};
use serde_json::{Value as Json, json};
use std::sync::Arc;

pub(crate) struct PkiIntermediate(pub Arc<Shared>);
pub(crate) struct PkiRole(pub Arc<Shared>);

const INTERMEDIATE_FIELDS: &[Field] = &[
    Field::replace("mount"),
    Field::in_place("certificate"),
    Field::in_place("issuer_name"),
    Field::computed("issuer_id"),
    Field::computed("key_id"),
];

fn issuer_live(mount: &str, d: &Json, desired: Option<&Attrs>) -> Live {
    let cert = d.get("certificate").and_then(Json::as_str).unwrap_or_default();
    let want_cert = desired.and_then(|a| a.get("certificate")).and_then(Json::as_str);
    live(
        mount,
        [
            ("mount", json!(mount)),
            ("certificate", prefer_desired_text(cert, want_cert)),
            ("issuer_name", string(d.get("issuer_name"))),
            ("issuer_id", string(d.get("issuer_id"))),
            ("key_id", string(d.get("key_id"))),
        ],
    )
}

impl PkiIntermediate {
    async fn read_mount(
        &self,
        mount: &str,
        desired: Option<&Attrs>,
    ) -> Result<Option<Live>, KindError> {
        let Some(client) = self.0.reader("GetDefaultIssuer").await? else {
            return Ok(None);
        };
        let data =
            match client.read_data("GetDefaultIssuer", &format!("{mount}/issuer/default")).await {
                Ok(d) => d,
                Err(e) if e.status() == Some(503) => {
                    // Sealed, or not initialised yet: let the shared read decide.
                    return Ok(self
                        .0
                        .read_data(&client, "GetDefaultIssuer", &format!("{mount}/issuer/default"))
                        .await?
                        .map(|d| issuer_live(mount, &d, desired)));
                }
                // No default issuer yet: OpenBao answers an error instead of 404. Confirm with the
                // issuer configuration before calling it absent.
                Err(e) if matches!(e.status(), Some(400 | 500)) => {
                    let config = self
                        .0
                        .read_data(&client, "GetIssuersConfig", &format!("{mount}/config/issuers"))
                        .await?;
                    let default = config
                        .as_ref()
                        .and_then(|c| c.get("default"))
                        .and_then(Json::as_str)
                        .unwrap_or_default();
                    if default.is_empty() {
                        return Ok(None);
                    }
                    return Err(e.into());
                }
                Err(e) => return Err(e.into()),
            };
        Ok(data.map(|d| issuer_live(mount, &d, desired)))
    }

    /// Imports the bundle and makes its intermediate the named default issuer.
    async fn import(&self, mount: &str, desired: &Attrs) -> Result<Live, KindError> {
        let secret_name = str_attr(desired, "bundle_secret")?;
        let bundle = self
            .0
            .source
            .get(secret_name)
            .await
            .map_err(|e| KindError::retryable(format!("reading `{secret_name}`: {e}")))?
            .ok_or_else(|| {
                KindError::new(format!("the CA bundle `{secret_name}` is not in the secret store"))
            })?;
        let parsed = crate::pki::IntermediateBundle::from_bundle_pem(&bundle)
            .map_err(|e| KindError::new(format!("the CA bundle `{secret_name}`: {e}")))?;
        if let Some(want) = desired.get("certificate").and_then(Json::as_str)
            && !same_text(want, &parsed.cert_pem)
        {
            return Err(KindError::new(format!(
                "the CA bundle `{secret_name}` holds another certificate than the spec's"
            )));
        }
        let client = self.0.client("ImportIssuerBundle").await?;
        let resp = client
            .write(
                "ImportIssuerBundle",
                &format!("{mount}/issuers/import/bundle"),
                &json!({ "pem_bundle": bundle.expose() }),
            )
            .await?
            .unwrap_or_default();
        // The intermediate is the imported issuer that has a key; if the bundle was imported
        // before, find it among the existing issuers by its certificate.
        let mapping = resp.pointer("/data/mapping").and_then(Json::as_object);
        let mut issuer_id = mapping.and_then(|m| {
            m.iter()
                .find(|(_, key)| key.as_str().is_some_and(|k| !k.is_empty()))
                .map(|(issuer, _)| issuer.clone())
        });
        if issuer_id.is_none() {
            for id in client.list("ListIssuers", &format!("{mount}/issuers")).await? {
                let issuer = self
                    .0
                    .read_data(&client, "GetIssuer", &format!("{mount}/issuer/{id}"))
                    .await?
                    .unwrap_or_default();
                let cert = issuer.get("certificate").and_then(Json::as_str).unwrap_or_default();
                if same_text(cert, &parsed.cert_pem) {
                    issuer_id = Some(id);
                    break;
                }
            }
        }
        let issuer_id = issuer_id.ok_or_else(|| {
            KindError::new(format!("no issuer with a key was imported into `{mount}`"))
        })?;
        client
            .write(
                "SetDefaultIssuer",
                &format!("{mount}/config/issuers"),
                &json!({ "default": issuer_id }),
            )
            .await?;
        if let Some(name) = desired.get("issuer_name").and_then(Json::as_str) {
            client
                .patch(
                    "NameIssuer",
                    &format!("{mount}/issuer/{issuer_id}"),
                    &json!({ "issuer_name": name }),
                )
                .await?;
        }
        self.read_mount(mount, Some(desired)).await?.ok_or_else(|| {
            KindError::retryable(format!("no default issuer in `{mount}` after import"))
        })
    }
}

#[async_trait]
impl Kind for PkiIntermediate {
    fn name(&self) -> &'static str {
        "openbao_pki_intermediate"
    }

    fn fields(&self) -> &'static [Field] {
        INTERMEDIATE_FIELDS
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
        self.import(path_attr(desired, "mount")?, desired).await
    }

    async fn update(
        &self,
        _ctx: &Context,
        _address: &Address,
        current: &Live,
        desired: &Attrs,
    ) -> Result<Live, KindError> {
        let mount = path_attr(&current.attributes, "mount")?;
        let cert_changed = desired
            .get("certificate")
            .is_some_and(|c| Some(c) != current.attributes.get("certificate"));
        if cert_changed {
            return self.import(mount, desired).await;
        }
        if let Some(name) = desired.get("issuer_name").and_then(Json::as_str) {
            let issuer_id = str_attr(&current.attributes, "issuer_id")?;
            let client = self.0.client("NameIssuer").await?;
            client
                .patch(
                    "NameIssuer",
                    &format!("{mount}/issuer/{issuer_id}"),
                    &json!({ "issuer_name": name }),
                )
                .await?;
        }
        self.read_mount(mount, Some(desired))
            .await?
            .ok_or_else(|| KindError::retryable(format!("no default issuer in `{mount}`")))
    }

    async fn delete(
        &self,
        _ctx: &Context,
        _address: &Address,
        current: &Live,
    ) -> Result<(), KindError> {
        let mount = path_attr(&current.attributes, "mount")?;
        let issuer_id = str_attr(&current.attributes, "issuer_id")?;
        let client = self.0.client("DeleteIssuer").await?;
        client.delete("DeleteIssuer", &format!("{mount}/issuer/{issuer_id}")).await?;
        Ok(())
    }
}

const ROLE_FIELDS: &[Field] = &[
    Field::replace("mount"),
    Field::replace("name"),
    Field::in_place("issuer_ref"),
    Field::in_place("allowed_domains").unordered(),
    Field::in_place("allow_subdomains"),
    Field::in_place("allow_bare_domains"),
    Field::in_place("allow_glob_domains"),
    Field::in_place("allow_any_name"),
    Field::in_place("allow_localhost"),
    Field::in_place("allow_ip_sans"),
    Field::in_place("enforce_hostnames"),
    Field::in_place("server_flag"),
    Field::in_place("client_flag"),
    Field::in_place("key_type"),
    Field::in_place("key_bits"),
    Field::in_place("ttl"),
    Field::in_place("max_ttl"),
];

/// The role settings the kind manages (everything but `mount` and `name`).
pub const ROLE_SETTINGS: &[&str] = &[
    "issuer_ref",
    "allowed_domains",
    "allow_subdomains",
    "allow_bare_domains",
    "allow_glob_domains",
    "allow_any_name",
    "allow_localhost",
    "allow_ip_sans",
    "enforce_hostnames",
    "server_flag",
    "client_flag",
    "key_type",
    "key_bits",
    "ttl",
    "max_ttl",
];

fn role_id(d: &Attrs) -> Option<String> {
    Some(format!("{}/{}", d.get("mount")?.as_str()?, d.get("name")?.as_str()?))
}

fn split_id(id: &str) -> Result<(&str, &str), KindError> {
    id.rsplit_once('/').ok_or_else(|| KindError::new(format!("`{id}` is not `<mount>/<role>`")))
}

impl PkiRole {
    async fn read_id(&self, id: &str) -> Result<Option<Live>, KindError> {
        let (mount, name) = split_id(id)?;
        let Some(client) = self.0.reader("GetPkiRole").await? else {
            return Ok(None);
        };
        let Some(d) =
            self.0.read_data(&client, "GetPkiRole", &format!("{mount}/roles/{name}")).await?
        else {
            return Ok(None);
        };
        let mut attrs = vec![("mount", json!(mount)), ("name", json!(name))];
        for &setting in ROLE_SETTINGS {
            let v = d.get(setting);
            let value = match setting {
                "allowed_domains" => string_list(v),
                "issuer_ref" | "key_type" => string(v),
                "key_bits" | "ttl" | "max_ttl" => int(v),
                _ => boolean(v),
            };
            attrs.push((setting, value));
        }
        Ok(Some(live(id, attrs)))
    }

    async fn write(&self, id: &str, desired: &Attrs) -> Result<Live, KindError> {
        let (mount, name) = split_id(id)?;
        let body = Json::Object(
            ROLE_SETTINGS
                .iter()
                .filter_map(|k| desired.get(*k).map(|v| (k.to_string(), v.clone())))
                .collect(),
        );
        let client = self.0.client("PutPkiRole").await?;
        client.write("PutPkiRole", &format!("{mount}/roles/{name}"), &body).await?;
        self.read_id(id).await?.ok_or_else(|| {
            KindError::retryable(format!("PKI role `{id}` not found after writing it"))
        })
    }
}

#[async_trait]
impl Kind for PkiRole {
    fn name(&self) -> &'static str {
        "openbao_pki_role"
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
        let client = self.0.client("DeletePkiRole").await?;
        client.delete("DeletePkiRole", &format!("{mount}/roles/{name}")).await?;
        Ok(())
    }
}
