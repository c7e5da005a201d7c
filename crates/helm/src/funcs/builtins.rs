//! Go text/template builtin functions.

use std::cmp::Ordering;

use super::fmt::{go_sprint, go_sprintf};
use super::{Func, arity, min_arity, s};
use crate::template::{Exec, FnError};
use crate::value::Value;

pub(super) static FUNCS: &[(&str, Func)] = &[
    ("not", not),
    ("len", len),
    ("index", index),
    ("print", print),
    ("printf", printf),
    ("println", println),
    ("eq", eq),
    ("ne", ne),
    ("lt", lt),
    ("le", le),
    ("gt", gt),
    ("ge", ge),
    ("html", html),
    ("js", js),
    ("urlquery", urlquery),
    ("call", call),
];

type R = Result<Value, FnError>;

fn not(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("not", a, 1)?;
    Ok(Value::Bool(!a[0].truthy()))
}

fn len(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("len", a, 1)?;
    Ok(Value::Int(match &a[0] {
        Value::Str(s) => s.len() as i64,
        Value::List(l) => l.len() as i64,
        Value::Map(m) => m.borrow().len() as i64,
        Value::Object(o) => match o.to_plain() {
            Value::List(l) => l.len() as i64,
            Value::Map(m) => m.borrow().len() as i64,
            _ => return Err(FnError::Msg(format!("len of type {}", o.type_name()))),
        },
        Value::Nil => return Err("len of nil pointer".into()),
        other => return Err(FnError::Msg(format!("len of type {}", other.type_name()))),
    }))
}

pub(crate) fn index_value(item: &Value, keys: &[Value]) -> R {
    let mut cur = item.clone();
    for k in keys {
        cur = match &cur {
            Value::Map(m) => match k {
                Value::Str(key) => m.borrow().get(&**key).cloned().unwrap_or(Value::Nil),
                Value::Nil => Value::Nil,
                other => {
                    return Err(FnError::Msg(format!(
                        "value has type {}; should be string",
                        other.type_name()
                    )));
                }
            },
            Value::List(l) => {
                let i = match k {
                    Value::Int(i) | Value::Int64(i) => *i,
                    other => {
                        return Err(FnError::Msg(format!(
                            "cannot index slice/array with type {}",
                            other.type_name()
                        )));
                    }
                };
                if i < 0 || i as usize >= l.len() {
                    return Err(FnError::Msg(format!("index out of range: {i}")));
                }
                l[i as usize].clone()
            }
            Value::Str(s) => {
                let i = match k {
                    Value::Int(i) | Value::Int64(i) => *i,
                    other => {
                        return Err(FnError::Msg(format!(
                            "cannot index slice/array with type {}",
                            other.type_name()
                        )));
                    }
                };
                if i < 0 || i as usize >= s.len() {
                    return Err(FnError::Msg(format!("index out of range: {i}")));
                }
                Value::Int(s.as_bytes()[i as usize] as i64)
            }
            Value::Nil => return Err("index of untyped nil".into()),
            Value::Object(o) => index_value(&o.to_plain(), std::slice::from_ref(k))?,
            other => {
                return Err(FnError::Msg(format!(
                    "can't index item of type {}",
                    other.type_name()
                )));
            }
        };
    }
    Ok(cur)
}

fn index(_: &mut Exec<'_>, a: &[Value]) -> R {
    min_arity("index", a, 1)?;
    index_value(&a[0], &a[1..])
}

fn print(_: &mut Exec<'_>, a: &[Value]) -> R {
    Ok(Value::str(go_sprint(a)))
}

fn printf(_: &mut Exec<'_>, a: &[Value]) -> R {
    min_arity("printf", a, 1)?;
    Ok(Value::str(go_sprintf(&s(&a[0]), &a[1..])))
}

fn println(_: &mut Exec<'_>, a: &[Value]) -> R {
    let parts: Vec<String> = a.iter().map(Value::to_go_string).collect();
    Ok(Value::str(format!("{}\n", parts.join(" "))))
}

#[derive(PartialEq, Eq, Clone, Copy)]
enum Kind {
    Bool,
    Int,
    Float,
    Str,
    Other,
    Invalid,
}

fn kind(v: &Value) -> Kind {
    match v {
        Value::Bool(_) => Kind::Bool,
        Value::Int(_) | Value::Int64(_) => Kind::Int,
        Value::Float(_) => Kind::Float,
        Value::Str(_) => Kind::Str,
        Value::Nil => Kind::Invalid,
        _ => Kind::Other,
    }
}

