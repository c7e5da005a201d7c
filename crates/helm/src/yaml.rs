//! YAML reading and writing with the semantics Helm gets from
//! `sigs.k8s.io/yaml` (go-yaml v2 underneath): YAML 1.1 scalar
//! resolution on input, go-yaml v2's emitter style on output.

use std::collections::HashMap;
use std::rc::Rc;

use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser};
use yaml_rust2::scanner::{Marker, TScalarStyle};

use crate::limits;
use crate::value::{Map, Value, format_float_g};

/// A YAML syntax or conversion error.
#[derive(Debug, thiserror::Error, Clone, PartialEq)]
#[error("yaml: line {line}: {message}")]
pub struct YamlError {
    /// 1-based line.
    pub line: usize,
    /// Description.
    pub message: String,
}

struct Collector {
    events: Vec<(Event, Marker)>,
}

impl MarkedEventReceiver for Collector {
    fn on_event(&mut self, ev: Event, mark: Marker) {
        self.events.push((ev, mark));
    }
}

/// How numbers are typed when reading YAML.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Numbers {
    /// Integers become `int`, as go-yaml decodes them.
    Native,
    /// Every number becomes `float64`, as after Helm's YAML→JSON→Go trip.
    Float,
}

/// Parses every document of a YAML stream.
pub fn parse_all(src: &str, numbers: Numbers) -> Result<Vec<Value>, YamlError> {
    let mut c = Collector { events: Vec::new() };
    let mut p = Parser::new_from_str(src);
    p.load(&mut c, true)
        .map_err(|e| YamlError { line: e.marker().line(), message: e.info().to_string() })?;
    let mut b = Builder { events: c.events, pos: 0, anchors: HashMap::new(), numbers, expanded: 0 };
    let mut docs = Vec::new();
    while b.pos < b.events.len() {
        match &b.events[b.pos].0 {
            Event::DocumentStart => {
                b.pos += 1;
                if matches!(b.events.get(b.pos).map(|e| &e.0), Some(Event::DocumentEnd)) {
                    docs.push(Value::Nil);
                } else {
                    docs.push(b.node()?);
                }
            }
            _ => b.pos += 1,
        }
    }
    Ok(docs)
}

/// Parses the first document (empty input gives nil), like go-yaml's
/// `Unmarshal`.
pub fn parse(src: &str, numbers: Numbers) -> Result<Value, YamlError> {
    Ok(parse_all(src, numbers)?.into_iter().next().unwrap_or(Value::Nil))
}

struct Builder {
    events: Vec<(Event, Marker)>,
    pos: usize,
    anchors: HashMap<usize, Value>,
    numbers: Numbers,
    /// Nodes made by expanding aliases so far (bounded: "billion laughs").
    expanded: usize,
}

/// The nodes of `v`, counted up to about `limit`.
fn nodes(v: &Value, limit: usize) -> usize {
    match v {
        Value::List(items) => 1 + nodes_of(items.iter(), limit),
        Value::Map(m) => 1 + nodes_of(m.borrow().values(), limit),
        _ => 1,
    }
}

fn nodes_of<'a>(children: impl Iterator<Item = &'a Value>, limit: usize) -> usize {
    let mut count = 0;
    for child in children {
        if count > limit {
            break;
        }
        count += nodes(child, limit - count);
    }
    count
}

