//! What the Vault provider's (`hashicorp/vault`, which the reference drives OpenBao with)
//! resource instances in an OpenTofu state are in these kinds: secrets engines, auth methods and
//! policies. Recorded by `engine import --from-tofu`, they are the engine's from then on (a mount
//! the state records needs no marker to be taken over; its next apply adds the marker).

use engine::tofu_import::TofuResource;
use serde_json::{Map, Value as Json, json};

/// The engine's view of an instance of `resource_type`; `None` for a type with no kind here.
pub(crate) fn tofu_resources(resource_type: &str, id: &str, a: &Json) -> Option<Vec<TofuResource>> {
    let text = |name: &str| a.get(name).and_then(Json::as_str).unwrap_or_default().to_string();
    let resource = |kind: &str, id: String, attributes: Map<String, Json>| {
        Some(vec![TofuResource { kind: kind.into(), id, attributes, source: String::new() }])
    };
    let trimmed = |path: String| path.trim_matches('/').to_string();
    match resource_type {
        "vault_mount" => {
            let path = trimmed(text("path"));
            let mut f = Map::new();
            f.insert("path".into(), json!(path));
            // `kv-v2` is `kv` with version 2, as OpenBao's mount table (and the engine) says.
            let (kind, version) = match text("type").as_str() {
                "kv-v2" => ("kv".to_string(), Some("2")),
                other => (other.to_string(), None),
            };
            f.insert("type".into(), json!(kind));
            f.insert("description".into(), json!(text("description")));
            for (theirs, ours) in [
                ("default_lease_ttl_seconds", "default_lease_ttl"),
                ("max_lease_ttl_seconds", "max_lease_ttl"),
            ] {
                if let Some(seconds) = a.get(theirs).and_then(Json::as_i64) {
                    f.insert(ours.into(), json!(seconds));
                }
            }
            let mut options = match a.get("options") {
                Some(Json::Object(options)) => options.clone(),
                _ => Map::new(),
            };
            if let Some(version) = version {
                options.insert("version".into(), json!(version));
            }
            f.insert("options".into(), Json::Object(options));
            resource("openbao_mount", path, f)
        }
        "vault_auth_backend" => {
            let path = trimmed(if text("path").is_empty() { text("type") } else { text("path") });
            let mut f = Map::new();
            f.insert("path".into(), json!(path));
            f.insert("type".into(), json!(text("type")));
            f.insert("description".into(), json!(text("description")));
            resource("openbao_auth", path, f)
        }
        "vault_policy" => {
            let name = if text("name").is_empty() { id.to_string() } else { text("name") };
            let mut f = Map::new();
            f.insert("name".into(), json!(name));
            f.insert("policy".into(), json!(text("policy")));
            resource("openbao_policy", name, f)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mounts_auth_methods_and_policies_take_the_kinds_names() {
        let mount = json!({
            "id": "platform", "path": "platform", "type": "kv-v2", "description": "platform secrets",
            "default_lease_ttl_seconds": 0, "max_lease_ttl_seconds": 94670856,
            "options": {"version": "2"},
        });
        let m = &tofu_resources("vault_mount", "platform", &mount).unwrap()[0];
        assert_eq!((m.kind.as_str(), m.id.as_str()), ("openbao_mount", "platform"));
        assert_eq!(m.attributes["type"], "kv", "kv-v2 is kv version 2, as the mount table says");
        assert_eq!(m.attributes["max_lease_ttl"], 94670856);
        assert_eq!(m.attributes["options"], json!({"version": "2"}));
        let auth = json!({"id": "userpass", "type": "userpass", "path": "userpass"});
        let u = &tofu_resources("vault_auth_backend", "userpass", &auth).unwrap()[0];
        assert_eq!((u.kind.as_str(), u.id.as_str()), ("openbao_auth", "userpass"));
        let policy = json!({"id": "snapshot", "name": "snapshot", "policy": "path \"sys/storage/raft/snapshot\" {}"});
        let p = &tofu_resources("vault_policy", "snapshot", &policy).unwrap()[0];
        assert_eq!(
            (p.kind.as_str(), p.attributes["name"].as_str()),
            ("openbao_policy", Some("snapshot"))
        );
        assert!(tofu_resources("vault_generic_endpoint", "x", &json!({})).is_none());
    }
}
