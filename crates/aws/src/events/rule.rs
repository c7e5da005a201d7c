//! `aws_event_rule`: an EventBridge rule on the default event bus with its one target (the
//! Karpenter interruption queue). Named by the spec, so one whose create was not recorded is
//! found again by name and adopted with its address tag; a same-named rule without that tag is
//! never taken over (`PutRule` would silently overwrite it, so the create checks first).
//! Description, pattern and state change in place with `PutRule`, the target with
//! `PutTargets`/`RemoveTargets`, tags with `TagResource`/`UntagResource`. The name is fixed.

use crate::AwsClients;
use crate::error::{api_error, has_code};
use crate::lookup_json::{live, read_by_name, str_attr};
use crate::settle::{read_back, settle};
use async_trait::async_trait;
use aws_sdk_eventbridge::types::{RuleState, Tag, Target};
use engine::{Address, Attrs, Context, Field, Kind, KindError, Live, ReadRequest};
use serde_json::{Value as Json, json};
use std::sync::Arc;

pub(crate) struct EventRule(pub Arc<AwsClients>);

const FIELDS: &[Field] = &[
    Field::replace("name"),
    Field::in_place("description"),
    Field::in_place("event_pattern"),
    Field::in_place("state"),
    Field::in_place("target_id"),
    Field::in_place("target_arn"),
    Field::in_place("tags"),
    Field::computed("id"),
    Field::computed("arn"),
];

fn tags(desired: &Attrs) -> Result<Vec<Tag>, KindError> {
    crate::tags::build(desired, |k, v| Tag::builder().key(k).value(v).build())
}

fn pattern_text(desired: &Attrs) -> Result<String, KindError> {
    desired
        .get("event_pattern")
        .filter(|p| p.is_object())
        .map(Json::to_string)
        .ok_or_else(|| KindError::new("attribute `event_pattern` is missing or not a document"))
}

impl EventRule {
    fn events(&self) -> Result<&aws_sdk_eventbridge::Client, KindError> {
        Ok(&self.0.events)
    }

    async fn read_one(&self, name: &str) -> Result<Option<Live>, KindError> {
        let events = self.events()?;
        let rule = match events.describe_rule().name(name).send().await {
            Ok(out) => out,
            Err(e) if has_code(&e, "ResourceNotFoundException") => return Ok(None),
            Err(e) => return Err(api_error("events:DescribeRule", e)),
        };
        let arn = rule.arn().unwrap_or_default().to_string();
        let targets = match events.list_targets_by_rule().rule(name).send().await {
            Ok(out) => out.targets().to_vec(),
            Err(e) if has_code(&e, "ResourceNotFoundException") => return Ok(None),
            Err(e) => return Err(api_error("events:ListTargetsByRule", e)),
        };
        let tag_list = match events.list_tags_for_resource().resource_arn(&arn).send().await {
            Ok(out) => out.tags().to_vec(),
            Err(e) if has_code(&e, "ResourceNotFoundException") => return Ok(None),
            Err(e) => return Err(api_error("events:ListTagsForResource", e)),
        };
        let mut pairs: Vec<(&str, &str)> = tag_list.iter().map(|t| (t.key(), t.value())).collect();
        pairs.sort();
        let pattern = rule
            .event_pattern()
            .map(|p| serde_json::from_str::<Json>(p).unwrap_or_else(|_| json!(p)));
        // The engine gives a rule one target; more (someone else's) show as a change.
        let (target_id, target_arn) = match targets.as_slice() {
            [t] => (json!(t.id()), json!(t.arn())),
            [] => (Json::Null, Json::Null),
            many => (
                json!(many.iter().map(|t| t.id()).collect::<Vec<_>>()),
                json!(many.iter().map(|t| t.arn()).collect::<Vec<_>>()),
            ),
        };
        Ok(Some(live(
            name,
            [
                ("name", json!(name)),
                ("description", json!(rule.description())),
                ("event_pattern", json!(pattern)),
                ("state", json!(rule.state().map(|s| s.as_str()))),
                ("target_id", target_id),
                ("target_arn", target_arn),
                ("tags", crate::tags::to_json(pairs)),
                ("arn", json!(arn)),
            ],
        )))
    }

