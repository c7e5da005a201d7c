//! `openbao_userpass_user`: a user of a userpass auth mount (`auth/<mount>/users/<name>`).
//!
//! Attributes: `mount`, `username` (replace); `token_policies` (unordered), `token_ttl`,
//! `token_max_ttl` (seconds) in place. Setting: `password_secret`, the name under which the
//! generated password is handed to the secret sink. The password is generated on create
//! (32 random bytes), stored in the sink *before* the user exists, and never appears in
//! attributes; it is not rotated by updates.

use crate::random_secret;
use crate::shared::{Shared, body, int, path, read_each, split_id, strings};
use engine::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;
use std::sync::Arc;

#[derive(Attributes, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct UserpassUser {
    #[attr(replace)]
    pub mount: String,
    #[attr(replace)]
    pub username: String,
    #[attr(in_place, unordered)]
    #[serde(default)]
    pub token_policies: Vec<String>,
    #[attr(in_place)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_ttl: Option<i64>,
    #[attr(in_place)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_max_ttl: Option<i64>,
    /// Where the generated password goes (input only).
    #[attr(setting)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password_secret: Option<String>,
}

pub(crate) struct UserpassUserKind(pub Arc<Shared>);

/// What a write sends besides the password: the token settings the spec sets.
fn settings(desired: &UserpassUser) -> KindResult<Json> {
    body(UserpassUserKind::NAME, desired, &["mount", "username", "password_secret"])
}

fn users(mount: &str, user: &str) -> String {
    format!("auth/{mount}/users/{user}")
}

impl UserpassUserKind {
    async fn read_id(&self, id: &str) -> KindResult<Option<Live<UserpassUser>>> {
        let (mount, user) = split_id(id, "username")?;
        let Some(client) = self.0.reader("GetUserpassUser").await? else {
            return Ok(None);
        };
        let data = self.0.read_data(&client, "GetUserpassUser", &users(mount, user)).await?;
        Ok(data.map(|d| {
            let user = UserpassUser {
                mount: mount.to_string(),
                username: user.to_string(),
                token_policies: strings(d.get("token_policies")),
                token_ttl: Some(int(d.get("token_ttl"))),
                token_max_ttl: Some(int(d.get("token_max_ttl"))),
                password_secret: None,
            };
            Live::new(id, user)
        }))
    }

    async fn read_back(&self, id: &str) -> KindResult<Live<UserpassUser>> {
        let found = self.read_id(id).await?;
        found.ok_or_else(|| KindError::retryable(format!("user `{id}` not found after writing it")))
    }
}

impl TypedKind for UserpassUserKind {
    type Attrs = UserpassUser;
    const NAME: &'static str = "openbao_userpass_user";

    async fn read(&self, _: &Context, requests: &Requests<Self>) -> Found<Self> {
        let id_of = |d: &UserpassUser| format!("{}/{}", d.mount, d.username);
        read_each(requests, id_of, |id, _| async move { self.read_id(&id).await }).await
    }

    async fn create(&self, _: &Context, desired: &Self::Attrs) -> Outcome<Self> {
        let mount = path("mount", &desired.mount)?;
        let user = path("username", &desired.username)?;
        let secret_name = desired.password_secret.as_deref();
        let secret_name = secret_name
            .ok_or_else(|| KindError::new(format!("{}: no `password_secret`", Self::NAME)))?;
        let client = self.0.client("CreateUserpassUser").await?;
        let password = random_secret(32).map_err(KindError::new)?;
        // Stored first: a user whose password nobody knows would be useless.
        let stored = self.0.sink.put(secret_name, &password).await;
        stored
            .map_err(|e| KindError::retryable(format!("storing the password of `{user}`: {e}")))?;
        let mut body = settings(desired)?;
        body["password"] = Json::from(password.expose());
        client.write("CreateUserpassUser", &users(mount, user), &body).await?;
        self.read_back(&format!("{mount}/{user}")).await
    }

    async fn update(&self, _: &Context, update: Update<'_, Self>) -> Outcome<Self> {
        let Update { current, desired, .. } = update;
        let (mount, user) = split_id(&current.id, "username")?;
        let client = self.0.client("UpdateUserpassUser").await?;
        // Without `password`, OpenBao keeps the current one.
        client.write("UpdateUserpassUser", &users(mount, user), &settings(desired)?).await?;
        self.read_back(&current.id).await
    }

    async fn delete(&self, _: &Context, current: &LiveOf<Self>) -> KindResult<()> {
        let (mount, user) = split_id(&current.id, "username")?;
        let client = self.0.client("DeleteUserpassUser").await?;
        client.delete("DeleteUserpassUser", &users(mount, user)).await?;
        Ok(())
    }
}
