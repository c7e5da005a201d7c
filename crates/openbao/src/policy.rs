//! `openbao_policy`: an ACL policy (`sys/policies/acl/<name>`).
//!
//! Attributes: `name` (replace) and `policy`, the HCL text (in place). Texts are compared
//! normalised ([`policy_text`]: comment lines, blank lines, indentation and trailing spaces do
//! not count), so a reformatted file is not a change; the text written is the desired one,
//! comments included.

use crate::shared::{Shared, path, read_each};
use engine::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::{Value as Json, json};
use std::sync::Arc;

#[derive(Attributes, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct Policy {
    #[attr(replace)]
    pub name: String,
    #[attr(in_place, normalize = policy_text)]
    pub policy: String,
}

pub(crate) struct PolicyKind(pub Arc<Shared>);

/// A policy text without what does not change its meaning: full-line comments (`#`, `//`),
/// blank lines, indentation and trailing whitespace.
pub fn normalize_policy(text: &str) -> String {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#') && !l.starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// [`normalize_policy`] as a field normaliser.
pub fn policy_text(value: &Json) -> Json {
    match value.as_str() {
        Some(text) => Json::String(normalize_policy(text)),
        None => value.clone(),
    }
}

fn acl(name: &str) -> String {
    format!("sys/policies/acl/{name}")
}

impl PolicyKind {
    async fn read_named(&self, name: &str) -> KindResult<Option<Live<Policy>>> {
        let Some(client) = self.0.reader("GetPolicy").await? else {
            return Ok(None);
        };
        let data = self.0.read_data(&client, "GetPolicy", &acl(name)).await?;
        Ok(data.map(|d| {
            let text = d.get("policy").and_then(Json::as_str).unwrap_or_default();
            Live::new(name, Policy { name: name.to_string(), policy: text.to_string() })
        }))
    }

    async fn write(&self, name: &str, text: &str) -> KindResult<Live<Policy>> {
        let name = path("name", name)?;
        let client = self.0.client("PutPolicy").await?;
        client.put("PutPolicy", &acl(name), &json!({ "policy": text })).await?;
        let found = self.read_named(name).await?;
        found
            .ok_or_else(|| KindError::retryable(format!("policy `{name}` not found after writing")))
    }
}

impl TypedKind for PolicyKind {
    type Attrs = Policy;
    const NAME: &'static str = "openbao_policy";

    async fn read(&self, _: &Context, requests: &Requests<Self>) -> Found<Self> {
        read_each(
            requests,
            |d| d.name.clone(),
            |name, _| async move { self.read_named(&name).await },
        )
        .await
    }

    async fn create(&self, _: &Context, desired: &Self::Attrs) -> Outcome<Self> {
        self.write(&desired.name, &desired.policy).await
    }

    async fn update(&self, _: &Context, update: Update<'_, Self>) -> Outcome<Self> {
        let Update { current, desired, .. } = update;
        self.write(&current.attributes.name, &desired.policy).await
    }

    async fn delete(&self, _: &Context, current: &LiveOf<Self>) -> KindResult<()> {
        let name = path("name", &current.attributes.name)?;
        let client = self.0.client("DeletePolicy").await?;
        client.delete("DeletePolicy", &acl(name)).await?;
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
        assert_eq!(normalize_policy(a), normalize_policy(b));
        assert_ne!(normalize_policy(a), normalize_policy(&a.replace("read", "list")));
        let live = Policy { name: "admin".into(), policy: b.into() };
        let same = Policy { name: "admin".into(), policy: a.into() };
        assert!(engine::testing::changed_fields(&live, &same).is_empty());
        let other = Policy { name: "admin".into(), policy: "x".into() };
        assert_eq!(engine::testing::changed_fields(&other, &same), [("policy", false)]);
    }
}
