//! The field table of a kind: how each attribute changes, and how two values of it compare.

use serde_json::Value as Json;

/// How a change of a field is applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldUpdate {
    /// Changed on the existing resource.
    InPlace,
    /// The cloud cannot change it: the resource is replaced.
    Replace,
    /// Set by the cloud (ids, ARNs, status); never diffed, shown as "known after apply" on create.
    Computed,
    /// Tunes how the engine works on the resource (a timeout, whether to wait); never diffed.
    Setting,
}

/// Turns a value into the form two values are compared in (a JSON policy document parsed and
/// re-serialised, a CIDR in its canonical form, ...).
pub type Normalize = fn(&Json) -> Json;

/// A field of a kind that the planner diffs.
#[derive(Debug, Clone, Copy)]
pub struct Field {
    pub name: &'static str,
    pub update: FieldUpdate,
    /// A list whose order does not matter (compared sorted).
    pub unordered: bool,
    /// Never printed, never stored in clear: plans and state show a digest.
    pub sensitive: bool,
    /// Applied to both sides before comparing.
    pub normalize: Option<Normalize>,
}

impl Field {
    const fn of(name: &'static str, update: FieldUpdate) -> Field {
        Field { name, update, unordered: false, sensitive: false, normalize: None }
    }
    pub const fn in_place(name: &'static str) -> Field {
        Field::of(name, FieldUpdate::InPlace)
    }
    pub const fn replace(name: &'static str) -> Field {
        Field::of(name, FieldUpdate::Replace)
    }
    pub const fn computed(name: &'static str) -> Field {
        Field::of(name, FieldUpdate::Computed)
    }
    pub const fn setting(name: &'static str) -> Field {
        Field::of(name, FieldUpdate::Setting)
    }
    pub const fn unordered(mut self) -> Field {
        self.unordered = true;
        self
    }
    pub const fn sensitive(mut self) -> Field {
        self.sensitive = true;
        self
    }
    pub const fn normalized(mut self, normalize: Normalize) -> Field {
        self.normalize = Some(normalize);
        self
    }

    /// Whether the planner and drift compare this field.
    pub fn is_diffed(&self) -> bool {
        matches!(self.update, FieldUpdate::InPlace | FieldUpdate::Replace)
    }

    /// The value in the form it is compared in: normalised, sorted when order does not matter.
    pub fn canonical(&self, value: &Json) -> Json {
        let mut v = match self.normalize {
            Some(f) if !value.is_null() => f(value),
            _ => value.clone(),
        };
        if self.unordered
            && let Json::Array(items) = &mut v
        {
            items.sort_by_key(|i| i.to_string());
        }
        v
    }

    /// Whether two values of this field mean the same.
    pub fn same(&self, a: &Json, b: &Json) -> bool {
        a == b || self.canonical(a) == self.canonical(b)
    }

    /// The value as plans show it and state keeps it: a digest when the field is sensitive.
    pub fn shown(&self, value: &Json) -> Json {
        if self.sensitive { redact(&self.canonical(value)) } else { value.clone() }
    }

    /// Whether `recorded` (as state keeps it) matches `live` (as read).
    pub fn matches_recorded(&self, recorded: &Json, live: &Json) -> bool {
        if self.sensitive { *recorded == self.shown(live) } else { self.same(recorded, live) }
    }
}

/// The text that stands for a sensitive value: a short digest, so a change is still visible and
/// the value never is. `null` stays `null`.
pub fn redact(value: &Json) -> Json {
    use sha2::Digest;
    if value.is_null() {
        return Json::Null;
    }
    let digest = sha2::Sha256::digest(value.to_string().as_bytes());
    let hex: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
    Json::String(format!("(sensitive sha256:{hex})"))
}

/// Whether `text` is what [`redact`] makes.
pub fn is_redacted(value: &Json) -> bool {
    value.as_str().is_some_and(|s| s.starts_with("(sensitive sha256:"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn upper(v: &Json) -> Json {
        json!(v.as_str().unwrap_or_default().to_uppercase())
    }

    #[test]
    fn unordered_lists_compare_as_sets() {
        let f = Field::in_place("ids").unordered();
        assert!(f.same(&json!(["b", "a"]), &json!(["a", "b"])));
        assert!(!f.same(&json!(["a"]), &json!(["a", "b"])));
        assert!(!Field::in_place("ids").same(&json!(["b", "a"]), &json!(["a", "b"])));
    }

    #[test]
    fn normalisers_apply_to_both_sides() {
        let f = Field::in_place("name").normalized(upper);
        assert!(f.same(&json!("abc"), &json!("ABC")));
        assert!(!f.same(&json!("abc"), &json!("abd")));
        assert!(f.same(&Json::Null, &Json::Null));
    }

    #[test]
    fn sensitive_values_are_shown_as_a_digest() {
        let f = Field::in_place("password").sensitive();
        let shown = f.shown(&json!("hunter2"));
        assert!(is_redacted(&shown));
        assert!(!shown.to_string().contains("hunter2"));
        assert_eq!(shown, f.shown(&json!("hunter2")));
        assert_ne!(shown, f.shown(&json!("hunter3")));
        assert!(f.matches_recorded(&shown, &json!("hunter2")));
        assert!(!f.matches_recorded(&shown, &json!("hunter3")));
        assert_eq!(f.shown(&Json::Null), Json::Null);
        assert_eq!(Field::in_place("x").shown(&json!("y")), json!("y"));
    }
}
