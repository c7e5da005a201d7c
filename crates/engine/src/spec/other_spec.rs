//! A spec field that holds text or a value of another spec of the same run, e.g. a role's
//! trusted subject that is the GCP lane's service account's unique id:
//!
//! ```toml
//! subjects = ["system:serviceaccount:kube-system:external-dns",
//!             { spec = "gcp", address = "gcp.openbao.service_account.node", attribute = "unique_id" }]
//! ```

use crate::{Address, Value};
use serde::Deserialize;

/// Text, or another spec's value ([`Value::reference_in`]).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum TextOrOtherSpec {
    Text(String),
    Other(OtherSpecValue),
}

/// A value of another spec of the run: its resource's attribute.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OtherSpecValue {
    /// The other spec's `[globals]` name (its file's name without `.toml` unless it sets one).
    pub spec: String,
    /// The resource's address in that spec, as its plans show it.
    pub address: String,
    /// Its attribute, e.g. `arn` or `unique_id`.
    pub attribute: String,
}

impl TextOrOtherSpec {
    /// The desired value: the text, or a reference across specs.
    pub fn value(&self) -> Value {
        match self {
            TextOrOtherSpec::Text(s) => Value::from(s.as_str()),
            TextOrOtherSpec::Other(o) => {
                Value::reference_in(&o.spec, &Address::new(o.address.as_str()), &o.attribute)
            }
        }
    }

    /// Blank text, or a reference with a blank part or one with spaces.
    pub fn is_blank(&self) -> bool {
        match self {
            TextOrOtherSpec::Text(s) => s.trim().is_empty(),
            TextOrOtherSpec::Other(o) => [&o.spec, &o.address, &o.attribute]
                .iter()
                .any(|x| x.trim().is_empty() || x.contains(char::is_whitespace)),
        }
    }

    /// The text, when it is text.
    pub fn text(&self) -> Option<&str> {
        match self {
            TextOrOtherSpec::Text(s) => Some(s),
            TextOrOtherSpec::Other(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize)]
    struct Holder {
        items: Vec<TextOrOtherSpec>,
    }

    #[test]
    fn text_or_another_specs_value() {
        let h: Holder = toml::from_str(
            r#"items = ["a", { spec = "gcp", address = "gcp.x.y", attribute = "unique_id" }, { spec = "", address = "a", attribute = "b" }]"#,
        )
        .unwrap();
        assert_eq!(h.items[0].value(), Value::from("a"));
        let Value::Ref(r) = h.items[1].value() else { panic!() };
        assert_eq!((r.spec.as_deref(), r.address.as_str()), (Some("gcp"), "gcp.x.y"));
        assert!(!h.items[1].is_blank() && h.items[2].is_blank());
        assert!(toml::from_str::<Holder>(r#"items = [{ spec = "gcp" }]"#).is_err());
    }
}
