//! Values: user values merging, `--set` parsing, coalescing with chart
//! defaults in Helm's order, schema validation.

use serde_json::{Map as JMap, Value as Json};

use crate::chart::Chart;
use crate::error::HelmError;
use crate::yaml::{Numbers, parse};

/// Parses a values file (YAML; numbers become float64 as in Helm).
pub fn parse_values_yaml(text: &str) -> Result<Json, HelmError> {
    let v = parse(text, Numbers::Float).map_err(|e| HelmError::Values(e.to_string()))?;
    match v.to_json() {
        Json::Null => Ok(Json::Object(JMap::new())),
        j @ Json::Object(_) => Ok(j),
        _ => Err(HelmError::Values("values must be a map".into())),
    }
}

/// Helm's `mergeMaps`: later maps win, nested maps are merged.
pub fn merge_maps(dst: &mut Json, src: &Json) {
    match (dst, src) {
        (Json::Object(d), Json::Object(s)) => {
            for (k, v) in s {
                match (d.get_mut(k), v) {
                    (Some(dv @ Json::Object(_)), Json::Object(_)) => merge_maps(dv, v),
                    _ => {
                        d.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        (d, s) => *d = s.clone(),
    }
}

/// Applies a `--set` expression (`a.b[0].c=x,d=y`) onto `dst`.
pub fn apply_set(dst: &mut Json, expr: &str) -> Result<(), HelmError> {
    for assignment in split_unescaped(expr, ',') {
        if assignment.is_empty() {
            continue;
        }
        let (key, val) = match find_unescaped(&assignment, '=') {
            Some(i) => (&assignment[..i], Some(&assignment[i + 1..])),
            None => (assignment.as_str(), None),
        };
        let Some(val) = val else {
            return Err(HelmError::Values(format!("key {key:?} has no value")));
        };
        let value = if val.starts_with('{') && val.ends_with('}') {
            Json::Array(
                split_unescaped(&val[1..val.len() - 1], ',').iter().map(|x| typed(x)).collect(),
            )
        } else {
            typed(val)
        };
        set_path(dst, key, value)?;
    }
    Ok(())
}

fn find_unescaped(s: &str, c: char) -> Option<usize> {
    let mut esc = false;
    for (i, ch) in s.char_indices() {
        if esc {
            esc = false;
            continue;
        }
        if ch == '\\' {
            esc = true;
            continue;
        }
        if ch == c {
            return Some(i);
        }
    }
    None
}

fn split_unescaped(s: &str, sep: char) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut esc = false;
    let mut depth = 0;
    for ch in s.chars() {
        if esc {
            if ch != sep {
                cur.push('\\');
            }
            cur.push(ch);
            esc = false;
            continue;
        }
        match ch {
            '\\' => esc = true,
            '{' => {
                depth += 1;
                cur.push(ch)
            }
            '}' => {
                depth -= 1;
                cur.push(ch)
            }
            c if c == sep && depth == 0 => out.push(std::mem::take(&mut cur)),
            c => cur.push(c),
        }
    }
    out.push(cur);
    out
}

fn typed(v: &str) -> Json {
    let v = v.replace("\\", "");
    if v.eq_ignore_ascii_case("true") {
        return Json::Bool(true);
    }
    if v.eq_ignore_ascii_case("false") {
        return Json::Bool(false);
    }
    if v.eq_ignore_ascii_case("null") {
        return Json::Null;
    }
    if v == "0" {
        return Json::from(0i64);
    }
    if !v.starts_with('0')
        && let Ok(i) = v.parse::<i64>()
    {
        return Json::from(i);
    }
    Json::String(v)
}

enum Seg {
    Key(String),
    Index(usize),
}

fn parse_path(key: &str) -> Result<Vec<Seg>, HelmError> {
    let mut segs = Vec::new();
    let mut cur = String::new();
    let mut chars = key.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(n) = chars.next() {
                    cur.push(n);
                }
            }
            '.' => {
                if !cur.is_empty() {
                    segs.push(Seg::Key(std::mem::take(&mut cur)));
                }
            }
            '[' => {
                if !cur.is_empty() {
                    segs.push(Seg::Key(std::mem::take(&mut cur)));
                }
                let mut n = String::new();
                for d in chars.by_ref() {
                    if d == ']' {
                        break;
                    }
                    n.push(d);
                }
                let i: usize = n.parse().map_err(|_| {
                    HelmError::Values(format!("failed to parse index {n:?} in {key:?}"))
                })?;
                if i > 65536 {
                    return Err(HelmError::Values(format!(
                        "index of {i} is greater than maximum supported index 65536"
                    )));
                }
                segs.push(Seg::Index(i));
            }
            c => cur.push(c),
        }
    }
    if !cur.is_empty() {
        segs.push(Seg::Key(cur));
    }
    Ok(segs)
}

