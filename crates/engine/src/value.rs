//! Desired attribute values, which may reference other resources' attributes.

use crate::Address;
use serde_json::Value as Json;
use std::collections::BTreeMap;

/// Attributes with known values, as sent to and read from a cloud.
pub type Attrs = serde_json::Map<String, Json>;

/// A resource's tags (or labels): key to value, in key order.
pub type Tags = BTreeMap<String, String>;

/// A reference to an attribute of another resource, resolved at apply time.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Reference {
    /// Another spec of the same run (its `[globals]` name), or `None` for this spec. A
    /// reference across specs is no edge of this spec's graph: the run's
    /// [`crate::Workspace`] resolves it and orders the step after the other spec's
    /// ([`crate::cross_spec`]).
    pub spec: Option<String>,
    pub address: Address,
    pub attribute: String,
}

impl std::fmt::Display for Reference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.spec {
            Some(spec) => write!(f, "{spec}'s {}.{}", self.address, self.attribute),
            None => write!(f, "{}.{}", self.address, self.attribute),
        }
    }
}

/// A desired attribute value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Int(i64),
    Str(String),
    List(Vec<Value>),
    Map(BTreeMap<String, Value>),
    /// A literal JSON document (e.g. an IAM policy).
    Json(Json),
    /// Another resource's attribute, e.g. the VPC's `id`.
    Ref(Reference),
}

impl Value {
    /// A reference to `attribute` of the resource at `address`.
    pub fn reference(address: &Address, attribute: &str) -> Value {
        Value::Ref(Reference {
            spec: None,
            address: address.clone(),
            attribute: attribute.to_string(),
        })
    }

    /// A reference to `attribute` of the resource at `address` of another spec of the run,
    /// named by its `[globals]` name (e.g. the GCP lane's service account, from the shared spec).
    pub fn reference_in(spec: &str, address: &Address, attribute: &str) -> Value {
        Value::Ref(Reference {
            spec: Some(spec.to_string()),
            address: address.clone(),
            attribute: attribute.to_string(),
        })
    }

    /// A map of strings, e.g. tags.
    pub fn string_map<'a>(entries: impl IntoIterator<Item = (&'a String, &'a String)>) -> Value {
        Value::Map(entries.into_iter().map(|(k, v)| (k.clone(), Value::Str(v.clone()))).collect())
    }

    /// Every reference inside this value.
    pub fn references(&self) -> Vec<&Reference> {
        let mut out = Vec::new();
        self.collect_refs(&mut out);
        out
    }

    fn collect_refs<'a>(&'a self, out: &mut Vec<&'a Reference>) {
        match self {
            Value::Ref(r) => out.push(r),
            Value::List(items) => items.iter().for_each(|v| v.collect_refs(out)),
            Value::Map(map) => map.values().for_each(|v| v.collect_refs(out)),
            _ => {}
        }
    }

    /// Resolves references through `lookup`; `None` when any part is not known yet
    /// ("known after apply").
    pub fn resolve(&self, lookup: &dyn Fn(&Reference) -> Option<Json>) -> Option<Json> {
        Some(match self {
            Value::Null => Json::Null,
            Value::Bool(b) => Json::Bool(*b),
            Value::Int(i) => Json::from(*i),
            Value::Str(s) => Json::String(s.clone()),
            Value::List(items) => {
                Json::Array(items.iter().map(|v| v.resolve(lookup)).collect::<Option<Vec<_>>>()?)
            }
            Value::Map(map) => Json::Object(
                map.iter()
                    .map(|(k, v)| v.resolve(lookup).map(|v| (k.clone(), v)))
                    .collect::<Option<Attrs>>()?,
            ),
            Value::Json(j) => j.clone(),
            Value::Ref(r) => lookup(r)?,
        })
    }
}

impl From<&str> for Value {
    fn from(s: &str) -> Self {
        Value::Str(s.to_string())
    }
}

impl From<String> for Value {
    fn from(s: String) -> Self {
        Value::Str(s)
    }
}

impl From<bool> for Value {
    fn from(b: bool) -> Self {
        Value::Bool(b)
    }
}

impl From<i64> for Value {
    fn from(i: i64) -> Self {
        Value::Int(i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn resolves_nested_references_or_reports_unknown() {
        let vpc = Address::new("aws.network.vpc.main");
        let v = Value::List(vec![Value::from("a"), Value::reference(&vpc, "id")]);
        assert_eq!(v.references().len(), 1);
        let known = v.resolve(&|r| (r.attribute == "id").then(|| json!("vpc-1")));
        assert_eq!(known, Some(json!(["a", "vpc-1"])));
        assert_eq!(v.resolve(&|_| None), None);
    }
}
