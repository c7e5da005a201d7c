//! The identity of a Kubernetes object: what an engine resource or a release record points at.

use serde::{Deserialize, Serialize};
use serde_json::Value as Json;
use std::fmt;

/// `apiVersion`, `kind`, namespace (empty for cluster-scoped objects) and name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ObjectId {
    #[serde(rename = "apiVersion")]
    pub api_version: String,
    pub kind: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    pub name: String,
}

impl ObjectId {
    /// The identity a manifest declares. `None` when it lacks `apiVersion`, `kind` or a name.
    pub fn of(manifest: &Json) -> Option<ObjectId> {
        let text = |v: &Json| v.as_str().map(str::to_string);
        Some(ObjectId {
            api_version: text(manifest.get("apiVersion")?)?,
            kind: text(manifest.get("kind")?)?,
            namespace: manifest
                .pointer("/metadata/namespace")
                .and_then(Json::as_str)
                .unwrap_or_default()
                .to_string(),
            name: text(manifest.pointer("/metadata/name")?)?,
        })
    }

    /// The form kept in state: `apiVersion|kind|namespace|name`.
    pub fn key(&self) -> String {
        format!("{}|{}|{}|{}", self.api_version, self.kind, self.namespace, self.name)
    }

    /// Parses [`ObjectId::key`].
    pub fn parse_key(key: &str) -> Option<ObjectId> {
        let mut parts = key.split('|');
        let id = ObjectId {
            api_version: parts.next()?.to_string(),
            kind: parts.next()?.to_string(),
            namespace: parts.next()?.to_string(),
            name: parts.next()?.to_string(),
        };
        (parts.next().is_none() && !id.name.is_empty()).then_some(id)
    }

    /// The API group (empty for the core group).
    pub fn group(&self) -> &str {
        self.api_version.rsplit_once('/').map(|(g, _)| g).unwrap_or("")
    }
}

impl fmt::Display for ObjectId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let group = self.group();
        let kind =
            if group.is_empty() { self.kind.clone() } else { format!("{}.{group}", self.kind) };
        if self.namespace.is_empty() {
            write!(f, "{kind} {}", self.name)
        } else {
            write!(f, "{kind} {}/{}", self.namespace, self.name)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn key_round_trips_and_display_names_the_group() {
        let id = ObjectId::of(&json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "cilium-operator", "namespace": "kube-system"}
        }))
        .unwrap();
        assert_eq!(ObjectId::parse_key(&id.key()), Some(id.clone()));
        assert_eq!(id.to_string(), "Deployment.apps kube-system/cilium-operator");
        let ns = ObjectId::of(&json!({"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": "flux-system"}}))
        .unwrap();
        assert_eq!(ns.to_string(), "Namespace flux-system");
        assert_eq!(ObjectId::parse_key("v1|Namespace||"), None);
        assert_eq!(ObjectId::of(&json!({"kind": "Namespace"})), None);
    }
}
