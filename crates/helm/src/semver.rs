//! Semantic versions and constraints with Masterminds/semver v3 rules.

use std::cmp::Ordering;
use std::sync::OnceLock;

use regex::Regex;

/// A parsed version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Version {
    /// Major.
    pub major: u64,
    /// Minor.
    pub minor: u64,
    /// Patch.
    pub patch: u64,
    /// Prerelease (without `-`).
    pub pre: String,
    /// Build metadata (without `+`).
    pub metadata: String,
    /// The input text.
    pub original: String,
}

const CV: &str = r"v?([0-9|x|X|\*]+)(\.[0-9|x|X|\*]+)?(\.[0-9|x|X|\*]+)?(-([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?(\+([0-9A-Za-z\-]+(\.[0-9A-Za-z\-]+)*))?";
const OPS: &str = r"=||!=|>|<|>=|=>|<=|=<|~|~>|\^";

fn version_re() -> &'static Regex {
    static R: OnceLock<Regex> = OnceLock::new();
    R.get_or_init(|| {
        Regex::new(r"^v?(0|[1-9]\d*)(?:\.(0|[1-9]\d*))?(?:\.(0|[1-9]\d*))?(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$").expect("regex")
    })
}

fn constraint_re() -> &'static Regex {
    static R: OnceLock<Regex> = OnceLock::new();
    R.get_or_init(|| Regex::new(&format!(r"^\s*({OPS})\s*({CV})\s*$")).expect("regex"))
}
fn range_re() -> &'static Regex {
    static R: OnceLock<Regex> = OnceLock::new();
    R.get_or_init(|| Regex::new(&format!(r"\s*({CV})\s+-\s+({CV})\s*")).expect("regex"))
}
fn find_re() -> &'static Regex {
    static R: OnceLock<Regex> = OnceLock::new();
    R.get_or_init(|| Regex::new(&format!(r"({OPS})\s*({CV})")).expect("regex"))
}
fn valid_re() -> &'static Regex {
    static R: OnceLock<Regex> = OnceLock::new();
    R.get_or_init(|| {
        Regex::new(&format!(r"^(\s*({OPS})\s*({CV})\s*)((?:\s+|,\s*)({OPS})\s*({CV})\s*)*$"))
            .expect("regex")
    })
}

impl Version {
    /// Parses like `semver.NewVersion`.
    pub fn parse(s: &str) -> Result<Version, String> {
        let c = version_re().captures(s).ok_or_else(|| "Invalid Semantic Version".to_string())?;
        let num = |i: usize| -> Result<u64, String> {
            match c.get(i) {
                Some(m) => {
                    m.as_str().parse().map_err(|e| format!("error parsing version segment: {e}"))
                }
                None => Ok(0),
            }
        };
        Ok(Version {
            major: num(1)?,
            minor: num(2)?,
            patch: num(3)?,
            pre: c.get(4).map(|m| m.as_str().to_string()).unwrap_or_default(),
            metadata: c.get(5).map(|m| m.as_str().to_string()).unwrap_or_default(),
            original: s.to_string(),
        })
    }

    /// Precedence comparison (metadata ignored).
    pub fn compare(&self, o: &Version) -> Ordering {
        self.major
            .cmp(&o.major)
            .then(self.minor.cmp(&o.minor))
            .then(self.patch.cmp(&o.patch))
            .then_with(|| compare_pre(&self.pre, &o.pre))
    }
}

impl std::fmt::Display for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)?;
        if !self.pre.is_empty() {
            write!(f, "-{}", self.pre)?;
        }
        if !self.metadata.is_empty() {
            write!(f, "+{}", self.metadata)?;
        }
        Ok(())
    }
}

fn compare_pre(a: &str, b: &str) -> Ordering {
    if a == b {
        return Ordering::Equal;
    }
    if a.is_empty() {
        return Ordering::Greater;
    }
    if b.is_empty() {
        return Ordering::Less;
    }
    let ap: Vec<&str> = a.split('.').collect();
    let bp: Vec<&str> = b.split('.').collect();
    for i in 0..ap.len().max(bp.len()) {
        let x = ap.get(i).copied().unwrap_or("");
        let y = bp.get(i).copied().unwrap_or("");
        let r = compare_pre_part(x, y);
        if r != Ordering::Equal {
            return r;
        }
    }
    Ordering::Equal
}

