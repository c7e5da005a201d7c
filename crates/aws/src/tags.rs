//! Tags: the desired set of a resource (globals + section + ownership), what changes between two
//! sets and how an update applies it, and EC2 tag updates.

use crate::error::api_error;
use aws_sdk_ec2::types::{ResourceType, Tag, TagSpecification};
use engine::{Attrs, KindError};
use serde_json::Value as Json;
use std::collections::BTreeMap;
use std::future::Future;

/// The `tags` attribute of desired attributes as pairs.
pub fn from_attrs(attrs: &Attrs) -> BTreeMap<String, String> {
    attrs
        .get("tags")
        .and_then(Json::as_object)
        .map(|m| {
            m.iter().map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string())).collect()
        })
        .unwrap_or_default()
}

/// Tags as an attribute value.
pub fn to_json<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Json {
    Json::Object(
        pairs.into_iter().map(|(k, v)| (k.to_string(), Json::String(v.to_string()))).collect(),
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
        removed: have.keys().filter(|k| !want.contains_key(*k)).cloned().collect(),
        changed: want.into_iter().filter(|(k, v)| have.get(k) != Some(v)).collect(),
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
    to_json(tags.iter().map(|t| (t.key().unwrap_or_default(), t.value().unwrap_or_default())))
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
    let remove: Vec<Tag> =
        diff.removed.into_iter().map(|k| Tag::builder().key(k).build()).collect();
    let add: Vec<Tag> =
        diff.changed.into_iter().map(|(k, v)| Tag::builder().key(k).value(v).build()).collect();
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
    updated.attributes.insert("tags".into(), desired.get("tags").cloned().unwrap_or_default());
    Ok(updated)
}
