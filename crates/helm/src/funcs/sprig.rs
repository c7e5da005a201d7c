//! Sprig functions (strings, lists, dicts, math, encoding, regex, ...).

use std::rc::Rc;

use base64::Engine as _;
use rand::Rng as _;
use regex::Regex;
use sha2::Digest as _;

use super::fmt::go_quote;
use super::{Func, arity, list_of, min_arity, s, strslice, strval, to_f64, to_i64};
use crate::limits;
use crate::objects::SemverObj;
use crate::template::{Exec, FnError};
use crate::value::{Map, Value};

type R = Result<Value, FnError>;

pub(super) static FUNCS: &[(&str, Func)] = &[
    // strings
    ("trim", trim),
    ("trimAll", trim_all),
    ("trimall", trim_all),
    ("trimPrefix", trim_prefix),
    ("trimSuffix", trim_suffix),
    ("upper", upper),
    ("lower", lower),
    ("title", title),
    ("untitle", untitle),
    ("repeat", repeat),
    ("substr", substr),
    ("nospace", nospace),
    ("trunc", trunc),
    ("abbrev", abbrev),
    ("abbrevboth", abbrevboth),
    ("initials", initials),
    ("randAlphaNum", rand_alpha_num),
    ("randAlpha", rand_alpha),
    ("randNumeric", rand_numeric),
    ("randAscii", rand_ascii),
    ("wrap", wrap),
    ("wrapWith", wrap_with),
    ("contains", contains),
    ("hasPrefix", has_prefix),
    ("hasSuffix", has_suffix),
    ("quote", quote),
    ("squote", squote),
    ("cat", cat),
    ("indent", indent),
    ("nindent", nindent),
    ("replace", replace),
    ("plural", plural),
    ("snakecase", snakecase),
    ("camelcase", camelcase),
    ("kebabcase", kebabcase),
    ("swapcase", swapcase),
    ("shuffle", shuffle),
    ("toString", to_string),
    ("toStrings", to_strings),
    ("join", join),
    ("sortAlpha", sort_alpha),
    ("split", split),
    ("splitList", split_list),
    ("splitn", splitn),
    // hashes / encodings
    ("sha1sum", sha1sum),
    ("sha256sum", sha256sum),
    ("sha512sum", sha512sum),
    ("adler32sum", adler32sum),
    ("b64enc", b64enc),
    ("b64dec", b64dec),
    ("b32enc", b32enc),
    ("b32dec", b32dec),
    ("uuidv4", uuidv4),
    ("randBytes", rand_bytes),
    // conversions
    ("atoi", atoi),
    ("int", int),
    ("int64", int64),
    ("float64", float64),
    ("toDecimal", to_decimal),
    // math
    ("add1", add1),
    ("add", add),
    ("sub", sub),
    ("div", div),
    ("mod", modulo),
    ("mul", mul),
    ("max", max),
    ("min", min),
    ("biggest", max),
    ("add1f", add1f),
    ("addf", addf),
    ("subf", subf),
    ("divf", divf),
    ("mulf", mulf),
    ("maxf", maxf),
    ("minf", minf),
    ("floor", floor),
    ("ceil", ceil),
    ("round", round),
    ("until", until),
    ("untilStep", until_step),
    ("seq", seq),
    // defaults
    ("default", default),
    ("empty", empty),
    ("coalesce", coalesce),
    ("all", all),
    ("any", any),
    ("ternary", ternary),
    ("deepCopy", deep_copy),
    ("mustDeepCopy", deep_copy),
    // reflection
    ("typeOf", type_of),
    ("typeIs", type_is),
    ("typeIsLike", type_is_like),
    ("kindOf", kind_of),
    ("kindIs", kind_is),
    ("deepEqual", deep_equal),
    // paths
    ("base", base),
    ("dir", dir),
    ("clean", clean),
    ("ext", ext),
    ("isAbs", is_abs),
    ("osBase", base),
    ("osClean", clean),
    ("osDir", dir),
    ("osExt", ext),
    ("osIsAbs", is_abs),
    // dicts
    ("dict", dict),
    ("get", get),
    ("set", set),
    ("unset", unset),
    ("hasKey", has_key),
    ("pluck", pluck),
    ("keys", keys),
    ("pick", pick),
    ("omit", omit),
    ("merge", merge),
    ("mergeOverwrite", merge_overwrite),
    ("mustMerge", merge),
    ("mustMergeOverwrite", merge_overwrite),
    ("values", values),
    ("dig", dig),
    // lists
    ("list", list),
    ("tuple", list),
    ("append", append),
    ("push", append),
    ("mustAppend", append),
    ("mustPush", append),
    ("prepend", prepend),
    ("mustPrepend", prepend),
    ("first", first),
    ("mustFirst", first),
    ("rest", rest),
    ("mustRest", rest),
    ("last", last),
    ("mustLast", last),
    ("initial", initial),
    ("mustInitial", initial),
    ("reverse", reverse),
    ("mustReverse", reverse),
    ("uniq", uniq),
    ("mustUniq", uniq),
    ("without", without),
    ("mustWithout", without),
    ("has", has),
    ("mustHas", has),
    ("slice", slice),
    ("mustSlice", slice),
    ("concat", concat),
    ("compact", compact),
    ("mustCompact", compact),
    ("chunk", chunk),
    ("mustChunk", chunk),
    // regex
    ("regexMatch", regex_match),
    ("mustRegexMatch", must_regex_match),
    ("regexFindAll", regex_find_all),
    ("mustRegexFindAll", regex_find_all),
    ("regexFind", regex_find),
    ("mustRegexFind", regex_find),
    ("regexReplaceAll", regex_replace_all),
    ("mustRegexReplaceAll", regex_replace_all),
    ("regexReplaceAllLiteral", regex_replace_all_literal),
    ("mustRegexReplaceAllLiteral", regex_replace_all_literal),
    ("regexSplit", regex_split),
    ("mustRegexSplit", regex_split),
    ("regexQuoteMeta", regex_quote_meta),
    // semver
    ("semver", semver),
    ("semverCompare", semver_compare),
    // network / misc
    ("getHostByName", get_host_by_name),
    ("urlParse", url_parse),
    ("urlJoin", url_join),
    ("fail", fail),
];

// ---- strings -------------------------------------------------------------

fn s1(name: &str, a: &[Value]) -> Result<String, FnError> {
    arity(name, a, 1)?;
    Ok(s(&a[0]))
}

