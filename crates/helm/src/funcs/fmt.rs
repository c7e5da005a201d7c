//! Go's fmt: Sprintf with the common verbs, strconv.Quote.

use std::fmt::Write as _;

use crate::value::{Value, format_f_digits, format_float_g, shortest_digits};

/// Go's `strconv.Quote`.
pub fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\x07' => out.push_str("\\a"),
            '\x08' => out.push_str("\\b"),
            '\x0c' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\x0b' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if !is_go_print(c) => {
                if (c as u32) < 0x10000 {
                    let _ = write!(out, "\\u{:04x}", c as u32);
                } else {
                    let _ = write!(out, "\\U{:08x}", c as u32);
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn is_go_print(c: char) -> bool {
    let u = c as u32;
    if u < 0x20 || (0x7f..0xa0).contains(&u) || u == 0xad {
        return false;
    }
    !matches!(u, 0x2028 | 0x2029 | 0xfeff | 0xfff9..=0xfffb | 0xe000..=0xf8ff | 0xd800..=0xdfff)
}

struct Spec {
    minus: bool,
    plus: bool,
    sharp: bool,
    space: bool,
    zero: bool,
    width: Option<usize>,
    prec: Option<usize>,
}

fn pad(s: &str, spec: &Spec, numeric: bool) -> String {
    let Some(w) = spec.width else {
        return s.to_string();
    };
    let len = s.chars().count();
    if len >= w {
        return s.to_string();
    }
    let n = w - len;
    if spec.minus {
        format!("{s}{}", " ".repeat(n))
    } else if spec.zero && numeric {
        let (sign, rest) =
            if s.starts_with('-') || s.starts_with('+') { s.split_at(1) } else { ("", s) };
        format!("{sign}{}{rest}", "0".repeat(n))
    } else {
        format!("{}{s}", " ".repeat(n))
    }
}

fn bad(verb: char, v: &Value) -> String {
    match v {
        Value::Nil => format!("%!{verb}(<nil>)"),
        other => format!("%!{verb}({}={})", other.type_name(), other.to_go_string()),
    }
}

fn fmt_int(i: i64, verb: char, spec: &Spec) -> String {
    let neg = i < 0;
    let u = i.unsigned_abs();
    let mut body = match verb {
        'd' | 'v' => u.to_string(),
        'x' => format!("{u:x}"),
        'X' => format!("{u:X}"),
        'o' => format!("{u:o}"),
        'b' => format!("{u:b}"),
        _ => u.to_string(),
    };
    if let Some(p) = spec.prec
        && body.len() < p
    {
        body = format!("{}{body}", "0".repeat(p - body.len()));
    }
    if spec.sharp {
        match verb {
            'x' => body = format!("0x{body}"),
            'X' => body = format!("0X{body}"),
            'o' => body = format!("0{body}"),
            _ => {}
        }
    }
    if neg {
        body = format!("-{body}");
    } else if spec.plus {
        body = format!("+{body}");
    } else if spec.space {
        body = format!(" {body}");
    }
    body
}

/// %e with precision p.
fn fmt_e(f: f64, p: usize, upper: bool) -> String {
    let s = format!("{:.*e}", p, f);
    let (m, e) = s.split_once('e').unwrap_or((&s, "0"));
    let e: i32 = e.parse().unwrap_or(0);
    let sign = if e < 0 { '-' } else { '+' };
    let out = format!("{m}e{sign}{:02}", e.abs());
    if upper { out.to_uppercase() } else { out }
}

fn fmt_float(f: f64, verb: char, spec: &Spec) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "+Inf".into() } else { "-Inf".into() };
    }
    let mut s = match verb {
        'f' | 'F' => format!("{:.*}", spec.prec.unwrap_or(6), f),
        'e' | 'E' => fmt_e(f, spec.prec.unwrap_or(6), verb == 'E'),
        'g' | 'G' | 'v' => match spec.prec {
            None => format_float_g(f),
            Some(p) => {
                let p = p.max(1);
                let e = fmt_e(f, p - 1, false);
                let exp: i32 = e.split_once('e').map(|x| x.1.parse().unwrap_or(0)).unwrap_or(0);
                if exp < -4 || exp >= p as i32 {
                    // trim trailing zeros in mantissa
                    let (m, ex) = e.split_once('e').unwrap_or((&e, ""));
                    let m = if m.contains('.') {
                        m.trim_end_matches('0').trim_end_matches('.')
                    } else {
                        m
                    };
                    format!("{m}e{ex}")
                } else {
                    let (neg, digits, dp) = shortest_digits(f);
                    let _ = digits;
                    let fixed = format!("{:.*}", (p as i32 - 1 - exp).max(0) as usize, f);
                    let _ = (neg, dp);
                    if fixed.contains('.') {
                        fixed.trim_end_matches('0').trim_end_matches('.').to_string()
                    } else {
                        fixed
                    }
                }
            }
        },
        _ => format_float_g(f),
    };
    if spec.plus && !s.starts_with('-') {
        s = format!("+{s}");
    } else if spec.space && !s.starts_with('-') {
        s = format!(" {s}");
    }
    let _ = format_f_digits;
    s
}