    /// `PutRule` with the desired description, pattern and state (tags only when creating).
    async fn put_rule(&self, desired: &Attrs, with_tags: bool) -> Result<(), KindError> {
        self.events()?
            .put_rule()
            .name(str_attr(desired, "name")?)
            .description(str_attr(desired, "description")?)
            .event_pattern(pattern_text(desired)?)
            .state(RuleState::from(str_attr(desired, "state")?))
            .set_tags(if with_tags { Some(tags(desired)?) } else { None })
            .send()
            .await
            .map(|_| ())
            .map_err(|e| api_error("events:PutRule", e))
    }

    async fn put_target(&self, desired: &Attrs) -> Result<(), KindError> {
        let name = str_attr(desired, "name")?;
        let target = Target::builder()
            .id(str_attr(desired, "target_id")?)
            .arn(str_attr(desired, "target_arn")?)
            .build()
            .map_err(|e| KindError::new(e.to_string()))?;
        let out = self
            .events()?
            .put_targets()
            .rule(name)
            .targets(target)
            .send()
            .await
            .map_err(|e| api_error("events:PutTargets", e))?;
        match out.failed_entries().first() {
            None => Ok(()),
            Some(f) => Err(KindError::new(format!(
                "events:PutTargets: {}: {}",
                f.error_code().unwrap_or("failed"),
                f.error_message().unwrap_or_default()
            ))),
        }
    }

    async fn remove_targets(&self, name: &str, ids: Vec<String>) -> Result<(), KindError> {
        if ids.is_empty() {
            return Ok(());
        }
        match self.events()?.remove_targets().rule(name).set_ids(Some(ids)).send().await {
            Ok(_) => Ok(()),
            Err(e) if has_code(&e, "ResourceNotFoundException") => Ok(()),
            Err(e) => Err(api_error("events:RemoveTargets", e)),
        }
    }
}

/// Target ids of a live rule's `target_id` (one, several, or none).
fn target_ids(attrs: &Attrs) -> Vec<String> {
    match attrs.get("target_id") {
        Some(Json::String(s)) => vec![s.clone()],
        Some(Json::Array(a)) => a.iter().filter_map(Json::as_str).map(str::to_string).collect(),
        _ => vec![],
    }
}