fn trim(_: &mut Exec<'_>, a: &[Value]) -> R {
    Ok(Value::str(s1("trim", a)?.trim()))
}
fn trim_all(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("trimAll", a, 2)?;
    let cut: Vec<char> = s(&a[0]).chars().collect();
    Ok(Value::str(s(&a[1]).trim_matches(|c| cut.contains(&c))))
}
fn trim_prefix(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("trimPrefix", a, 2)?;
    let (p, v) = (s(&a[0]), s(&a[1]));
    Ok(Value::str(v.strip_prefix(&p).unwrap_or(&v)))
}
fn trim_suffix(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("trimSuffix", a, 2)?;
    let (p, v) = (s(&a[0]), s(&a[1]));
    Ok(Value::str(v.strip_suffix(&p).unwrap_or(&v)))
}
fn upper(_: &mut Exec<'_>, a: &[Value]) -> R {
    Ok(Value::str(s1("upper", a)?.to_uppercase()))
}
fn lower(_: &mut Exec<'_>, a: &[Value]) -> R {
    Ok(Value::str(s1("lower", a)?.to_lowercase()))
}

/// Go's strings.Title.
fn go_title(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    let mut prev_sep = true;
    for c in v.chars() {
        if prev_sep {
            out.extend(c.to_uppercase());
        } else {
            out.push(c);
        }
        prev_sep = if c.is_ascii() {
            !(c.is_ascii_alphanumeric() || c == '_')
        } else if c.is_alphanumeric() {
            false
        } else {
            c.is_whitespace()
        };
    }
    out
}