fn set_path(dst: &mut Json, key: &str, value: Json) -> Result<(), HelmError> {
    let segs = parse_path(key)?;
    let mut cur = dst;
    for (i, seg) in segs.iter().enumerate() {
        let last = i + 1 == segs.len();
        match seg {
            Seg::Key(k) => {
                if !cur.is_object() {
                    *cur = Json::Object(JMap::new());
                }
                let m = cur.as_object_mut().expect("object");
                if last {
                    m.insert(k.clone(), value);
                    return Ok(());
                }
                let next_is_index = matches!(segs[i + 1], Seg::Index(_));
                let e = m.entry(k.clone()).or_insert_with(|| {
                    if next_is_index { Json::Array(Vec::new()) } else { Json::Object(JMap::new()) }
                });
                cur = e;
            }
            Seg::Index(n) => {
                if !cur.is_array() {
                    *cur = Json::Array(Vec::new());
                }
                let a = cur.as_array_mut().expect("array");
                while a.len() <= *n {
                    a.push(Json::Null);
                }
                if last {
                    a[*n] = value;
                    return Ok(());
                }
                cur = &mut a[*n];
            }
        }
    }
    Ok(())
}

/// Merges values files (in order) and `--set` expressions, as `helm
/// template -f ... --set ...` does.
pub fn user_values(files: &[Json], sets: &[String]) -> Result<Json, HelmError> {
    let mut base = Json::Object(JMap::new());
    for f in files {
        merge_maps(&mut base, f);
    }
    for s in sets {
        apply_set(&mut base, s)?;
    }
    Ok(base)
}

fn clean_nil(m: &mut JMap<String, Json>) {
    m.retain(|_, v| !v.is_null());
    for v in m.values_mut() {
        if let Json::Object(o) = v {
            clean_nil(o);
        }
    }
}

fn coalesce_tables(dst: &mut JMap<String, Json>, src: &mut JMap<String, Json>) {
    let src_non_nil: std::collections::HashSet<String> =
        src.iter().filter(|(_, v)| !v.is_null()).map(|(k, _)| k.clone()).collect();
    for (k, v) in dst.iter() {
        if v.is_null() {
            src.insert(k.clone(), Json::Null);
        }
    }
    for (k, v) in src.iter_mut() {
        match dst.get_mut(k) {
            Some(dv) if dv.is_null() && src_non_nil.contains(k) => {
                dst.remove(k);
            }
            None => {
                dst.insert(k.clone(), v.clone());
            }
            Some(dv) => {
                if let (Json::Object(dm), Json::Object(sm)) = (dv, v) {
                    coalesce_tables(dm, sm);
                }
            }
        }
    }
}

fn coalesce_values(chart: &Chart, v: &mut JMap<String, Json>) {
    let Json::Object(defaults) = chart.values.clone() else {
        return;
    };
    let dep_names: Vec<String> = chart.dependencies.iter().map(Chart::name).collect();
    for (key, val) in defaults {
        match v.get_mut(&key) {
            Some(value) => {
                if value.is_null() {
                    v.remove(&key);
                } else if let Json::Object(dest) = value
                    && let Json::Object(mut src) = val
                {
                    let merge = dep_names.contains(&key);
                    if !merge {
                        clean_nil(&mut src);
                    }
                    coalesce_tables(dest, &mut src);
                }
            }
            None => {
                if val.is_null() {
                    continue;
                }
                let mut val = val;
                if let Json::Object(o) = &mut val {
                    clean_nil(o);
                }
                v.insert(key, val);
            }
        }
    }
}

