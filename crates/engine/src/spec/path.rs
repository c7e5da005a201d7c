//! Field paths inside the spec: `network.subnets.private.cidrs[1]`.

use std::fmt;

/// One step of a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Segment {
    Key(String),
    Index(usize),
}

/// A path from the document root to a value.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldPath(pub Vec<Segment>);

impl FieldPath {
    /// A path starting at the top-level key `key`.
    pub fn root(key: &str) -> Self {
        FieldPath(vec![Segment::Key(key.to_string())])
    }

    /// This path, one key deeper.
    pub fn key(&self, key: &str) -> Self {
        let mut p = self.clone();
        p.0.push(Segment::Key(key.to_string()));
        p
    }

    /// This path, one array index deeper.
    pub fn index(&self, index: usize) -> Self {
        let mut p = self.clone();
        p.0.push(Segment::Index(index));
        p
    }
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, seg) in self.0.iter().enumerate() {
            match seg {
                Segment::Key(k) => {
                    if i > 0 {
                        f.write_str(".")?;
                    }
                    if !k.is_empty()
                        && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
                    {
                        f.write_str(k)?;
                    } else {
                        write!(f, "\"{k}\"")?;
                    }
                }
                Segment::Index(n) => write!(f, "[{n}]")?,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn displays_like_a_toml_path() {
        let p = FieldPath::root("network").key("subnets").key("private").key("cidrs").index(1);
        assert_eq!(p.to_string(), "network.subnets.private.cidrs[1]");
        assert_eq!(
            FieldPath::root("globals").key("tags").key("kubernetes.io/x").to_string(),
            "globals.tags.\"kubernetes.io/x\""
        );
        assert_eq!(FieldPath::root("globals").key("tags").key("").to_string(), "globals.tags.\"\"");
    }
}