impl Builder {
    fn node(&mut self) -> Result<Value, YamlError> {
        let (ev, mark) = self.events[self.pos].clone();
        self.pos += 1;
        match ev {
            Event::Alias(id) => {
                let v = self.anchors.get(&id).ok_or(YamlError {
                    line: mark.line(),
                    message: "unknown anchor referenced".into(),
                })?;
                self.expanded += nodes(v, limits::MAX_ALIAS_NODES);
                if self.expanded > limits::MAX_ALIAS_NODES {
                    return Err(YamlError {
                        line: mark.line(),
                        message: "document contains excessive aliasing".into(),
                    });
                }
                Ok(v.deep_copy())
            }
            Event::Scalar(text, style, anchor, tag) => {
                let v = self.scalar(
                    &text,
                    style,
                    tag.as_ref().map(|t| (t.handle.as_str(), t.suffix.as_str())),
                    mark,
                )?;
                if anchor > 0 {
                    self.anchors.insert(anchor, v.clone());
                }
                Ok(v)
            }
            Event::SequenceStart(anchor, _) => {
                let mut items = Vec::new();
                loop {
                    if matches!(self.events.get(self.pos).map(|e| &e.0), Some(Event::SequenceEnd)) {
                        self.pos += 1;
                        break;
                    }
                    if self.pos >= self.events.len() {
                        break;
                    }
                    items.push(self.node()?);
                }
                let v = Value::from(items);
                if anchor > 0 {
                    self.anchors.insert(anchor, v.clone());
                }
                Ok(v)
            }
            Event::MappingStart(anchor, _) => {
                let mut m = Map::new();
                let mut merges: Vec<Value> = Vec::new();
                loop {
                    if matches!(self.events.get(self.pos).map(|e| &e.0), Some(Event::MappingEnd)) {
                        self.pos += 1;
                        break;
                    }
                    if self.pos >= self.events.len() {
                        break;
                    }
                    let is_merge = matches!(&self.events[self.pos].0, Event::Scalar(s, TScalarStyle::Plain, _, None) if s == "<<");
                    let kmark = self.events[self.pos].1;
                    let k = self.node()?;
                    let v = self.node()?;
                    if is_merge {
                        merges.push(v);
                        continue;
                    }
                    let key = match k {
                        Value::Str(s) => s.to_string(),
                        Value::Int(i) | Value::Int64(i) => i.to_string(),
                        Value::Float(f) => {
                            if self.numbers == Numbers::Float && f.fract() == 0.0 && f.abs() < 1e15
                            {
                                format!("{}", f as i64)
                            } else {
                                format_float_g(f)
                            }
                        }
                        Value::Bool(b) => b.to_string(),
                        other => {
                            return Err(YamlError {
                                line: kmark.line(),
                                message: format!("unsupported map key: {other:?}"),
                            });
                        }
                    };
                    m.insert(key, v);
                }
                // Merge keys: explicit keys win over merged ones.
                for mv in merges {
                    let sources = match &mv {
                        Value::List(l) => l.iter().cloned().collect::<Vec<_>>(),
                        v => vec![v.clone()],
                    };
                    for s in sources {
                        if let Value::Map(sm) = s {
                            for (k, v) in sm.borrow().iter() {
                                m.entry(k.clone()).or_insert_with(|| v.clone());
                            }
                        }
                    }
                }
                let v = Value::from(m);
                if anchor > 0 {
                    self.anchors.insert(anchor, v.clone());
                }
                Ok(v)
            }
            _ => Err(YamlError { line: mark.line(), message: "unexpected YAML event".into() }),
        }
    }

    fn scalar(
        &self,
        text: &str,
        style: TScalarStyle,
        tag: Option<(&str, &str)>,
        mark: Marker,
    ) -> Result<Value, YamlError> {
        let tag_name = tag.map(|(h, s)| {
            if h == "!!" || h == "tag:yaml.org,2002:" {
                format!("!!{s}")
            } else {
                format!("{h}{s}")
            }
        });
        if let Some(t) = tag_name.as_deref() {
            match t {
                "!!str" | "!!binary" => return Ok(Value::str(text)),
                "!!int" | "!!float" | "!!bool" | "!!null" => {
                    let v = resolve_plain(text);
                    let v = match (t, v) {
                        ("!!float", Value::Int(i)) => Value::Float(i as f64),
                        (_, v) => v,
                    };
                    if matches!(v, Value::Str(_)) {
                        return Err(YamlError {
                            line: mark.line(),
                            message: format!("cannot decode !!str `{text}` as a {t}"),
                        });
                    }
                    return Ok(self.number_mode(v));
                }
                _ => {}
            }
        }
        if style != TScalarStyle::Plain {
            return Ok(Value::str(text));
        }
        Ok(self.number_mode(resolve_plain(text)))
    }

    fn number_mode(&self, v: Value) -> Value {
        match (self.numbers, v) {
            (Numbers::Float, Value::Int(i)) => Value::Float(i as f64),
            (_, v) => v,
        }
    }
}

/// The tag go-yaml v2 resolves a plain scalar to.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub(crate) enum Resolved {
    Null,
    Bool,
    Int,
    Float,
    Timestamp,
    Str,
}

pub(crate) fn resolve_tag(s: &str) -> Resolved {
    match s {
        "y" | "Y" | "yes" | "Yes" | "YES" | "true" | "True" | "TRUE" | "on" | "On" | "ON" | "n"
        | "N" | "no" | "No" | "NO" | "false" | "False" | "FALSE" | "off" | "Off" | "OFF" => {
            return Resolved::Bool;
        }
        "" | "~" | "null" | "Null" | "NULL" => return Resolved::Null,
        ".nan" | ".NaN" | ".NAN" | ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF"
        | "-.inf" | "-.Inf" | "-.INF" => return Resolved::Float,
        _ => {}
    }
    let c = s.as_bytes()[0];
    match c {
        b'.' => {
            if go_parse_float(s).is_some() {
                Resolved::Float
            } else {
                Resolved::Str
            }
        }
        b'+' | b'-' | b'0'..=b'9' => {
            if is_timestamp(s) {
                return Resolved::Timestamp;
            }
            let plain = s.replace('_', "");
            if go_parse_int(&plain).is_some() || go_parse_uint(&plain).is_some() {
                return Resolved::Int;
            }
            if yaml_style_float(&plain) && go_parse_float(&plain).is_some() {
                return Resolved::Float;
            }
            if let Some(b) = plain.strip_prefix("0b") {
                if i64::from_str_radix(b, 2).is_ok() || u64::from_str_radix(b, 2).is_ok() {
                    return Resolved::Int;
                }
            } else if let Some(b) = plain.strip_prefix("-0b")
                && i64::from_str_radix(&format!("-{b}"), 2).is_ok()
            {
                return Resolved::Int;
            }
            Resolved::Str
        }
        _ => Resolved::Str,
    }
}