fn title(_: &mut Exec<'_>, a: &[Value]) -> R {
    Ok(Value::str(go_title(&s1("title", a)?)))
}
fn untitle(_: &mut Exec<'_>, a: &[Value]) -> R {
    let v = s1("untitle", a)?;
    let mut out = String::new();
    let mut prev_sep = true;
    for c in v.chars() {
        if prev_sep {
            out.extend(c.to_lowercase());
        } else {
            out.push(c);
        }
        prev_sep = c.is_whitespace();
    }
    Ok(Value::str(out))
}
fn repeat(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("repeat", a, 2)?;
    let n = to_i64(&a[0]);
    if n < 0 {
        return Err("strings: negative Repeat count".into());
    }
    let text = s(&a[1]);
    let n = limits::within("repeat", n, text.len(), limits::MAX_STRING_BYTES)?;
    Ok(Value::str(text.repeat(n)))
}
fn substr(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("substr", a, 3)?;
    let (start, end, v) = (to_i64(&a[0]), to_i64(&a[1]), s(&a[2]));
    let b = v.as_bytes();
    let len = b.len() as i64;
    let r = if start < 0 {
        &b[..end.clamp(0, len) as usize]
    } else if end < 0 || end > len {
        &b[start.min(len) as usize..]
    } else {
        &b[start.min(end) as usize..end as usize]
    };
    Ok(Value::str(String::from_utf8_lossy(r)))
}
fn nospace(_: &mut Exec<'_>, a: &[Value]) -> R {
    Ok(Value::str(s1("nospace", a)?.chars().filter(|c| !c.is_whitespace()).collect::<String>()))
}
fn trunc(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("trunc", a, 2)?;
    let c = to_i64(&a[0]);
    let v = s(&a[1]);
    let b = v.as_bytes();
    let len = b.len() as i64;
    let r = if c < 0 && len + c > 0 {
        &b[(len + c) as usize..]
    } else if c >= 0 && len > c {
        &b[..c as usize]
    } else {
        b
    };
    Ok(Value::str(String::from_utf8_lossy(r)))
}
fn abbrev(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("abbrev", a, 2)?;
    let w = to_i64(&a[0]);
    let v = s(&a[1]);
    if w < 4 || v.chars().count() as i64 <= w {
        return Ok(Value::str(v));
    }
    let t: String = v.chars().take((w - 3) as usize).collect();
    Ok(Value::str(format!("{t}...")))
}
fn abbrevboth(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("abbrevboth", a, 3)?;
    let (l, r, v) = (to_i64(&a[0]).max(0) as usize, to_i64(&a[1]), s(&a[2]));
    let chars: Vec<char> = v.chars().collect();
    if r < 4 || chars.len() as i64 <= r {
        return Ok(Value::str(v));
    }
    let start = l.min(chars.len());
    let rest: String = chars[start..].iter().collect();
    let prefix = if start > 0 { "..." } else { "" };
    let budget = (r as usize).saturating_sub(prefix.len());
    let body = if rest.chars().count() > budget {
        format!("{}...", rest.chars().take(budget.saturating_sub(3)).collect::<String>())
    } else {
        rest
    };
    Ok(Value::str(format!("{prefix}{body}")))
}
fn initials(_: &mut Exec<'_>, a: &[Value]) -> R {
    let v = s1("initials", a)?;
    Ok(Value::str(v.split_whitespace().filter_map(|w| w.chars().next()).collect::<String>()))
}
fn rand_from(n: i64, set: &[u8]) -> R {
    let n = limits::within("rand", n, 1, limits::MAX_STRING_BYTES)?;
    let mut rng = rand::rng();
    let s: String = (0..n).map(|_| set[rng.random_range(0..set.len())] as char).collect();
    Ok(Value::str(s))
}
fn rand_alpha_num(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("randAlphaNum", a, 1)?;
    rand_from(to_i64(&a[0]), b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
}
fn rand_alpha(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("randAlpha", a, 1)?;
    rand_from(to_i64(&a[0]), b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
}
fn rand_numeric(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("randNumeric", a, 1)?;
    rand_from(to_i64(&a[0]), b"0123456789")
}
fn rand_ascii(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("randAscii", a, 1)?;
    let set: Vec<u8> = (32u8..127).collect();
    rand_from(to_i64(&a[0]), &set)
}
fn word_wrap(width: usize, text: &str, sep: &str) -> String {
    let mut lines = Vec::new();
    for para in text.split('\n') {
        let mut line = String::new();
        for w in para.split(' ').filter(|w| !w.is_empty()) {
            if line.is_empty() {
                line.push_str(w);
            } else if line.len() + 1 + w.len() > width {
                lines.push(std::mem::take(&mut line));
                line.push_str(w);
            } else {
                line.push(' ');
                line.push_str(w);
            }
        }
        lines.push(line);
    }
    lines.join(sep)
}
fn wrap(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("wrap", a, 2)?;
    Ok(Value::str(word_wrap(to_i64(&a[0]).max(1) as usize, &s(&a[1]), "\n")))
}
fn wrap_with(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("wrapWith", a, 3)?;
    Ok(Value::str(word_wrap(to_i64(&a[0]).max(1) as usize, &s(&a[2]), &s(&a[1]))))
}
fn contains(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("contains", a, 2)?;
    Ok(Value::Bool(s(&a[1]).contains(&s(&a[0]))))
}
fn has_prefix(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("hasPrefix", a, 2)?;
    Ok(Value::Bool(s(&a[1]).starts_with(&s(&a[0]))))
}
fn has_suffix(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("hasSuffix", a, 2)?;
    Ok(Value::Bool(s(&a[1]).ends_with(&s(&a[0]))))
}
fn quote(_: &mut Exec<'_>, a: &[Value]) -> R {
    let parts: Vec<String> =
        a.iter().filter(|v| !v.is_nil()).map(|v| go_quote(&strval(v))).collect();
    Ok(Value::str(parts.join(" ")))
}
fn squote(_: &mut Exec<'_>, a: &[Value]) -> R {
    let parts: Vec<String> =
        a.iter().filter(|v| !v.is_nil()).map(|v| format!("'{}'", strval(v))).collect();
    Ok(Value::str(parts.join(" ")))
}
fn cat(_: &mut Exec<'_>, a: &[Value]) -> R {
    let parts: Vec<String> = a.iter().filter(|v| !v.is_nil()).map(strval).collect();
    Ok(Value::str(parts.join(" ")))
}
fn indent_str(n: i64, v: &str) -> String {
    let pad = " ".repeat(n.max(0) as usize);
    format!("{pad}{}", v.replace('\n', &format!("\n{pad}")))
}
fn indent(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("indent", a, 2)?;
    Ok(Value::str(indent_str(to_i64(&a[0]), &s(&a[1]))))
}
fn nindent(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("nindent", a, 2)?;
    Ok(Value::str(format!("\n{}", indent_str(to_i64(&a[0]), &s(&a[1])))))
}
fn replace(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("replace", a, 3)?;
    let (old, new, src) = (s(&a[0]), s(&a[1]), s(&a[2]));
    if old.is_empty() {
        // Go inserts `new` between every rune and at both ends.
        let mut out = new.clone();
        for c in src.chars() {
            out.push(c);
            out.push_str(&new);
        }
        return Ok(Value::str(out));
    }
    Ok(Value::str(src.replace(&old, &new)))
}
fn plural(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("plural", a, 3)?;
    Ok(if to_i64(&a[2]) == 1 { Value::str(s(&a[0])) } else { Value::str(s(&a[1])) })
}
fn words(v: &str) -> Vec<String> {
    // split on non-alphanumerics and lower→upper transitions
    let mut out = Vec::new();
    let mut cur = String::new();
    let chars: Vec<char> = v.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if !c.is_alphanumeric() {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            continue;
        }
        if c.is_uppercase() && !cur.is_empty() {
            let prev = chars[i - 1];
            let next_lower = chars.get(i + 1).is_some_and(|n| n.is_lowercase());
            if prev.is_lowercase() || prev.is_ascii_digit() || (prev.is_uppercase() && next_lower) {
                out.push(std::mem::take(&mut cur));
            }
        }
        cur.push(c);
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}
fn snakecase(_: &mut Exec<'_>, a: &[Value]) -> R {
    let v = s1("snakecase", a)?;
    Ok(Value::str(words(&v).iter().map(|w| w.to_lowercase()).collect::<Vec<_>>().join("_")))
}
fn kebabcase(_: &mut Exec<'_>, a: &[Value]) -> R {
    let v = s1("kebabcase", a)?;
    Ok(Value::str(words(&v).iter().map(|w| w.to_lowercase()).collect::<Vec<_>>().join("-")))
}
fn camelcase(_: &mut Exec<'_>, a: &[Value]) -> R {
    let v = s1("camelcase", a)?;
    let mut out = String::new();
    for part in v.split(['_', ' ', '-']) {
        let mut cs = part.chars();
        if let Some(f) = cs.next() {
            out.extend(f.to_uppercase());
            out.push_str(cs.as_str());
        }
    }
    Ok(Value::str(out))
}
fn swapcase(_: &mut Exec<'_>, a: &[Value]) -> R {
    let v = s1("swapcase", a)?;
    Ok(Value::str(
        v.chars()
            .map(|c| {
                if c.is_uppercase() {
                    c.to_lowercase().collect::<String>()
                } else {
                    c.to_uppercase().collect::<String>()
                }
            })
            .collect::<String>(),
    ))
}
fn shuffle(_: &mut Exec<'_>, a: &[Value]) -> R {
    use rand::seq::SliceRandom as _;
    let v = s1("shuffle", a)?;
    let mut c: Vec<char> = v.chars().collect();
    c.shuffle(&mut rand::rng());
    Ok(Value::str(c.into_iter().collect::<String>()))
}
fn to_string(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("toString", a, 1)?;
    Ok(Value::str(strval(&a[0])))
}
fn to_strings(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("toStrings", a, 1)?;
    let items: Vec<Value> = match &a[0] {
        Value::List(l) => l.iter().filter(|v| !v.is_nil()).map(|v| Value::str(strval(v))).collect(),
        Value::Nil => Vec::new(),
        v => vec![Value::str(strval(v))],
    };
    Ok(Value::from(items))
}
fn join(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("join", a, 2)?;
    Ok(Value::str(strslice(&a[1]).join(&s(&a[0]))))
}
fn sort_alpha(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("sortAlpha", a, 1)?;
    let mut v = match &a[0] {
        Value::List(_) | Value::Object(_) => strslice(&a[0]),
        other => vec![strval(other)],
    };
    v.sort();
    Ok(Value::from(v.into_iter().map(Value::str).collect::<Vec<_>>()))
}
fn split(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("split", a, 2)?;
    let (sep, orig) = (s(&a[0]), s(&a[1]));
    let mut m = Map::new();
    for (i, p) in go_split(&orig, &sep, -1).into_iter().enumerate() {
        m.insert(format!("_{i}"), Value::str(p));
    }
    Ok(m.into())
}
fn go_split(s: &str, sep: &str, n: i64) -> Vec<String> {
    if n == 0 {
        return Vec::new();
    }
    if sep.is_empty() {
        let mut v: Vec<String> = s.chars().map(|c| c.to_string()).collect();
        if n > 0 && v.len() > n as usize {
            let rest: String = v[n as usize - 1..].concat();
            v.truncate(n as usize - 1);
            v.push(rest);
        }
        return v;
    }
    if n < 0 {
        s.split(sep).map(str::to_string).collect()
    } else {
        s.splitn(n as usize, sep).map(str::to_string).collect()
    }
}
fn split_list(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("splitList", a, 2)?;
    Ok(Value::from(
        go_split(&s(&a[1]), &s(&a[0]), -1).into_iter().map(Value::str).collect::<Vec<_>>(),
    ))
}
fn splitn(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("splitn", a, 3)?;
    let mut m = Map::new();
    for (i, p) in go_split(&s(&a[2]), &s(&a[0]), to_i64(&a[1])).into_iter().enumerate() {
        m.insert(format!("_{i}"), Value::str(p));
    }
    Ok(m.into())
}

// ---- hashes / encodings ----------------------------------------------------

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}
fn sha1sum(_: &mut Exec<'_>, a: &[Value]) -> R {
    Ok(Value::str(hex(&sha1::Sha1::digest(s1("sha1sum", a)?.as_bytes()))))
}
fn sha256sum(_: &mut Exec<'_>, a: &[Value]) -> R {
    Ok(Value::str(hex(&sha2::Sha256::digest(s1("sha256sum", a)?.as_bytes()))))
}
fn sha512sum(_: &mut Exec<'_>, a: &[Value]) -> R {
    Ok(Value::str(hex(&sha2::Sha512::digest(s1("sha512sum", a)?.as_bytes()))))
}
fn adler32sum(_: &mut Exec<'_>, a: &[Value]) -> R {
    let v = s1("adler32sum", a)?;
    let mut h = adler2::Adler32::new();
    h.write_slice(v.as_bytes());
    Ok(Value::str(h.checksum().to_string()))
}
fn b64enc(_: &mut Exec<'_>, a: &[Value]) -> R {
    Ok(Value::str(base64::engine::general_purpose::STANDARD.encode(s1("b64enc", a)?)))
}
fn b64dec(_: &mut Exec<'_>, a: &[Value]) -> R {
    let v = s1("b64dec", a)?;
    Ok(Value::str(match base64::engine::general_purpose::STANDARD.decode(v.as_bytes()) {
        Ok(b) => String::from_utf8_lossy(&b).into_owned(),
        Err(e) => e.to_string(),
    }))
}
fn b32enc(_: &mut Exec<'_>, a: &[Value]) -> R {
    Ok(Value::str(data_encoding::BASE32.encode(s1("b32enc", a)?.as_bytes())))
}
fn b32dec(_: &mut Exec<'_>, a: &[Value]) -> R {
    let v = s1("b32dec", a)?;
    Ok(Value::str(match data_encoding::BASE32.decode(v.as_bytes()) {
        Ok(b) => String::from_utf8_lossy(&b).into_owned(),
        Err(e) => e.to_string(),
    }))
}
fn uuidv4(_: &mut Exec<'_>, _a: &[Value]) -> R {
    Ok(Value::str(uuid::Uuid::new_v4().to_string()))
}
fn rand_bytes(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("randBytes", a, 1)?;
    let n = limits::within("randBytes", to_i64(&a[0]), 1, limits::MAX_STRING_BYTES)?;
    let mut b = vec![0u8; n];
    rand::rng().fill(&mut b[..]);
    Ok(Value::str(base64::engine::general_purpose::STANDARD.encode(b)))
}

// ---- conversions / math ----------------------------------------------------

fn atoi(_: &mut Exec<'_>, a: &[Value]) -> R {
    let v = s1("atoi", a)?;
    Ok(Value::Int(v.parse::<i64>().unwrap_or(0)))
}
fn int(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("int", a, 1)?;
    Ok(Value::Int(to_i64(&a[0])))
}
fn int64(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("int64", a, 1)?;
    Ok(Value::Int64(to_i64(&a[0])))
}
fn float64(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("float64", a, 1)?;
    Ok(Value::Float(to_f64(&a[0])))
}
fn to_decimal(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("toDecimal", a, 1)?;
    Ok(Value::Int64(i64::from_str_radix(&strval(&a[0]), 8).unwrap_or(0)))
}
fn add1(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("add1", a, 1)?;
    Ok(Value::Int64(to_i64(&a[0]).wrapping_add(1)))
}
fn add(_: &mut Exec<'_>, a: &[Value]) -> R {
    Ok(Value::Int64(a.iter().map(to_i64).fold(0i64, |x, y| x.wrapping_add(y))))
}
fn sub(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("sub", a, 2)?;
    Ok(Value::Int64(to_i64(&a[0]).wrapping_sub(to_i64(&a[1]))))
}
fn div(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("div", a, 2)?;
    let d = to_i64(&a[1]);
    if d == 0 {
        return Err("runtime error: integer divide by zero".into());
    }
    Ok(Value::Int64(to_i64(&a[0]).wrapping_div(d)))
}
fn modulo(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("mod", a, 2)?;
    let d = to_i64(&a[1]);
    if d == 0 {
        return Err("runtime error: integer divide by zero".into());
    }
    Ok(Value::Int64(to_i64(&a[0]).wrapping_rem(d)))
}
fn mul(_: &mut Exec<'_>, a: &[Value]) -> R {
    min_arity("mul", a, 1)?;
    Ok(Value::Int64(a.iter().map(to_i64).fold(1i64, |x, y| x.wrapping_mul(y))))
}
fn max(_: &mut Exec<'_>, a: &[Value]) -> R {
    min_arity("max", a, 1)?;
    Ok(Value::Int64(a.iter().map(to_i64).max().unwrap_or(0)))
}
fn min(_: &mut Exec<'_>, a: &[Value]) -> R {
    min_arity("min", a, 1)?;
    Ok(Value::Int64(a.iter().map(to_i64).min().unwrap_or(0)))
}
/// A decimal number (mantissa * 10^exp), like shopspring/decimal which
/// Sprig's float functions use.
#[derive(Clone, Copy)]
struct Dec {
    mant: i128,
    exp: i32,
}

impl Dec {
    fn from_f64(f: f64) -> Option<Dec> {
        if !f.is_finite() {
            return None;
        }
        if f == 0.0 {
            return Some(Dec { mant: 0, exp: 0 });
        }
        let (neg, digits, dp) = crate::value::shortest_digits(f);
        let mant: i128 = digits.parse().ok()?;
        let exp = dp - digits.len() as i32;
        Some(Dec { mant: if neg { -mant } else { mant }, exp })
    }

    fn to_f64(self) -> f64 {
        format!("{}e{}", self.mant, self.exp).parse().unwrap_or(f64::NAN)
    }

    fn scale_to(self, exp: i32) -> Option<Dec> {
        let diff = u32::try_from(self.exp - exp).ok()?;
        Some(Dec { mant: self.mant.checked_mul(10i128.checked_pow(diff)?)?, exp })
    }

    fn add(self, o: Dec) -> Option<Dec> {
        let e = self.exp.min(o.exp);
        let (a, b) = (self.scale_to(e)?, o.scale_to(e)?);
        Some(Dec { mant: a.mant.checked_add(b.mant)?, exp: e })
    }

    fn mul(self, o: Dec) -> Option<Dec> {
        Some(Dec { mant: self.mant.checked_mul(o.mant)?, exp: self.exp + o.exp })
    }

    /// Division rounded (half away from zero) to 16 fractional digits.
    fn div(self, o: Dec) -> Option<Dec> {
        if o.mant == 0 {
            return None;
        }
        // result = (a_m / b_m) * 10^(a_e - b_e); want exponent -16
        let k = self.exp - o.exp + 16 + 1;
        let num = if k >= 0 {
            self.mant.checked_mul(10i128.checked_pow(k as u32)?)?
        } else {
            self.mant / 10i128.checked_pow((-k) as u32)?
        };
        let q = num / o.mant;
        let rounded = if q.abs() % 10 >= 5 { q / 10 + q.signum() } else { q / 10 };
        Some(Dec { mant: rounded, exp: -16 })
    }
}

fn decimal_op(
    name: &str,
    first: &Value,
    rest: &[Value],
    op: fn(Dec, Dec) -> Option<Dec>,
    fallback: fn(f64, f64) -> f64,
) -> R {
    let _ = name;
    let mut acc = to_f64(first);
    let mut dec = Dec::from_f64(acc);
    for v in rest {
        let x = to_f64(v);
        dec = dec.zip(Dec::from_f64(x)).and_then(|(a, b)| op(a, b));
        acc = fallback(acc, x);
    }
    Ok(Value::Float(dec.map(Dec::to_f64).unwrap_or(acc)))
}

fn add1f(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("add1f", a, 1)?;
    decimal_op("add1f", &a[0], &[Value::Int(1)], Dec::add, |x, y| x + y)
}
fn addf(_: &mut Exec<'_>, a: &[Value]) -> R {
    decimal_op("addf", &Value::Float(0.0), a, Dec::add, |x, y| x + y)
}
fn subf(_: &mut Exec<'_>, a: &[Value]) -> R {
    min_arity("subf", a, 1)?;
    decimal_op(
        "subf",
        &a[0],
        &a[1..],
        |x, y| x.add(Dec { mant: -y.mant, exp: y.exp }),
        |x, y| x - y,
    )
}
fn divf(_: &mut Exec<'_>, a: &[Value]) -> R {
    min_arity("divf", a, 1)?;
    decimal_op("divf", &a[0], &a[1..], Dec::div, |x, y| x / y)
}
fn mulf(_: &mut Exec<'_>, a: &[Value]) -> R {
    min_arity("mulf", a, 1)?;
    decimal_op("mulf", &a[0], &a[1..], Dec::mul, |x, y| x * y)
}
fn maxf(_: &mut Exec<'_>, a: &[Value]) -> R {
    min_arity("maxf", a, 1)?;
    Ok(Value::Float(a.iter().map(to_f64).fold(f64::MIN, f64::max)))
}
fn minf(_: &mut Exec<'_>, a: &[Value]) -> R {
    min_arity("minf", a, 1)?;
    Ok(Value::Float(a.iter().map(to_f64).fold(f64::MAX, f64::min)))
}
fn floor(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("floor", a, 1)?;
    Ok(Value::Float(to_f64(&a[0]).floor()))
}
fn ceil(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("ceil", a, 1)?;
    Ok(Value::Float(to_f64(&a[0]).ceil()))
}
fn round(_: &mut Exec<'_>, a: &[Value]) -> R {
    min_arity("round", a, 2)?;
    let p = to_i64(&a[1]) as i32;
    let f = to_f64(&a[0]);
    let m = 10f64.powi(p);
    let mut v = f * m;
    let frac = v - v.trunc();
    let rp = if a.len() > 2 { to_f64(&a[2]) } else { 0.5 };
    v = if frac.abs() >= rp { v.trunc() + v.signum() } else { v.trunc() };
    Ok(Value::Float(v / m))
}
fn until(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("until", a, 1)?;
    let n = to_i64(&a[0]);
    limits::within("until", n.saturating_abs(), 1, limits::MAX_LIST_LEN)?;
    let v: Vec<Value> = if n >= 0 {
        (0..n).map(Value::Int).collect()
    } else {
        (n + 1..=0).rev().map(Value::Int).collect()
    };
    Ok(Value::from(v))
}
fn until_step(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("untilStep", a, 3)?;
    let (start, stop, step) = (to_i64(&a[0]), to_i64(&a[1]), to_i64(&a[2]));
    if step != 0 {
        let n = (i128::from(stop) - i128::from(start)) / i128::from(step);
        limits::within("untilStep", i64::try_from(n).unwrap_or(i64::MAX), 1, limits::MAX_LIST_LEN)?;
    }
    let mut v = Vec::new();
    if step > 0 {
        let mut i = start;
        while i < stop {
            v.push(Value::Int(i));
            i += step;
        }
    } else if step < 0 {
        let mut i = start;
        while i > stop {
            v.push(Value::Int(i));
            i += step;
        }
    }
    Ok(Value::from(v))
}
fn seq(_: &mut Exec<'_>, a: &[Value]) -> R {
    let p: Vec<i64> = a.iter().map(to_i64).collect();
    let (start, end, step) = match p.len() {
        0 => return Ok(Value::str("")),
        1 => (1, p[0], 1),
        2 => (p[0], p[1], if p[1] >= p[0] { 1 } else { -1 }),
        _ => (p[0], p[2], p[1]),
    };
    let mut out = Vec::new();
    if step == 0 {
        return Ok(Value::str(""));
    }
    let mut i = start;
    if step > 0 {
        while i <= end {
            out.push(i.to_string());
            i += step;
        }
    } else {
        while i >= end {
            out.push(i.to_string());
            i += step;
        }
    }
    Ok(Value::str(out.join(" ")))
}

// ---- defaults ---------------------------------------------------------------

fn default(_: &mut Exec<'_>, a: &[Value]) -> R {
    min_arity("default", a, 1)?;
    if a.len() < 2 || a[1].is_empty() {
        return Ok(a[0].clone());
    }
    Ok(a[1].clone())
}
fn empty(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("empty", a, 1)?;
    Ok(Value::Bool(a[0].is_empty()))
}
fn coalesce(_: &mut Exec<'_>, a: &[Value]) -> R {
    Ok(a.iter().find(|v| !v.is_empty()).cloned().unwrap_or(Value::Nil))
}
fn all(_: &mut Exec<'_>, a: &[Value]) -> R {
    Ok(Value::Bool(a.iter().all(|v| !v.is_empty())))
}
fn any(_: &mut Exec<'_>, a: &[Value]) -> R {
    Ok(Value::Bool(a.iter().any(|v| !v.is_empty())))
}
fn ternary(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("ternary", a, 3)?;
    Ok(if a[2].truthy() { a[0].clone() } else { a[1].clone() })
}
fn deep_copy(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("deepCopy", a, 1)?;
    Ok(a[0].deep_copy())
}

// ---- reflection -------------------------------------------------------------

fn type_of(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("typeOf", a, 1)?;
    Ok(Value::str(a[0].type_name()))
}
fn type_is(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("typeIs", a, 2)?;
    Ok(Value::Bool(s(&a[0]) == a[1].type_name()))
}
fn type_is_like(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("typeIsLike", a, 2)?;
    let t = a[1].type_name();
    let target = s(&a[0]);
    Ok(Value::Bool(target == t || target == format!("*{t}")))
}
fn kind_of(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("kindOf", a, 1)?;
    Ok(Value::str(a[0].kind_name()))
}
fn kind_is(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("kindIs", a, 2)?;
    Ok(Value::Bool(s(&a[0]) == a[1].kind_name()))
}
fn deep_equal(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("deepEqual", a, 2)?;
    let same_type = a[0].type_name() == a[1].type_name();
    Ok(Value::Bool(same_type && a[0] == a[1]))
}

// ---- paths ------------------------------------------------------------------

/// Go's path.Clean.
pub(crate) fn path_clean(p: &str) -> String {
    if p.is_empty() {
        return ".".into();
    }
    let rooted = p.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for seg in p.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                if parts.last().is_some_and(|l| *l != "..") {
                    parts.pop();
                } else if !rooted {
                    parts.push("..");
                }
            }
            s => parts.push(s),
        }
    }
    let body = parts.join("/");
    if rooted {
        format!("/{body}")
    } else if body.is_empty() {
        ".".into()
    } else {
        body
    }
}
fn base(_: &mut Exec<'_>, a: &[Value]) -> R {
    let p = s1("base", a)?;
    if p.is_empty() {
        return Ok(Value::str("."));
    }
    let t = p.trim_end_matches('/');
    if t.is_empty() {
        return Ok(Value::str("/"));
    }
    Ok(Value::str(t.rsplit('/').next().unwrap_or(t)))
}
fn dir(_: &mut Exec<'_>, a: &[Value]) -> R {
    let p = s1("dir", a)?;
    let d = match p.rfind('/') {
        Some(i) => &p[..i + 1],
        None => "",
    };
    Ok(Value::str(path_clean(d)))
}
fn clean(_: &mut Exec<'_>, a: &[Value]) -> R {
    Ok(Value::str(path_clean(&s1("clean", a)?)))
}
fn ext(_: &mut Exec<'_>, a: &[Value]) -> R {
    let p = s1("ext", a)?;
    for (i, c) in p.char_indices().rev() {
        if c == '/' {
            break;
        }
        if c == '.' {
            return Ok(Value::str(&p[i..]));
        }
    }
    Ok(Value::str(""))
}
fn is_abs(_: &mut Exec<'_>, a: &[Value]) -> R {
    Ok(Value::Bool(s1("isAbs", a)?.starts_with('/')))
}

