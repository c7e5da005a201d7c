//! Tags: the desired set of a resource (globals + section + ownership), and EC2 tag updates.

use crate::error::api_error;
use aws_sdk_ec2::types::{ResourceType, Tag, TagSpecification};
use engine::{Address, Attrs, KindError, MANAGED_BY, TAG_ADDRESS, TAG_MANAGED_BY, TAG_SPEC, Value};
use serde_json::Value as Json;
use std::collections::BTreeMap;

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
    let have = from_attrs(current);
    let want = from_attrs(desired);
    let remove: Vec<Tag> = have
        .keys()
        .filter(|k| !want.contains_key(*k))
        .map(|k| Tag::builder().key(k).build())
        .collect();
    let add: Vec<Tag> = want
        .iter()
        .filter(|(k, v)| have.get(*k) != Some(v))
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