fn resolve_plain(s: &str) -> Value {
    match resolve_tag(s) {
        Resolved::Null => Value::Nil,
        Resolved::Bool => Value::Bool(matches!(
            s,
            "y" | "Y" | "yes" | "Yes" | "YES" | "true" | "True" | "TRUE" | "on" | "On" | "ON"
        )),
        Resolved::Float => match s {
            ".nan" | ".NaN" | ".NAN" => Value::Float(f64::NAN),
            ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => Value::Float(f64::INFINITY),
            "-.inf" | "-.Inf" | "-.INF" => Value::Float(f64::NEG_INFINITY),
            _ => Value::Float(go_parse_float(&s.replace('_', "")).unwrap_or(0.0)),
        },
        Resolved::Int => {
            let plain = s.replace('_', "");
            if let Some(i) = go_parse_int(&plain) {
                Value::Int(i)
            } else if let Some(u) = go_parse_uint(&plain) {
                Value::Float(u as f64)
            } else if let Some(b) = plain.strip_prefix("0b") {
                Value::Int(i64::from_str_radix(b, 2).unwrap_or(0))
            } else if let Some(b) = plain.strip_prefix("-0b") {
                Value::Int(-i64::from_str_radix(b, 2).unwrap_or(0))
            } else {
                Value::str(s)
            }
        }
        Resolved::Timestamp | Resolved::Str => Value::str(s),
    }
}

/// Go's `strconv.ParseInt(s, 0, 64)`.
pub(crate) fn go_parse_int(s: &str) -> Option<i64> {
    let (neg, body) = match s.as_bytes().first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    let u = go_parse_uint_body(body)?;
    if neg {
        if u <= (i64::MAX as u64) + 1 { Some((u as i128).wrapping_neg() as i64) } else { None }
    } else if u <= i64::MAX as u64 {
        Some(u as i64)
    } else {
        None
    }
}

/// Go's `strconv.ParseUint(s, 0, 64)`.
pub(crate) fn go_parse_uint(s: &str) -> Option<u64> {
    go_parse_uint_body(s)
}

fn go_parse_uint_body(s: &str) -> Option<u64> {
    if s.is_empty() {
        return None;
    }
    let (radix, digits) = if let Some(r) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        (16, r)
    } else if let Some(r) = s.strip_prefix("0o").or_else(|| s.strip_prefix("0O")) {
        (8, r)
    } else if let Some(r) = s.strip_prefix("0b").or_else(|| s.strip_prefix("0B")) {
        (2, r)
    } else if s.len() > 1 && s.starts_with('0') {
        (8, &s[1..])
    } else {
        (10, s)
    };
    if digits.is_empty() || digits.starts_with('+') || digits.starts_with('-') {
        return None;
    }
    u64::from_str_radix(digits, radix).ok()
}

/// Go's `strconv.ParseFloat(s, 64)` for decimal inputs.
pub(crate) fn go_parse_float(s: &str) -> Option<f64> {
    let t = s.strip_prefix('+').unwrap_or(s);
    let lower = t.to_ascii_lowercase();
    let body = lower.strip_prefix('-').unwrap_or(&lower);
    if body == "inf" || body == "infinity" || body == "nan" {
        return t.parse::<f64>().ok();
    }
    if body.starts_with("0x") {
        return None;
    }
    if !body.chars().all(|c| c.is_ascii_digit() || c == '.' || c == 'e' || c == '-' || c == '+') {
        return None;
    }
    t.parse::<f64>().ok()
}

