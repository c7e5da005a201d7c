//! Go objects exposed to templates: Files, Capabilities, semver
//! versions, times, certificates.

use std::collections::BTreeMap;
use std::rc::Rc;

use base64::Engine as _;

use crate::value::{Map, Object, Value};

/// `.Files`: the chart's non-template files.
pub struct Files {
    /// Files by path.
    pub files: Rc<BTreeMap<String, Vec<u8>>>,
}

impl Files {
    fn get(&self, name: &str) -> String {
        self.files.get(name).map(|b| String::from_utf8_lossy(b).into_owned()).unwrap_or_default()
    }
}

/// gobwas/glob-style matching with `/` as separator.
pub fn glob_match(pattern: &str, name: &str) -> bool {
    fn m(p: &[char], s: &[char]) -> bool {
        if p.is_empty() {
            return s.is_empty();
        }
        match p[0] {
            '*' => {
                let super_star = p.get(1) == Some(&'*');
                let rest = if super_star { &p[2..] } else { &p[1..] };
                for i in 0..=s.len() {
                    if !super_star && s[..i].contains(&'/') {
                        break;
                    }
                    if m(rest, &s[i..]) {
                        return true;
                    }
                }
                false
            }
            '?' => !s.is_empty() && s[0] != '/' && m(&p[1..], &s[1..]),
            '[' => {
                let Some(end) = p.iter().position(|c| *c == ']') else {
                    return !s.is_empty() && s[0] == '[' && m(&p[1..], &s[1..]);
                };
                if s.is_empty() {
                    return false;
                }
                let class = &p[1..end];
                let (neg, class) = if class.first() == Some(&'!') || class.first() == Some(&'^') {
                    (true, &class[1..])
                } else {
                    (false, class)
                };
                let mut hit = false;
                let mut i = 0;
                while i < class.len() {
                    if i + 2 < class.len() && class[i + 1] == '-' {
                        if class[i] <= s[0] && s[0] <= class[i + 2] {
                            hit = true;
                        }
                        i += 3;
                    } else {
                        if class[i] == s[0] {
                            hit = true;
                        }
                        i += 1;
                    }
                }
                hit != neg && m(&p[end + 1..], &s[1..])
            }
            '{' => {
                let Some(end) = p.iter().position(|c| *c == '}') else {
                    return false;
                };
                let alts: String = p[1..end].iter().collect();
                let rest = &p[end + 1..];
                alts.split(',').any(|a| {
                    let mut q: Vec<char> = a.chars().collect();
                    q.extend_from_slice(rest);
                    m(&q, s)
                })
            }
            '\\' if p.len() > 1 => !s.is_empty() && s[0] == p[1] && m(&p[2..], &s[1..]),
            c => !s.is_empty() && s[0] == c && m(&p[1..], &s[1..]),
        }
    }
    let p: Vec<char> = pattern.chars().collect();
    let s: Vec<char> = name.chars().collect();
    m(&p, &s)
}

