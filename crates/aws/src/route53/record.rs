//! `aws_route53_record`: an alias record (to the load balancer) in a hosted zone. Records have
//! no tags: one is ours when recorded in state or when it already has the value the spec wants.
//! Creating uses `CREATE`, so a record someone else made is never overwritten. DNS names are
//! read lowercased and without the final dot, as the spec writes them.

use crate::AwsClients;
use crate::error::{SdkResult, built};
use crate::lookup::{ours_by_value, read_each, still_there};
use aws_sdk_route53::types::{
    AliasTarget, Change, ChangeAction, ChangeBatch, ResourceRecordSet, RrType,
};
use engine::prelude::*;
use engine::retry::read_back;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

#[derive(Attributes, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct Record {
    #[attr(replace)]
    pub zone_id: String,
    #[attr(replace)]
    pub name: String,
    #[attr(replace)]
    #[serde(rename = "type")]
    pub rtype: String,
    #[attr(in_place)]
    pub alias: Option<Alias>,
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub(crate) struct Alias {
    pub dns_name: String,
    pub zone_id: String,
    #[serde(default)]
    pub evaluate_target_health: bool,
}

pub(crate) struct RecordKind(pub Arc<AwsClients>);

/// DNS names compare lowercased without the final dot.
fn normalize(name: &str) -> String {
    name.trim_end_matches('.').to_ascii_lowercase()
}

/// The record set of the record's attributes.
fn record_set(record: &Record) -> KindResult<ResourceRecordSet> {
    let alias = record.alias.as_ref();
    let alias = alias.ok_or_else(|| KindError::new("aws_route53_record: `alias` is missing"))?;
    let target = AliasTarget::builder()
        .hosted_zone_id(&alias.zone_id)
        .dns_name(&alias.dns_name)
        .evaluate_target_health(alias.evaluate_target_health);
    let set = ResourceRecordSet::builder().name(&record.name);
    let set = set.r#type(RrType::from(record.rtype.as_str()));
    built(set.alias_target(built(target.build())?).build())
}

impl RecordKind {
    async fn read_one(
        &self,
        zone: &str,
        name: &str,
        rtype: &str,
    ) -> KindResult<Option<Live<Record>>> {
        let call = self.0.route53.list_resource_record_sets().hosted_zone_id(zone);
        let call = call.start_record_name(name).start_record_type(RrType::from(rtype)).max_items(1);
        let op = "route53:ListResourceRecordSets";
        let Some(out) = call.send().await.or_absent(op, &["NoSuchHostedZone"])? else {
            return Ok(None);
        };
        let same = |r: &&ResourceRecordSet| {
            normalize(r.name()) == normalize(name) && r.r#type().as_str() == rtype
        };
        let Some(set) = out.resource_record_sets().iter().find(same) else { return Ok(None) };
        let alias = set.alias_target().map(|a| Alias {
            dns_name: normalize(a.dns_name()),
            zone_id: a.hosted_zone_id().to_string(),
            evaluate_target_health: a.evaluate_target_health(),
        });
        let name = normalize(name);
        let id = format!("{zone}/{name}/{rtype}");
        Ok(Some(Live::new(id, Record { zone_id: zone.into(), name, rtype: rtype.into(), alias })))
    }

    async fn change(&self, action: ChangeAction, record: &Record) -> KindResult<()> {
        let change = Change::builder().action(action).resource_record_set(record_set(record)?);
        let batch = built(ChangeBatch::builder().changes(built(change.build())?).build())?;
        let call = self.0.route53.change_resource_record_sets().hosted_zone_id(&record.zone_id);
        call.change_batch(batch).send().await.api("route53:ChangeResourceRecordSets").map(|_| ())
    }
}

/// (zone, name, type) of a request: from the spec, else from the recorded id.
fn key_of(r: &ReadRequest<Record>) -> Option<(String, String, String)> {
    if let Some(d) = &r.desired {
        return Some((d.zone_id.clone(), d.name.clone(), d.rtype.clone()));
    }
    let mut parts = r.id.as_ref()?.splitn(3, '/').map(str::to_string);
    Some((parts.next()?, parts.next()?, parts.next()?))
}

impl TypedKind for RecordKind {
    type Attrs = Record;
    const NAME: &'static str = "aws_route53_record";

    async fn read(&self, _: &Context, requests: &Requests<Self>) -> Found<Self> {
        let found = read_each(requests, key_of, |(zone, name, rtype)| async move {
            self.read_one(&zone, &name, &rtype).await
        })
        .await?;
        let same = |d: &Record, l: &Record| d.alias == l.alias;
        Ok(requests.iter().zip(found).map(|(r, l)| ours_by_value(r, l, same)).collect())
    }

    async fn create(&self, _: &Context, desired: &Self::Attrs) -> Outcome<Self> {
        self.change(ChangeAction::Create, desired).await?;
        let Record { zone_id, name, rtype, .. } = desired;
        read_back(&format!("record {name}"), || self.read_one(zone_id, name, rtype)).await
    }

    async fn update(&self, _: &Context, update: Update<'_, Self>) -> Outcome<Self> {
        let Update { current, desired, .. } = update;
        self.change(ChangeAction::Upsert, desired).await?;
        let Record { zone_id, name, rtype, .. } = desired;
        still_there(&format!("record {}", current.id), self.read_one(zone_id, name, rtype).await?)
    }

    async fn delete(&self, _: &Context, current: &LiveOf<Self>) -> KindResult<()> {
        match self.change(ChangeAction::Delete, &current.attributes).await {
            // Already gone (or the zone is).
            Err(e) if e.has_code("InvalidChangeBatch") || e.has_code("NoSuchHostedZone") => Ok(()),
            done => done,
        }
    }
}
