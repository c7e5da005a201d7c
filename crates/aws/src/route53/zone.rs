//! `aws_route53_zone`: a private hosted zone associated with the VPC.
//!
//! Route53 cannot tag a zone in the create call, so a zone whose tags never arrived (the run died
//! in between) is adopted by name if it is private, untagged and associated with the same VPC.

use crate::AwsClients;
use crate::error::{api_error, deleted, has_code};
use crate::lookup_json::{address_tag, live, str_attr};
use crate::settle::settle;
use async_trait::async_trait;
use aws_sdk_route53::types::{HostedZoneConfig, Tag, TagResourceType, Vpc, VpcRegion};
use engine::{Address, Attrs, Context, Field, Kind, KindError, Live, ReadRequest};
use serde_json::{Value as Json, json};
use std::sync::Arc;

pub(crate) struct Route53Zone(pub Arc<AwsClients>);

const FIELDS: &[Field] = &[
    Field::replace("name"),
    Field::replace("vpc_id"),
    Field::replace("vpc_region"),
    Field::in_place("comment"),
    Field::in_place("tags"),
    Field::computed("id"),
    Field::computed("name_servers"),
];

/// Zone ids come back as `/hostedzone/Z123`; the engine keeps `Z123`.
fn short_id(id: &str) -> &str {
    id.trim_start_matches("/hostedzone/")
}

impl Route53Zone {
    /// Full attributes of one zone (its VPC comes from GetHostedZone).
    async fn zone(&self, id: &str, tags: Json) -> Result<Option<Live>, KindError> {
        let r53 = &self.0.route53;
        let out = match r53.get_hosted_zone().id(id).send().await {
            Ok(out) => out,
            Err(e) if has_code(&e, "NoSuchHostedZone") => return Ok(None),
            Err(e) => return Err(api_error("route53:GetHostedZone", e)),
        };
        let Some(zone) = out.hosted_zone() else {
            return Ok(None);
        };
        let vpc = out.vpcs().first();
        Ok(Some(live(
            short_id(zone.id()),
            [
                ("name", json!(zone.name().trim_end_matches('.'))),
                ("vpc_id", json!(vpc.and_then(|v| v.vpc_id()).unwrap_or_default())),
                (
                    "vpc_region",
                    json!(vpc.and_then(|v| v.vpc_region()).map(|r| r.as_str()).unwrap_or_default()),
                ),
                ("comment", json!(zone.config().and_then(|c| c.comment()).unwrap_or_default())),
                ("tags", tags),
            ],
        )))
    }

    /// Tags of up to 10 zones per call.
    async fn tags(&self, ids: &[String]) -> Result<Vec<(String, Json)>, KindError> {
        let r53 = &self.0.route53;
        let mut out = Vec::new();
        for chunk in ids.chunks(10) {
            let resp = r53
                .list_tags_for_resources()
                .resource_type(TagResourceType::Hostedzone)
                .set_resource_ids(Some(chunk.to_vec()))
                .send()
                .await
                .map_err(|e| api_error("route53:ListTagsForResources", e))?;
            for set in resp.resource_tag_sets() {
                let tags = crate::tags::to_json(
                    set.tags()
                        .iter()
                        .map(|t| (t.key().unwrap_or_default(), t.value().unwrap_or_default())),
                );
                out.push((set.resource_id().map(short_id).unwrap_or_default().to_string(), tags));
            }
        }
        Ok(out)
    }

    async fn set_tags(&self, id: &str, current: &Attrs, desired: &Attrs) -> Result<(), KindError> {
        let r53 = &self.0.route53;
        let diff = crate::tags::diff(current, desired);
        let add: Vec<Tag> =
            diff.changed.into_iter().map(|(k, v)| Tag::builder().key(k).value(v).build()).collect();
        let remove = diff.removed;
        if add.is_empty() && remove.is_empty() {
            return Ok(());
        }
        r53.change_tags_for_resource()
            .resource_type(TagResourceType::Hostedzone)
            .resource_id(id)
            .set_add_tags((!add.is_empty()).then_some(add))
            .set_remove_tag_keys((!remove.is_empty()).then_some(remove))
            .send()
            .await
            .map_err(|e| api_error("route53:ChangeTagsForResource", e))?;
        Ok(())
    }
}