impl Object for Files {
    fn type_name(&self) -> String {
        "engine.files".into()
    }
    fn kind_name(&self) -> &'static str {
        "map"
    }
    fn field(&self, name: &str) -> Option<Value> {
        match name {
            "AsConfig" | "AsSecrets" => self.call(name, &[]).and_then(|r| r.ok()),
            _ => None,
        }
    }
    fn has_method(&self, name: &str) -> bool {
        matches!(name, "Get" | "GetBytes" | "Glob" | "Lines" | "AsConfig" | "AsSecrets")
    }
    fn call(&self, name: &str, args: &[Value]) -> Option<Result<Value, String>> {
        let arg0 = || args.first().map(|a| a.to_go_string()).unwrap_or_default();
        Some(Ok(match name {
            "Get" => Value::str(self.get(&arg0())),
            "GetBytes" => Value::str(self.get(&arg0())),
            "Lines" => {
                let p = arg0();
                match self.files.get(&p) {
                    None => Value::from(Vec::<Value>::new()),
                    Some(b) => {
                        let mut s = String::from_utf8_lossy(b).into_owned();
                        if s.ends_with('\n') {
                            s.pop();
                        }
                        Value::from(s.split('\n').map(Value::str).collect::<Vec<_>>())
                    }
                }
            }
            "Glob" => {
                let pat = arg0();
                let sel: BTreeMap<String, Vec<u8>> = self
                    .files
                    .iter()
                    .filter(|(k, _)| glob_match(&pat, k))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                Value::Object(Rc::new(Files { files: Rc::new(sel) }))
            }
            "AsConfig" | "AsSecrets" => {
                if self.files.is_empty() {
                    return Some(Ok(Value::str("")));
                }
                let mut m = Map::new();
                for (k, v) in self.files.iter() {
                    let base = k.rsplit('/').next().unwrap_or(k).to_string();
                    let s = if name == "AsConfig" {
                        String::from_utf8_lossy(v).into_owned()
                    } else {
                        base64::engine::general_purpose::STANDARD.encode(v)
                    };
                    m.insert(base, Value::str(s));
                }
                let y = crate::yaml::to_yaml(&Value::from(m));
                Value::str(y.trim_end_matches('\n'))
            }
            _ => return None,
        }))
    }
    fn display(&self) -> String {
        let mut s = String::from("map[");
        for (i, (k, v)) in self.files.iter().enumerate() {
            if i > 0 {
                s.push(' ');
            }
            s.push_str(k);
            s.push_str(":[");
            s.push_str(&v.iter().map(|b| b.to_string()).collect::<Vec<_>>().join(" "));
            s.push(']');
        }
        s.push(']');
        s
    }
    fn to_plain(&self) -> Value {
        let m: Map = self
            .files
            .iter()
            .map(|(k, v)| {
                (k.clone(), Value::str(base64::engine::general_purpose::STANDARD.encode(v)))
            })
            .collect();
        m.into()
    }
    fn is_empty(&self) -> bool {
        self.files.is_empty()
    }
}

/// `.Capabilities.KubeVersion`.
pub struct KubeVersion {
    /// Full version, e.g. `v1.33.4-gke.1`.
    pub version: String,
    /// Normalized version, e.g. `v1.33.4`.
    pub normalized: String,
    /// Major.
    pub major: String,
    /// Minor.
    pub minor: String,
}

impl Object for KubeVersion {
    fn type_name(&self) -> String {
        "common.KubeVersion".into()
    }
    fn kind_name(&self) -> &'static str {
        "struct"
    }
    fn field(&self, name: &str) -> Option<Value> {
        Some(Value::str(match name {
            "Version" | "GitVersion" => &self.version,
            "Major" => &self.major,
            "Minor" => &self.minor,
            "String" => &self.normalized,
            _ => return None,
        }))
    }
    fn display(&self) -> String {
        self.normalized.clone()
    }
    fn to_plain(&self) -> Value {
        let mut m = Map::new();
        m.insert("Major".into(), Value::str(&self.major));
        m.insert("Minor".into(), Value::str(&self.minor));
        m.insert("Version".into(), Value::str(&self.version));
        m.into()
    }
}

/// `.Capabilities.APIVersions`.
pub struct ApiVersions(pub Vec<String>);

impl Object for ApiVersions {
    fn type_name(&self) -> String {
        "common.VersionSet".into()
    }
    fn kind_name(&self) -> &'static str {
        "slice"
    }
    fn field(&self, _name: &str) -> Option<Value> {
        None
    }
    fn has_method(&self, name: &str) -> bool {
        name == "Has"
    }
    fn call(&self, name: &str, args: &[Value]) -> Option<Result<Value, String>> {
        if name != "Has" {
            return None;
        }
        if args.len() != 1 {
            return Some(Err(format!("wrong number of args for Has: want 1 got {}", args.len())));
        }
        let a = args[0].to_go_string();
        Some(Ok(Value::Bool(self.0.contains(&a))))
    }
    fn display(&self) -> String {
        format!("[{}]", self.0.join(" "))
    }
    fn to_plain(&self) -> Value {
        Value::from(self.0.iter().map(Value::str).collect::<Vec<_>>())
    }
    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// `.Capabilities`.
pub struct Capabilities {
    /// KubeVersion object.
    pub kube_version: Rc<KubeVersion>,
    /// APIVersions object.
    pub api_versions: Rc<ApiVersions>,
    /// HelmVersion map.
    pub helm_version: Value,
}

