//! Elastic Load Balancing kinds: the load balancer, its target groups and listeners; and the
//! calls they share.

mod listener;
mod load_balancer;
mod target_group;

pub(crate) fn kinds(
    shared: &std::sync::Arc<crate::AwsClients>,
) -> Vec<std::sync::Arc<dyn engine::Kind>> {
    vec![
        std::sync::Arc::new(load_balancer::Lb(shared.clone())),
        std::sync::Arc::new(target_group::LbTargetGroup(shared.clone())),
        std::sync::Arc::new(listener::LbListener(shared.clone())),
    ]
}

use crate::error::api_error;
use crate::lookup_json::{desired_str, match_by_id_or_name};
use aws_sdk_elasticloadbalancingv2::Client;
use aws_sdk_elasticloadbalancingv2::types::Tag;
use engine::{Attrs, KindError, Live, ReadRequest};
use serde_json::{Value as Json, json};
use std::collections::HashMap;

/// A load balancer, target group or listener as the ELB API describes it.
pub(crate) trait ElbResource {
    fn arn(&self) -> Option<&str>;
    /// The name the spec gives it (listeners have none).
    fn name(&self) -> Option<&str>;
    /// Its attributes, given its tags.
    fn to_live(&self, tags: Json) -> Live;
}

/// The batched read of load balancers or target groups, which the spec names: for each request,
/// the one of `all` with its recorded ARN, else the one with its name and address tag.
pub(crate) async fn read_named<T: ElbResource>(
    elb: &Client,
    all: &[T],
    requests: &[ReadRequest],
) -> Result<Vec<Option<Live>>, KindError> {
    let names: Vec<String> = requests.iter().filter_map(|r| desired_str(r, "name")).collect();
    let arns: Vec<String> = requests.iter().filter_map(|r| r.id.clone()).collect();
    let found = wanted(elb, all, &names, &arns).await?;
    Ok(match_by_id_or_name(requests, &found, "name"))
}

/// The one of `all` with this ARN, with its tags.
pub(crate) async fn by_arn<T: ElbResource>(
    elb: &Client,
    all: &[T],
    arn: &str,
) -> Result<Option<Live>, KindError> {
    Ok(wanted(elb, all, &[], &[arn.to_string()]).await?.into_iter().next())
}

/// Those of `all` whose name or ARN is asked for, with their tags.
async fn wanted<T: ElbResource>(
    elb: &Client,
    all: &[T],
    names: &[String],
    arns: &[String],
) -> Result<Vec<Live>, KindError> {
    let wanted: Vec<&T> = all
        .iter()
        .filter(|r| {
            r.name().is_some_and(|n| names.iter().any(|w| w == n))
                || r.arn().is_some_and(|a| arns.iter().any(|w| w == a))
        })
        .collect();
    with_tags(elb, &wanted).await
}

/// `resources` as live resources, with their tags (one tag call per 20).
pub(crate) async fn with_tags<T: ElbResource>(
    elb: &Client,
    resources: &[&T],
) -> Result<Vec<Live>, KindError> {
    let arns: Vec<String> = resources.iter().filter_map(|r| r.arn().map(str::to_string)).collect();
    let tags = tags(elb, &arns).await?;
    Ok(resources
        .iter()
        .map(|r| {
            let t = tags.get(r.arn().unwrap_or_default()).cloned().unwrap_or(json!({}));
            r.to_live(t)
        })
        .collect())
}

/// Tags of up to 20 resources per call, by ARN.
async fn tags(elb: &Client, arns: &[String]) -> Result<HashMap<String, Json>, KindError> {
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
    elb: &Client,
    arn: &str,
    current: &Attrs,
    desired: &Attrs,
) -> Result<(), KindError> {
    crate::tags::update(
        current,
        desired,
        |keys| async move {
            elb.remove_tags()
                .resource_arns(arn)
                .set_tag_keys(Some(keys))
                .send()
                .await
                .map(|_| ())
                .map_err(|e| api_error("elasticloadbalancing:RemoveTags", e))
        },
        || async move {
            elb.add_tags()
                .resource_arns(arn)
                .set_tags(Some(elb_tags(desired)))
                .send()
                .await
                .map(|_| ())
                .map_err(|e| api_error("elasticloadbalancing:AddTags", e))
        },
    )
    .await
}
