//! `openbao_policy`: an ACL policy (`sys/policies/acl/<name>`).
//!
//! Attributes: `name` (replace) and `policy`, the HCL text (in place). Texts are compared
//! normalised ([`normalize`]: comment lines, blank lines, indentation and trailing spaces do not
//! count), so a reformatted file is not a change; the text written is the desired one, comments
//! included.

use super::shared::{Shared, live, path_attr, str_attr, wanted_id};
use async_trait::async_trait;
use engine::{Address, Attrs, Context, Field, Kind, KindError, Live, ReadRequest};
use serde_json::{Value as Json, json};
use std::sync::Arc;

pub(crate) struct Policy(pub Arc<Shared>);

const FIELDS: &[Field] = &[Field::replace("name"), Field::in_place("policy")];

/// A policy text without what does not change its meaning: full-line comments (`#`, `//`),
/// blank lines, indentation and trailing whitespace.
pub fn normalize(text: &str) -> String {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#') && !l.starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn policy_live(name: &str, text: &str, desired: Option<&str>) -> Live {
    // Same meaning as desired: report the desired text so the planner sees no change.
    let shown = match desired {
        Some(d) if normalize(d) == normalize(text) => d,
        _ => text,
    };
    live(name, [("name", json!(name)), ("policy", json!(shown))])
}

impl Policy {
    async fn read_named(
        &self,
        name: &str,
        desired: Option<&str>,
    ) -> Result<Option<Live>, KindError> {
        let Some(client) = self.0.reader("GetPolicy").await? else {
            return Ok(None);
        };
        let data =
            self.0.read_data(&client, "GetPolicy", &format!("sys/policies/acl/{name}")).await?;
        Ok(data.map(|d| {
            let text = d.get("policy").and_then(Json::as_str).unwrap_or_default();
            policy_live(name, text, desired)
        }))
    }

    async fn write(&self, name: &str, text: &str) -> Result<Live, KindError> {
        let client = self.0.client("PutPolicy").await?;
        client
            .put("PutPolicy", &format!("sys/policies/acl/{name}"), &json!({ "policy": text }))
            .await?;
        self.read_named(name, Some(text)).await?.ok_or_else(|| {
            KindError::retryable(format!("policy `{name}` not found after writing it"))
        })
    }
}

#[async_trait]
impl Kind for Policy {
    fn name(&self) -> &'static str {
        "openbao_policy"
    }

    fn fields(&self) -> &'static [Field] {
        FIELDS
    }

    async fn read(
        &self,
        _ctx: &Context,
        requests: &[ReadRequest],
    ) -> Result<Vec<Option<Live>>, KindError> {
        let reads = requests.iter().map(|r| async move {
            let Some(name) =
                wanted_id(r, |d| d.get("name").and_then(Json::as_str).map(String::from))
            else {
                return Ok(None);
            };
            let desired = r.desired.as_ref().and_then(|d| d.get("policy")).and_then(Json::as_str);
            self.read_named(&name, desired).await
        });
        futures::future::join_all(reads).await.into_iter().collect()
    }

    async fn create(
        &self,
        _ctx: &Context,
        _address: &Address,
        desired: &Attrs,
    ) -> Result<Live, KindError> {
        self.write(path_attr(desired, "name")?, str_attr(desired, "policy")?).await
    }

    async fn update(
        &self,
        _ctx: &Context,
        _address: &Address,
        current: &Live,
        desired: &Attrs,
    ) -> Result<Live, KindError> {
        self.write(path_attr(&current.attributes, "name")?, str_attr(desired, "policy")?).await
    }

    async fn delete(
        &self,
        _ctx: &Context,
        _address: &Address,
        current: &Live,
    ) -> Result<(), KindError> {
        let name = path_attr(&current.attributes, "name")?;
        let client = self.0.client("DeletePolicy").await?;
        client.delete("DeletePolicy", &format!("sys/policies/acl/{name}")).await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalisation_ignores_layout_and_comments() {
        let a = "# admin\npath \"sys/*\" {\n  capabilities = [\"read\"]\n}\n";
        let b = "path \"sys/*\" {\r\n    capabilities = [\"read\"]   \r\n\r\n}";
        assert_eq!(normalize(a), normalize(b));
        assert_ne!(normalize(a), normalize(&a.replace("read", "list")));
        let l = policy_live("admin", b, Some(a));
        assert_eq!(l.attributes["policy"], json!(a));
        let l = policy_live("admin", "x", Some(a));
        assert_eq!(l.attributes["policy"], json!("x"));
    }
}