#[async_trait]
impl Kind for EventRule {
    fn name(&self) -> &'static str {
        "aws_event_rule"
    }

    fn fields(&self) -> &'static [Field] {
        FIELDS
    }

    async fn read(
        &self,
        _ctx: &Context,
        requests: &[ReadRequest],
    ) -> Result<Vec<Option<Live>>, KindError> {
        read_by_name(requests, "name", |n| async move { self.read_one(&n).await }).await
    }

    #[tracing::instrument(skip_all, fields(%address))]
    async fn create(
        &self,
        _ctx: &Context,
        address: &Address,
        desired: &Attrs,
    ) -> Result<Live, KindError> {
        let name = str_attr(desired, "name")?;
        if self.read_one(name).await?.is_some() {
            return Err(KindError::new(format!(
                "events:PutRule: rule {name} already exists and is not this spec's"
            )));
        }
        self.put_rule(desired, true).await?;
        tracing::info!(rule = name, "created rule");
        // The rule exists: its target is retried here, never the create.
        settle(|| self.put_target(desired)).await?;
        read_back(&format!("rule {name}"), || self.read_one(name)).await
    }

    #[tracing::instrument(skip_all, fields(%address))]
    async fn update(
        &self,
        _ctx: &Context,
        address: &Address,
        current: &Live,
        desired: &Attrs,
    ) -> Result<Live, KindError> {
        let events = self.events()?;
        let name = str_attr(desired, "name")?;
        let have = &current.attributes;
        if ["description", "event_pattern", "state"].iter().any(|f| have.get(*f) != desired.get(*f))
        {
            self.put_rule(desired, false).await?;
        }
        if ["target_id", "target_arn"].iter().any(|f| have.get(*f) != desired.get(*f)) {
            let keep = str_attr(desired, "target_id")?;
            let stale: Vec<String> = target_ids(have).into_iter().filter(|t| t != keep).collect();
            self.remove_targets(name, stale).await?;
            self.put_target(desired).await?;
        }
        let arn = str_attr(have, "arn")?;
        crate::tags::update(
            have,
            desired,
            |keys| async move {
                events
                    .untag_resource()
                    .resource_arn(arn)
                    .set_tag_keys(Some(keys))
                    .send()
                    .await
                    .map(|_| ())
                    .map_err(|e| api_error("events:UntagResource", e))
            },
            || async {
                events
                    .tag_resource()
                    .resource_arn(arn)
                    .set_tags(Some(tags(desired)?))
                    .send()
                    .await
                    .map(|_| ())
                    .map_err(|e| api_error("events:TagResource", e))
            },
        )
        .await?;
        self.read_one(name).await?.ok_or_else(|| KindError::new(format!("rule {name} vanished")))
    }

    #[tracing::instrument(skip_all, fields(%address))]
    async fn delete(
        &self,
        _ctx: &Context,
        address: &Address,
        current: &Live,
    ) -> Result<(), KindError> {
        let name = current.id.as_str();
        // A rule with targets cannot be deleted.
        self.remove_targets(name, target_ids(&current.attributes)).await?;
        crate::error::deleted(
            "events:DeleteRule",
            self.events()?.delete_rule().name(name).send().await,
            &["ResourceNotFoundException"],
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pattern_target_and_tags_change_in_place_the_name_does_not() {
        use crate::stages::eks::changed_fields;
        let live = json!({
            "name": "aws-0-karpenter-rebalance",
            "description": "d",
            "event_pattern": {"source": ["aws.ec2"], "detail-type": ["x"]},
            "state": "ENABLED",
            "target_id": "q",
            "target_arn": "arn:aws:sqs:eu-west-3:123456789012:aws-0",
            "tags": {"a": "1"},
        });
        // Key order in a pattern does not matter.
        let mut same = live.clone();
        same["event_pattern"] = json!({"detail-type": ["x"], "source": ["aws.ec2"]});
        assert!(changed_fields(FIELDS, &live, &same).is_empty());
        let mut changed = live.clone();
        changed["event_pattern"] = json!({"source": ["aws.health"]});
        changed["target_arn"] = json!("arn:aws:sqs:eu-west-3:123456789012:other");
        changed["state"] = json!("DISABLED");
        assert_eq!(
            changed_fields(FIELDS, &live, &changed),
            [("event_pattern", false), ("state", false), ("target_arn", false)]
        );
        let mut renamed = live.clone();
        renamed["name"] = json!("other");
        assert_eq!(changed_fields(FIELDS, &live, &renamed), [("name", true)]);
    }

    #[test]
    fn target_ids_of_one_many_or_none() {
        let a = |v: Json| v.as_object().unwrap().clone();
        assert_eq!(target_ids(&a(json!({"target_id": "q"}))), ["q"]);
        assert_eq!(target_ids(&a(json!({"target_id": ["q", "x"]}))), ["q", "x"]);
        assert!(target_ids(&a(json!({"target_id": null}))).is_empty());
    }

    #[test]
    fn patterns_are_sent_as_json_text() {
        let d = json!({"event_pattern": {"source": ["aws.ec2"]}});
        assert_eq!(pattern_text(d.as_object().unwrap()).unwrap(), r#"{"source":["aws.ec2"]}"#);
        assert!(pattern_text(json!({"event_pattern": "x"}).as_object().unwrap()).is_err());
    }
}
