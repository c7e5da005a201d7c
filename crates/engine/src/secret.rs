//! `Secret`: a string that never prints.
//!
//! Tokens, recovery keys, passwords and private keys travel in this type. Its `Debug` and
//! `Display` print `(sensitive)`; it implements neither `Serialize` nor `Clone`-into-`String`, so
//! it cannot slip into attributes, state or logs by accident. Reading the value takes an explicit
//! [`Secret::expose`].

use std::fmt;

/// A sensitive string (token, key, password). Printing it shows `(sensitive)`.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a sensitive value.
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    /// The value itself. Call only where the value must go over the wire or to a secret store.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Whether the value is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("(sensitive)")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("(sensitive)")
    }
}

impl From<String> for Secret {
    fn from(value: String) -> Self {
        Secret(value)
    }
}

impl<'de> serde::Deserialize<'de> for Secret {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(Secret)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_prints_its_value() {
        let s = Secret::new("hvs.very-secret");
        assert_eq!(format!("{s}"), "(sensitive)");
        assert_eq!(format!("{s:?}"), "(sensitive)");
        assert_eq!(format!("{:?}", Some(&s)), "Some((sensitive))");
        assert_eq!(s.expose(), "hvs.very-secret");
    }
}
