//! values.schema.json validation with the error tree and wording of the
//! validator Helm uses (santhosh-tekuri/jsonschema v6): type, const, enum,
//! local `$ref`, object/array/string/number keywords, allOf/anyOf/oneOf,
//! not, if/then/else. `format` is treated as an annotation.

use serde_json::Value as Json;

/// One validation error (with nested causes for allOf/anyOf/oneOf).
#[derive(Debug, Clone, PartialEq)]
pub struct SchemaError {
    /// JSON pointer of the offending value.
    pub location: String,
    /// Message.
    pub message: String,
    /// Nested errors.
    pub causes: Vec<SchemaError>,
}

impl SchemaError {
    fn display(&self, out: &mut String, indent: usize) {
        if indent > 0 {
            out.push('\n');
            for _ in 0..indent - 1 {
                out.push_str("  ");
            }
            out.push_str("- ");
        }
        out.push_str(&format!("at '{}': {}", self.location, self.message));
        for c in &self.causes {
            c.display(out, indent + 1);
        }
    }
}

/// Validates `value`; returns the report lines Helm prints (without the
/// chart header), or `None` when valid.
pub fn validate(schema: &Json, value: &Json) -> Option<String> {
    let v = Validator { root: schema };
    let errs = v.validate(schema, value, "");
    if errs.is_empty() {
        return None;
    }
    let mut out = String::new();
    for e in &errs {
        e.display(&mut out, 1);
    }
    Some(out.trim_start_matches('\n').to_string())
}

struct Validator<'a> {
    root: &'a Json,
}

fn type_of(v: &Json) -> &'static str {
    match v {
        Json::Null => "null",
        Json::Bool(_) => "boolean",
        Json::Number(_) => "number",
        Json::String(_) => "string",
        Json::Array(_) => "array",
        Json::Object(_) => "object",
    }
}

fn is_integer(v: &Json) -> bool {
    match v {
        Json::Number(n) => n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0),
        _ => false,
    }
}

/// Go-like display of a number or value.
fn display(v: &Json) -> String {
    match v {
        Json::Number(n) => num_text(n.as_f64().unwrap_or(0.0)),
        Json::String(s) => format!("'{s}'"),
        other => other.to_string(),
    }
}

fn num_text(f: f64) -> String {
    if f.fract() == 0.0 && f.abs() < 1e15 { format!("{}", f as i64) } else { format!("{f}") }
}

fn json_eq(a: &Json, b: &Json) -> bool {
    match (a, b) {
        (Json::Number(x), Json::Number(y)) => x.as_f64() == y.as_f64(),
        (Json::Array(x), Json::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| json_eq(p, q))
        }
        (Json::Object(x), Json::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| json_eq(v, w)))
        }
        _ => a == b,
    }
}

fn escape_ptr(s: &str) -> String {
    s.replace('~', "~0").replace('/', "~1")
}

const TYPE_ORDER: [&str; 7] = ["null", "boolean", "number", "integer", "string", "array", "object"];

impl<'a> Validator<'a> {
    fn err(loc: &str, message: String) -> SchemaError {
        SchemaError { location: loc.to_string(), message, causes: Vec::new() }
    }

