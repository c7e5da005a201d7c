//! Helm's own template functions.

use super::json::{go_json, parse_json};
use super::{Func, arity, s};
use crate::template::{Exec, FnError};
use crate::value::{Map, Value};
use crate::yaml::{Numbers, parse as yaml_parse, to_yaml};

type R = Result<Value, FnError>;

pub(super) static FUNCS: &[(&str, Func)] = &[
    ("include", include),
    ("tpl", tpl),
    ("required", required),
    ("toYaml", to_yaml_fn),
    ("mustToYaml", must_to_yaml),
    ("toYamlPretty", to_yaml_fn),
    ("fromYaml", from_yaml),
    ("fromYamlArray", from_yaml_array),
    ("toJson", to_json),
    ("mustToJson", must_to_json),
    ("fromJson", from_json),
    ("mustFromJson", must_from_json),
    ("fromJsonArray", from_json_array),
    ("toRawJson", to_raw_json),
    ("mustToRawJson", to_raw_json),
    ("toPrettyJson", to_pretty_json),
    ("mustToPrettyJson", to_pretty_json),
    ("toToml", to_toml),
    ("mustToToml", to_toml),
    ("lookup", lookup),
];

fn include(e: &mut Exec<'_>, a: &[Value]) -> R {
    arity("include", a, 2)?;
    let name = s(&a[0]);
    Ok(Value::str(e.include(&name, a[1].clone())?))
}

fn tpl(e: &mut Exec<'_>, a: &[Value]) -> R {
    arity("tpl", a, 2)?;
    let text = s(&a[0]);
    Ok(Value::str(e.tpl(&text, a[1].clone())?))
}

fn required(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("required", a, 2)?;
    match &a[1] {
        Value::Nil => Err(FnError::Fail(s(&a[0]))),
        Value::Str(x) if x.is_empty() => Err(FnError::Fail(s(&a[0]))),
        v => Ok(v.clone()),
    }
}

fn yaml_of(v: &Value) -> Result<String, String> {
    // The JSON step rejects NaN/Inf.
    go_json(v, false, None)?;
    Ok(to_yaml(v))
}

fn to_yaml_fn(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("toYaml", a, 1)?;
    let y = yaml_of(&a[0]).unwrap_or_default();
    Ok(Value::str(y.strip_suffix('\n').unwrap_or(&y)))
}

fn must_to_yaml(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("mustToYaml", a, 1)?;
    let y = yaml_of(&a[0]).map_err(FnError::Msg)?;
    Ok(Value::str(y.strip_suffix('\n').unwrap_or(&y)))
}

fn from_yaml(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("fromYaml", a, 1)?;
    let text = s(&a[0]);
    Ok(match yaml_parse(&text, Numbers::Float) {
        Ok(Value::Map(m)) => Value::Map(m),
        Ok(Value::Nil) => Value::new_map(),
        Ok(other) => {
            let mut m = Map::new();
            m.insert(
                "Error".into(),
                Value::str(format!(
                    "error unmarshaling JSON: while decoding JSON: json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
                    json_kind(&other)
                )),
            );
            m.into()
        }
        Err(e) => {
            let mut m = Map::new();
            m.insert("Error".into(), Value::str(format!("error converting YAML to JSON: {e}")));
            m.into()
        }
    })
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::List(_) => "array",
        Value::Str(_) => "string",
        Value::Bool(_) => "bool",
        Value::Int(_) | Value::Int64(_) | Value::Float(_) => "number",
        _ => "object",
    }
}

fn from_yaml_array(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("fromYamlArray", a, 1)?;
    let text = s(&a[0]);
    Ok(match yaml_parse(&text, Numbers::Float) {
        Ok(Value::List(l)) => Value::List(l),
        Ok(Value::Nil) => Value::from(Vec::new()),
        Ok(other) => Value::from(vec![Value::str(format!(
            "error unmarshaling JSON: while decoding JSON: json: cannot unmarshal {} into Go value of type []interface {{}}",
            json_kind(&other)
        ))]),
        Err(e) => Value::from(vec![Value::str(format!("error converting YAML to JSON: {e}"))]),
    })
}

fn to_json(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("toJson", a, 1)?;
    Ok(Value::str(go_json(&a[0], true, None).unwrap_or_default()))
}

fn must_to_json(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("mustToJson", a, 1)?;
    Ok(Value::str(go_json(&a[0], true, None).map_err(FnError::Msg)?))
}

fn to_raw_json(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("toRawJson", a, 1)?;
    Ok(Value::str(go_json(&a[0], false, None).map_err(FnError::Msg)?))
}