fn coalesce_globals(dest: &mut JMap<String, Json>, src: &JMap<String, Json>) {
    let Some(Json::Object(sg)) = src.get("global") else {
        return;
    };
    let dg = dest.entry("global".to_string()).or_insert_with(|| Json::Object(JMap::new()));
    if !dg.is_object() {
        *dg = Json::Object(JMap::new());
    }
    let dg = dg.as_object_mut().expect("object");
    for (k, v) in sg {
        match (dg.get_mut(k), v) {
            (Some(Json::Object(dm)), Json::Object(sm)) => {
                let mut sm = sm.clone();
                coalesce_tables(dm, &mut sm);
            }
            _ => {
                dg.insert(k.clone(), v.clone());
            }
        }
    }
}

/// Helm's `CoalesceValues`: user values win over chart defaults, `null`
/// removes a default, subcharts get their scoped section plus globals.
pub fn coalesce(chart: &Chart, user: &Json) -> Result<Json, HelmError> {
    let mut v = match user {
        Json::Object(o) => o.clone(),
        Json::Null => JMap::new(),
        _ => return Err(HelmError::Values("values must be a map".into())),
    };
    coalesce_chart(chart, &mut v)?;
    Ok(Json::Object(v))
}

fn coalesce_chart(chart: &Chart, v: &mut JMap<String, Json>) -> Result<(), HelmError> {
    coalesce_values(chart, v);
    for sub in &chart.dependencies {
        let name = sub.name();
        let entry = v.entry(name.clone()).or_insert_with(|| Json::Object(JMap::new()));
        if !entry.is_object() {
            return Err(HelmError::Values(format!("type mismatch on {name}")));
        }
        let mut sv = entry.as_object().cloned().unwrap_or_default();
        let parent = v.clone();
        coalesce_globals(&mut sv, &parent);
        coalesce_chart(sub, &mut sv)?;
        v.insert(name, Json::Object(sv));
    }
    Ok(())
}

/// Validates `values` (for `chart` and, scoped, its subcharts) against
/// the charts' values.schema.json files.
pub fn validate_schema(chart: &Chart, values: &Json) -> Result<(), HelmError> {
    let mut report = String::new();
    validate_rec(chart, values, &mut report)?;
    if report.is_empty() { Ok(()) } else { Err(HelmError::Schema(report.trim_end().to_string())) }
}

fn validate_rec(chart: &Chart, values: &Json, report: &mut String) -> Result<(), HelmError> {
    if let Some(schema) = &chart.schema
        && let Some(errors) = crate::schema::validate(schema, values)
    {
        report.push_str(&format!("{}:\n{}\n", chart.name(), errors));
    }
    for sub in &chart.dependencies {
        let empty = Json::Object(JMap::new());
        let sv = values.get(sub.name()).unwrap_or(&empty);
        validate_rec(sub, sv, report)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn set_expressions() {
        let mut v = json!({});
        apply_set(&mut v, "a.b[1].c=x,d=true,e=12,f=null,g={x,y},h=007").unwrap();
        assert_eq!(
            v,
            json!({"a": {"b": [null, {"c": "x"}]}, "d": true, "e": 12, "f": null, "g": ["x", "y"], "h": "007"})
        );
        let mut v = json!({});
        apply_set(&mut v, r"a\.b=1\,2").unwrap();
        assert_eq!(v, json!({"a.b": "1,2"}));
    }

    #[test]
    fn null_removes_default() {
        let chart = Chart {
            metadata: json!({"name": "c"}),
            values: json!({"a": 1.0, "b": {"x": 1.0, "y": 2.0}, "n": null}),
            schema: None,
            templates: vec![],
            files: vec![],
            dependencies: vec![],
            alias: None,
        };
        let out = coalesce(&chart, &json!({"a": null, "b": {"y": null, "z": 3}})).unwrap();
        assert_eq!(out, json!({"b": {"x": 1.0, "z": 3}}));
    }
}