fn yaml_style_float(s: &str) -> bool {
    // ^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$
    let b = s.as_bytes();
    let mut i = 0;
    if i < b.len() && (b[i] == b'-' || b[i] == b'+') {
        i += 1;
    }
    let digits = |i: &mut usize| {
        let st = *i;
        while *i < b.len() && b[*i].is_ascii_digit() {
            *i += 1;
        }
        *i - st
    };
    if i < b.len() && b[i] == b'.' {
        i += 1;
        if digits(&mut i) == 0 {
            return false;
        }
    } else {
        if digits(&mut i) == 0 {
            return false;
        }
        if i < b.len() && b[i] == b'.' {
            i += 1;
            digits(&mut i);
        }
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        i += 1;
        if i < b.len() && (b[i] == b'-' || b[i] == b'+') {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == b.len()
}

fn is_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    let n = b.iter().take_while(|c| c.is_ascii_digit()).count();
    if n != 4 || b.len() <= 4 || b[4] != b'-' {
        return false;
    }
    // 2006-1-2, 2006-1-2T15:4:5..., 2006-1-2 15:4:5
    let rest = &s[5..];
    let mut parts = rest.splitn(2, '-');
    let m = parts.next().unwrap_or("");
    let Some(tail) = parts.next() else {
        return false;
    };
    if m.is_empty() || m.len() > 2 || !m.bytes().all(|c| c.is_ascii_digit()) {
        return false;
    }
    let dlen = tail.bytes().take_while(|c| c.is_ascii_digit()).count();
    if dlen == 0 || dlen > 2 {
        return false;
    }
    let after = &tail[dlen..];
    if after.is_empty() {
        return valid_date(m, &tail[..dlen]);
    }
    let sep = after.as_bytes()[0];
    if sep != b'T' && sep != b't' && sep != b' ' {
        return false;
    }
    let time = &after[1..];
    let hms: Vec<&str> = time.splitn(3, ':').collect();
    if hms.len() != 3 {
        return false;
    }
    let sec_part = hms[2];
    let sec_digits = sec_part.bytes().take_while(|c| c.is_ascii_digit()).count();
    if !(1..=2).contains(&sec_digits) {
        return false;
    }
    let mut rest = &sec_part[sec_digits..];
    if let Some(r) = rest.strip_prefix('.') {
        let fd = r.bytes().take_while(|c| c.is_ascii_digit()).count();
        if fd == 0 {
            return false;
        }
        rest = &r[fd..];
    }
    let tz_ok = if sep == b' ' {
        rest.is_empty()
    } else {
        rest == "Z"
            || ((rest.starts_with('+') || rest.starts_with('-'))
                && rest.len() == 6
                && rest.as_bytes()[3] == b':')
    };
    tz_ok && valid_date(m, &tail[..dlen])
}

fn valid_date(m: &str, d: &str) -> bool {
    let m: u32 = m.parse().unwrap_or(0);
    let d: u32 = d.parse().unwrap_or(0);
    (1..=12).contains(&m) && (1..=31).contains(&d)
}

// ---------------------------------------------------------------------------
// Emitter
// ---------------------------------------------------------------------------

const BEST_WIDTH: usize = 80;
const BEST_INDENT: i32 = 2;

/// Marshals a value the way Helm's `toYaml` does (without the trailing
/// newline trimming, which the caller does).
pub fn to_yaml(v: &Value) -> String {
    let mut e = Emitter {
        out: String::new(),
        column: 0,
        whitespace: true,
        indention: true,
        indent: -1,
        open_ended: false,
    };
    let plain = v.to_plain();
    e.node(&plain, Ctx::Root, -1);
    if e.column != 0 || e.out.is_empty() || !e.out.ends_with('\n') {
        e.out.push('\n');
    }
    if e.open_ended {
        // go-yaml writes a document end marker after an open-ended scalar
        // only when another document follows; nothing to do here.
    }
    e.out
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Ctx {
    Root,
    MapValue,
    SeqItem,
}

struct Emitter {
    out: String,
    column: usize,
    whitespace: bool,
    indention: bool,
    indent: i32,
    open_ended: bool,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Style {
    Plain,
    Single,
    Double,
    Literal,
}

struct Analysis {
    multiline: bool,
    flow_plain_allowed: bool,
    block_plain_allowed: bool,
    single_quoted_allowed: bool,
    block_allowed: bool,
}

/// go-yaml v2's byte-level `is_printable`: no C1 controls, no
/// characters outside the BMP, no BOM / U+FFFE / U+FFFF.
fn is_printable(c: char) -> bool {
    let u = c as u32;
    u == 0x0A
        || (0x20..=0x7E).contains(&u)
        || (0xA0..=0xD7FF).contains(&u)
        || ((0xE000..=0xFFFD).contains(&u) && u != 0xFEFF)
}

fn is_break(c: char) -> bool {
    matches!(c, '\r' | '\n' | '\u{85}' | '\u{2028}' | '\u{2029}')
}

fn is_blank(c: Option<char>) -> bool {
    matches!(c, Some(' ') | Some('\t'))
}

fn is_blankz(c: Option<char>) -> bool {
    matches!(
        c,
        None | Some(' ')
            | Some('\t')
            | Some('\r')
            | Some('\n')
            | Some('\u{85}')
            | Some('\u{2028}')
            | Some('\u{2029}')
    ) || c == Some('\0')
}

fn analyze(value: &str) -> Analysis {
    if value.is_empty() {
        return Analysis {
            multiline: false,
            flow_plain_allowed: false,
            block_plain_allowed: true,
            single_quoted_allowed: true,
            block_allowed: false,
        };
    }
    let chars: Vec<char> = value.chars().collect();
    let mut block_indicators = false;
    let mut flow_indicators = false;
    let mut line_breaks = false;
    let mut special = false;
    let mut leading_space = false;
    let mut leading_break = false;
    let mut trailing_space = false;
    let mut trailing_break = false;
    let mut break_space = false;
    let mut space_break = false;
    let mut previous_space = false;
    let mut previous_break = false;
    if value.starts_with("---") || value.starts_with("...") {
        block_indicators = true;
        flow_indicators = true;
    }
    let mut preceded_by_ws = true;
    let n = chars.len();
    for i in 0..n {
        let c = chars[i];
        let followed_by_ws = i + 1 >= n
            || is_blank(chars.get(i + 1).copied())
            || is_blankz(chars.get(i + 1).copied());
        if i == 0 {
            match c {
                '#' | ',' | '[' | ']' | '{' | '}' | '&' | '*' | '!' | '|' | '>' | '\'' | '"'
                | '%' | '@' | '`' => {
                    flow_indicators = true;
                    block_indicators = true;
                }
                '?' | ':' => {
                    flow_indicators = true;
                    if followed_by_ws {
                        block_indicators = true;
                    }
                }
                '-' if followed_by_ws => {
                    flow_indicators = true;
                    block_indicators = true;
                }
                _ => {}
            }
        } else {
            match c {
                ',' | '?' | '[' | ']' | '{' | '}' => flow_indicators = true,
                ':' => {
                    flow_indicators = true;
                    if followed_by_ws {
                        block_indicators = true;
                    }
                }
                '#' if preceded_by_ws => {
                    flow_indicators = true;
                    block_indicators = true;
                }
                _ => {}
            }
        }
        if !is_printable(c) {
            special = true;
        }
        if c == ' ' {
            if i == 0 {
                leading_space = true;
            }
            if i + 1 == n {
                trailing_space = true;
            }
            if previous_break {
                break_space = true;
            }
            previous_space = true;
            previous_break = false;
        } else if is_break(c) {
            line_breaks = true;
            if i == 0 {
                leading_break = true;
            }
            if i + 1 == n {
                trailing_break = true;
            }
            if previous_space {
                space_break = true;
            }
            previous_space = false;
            previous_break = true;
        } else {
            previous_space = false;
            previous_break = false;
        }
        preceded_by_ws = is_blankz(Some(c));
    }
    let mut a = Analysis {
        multiline: line_breaks,
        flow_plain_allowed: true,
        block_plain_allowed: true,
        single_quoted_allowed: true,
        block_allowed: true,
    };
    if leading_space || leading_break || trailing_space || trailing_break {
        a.flow_plain_allowed = false;
        a.block_plain_allowed = false;
    }
    if trailing_space {
        a.block_allowed = false;
    }
    if break_space {
        a.flow_plain_allowed = false;
        a.block_plain_allowed = false;
        a.single_quoted_allowed = false;
    }
    if space_break || special {
        a.flow_plain_allowed = false;
        a.block_plain_allowed = false;
        a.single_quoted_allowed = false;
        a.block_allowed = false;
    }
    if line_breaks {
        a.flow_plain_allowed = false;
        a.block_plain_allowed = false;
    }
    if flow_indicators {
        a.flow_plain_allowed = false;
    }
    if block_indicators {
        a.block_plain_allowed = false;
    }
    a
}

fn is_base60_float(s: &str) -> bool {
    let b = s.as_bytes();
    if b.is_empty() || !(b[0] == b'+' || b[0] == b'-' || b[0].is_ascii_digit()) || !s.contains(':')
    {
        return false;
    }
    // ^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$
    let mut i = 0;
    if b[0] == b'+' || b[0] == b'-' {
        i = 1;
    }
    if i >= b.len() || !b[i].is_ascii_digit() {
        return false;
    }
    while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'_') {
        i += 1;
    }
    let mut groups = 0;
    while i < b.len() && b[i] == b':' {
        i += 1;
        let st = i;
        while i < b.len() && b[i].is_ascii_digit() && i - st < 2 {
            i += 1;
        }
        let g = &s[st..i];
        let ok = match g.len() {
            1 => true,
            2 => g.as_bytes()[0] <= b'5',
            _ => false,
        };
        if !ok {
            return false;
        }
        groups += 1;
    }
    if groups == 0 {
        return false;
    }
    if i < b.len() && b[i] == b'.' {
        i += 1;
        while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'_') {
            i += 1;
        }
    }
    i == b.len()
}

/// go-yaml v2's natural key order.
pub(crate) fn key_less(a: &str, b: &str) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    let ar: Vec<char> = a.chars().collect();
    let br: Vec<char> = b.chars().collect();
    let mut i = 0;
    while i < ar.len() && i < br.len() {
        if ar[i] == br[i] {
            i += 1;
            continue;
        }
        let al = ar[i].is_alphabetic();
        let bl = br[i].is_alphabetic();
        if al && bl {
            return ar[i].cmp(&br[i]);
        }
        if al || bl {
            return if bl { Ordering::Less } else { Ordering::Greater };
        }
        let mut an: i64 = 0;
        let mut bn: i64 = 0;
        if ar[i] == '0' || br[i] == '0' {
            let mut j = i as i64 - 1;
            while j >= 0 && ar[j as usize].is_ascii_digit() {
                if ar[j as usize] != '0' {
                    an = 1;
                    bn = 1;
                    break;
                }
                j -= 1;
            }
        }
        let mut ai = i;
        while ai < ar.len() && ar[ai].is_ascii_digit() {
            an = an.wrapping_mul(10).wrapping_add(ar[ai] as i64 - '0' as i64);
            ai += 1;
        }
        let mut bi = i;
        while bi < br.len() && br[bi].is_ascii_digit() {
            bn = bn.wrapping_mul(10).wrapping_add(br[bi] as i64 - '0' as i64);
            bi += 1;
        }
        if an != bn {
            return an.cmp(&bn);
        }
        if ai != bi {
            return ai.cmp(&bi);
        }
        return ar[i].cmp(&br[i]);
    }
    ar.len().cmp(&br.len())
}

