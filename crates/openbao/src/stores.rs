//! What the OpenBao kinds need from outside OpenBao: a place to put the credentials they create
//! (root token, recovery keys, generated passwords), a place to read the secrets they import
//! (the intermediate CA bundle), and the newest raft snapshot to rehydrate from.
//!
//! The lane's wiring implements them (the AWS lane: Secrets Manager and the S3 snapshot bucket,
//! in `crates/lanes/src/bridges.rs`); tests use [`MemorySecrets`] and a snapshot held in memory.

use engine::Secret;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Mutex;

/// A failed hook call. Must not contain secret values.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct HookError(pub String);

/// Stores secrets the kinds create. `put` overwrites.
#[async_trait::async_trait]
pub trait SecretSink: Send + Sync {
    async fn put(&self, name: &str, value: &Secret) -> Result<(), HookError>;
}

/// Reads secrets the kinds import.
#[async_trait::async_trait]
pub trait SecretSource: Send + Sync {
    async fn get(&self, name: &str) -> Result<Option<Secret>, HookError>;
}

/// A secret in a store, or one text field of a JSON secret: written `name` or `name#field`, the
/// way the reference keeps some values (`openbao/cloud-native-ref/tokens/root#token`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretRef {
    pub name: String,
    pub field: Option<String>,
}

impl SecretRef {
    /// `name` or `name#field`.
    pub fn parse(text: &str) -> SecretRef {
        match text.rsplit_once('#') {
            Some((name, field)) if !name.is_empty() && !field.is_empty() => {
                SecretRef { name: name.into(), field: Some(field.into()) }
            }
            _ => SecretRef { name: text.into(), field: None },
        }
    }

    /// `set` (`NAME` or `NAME#field`) if given, else the whole secret `default_name`.
    pub fn chosen_or(set: Option<&str>, default_name: String) -> SecretRef {
        match set {
            Some(text) => SecretRef::parse(text),
            None => SecretRef { name: default_name, field: None },
        }
    }

    /// What is stored for `value`: the value itself, or a JSON object holding it in the field.
    pub fn stored(&self, value: &Secret) -> Secret {
        match &self.field {
            None => value.clone(),
            Some(field) => {
                let mut doc = serde_json::Map::new();
                doc.insert(field.clone(), serde_json::Value::from(value.expose()));
                Secret::new(serde_json::Value::Object(doc).to_string())
            }
        }
    }

    /// The value in `stored`: all of it, or its field. Errors name the secret and the field,
    /// never a value.
    pub fn value(&self, stored: Secret) -> Result<Secret, HookError> {
        let Some(field) = &self.field else {
            return Ok(stored);
        };
        let doc: serde_json::Value = serde_json::from_str(stored.expose())
            .map_err(|_| HookError(format!("`{}` is not a JSON object", self.name)))?;
        doc.get(field)
            .and_then(serde_json::Value::as_str)
            .map(Secret::new)
            .ok_or_else(|| HookError(format!("`{}` has no text field `{field}`", self.name)))
    }

    /// The value `source` holds, if the secret exists.
    pub async fn read<S: SecretSource + ?Sized>(
        &self,
        source: &S,
    ) -> Result<Option<Secret>, HookError> {
        match source.get(&self.name).await? {
            Some(stored) => self.value(stored).map(Some),
            None => Ok(None),
        }
    }
}

impl fmt::Display for SecretRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.field {
            Some(field) => write!(f, "{}#{field}", self.name),
            None => f.write_str(&self.name),
        }
    }
}

/// A raft snapshot.
pub struct Snapshot {
    /// Where it came from (e.g. the object key), for messages.
    pub name: String,
    pub data: Vec<u8>,
}

impl fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Snapshot")
            .field("name", &self.name)
            .field("bytes", &self.data.len())
            .finish()
    }
}

/// Where snapshots of a previous OpenBao of the same lineage are kept.
#[async_trait::async_trait]
pub trait SnapshotSource: Send + Sync {
    /// The newest snapshot, if there is one.
    async fn newest(&self) -> Result<Option<Snapshot>, HookError>;
}

