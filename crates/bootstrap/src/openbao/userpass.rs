//! `openbao_userpass_user`: a user of a userpass auth mount (`auth/<mount>/users/<name>`).
//!
//! Attributes: `mount`, `username` (replace); `token_policies` (unordered), `token_ttl`,
//! `token_max_ttl` (seconds) in place. Input only: `password_secret`, the name under which the
//! generated password is handed to the secret sink. The password is generated on create
//! (32 random bytes), stored in the sink *before* the user exists, and never appears in
//! attributes; it is not rotated by updates.

use super::random_secret;
use super::shared::{Shared, int, live, path_attr, read_each, str_attr, string_list};
use async_trait::async_trait;
use engine::{Address, Attrs, Context, Field, Kind, KindError, Live, ReadRequest};
use serde_json::{Value as Json, json};
use std::sync::Arc;

pub(crate) struct UserpassUser(pub Arc<Shared>);

const FIELDS: &[Field] = &[
    Field::replace("mount"),
    Field::replace("username"),
    Field::in_place("token_policies").unordered(),
    Field::in_place("token_ttl"),
    Field::in_place("token_max_ttl"),
];

const SETTINGS: &[&str] = &["token_policies", "token_ttl", "token_max_ttl"];

fn id_of(d: &Attrs) -> Option<String> {
    Some(format!("{}/{}", d.get("mount")?.as_str()?, d.get("username")?.as_str()?))
}

fn split_id(id: &str) -> Result<(&str, &str), KindError> {
    id.rsplit_once('/').ok_or_else(|| KindError::new(format!("`{id}` is not `<mount>/<username>`")))
}

fn settings(desired: &Attrs) -> Json {
    Json::Object(
        SETTINGS
            .iter()
            .filter_map(|k| desired.get(*k).map(|v| (k.to_string(), v.clone())))
            .collect(),
    )
}

impl UserpassUser {
    async fn read_id(&self, id: &str) -> Result<Option<Live>, KindError> {
        let (mount, user) = split_id(id)?;
        let Some(client) = self.0.reader("GetUserpassUser").await? else {
            return Ok(None);
        };
        let data = self
            .0
            .read_data(&client, "GetUserpassUser", &format!("auth/{mount}/users/{user}"))
            .await?;
        Ok(data.map(|d| {
            live(
                id,
                [
                    ("mount", json!(mount)),
                    ("username", json!(user)),
                    ("token_policies", string_list(d.get("token_policies"))),
                    ("token_ttl", int(d.get("token_ttl"))),
                    ("token_max_ttl", int(d.get("token_max_ttl"))),
                ],
            )
        }))
    }

    async fn read_back(&self, id: &str) -> Result<Live, KindError> {
        self.read_id(id)
            .await?
            .ok_or_else(|| KindError::retryable(format!("user `{id}` not found after writing it")))
    }
}

#[async_trait]
impl Kind for UserpassUser {
    fn name(&self) -> &'static str {
        "openbao_userpass_user"
    }

    fn fields(&self) -> &'static [Field] {
        FIELDS
    }

    async fn read(
        &self,
        _ctx: &Context,
        requests: &[ReadRequest],
    ) -> Result<Vec<Option<Live>>, KindError> {
        read_each(requests, id_of, |id, _| async move { self.read_id(&id).await }).await
    }

    async fn create(
        &self,
        _ctx: &Context,
        _address: &Address,
        desired: &Attrs,
    ) -> Result<Live, KindError> {
        let mount = path_attr(desired, "mount")?;
        let user = path_attr(desired, "username")?;
        let secret_name = str_attr(desired, "password_secret")?;
        let client = self.0.client("CreateUserpassUser").await?;
        let password = random_secret(32).map_err(KindError::new)?;
        // Stored first: a user whose password nobody knows would be useless.
        self.0
            .sink
            .put(secret_name, &password)
            .await
            .map_err(|e| KindError::retryable(format!("storing the password of `{user}`: {e}")))?;
        let mut body = settings(desired);
        body["password"] = Json::from(password.expose());
        client.write("CreateUserpassUser", &format!("auth/{mount}/users/{user}"), &body).await?;
        self.read_back(&format!("{mount}/{user}")).await
    }

    async fn update(
        &self,
        _ctx: &Context,
        _address: &Address,
        current: &Live,
        desired: &Attrs,
    ) -> Result<Live, KindError> {
        let (mount, user) = split_id(&current.id)?;
        let client = self.0.client("UpdateUserpassUser").await?;
        // Without `password`, OpenBao keeps the current one.
        client
            .write("UpdateUserpassUser", &format!("auth/{mount}/users/{user}"), &settings(desired))
            .await?;
        self.read_back(&current.id).await
    }

    async fn delete(
        &self,
        _ctx: &Context,
        _address: &Address,
        current: &Live,
    ) -> Result<(), KindError> {
        let (mount, user) = split_id(&current.id)?;
        let client = self.0.client("DeleteUserpassUser").await?;
        client.delete("DeleteUserpassUser", &format!("auth/{mount}/users/{user}")).await?;
        Ok(())
    }
}
