//! Go `encoding/json` style encoding and decoding.

use std::fmt::Write as _;

use crate::value::{Map, Value, format_f_digits, shortest_digits};

/// Go's float64 JSON text.
pub(crate) fn json_float(f: f64) -> Result<String, String> {
    if !f.is_finite() {
        return Err(format!("json: unsupported value: {}", crate::value::format_float_g(f)));
    }
    if f == 0.0 {
        return Ok(if f.is_sign_negative() { "-0".into() } else { "0".into() });
    }
    let abs = f.abs();
    let (neg, digits, dp) = shortest_digits(f);
    let mut out = String::new();
    if neg {
        out.push('-');
    }
    if !(1e-6..1e21).contains(&abs) {
        let exp = dp - 1;
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        out.push('e');
        if exp < 0 {
            out.push('-');
        } else {
            out.push('+');
        }
        let _ = write!(out, "{}", exp.abs());
        return Ok(out);
    }
    out.push_str(&format_f_digits(&digits, dp, None));
    Ok(out)
}

fn json_string(s: &str, escape_html: bool, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '<' | '>' | '&' if escape_html => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            '\u{2028}' | '\u{2029}' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Go's `json.Marshal` (with optional `MarshalIndent` prefix-less indent).
pub(crate) fn go_json(
    v: &Value,
    escape_html: bool,
    indent: Option<&str>,
) -> Result<String, String> {
    let mut out = String::new();
    write_json(&v.to_plain(), escape_html, indent, 0, &mut out)?;
    Ok(out)
}

fn newline(out: &mut String, indent: Option<&str>, depth: usize) {
    if let Some(ind) = indent {
        out.push('\n');
        for _ in 0..depth {
            out.push_str(ind);
        }
    }
}

fn write_json(
    v: &Value,
    eh: bool,
    indent: Option<&str>,
    depth: usize,
    out: &mut String,
) -> Result<(), String> {
    match v {
        Value::Nil => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Int(i) | Value::Int64(i) => {
            let _ = write!(out, "{i}");
        }
        Value::Float(f) => out.push_str(&json_float(*f)?),
        Value::Str(s) => json_string(s, eh, out),
        Value::List(l) => {
            if l.is_empty() {
                out.push_str("[]");
                return Ok(());
            }
            out.push('[');
            for (i, x) in l.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                newline(out, indent, depth + 1);
                write_json(x, eh, indent, depth + 1, out)?;
            }
            newline(out, indent, depth);
            out.push(']');
        }
        Value::Map(m) => {
            let m = m.borrow();
            if m.is_empty() {
                out.push_str("{}");
                return Ok(());
            }
            out.push('{');
            for (i, (k, x)) in m.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                newline(out, indent, depth + 1);
                json_string(k, eh, out);
                out.push(':');
                if indent.is_some() {
                    out.push(' ');
                }
                write_json(x, eh, indent, depth + 1, out)?;
            }
            newline(out, indent, depth);
            out.push('}');
        }
        Value::Object(o) => write_json(&o.to_plain(), eh, indent, depth, out)?,
    }
    Ok(())
}

/// Go's `json.Unmarshal` into `interface{}` (numbers are float64).
pub(crate) fn parse_json(s: &str) -> Result<Value, String> {
    let j: serde_json::Value = serde_json::from_str(s).map_err(|e| go_json_error(s, &e))?;
    Ok(from_json_f64(&j))
}

/// Go's encoding/json wording for the most common syntax errors.
fn go_json_error(s: &str, e: &serde_json::Error) -> String {
    if s.trim().is_empty() {
        return "unexpected end of JSON input".into();
    }
    if e.is_eof() {
        return "unexpected end of JSON input".into();
    }
    let line_start: usize =
        s.split_inclusive('\n').take(e.line().saturating_sub(1)).map(str::len).sum();
    let idx = line_start + e.column().saturating_sub(1);
    match s.get(idx..).and_then(|r| r.chars().next()) {
        Some(c) if e.to_string().starts_with("expected value") => {
            format!("invalid character '{c}' looking for beginning of value")
        }
        Some(c) => format!("invalid character '{c}' after top-level value"),
        None => "unexpected end of JSON input".into(),
    }
}

fn from_json_f64(j: &serde_json::Value) -> Value {
    match j {
        serde_json::Value::Null => Value::Nil,
        serde_json::Value::Bool(b) => Value::Bool(*b),
        serde_json::Value::Number(n) => Value::Float(n.as_f64().unwrap_or(0.0)),
        serde_json::Value::String(s) => Value::str(s),
        serde_json::Value::Array(a) => Value::from(a.iter().map(from_json_f64).collect::<Vec<_>>()),
        serde_json::Value::Object(o) => {
            let m: Map = o.iter().map(|(k, v)| (k.clone(), from_json_f64(v))).collect();
            m.into()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_json_encoding() {
        let v = crate::yaml::parse("b: [1, 2.5, '<x>']\na: {}\n", crate::yaml::Numbers::Native)
            .unwrap();
        assert_eq!(go_json(&v, true, None).unwrap(), r#"{"a":{},"b":[1,2.5,"\u003cx\u003e"]}"#);
        assert_eq!(go_json(&v, false, None).unwrap(), r#"{"a":{},"b":[1,2.5,"<x>"]}"#);
        assert_eq!(json_float(1e21).unwrap(), "1e+21");
        assert_eq!(json_float(0.0000001).unwrap(), "1e-7");
        assert_eq!(json_float(1000000.0).unwrap(), "1000000");
    }
}
