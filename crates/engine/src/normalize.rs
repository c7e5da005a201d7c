//! Normalisers for [`crate::Field`]s: the form two values are compared in, so a diff compares
//! meaning, not text. Each takes and returns a JSON value and leaves what it cannot read as is
//! (then the plain values are compared).

use serde_json::{Map, Value as Json};

/// A JSON document held as text or as a value (IAM and SQS policies, EventBridge patterns):
/// parsed, keys sorted. Formatting and key order do not count.
pub fn json_document(value: &Json) -> Json {
    let parsed = match value {
        Json::String(s) => match serde_json::from_str::<Json>(s) {
            Ok(v) => v,
            Err(_) => return value.clone(),
        },
        other => other.clone(),
    };
    sorted(parsed)
}

/// An IAM policy document: [`json_document`], plus what IAM treats as equal: `Statement` as one
/// object or a list of one, `Action`/`Resource`/... as a string or a list (of any order).
pub fn iam_policy(value: &Json) -> Json {
    let mut doc = json_document(value);
    let Some(obj) = doc.as_object_mut() else {
        return doc;
    };
    let statements = match obj.remove("Statement") {
        Some(Json::Array(list)) => list,
        Some(one) => vec![one],
        None => return doc,
    };
    let statements: Vec<Json> = statements
        .into_iter()
        .map(|mut s| {
            if let Some(fields) = s.as_object_mut() {
                for key in ["Action", "NotAction", "Resource", "NotResource"] {
                    if let Some(v) = fields.get_mut(key) {
                        *v = string_set(v);
                    }
                }
            }
            s
        })
        .collect();
    obj.insert("Statement".into(), Json::Array(statements));
    doc
}

/// A YAML document held as text (or a value): parsed as YAML (JSON is YAML too), keys sorted.
pub fn yaml_document(value: &Json) -> Json {
    match value {
        Json::String(s) if s.trim().is_empty() => Json::Null,
        Json::String(s) => match serde_saphyr::from_str::<Json>(s) {
            Ok(v) => sorted(v),
            Err(_) => value.clone(),
        },
        other => sorted(other.clone()),
    }
}

/// A CIDR block in canonical form (`10.0.0.0/16`, IPv6 in lower case and shortest form).
pub fn cidr(value: &Json) -> Json {
    match value.as_str().and_then(|s| s.trim().parse::<ipnet::IpNet>().ok()) {
        Some(net) => Json::String(net.to_string()),
        None => value.clone(),
    }
}

/// Text without whitespace noise: CRLF, trailing spaces, indentation and blank lines do not
/// count.
pub fn text_lines(value: &Json) -> Json {
    match value.as_str() {
        Some(s) => Json::String(
            s.lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join("\n"),
        ),
        None => value.clone(),
    }
}

/// A Kubernetes quantity (`500m`, `2`, `1Gi`, `1.5k`) as its number of thousandths, so `1Gi`
/// and `1024Mi`, or `2` and `2000m`, compare equal.
pub fn quantity(value: &Json) -> Json {
    let text = match value {
        Json::String(s) => s.clone(),
        Json::Number(n) => n.to_string(),
        _ => return value.clone(),
    };
    match quantity_millis(&text) {
        Some(m) => Json::String(format!("{m}m")),
        None => value.clone(),
    }
}

/// A Kubernetes quantity in thousandths of its unit; `None` when it is not one.
pub fn quantity_millis(text: &str) -> Option<i128> {
    const SUFFIXES: &[(&str, i128)] = &[
        ("Ki", 1 << 10),
        ("Mi", 1 << 20),
        ("Gi", 1 << 30),
        ("Ti", 1 << 40),
        ("Pi", 1 << 50),
        ("Ei", 1 << 60),
        ("k", 1_000),
        ("M", 1_000_000),
        ("G", 1_000_000_000),
        ("T", 1_000_000_000_000),
        ("P", 1_000_000_000_000_000),
        ("E", 1_000_000_000_000_000_000),
    ];
    let t = text.trim();
    if t.is_empty() {
        return None;
    }
    let (number, milli_factor) = if let Some(n) = t.strip_suffix('m') {
        (n, 1)
    } else if let Some((n, f)) =
        SUFFIXES.iter().find_map(|(s, f)| t.strip_suffix(s).map(|n| (n, f * 1000)))
    {
        (n, f)
    } else {
        (t, 1000)
    };
    let (whole, frac) = number.split_once('.').unwrap_or((number, ""));
    if whole.is_empty() && frac.is_empty()
        || !whole.chars().all(|c| c.is_ascii_digit())
        || !frac.chars().all(|c| c.is_ascii_digit())
        || frac.len() > 9
    {
        return None;
    }
    let scale = 10i128.pow(u32::try_from(frac.len()).ok()?);
    let digits: i128 = format!("{whole}{frac}").parse().ok()?;
    let value = digits.checked_mul(milli_factor)?;
    (value % scale == 0).then(|| value / scale)
}