    fn resolve(&self, r: &str) -> Option<&'a Json> {
        let ptr = r.strip_prefix('#')?;
        if ptr.is_empty() {
            return Some(self.root);
        }
        let decoded: String = ptr.replace("~1", "/").replace("~0", "~");
        self.root.pointer(&decoded)
    }

    /// Validates and groups multiple errors like the Go validator.
    fn validate_one(&self, schema: &Json, v: &Json, loc: &str) -> Option<SchemaError> {
        let mut errs = self.validate(schema, v, loc);
        match errs.len() {
            0 => None,
            1 => errs.pop(),
            _ => Some(SchemaError {
                location: loc.to_string(),
                message: "validation failed".into(),
                causes: errs,
            }),
        }
    }

    fn validate(&self, schema: &Json, v: &Json, loc: &str) -> Vec<SchemaError> {
        let s = match schema {
            Json::Bool(true) => return Vec::new(),
            Json::Bool(false) => return vec![Self::err(loc, "false schema".into())],
            Json::Object(o) => o,
            _ => return Vec::new(),
        };
        // type
        if let Some(t) = s.get("type") {
            let want: Vec<&str> = match t {
                Json::String(x) => vec![x.as_str()],
                Json::Array(a) => a.iter().filter_map(Json::as_str).collect(),
                _ => Vec::new(),
            };
            if !want.is_empty() {
                let got = type_of(v);
                let ok = want.contains(&got) || (want.contains(&"integer") && is_integer(v));
                if !ok {
                    let ordered: Vec<&str> =
                        TYPE_ORDER.iter().copied().filter(|t| want.contains(t)).collect();
                    return vec![Self::err(
                        loc,
                        format!("got {got}, want {}", ordered.join(" or ")),
                    )];
                }
            }
        }
        if let Some(c) = s.get("const")
            && !json_eq(v, c)
        {
            let msg = match c {
                Json::Array(_) | Json::Object(_) => "'const' failed".to_string(),
                other => format!("value must be {}", display(other)),
            };
            return vec![Self::err(loc, msg)];
        }
        if let Some(Json::Array(opts)) = s.get("enum")
            && !opts.iter().any(|o| json_eq(v, o))
        {
            let primitive = opts.iter().all(|o| !matches!(o, Json::Array(_) | Json::Object(_)));
            let msg = if !primitive {
                "'enum' failed".to_string()
            } else if opts.len() == 1 {
                format!("value must be {}", display(&opts[0]))
            } else {
                format!(
                    "value must be one of {}",
                    opts.iter().map(display).collect::<Vec<_>>().join(", ")
                )
            };
            return vec![Self::err(loc, msg)];
        }
        let mut errs = Vec::new();
        if let Some(Json::String(r)) = s.get("$ref")
            && let Some(target) = self.resolve(r)
            && let Some(e) = self.validate_one(target, v, loc)
        {
            errs.push(e);
        }
        match v {
            Json::Object(obj) => self.object(s, obj, loc, &mut errs),
            Json::Array(arr) => self.array(s, arr, loc, &mut errs),
            Json::String(st) => self.string(s, st, loc, &mut errs),
            Json::Number(n) => self.number(s, n.as_f64().unwrap_or(0.0), loc, &mut errs),
            _ => {}
        }
        if let Some(n) = s.get("not")
            && self.validate(n, v, loc).is_empty()
        {
            errs.push(Self::err(loc, "'not' failed".into()));
        }
        if let Some(Json::Array(all)) = s.get("allOf") {
            let causes: Vec<SchemaError> =
                all.iter().filter_map(|x| self.validate_one(x, v, loc)).collect();
            if !causes.is_empty() {
                errs.push(SchemaError {
                    location: loc.into(),
                    message: "'allOf' failed".into(),
                    causes,
                });
            }
        }
        if let Some(Json::Array(any)) = s.get("anyOf") {
            let mut causes = Vec::new();
            let mut matched = false;
            for x in any {
                match self.validate_one(x, v, loc) {
                    None => {
                        matched = true;
                        break;
                    }
                    Some(e) => causes.push(e),
                }
            }
            if !matched {
                errs.push(SchemaError {
                    location: loc.into(),
                    message: "'anyOf' failed".into(),
                    causes,
                });
            }
        }
        if let Some(Json::Array(one)) = s.get("oneOf") {
            let mut causes = Vec::new();
            let mut matched: Vec<usize> = Vec::new();
            for (i, x) in one.iter().enumerate() {
                match self.validate_one(x, v, loc) {
                    None => matched.push(i),
                    Some(e) => causes.push(e),
                }
            }
            if matched.is_empty() {
                errs.push(SchemaError {
                    location: loc.into(),
                    message: "'oneOf' failed, none matched".into(),
                    causes,
                });
            } else if matched.len() > 1 {
                errs.push(Self::err(
                    loc,
                    format!("'oneOf' failed, subschemas {}, {} matched", matched[0], matched[1]),
                ));
            }
        }
        if let Some(cond) = s.get("if") {
            let branch =
                if self.validate(cond, v, loc).is_empty() { s.get("then") } else { s.get("else") };
            if let Some(b) = branch
                && let Some(e) = self.validate_one(b, v, loc)
            {
                errs.push(e);
            }
        }
        errs
    }

    fn object(
        &self,
        s: &serde_json::Map<String, Json>,
        obj: &serde_json::Map<String, Json>,
        loc: &str,
        errs: &mut Vec<SchemaError>,
    ) {
        if let Some(n) = s.get("maxProperties").and_then(Json::as_u64)
            && obj.len() as u64 > n
        {
            errs.push(Self::err(loc, format!("maxProperties: got {}, want {n}", obj.len())));
        }
        if let Some(n) = s.get("minProperties").and_then(Json::as_u64)
            && (obj.len() as u64) < n
        {
            errs.push(Self::err(loc, format!("minProperties: got {}, want {n}", obj.len())));
        }
        if let Some(Json::Array(req)) = s.get("required") {
            let missing: Vec<&str> =
                req.iter().filter_map(Json::as_str).filter(|k| !obj.contains_key(*k)).collect();
            match missing.len() {
                0 => {}
                1 => errs.push(Self::err(loc, format!("missing property '{}'", missing[0]))),
                _ => errs.push(Self::err(
                    loc,
                    format!(
                        "missing properties {}",
                        missing.iter().map(|m| format!("'{m}'")).collect::<Vec<_>>().join(", ")
                    ),
                )),
            }
        }
        let props = s.get("properties").and_then(Json::as_object);
        let pattern_props: Vec<(regex::Regex, &Json)> = s
            .get("patternProperties")
            .and_then(Json::as_object)
            .map(|m| {
                m.iter()
                    .filter_map(|(p, sch)| regex::Regex::new(p).ok().map(|r| (r, sch)))
                    .collect()
            })
            .unwrap_or_default();
        let mut keys: Vec<&String> = obj.keys().collect();
        keys.sort();
        let mut additional = Vec::new();
        for k in keys {
            let val = &obj[k];
            let child = format!("{loc}/{}", escape_ptr(k));
            let mut known = false;
            if let Some(sch) = props.and_then(|p| p.get(k)) {
                known = true;
                if let Some(e) = self.validate_one(sch, val, &child) {
                    errs.push(e);
                }
            }
            for (re, sch) in &pattern_props {
                if re.is_match(k) {
                    known = true;
                    if let Some(e) = self.validate_one(sch, val, &child) {
                        errs.push(e);
                    }
                }
            }
            if !known {
                match s.get("additionalProperties") {
                    Some(Json::Bool(false)) => additional.push(k.clone()),
                    Some(sch @ Json::Object(_)) => {
                        if let Some(e) = self.validate_one(sch, val, &child) {
                            errs.push(e);
                        }
                    }
                    _ => {}
                }
            }
            if let Some(pn) = s.get("propertyNames")
                && !self.validate(pn, &Json::String(k.clone()), loc).is_empty()
            {
                errs.push(Self::err(loc, format!("invalid propertyName '{k}'")));
            }
        }
        if !additional.is_empty() {
            let list: Vec<String> = additional.iter().map(|a| format!("'{a}'")).collect();
            errs.push(Self::err(
                loc,
                format!("additional properties {} not allowed", list.join(", ")),
            ));
        }
    }

    fn array(
        &self,
        s: &serde_json::Map<String, Json>,
        arr: &[Json],
        loc: &str,
        errs: &mut Vec<SchemaError>,
    ) {
        if let Some(n) = s.get("maxItems").and_then(Json::as_u64)
            && arr.len() as u64 > n
        {
            errs.push(Self::err(loc, format!("maxItems: got {}, want {n}", arr.len())));
        }
        if let Some(n) = s.get("minItems").and_then(Json::as_u64)
            && (arr.len() as u64) < n
        {
            errs.push(Self::err(loc, format!("minItems: got {}, want {n}", arr.len())));
        }
        if s.get("uniqueItems") == Some(&Json::Bool(true)) {
            'outer: for i in 0..arr.len() {
                for j in i + 1..arr.len() {
                    if json_eq(&arr[i], &arr[j]) {
                        errs.push(Self::err(loc, format!("items at {i} and {j} are equal")));
                        break 'outer;
                    }
                }
            }
        }
        match s.get("items") {
            Some(Json::Array(tuple)) => {
                for (i, (sch, val)) in tuple.iter().zip(arr).enumerate() {
                    if let Some(e) = self.validate_one(sch, val, &format!("{loc}/{i}")) {
                        errs.push(e);
                    }
                }
            }
            Some(sch) => {
                for (i, val) in arr.iter().enumerate() {
                    if let Some(e) = self.validate_one(sch, val, &format!("{loc}/{i}")) {
                        errs.push(e);
                    }
                }
            }
            None => {}
        }
    }

    fn string(
        &self,
        s: &serde_json::Map<String, Json>,
        st: &str,
        loc: &str,
        errs: &mut Vec<SchemaError>,
    ) {
        let len = st.chars().count() as u64;
        if let Some(n) = s.get("maxLength").and_then(Json::as_u64)
            && len > n
        {
            errs.push(Self::err(loc, format!("maxLength: got {len}, want {n}")));
        }
        if let Some(n) = s.get("minLength").and_then(Json::as_u64)
            && len < n
        {
            errs.push(Self::err(loc, format!("minLength: got {len}, want {n}")));
        }
        if let Some(Json::String(p)) = s.get("pattern")
            && let Ok(re) = regex::Regex::new(p)
            && !re.is_match(st)
        {
            errs.push(Self::err(loc, format!("'{st}' does not match pattern '{p}'")));
        }
    }

    fn number(
        &self,
        s: &serde_json::Map<String, Json>,
        n: f64,
        loc: &str,
        errs: &mut Vec<SchemaError>,
    ) {
        let f = |k: &str| s.get(k).and_then(Json::as_f64);
        if let Some(m) = f("minimum")
            && n < m
        {
            errs.push(Self::err(
                loc,
                format!("minimum: got {}, want {}", num_text(n), num_text(m)),
            ));
        }
        if let Some(m) = f("maximum")
            && n > m
        {
            errs.push(Self::err(
                loc,
                format!("maximum: got {}, want {}", num_text(n), num_text(m)),
            ));
        }
        if let Some(m) = f("exclusiveMinimum")
            && n <= m
        {
            errs.push(Self::err(
                loc,
                format!("exclusiveMinimum: got {}, want {}", num_text(n), num_text(m)),
            ));
        }
        if let Some(m) = f("exclusiveMaximum")
            && n >= m
        {
            errs.push(Self::err(
                loc,
                format!("exclusiveMaximum: got {}, want {}", num_text(n), num_text(m)),
            ));
        }
        if let Some(m) = f("multipleOf")
            && m != 0.0
            && (n / m).fract() != 0.0
        {
            errs.push(Self::err(
                loc,
                format!("multipleOf: got {}, want {}", num_text(n), num_text(m)),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reports_like_helm() {
        let schema = json!({
            "type": "object",
            "required": ["name"],
            "properties": {
                "replicas": {"type": "integer", "minimum": 1},
                "mode": {"enum": ["a", "b"]},
                "port": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
                "ref": {"$ref": "#/definitions/s"}
            },
            "definitions": {"s": {"type": "string"}}
        });
        let out = validate(&schema, &json!({"replicas": 0.0, "mode": "c", "port": "x", "ref": 1}))
            .unwrap();
        assert_eq!(
            out,
            "- at '': missing property 'name'\n- at '/mode': value must be one of 'a', 'b'\n- at '/port': 'anyOf' failed\n  - at '/port': got string, want integer\n  - at '/port': got string, want null\n- at '/ref': got number, want string\n- at '/replicas': minimum: got 0, want 1"
        );
        assert!(validate(&schema, &json!({"name": "x", "replicas": 2.0, "port": null})).is_none());
    }
}