/// Where a snapshot of the lineage is kept before a destroy (the snapshot bucket).
#[async_trait::async_trait]
pub trait SnapshotSink: Send + Sync {
    /// Keeps `data` as `name` under the lineage's snapshot prefix; where it went, for messages.
    async fn put(&self, name: &str, data: Vec<u8>) -> Result<String, HookError>;
}

/// No secret store: `put` fails, `get` finds nothing.
pub struct NoSecrets;

#[async_trait::async_trait]
impl SecretSink for NoSecrets {
    async fn put(&self, name: &str, _value: &Secret) -> Result<(), HookError> {
        Err(HookError(format!("no secret store is configured to keep `{name}`")))
    }
}

#[async_trait::async_trait]
impl SecretSource for NoSecrets {
    async fn get(&self, _name: &str) -> Result<Option<Secret>, HookError> {
        Ok(None)
    }
}

/// No snapshots: every init is a fresh one.
pub struct NoSnapshots;

#[async_trait::async_trait]
impl SnapshotSource for NoSnapshots {
    async fn newest(&self) -> Result<Option<Snapshot>, HookError> {
        Ok(None)
    }
}

/// An in-memory secret store (tests, dry runs).
#[derive(Default)]
pub struct MemorySecrets {
    values: Mutex<BTreeMap<String, Secret>>,
}

impl MemorySecrets {
    pub fn new() -> Self {
        Self::default()
    }

    /// The names stored so far.
    pub fn names(&self) -> Vec<String> {
        self.lock().keys().cloned().collect()
    }

    /// The value stored under `name`.
    pub fn value(&self, name: &str) -> Option<Secret> {
        self.lock().get(name).cloned()
    }

    /// Stores `value` under `name` directly.
    pub fn insert(&self, name: &str, value: Secret) {
        self.lock().insert(name.to_string(), value);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Secret>> {
        self.values.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl fmt::Debug for MemorySecrets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemorySecrets").field("names", &self.names()).finish()
    }
}

#[async_trait::async_trait]
impl SecretSink for MemorySecrets {
    async fn put(&self, name: &str, value: &Secret) -> Result<(), HookError> {
        self.insert(name, value.clone());
        Ok(())
    }
}

#[async_trait::async_trait]
impl SecretSource for MemorySecrets {
    async fn get(&self, name: &str) -> Result<Option<Secret>, HookError> {
        Ok(self.value(name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_ref_reads_and_writes_one_json_field_and_quotes_no_value() {
        let whole = SecretRef::parse("openbao/aws-0/root-token");
        assert_eq!(
            (whole.name.as_str(), whole.field.as_deref()),
            ("openbao/aws-0/root-token", None)
        );
        assert_eq!(whole.stored(&Secret::new("s.root")).expose(), "s.root");
        assert_eq!(whole.value(Secret::new("s.root")).unwrap().expose(), "s.root");

        let field = SecretRef::parse("openbao/cloud-native-ref/tokens/root#token");
        assert_eq!(field.to_string(), "openbao/cloud-native-ref/tokens/root#token");
        let stored = field.stored(&Secret::new("s.root"));
        assert_eq!(stored.expose(), r#"{"token":"s.root"}"#);
        assert_eq!(field.value(stored).unwrap().expose(), "s.root");
        let missing = field.value(Secret::new(r#"{"other":"s.secret"}"#)).unwrap_err();
        assert!(missing.0.contains("no text field `token`") && !missing.0.contains("s.secret"));
        let not_json = field.value(Secret::new("s.secret")).unwrap_err();
        assert!(!not_json.0.contains("s.secret"), "{}", not_json.0);
        assert_eq!(SecretRef::parse("#token").field, None, "a field needs a name before it");
    }

    #[tokio::test]
    async fn a_secret_ref_reads_through_a_store() {
        let store = MemorySecrets::new();
        store.put("tokens/root", &Secret::new(r#"{"token":"s.root"}"#)).await.unwrap();
        let read = SecretRef::parse("tokens/root#token").read(&store).await.unwrap();
        assert_eq!(read.unwrap().expose(), "s.root");
        assert!(SecretRef::parse("absent#token").read(&store).await.unwrap().is_none());
    }
}