impl Object for Capabilities {
    fn type_name(&self) -> String {
        "*common.Capabilities".into()
    }
    fn field(&self, name: &str) -> Option<Value> {
        match name {
            "KubeVersion" => Some(Value::Object(self.kube_version.clone())),
            "APIVersions" => Some(Value::Object(self.api_versions.clone())),
            "HelmVersion" => Some(self.helm_version.clone()),
            _ => None,
        }
    }
    fn display(&self) -> String {
        format!(
            "&{{{} {} {}}}",
            self.kube_version.display(),
            self.api_versions.display(),
            self.helm_version.to_go_string()
        )
    }
    fn to_plain(&self) -> Value {
        let mut m = Map::new();
        m.insert("KubeVersion".into(), self.kube_version.to_plain());
        m.insert("APIVersions".into(), self.api_versions.to_plain());
        m.insert("HelmVersion".into(), self.helm_version.clone());
        m.into()
    }
}

/// A `*semver.Version`.
pub struct SemverObj(pub crate::semver::Version);

impl Object for SemverObj {
    fn type_name(&self) -> String {
        "*semver.Version".into()
    }
    fn field(&self, name: &str) -> Option<Value> {
        let v = &self.0;
        Some(match name {
            "Major" => Value::Int64(v.major as i64),
            "Minor" => Value::Int64(v.minor as i64),
            "Patch" => Value::Int64(v.patch as i64),
            "Prerelease" => Value::str(&v.pre),
            "Metadata" => Value::str(&v.metadata),
            "Original" => Value::str(&v.original),
            "String" => Value::str(v.to_string()),
            _ => return None,
        })
    }
    fn display(&self) -> String {
        self.0.to_string()
    }
    fn to_plain(&self) -> Value {
        Value::str(self.0.to_string())
    }
}

/// A `time.Time`.
pub struct TimeObj(pub chrono::DateTime<chrono::FixedOffset>);

impl Object for TimeObj {
    fn type_name(&self) -> String {
        "time.Time".into()
    }
    fn kind_name(&self) -> &'static str {
        "struct"
    }
    fn field(&self, name: &str) -> Option<Value> {
        use chrono::Datelike;
        Some(match name {
            "Unix" => Value::Int64(self.0.timestamp()),
            "UnixNano" => Value::Int64(self.0.timestamp_nanos_opt().unwrap_or(0)),
            "Year" => Value::Int(self.0.year() as i64),
            "UTC" => {
                Value::Object(Rc::new(TimeObj(self.0.with_timezone(&chrono::Utc).fixed_offset())))
            }
            "String" => Value::str(self.display()),
            _ => return None,
        })
    }
    fn has_method(&self, name: &str) -> bool {
        name == "Format"
    }
    fn call(&self, name: &str, args: &[Value]) -> Option<Result<Value, String>> {
        if name == "Format" {
            let layout = args.first().map(|a| a.to_go_string()).unwrap_or_default();
            return Some(Ok(Value::str(crate::funcs::go_time_format(&self.0, &layout))));
        }
        None
    }
    fn display(&self) -> String {
        crate::funcs::go_time_format(&self.0, "2006-01-02 15:04:05.999999999 -0700 MST")
    }
    fn to_plain(&self) -> Value {
        Value::str(crate::funcs::go_time_format(&self.0, "2006-01-02T15:04:05.999999999Z07:00"))
    }
}

/// Sprig's certificate struct (`.Cert`, `.Key`).
pub struct CertObj {
    /// PEM certificate.
    pub cert: String,
    /// PEM private key.
    pub key: String,
}

impl Object for CertObj {
    fn type_name(&self) -> String {
        "sprig.certificate".into()
    }
    fn kind_name(&self) -> &'static str {
        "struct"
    }
    fn field(&self, name: &str) -> Option<Value> {
        match name {
            "Cert" => Some(Value::str(&self.cert)),
            "Key" => Some(Value::str(&self.key)),
            _ => None,
        }
    }
    fn display(&self) -> String {
        format!("{{{} {}}}", self.cert, self.key)
    }
    fn to_plain(&self) -> Value {
        let mut m = Map::new();
        m.insert("Cert".into(), Value::str(&self.cert));
        m.insert("Key".into(), Value::str(&self.key));
        m.into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        assert!(glob_match("files/*.yaml", "files/a.yaml"));
        assert!(!glob_match("files/*.yaml", "files/x/a.yaml"));
        assert!(glob_match("files/**.yaml", "files/x/a.yaml"));
        assert!(glob_match("files/{a,b}.txt", "files/b.txt"));
        assert!(glob_match("f?le[0-9]", "file7"));
    }
}