fn fmt_value(v: &Value, verb: char, spec: &Spec) -> String {
    match verb {
        'v' => match v {
            Value::Int(i) | Value::Int64(i) => pad(&fmt_int(*i, 'd', spec), spec, true),
            Value::Float(f) => pad(&fmt_float(*f, 'g', spec), spec, true),
            Value::Str(s) => pad(s, spec, false),
            Value::List(l) if spec.plus || spec.sharp => {
                pad(&list_with(l, verb, spec), spec, false)
            }
            other => pad(&other.to_go_string(), spec, false),
        },
        's' => match v {
            Value::Str(s) => {
                let t: String = match spec.prec {
                    Some(p) => s.chars().take(p).collect(),
                    None => s.to_string(),
                };
                pad(&t, spec, false)
            }
            Value::List(l) => pad(&list_with(l, verb, spec), spec, false),
            Value::Map(_) => pad(&v.to_go_string(), spec, false),
            Value::Object(o) => pad(&o.display(), spec, false),
            other => bad(verb, other),
        },
        'q' => match v {
            Value::Str(s) => pad(&go_quote(s), spec, false),
            Value::Int(i) | Value::Int64(i) => {
                let c = char::from_u32(*i as u32).unwrap_or('\u{fffd}');
                let q = go_quote(&c.to_string());
                pad(
                    &format!("'{}'", &q[1..q.len() - 1].replace("\\\"", "\"").replace('\'', "\\'")),
                    spec,
                    false,
                )
            }
            Value::List(l) => pad(&list_with(l, verb, spec), spec, false),
            Value::Object(o) => pad(&go_quote(&o.display()), spec, false),
            other => bad(verb, other),
        },
        'd' | 'o' | 'b' | 'c' | 'U' => match v {
            Value::Int(i) | Value::Int64(i) => {
                if verb == 'c' {
                    char::from_u32(*i as u32).map(|c| c.to_string()).unwrap_or_default()
                } else if verb == 'U' {
                    format!("U+{:04X}", i)
                } else {
                    pad(&fmt_int(*i, verb, spec), spec, true)
                }
            }
            Value::List(l) => pad(&list_with(l, verb, spec), spec, false),
            other => bad(verb, other),
        },
        'x' | 'X' => match v {
            Value::Int(i) | Value::Int64(i) => pad(&fmt_int(*i, verb, spec), spec, true),
            Value::Str(s) => {
                let mut h = String::new();
                for b in s.bytes() {
                    if verb == 'x' {
                        let _ = write!(h, "{b:02x}");
                    } else {
                        let _ = write!(h, "{b:02X}");
                    }
                }
                pad(&h, spec, false)
            }
            Value::List(l) => pad(&list_with(l, verb, spec), spec, false),
            other => bad(verb, other),
        },
        't' => match v {
            Value::Bool(b) => pad(if *b { "true" } else { "false" }, spec, false),
            other => bad(verb, other),
        },
        'f' | 'F' | 'e' | 'E' | 'g' | 'G' => match v {
            Value::Float(f) => pad(&fmt_float(*f, verb, spec), spec, true),
            Value::List(l) => pad(&list_with(l, verb, spec), spec, false),
            other => bad(verb, other),
        },
        'T' => pad(&v.type_name(), spec, false),
        _ => format!("%!{verb}(BADVERB)"),
    }
}

fn list_with(l: &[Value], verb: char, spec: &Spec) -> String {
    let inner = Spec {
        minus: spec.minus,
        plus: spec.plus,
        sharp: spec.sharp,
        space: spec.space,
        zero: spec.zero,
        width: None,
        prec: spec.prec,
    };
    let parts: Vec<String> = l.iter().map(|x| fmt_value(x, verb, &inner)).collect();
    format!("[{}]", parts.join(" "))
}

