//! The dynamic value model used by the template engine.
//!
//! It mirrors the Go values Helm templates work with: maps are shared by
//! reference (so Sprig's `set`/`unset` mutate them in place), lists are
//! immutable and shared, numbers keep Go's distinction between `int`,
//! `int64` and `float64`.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::rc::Rc;

/// Map storage: keys are kept sorted, as Go sorts them when printing or
/// ranging over maps.
pub type Map = BTreeMap<String, Value>;

/// A shared, mutable map.
pub type MapRef = Rc<RefCell<Map>>;

/// A Go-like dynamic value.
#[derive(Clone, Default)]
pub enum Value {
    /// Go's untyped `nil` (also a missing value).
    #[default]
    Nil,
    /// `bool`.
    Bool(bool),
    /// `int`.
    Int(i64),
    /// `int64`.
    Int64(i64),
    /// `float64`.
    Float(f64),
    /// `string`.
    Str(Rc<str>),
    /// `[]interface{}`.
    List(Rc<Vec<Value>>),
    /// `map[string]interface{}`.
    Map(MapRef),
    /// A Go object with fields and methods (Capabilities, Files, ...).
    Object(Rc<dyn Object>),
}

/// A Go object exposed to templates: struct fields and methods.
pub trait Object {
    /// Go type name, as `typeOf` prints it.
    fn type_name(&self) -> String;
    /// Go kind name, as `kindOf` prints it.
    fn kind_name(&self) -> &'static str {
        "ptr"
    }
    /// A struct field or a zero-argument method result.
    fn field(&self, name: &str) -> Option<Value>;
    /// Calls a method with arguments; `None` when there is no such method.
    fn call(&self, _name: &str, _args: &[Value]) -> Option<Result<Value, String>> {
        None
    }
    /// Whether a method with that name exists (methods take arguments).
    fn has_method(&self, _name: &str) -> bool {
        false
    }
    /// The `%v` rendering.
    fn display(&self) -> String;
    /// The JSON-like view used by toYaml/toJson.
    fn to_plain(&self) -> Value;
    /// Whether Go would consider this value "empty" (Sprig `empty`).
    fn is_empty(&self) -> bool {
        false
    }
}

impl std::fmt::Debug for Value {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Value::Nil => write!(f, "nil"),
            Value::Bool(b) => write!(f, "{b}"),
            Value::Int(i) => write!(f, "{i}"),
            Value::Int64(i) => write!(f, "int64({i})"),
            Value::Float(x) => write!(f, "float64({x})"),
            Value::Str(s) => write!(f, "{s:?}"),
            Value::List(l) => f.debug_list().entries(l.iter()).finish(),
            Value::Map(m) => f.debug_map().entries(m.borrow().iter()).finish(),
            Value::Object(o) => write!(f, "{}", o.display()),
        }
    }
}

impl PartialEq for Value {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Value::Nil, Value::Nil) => true,
            (Value::Bool(a), Value::Bool(b)) => a == b,
            (Value::Int(a) | Value::Int64(a), Value::Int(b) | Value::Int64(b)) => a == b,
            (Value::Float(a), Value::Float(b)) => a == b,
            (Value::Str(a), Value::Str(b)) => a == b,
            (Value::List(a), Value::List(b)) => a == b,
            (Value::Map(a), Value::Map(b)) => Rc::ptr_eq(a, b) || *a.borrow() == *b.borrow(),
            (Value::Object(a), Value::Object(b)) => a.display() == b.display(),
            _ => false,
        }
    }
}

impl From<&str> for Value {
    fn from(s: &str) -> Self {
        Value::Str(Rc::from(s))
    }
}
impl From<String> for Value {
    fn from(s: String) -> Self {
        Value::Str(Rc::from(s))
    }
}
impl From<bool> for Value {
    fn from(b: bool) -> Self {
        Value::Bool(b)
    }
}
impl From<Vec<Value>> for Value {
    fn from(v: Vec<Value>) -> Self {
        Value::List(Rc::new(v))
    }
}
impl From<Map> for Value {
    fn from(m: Map) -> Self {
        Value::Map(Rc::new(RefCell::new(m)))
    }
}

impl Value {
    /// A new string value.
    pub fn str(s: impl AsRef<str>) -> Value {
        Value::Str(Rc::from(s.as_ref()))
    }

    /// A new empty map.
    pub fn new_map() -> Value {
        Value::Map(Rc::new(RefCell::new(Map::new())))
    }

