//! Template functions: Go builtins, Sprig, Helm.

mod builtins;
mod certs;
mod crypto;
mod fmt;
mod helm;
mod json;
mod rsa;
mod sprig;
mod time;

use std::collections::HashMap;
use std::sync::OnceLock;

use crate::template::{Exec, FnError};
use crate::value::Value;

pub use certs::{
    KeyAlgorithm, calls_key_function, reserve_rsa_keys, start_key_pool, stop_key_pool,
};
pub use fmt::go_sprintf;

pub(crate) use time::go_time_format;

/// A template function.
pub type Func = fn(&mut Exec<'_>, &[Value]) -> Result<Value, FnError>;

/// Functions evaluated lazily by the executor.
#[derive(Debug, Clone, Copy)]
pub enum Special {
    /// `and`.
    And,
    /// `or`.
    Or,
}

/// A resolved function.
#[derive(Clone, Copy)]
pub enum FuncRef {
    /// A regular function.
    Normal(Func),
    /// Short-circuit operators.
    Special(Special),
}

impl std::fmt::Debug for FuncRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FuncRef::Normal(_) => write!(f, "func"),
            FuncRef::Special(s) => write!(f, "{s:?}"),
        }
    }
}

fn table() -> &'static HashMap<&'static str, FuncRef> {
    static T: OnceLock<HashMap<&'static str, FuncRef>> = OnceLock::new();
    T.get_or_init(|| {
        let mut m: HashMap<&'static str, FuncRef> = HashMap::new();
        m.insert("and", FuncRef::Special(Special::And));
        m.insert("or", FuncRef::Special(Special::Or));
        for (name, f) in builtins::FUNCS
            .iter()
            .chain(sprig::FUNCS)
            .chain(helm::FUNCS)
            .chain(certs::FUNCS)
            .chain(time::FUNCS)
            .chain(crypto::FUNCS)
        {
            m.insert(name, FuncRef::Normal(*f));
        }
        m
    })
}

/// Looks a function up by name.
pub fn lookup(name: &str) -> Option<FuncRef> {
    table().get(name).copied()
}

/// Names of all functions (for reporting).
pub fn names() -> Vec<&'static str> {
    let mut v: Vec<&'static str> = table().keys().copied().collect();
    v.sort_unstable();
    v
}

// ---- argument helpers ----------------------------------------------------

pub(crate) fn arity(name: &str, args: &[Value], n: usize) -> Result<(), FnError> {
    if args.len() != n {
        return Err(FnError::Msg(format!(
            "wrong number of args for {name}: want {n} got {}",
            args.len()
        )));
    }
    Ok(())
}

pub(crate) fn min_arity(name: &str, args: &[Value], n: usize) -> Result<(), FnError> {
    if args.len() < n {
        return Err(FnError::Msg(format!(
            "wrong number of args for {name}: want at least {n} got {}",
            args.len()
        )));
    }
    Ok(())
}

/// A `string` parameter (nil tolerated as "").
pub(crate) fn s(v: &Value) -> String {
    match v {
        Value::Str(s) => s.to_string(),
        Value::Nil => String::new(),
        other => other.to_go_string(),
    }
}

/// Sprig's `strval`.
pub(crate) fn strval(v: &Value) -> String {
    v.to_go_string()
}

/// spf13/cast `ToInt64`.
pub(crate) fn to_i64(v: &Value) -> i64 {
    match v {
        Value::Nil => 0,
        Value::Bool(b) => i64::from(*b),
        Value::Int(i) | Value::Int64(i) => *i,
        Value::Float(f) => *f as i64,
        Value::Str(s) => {
            let t = trim_zero_decimal(s);
            crate::yaml::go_parse_int(&t).unwrap_or(0)
        }
        _ => 0,
    }
}

fn trim_zero_decimal(s: &str) -> String {
    if let Some((a, b)) = s.split_once('.')
        && !b.is_empty()
        && b.bytes().all(|c| c == b'0')
        && !a.is_empty()
    {
        return a.to_string();
    }
    s.to_string()
}

/// spf13/cast `ToFloat64`.
pub(crate) fn to_f64(v: &Value) -> f64 {
    match v {
        Value::Nil => 0.0,
        Value::Bool(b) => f64::from(u8::from(*b)),
        Value::Int(i) | Value::Int64(i) => *i as f64,
        Value::Float(f) => *f,
        Value::Str(s) => s.parse::<f64>().unwrap_or(0.0),
        _ => 0.0,
    }
}

/// Sprig's `strslice`.
pub(crate) fn strslice(v: &Value) -> Vec<String> {
    match v {
        Value::List(l) => l.iter().filter(|x| !x.is_nil()).map(strval).collect(),
        Value::Nil => Vec::new(),
        Value::Object(o) => match o.to_plain() {
            Value::List(l) => l.iter().map(strval).collect(),
            _ => vec![strval(v)],
        },
        other => vec![strval(other)],
    }
}

/// A list argument (sprig accepts any slice).
pub(crate) fn list_of(name: &str, v: &Value) -> Result<Vec<Value>, FnError> {
    match v {
        Value::List(l) => Ok(l.as_ref().clone()),
        Value::Object(o) => match o.to_plain() {
            Value::List(l) => Ok(l.as_ref().clone()),
            _ => Err(FnError::Msg(format!("Cannot find {name} on type {}", v.type_name()))),
        },
        Value::Nil => Err(FnError::Msg(format!("Cannot find {name} on type <nil>"))),
        other => Err(FnError::Msg(format!("Cannot find {name} on type {}", other.type_name()))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cast_semantics() {
        assert_eq!(to_i64(&Value::str("42")), 42);
        assert_eq!(to_i64(&Value::str("42.0")), 42);
        assert_eq!(to_i64(&Value::str("0x10")), 16);
        assert_eq!(to_i64(&Value::str("abc")), 0);
        assert_eq!(to_i64(&Value::Float(3.9)), 3);
        assert!(names().len() > 150);
    }
}
