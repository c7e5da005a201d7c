//! `aws_route53_zone`: a private hosted zone associated with the VPC.
//!
//! Route53 cannot tag a zone in the create call, so a zone whose tags never arrived (the run died
//! in between) is adopted by name if it is private, untagged and associated with the same VPC.
//! A refresh lists the account's zones once, reads the tags of the candidates ten at a time,
//! then each candidate.

use super::ZoneTags;
use crate::AwsClients;
use crate::error::{Listing, SdkResult, required};
use crate::lookup::{address_tag, match_requests, still_there};
use crate::tagging::{from_pairs, retag};
use aws_sdk_route53::types::{HostedZoneConfig, TagResourceType, Vpc, VpcRegion};
use engine::prelude::*;
use engine::retry::{read_back, settle};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

#[derive(Attributes, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct Zone {
    #[attr(replace)]
    pub name: String,
    #[attr(replace)]
    pub vpc_id: String,
    #[attr(replace)]
    pub vpc_region: String,
    #[attr(in_place)]
    #[serde(default)]
    pub comment: String,
    #[attr(in_place, tags)]
    pub tags: Tags,
    /// Public zones only: a private zone has none.
    #[attr(computed)]
    pub name_servers: Option<Vec<String>>,
}

pub(crate) struct ZoneKind(pub Arc<AwsClients>);

/// Zone ids come back as `/hostedzone/Z123`; the engine keeps `Z123`.
fn short_id(id: &str) -> &str {
    id.trim_start_matches("/hostedzone/")
}

/// The start of the caller reference of a zone this state's run creates at `address`: Route53
/// keeps it, so a zone whose tags never arrived is still known to be ours. At most 119
/// characters, leaving room for the per-call nonce within Route53's 128.
fn reference_prefix(lineage: &str, address: &str) -> String {
    format!("{lineage}/{address}/").chars().take(119).collect()
}

/// A zone whose tags never arrived: untagged, with the name and VPC the spec wants, made by
/// this state's run (its caller reference, from `references` by zone id, says so).
fn untagged(
    request: &ReadRequest<Zone>,
    found: &[Live<Zone>],
    references: &HashMap<String, String>,
    lineage: &str,
) -> Option<Live<Zone>> {
    let d = request.desired.as_ref()?;
    let prefix = reference_prefix(lineage, request.address.as_str());
    let ours = |z: &Live<Zone>| references.get(&z.id).is_some_and(|r| r.starts_with(&prefix));
    let same = |z: &Zone| z.name == d.name && z.vpc_id == d.vpc_id;
    found
        .iter()
        .find(|z| address_tag(&z.attributes).is_none() && same(&z.attributes) && ours(z))
        .cloned()
}

impl ZoneKind {
    /// One zone with the tags read for it (its VPC comes from GetHostedZone).
    async fn zone(&self, id: &str, tags: Tags) -> KindResult<Option<Live<Zone>>> {
        let call = self.0.route53.get_hosted_zone().id(id);
        let op = "route53:GetHostedZone";
        let Some(out) = call.send().await.or_absent(op, &["NoSuchHostedZone"])? else {
            return Ok(None);
        };
        let Some(zone) = out.hosted_zone() else { return Ok(None) };
        let vpc = out.vpcs().first();
        let zone = Zone {
            name: zone.name().trim_end_matches('.').to_string(),
            vpc_id: vpc.and_then(|v| v.vpc_id()).unwrap_or_default().to_string(),
            vpc_region: vpc.and_then(|v| v.vpc_region()).map_or("", |r| r.as_str()).to_string(),
            comment: zone.config().and_then(|c| c.comment()).unwrap_or_default().to_string(),
            tags,
            name_servers: out.delegation_set().map(|d| d.name_servers().to_vec()),
        };
        Ok(Some(Live::new(id, zone)))
    }

    /// The tags of `ids`, ten zones a call.
    async fn tags(&self, ids: &[String]) -> KindResult<BTreeMap<String, Tags>> {
        let mut out = BTreeMap::new();
        for chunk in ids.chunks(10) {
            let call = self.0.route53.list_tags_for_resources();
            let call = call.resource_type(TagResourceType::Hostedzone);
            let call = call.set_resource_ids(Some(chunk.to_vec()));
            for set in call.send().await.api("route53:ListTagsForResources")?.resource_tag_sets() {
                let Some(id) = set.resource_id() else { continue };
                let tags = set.tags().iter().map(|t| (t.key(), t.value()));
                let tags = tags.map(|(k, v)| (k.unwrap_or_default(), v.unwrap_or_default()));
                out.insert(short_id(id).to_string(), from_pairs(tags));
            }
        }
        Ok(out)
    }