/// Go's `fmt.Sprintf`.
pub fn go_sprintf(format: &str, args: &[Value]) -> String {
    let mut out = String::new();
    let chars: Vec<char> = format.chars().collect();
    let mut i = 0;
    let mut argi = 0;
    while i < chars.len() {
        let c = chars[i];
        if c != '%' {
            out.push(c);
            i += 1;
            continue;
        }
        i += 1;
        let mut spec = Spec {
            minus: false,
            plus: false,
            sharp: false,
            space: false,
            zero: false,
            width: None,
            prec: None,
        };
        while i < chars.len() {
            match chars[i] {
                '-' => spec.minus = true,
                '+' => spec.plus = true,
                '#' => spec.sharp = true,
                ' ' => spec.space = true,
                '0' => spec.zero = !spec.minus,
                _ => break,
            }
            i += 1;
        }
        // width
        if i < chars.len() && chars[i] == '*' {
            i += 1;
            if let Some(a) = args.get(argi) {
                spec.width = Some(crate::funcs::to_i64(a).max(0) as usize);
            }
            argi += 1;
        } else {
            let st = i;
            while i < chars.len() && chars[i].is_ascii_digit() {
                i += 1;
            }
            if i > st {
                spec.width = chars[st..i].iter().collect::<String>().parse().ok();
            }
        }
        if i < chars.len() && chars[i] == '.' {
            i += 1;
            if i < chars.len() && chars[i] == '*' {
                i += 1;
                if let Some(a) = args.get(argi) {
                    spec.prec = Some(crate::funcs::to_i64(a).max(0) as usize);
                }
                argi += 1;
            } else {
                let st = i;
                while i < chars.len() && chars[i].is_ascii_digit() {
                    i += 1;
                }
                spec.prec = Some(chars[st..i].iter().collect::<String>().parse().unwrap_or(0));
            }
        }
        if i >= chars.len() {
            out.push_str("%!(NOVERB)");
            break;
        }
        let verb = chars[i];
        i += 1;
        if verb == '%' {
            out.push('%');
            continue;
        }
        match args.get(argi) {
            None => {
                let _ = write!(out, "%!{verb}(MISSING)");
            }
            Some(v) => {
                out.push_str(&fmt_value(v, verb, &spec));
            }
        }
        argi += 1;
    }
    if argi < args.len() {
        out.push_str("%!(EXTRA ");
        let extra: Vec<String> = args[argi..]
            .iter()
            .map(|v| match v {
                Value::Nil => "<nil>".to_string(),
                v => format!("{}={}", v.type_name(), v.to_go_string()),
            })
            .collect();
        out.push_str(&extra.join(", "));
        out.push(')');
    }
    out
}

/// Go's `fmt.Sprint`: spaces between operands when neither is a string.
pub fn go_sprint(args: &[Value]) -> String {
    let mut out = String::new();
    for (i, a) in args.iter().enumerate() {
        if i > 0 {
            let prev_str = matches!(args[i - 1], Value::Str(_));
            let cur_str = matches!(a, Value::Str(_));
            if !prev_str && !cur_str {
                out.push(' ');
            }
        }
        out.push_str(&a.to_go_string());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sprintf_verbs() {
        let a = |v: Vec<Value>| v;
        assert_eq!(go_sprintf("%s-%d", &a(vec![Value::str("x"), Value::Int(3)])), "x-3");
        assert_eq!(
            go_sprintf(
                "%05d|%-4s|%q",
                &a(vec![Value::Int(42), Value::str("ab"), Value::str("q\"")])
            ),
            "00042|ab  |\"q\\\"\""
        );
        assert_eq!(
            go_sprintf(
                "%.2f %v %t",
                &a(vec![Value::Float(1.005), Value::Float(1e6), Value::Bool(true)])
            ),
            "1.00 1e+06 true"
        );
        assert_eq!(go_sprintf("%d", &a(vec![Value::str("x")])), "%!d(string=x)");
        assert_eq!(go_sprintf("%s %s", &a(vec![Value::str("x")])), "x %!s(MISSING)");
        assert_eq!(go_sprintf("%x", &a(vec![Value::Int(255)])), "ff");
        assert_eq!(
            go_sprint(&[Value::Int(1), Value::Int(2), Value::str("a"), Value::Int(3)]),
            "1 2a3"
        );
    }
}
