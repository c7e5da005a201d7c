//! Tags: the desired set of a resource (globals + section + ownership), what changes between two
//! sets and how an update applies it, IAM tags, and EC2 tag updates.

use crate::error::api_error;
use aws_sdk_ec2::types::{ResourceType, Tag, TagSpecification};
use engine::{Address, Attrs, KindError, MANAGED_BY, TAG_ADDRESS, TAG_MANAGED_BY, TAG_SPEC, Value};
use serde_json::Value as Json;
use std::collections::BTreeMap;
use std::future::Future;

/// AWS's limit on tags per resource.
pub const MAX_TAGS: usize = 50;
/// AWS's limits on tag key and value lengths.
pub const MAX_KEY_LEN: usize = 128;
pub const MAX_VALUE_LEN: usize = 256;
/// Tags the engine adds to every resource it owns (the three ownership tags and `Name`).
pub const ENGINE_TAGS: usize = 4;

/// The ownership tags of `address` in `spec`.
pub fn ownership(spec: &str, address: &Address) -> BTreeMap<String, String> {
    BTreeMap::from([
        (TAG_MANAGED_BY.to_string(), MANAGED_BY.to_string()),
        (TAG_SPEC.to_string(), spec.to_string()),
        (TAG_ADDRESS.to_string(), address.to_string()),
    ])
}

/// The full desired tag set: common tags, then resource tags, then `Name`, then ownership.
pub fn desired(
    spec: &str,
    address: &Address,
    name: &str,
    layers: &[&BTreeMap<String, String>],
) -> Value {
    let mut tags = BTreeMap::new();
    for layer in layers {
        tags.extend(layer.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
    tags.insert("Name".to_string(), name.to_string());
    tags.extend(ownership(spec, address));
    Value::string_map(tags.iter())
}

/// The `tags` attribute of desired attributes as pairs.
pub fn from_attrs(attrs: &Attrs) -> BTreeMap<String, String> {
    attrs
        .get("tags")
        .and_then(Json::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                .collect()
        })
        .unwrap_or_default()
}

/// Tags as an attribute value.
pub fn to_json<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Json {
    Json::Object(
        pairs
            .into_iter()
            .map(|(k, v)| (k.to_string(), Json::String(v.to_string())))
            .collect(),
    )
}

/// The desired tags in a service's own tag type, `make` building one from a key and a value.
pub fn build<T, E: std::fmt::Display>(
    attrs: &Attrs,
    make: impl Fn(String, String) -> Result<T, E>,
) -> Result<Vec<T>, KindError> {
    from_attrs(attrs)
        .into_iter()
        .map(|(k, v)| make(k, v).map_err(|e| KindError::new(e.to_string())))
        .collect()
}

/// The desired tags as IAM tags (roles and instance profiles).
pub fn iam(attrs: &Attrs) -> Result<Vec<aws_sdk_iam::types::Tag>, KindError> {
    build(attrs, |k, v| {
        aws_sdk_iam::types::Tag::builder().key(k).value(v).build()
    })
}

/// What changes between the tags of `current` and `desired` attributes.
pub struct TagDiff {
    /// Keys that are no longer wanted.
    pub removed: Vec<String>,
    /// Wanted tags that are new or have another value.
    pub changed: BTreeMap<String, String>,
}

/// The tags to remove and to set to go from `current` to `desired`.
pub fn diff(current: &Attrs, desired: &Attrs) -> TagDiff {
    let have = from_attrs(current);
    let want = from_attrs(desired);
    TagDiff {
        removed: have
            .keys()
            .filter(|k| !want.contains_key(*k))
            .cloned()
            .collect(),
        changed: want
            .into_iter()
            .filter(|(k, v)| have.get(k) != Some(v))
            .collect(),
    }
}

/// Brings a resource's tags from `current` to `desired` with its service's two calls: `untag`
/// the keys no longer wanted, then, if any tag is new or changed, `tag` with the whole desired
/// set. Each call is made only when needed.
pub async fn update<U, UFut, T, TFut>(
    current: &Attrs,
    desired: &Attrs,
    untag: U,
    tag: T,
) -> Result<(), KindError>
where
    U: FnOnce(Vec<String>) -> UFut,
    UFut: Future<Output = Result<(), KindError>>,
    T: FnOnce() -> TFut,
    TFut: Future<Output = Result<(), KindError>>,
{
    let diff = diff(current, desired);
    if !diff.removed.is_empty() {
        untag(diff.removed).await?;
    }
    if !diff.changed.is_empty() {
        tag().await?;
    }
    Ok(())
}

/// EC2 tags as an attribute value.
pub fn ec2_to_json(tags: &[Tag]) -> Json {
    to_json(
        tags.iter()
            .map(|t| (t.key().unwrap_or_default(), t.value().unwrap_or_default())),
    )
}

/// A TagSpecification for a create call, so the resource is owned from its first moment.
pub fn ec2_spec(resource: ResourceType, attrs: &Attrs) -> TagSpecification {
    TagSpecification::builder()
        .resource_type(resource)
        .set_tags(Some(
            from_attrs(attrs)
                .into_iter()
                .map(|(k, v)| Tag::builder().key(k).value(v).build())
                .collect(),
        ))
        .build()
}

/// Brings the tags of EC2 resource `id` from `current` to `desired`.
pub async fn ec2_update(
    ec2: &aws_sdk_ec2::Client,
    id: &str,
    current: &Attrs,
    desired: &Attrs,
) -> Result<(), KindError> {
    let diff = diff(current, desired);
    let remove: Vec<Tag> = diff
        .removed
        .into_iter()
        .map(|k| Tag::builder().key(k).build())
        .collect();
    let add: Vec<Tag> = diff
        .changed
        .into_iter()
        .map(|(k, v)| Tag::builder().key(k).value(v).build())
        .collect();
    if !remove.is_empty() {
        ec2.delete_tags()
            .resources(id)
            .set_tags(Some(remove))
            .send()
            .await
            .map_err(|e| api_error("ec2:DeleteTags", e))?;
    }
    if !add.is_empty() {
        ec2.create_tags()
            .resources(id)
            .set_tags(Some(add))
            .send()
            .await
            .map_err(|e| api_error("ec2:CreateTags", e))?;
    }
    Ok(())
}

/// Updates the tags of an EC2 resource whose tags are its only in-place field, and returns it
/// as it now is.
pub async fn ec2_retag(
    ec2: &aws_sdk_ec2::Client,
    current: &engine::Live,
    desired: &Attrs,
) -> Result<engine::Live, KindError> {
    ec2_update(ec2, &current.id, &current.attributes, desired).await?;
    let mut updated = current.clone();
    updated.attributes.insert(
        "tags".into(),
        desired.get("tags").cloned().unwrap_or_default(),
    );
    Ok(updated)
}