    async fn read_one(&self, id: &str) -> KindResult<Option<Live<Zone>>> {
        let mut tags = self.tags(&[id.to_string()]).await?;
        self.zone(id, tags.remove(id).unwrap_or_default()).await
    }
}

impl TypedKind for ZoneKind {
    type Attrs = Zone;
    const NAME: &'static str = "aws_route53_zone";

    async fn read(&self, ctx: &Context, requests: &Requests<Self>) -> Found<Self> {
        let pages = self.0.route53.list_hosted_zones().into_paginator().items().send();
        let zones: Vec<_> = pages.all("route53:ListHostedZones").await?;
        let references: HashMap<String, String> = zones
            .iter()
            .map(|z| (short_id(z.id()).to_string(), z.caller_reference().to_string()))
            .collect();
        let names: Vec<&str> =
            requests.iter().filter_map(|r| r.desired.as_ref()).map(|d| d.name.as_str()).collect();
        let ids: Vec<&str> = requests.iter().filter_map(|r| r.id.as_deref()).collect();
        // Only private zones the requests could be about.
        let candidates: Vec<String> = zones
            .iter()
            .filter(|z| z.config().is_some_and(|c| c.private_zone()))
            .filter(|z| {
                ids.contains(&short_id(z.id())) || names.contains(&z.name().trim_end_matches('.'))
            })
            .map(|z| short_id(z.id()).to_string())
            .collect();
        let mut tags = self.tags(&candidates).await?;
        let mut found = Vec::new();
        for id in &candidates {
            found.extend(self.zone(id, tags.remove(id).unwrap_or_default()).await?);
        }
        let matched = match_requests(requests, &found);
        let untagged = |r| untagged(r, &found, &references, ctx.lineage());
        Ok(requests.iter().zip(matched).map(|(r, m)| m.or_else(|| untagged(r))).collect())
    }

    async fn create(&self, ctx: &Context, desired: &Self::Attrs) -> Outcome<Self> {
        let r53 = &self.0.route53;
        // Unique per call, as Route53 requires; at most 128 characters.
        let address = ctx.address().map(|a| a.to_string()).unwrap_or_default();
        let nonce = uuid::Uuid::new_v4().simple().to_string();
        let reference = format!("{}{}", reference_prefix(ctx.lineage(), &address), &nonce[..8]);
        let config = HostedZoneConfig::builder().comment(&desired.comment).private_zone(true);
        let region = VpcRegion::from(desired.vpc_region.as_str());
        let vpc = Vpc::builder().vpc_id(&desired.vpc_id).vpc_region(region).build();
        let call = r53.create_hosted_zone().name(&desired.name).caller_reference(reference);
        let call = call.hosted_zone_config(config.build()).vpc(vpc);
        let out = call.send().await.api("route53:CreateHostedZone")?;
        let id = required(out.hosted_zone().map(|z| z.id()), "route53:CreateHostedZone: Id")?;
        let (id, api, untagged) = (short_id(id), ZoneTags(r53), Tags::new());
        settle(|| retag(&api, id, &untagged, &desired.tags)).await?;
        read_back(&format!("zone {id}"), || self.read_one(id)).await
    }

    async fn update(&self, _: &Context, update: Update<'_, Self>) -> Outcome<Self> {
        let Update { current, desired, changes } = update;
        let (r53, id) = (&self.0.route53, current.id.as_str());
        if changes.comment {
            let call = r53.update_hosted_zone_comment().id(id).comment(&desired.comment);
            call.send().await.api("route53:UpdateHostedZoneComment")?;
        }
        if changes.tags {
            retag(&ZoneTags(r53), id, &current.attributes.tags, &desired.tags).await?;
        }
        still_there(&format!("zone {id}"), self.read_one(id).await?)
    }

    async fn delete(&self, _: &Context, current: &LiveOf<Self>) -> KindResult<()> {
        let call = self.0.route53.delete_hosted_zone().id(&current.id);
        call.send().await.or_gone("route53:DeleteHostedZone", &["NoSuchHostedZone"])
    }
}