/// Objects with their keys sorted, recursively.
fn sorted(value: Json) -> Json {
    match value {
        Json::Object(map) => {
            let mut entries: Vec<(String, Json)> = map.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Json::Object(entries.into_iter().map(|(k, v)| (k, sorted(v))).collect::<Map<_, _>>())
        }
        Json::Array(items) => Json::Array(items.into_iter().map(sorted).collect()),
        other => other,
    }
}

/// A string or list of strings as a sorted, de-duplicated list.
fn string_set(value: &Json) -> Json {
    let mut items: Vec<Json> = match value {
        Json::Array(a) => a.clone(),
        other => vec![other.clone()],
    };
    items.sort_by_key(|v| v.to_string());
    items.dedup();
    Json::Array(items)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_documents_compare_by_meaning() {
        let a = json!("{\"b\": 1, \"a\": [1, 2]}");
        let b = json!({"a": [1, 2], "b": 1});
        assert_eq!(json_document(&a), json_document(&b));
        assert_ne!(json_document(&a), json_document(&json!({"a": [2, 1], "b": 1})));
        assert_eq!(json_document(&json!("not json")), json!("not json"));
    }

    #[test]
    fn iam_policies_ignore_list_shape_and_order() {
        let a = json!({"Version": "2012-10-17", "Statement": {"Effect": "Allow",
            "Action": "kms:Decrypt", "Resource": ["b", "a"]}});
        let b = json!(
            "{\"Statement\": [{\"Resource\": [\"a\", \"b\"], \"Effect\": \"Allow\", \
            \"Action\": [\"kms:Decrypt\"]}], \"Version\": \"2012-10-17\"}"
        );
        assert_eq!(iam_policy(&a), iam_policy(&b));
        let c = json!({"Version": "2012-10-17", "Statement": {"Effect": "Deny",
            "Action": "kms:Decrypt", "Resource": ["b", "a"]}});
        assert_ne!(iam_policy(&a), iam_policy(&c));
    }

    #[test]
    fn yaml_documents_compare_by_meaning() {
        let a = json!("replicaCount: 2\nresources:\n  limits: {cpu: 1}\n");
        let b = json!("{\"resources\": {\"limits\": {\"cpu\": 1}}, \"replicaCount\": 2}");
        assert_eq!(yaml_document(&a), yaml_document(&b));
        assert_eq!(yaml_document(&json!("")), Json::Null);
    }

    #[test]
    fn cidrs_and_text() {
        assert_eq!(cidr(&json!("2001:DB8::/32")), json!("2001:db8::/32"));
        assert_eq!(cidr(&json!("10.0.0.0/16")), json!("10.0.0.0/16"));
        assert_eq!(cidr(&json!("nope")), json!("nope"));
        assert_eq!(text_lines(&json!("a \r\n\n  b\n")), text_lines(&json!("a\nb")));
    }

    #[test]
    fn quantities() {
        assert_eq!(quantity(&json!("1Gi")), quantity(&json!("1024Mi")));
        assert_eq!(quantity(&json!(2)), quantity(&json!("2000m")));
        assert_ne!(quantity(&json!("1")), quantity(&json!("2")));
        assert_eq!(quantity_millis("1.5k"), Some(1_500_000));
        assert_eq!(quantity_millis("500m"), Some(500));
        assert_eq!(quantity_millis("abc"), None);
        assert_eq!(quantity(&json!("abc")), json!("abc"));
    }
}
