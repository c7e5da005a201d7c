//! `aws_route53_record`: an alias record (to the load balancer) in a hosted zone. Records have
//! no tags: one is ours when recorded in state or when it already has the value the spec wants.
//! Creating uses `CREATE`, so a record someone else made is never overwritten.

use crate::AwsClients;
use crate::error::{api_error, has_code};
use crate::lookup_json::{live, ours_by_value, read_each, still_there, str_attr};
use crate::settle::read_back;
use async_trait::async_trait;
use aws_sdk_route53::types::{
    AliasTarget, Change, ChangeAction, ChangeBatch, ResourceRecordSet, RrType,
};
use engine::{Address, Attrs, Context, Field, Kind, KindError, Live, ReadRequest};
use serde_json::{Value as Json, json};
use std::sync::Arc;

pub(crate) struct Route53Record(pub Arc<AwsClients>);

const FIELDS: &[Field] = &[
    Field::replace("zone_id"),
    Field::replace("name"),
    Field::replace("type"),
    Field::in_place("alias"),
    Field::computed("id"),
];

/// DNS names compare lowercased without the final dot.
fn normalize(name: &str) -> String {
    name.trim_end_matches('.').to_ascii_lowercase()
}

fn build_err(e: aws_smithy_types::error::operation::BuildError) -> KindError {
    KindError::new(e.to_string())
}

/// The record set of the desired (or current) attributes.
fn record_set(attrs: &Attrs) -> Result<ResourceRecordSet, KindError> {
    let alias = attrs.get("alias").ok_or_else(|| KindError::new("attribute `alias` is missing"))?;
    let field = |k: &str| {
        alias
            .get(k)
            .and_then(Json::as_str)
            .ok_or_else(|| KindError::new(format!("alias.{k} is missing")))
    };
    ResourceRecordSet::builder()
        .name(str_attr(attrs, "name")?)
        .r#type(RrType::from(str_attr(attrs, "type")?))
        .alias_target(
            AliasTarget::builder()
                .hosted_zone_id(field("zone_id")?)
                .dns_name(field("dns_name")?)
                .evaluate_target_health(
                    alias.get("evaluate_target_health").and_then(Json::as_bool).unwrap_or(false),
                )
                .build()
                .map_err(build_err)?,
        )
        .build()
        .map_err(build_err)
}

impl Route53Record {
    fn r53(&self) -> Result<&aws_sdk_route53::Client, KindError> {
        Ok(&self.0.route53)
    }

    async fn read_one(
        &self,
        zone: &str,
        name: &str,
        rtype: &str,
    ) -> Result<Option<Live>, KindError> {
        let out = match self
            .r53()?
            .list_resource_record_sets()
            .hosted_zone_id(zone)
            .start_record_name(name)
            .start_record_type(RrType::from(rtype))
            .max_items(1)
            .send()
            .await
        {
            Ok(out) => out,
            Err(e) if has_code(&e, "NoSuchHostedZone") => return Ok(None),
            Err(e) => return Err(api_error("route53:ListResourceRecordSets", e)),
        };
        let Some(rrs) = out
            .resource_record_sets()
            .iter()
            .find(|r| normalize(r.name()) == normalize(name) && r.r#type().as_str() == rtype)
        else {
            return Ok(None);
        };
        let alias = rrs.alias_target().map(|a| {
            json!({
                "dns_name": normalize(a.dns_name()),
                "zone_id": a.hosted_zone_id(),
                "evaluate_target_health": a.evaluate_target_health(),
            })
        });
        Ok(Some(live(
            format!("{zone}/{}/{rtype}", normalize(name)),
            [
                ("zone_id", json!(zone)),
                ("name", json!(normalize(name))),
                ("type", json!(rtype)),
                ("alias", alias.unwrap_or(Json::Null)),
            ],
        )))
    }

    async fn change(
        &self,
        zone: &str,
        action: ChangeAction,
        attrs: &Attrs,
    ) -> Result<(), KindError> {
        let operation = "route53:ChangeResourceRecordSets";
        let batch = ChangeBatch::builder()
            .changes(
                Change::builder()
                    .action(action)
                    .resource_record_set(record_set(attrs)?)
                    .build()
                    .map_err(build_err)?,
            )
            .build()
            .map_err(build_err)?;
        self.r53()?
            .change_resource_record_sets()
            .hosted_zone_id(zone)
            .change_batch(batch)
            .send()
            .await
            .map(|_| ())
            .map_err(|e| api_error(operation, e))
    }
}

/// (zone, name, type) of a request: from the spec, else from the recorded id.
fn key_of(r: &ReadRequest) -> Option<(String, String, String)> {
    let from_desired = r.desired.as_ref().and_then(|d| {
        Some((
            d.get("zone_id")?.as_str()?.to_string(),
            d.get("name")?.as_str()?.to_string(),
            d.get("type")?.as_str()?.to_string(),
        ))
    });
    from_desired.or_else(|| {
        let id = r.id.as_ref()?;
        let mut parts = id.splitn(3, '/');
        Some((parts.next()?.to_string(), parts.next()?.to_string(), parts.next()?.to_string()))
    })
}

#[async_trait]
impl Kind for Route53Record {
    fn name(&self) -> &'static str {
        "aws_route53_record"
    }

    fn fields(&self) -> &'static [Field] {
        FIELDS
    }

    async fn read(
        &self,
        _ctx: &Context,
        requests: &[ReadRequest],
    ) -> Result<Vec<Option<Live>>, KindError> {
        let found = read_each(requests, key_of, |(zone, name, rtype)| async move {
            self.read_one(&zone, &name, &rtype).await
        })
        .await?;
        Ok(requests.iter().zip(found).map(|(r, l)| ours_by_value(r, l, "alias")).collect())
    }

    async fn create(
        &self,
        _ctx: &Context,
        address: &Address,
        desired: &Attrs,
    ) -> Result<Live, KindError> {
        let zone = str_attr(desired, "zone_id")?;
        let name = str_attr(desired, "name")?;
        let rtype = str_attr(desired, "type")?;
        self.change(zone, ChangeAction::Create, desired).await?;
        tracing::info!(%address, name, "created DNS record");
        read_back(&format!("record {name}"), || self.read_one(zone, name, rtype)).await
    }

    async fn update(
        &self,
        _ctx: &Context,
        _address: &Address,
        current: &Live,
        desired: &Attrs,
    ) -> Result<Live, KindError> {
        let zone = str_attr(desired, "zone_id")?;
        let name = str_attr(desired, "name")?;
        let rtype = str_attr(desired, "type")?;
        self.change(zone, ChangeAction::Upsert, desired).await?;
        let found = self.read_one(zone, name, rtype).await?;
        still_there(&format!("record {}", current.id), found)
    }

    async fn delete(
        &self,
        _ctx: &Context,
        _address: &Address,
        current: &Live,
    ) -> Result<(), KindError> {
        let zone = str_attr(&current.attributes, "zone_id")?;
        match self.change(zone, ChangeAction::Delete, &current.attributes).await {
            Ok(()) => Ok(()),
            // Already gone (or the zone is).
            Err(e)
                if e.code.as_deref() == Some("InvalidChangeBatch")
                    || e.code.as_deref() == Some("NoSuchHostedZone") =>
            {
                Ok(())
            }
            Err(e) => Err(e),
        }
    }
}
