//! `openbao_identity_group`: an external identity group (`identity/group/name/<name>`), its
//! policies, and the alias that maps an identity provider's group onto it (people who log in
//! through the OIDC mount with that group get the policies), as the reference's
//! `openbao-admin` group with alias `admin`.
//!
//! Attributes: `name` (replace); `policies` (unordered), `alias_name` and `alias_mount` (the
//! auth mount's path; empty: no alias) in place; `group_id` computed. The id is the name. A
//! write sets the group by name, then makes, moves or removes its alias (which OpenBao keys by
//! the mount's accessor). Deleting the group deletes its alias.

use crate::shared::{Shared, mount_table, path, read_each, strings, text};
use engine::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::{Value as Json, json};
use std::sync::Arc;

#[derive(Attributes, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct IdentityGroup {
    #[attr(replace)]
    pub name: String,
    #[attr(in_place, unordered)]
    #[serde(default)]
    pub policies: Vec<String>,
    #[attr(in_place)]
    #[serde(default)]
    pub alias_name: String,
    #[attr(in_place)]
    #[serde(default)]
    pub alias_mount: String,
    #[attr(computed)]
    #[serde(default)]
    pub group_id: String,
}

pub(crate) struct IdentityGroupKind(pub Arc<Shared>);

fn group_path(name: &str) -> String {
    format!("identity/group/name/{name}")
}

impl IdentityGroupKind {
    /// The group and the id of its alias (if it has one).
    async fn read_named(&self, name: &str) -> KindResult<Option<(Live<IdentityGroup>, String)>> {
        let Some(client) = self.0.reader("GetIdentityGroup").await? else {
            return Ok(None);
        };
        let Some(d) = self.0.read_data(&client, "GetIdentityGroup", &group_path(name)).await?
        else {
            return Ok(None);
        };
        let alias = d.get("alias").cloned().unwrap_or(Json::Null);
        let mount = text(alias.get("mount_path"));
        let group = IdentityGroup {
            name: name.to_string(),
            policies: strings(d.get("policies")),
            alias_name: text(alias.get("name")),
            alias_mount: mount.trim_start_matches("auth/").trim_end_matches('/').to_string(),
            group_id: text(d.get("id")),
        };
        Ok(Some((Live::new(name, group), text(alias.get("id")))))
    }

    async fn write(
        &self,
        ctx: &Context,
        desired: &IdentityGroup,
    ) -> KindResult<Live<IdentityGroup>> {
        let name = path("name", &desired.name)?;
        let client = self.0.client("PutIdentityGroup").await?;
        let body = json!({"type": "external", "policies": desired.policies});
        client.write("PutIdentityGroup", &group_path(name), &body).await?;
        let (group, alias_id) = self.read_named(name).await?.ok_or_else(|| {
            KindError::retryable(format!("identity group `{name}` not found after writing it"))
        })?;
        let current = &group.attributes;
        let same_alias =
            current.alias_name == desired.alias_name && current.alias_mount == desired.alias_mount;
        match (desired.alias_name.is_empty(), alias_id.is_empty()) {
            (true, true) => {}
            (true, false) => {
                let op = "DeleteIdentityGroupAlias";
                client.delete(op, &format!("identity/group-alias/id/{alias_id}")).await?;
            }
            (false, _) if same_alias => {}
            (false, _) => {
                let mount = path("alias_mount", &desired.alias_mount)?;
                let auth =
                    mount_table(&self.0, ctx, &client, "ListAuthMethods", "sys/auth").await?;
                let accessor =
                    auth.get(mount).and_then(|m| m.get("accessor")).and_then(Json::as_str);
                let accessor = accessor.ok_or_else(|| {
                    KindError::retryable(format!(
                        "no auth mount `{mount}` for the alias of `{name}`"
                    ))
                })?;
                let body = json!({
                    "name": desired.alias_name,
                    "mount_accessor": accessor,
                    "canonical_id": current.group_id,
                });
                let at = match alias_id.is_empty() {
                    true => "identity/group-alias".to_string(),
                    false => format!("identity/group-alias/id/{alias_id}"),
                };
                client.write("PutIdentityGroupAlias", &at, &body).await?;
            }
        }
        let found = self.read_named(name).await?.map(|(g, _)| g);
        found.ok_or_else(|| KindError::retryable(format!("identity group `{name}` not found")))
    }
}

impl TypedKind for IdentityGroupKind {
    type Attrs = IdentityGroup;
    const NAME: &'static str = "openbao_identity_group";

    async fn read(&self, _: &Context, requests: &Requests<Self>) -> Found<Self> {
        read_each(
            requests,
            |d| d.name.clone(),
            |name, _| async move { Ok(self.read_named(&name).await?.map(|(g, _)| g)) },
        )
        .await
    }

    async fn create(&self, ctx: &Context, desired: &Self::Attrs) -> Outcome<Self> {
        self.write(ctx, desired).await
    }

    async fn update(&self, ctx: &Context, update: Update<'_, Self>) -> Outcome<Self> {
        self.write(ctx, update.desired).await
    }

    async fn delete(&self, _: &Context, current: &LiveOf<Self>) -> KindResult<()> {
        let name = path("name", &current.attributes.name)?;
        let client = self.0.client("DeleteIdentityGroup").await?;
        client.delete("DeleteIdentityGroup", &group_path(name)).await?;
        Ok(())
    }
}