pub(crate) fn go_eq(a: &Value, b: &Value) -> Result<bool, FnError> {
    let (ka, kb) = (kind(a), kind(b));
    if ka != kb {
        if ka == Kind::Invalid || kb == Kind::Invalid {
            return Ok(false);
        }
        return Err(FnError::Msg(format!(
            "incompatible types for comparison: {} and {}",
            a.type_name(),
            b.type_name()
        )));
    }
    Ok(match (a, b) {
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Int(x) | Value::Int64(x), Value::Int(y) | Value::Int64(y)) => x == y,
        (Value::Float(x), Value::Float(y)) => x == y,
        (Value::Str(x), Value::Str(y)) => x == y,
        (Value::Nil, Value::Nil) => true,
        (Value::Map(_), _) | (Value::List(_), _) | (_, Value::Map(_)) | (_, Value::List(_)) => {
            return Err(FnError::Msg(format!(
                "non-comparable type {}: {}",
                a.to_go_string(),
                a.type_name()
            )));
        }
        (Value::Object(x), Value::Object(y)) => {
            x.type_name() == y.type_name() && x.display() == y.display()
        }
        _ => false,
    })
}

fn eq(_: &mut Exec<'_>, a: &[Value]) -> R {
    if a.len() < 2 {
        return Err("missing argument for comparison".into());
    }
    for b in &a[1..] {
        if go_eq(&a[0], b)? {
            return Ok(Value::Bool(true));
        }
    }
    Ok(Value::Bool(false))
}

fn ne(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("ne", a, 2)?;
    Ok(Value::Bool(!go_eq(&a[0], &a[1])?))
}

fn go_lt(a: &Value, b: &Value) -> Result<Ordering, FnError> {
    let (ka, kb) = (kind(a), kind(b));
    if ka != kb {
        return Err(FnError::Msg(format!(
            "incompatible types for comparison: {} and {}",
            a.type_name(),
            b.type_name()
        )));
    }
    match (a, b) {
        (Value::Int(x) | Value::Int64(x), Value::Int(y) | Value::Int64(y)) => Ok(x.cmp(y)),
        (Value::Float(x), Value::Float(y)) => Ok(x.partial_cmp(y).unwrap_or(Ordering::Equal)),
        (Value::Str(x), Value::Str(y)) => Ok(x.cmp(y)),
        _ => Err("invalid type for comparison".into()),
    }
}

fn lt(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("lt", a, 2)?;
    Ok(Value::Bool(go_lt(&a[0], &a[1])? == Ordering::Less))
}
fn le(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("le", a, 2)?;
    Ok(Value::Bool(go_lt(&a[0], &a[1])? != Ordering::Greater))
}
fn gt(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("gt", a, 2)?;
    Ok(Value::Bool(go_lt(&a[0], &a[1])? == Ordering::Greater))
}
fn ge(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("ge", a, 2)?;
    Ok(Value::Bool(go_lt(&a[0], &a[1])? != Ordering::Less))
}

fn eval_args(a: &[Value]) -> String {
    if a.len() == 1
        && let Value::Str(s) = &a[0]
    {
        return s.to_string();
    }
    go_sprint(a)
}

fn html(_: &mut Exec<'_>, a: &[Value]) -> R {
    let s = eval_args(a);
    let mut out = String::new();
    for c in s.chars() {
        match c {
            '"' => out.push_str("&#34;"),
            '\'' => out.push_str("&#39;"),
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\0' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    Ok(Value::str(out))
}

fn js(_: &mut Exec<'_>, a: &[Value]) -> R {
    let s = eval_args(a);
    let mut out = String::new();
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            '"' => out.push_str("\\\""),
            '<' => out.push_str("\\u003C"),
            '>' => out.push_str("\\u003E"),
            '&' => out.push_str("\\u0026"),
            '=' => out.push_str("\\u003D"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    Ok(Value::str(out))
}

/// Go's url.QueryEscape.
pub(crate) fn query_escape(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

fn urlquery(_: &mut Exec<'_>, a: &[Value]) -> R {
    Ok(Value::str(query_escape(&eval_args(a))))
}

fn call(_: &mut Exec<'_>, _a: &[Value]) -> R {
    Err("call of non-function".into())
}
