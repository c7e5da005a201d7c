//! Elastic Load Balancing kinds: the load balancer, its target groups and listeners; and the
//! calls they share: reading them with their tags (one `DescribeTags` per 20), tagging by ARN.

pub(crate) mod listener;
pub(crate) mod load_balancer;
pub(crate) mod target_group;

use crate::error::{SdkResult, required};
use crate::lookup::match_by_id_or_name;
use crate::tagging::{TagApi, from_pairs};
use async_trait::async_trait;
use aws_sdk_elasticloadbalancingv2::Client;
use aws_sdk_elasticloadbalancingv2::types::Tag;
use engine::{Attributes, KindResult, Live, ReadRequest, ReadResult, Tags};
use std::collections::HashMap;

/// A load balancer, target group or listener as the ELB API describes it.
pub(crate) trait Described {
    type Attrs: Attributes;
    /// Where its ARN comes from, named when the answer lacks it.
    const ARN: &'static str;
    fn arn(&self) -> Option<&str>;
    /// The name the spec gives it (listeners have none).
    fn name(&self) -> Option<&str> {
        None
    }
    /// Its attributes, given its tags.
    fn attributes(&self, tags: Tags) -> Self::Attrs;
}

/// The batched read of load balancers or target groups, which the spec names (`name`): for each
/// request, the one of `all` with its recorded ARN, else the one with its name and address tag.
pub(crate) async fn read_named<T: Described>(
    elb: &Client,
    all: &[T],
    requests: &[ReadRequest<T::Attrs>],
    name: impl Fn(&T::Attrs) -> &str,
) -> ReadResult<T::Attrs> {
    let names: Vec<&str> = requests.iter().filter_map(|r| r.desired.as_ref().map(&name)).collect();
    let arns: Vec<&str> = requests.iter().filter_map(|r| r.id.as_deref()).collect();
    let wanted: Vec<&T> = all
        .iter()
        .filter(|r| {
            r.name().is_some_and(|n| names.contains(&n))
                || r.arn().is_some_and(|a| arns.contains(&a))
        })
        .collect();
    let found = with_tags(elb, &wanted).await?;
    Ok(match_by_id_or_name(requests, &found, name))
}

/// The one of `all` with this ARN, with its tags.
pub(crate) async fn by_arn<T: Described>(
    elb: &Client,
    all: &[T],
    arn: &str,
) -> KindResult<Option<Live<T::Attrs>>> {
    let one: Vec<&T> = all.iter().filter(|r| r.arn() == Some(arn)).collect();
    Ok(with_tags(elb, &one).await?.pop())
}

/// `described` as live resources, with their tags.
pub(crate) async fn with_tags<T: Described>(
    elb: &Client,
    described: &[&T],
) -> KindResult<Vec<Live<T::Attrs>>> {
    let arns = described.iter().map(|r| required(r.arn(), T::ARN).map(str::to_string));
    let arns: Vec<String> = arns.collect::<KindResult<_>>()?;
    let mut tags = tags(elb, &arns).await?;
    let live = described
        .iter()
        .zip(arns)
        .map(|(r, arn)| Live::new(&arn, r.attributes(tags.remove(&arn).unwrap_or_default())));
    Ok(live.collect())
}

/// Tags of up to 20 resources per call, by ARN.
pub(crate) async fn tags(elb: &Client, arns: &[String]) -> KindResult<HashMap<String, Tags>> {
    let mut out = HashMap::new();
    for chunk in arns.chunks(20) {
        let call = elb.describe_tags().set_resource_arns(Some(chunk.to_vec()));
        let resp = call.send().await.api("elasticloadbalancing:DescribeTags")?;
        for d in resp.tag_descriptions() {
            let pairs = d
                .tags()
                .iter()
                .map(|t| (t.key().unwrap_or_default(), t.value().unwrap_or_default()));
            out.insert(d.resource_arn().unwrap_or_default().to_string(), from_pairs(pairs));
        }
    }
    Ok(out)
}

/// Tags as ELB tags.
pub(crate) fn elb_tags(tags: &Tags) -> Vec<Tag> {
    tags.iter().map(|(k, v)| Tag::builder().key(k).value(v).build()).collect()
}

/// ELB's tagging calls (by ARN).
pub(crate) struct ElbTags<'a>(pub &'a Client);

#[async_trait]
impl TagApi for ElbTags<'_> {
    async fn untag(&self, arn: &str, keys: Vec<String>) -> KindResult<()> {
        let call = self.0.remove_tags().resource_arns(arn).set_tag_keys(Some(keys));
        call.send().await.api("elasticloadbalancing:RemoveTags").map(|_| ())
    }

    async fn tag(&self, arn: &str, tags: Tags) -> KindResult<()> {
        let call = self.0.add_tags().resource_arns(arn).set_tags(Some(elb_tags(&tags)));
        call.send().await.api("elasticloadbalancing:AddTags").map(|_| ())
    }
}