fn compare_pre_part(a: &str, b: &str) -> Ordering {
    if a == b {
        return Ordering::Equal;
    }
    if a.is_empty() {
        return if b.is_empty() { Ordering::Equal } else { Ordering::Less };
    }
    if b.is_empty() {
        return Ordering::Greater;
    }
    let an = a.parse::<u64>();
    let bn = b.parse::<u64>();
    match (an, bn) {
        (Ok(x), Ok(y)) => x.cmp(&y),
        (Ok(_), Err(_)) => Ordering::Less,
        (Err(_), Ok(_)) => Ordering::Greater,
        _ => a.cmp(b),
    }
}

#[derive(Debug, Clone)]
struct Constraint {
    op: String,
    con: Version,
    minor_dirty: bool,
    patch_dirty: bool,
    dirty: bool,
}

/// A constraint set (`||` of `,`-joined groups).
#[derive(Debug, Clone)]
pub struct Constraints {
    groups: Vec<(Vec<Constraint>, bool)>,
}

fn is_x(s: &str) -> bool {
    matches!(s, "x" | "X" | "*")
}

impl Constraints {
    /// Parses like `semver.NewConstraint`.
    pub fn parse(c: &str) -> Result<Constraints, String> {
        let mut c = c.to_string();
        // rewrite "a - b" ranges
        let caps: Vec<(String, String, String)> = range_re()
            .captures_iter(&c)
            .map(|m| (m[0].to_string(), m[1].to_string(), m[11].to_string()))
            .collect();
        for (whole, a, b) in caps {
            c = c.replacen(&whole, &format!(">= {a}, <= {b} "), 1);
        }
        let mut groups = Vec::new();
        for part in c.split("||") {
            if !valid_re().is_match(part) {
                return Err(format!("improper constraint: {part:?}"));
            }
            let found: Vec<String> =
                find_re().find_iter(part).map(|m| m.as_str().to_string()).collect();
            let found = if found.is_empty() { vec![part.to_string()] } else { found };
            let mut group = Vec::new();
            let mut has_pre = false;
            for s in found {
                let pc = parse_constraint(&s)?;
                if !pc.con.pre.is_empty() {
                    has_pre = true;
                }
                group.push(pc);
            }
            groups.push((group, has_pre));
        }
        Ok(Constraints { groups })
    }

    /// Whether `v` satisfies the constraints.
    pub fn check(&self, v: &Version) -> bool {
        self.groups.iter().any(|(g, has_pre)| g.iter().all(|c| check_one(c, v, *has_pre)))
    }
}

fn parse_constraint(s: &str) -> Result<Constraint, String> {
    if s.is_empty() {
        return Ok(Constraint {
            op: String::new(),
            con: Version::parse("0.0.0")?,
            minor_dirty: false,
            patch_dirty: false,
            dirty: true,
        });
    }
    let m = constraint_re().captures(s).ok_or_else(|| format!("improper constraint: {s:?}"))?;
    let op = m.get(1).map(|x| x.as_str()).unwrap_or("").to_string();
    let orig = m.get(2).map(|x| x.as_str()).unwrap_or("").to_string();
    let orig = orig.as_str();
    let g = |i: usize| m.get(i).map(|x| x.as_str()).unwrap_or("");
    let (m3, m4, m5, m6) = (g(3), g(4), g(5), g(6));
    let mut minor_dirty = false;
    let mut patch_dirty = false;
    let mut dirty = false;
    let ver = if is_x(m3) || m3.is_empty() {
        dirty = true;
        format!("0.0.0{m6}")
    } else if is_x(m4.trim_start_matches('.')) || m4.is_empty() {
        minor_dirty = true;
        dirty = true;
        format!("{m3}.0.0{m6}")
    } else if is_x(m5.trim_start_matches('.')) || m5.is_empty() {
        dirty = true;
        patch_dirty = true;
        format!("{m3}{m4}.0{m6}")
    } else {
        orig.to_string()
    };
    let con = Version::parse(&ver).map_err(|_| "constraint parser error".to_string())?;
    Ok(Constraint { op, con, minor_dirty, patch_dirty, dirty })
}