/// Text of a number the way JSON→YAML round trip prints it.
pub(crate) fn yaml_float_text(f: f64) -> String {
    if f.is_nan() {
        return ".nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { ".inf".into() } else { "-.inf".into() };
    }
    if f.fract() == 0.0 && f.abs() < 1e21 {
        if f.abs() < 9.2e18 {
            return format!("{}", f as i64);
        }
        if f > 0.0 && f < 1.8e19 {
            return format!("{}", f as u64);
        }
    }
    format_float_g(f)
}

impl Emitter {
    fn put(&mut self, c: char) {
        self.out.push(c);
        self.column += 1;
    }

    fn put_break(&mut self) {
        self.out.push('\n');
        self.column = 0;
    }

    fn write_indent(&mut self) {
        let indent = self.indent.max(0) as usize;
        if !self.indention || self.column > indent || (self.column == indent && !self.whitespace) {
            self.put_break();
        }
        while self.column < indent {
            self.put(' ');
        }
        self.whitespace = true;
        self.indention = true;
    }

    fn write_indicator(&mut self, ind: &str, need_ws: bool, is_ws: bool, is_indention: bool) {
        if need_ws && !self.whitespace {
            self.put(' ');
        }
        for c in ind.chars() {
            self.put(c);
        }
        self.whitespace = is_ws;
        self.indention = self.indention && is_indention;
        self.open_ended = false;
    }