    /// Go truthiness (`if`, `and`, `or`, `not`).
    pub fn truthy(&self) -> bool {
        match self {
            Value::Nil => false,
            Value::Bool(b) => *b,
            Value::Int(i) | Value::Int64(i) => *i != 0,
            Value::Float(f) => *f != 0.0,
            Value::Str(s) => !s.is_empty(),
            Value::List(l) => !l.is_empty(),
            Value::Map(m) => !m.borrow().is_empty(),
            Value::Object(_) => true,
        }
    }

    /// Sprig's `empty` (Go zero value test).
    pub fn is_empty(&self) -> bool {
        match self {
            Value::Object(o) => o.is_empty(),
            v => !v.truthy(),
        }
    }

    /// `true` for nil.
    pub fn is_nil(&self) -> bool {
        matches!(self, Value::Nil)
    }

    /// The string if this is a string.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The map if this is a map.
    pub fn as_map(&self) -> Option<&MapRef> {
        match self {
            Value::Map(m) => Some(m),
            _ => None,
        }
    }

    /// Map lookup (None when not a map or when missing).
    pub fn get(&self, key: &str) -> Option<Value> {
        match self {
            Value::Map(m) => m.borrow().get(key).cloned(),
            _ => None,
        }
    }

    /// Go type name (`typeOf`).
    pub fn type_name(&self) -> String {
        match self {
            Value::Nil => "<nil>".into(),
            Value::Bool(_) => "bool".into(),
            Value::Int(_) => "int".into(),
            Value::Int64(_) => "int64".into(),
            Value::Float(_) => "float64".into(),
            Value::Str(_) => "string".into(),
            Value::List(_) => "[]interface {}".into(),
            Value::Map(_) => "map[string]interface {}".into(),
            Value::Object(o) => o.type_name(),
        }
    }

    /// Go kind name (`kindOf`).
    pub fn kind_name(&self) -> &'static str {
        match self {
            Value::Nil => "invalid",
            Value::Bool(_) => "bool",
            Value::Int(_) => "int",
            Value::Int64(_) => "int64",
            Value::Float(_) => "float64",
            Value::Str(_) => "string",
            Value::List(_) => "slice",
            Value::Map(_) => "map",
            Value::Object(o) => o.kind_name(),
        }
    }

    /// Deep copy (maps get new identities).
    pub fn deep_copy(&self) -> Value {
        match self {
            Value::List(l) => Value::List(Rc::new(l.iter().map(Value::deep_copy).collect())),
            Value::Map(m) => {
                let copy: Map =
                    m.borrow().iter().map(|(k, v)| (k.clone(), v.deep_copy())).collect();
                copy.into()
            }
            v => v.clone(),
        }
    }

    /// The plain (JSON-like) view: objects become maps/strings.
    pub fn to_plain(&self) -> Value {
        match self {
            Value::Object(o) => o.to_plain(),
            Value::List(l) => Value::List(Rc::new(l.iter().map(Value::to_plain).collect())),
            Value::Map(m) => {
                let needs = m
                    .borrow()
                    .values()
                    .any(|v| matches!(v, Value::Object(_) | Value::List(_) | Value::Map(_)));
                if !needs {
                    return self.clone();
                }
                let copy: Map = m.borrow().iter().map(|(k, v)| (k.clone(), v.to_plain())).collect();
                copy.into()
            }
            v => v.clone(),
        }
    }

    /// Go's `fmt.Sprint` / `%v` rendering.
    pub fn to_go_string(&self) -> String {
        let mut s = String::new();
        self.write_go(&mut s, true);
        s
    }

    fn write_go(&self, out: &mut String, top: bool) {
        match self {
            Value::Nil => out.push_str("<nil>"),
            Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Value::Int(i) | Value::Int64(i) => {
                let _ = write!(out, "{i}");
            }
            Value::Float(f) => out.push_str(&format_float_g(*f)),
            Value::Str(s) => out.push_str(s),
            Value::List(l) => {
                out.push('[');
                for (i, v) in l.iter().enumerate() {
                    if i > 0 {
                        out.push(' ');
                    }
                    v.write_go(out, false);
                }
                out.push(']');
            }
            Value::Map(m) => {
                out.push_str("map[");
                for (i, (k, v)) in m.borrow().iter().enumerate() {
                    if i > 0 {
                        out.push(' ');
                    }
                    out.push_str(k);
                    out.push(':');
                    v.write_go(out, false);
                }
                out.push(']');
            }
            Value::Object(o) => {
                let _ = top;
                out.push_str(&o.display())
            }
        }
    }

    /// Converts from JSON: floating point numbers become float64 (as
    /// numbers of Helm values files do), integers become int64.
    pub fn from_json(v: &serde_json::Value) -> Value {
        match v {
            serde_json::Value::Null => Value::Nil,
            serde_json::Value::Bool(b) => Value::Bool(*b),
            serde_json::Value::Number(n) => match n.as_i64() {
                // Integers come from `--set` style input (Go int64);
                // numbers read from YAML/JSON values are float64.
                Some(i) if !n.is_f64() => Value::Int64(i),
                _ => Value::Float(n.as_f64().unwrap_or(0.0)),
            },
            serde_json::Value::String(s) => Value::str(s),
            serde_json::Value::Array(a) => {
                Value::List(Rc::new(a.iter().map(Value::from_json).collect()))
            }
            serde_json::Value::Object(o) => {
                let m: Map = o.iter().map(|(k, v)| (k.clone(), Value::from_json(v))).collect();
                m.into()
            }
        }
    }

    /// Converts to JSON (objects through their plain view).
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            Value::Nil => serde_json::Value::Null,
            Value::Bool(b) => serde_json::Value::Bool(*b),
            Value::Int(i) | Value::Int64(i) => serde_json::Value::from(*i),
            Value::Float(f) => serde_json::Number::from_f64(*f)
                .map(serde_json::Value::Number)
                .unwrap_or(serde_json::Value::Null),
            Value::Str(s) => serde_json::Value::String(s.to_string()),
            Value::List(l) => serde_json::Value::Array(l.iter().map(Value::to_json).collect()),
            Value::Map(m) => {
                let mut o = serde_json::Map::new();
                for (k, v) in m.borrow().iter() {
                    o.insert(k.clone(), v.to_json());
                }
                serde_json::Value::Object(o)
            }
            Value::Object(o) => o.to_plain().to_json(),
        }
    }
}