fn check_one(c: &Constraint, v: &Version, include_pre: bool) -> bool {
    if !v.pre.is_empty() && !include_pre {
        return false;
    }
    let cmp = v.compare(&c.con);
    match c.op.as_str() {
        "" | "=" => {
            if c.dirty {
                tilde(c, v)
            } else {
                cmp == Ordering::Equal
            }
        }
        "!=" => {
            if c.dirty {
                if c.con.major != v.major {
                    return true;
                }
                if c.con.minor != v.minor && !c.minor_dirty {
                    return true;
                } else if c.minor_dirty {
                    return false;
                } else if c.con.patch != v.patch && !c.patch_dirty {
                    return true;
                } else if c.patch_dirty {
                    if !v.pre.is_empty() || !c.con.pre.is_empty() {
                        return compare_pre(&v.pre, &c.con.pre) != Ordering::Equal;
                    }
                    return false;
                }
            }
            cmp != Ordering::Equal
        }
        ">" => {
            if !c.dirty {
                return cmp == Ordering::Greater;
            }
            if v.major > c.con.major {
                true
            } else if v.major < c.con.major || c.minor_dirty {
                false
            } else if c.patch_dirty {
                v.minor > c.con.minor
            } else {
                cmp == Ordering::Greater
            }
        }
        "<" => cmp == Ordering::Less,
        ">=" | "=>" => cmp != Ordering::Less,
        "<=" | "=<" => {
            if !c.dirty {
                return cmp != Ordering::Greater;
            }
            if v.major > c.con.major {
                false
            } else {
                !(v.major == c.con.major && v.minor > c.con.minor && !c.minor_dirty)
            }
        }
        "~" | "~>" => tilde(c, v),
        "^" => {
            if cmp == Ordering::Less {
                return false;
            }
            if c.con.major > 0 || c.minor_dirty {
                return v.major == c.con.major;
            }
            if c.con.major == 0 && v.major > 0 {
                return false;
            }
            if c.con.minor > 0 || c.patch_dirty {
                return v.minor == c.con.minor;
            }
            if c.con.minor == 0 && v.minor > 0 {
                return false;
            }
            c.con.patch == v.patch
        }
        _ => false,
    }
}

fn tilde(c: &Constraint, v: &Version) -> bool {
    if v.compare(&c.con) == Ordering::Less {
        return false;
    }
    if c.con.major == 0 && c.con.minor == 0 && c.con.patch == 0 && !c.minor_dirty && !c.patch_dirty
    {
        return true;
    }
    if v.major != c.con.major {
        return false;
    }
    if v.minor != c.con.minor && !c.minor_dirty {
        return false;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(c: &str, v: &str) -> bool {
        Constraints::parse(c).unwrap().check(&Version::parse(v).unwrap())
    }

    #[test]
    fn constraints() {
        assert!(ok(">=1.16-0", "v1.30.0"));
        assert!(ok(">=1.16-0, <1.19-0", "1.18.3"));
        assert!(!ok(">=1.16-0, <1.19-0", "1.19.0"));
        assert!(!ok(">=1.16", "1.30.0-gke.1"));
        assert!(ok(">=1.16-0", "1.30.0-gke.1"));
        assert!(ok("^1.2", "1.9.0"));
        assert!(ok("~1.2.3", "1.2.9"));
        assert!(!ok("~1.2.3", "1.3.0"));
        assert!(ok("1.2 - 1.4.5", "1.4.5"));
        assert!(ok("1.x || >=3", "3.1.0"));
        assert!(ok("*", "0.1.0"));
    }
}