    fn increase_indent(&mut self, flow: bool, indentless: bool) {
        if self.indent < 0 {
            self.indent = if flow { BEST_INDENT } else { 0 };
        } else if !indentless {
            self.indent += BEST_INDENT;
        }
    }

    fn node(&mut self, v: &Value, ctx: Ctx, _parent_indent: i32) {
        match v {
            Value::Map(m) => {
                let m = m.borrow();
                if m.is_empty() {
                    self.write_indicator("{", true, true, false);
                    self.write_indicator("}", false, false, false);
                    return;
                }
                let saved = self.indent;
                self.increase_indent(false, false);
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort_by(|a, b| key_less(a, b));
                for k in keys {
                    self.write_indent();
                    self.scalar_str(k, true);
                    self.write_indicator(":", false, false, false);
                    let val = &m[k];
                    self.node(val, Ctx::MapValue, self.indent);
                }
                self.indent = saved;
            }
            Value::List(l) => {
                if l.is_empty() {
                    self.write_indicator("[", true, true, false);
                    self.write_indicator("]", false, false, false);
                    return;
                }
                let saved = self.indent;
                let indentless = ctx == Ctx::MapValue && !self.indention;
                self.increase_indent(false, indentless);
                for item in l.iter() {
                    self.write_indent();
                    self.write_indicator("-", true, false, true);
                    self.node(item, Ctx::SeqItem, self.indent);
                }
                self.indent = saved;
            }
            other => {
                let saved = self.indent;
                self.increase_indent(true, false);
                match other {
                    Value::Nil => self.plain("null", false),
                    Value::Bool(b) => self.plain(if *b { "true" } else { "false" }, false),
                    Value::Int(i) | Value::Int64(i) => self.plain(&i.to_string(), false),
                    Value::Float(f) => self.plain(&yaml_float_text(*f), false),
                    Value::Str(s) => self.scalar_str(s, false),
                    _ => self.plain(&other.to_go_string(), false),
                }
                self.indent = saved;
            }
        }
    }

