//! Comparing what the engine applies with what the API server holds.
//!
//! The server adds defaults, status and other managers' fields to every object, so an object is
//! compared only on the fields the engine sets: the live object is *projected* onto the shape of
//! the desired manifest. Equal projection means a server-side apply would change nothing, so a
//! no-op plan sends no write.

use super::object_id::ObjectId;
use base64::Engine as _;
use engine::normalize::quantity_millis;
use serde_json::{Map, Value as Json};

/// The manifest as the server will hold it: `status` dropped (applies do not set it), Secret
/// `stringData` folded into `data` (the server stores only `data`).
pub fn normalize(manifest: &Json) -> Json {
    let mut m = manifest.clone();
    let Some(obj) = m.as_object_mut() else {
        return m;
    };
    obj.remove("status");
    if obj.get("kind").and_then(Json::as_str) == Some("Secret")
        && obj.get("apiVersion").and_then(Json::as_str) == Some("v1")
        && let Some(Json::Object(string_data)) = obj.remove("stringData")
    {
        let data = obj.entry("data").or_insert_with(|| Json::Object(Map::new()));
        if let Some(data) = data.as_object_mut() {
            for (k, v) in string_data {
                let text = v.as_str().map(str::to_string).unwrap_or_else(|| v.to_string());
                data.insert(
                    k,
                    Json::String(base64::engine::general_purpose::STANDARD.encode(text)),
                );
            }
        }
    }
    m
}

/// `live` restricted to the fields `desired` sets (same shape as `desired`).
pub fn project(desired: &Json, live: &Json) -> Json {
    match (desired, live) {
        (Json::Object(d), Json::Object(l)) => {
            let mut out = Map::new();
            for (k, dv) in d {
                let v = match l.get(k) {
                    Some(lv) => project(dv, lv),
                    // The server omits empty and zero values (Go's `omitempty`): a desired
                    // empty or zero value matches absence.
                    None if is_empty(dv) => dv.clone(),
                    None => Json::Null,
                };
                out.insert(k.clone(), v);
            }
            Json::Object(out)
        }
        (Json::Array(d), Json::Array(l)) if d.len() == l.len() => {
            Json::Array(d.iter().zip(l).map(|(dv, lv)| project(dv, lv)).collect())
        }
        (Json::Null, _) => Json::Null,
        // The server stores quantities in canonical form (`cpu: 1` -> "1", "2000m" -> "2").
        _ if same_quantity(desired, live) => desired.clone(),
        _ => live.clone(),
    }
}

fn is_empty(v: &Json) -> bool {
    match v {
        Json::Null => true,
        Json::Bool(b) => !b,
        Json::Number(n) => n.as_f64() == Some(0.0),
        Json::String(s) => s.is_empty(),
        Json::Object(m) => m.is_empty(),
        Json::Array(a) => a.is_empty(),
    }
}

/// Whether two values are the same Kubernetes quantity written differently.
fn same_quantity(a: &Json, b: &Json) -> bool {
    let text = |v: &Json| match v {
        Json::String(s) => Some(s.clone()),
        Json::Number(n) => Some(n.to_string()),
        _ => None,
    };
    match (text(a).and_then(|t| quantity_millis(&t)), text(b).and_then(|t| quantity_millis(&t))) {
        (Some(x), Some(y)) => x == y,
        _ => false,
    }
}

/// Where `projected` (live) differs from `desired`, as `path: live -> desired` lines. Values of
/// Secrets are never shown.
pub fn differences(id: &ObjectId, desired: &Json, projected: &Json) -> Vec<String> {
    let sensitive = id.kind == "Secret";
    let mut out = Vec::new();
    walk(desired, projected, String::new(), sensitive, &mut out);
    out.into_iter().map(|d| format!("{id}: {d}")).collect()
}

