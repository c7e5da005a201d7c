//! Tags: the desired set of a resource (globals, section, `Name`, ownership), and one way to
//! bring a resource's tags from what it has to what the spec wants, whatever the service.
//!
//! Each service implements [`TagApi`] once (EC2 by resource id, ELB, EKS, EventBridge and Logs
//! by ARN, IAM per resource type, ...); [`retag`] makes at most one untag and one tag call.

use async_trait::async_trait;
use engine::{Address, Attributes, KindError, Live, Tags, TypedKind, Update, Value};

/// AWS's limit on tags per resource.
pub const MAX_TAGS: usize = 50;
/// AWS's limits on tag key and value lengths.
pub const MAX_KEY_LEN: usize = 128;
pub const MAX_VALUE_LEN: usize = 256;
/// Tags the engine adds to every resource it owns (the four ownership tags and `Name`).
pub const ENGINE_TAGS: usize = 5;

/// The full desired tag set: common tags, then resource tags, then `Name`, then ownership.
pub fn desired(spec: &str, address: &Address, name: &str, layers: &[&Tags]) -> Value {
    let mut tags = Tags::new();
    for layer in layers {
        tags.extend(layer.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
    tags.insert("Name".to_string(), name.to_string());
    tags.extend(engine::ownership::tags(spec, address));
    Value::string_map(tags.iter())
}

/// A service's two tagging calls, for one kind of resource.
#[async_trait]
pub(crate) trait TagApi: Sync {
    /// Removes `keys` from the resource `id` (an id, a name or an ARN, as the service wants).
    async fn untag(&self, id: &str, keys: Vec<String>) -> Result<(), KindError>;
    /// Sets `tags` (new keys and new values) on the resource `id`.
    async fn tag(&self, id: &str, tags: Tags) -> Result<(), KindError>;
}

/// Brings the tags of resource `id` from `current` to `desired`: one untag call for the keys no
/// longer wanted, one tag call for the new and changed ones, each only when needed.
pub(crate) async fn retag(
    api: &impl TagApi,
    id: &str,
    current: &Tags,
    desired: &Tags,
) -> Result<(), KindError> {
    let removed: Vec<String> =
        current.keys().filter(|k| !desired.contains_key(*k)).cloned().collect();
    let changed: Tags = desired
        .iter()
        .filter(|(k, v)| current.get(*k) != Some(v))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if !removed.is_empty() {
        api.untag(id, removed).await?;
    }
    if !changed.is_empty() {
        api.tag(id, changed).await?;
    }
    Ok(())
}

/// The update of a kind whose only in-place field is its tags: re-tags the resource `id` (an id
/// or an ARN, as `api` wants) and answers its attributes with the desired tags.
pub(crate) async fn update_tags<K: TypedKind>(
    api: &impl TagApi,
    id: &str,
    update: Update<'_, K>,
) -> Result<Live<K::Attrs>, KindError> {
    let Update { current, desired, .. } = update;
    let none = Tags::new();
    let want = desired.tags().unwrap_or(&none);
    retag(api, id, current.attributes.tags().unwrap_or(&none), want).await?;
    let mut attributes = current.attributes.clone();
    if let Some(tags) = attributes.tags_mut() {
        tags.clone_from(want);
    }
    Ok(Live::new(&current.id, attributes))
}

/// Tags from a service's own tag pairs.
pub(crate) fn from_pairs<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Tags {
    pairs.into_iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[derive(Default)]
    struct Recorder(Mutex<Vec<String>>);

    #[async_trait]
    impl TagApi for Recorder {
        async fn untag(&self, id: &str, keys: Vec<String>) -> Result<(), KindError> {
            self.0.lock().unwrap().push(format!("untag {id} {keys:?}"));
            Ok(())
        }
        async fn tag(&self, id: &str, tags: Tags) -> Result<(), KindError> {
            self.0.lock().unwrap().push(format!("tag {id} {tags:?}"));
            Ok(())
        }
    }

    fn tags(pairs: &[(&str, &str)]) -> Tags {
        from_pairs(pairs.iter().copied())
    }

    #[tokio::test]
    async fn untags_what_goes_and_tags_what_is_new_or_changed() {
        let api = Recorder::default();
        let current = tags(&[("a", "1"), ("b", "2"), ("c", "3")]);
        let desired = tags(&[("a", "1"), ("b", "9"), ("d", "4")]);
        retag(&api, "vpc-1", &current, &desired).await.unwrap();
        assert_eq!(
            *api.0.lock().unwrap(),
            ["untag vpc-1 [\"c\"]", "tag vpc-1 {\"b\": \"9\", \"d\": \"4\"}"]
        );
        let api = Recorder::default();
        retag(&api, "vpc-1", &desired, &desired).await.unwrap();
        assert!(api.0.lock().unwrap().is_empty(), "no change, no call");
    }
}
