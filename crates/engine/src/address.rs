//! Resource addresses: `aws.network.subnet.private["eu-west-3a"]`.

use serde::{Deserialize, Serialize};
use std::fmt;

/// The stable name of a resource in a spec. The first two segments are the stage
/// (`aws.network`), used by `--target`/`--exclude`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Address(String);

impl Address {
    /// An address from its dotted form, e.g. `aws.network.vpc.main`.
    pub fn new(dotted: impl Into<String>) -> Self {
        Address(dotted.into())
    }

    /// This address with an index key appended: `a.b["key"]`.
    pub fn index(&self, key: &str) -> Self {
        Address(format!("{}[\"{}\"]", self.0, key))
    }

    /// The address as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether `prefix` selects this address: equal, or followed by `.` or `[`.
    pub fn matches_prefix(&self, prefix: &str) -> bool {
        let prefix = prefix.trim_end_matches('.');
        match self.0.strip_prefix(prefix) {
            Some(rest) => rest.is_empty() || rest.starts_with('.') || rest.starts_with('['),
            None => false,
        }
    }
}

impl fmt::Display for Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&str> for Address {
    fn from(s: &str) -> Self {
        Address::new(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_match_on_segment_boundaries() {
        let a = Address::new("aws.network.subnet.private").index("eu-west-3a");
        assert_eq!(a.as_str(), "aws.network.subnet.private[\"eu-west-3a\"]");
        assert!(a.matches_prefix("aws"));
        assert!(a.matches_prefix("aws.network"));
        assert!(a.matches_prefix("aws.network."));
        assert!(a.matches_prefix("aws.network.subnet.private"));
        assert!(a.matches_prefix(a.as_str()));
        assert!(!a.matches_prefix("aws.net"));
        assert!(!a.matches_prefix("aws.network.subnet.priv"));
        assert!(!a.matches_prefix("aws.openbao"));
    }
}