    fn plain(&mut self, s: &str, simple_key: bool) {
        self.write_plain(s, !simple_key);
    }

    fn scalar_str(&mut self, s: &str, simple_key: bool) {
        let can_plain = resolve_tag_for_emit(s) && !is_base60_float(s);
        let mut style = if s.contains('\n') {
            Style::Literal
        } else if can_plain {
            Style::Plain
        } else {
            Style::Double
        };
        let a = analyze(s);
        let implicit = true;
        if simple_key && a.multiline {
            style = Style::Double;
        }
        if style == Style::Plain {
            if !a.block_plain_allowed {
                style = Style::Single;
            }
            if s.is_empty() && simple_key {
                style = Style::Single;
            }
            let _ = implicit;
        }
        if style == Style::Single && !a.single_quoted_allowed {
            style = Style::Double;
        }
        if style == Style::Literal && (!a.block_allowed || simple_key) {
            style = Style::Double;
        }
        let saved = self.indent;
        if simple_key {
            // Keys are emitted in the mapping's own indentation context.
        }
        match style {
            Style::Plain => self.write_plain(s, !simple_key),
            Style::Single => self.write_single(s, !simple_key),
            Style::Double => self.write_double(s, !simple_key),
            Style::Literal => self.write_literal(s),
        }
        self.indent = saved;
    }

    fn write_plain(&mut self, value: &str, allow_breaks: bool) {
        if !self.whitespace {
            self.put(' ');
        }
        let chars: Vec<char> = value.chars().collect();
        let mut spaces = false;
        let mut breaks = false;
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            if c == ' ' {
                if allow_breaks
                    && !spaces
                    && self.column > BEST_WIDTH
                    && chars.get(i + 1) != Some(&' ')
                {
                    self.write_indent();
                } else {
                    self.put(c);
                }
                spaces = true;
            } else if is_break(c) {
                if !breaks && c == '\n' {
                    self.put_break();
                }
                self.write_break(c);
                self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                self.put(c);
                self.indention = false;
                spaces = false;
                breaks = false;
            }
            i += 1;
        }
        self.whitespace = false;
        self.indention = false;
    }

    fn write_break(&mut self, c: char) {
        if c == '\n' {
            self.put_break();
        } else {
            self.out.push(c);
            self.column = 0;
        }
    }

    fn write_single(&mut self, value: &str, allow_breaks: bool) {
        self.write_indicator("'", true, false, false);
        let chars: Vec<char> = value.chars().collect();
        let n = chars.len();
        let mut spaces = false;
        let mut breaks = false;
        let mut i = 0;
        while i < n {
            let c = chars[i];
            if c == ' ' {
                if allow_breaks
                    && !spaces
                    && self.column > BEST_WIDTH
                    && i > 0
                    && i < n - 1
                    && chars.get(i + 1) != Some(&' ')
                {
                    self.write_indent();
                } else {
                    self.put(c);
                }
                spaces = true;
            } else if is_break(c) {
                if !breaks && c == '\n' {
                    self.put_break();
                }
                self.write_break(c);
                self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                if c == '\'' {
                    self.put('\'');
                }
                self.put(c);
                self.indention = false;
                spaces = false;
                breaks = false;
            }
            i += 1;
        }
        self.write_indicator("'", false, false, false);
        self.whitespace = false;
        self.indention = false;
    }

    fn write_double(&mut self, value: &str, allow_breaks: bool) {
        self.write_indicator("\"", true, false, false);
        let chars: Vec<char> = value.chars().collect();
        let n = chars.len();
        let mut spaces = false;
        let mut i = 0;
        while i < n {
            let c = chars[i];
            if !is_printable(c) || c == '\u{FEFF}' || is_break(c) || c == '"' || c == '\\' {
                self.put('\\');
                let u = c as u32;
                match u {
                    0x00 => self.put('0'),
                    0x07 => self.put('a'),
                    0x08 => self.put('b'),
                    0x09 => self.put('t'),
                    0x0A => self.put('n'),
                    0x0B => self.put('v'),
                    0x0C => self.put('f'),
                    0x0D => self.put('r'),
                    0x1B => self.put('e'),
                    0x22 => self.put('"'),
                    0x5C => self.put('\\'),
                    0x85 => self.put('N'),
                    0xA0 => self.put('_'),
                    0x2028 => self.put('L'),
                    0x2029 => self.put('P'),
                    _ => {
                        let (p, w) = if u <= 0xFF {
                            ('x', 2)
                        } else if u <= 0xFFFF {
                            ('u', 4)
                        } else {
                            ('U', 8)
                        };
                        self.put(p);
                        for k in (0..w).rev() {
                            let d = (u >> (k * 4)) & 0xF;
                            let ch = if d < 10 {
                                (b'0' + d as u8) as char
                            } else {
                                (b'A' + d as u8 - 10) as char
                            };
                            self.put(ch);
                        }
                    }
                }
                spaces = false;
            } else if c == ' ' {
                if allow_breaks && !spaces && self.column > BEST_WIDTH && i > 0 && i < n - 1 {
                    self.write_indent();
                    if chars.get(i + 1) == Some(&' ') {
                        self.put('\\');
                    }
                } else {
                    self.put(c);
                }
                spaces = true;
            } else {
                self.put(c);
                spaces = false;
            }
            i += 1;
        }
        self.write_indicator("\"", false, false, false);
        self.whitespace = false;
        self.indention = false;
    }

    fn write_literal(&mut self, value: &str) {
        self.write_indicator("|", true, false, false);
        let chars: Vec<char> = value.chars().collect();
        if chars.first().is_some_and(|c| *c == ' ' || is_break(*c)) {
            let hint = format!("{BEST_INDENT}");
            self.write_indicator(&hint, false, false, false);
        }
        self.open_ended = false;
        let n = chars.len();
        let chomp = if n == 0 || !is_break(chars[n - 1]) {
            Some('-')
        } else if n == 1 || is_break(chars[n - 2]) {
            self.open_ended = true;
            Some('+')
        } else {
            None
        };
        if let Some(ch) = chomp {
            self.write_indicator(&ch.to_string(), false, false, false);
        }
        self.put_break();
        self.indention = true;
        self.whitespace = true;
        let mut breaks = true;
        for c in chars {
            if is_break(c) {
                self.write_break(c);
                self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                self.put(c);
                self.indention = false;
                breaks = false;
            }
        }
    }
}