fn walk(desired: &Json, live: &Json, path: String, sensitive: bool, out: &mut Vec<String>) {
    if desired == live {
        return;
    }
    match (desired, live) {
        (Json::Object(d), Json::Object(l)) => {
            for (k, dv) in d {
                let lv = l.get(k).unwrap_or(&Json::Null);
                walk(dv, lv, format!("{path}.{k}"), sensitive, out);
            }
        }
        (Json::Array(d), Json::Array(l)) if d.len() == l.len() => {
            for (i, (dv, lv)) in d.iter().zip(l).enumerate() {
                walk(dv, lv, format!("{path}[{i}]"), sensitive, out);
            }
        }
        _ if sensitive && (path.starts_with(".data") || path.starts_with(".stringData")) => {
            out.push(format!("{path} changed (sensitive)"));
        }
        _ => out.push(format!("{path}: {} -> {}", short(live), short(desired))),
    }
}

fn short(v: &Json) -> String {
    if v.is_null() {
        return "(absent)".into();
    }
    let text = v.to_string();
    if text.chars().count() > 60 {
        format!("{}...", text.chars().take(57).collect::<String>())
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn id() -> ObjectId {
        ObjectId::of(&json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "default"}}))
        .unwrap()
    }

    #[test]
    fn server_defaults_and_status_are_not_differences() {
        let desired = json!({"spec": {"replicas": 2, "template": {"spec": {
            "containers": [{"name": "web", "image": "nginx", "resources": {}}]}}}});
        let live = json!({"spec": {"replicas": 2, "progressDeadlineSeconds": 600,
            "template": {"spec": {"containers": [{"name": "web", "image": "nginx",
            "imagePullPolicy": "Always"}], "restartPolicy": "Always"}}},
            "status": {"replicas": 2}});
        let p = project(&desired, &live);
        assert_eq!(p, desired);
        assert!(differences(&id(), &desired, &p).is_empty());
    }

    #[test]
    fn a_changed_field_is_named_with_both_values() {
        let desired = json!({"spec": {"replicas": 2, "template": {"spec": {
            "containers": [{"name": "web", "image": "nginx"}]}}}});
        let live = json!({"spec": {"replicas": 5, "template": {"spec": {
            "containers": [{"name": "web", "image": "nginx:2"}]}}}});
        let p = project(&desired, &live);
        assert_eq!(
            differences(&id(), &desired, &p),
            vec![
                "Deployment.apps default/web: .spec.replicas: 5 -> 2",
                "Deployment.apps default/web: .spec.template.spec.containers[0].image: \"nginx:2\" -> \"nginx\"",
            ]
        );
    }

    #[test]
    fn secret_values_never_appear_and_string_data_becomes_data() {
        let desired = normalize(&json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "s", "namespace": "default"},
            "stringData": {"password": "hunter2"}}));
        assert_eq!(desired["data"]["password"], "aHVudGVyMg==");
        assert!(desired.get("stringData").is_none());
        let live = json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "s", "namespace": "default"},
            "data": {"password": "b3RoZXI="}});
        let sid = ObjectId::of(&desired).unwrap();
        let diffs = differences(&sid, &desired, &project(&desired, &live));
        assert_eq!(diffs, vec!["Secret default/s: .data.password changed (sensitive)"]);
        assert!(!diffs[0].contains("b3RoZXI") && !diffs[0].contains("aHVudGVy"));
    }

    #[test]
    fn quantities_and_omitted_zero_values_are_not_differences() {
        let desired = json!({"limits": {"cpu": 1, "memory": "1024Mi"}, "requests": {"cpu": "2000m"},
            "readOnly": false, "initialDelaySeconds": 0});
        let live = json!({"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "2"}});
        assert_eq!(project(&desired, &live), desired);
        let changed = json!({"limits": {"cpu": "3", "memory": "1Gi"}, "requests": {"cpu": "2"}});
        assert_ne!(project(&desired, &changed), desired);
    }

    #[test]
    fn a_removed_list_item_differs() {
        let desired = json!({"rules": [{"verbs": ["get"]}, {"verbs": ["list"]}]});
        let live = json!({"rules": [{"verbs": ["get"]}]});
        assert_ne!(project(&desired, &live), desired);
    }
}