/// Splits a finite float into its shortest decimal digits and exponent
/// (value = 0.d1d2d3... * 10^dp).
pub(crate) fn shortest_digits(f: f64) -> (bool, String, i32) {
    let s = format!("{:e}", f.abs());
    let (mant, exp) = s.split_once('e').unwrap_or((&s, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mant.chars().filter(|c| c.is_ascii_digit()).collect();
    let digits = digits.trim_end_matches('0').to_string();
    let digits = if digits.is_empty() { "0".to_string() } else { digits };
    (f.is_sign_negative() && f != 0.0, digits, exp + 1)
}

/// Go's `strconv.FormatFloat(f, 'g', -1, 64)` (also `%v` for float64).
pub fn format_float_g(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "+Inf".into() } else { "-Inf".into() };
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0".into() } else { "0".into() };
    }
    let (neg, digits, dp) = shortest_digits(f);
    let exp = dp - 1;
    let mut out = String::new();
    if neg {
        out.push('-');
    }
    if !(-4..6).contains(&exp) {
        // %e form
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
        let e = exp.abs();
        if e < 10 {
            out.push('0');
        }
        let _ = write!(out, "{e}");
        return out;
    }
    out.push_str(&format_f_digits(&digits, dp, None));
    out
}

/// Formats digits with decimal point position dp in %f style; with
/// `prec` a fixed number of fraction digits (digits must be rounded by
/// the caller), otherwise as many as needed.
pub(crate) fn format_f_digits(digits: &str, dp: i32, prec: Option<usize>) -> String {
    let mut out = String::new();
    if dp <= 0 {
        out.push('0');
    } else {
        for i in 0..dp as usize {
            out.push(digits.as_bytes().get(i).map(|b| *b as char).unwrap_or('0'));
        }
    }
    let frac_len = match prec {
        Some(p) => p,
        None => (digits.len() as i32 - dp).max(0) as usize,
    };
    if frac_len > 0 {
        out.push('.');
        for i in 0..frac_len {
            let idx = dp + i as i32;
            let c = if idx < 0 {
                '0'
            } else {
                digits.as_bytes().get(idx as usize).map(|b| *b as char).unwrap_or('0')
            };
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_float_formatting() {
        assert_eq!(format_float_g(1.5), "1.5");
        assert_eq!(format_float_g(100000.0), "100000");
        assert_eq!(format_float_g(1000000.0), "1e+06");
        assert_eq!(format_float_g(0.0001), "0.0001");
        assert_eq!(format_float_g(0.00001), "1e-05");
        assert_eq!(format_float_g(3.0), "3");
        assert_eq!(format_float_g(-2.25), "-2.25");
    }

    #[test]
    fn go_printing() {
        let mut m = Map::new();
        m.insert("b".into(), Value::Int(1));
        m.insert("a".into(), Value::from(vec![Value::from("x"), Value::Nil]));
        assert_eq!(Value::from(m).to_go_string(), "map[a:[x <nil>] b:1]");
    }
}