// ---- dicts ------------------------------------------------------------------

fn map_arg(name: &str, v: &Value) -> Result<crate::value::MapRef, FnError> {
    match v {
        Value::Map(m) => Ok(m.clone()),
        other => Err(FnError::Msg(format!(
            "wrong type for value; expected map[string]interface {{}}; got {} (in {name})",
            other.type_name()
        ))),
    }
}
fn dict(_: &mut Exec<'_>, a: &[Value]) -> R {
    let mut m = Map::new();
    let mut i = 0;
    while i < a.len() {
        let k = strval(&a[i]);
        let v = a.get(i + 1).cloned().unwrap_or_else(|| Value::str(""));
        m.insert(k, v);
        i += 2;
    }
    Ok(m.into())
}
fn get(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("get", a, 2)?;
    let m = map_arg("get", &a[0])?;
    let k = s(&a[1]);
    Ok(m.borrow().get(&k).cloned().unwrap_or_else(|| Value::str("")))
}
fn set(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("set", a, 3)?;
    let m = map_arg("set", &a[0])?;
    m.borrow_mut().insert(s(&a[1]), a[2].clone());
    Ok(a[0].clone())
}
fn unset(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("unset", a, 2)?;
    let m = map_arg("unset", &a[0])?;
    m.borrow_mut().remove(&s(&a[1]));
    Ok(a[0].clone())
}
fn has_key(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("hasKey", a, 2)?;
    let m = map_arg("hasKey", &a[0])?;
    let r = m.borrow().contains_key(&s(&a[1]));
    Ok(Value::Bool(r))
}
fn pluck(_: &mut Exec<'_>, a: &[Value]) -> R {
    min_arity("pluck", a, 1)?;
    let k = s(&a[0]);
    let mut out = Vec::new();
    for d in &a[1..] {
        if let Value::Map(m) = d
            && let Some(v) = m.borrow().get(&k)
        {
            out.push(v.clone());
        }
    }
    Ok(Value::from(out))
}
fn keys(_: &mut Exec<'_>, a: &[Value]) -> R {
    let mut out = Vec::new();
    for d in a {
        let m = map_arg("keys", d)?;
        for k in m.borrow().keys() {
            out.push(Value::str(k));
        }
    }
    Ok(Value::from(out))
}
fn pick(_: &mut Exec<'_>, a: &[Value]) -> R {
    min_arity("pick", a, 1)?;
    let m = map_arg("pick", &a[0])?;
    let mut out = Map::new();
    for k in &a[1..] {
        let k = s(k);
        if let Some(v) = m.borrow().get(&k) {
            out.insert(k, v.clone());
        }
    }
    Ok(out.into())
}
fn omit(_: &mut Exec<'_>, a: &[Value]) -> R {
    min_arity("omit", a, 1)?;
    let m = map_arg("omit", &a[0])?;
    let drop: Vec<String> = a[1..].iter().map(s).collect();
    let out: Map = m
        .borrow()
        .iter()
        .filter(|(k, _)| !drop.contains(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    Ok(out.into())
}
fn values(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("values", a, 1)?;
    let m = map_arg("values", &a[0])?;
    Ok(Value::from(m.borrow().values().cloned().collect::<Vec<_>>()))
}

/// mergo's deep merge of `src` into `dst`.
pub(crate) fn mergo(dst: &crate::value::MapRef, src: &crate::value::MapRef, overwrite: bool) {
    if Rc::ptr_eq(dst, src) {
        return;
    }
    let entries: Vec<(String, Value)> =
        src.borrow().iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    for (k, sv) in entries {
        let dv = dst.borrow().get(&k).cloned();
        if let (Some(Value::Map(dm)), Value::Map(sm)) = (&dv, &sv) {
            mergo(dm, sm, overwrite);
            continue;
        }
        let set = match &dv {
            None => true,
            Some(d) if d.is_empty() => true,
            Some(_) => overwrite && !sv.is_empty(),
        };
        if set {
            dst.borrow_mut().insert(k, sv);
        }
    }
}
fn merge(_: &mut Exec<'_>, a: &[Value]) -> R {
    min_arity("merge", a, 1)?;
    let dst = map_arg("merge", &a[0])?;
    for src in &a[1..] {
        if let Value::Map(sm) = src {
            mergo(&dst, sm, false);
        }
    }
    Ok(a[0].clone())
}
fn merge_overwrite(_: &mut Exec<'_>, a: &[Value]) -> R {
    min_arity("mergeOverwrite", a, 1)?;
    let dst = map_arg("mergeOverwrite", &a[0])?;
    for src in &a[1..] {
        if let Value::Map(sm) = src {
            mergo(&dst, sm, true);
        }
    }
    Ok(a[0].clone())
}
fn dig(_: &mut Exec<'_>, a: &[Value]) -> R {
    min_arity("dig", a, 3)?;
    let n = a.len();
    let dict = map_arg("dig", &a[n - 1])?;
    let default = a[n - 2].clone();
    let keys: Vec<String> = a[..n - 2].iter().map(s).collect();
    let mut cur = Value::Map(dict);
    for (i, k) in keys.iter().enumerate() {
        let next = match &cur {
            Value::Map(m) => m.borrow().get(k).cloned(),
            _ => None,
        };
        match next {
            None => return Ok(default),
            Some(v) => {
                if i + 1 < keys.len() && !matches!(v, Value::Map(_)) {
                    return Err(FnError::Msg(format!(
                        "interface conversion: interface {{}} is {}, not map[string]interface {{}}",
                        v.type_name()
                    )));
                }
                cur = v;
            }
        }
    }
    Ok(cur)
}

// ---- lists ------------------------------------------------------------------

fn list(_: &mut Exec<'_>, a: &[Value]) -> R {
    Ok(Value::from(a.to_vec()))
}
fn append(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("append", a, 2)?;
    let mut l = if a[0].is_nil() { Vec::new() } else { list_of("append", &a[0])? };
    l.push(a[1].clone());
    Ok(Value::from(l))
}
fn prepend(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("prepend", a, 2)?;
    let mut l = if a[0].is_nil() { Vec::new() } else { list_of("prepend", &a[0])? };
    l.insert(0, a[1].clone());
    Ok(Value::from(l))
}
fn first(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("first", a, 1)?;
    if a[0].is_nil() {
        return Ok(Value::Nil);
    }
    Ok(list_of("first", &a[0])?.into_iter().next().unwrap_or(Value::Nil))
}
fn rest(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("rest", a, 1)?;
    if a[0].is_nil() {
        return Ok(Value::Nil);
    }
    let l = list_of("rest", &a[0])?;
    if l.is_empty() {
        return Ok(Value::Nil);
    }
    Ok(Value::from(l[1..].to_vec()))
}
fn last(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("last", a, 1)?;
    if a[0].is_nil() {
        return Ok(Value::Nil);
    }
    Ok(list_of("last", &a[0])?.pop().unwrap_or(Value::Nil))
}
fn initial(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("initial", a, 1)?;
    if a[0].is_nil() {
        return Ok(Value::Nil);
    }
    let mut l = list_of("initial", &a[0])?;
    if l.is_empty() {
        return Ok(Value::Nil);
    }
    l.pop();
    Ok(Value::from(l))
}
fn reverse(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("reverse", a, 1)?;
    let mut l = list_of("reverse", &a[0])?;
    l.reverse();
    Ok(Value::from(l))
}
fn uniq(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("uniq", a, 1)?;
    let l = list_of("uniq", &a[0])?;
    let mut out: Vec<Value> = Vec::new();
    for v in l {
        if !out.contains(&v) {
            out.push(v);
        }
    }
    Ok(Value::from(out))
}
fn without(_: &mut Exec<'_>, a: &[Value]) -> R {
    min_arity("without", a, 1)?;
    let l = list_of("without", &a[0])?;
    Ok(Value::from(l.into_iter().filter(|v| !a[1..].contains(v)).collect::<Vec<_>>()))
}
fn has(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("has", a, 2)?;
    if a[1].is_nil() {
        return Ok(Value::Bool(false));
    }
    let l = list_of("has", &a[1])?;
    Ok(Value::Bool(l.iter().any(|v| *v == a[0] && v.type_name() == a[0].type_name())))
}
fn slice(_: &mut Exec<'_>, a: &[Value]) -> R {
    min_arity("slice", a, 1)?;
    if let Value::Str(st) = &a[0] {
        let b = st.as_bytes();
        let i = a.get(1).map(to_i64).unwrap_or(0).max(0) as usize;
        let j = a.get(2).map(to_i64).unwrap_or(b.len() as i64).max(0) as usize;
        if i > j || j > b.len() {
            return Err(FnError::Msg(format!("index out of range: {j}")));
        }
        return Ok(Value::str(String::from_utf8_lossy(&b[i..j])));
    }
    let l = list_of("slice", &a[0])?;
    let i = a.get(1).map(to_i64).unwrap_or(0).max(0) as usize;
    let j = a.get(2).map(to_i64).unwrap_or(l.len() as i64).max(0) as usize;
    if i > j || j > l.len() {
        return Err(FnError::Msg(format!("runtime error: slice bounds out of range [{i}:{j}]")));
    }
    Ok(Value::from(l[i..j].to_vec()))
}
fn concat(_: &mut Exec<'_>, a: &[Value]) -> R {
    let mut out = Vec::new();
    for l in a {
        if l.is_nil() {
            continue;
        }
        out.extend(list_of("concat", l)?);
    }
    Ok(Value::from(out))
}
fn compact(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("compact", a, 1)?;
    let l = list_of("compact", &a[0])?;
    Ok(Value::from(l.into_iter().filter(|v| !v.is_empty()).collect::<Vec<_>>()))
}
fn chunk(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("chunk", a, 2)?;
    let n = to_i64(&a[0]).max(1) as usize;
    let l = list_of("chunk", &a[1])?;
    Ok(Value::from(l.chunks(n).map(|c| Value::from(c.to_vec())).collect::<Vec<_>>()))
}

// ---- regex -------------------------------------------------------------------

fn re(p: &str) -> Result<Regex, FnError> {
    Regex::new(p).map_err(|e| FnError::Msg(format!("error parsing regexp: {e}")))
}
fn regex_match(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("regexMatch", a, 2)?;
    Ok(Value::Bool(re(&s(&a[0])).map(|r| r.is_match(&s(&a[1]))).unwrap_or(false)))
}
fn must_regex_match(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("mustRegexMatch", a, 2)?;
    Ok(Value::Bool(re(&s(&a[0]))?.is_match(&s(&a[1]))))
}
fn regex_find_all(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("regexFindAll", a, 3)?;
    let r = re(&s(&a[0]))?;
    let v = s(&a[1]);
    let n = to_i64(&a[2]);
    let it = r.find_iter(&v).map(|m| Value::str(m.as_str()));
    let out: Vec<Value> = if n < 0 { it.collect() } else { it.take(n as usize).collect() };
    Ok(Value::from(out))
}
fn regex_find(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("regexFind", a, 2)?;
    let r = re(&s(&a[0]))?;
    Ok(Value::str(r.find(&s(&a[1])).map(|m| m.as_str().to_string()).unwrap_or_default()))
}
fn regex_replace_all(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("regexReplaceAll", a, 3)?;
    let r = re(&s(&a[0]))?;
    Ok(Value::str(r.replace_all(&s(&a[1]), s(&a[2]).as_str())))
}
fn regex_replace_all_literal(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("regexReplaceAllLiteral", a, 3)?;
    let r = re(&s(&a[0]))?;
    Ok(Value::str(r.replace_all(&s(&a[1]), regex::NoExpand(&s(&a[2])))))
}
fn regex_split(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("regexSplit", a, 3)?;
    let r = re(&s(&a[0]))?;
    let v = s(&a[1]);
    let n = to_i64(&a[2]);
    let out: Vec<Value> = if n < 0 {
        r.split(&v).map(Value::str).collect()
    } else if n == 0 {
        Vec::new()
    } else {
        r.splitn(&v, n as usize).map(Value::str).collect()
    };
    Ok(Value::from(out))
}
fn regex_quote_meta(_: &mut Exec<'_>, a: &[Value]) -> R {
    Ok(Value::str(regex::escape(&s1("regexQuoteMeta", a)?)))
}

// ---- semver -------------------------------------------------------------------

fn semver(_: &mut Exec<'_>, a: &[Value]) -> R {
    let v = s1("semver", a)?;
    let ver = crate::semver::Version::parse(&v).map_err(FnError::Msg)?;
    Ok(Value::Object(Rc::new(SemverObj(ver))))
}
fn semver_compare(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("semverCompare", a, 2)?;
    let c = crate::semver::Constraints::parse(&s(&a[0])).map_err(FnError::Msg)?;
    let v = crate::semver::Version::parse(&s(&a[1])).map_err(FnError::Msg)?;
    Ok(Value::Bool(c.check(&v)))
}

// ---- misc ---------------------------------------------------------------------

fn get_host_by_name(_: &mut Exec<'_>, _a: &[Value]) -> R {
    Ok(Value::str(""))
}
fn url_parse(_: &mut Exec<'_>, a: &[Value]) -> R {
    let v = s1("urlParse", a)?;
    let mut m = Map::new();
    let (scheme, rest) =
        v.split_once("://").map(|(a, b)| (a.to_string(), b.to_string())).unwrap_or_default();
    let (rest, fragment) = rest
        .split_once('#')
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .unwrap_or((rest.clone(), String::new()));
    let (rest, query) = rest
        .split_once('?')
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .unwrap_or((rest.clone(), String::new()));
    let (hostpart, path) = match rest.find('/') {
        Some(i) => (rest[..i].to_string(), rest[i..].to_string()),
        None => (rest.clone(), String::new()),
    };
    let (userinfo, host) = hostpart
        .rsplit_once('@')
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .unwrap_or((String::new(), hostpart.clone()));
    m.insert("scheme".into(), Value::str(scheme));
    m.insert("host".into(), Value::str(host.clone()));
    m.insert("hostname".into(), Value::str(host.split(':').next().unwrap_or("")));
    m.insert("path".into(), Value::str(path));
    m.insert("query".into(), Value::str(query));
    m.insert("opaque".into(), Value::str(""));
    m.insert("fragment".into(), Value::str(fragment));
    m.insert("userinfo".into(), Value::str(userinfo));
    Ok(m.into())
}
fn url_join(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("urlJoin", a, 1)?;
    let g = |k: &str| a[0].get(k).map(|v| s(&v)).unwrap_or_default();
    let mut out = String::new();
    if !g("scheme").is_empty() {
        out.push_str(&g("scheme"));
        out.push_str("://");
    }
    if !g("userinfo").is_empty() {
        out.push_str(&g("userinfo"));
        out.push('@');
    }
    out.push_str(&g("host"));
    out.push_str(&g("path"));
    if !g("query").is_empty() {
        out.push('?');
        out.push_str(&g("query"));
    }
    if !g("fragment").is_empty() {
        out.push('#');
        out.push_str(&g("fragment"));
    }
    Ok(Value::str(out))
}
fn fail(_: &mut Exec<'_>, a: &[Value]) -> R {
    arity("fail", a, 1)?;
    Err(FnError::Fail(s(&a[0])))
}