#[async_trait]
impl Kind for Route53Zone {
    fn name(&self) -> &'static str {
        "aws_route53_zone"
    }

    fn fields(&self) -> &'static [Field] {
        FIELDS
    }

    async fn read(
        &self,
        _ctx: &Context,
        requests: &[ReadRequest],
    ) -> Result<Vec<Option<Live>>, KindError> {
        let r53 = &self.0.route53;
        let zones: Vec<_> = r53
            .list_hosted_zones()
            .into_paginator()
            .items()
            .send()
            .collect::<Result<_, _>>()
            .await
            .map_err(|e| api_error("route53:ListHostedZones", e))?;
        let names: Vec<String> = requests
            .iter()
            .filter_map(|r| r.desired.as_ref()?.get("name")?.as_str().map(str::to_string))
            .collect();
        let ids: Vec<String> = requests.iter().filter_map(|r| r.id.clone()).collect();
        // Only private zones the requests could be about.
        let candidates: Vec<String> = zones
            .iter()
            .filter(|z| z.config().is_some_and(|c| c.private_zone()))
            .filter(|z| {
                ids.iter().any(|i| i == short_id(z.id()))
                    || names.iter().any(|n| n == z.name().trim_end_matches('.'))
            })
            .map(|z| short_id(z.id()).to_string())
            .collect();
        let tags = if candidates.is_empty() { vec![] } else { self.tags(&candidates).await? };
        let mut found = Vec::new();
        for id in &candidates {
            let t = tags.iter().find(|(i, _)| i == id).map(|(_, t)| t.clone()).unwrap_or(json!({}));
            if let Some(z) = self.zone(id, t).await? {
                found.push(z);
            }
        }
        Ok(requests
            .iter()
            .map(|r| {
                r.id.as_ref()
                    .and_then(|id| found.iter().find(|z| &z.id == id))
                    .or_else(|| found.iter().find(|z| address_tag(z) == Some(r.address.as_str())))
                    .or_else(|| {
                        let d = r.desired.as_ref()?;
                        found.iter().find(|z| {
                            address_tag(z).is_none()
                                && z.attributes.get("name") == d.get("name")
                                && z.attributes.get("vpc_id") == d.get("vpc_id")
                        })
                    })
                    .cloned()
            })
            .collect())
    }

    async fn create(
        &self,
        _ctx: &Context,
        address: &Address,
        desired: &Attrs,
    ) -> Result<Live, KindError> {
        let r53 = &self.0.route53;
        // Unique per call, as Route53 requires; at most 128 characters.
        let caller_reference: String =
            format!("{}/{address}", uuid::Uuid::new_v4()).chars().take(128).collect();
        let out = r53
            .create_hosted_zone()
            .name(str_attr(desired, "name")?)
            .caller_reference(caller_reference)
            .hosted_zone_config(
                HostedZoneConfig::builder()
                    .comment(desired.get("comment").and_then(Json::as_str).unwrap_or_default())
                    .private_zone(true)
                    .build(),
            )
            .vpc(
                Vpc::builder()
                    .vpc_id(str_attr(desired, "vpc_id")?)
                    .vpc_region(VpcRegion::from(str_attr(desired, "vpc_region")?))
                    .build(),
            )
            .send()
            .await
            .map_err(|e| api_error("route53:CreateHostedZone", e))?;
        let id = out
            .hosted_zone()
            .map(|z| short_id(z.id()).to_string())
            .ok_or_else(|| KindError::new("CreateHostedZone returned no zone"))?;
        let untagged = Attrs::new();
        settle(|| self.set_tags(&id, &untagged, desired)).await?;
        settle(|| async {
            self.zone(&id, desired.get("tags").cloned().unwrap_or(json!({})))
                .await?
                .ok_or_else(|| KindError::retryable(format!("zone {id} not visible yet")))
        })
        .await
    }

    async fn update(
        &self,
        _ctx: &Context,
        _address: &Address,
        current: &Live,
        desired: &Attrs,
    ) -> Result<Live, KindError> {
        let r53 = &self.0.route53;
        if current.attributes.get("comment") != desired.get("comment") {
            r53.update_hosted_zone_comment()
                .id(&current.id)
                .comment(desired.get("comment").and_then(Json::as_str).unwrap_or_default())
                .send()
                .await
                .map_err(|e| api_error("route53:UpdateHostedZoneComment", e))?;
        }
        self.set_tags(&current.id, &current.attributes, desired).await?;
        let mut l = current.clone();
        for k in ["comment", "tags"] {
            if let Some(v) = desired.get(k) {
                l.attributes.insert(k.into(), v.clone());
            }
        }
        Ok(l)
    }

    async fn delete(
        &self,
        _ctx: &Context,
        _address: &Address,
        current: &Live,
    ) -> Result<(), KindError> {
        let r53 = &self.0.route53;
        deleted(
            "route53:DeleteHostedZone",
            r53.delete_hosted_zone().id(&current.id).send().await,
            &["NoSuchHostedZone"],
        )
    }
}
