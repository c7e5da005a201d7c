//! Elastic Load Balancing calls shared by the load balancer, target group and listener kinds.

use crate::error::api_error;
use aws_sdk_elasticloadbalancingv2::types::Tag;
use engine::{Attrs, KindError};
use serde_json::Value as Json;
use std::collections::HashMap;

/// Tags of up to 20 resources per call, by ARN.
pub(crate) async fn tags(
    elb: &aws_sdk_elasticloadbalancingv2::Client,
    arns: &[String],
) -> Result<HashMap<String, Json>, KindError> {
    let mut out = HashMap::new();
    for chunk in arns.chunks(20) {
        let resp = elb
            .describe_tags()
            .set_resource_arns(Some(chunk.to_vec()))
            .send()
            .await
            .map_err(|e| api_error("elasticloadbalancing:DescribeTags", e))?;
        for d in resp.tag_descriptions() {
            let tags = crate::tags::to_json(
                d.tags()
                    .iter()
                    .map(|t| (t.key().unwrap_or_default(), t.value().unwrap_or_default())),
            );
            out.insert(d.resource_arn().unwrap_or_default().to_string(), tags);
        }
    }
    Ok(out)
}

/// The desired tags as ELB tags.
pub(crate) fn elb_tags(attrs: &Attrs) -> Vec<Tag> {
    crate::tags::from_attrs(attrs)
        .into_iter()
        .map(|(k, v)| Tag::builder().key(k).value(v).build())
        .collect()
}

/// Brings the tags of `arn` from `current` to `desired`.
pub(crate) async fn retag(
    elb: &aws_sdk_elasticloadbalancingv2::Client,
    arn: &str,
    current: &Attrs,
    desired: &Attrs,
) -> Result<(), KindError> {
    let have = crate::tags::from_attrs(current);
    let want = crate::tags::from_attrs(desired);
    let remove: Vec<String> = have
        .keys()
        .filter(|k| !want.contains_key(*k))
        .cloned()
        .collect();
    if !remove.is_empty() {
        elb.remove_tags()
            .resource_arns(arn)
            .set_tag_keys(Some(remove))
            .send()
            .await
            .map_err(|e| api_error("elasticloadbalancing:RemoveTags", e))?;
    }
    if want.iter().any(|(k, v)| have.get(k) != Some(v)) {
        elb.add_tags()
            .resource_arns(arn)
            .set_tags(Some(elb_tags(desired)))
            .send()
            .await
            .map_err(|e| api_error("elasticloadbalancing:AddTags", e))?;
    }
    Ok(())
}

/// A list attribute as strings.
pub(crate) fn strings(attrs: &Attrs, name: &str) -> Vec<String> {
    attrs
        .get(name)
        .and_then(Json::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Json::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// An integer attribute.
pub(crate) fn int(attrs: &Attrs, name: &str) -> Result<i32, KindError> {
    attrs
        .get(name)
        .and_then(Json::as_i64)
        .map(|n| n as i32)
        .ok_or_else(|| KindError::new(format!("attribute `{name}` is missing or not a number")))
}