fn resolve_tag_for_emit(s: &str) -> bool {
    if s.is_empty() {
        return false;
    }
    resolve_tag(s) == Resolved::Str
}

/// Convenience: an `Rc<str>` from a key.
#[allow(dead_code)]
pub(crate) fn rc(s: &str) -> Rc<str> {
    Rc::from(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn y(src: &str) -> Value {
        parse(src, Numbers::Native).unwrap()
    }

    #[test]
    fn alias_expansion_is_bounded() {
        // "Billion laughs": each level refers to the one before ten times.
        let mut src = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..9 {
            let refs = vec![format!("*a{}", i - 1); 10].join(", ");
            src.push_str(&format!("a{i}: &a{i} [{refs}]\n"));
        }
        let err = parse(&src, Numbers::Native).unwrap_err();
        assert_eq!(err.message, "document contains excessive aliasing");
        let fine = y("base: &b {x: 1}\none: *b\ntwo: *b\n");
        assert_eq!(fine.get("two"), fine.get("base"));
    }

    #[test]
    fn resolves_yaml11_scalars() {
        let v = y("a: yes\nb: 'yes'\nc: 010\nd: 1.5\ne: ~\nf: 2020-01-01\ng: 0x1F\nh: 1_000\n");
        assert_eq!(v.get("a"), Some(Value::Bool(true)));
        assert_eq!(v.get("b"), Some(Value::str("yes")));
        assert_eq!(v.get("c"), Some(Value::Int(8)));
        assert_eq!(v.get("d"), Some(Value::Float(1.5)));
        assert_eq!(v.get("e"), Some(Value::Nil));
        assert_eq!(v.get("f"), Some(Value::str("2020-01-01")));
        assert_eq!(v.get("g"), Some(Value::Int(31)));
        assert_eq!(v.get("h"), Some(Value::Int(1000)));
    }

    #[test]
    fn emits_go_yaml_style() {
        let v = y(
            "b: [1, {x: z}]\na: {}\nc: \"true\"\nd: |\n  l1\n  l2\ne: ''\nf: '- x'\ng: [[1, 2]]\n",
        );
        assert_eq!(
            to_yaml(&v),
            "a: {}\nb:\n- 1\n- x: z\nc: \"true\"\nd: |\n  l1\n  l2\ne: \"\"\nf: '- x'\ng:\n- - 1\n  - 2\n"
        );
    }

    #[test]
    fn natural_key_order() {
        let mut keys = vec!["a10", "a2", "b", "A", "a"];
        keys.sort_by(|a, b| key_less(a, b));
        assert_eq!(keys, vec!["A", "a", "a2", "a10", "b"]);
    }

    #[test]
    fn merge_keys_and_anchors() {
        let v = y("base: &b {x: 1}\nd:\n  <<: *b\n  y: 2\n");
        assert_eq!(v.get("d").unwrap().get("x"), Some(Value::Int(1)));
    }
}