fn to_pretty_json(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("toPrettyJson", a, 1)?;
    Ok(Value::str(go_json(&a[0], true, Some("  ")).unwrap_or_default()))
}

fn from_json(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("fromJson", a, 1)?;
    Ok(match parse_json(&s(&a[0])) {
        Ok(Value::Map(m)) => Value::Map(m),
        Ok(Value::Nil) => Value::new_map(),
        Ok(other) => {
            let mut m = Map::new();
            m.insert(
                "Error".into(),
                Value::str(format!(
                    "json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
                    json_kind(&other)
                )),
            );
            m.into()
        }
        Err(e) => {
            let mut m = Map::new();
            m.insert("Error".into(), Value::str(e));
            m.into()
        }
    })
}

fn must_from_json(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("mustFromJson", a, 1)?;
    parse_json(&s(&a[0])).map_err(FnError::Msg)
}

fn from_json_array(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("fromJsonArray", a, 1)?;
    Ok(match parse_json(&s(&a[0])) {
        Ok(Value::List(l)) => Value::List(l),
        Ok(Value::Nil) => Value::from(Vec::new()),
        Ok(other) => Value::from(vec![Value::str(format!(
            "json: cannot unmarshal {} into Go value of type []interface {{}}",
            json_kind(&other)
        ))]),
        Err(e) => Value::from(vec![Value::str(e)]),
    })
}

fn toml_key(k: &str) -> String {
    if !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
        k.to_string()
    } else {
        super::fmt::go_quote(k)
    }
}

fn toml_scalar(v: &Value) -> Option<String> {
    Some(match v {
        Value::Bool(b) => b.to_string(),
        Value::Int(i) | Value::Int64(i) => i.to_string(),
        Value::Float(f) => {
            let t = crate::value::format_float_g(*f);
            if t.contains(['.', 'e', 'n', 'I']) { t } else { format!("{t}.0") }
        }
        Value::Str(s) => super::fmt::go_quote(s),
        Value::List(l) if !l.iter().any(|x| matches!(x, Value::Map(_))) => {
            let parts: Vec<String> = l.iter().filter_map(toml_scalar).collect();
            format!("[{}]", parts.join(", "))
        }
        _ => return None,
    })
}

fn toml_table(m: &Map, path: &[String], indent: usize, out: &mut String) {
    let pad = "  ".repeat(indent);
    for (k, v) in m {
        if matches!(v, Value::Map(_) | Value::Nil) {
            continue;
        }
        if let Some(t) = toml_scalar(v) {
            out.push_str(&format!("{pad}{} = {t}\n", toml_key(k)));
        }
    }
    for (k, v) in m {
        let mut p = path.to_vec();
        p.push(toml_key(k));
        match v {
            Value::Map(sub) => {
                out.push_str(&format!("\n{pad}[{}]\n", p.join(".")));
                toml_table(&sub.borrow(), &p, indent + 1, out);
            }
            Value::List(l) if l.iter().any(|x| matches!(x, Value::Map(_))) => {
                for item in l.iter() {
                    if let Value::Map(sub) = item {
                        out.push_str(&format!("\n{pad}[[{}]]\n", p.join(".")));
                        toml_table(&sub.borrow(), &p, indent + 1, out);
                    }
                }
            }
            _ => {}
        }
    }
}

fn to_toml(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("toToml", a, 1)?;
    let plain = a[0].to_plain();
    let mut out = String::new();
    match &plain {
        Value::Map(m) => toml_table(&m.borrow(), &[], 0, &mut out),
        other => {
            return Ok(Value::str(format!(
                "toml: top-level values must be Go maps or structs, not {}",
                other.type_name()
            )));
        }
    }
    Ok(Value::str(out))
}

fn from_k8s_json(j: &serde_json::Value) -> Value {
    match j {
        serde_json::Value::Number(n) => match n.as_i64() {
            Some(i) => Value::Int64(i),
            None => Value::Float(n.as_f64().unwrap_or(0.0)),
        },
        serde_json::Value::Array(a) => Value::from(a.iter().map(from_k8s_json).collect::<Vec<_>>()),
        serde_json::Value::Object(o) => {
            let m: Map = o.iter().map(|(k, v)| (k.clone(), from_k8s_json(v))).collect();
            m.into()
        }
        other => Value::from_json(other),
    }
}

fn lookup(e: &mut Exec<'_>, a: &[Value]) -> R {
    arity("lookup", a, 4)?;
    let r = e.lookup.lookup(&s(&a[0]), &s(&a[1]), &s(&a[2]), &s(&a[3])).map_err(FnError::Msg)?;
    Ok(match r {
        Some(j) => from_k8s_json(&j),
        None => Value::new_map(),
    })
}
